"""A crawler of the office as a person clicks it, in the session's headless Chromium: it follows
every link of the navigation and of each page it reaches (bounded: a few pages of each shape of
address), loads each page's style sheets and scripts, downloads each document a link offers,
and submits every form it finds as the browser does: the page's own form, its action and
method, its hidden fields and CSRF token, each field filled with a sample value chosen by the
field's type and name (:data:`SAMPLES`), then the form's own submit button clicked.

What it found is kept (:class:`Crawl`): each page's address, HTTP status and text as a person
sees it, each form's answer, each document's text (``pdftotext`` for PDFs), and the problems: a
404 or 500, a style sheet or script that did not load, a page that came back as the error page.
The plain-words check reads the texts afterwards (``tests/plain_words.py``).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By

from support import wait_until

ROOT = Path(__file__).resolve().parent.parent
#: Links to documents: fetched with the browser's cookies, not shown as a page.
DOCUMENT = re.compile(r"(/pdf$|\.pdf$|\.zip$|\.csv$|\.ics$|\.xml$|\.png$|\.svg$|/files/\d+$|/drafts/\d+/uploads/\d+$|/photos/\d+$|"
                      r"/page/\d+$|/calendar/feed/|\.json$|\.docx$)")
#: Never followed or submitted: signing out ends the crawl's session.
NEVER = re.compile(r"/logout$")
#: The guide the office serves (``/help``, the MkDocs site of ``docs/``): its pages are the
#: project's documentation, written for developers and integrators too (file paths, keys), so
#: each link to it is checked to answer, not crawled or read for the utility's words.
GUIDE = re.compile(r"^/help(/|$)")
#: Statuses that mean the page or form is broken, whatever the input.
BROKEN = (404, 405) + tuple(range(500, 600))


def shape(url: str) -> str:
    """The address with each number and each query value replaced: pages of one shape are
    visited a few times, not once per row of a table."""
    parts = urlsplit(url)
    path = re.sub(r"\d+", "N", parts.path)
    query = "&".join(sorted(q.split("=")[0] for q in parts.query.split("&") if q)) if parts.query else ""
    return path + ("?" + query if query else "")


@dataclass
class Visit:
    url: str
    status: int
    title: str
    text: str
    via: str                     # "link on ..." or "form ... on ..."


@dataclass
class Crawl:
    """What one account's crawl saw."""

    account: str
    pages: list[Visit] = field(default_factory=list)
    forms: list[dict] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)     # url -> text
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    guide: dict[str, int] = field(default_factory=dict)        # url -> status of each guide link


@dataclass
class Shared:
    """What the crawls of several accounts share: a form of one shape is submitted once (by
    the first account that may), a document of one shape downloaded once; addresses that
    answered once, so one that is gone since (a draft the crawl discarded) is told apart
    from one that never was."""

    forms_done: set[str] = field(default_factory=set)
    documents: dict[str, str] = field(default_factory=dict)
    alive: set[str] = field(default_factory=set)


#: Buttons that remove or end what they act on: pressed after the page's other forms.
LAST = re.compile(r"discard|remove|delete|revoke|withdraw|disable|reject|close|end it|sign out", re.I)


def quiet(fn):
    """``fn`` as a wait's predicate: False while the page is between documents."""
    def predicate():
        try:
            return fn()
        except WebDriverException:
            return False
    return predicate


#: One call that describes every field of the form ``arguments[0]``.
FIELDS_JS = """
const f = arguments[0];
return Array.from(f.elements).map((e, i) => {
  e.setAttribute('data-crawl', i);
  return {i: i, tag: e.tagName.toLowerCase(), type: (e.type || '').toLowerCase(), name: e.name || '',
          value: e.value || '', required: e.required, disabled: e.disabled, checked: !!e.checked,
          accept: e.accept || '', options: e.tagName === 'SELECT' ? Array.from(e.options).map(o => o.value) : []};
});"""
#: One call that sets the chosen values (``arguments[1]``: index -> value or true to check).
SET_JS = """
const f = arguments[0], values = arguments[1];
for (const [i, v] of Object.entries(values)) {
  const e = f.querySelector('[data-crawl="' + i + '"]');
  if (!e) continue;
  if (v === true) { if (!e.checked) e.click(); continue; }
  e.value = v;
  e.dispatchEvent(new Event('input', {bubbles: true}));
  e.dispatchEvent(new Event('change', {bubbles: true}));
}
window.__crawlMark = 1;
const bad = f.querySelector(':invalid');
return bad ? (bad.name || bad.id || bad.tagName) : '';"""


#: One call that reads the page as it is: its address, HTTP status, title, text as a person
#: sees it, ids given twice, style sheets (loaded or not), scripts, links, and each submission
#: its forms offer (the form's method, action, and a submit button's name=value).
PAGE_JS = """
const nav = performance.getEntriesByType('navigation');
const ids = Array.from(document.querySelectorAll('[id]'), e => e.id), seen = new Set(), twice = new Set();
for (const i of ids) { if (seen.has(i)) twice.add(i); seen.add(i); }
const forms = [];
Array.from(document.forms).forEach(f => {
  const buttons = Array.from(f.querySelectorAll('button:not([type=button]):not([type=reset]), input[type=submit]'));
  const key = (b) => [(f.getAttribute('method') || 'get').toLowerCase(), f.action,
                      b ? (b.name || '') + '=' + (b.value || b.textContent.trim()) : ''].join(' ');
  if (!buttons.length) forms.push(key(null)); else buttons.forEach(b => forms.push(key(b)));
});
return {url: location.href, status: nav.length ? nav[0].responseStatus : 0, title: document.title,
        text: document.body ? document.body.innerText : '', twice: Array.from(twice),
        sheets: Array.from(document.querySelectorAll('link[rel=stylesheet]')).map(l =>
          [l.href, (() => { try { return !!(l.sheet && l.sheet.cssRules.length); } catch (e) { return false; } })()]),
        scripts: Array.from(document.scripts).filter(s => s.src).map(s => s.src),
        links: Array.from(document.querySelectorAll('a[href]')).filter(a => !a.getAttribute('href').startsWith('#'))
          .map(a => a.href),
        forms: forms};"""


class Crawler:
    """Crawl the office at ``base`` as the account signed in by ``sign_in`` (a callable that
    signs the browser in again when a form ended the session)."""

    def __init__(self, browser, base: str, account: str, sign_in, *, today: str, samples: dict[str, Path],
                 shared: Shared | None = None, max_pages: int = 100, per_shape: int = 1,
                 skip_actions: tuple[str, ...] = ()):
        self.d = browser.driver
        self.base = base.rstrip("/")
        self.sign_in = sign_in
        self.today = today
        self.files = samples
        self.shared = shared or Shared()
        self.max_pages = max_pages
        self.per_shape = per_shape
        self.skip_actions = skip_actions
        self.crawl = Crawl(account)
        self._shapes: dict[str, int] = {}
        self._seen: set[str] = set()
        self._assets: dict[str, int] = {}
        self._n = 0
        self._page: dict = {"links": [], "forms": []}     # the page last recorded (:data:`PAGE_JS`)
        self._fresh: str | None = None                     # a page read and not yet acted on

    # -- pages -------------------------------------------------------------------------------
    def _load(self, url: str) -> None:
        self.d.get(url)
        if "/login" in self.d.current_url and "/login" not in url:
            self.sign_in()
            self.d.get(url)

    def _record(self, via: str) -> Visit:
        """The page as it is now, read in one call (:data:`PAGE_JS`), checked and kept; its
        links and form submissions are left in ``self._page`` for the crawl to follow."""
        p = self._page = self.d.execute_script(PAGE_JS)
        url, st = p["url"], int(p["status"] or 0)
        v = Visit(url, st, p["title"], p["text"], via)
        key = urlsplit(url).path
        if st == 404 and key in self.shared.alive:
            self.crawl.skipped.append(f"{url}: gone since an earlier form ({via})")
            return v
        self.crawl.pages.append(v)
        if st in BROKEN:
            self.crawl.problems.append(f"{url} answered {st} ({via}): {v.text[:160]!r}")
        elif st == 200:
            self.shared.alive.add(key)
            self._check_markup(url, via, p["title"], p["twice"])
        self._check_assets(url, p["sheets"], p["scripts"])
        return v

    def _check_markup(self, url: str, via: str, title: str, twice: list[str]) -> None:
        """A page's title is words (no markup pasted into it) and no id is given twice (a
        section copied twice by a merge once did both)."""
        if "<" in title or len(title) > 200:
            self.crawl.problems.append(f"{url} has markup in its title ({via}): {title[:120]!r}")
        if twice:
            self.crawl.problems.append(f"{url} gives an id twice ({via}): {sorted(twice)[:5]}")

    def _check_assets(self, url: str, sheets: list, scripts: list) -> None:
        for href, loaded in sheets:
            if not loaded:
                self.crawl.problems.append(f"{url}: its style sheet {href} did not load")
        for src in scripts:
            if src not in self._assets:
                self._assets[src] = self._fetch(src)[0]
            if self._assets[src] != 200:
                self.crawl.problems.append(f"{url}: its script {src} answered {self._assets[src]}")

    def _fetch(self, url: str) -> tuple[int, bytes, str]:
        import httpx
        cookies = {c["name"]: c["value"] for c in self.d.get_cookies()}
        r = httpx.get(url, cookies=cookies, timeout=120, follow_redirects=True)
        return r.status_code, r.content, r.headers.get("content-type", "")

    def _document(self, url: str, via: str) -> None:
        s = shape(url)
        if s in self.shared.documents:
            self.crawl.documents[url] = self.shared.documents[s]
            return
        st, body, ctype = self._fetch(url)
        path = urlsplit(url).path
        if st == 404 and path in self.shared.alive:
            self.crawl.skipped.append(f"document {url}: gone since an earlier form ({via})")
            return
        if st in BROKEN:
            self.crawl.problems.append(f"document {url} answered {st} ({via})")
            return
        self.shared.alive.add(path)
        text = ""
        if body.startswith(b"%PDF"):
            with tempfile.NamedTemporaryFile(suffix=".pdf") as f:
                f.write(body)
                f.flush()
                text = subprocess.run(["pdftotext", "-layout", f.name, "-"], capture_output=True, text=True,
                                      timeout=60).stdout
        elif ctype.startswith(("text/", "application/xml")) or url.endswith((".csv", ".ics", ".xml")):
            text = body.decode("utf-8", "replace")
        self.crawl.documents[url] = self.shared.documents[s] = text

    def _guide(self, url: str, via: str) -> None:
        """A link to the guide: it must answer (its page, after a redirect to its folder)."""
        st = self._fetch(url)[0]
        self.crawl.guide[url] = st
        if st != 200:
            self.crawl.problems.append(f"guide link {url} answered {st} ({via})")

    def _links(self) -> list[str]:
        """The links of the page last recorded, within the office."""
        return [h.split("#")[0] for h in self._page["links"] if h.startswith(self.base + "/") or h == self.base]

    def _want(self, url: str) -> bool:
        if url in self._seen or NEVER.search(urlsplit(url).path):
            return False
        return self._shapes.get(shape(url), 0) < self.per_shape

    def _take(self, url: str) -> None:
        self._seen.add(url)
        s = shape(url)
        self._shapes[s] = self._shapes.get(s, 0) + 1

    def run(self, start: str = "/") -> Crawl:
        queue: list[tuple[str, str]] = [(self.base + start, "start")]
        while queue and len(self.crawl.pages) < self.max_pages:
            url, via = queue.pop(0)
            if not self._want(url):
                continue
            self._take(url)
            if GUIDE.match(url[len(self.base):]):
                self._guide(url, via)
                continue
            if DOCUMENT.search(urlsplit(url).path):
                self._document(url, via)
                continue
            self._load(url)
            page = self._record(via).url
            self._fresh = page
            queue.extend((link, f"link on {page}") for link in self._links())
            keys = sorted(self._form_keys(), key=lambda k: bool(LAST.search(k.split(" ", 2)[2])))
            for key in keys:
                method, action, button = key.split(" ", 2)
                done = f"{method} {shape(action)} {button}"
                if done in self.shared.forms_done:
                    continue
                self.shared.forms_done.add(done)
                queue.extend((link, f"after a form on {page}") for link in self._submit(page, key))
        return self.crawl

    # -- forms -------------------------------------------------------------------------------
    def _form_keys(self) -> list[str]:
        """Each submission the page last recorded offers: a form and one of its submit
        buttons, by the form's action, method and the button's name and value."""
        return self._page["forms"]

    def _find(self, method: str, action: str, button: str):
        """The form and its button of a submission key on the page as it is now."""
        return self.d.execute_script("""
            const [method, action, button] = arguments;
            for (const f of document.forms) {
              if ((f.getAttribute('method') || 'get').toLowerCase() !== method || f.action !== action) continue;
              const buttons = Array.from(f.querySelectorAll('button:not([type=button]):not([type=reset]), input[type=submit]'));
              if (!buttons.length && button === '') return [f, null];
              for (const b of buttons) if ((b.name || '') + '=' + (b.value || b.textContent.trim()) === button) return [f, b];
            }
            return null;""", method, action, button)

    def _submit(self, page: str, key: str) -> list[str]:
        method, action, button = key.split(" ", 2)
        path = urlsplit(action).path
        if NEVER.search(path) or any(s in path for s in self.skip_actions):
            self.crawl.skipped.append(f"{key} on {page}")
            return []
        if self._fresh != page:            # the page as served, unless it was just read and nothing sent since
            self._load(page)
        self._fresh = None
        found = self._find(method, action, button)
        if not found:
            self.crawl.skipped.append(f"{key} on {page}: not on the page when reloaded")
            return []
        form, btn = found
        marker, invalid = self.fill(form)
        if invalid:
            self.crawl.skipped.append(f"{key} on {page}: held back by the browser (field {invalid!r})")
            return []
        try:
            if btn is None:
                self.d.execute_script("arguments[0].requestSubmit()", form)
            else:
                # a button folded away (in a <details>) is opened first, as a person does
                self.d.execute_script("for (let p = arguments[0]; p; p = p.parentElement) if (p.tagName === "
                                      "'DETAILS') p.open = true; arguments[0].scrollIntoView({block: 'center'});", btn)
                btn.click()
        except WebDriverException as exc:
            self.crawl.problems.append(f"form {key} on {page}: its button could not be pressed ({exc.msg[:120]})")
            return []
        try:
            self.d.switch_to.alert.accept()       # a confirm() before a harmful action
        except WebDriverException:
            pass
        if not wait_until(quiet(lambda: self.d.execute_script("return window.__crawlMark === undefined && "
                                                              "document.readyState === 'complete'")), 30):
            self.crawl.problems.append(f"form {key} on {page}: no answer in 30 s")
            return []
        v = self._record(f"form {method.upper()} {path} {button} on {page}")
        st = v.status
        self.crawl.forms.append({"key": key, "page": page, "status": st, "url": v.url, "marker": marker,
                                 "text": v.text})
        if "/login" in self.d.current_url:
            self.sign_in()
        return self._links() if st not in BROKEN else []

    def fill(self, form) -> tuple[str, str]:
        """Fill ``form``'s empty fields with sample values in two calls; the free text typed
        (a marker to read back) and the first field the browser still finds invalid."""
        self._n += 1
        marker = f"Checked in the round {self._n}"
        values: dict[str, object] = {}
        radios: set[str] = set()
        for e in self.d.execute_script(FIELDS_JS, form):
            kind, name = e["type"], e["name"]
            if e["disabled"] or not name or kind in ("hidden", "submit", "button", "reset", "image"):
                continue
            if e["tag"] == "select":
                if not e["value"]:
                    first = next((o for o in e["options"] if o), None)
                    if first is not None:
                        values[str(e["i"])] = first
            elif kind == "checkbox":
                if e["required"] and not e["checked"]:
                    values[str(e["i"])] = True
            elif kind == "radio":
                if name not in radios and not e["checked"]:
                    radios.add(name)
                    values[str(e["i"])] = True
                radios.add(name)
            elif kind == "file":
                path = sample_file(name, e["accept"], self.files)
                if path is not None:
                    self.d.find_element(By.CSS_SELECTOR, f'[data-crawl="{e["i"]}"]').send_keys(str(path))
            elif not e["value"].strip() or kind == "password":
                v = sample_value(name, kind, marker, self.today)
                if v is not None:
                    values[str(e["i"])] = v
        invalid = self.d.execute_script(SET_JS, form, values)
        return marker, invalid
def sample_value(name: str, kind: str, marker: str, today: str) -> str | None:
    """A value a person might type in the field ``name`` of type ``kind``."""
    n = name.lower()
    day = datetime.fromisoformat(today)
    if kind == "password":
        from web_support import PASSWORD
        return PASSWORD
    if kind == "date" or n in ("on", "date", "since", "until", "from", "to") or n.endswith(("_on", "_date")):
        if n in ("until", "to", "end", "ends") or n.endswith(("_until", "_to", "_end")):
            return today
        if n in ("since", "from", "start") or n.endswith(("_since", "_from", "_start")):
            return (day - timedelta(days=180)).date().isoformat()
        return today
    if kind == "datetime-local":
        return (day.replace(hour=9, minute=30)).strftime("%Y-%m-%dT%H:%M")
    if kind == "time":
        return "09:30"
    if kind == "email" or "email" in n:
        return "round@example.com"
    if "code" in n:
        return None                                   # a second factor's code: none to give
    if n in ("quarter", "period"):
        return "2026Q2"
    if n in ("username", "user", "login"):
        return f"round{abs(hash(marker)) % 10000}"
    if n in ("name", "full_name", "display_name"):
        return "Robin Round"
    if kind in ("number", "range") or re.search(r"(value|amount|volume|flow|gpd|limit|maximum|minimum|average|result|"
                                               r"reading|reference|days|count|\d_|ph|temp|cost|rate|gal)", n):
        return "7.5"
    return marker


def sample_file(name: str, accept: str, files: dict[str, Path]) -> Path | None:
    """The file a person would choose for the upload field ``name``."""
    n = name.lower()
    for key, path in files.items():
        if key in n or key in accept:
            return path
    return files.get("default")
