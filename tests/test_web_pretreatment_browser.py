"""The pretreatment round in a real browser (the lab and calendar steps):
the session's one Chromium (selenium, Debian's chromium-driver) against ``sewerwatch web``
serving the office over this module's real database.

The coordinator uploads the demo's lab file with one spoiled row, sees that row's line and
reason before anything is stored, imports the rest with a double click (one import), sees the
copper violation appear (the result over Permit PAL-IU-2026-02's daily maximum, and the stored
violation); the compliance calendar shows the plater's sampling due dates, and its iCalendar
feed, read as a calendar program would (no session), parses with ``icalendar`` and lists them.
Pages fit 390 px with every field labelled. ``SEWERWATCH_WRITE_PREVIEWS=1`` writes the guide's
screenshots (the lab upload's preview and the calendar, desktop and phone: ``docs/office/lab.md``,
``docs/office/calendar.md``) to web/previews/.
"""

from __future__ import annotations

import calendar as cal_mod
import os
import shutil
import subprocess
import sys
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo
from pathlib import Path

import psycopg
import pytest

from sewerwatch.services.scratch import free_port
from support import wait_until
from web_support import PASSWORD, add_people, cheap_hashes, demo_users, spoiled_demo_lab

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from browser import gone  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PREVIEWS = ROOT / "web" / "previews"
ROWS = 19


class Office:
    """``sewerwatch web`` over the module's database (the office alone, as an office machine runs it)."""

    def __init__(self, db, tmp: Path):
        self.db, self.tmp = db, tmp
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.cfg = tmp / "office.toml"
        self.cfg.write_text(f"""[utility]
name = "Village of Palmyra"
pack = "palmyra-wi"
timezone = "America/Chicago"
[services]
db_url = "{db.url}"
state_dir = "{tmp / 'state'}"
[web]
port = {self.port}
public_url = "{self.base}"
login_per_min = 100
""")
        demo_users(db.url)
        with cheap_hashes():
            add_people(db.url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
        self.err = open(tmp / "web.err", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(self.cfg), "web"],
                                     stdout=subprocess.DEVNULL, stderr=self.err, cwd=ROOT, env=env)
        assert wait_until(lambda: "the office on http" in (tmp / "web.err").read_text() or self.proc.poll() is not None,
                          60), (tmp / "web.err").read_text()[-3000:]
        assert self.proc.poll() is None, (tmp / "web.err").read_text()[-3000:]

    def count(self, sql: str) -> int:
        with psycopg.connect(self.db.url) as conn:
            return conn.execute(sql).fetchone()[0]

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


@pytest.fixture(scope="module")
def office(module_db, tmp_path_factory, browser):
    o = Office(module_db, tmp_path_factory.mktemp("pretreatment"))
    try:
        yield o
    finally:
        o.close()


def sign_in(b, office, user: str) -> None:
    d = b.driver
    d.get(office.base + "/login")
    d.find_element(By.ID, "username").send_keys(user)
    d.find_element(By.ID, "password").send_keys(PASSWORD)
    button = d.find_element(By.ID, "sign-in")
    button.click()
    WebDriverWait(d, 15).until(gone(button))


def _fits(b, name: str) -> None:
    """Nothing wider than the window, every visible field labelled."""
    d = b.driver
    assert b.scroll_width() <= b.width, (name, b.scroll_width(), b.width)
    unlabelled = d.execute_script("""
        return Array.from(document.querySelectorAll('input, select, textarea')).filter(e => e.type !== 'hidden')
          .filter(e => !(e.id && document.querySelector('label[for="' + e.id + '"]')) && !e.closest('label')
                       && !e.getAttribute('aria-label')).map(e => e.name || e.outerHTML.slice(0, 60));""")
    assert unlabelled == [], (name, unlabelled)


def _shots(b, office, name: str, path: str, shots: dict) -> None:
    for size in ("desktop", "phone"):
        b.phone() if size == "phone" else b.desktop()
        b.driver.get(office.base + path)
        assert wait_until(lambda: b.driver.find_elements(By.TAG_NAME, "footer"), 10)
        _fits(b, f"{name}-{size}")
        shot = office.tmp / f"{name}-{size}.png"
        w, h = b.screenshot(shot)
        assert w == b.width and h > 400
        shots[f"{name}-{size}"] = shot
    b.desktop()


def _keep(shots: dict) -> None:
    if os.environ.get("SEWERWATCH_WRITE_PREVIEWS"):
        PREVIEWS.mkdir(exist_ok=True)
        for key, shot in shots.items():
            shutil.copy(shot, PREVIEWS / f"{key}.png")


def test_the_coordinator_uploads_the_lab_file_sees_the_spoiled_row_imports_the_rest_once(office, chromium, tmp_path):
    d = chromium.driver
    sign_in(chromium, office, "coord")
    spoiled = tmp_path / "lab-results.csv"
    spoiled.write_bytes(spoiled_demo_lab(6, "4z0"))          # line 6: sausage S-0101 fog, value "4z0"
    d.get(office.base + "/lab")
    _fits(chromium, "lab")
    d.find_element(By.ID, "file").send_keys(str(spoiled))
    button = d.find_element(By.ID, "upload")
    button.click()
    WebDriverWait(d, 30).until(gone(button))
    assert wait_until(lambda: "Preview: nothing is stored yet" in chromium.text(), 10), chromium.text()[:600]
    bad = chromium.text("bad-rows")
    assert "6" in bad and "value '4z0' is not a number" in bad
    assert f"{ROWS - 1} rows can be used" in chromium.text("preview")
    assert "Copper, daily maximum" in chromium.text() and "Permit PAL-IU-2026-02, condition 3(a)" in chromium.text()
    assert office.count("SELECT count(*) FROM lab_results") == 0 and office.count("SELECT count(*) FROM dead_letters") == 0
    preview_path = d.current_url.removeprefix(office.base)
    shots: dict = {}
    _shots(chromium, office, "lab-preview", preview_path, shots)
    # a double click: the same form sent twice at once (Chromium may or may not send both of a
    # real double click, so the page sends the second itself, its own form with its own key)
    d.get(office.base + preview_path)
    button = d.find_element(By.ID, "import")
    d.execute_script("const f = document.getElementById('import-form');"
                     "fetch(f.action, {method: 'POST', body: new URLSearchParams(new FormData(f)), redirect: 'manual'});")
    ActionChains(d).click(button).perform()
    WebDriverWait(d, 30).until(gone(button))
    assert wait_until(lambda: "results stored" in chromium.text("result"), 15), chromium.text()[:600]
    assert f"{ROWS - 1} results stored" in chromium.text("result") and "1 row could not be used" in chromium.text("result")
    assert "Violations found" in chromium.text() and "Copper, daily maximum" in chromium.text()
    posts = lambda: (office.tmp / "web.err").read_text().count(f'"POST {preview_path}/import"')   # noqa: E731
    assert wait_until(lambda: posts() == 2, 15), posts()          # the browser did send it twice ...
    assert office.count("SELECT count(*) FROM audit_log WHERE action = 'lab.import'") == 1     # ... once imported
    assert office.count("SELECT count(*) FROM lab_results") == ROWS - 1
    assert office.count("SELECT count(*) FROM dead_letters WHERE reason = 'value ''4z0'' is not a number'") == 1
    assert office.count("SELECT count(*) FROM violations WHERE rule = 'cu-daily-max' AND peak = 1.6") == 1
    # the copper violation in the results table: over the permit's daily maximum, the limit beside it
    d.get(office.base + "/lab/results?site=plating&analyte=cu&since=2026-01-01&until=2026-03-31")
    row = chromium.text("r-plating-S-0202-cu")
    assert "1.60 mg/l" in row and "over the daily maximum 1.00 mg/l" in row and "condition 3(a)" in row, row
    assert "0.45" in chromium.text("r-plating-S-0201-cu")
    _fits(chromium, "results")
    # the back button to the preview: it says the upload is imported, and offers no second import
    d.get(office.base + preview_path)
    assert "Imported" in chromium.text() and not d.find_elements(By.ID, "import")
    _keep(shots)


def test_the_calendar_shows_the_sampling_due_dates_and_its_feed_parses_with_icalendar(office, chromium):
    import httpx
    from icalendar import Calendar

    d = chromium.driver
    sign_in(chromium, office, "coord")
    today = datetime.now(ZoneInfo("America/Chicago")).date()
    d.get(office.base + f"/calendar?month={today:%Y-%m}&site=plating")
    last = date(today.year, today.month, cal_mod.monthrange(today.year, today.month)[1])
    month = chromium.text("month")
    # the plater's permit, condition 5(a): a composite sample a month, due by the month's last day
    assert f"for {today:%Y-%m}" in month and "Lakeside Plating: samples" in month, month[:800]
    d.get(office.base + "/calendar")
    button = d.find_element(By.ID, "make-feed")
    button.click()
    WebDriverWait(d, 15).until(gone(button))
    url = chromium.text("feed-url").strip()
    assert url.startswith(office.base + "/calendar/feed/") and url.endswith(".ics")
    feed = httpx.get(url, timeout=30)                          # a calendar program: no session, no cookie
    assert feed.status_code == 200 and feed.headers["content-type"].startswith("text/calendar")
    cal = Calendar.from_ical(feed.content)
    due = sorted(e.decoded("dtstart") for e in cal.walk("VEVENT")
                 if str(e.get("uid")).startswith("sampling:PAL-IU-2026-02:5(a):"))
    assert last in due and all(x.day == cal_mod.monthrange(x.year, x.month)[1] for x in due)
    assert len(due) >= 12                                      # a year ahead of monthly due dates
    shots: dict = {}
    before = (today.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    _shots(chromium, office, "calendar", f"/calendar?month={before}", shots)     # a month gone by: missing in red
    _keep(shots)
