"""The guide in the office: the MkDocs site of ``docs/`` served at ``/help``, and each office
page's link to its section of it ("How do I …?").

The site is built on the first visit of ``/help`` after a start, into the state folder
(``<state>/help/<digest of the sources>``), by MkDocs in a subprocess of the interpreter that
runs the office; a later start with the same sources serves that build again, one with other
sources (a new checkout) builds anew and removes the old build. The sources are the checkout's
beside the packages (a developer's checkout, or an install made from it in place), else the
copy an installed package carries under ``<prefix>/share/sewerwatch`` (``pyproject.toml``,
``[tool.setuptools.data-files]``), so an office installed without its checkout has its guide too. Why this way and not at setup
or in the tests: ``web/README.md``, "The guide at /help". Nothing of it is loaded from the
internet (``mkdocs.yml``: no web fonts, a local search index); the few inline scripts of the
Material theme are allowed by their hashes in the guide's own Content-Security-Policy
(:attr:`Guide.csp`), nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import logging
import mimetypes
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

log = logging.getLogger("sewerwatch.web.guide")

#: The checkout the office runs from: ``mkdocs.yml`` and ``docs/`` beside the packages.
ROOT = Path(__file__).resolve().parent.parent
#: Where an installed package's copy of the guide's sources lies, below its prefix.
INSTALLED = "share/sewerwatch"
#: Where the office serves the guide.
PATH = "/help"
#: Longest a build may take [s].
BUILD_TIMEOUT_S = 300

#: Each page of the office (its template) -> the guide's page and section, and the question
#: the link asks. A page not named here links to the guide's first page.
PAGES: dict[str, tuple[str, str]] = {
    "today.html": ("office/today/#today", "How do I read the Today page?"),
    "site.html": ("office/today/#an-industrial-user", "How do I read an industrial user's page?"),
    "contacts.html": ("office/contacts/", "How do I keep an industrial user's contacts and addresses?"),
    "contact.html": ("office/contacts/", "How do I keep an industrial user's contacts and addresses?"),
    "contacts_import.html": ("office/contacts/#importing-a-file", "How do I import contacts from a file?"),
    "contacts_file.html": ("office/contacts/#importing-a-file", "How do I import contacts from a file?"),
    "mail_batches.html": ("office/mailing/", "How do I mail notices and bills?"),
    "mail_batch.html": ("office/mailing/#who-gets-what", "How do I review and send a batch?"),
    "mail_paper.html": ("office/mailing/#who-gets-what", "How do I print the paper list?"),
    "mail_bounces.html": ("office/mailing/#sending-once", "How do I read the mail that came back?"),
    "alerts.html": ("office/today/#acknowledge-an-alert", "How do I acknowledge an alert?"),
    "alert.html": ("office/today/#acknowledge-an-alert", "How do I acknowledge an alert?"),
    "sensors.html": ("office/today/#alerts-sensors-and-dead-letters", "How do I read the sensors' health?"),
    "deadletters.html": ("devices/dead-letters/", "How do I bring back readings that could not be used?"),
    "deadletter.html": ("devices/dead-letters/", "How do I bring back readings that could not be used?"),
    "lab.html": ("office/lab/", "How do I check and import a lab file?"),
    "lab_upload.html": ("office/lab/", "How do I check and import a lab file?"),
    "lab_results.html": ("office/lab/", "How do I check and import a lab file?"),
    "permits.html": ("office/permits/", "How do I make a new version of a permit?"),
    "permit.html": ("office/permits/", "How do I make a new version of a permit?"),
    "permit_edit.html": ("office/permits/", "How do I make a new version of a permit?"),
    "permit_new.html": ("office/permits/", "How do I make a first permit?"),
    "calendar.html": ("office/calendar/", "How do I see what is due?"),
    "sampling.html": ("office/sampling/#planning-a-month", "How do I plan a month's sampling?"),
    "sampling_event.html": ("office/sampling/#when-the-results-come-back", "How do I see what the laboratory returned?"),
    "letters.html": ("office/letters/#in-the-office", "How do I issue a letter?"),
    "letters_template.html": ("office/letters/#writing-a-template", "How do I change a letter's template?"),
    "letter.html": ("office/letters/#editing-in-a-word-processor-and-bringing-the-pdf-back",
                    "How do I edit a letter and bring its PDF back?"),
    "field_sensor.html": ("office/field/#maintenance-windows", "How do I open a maintenance window?"),
    "field_calibration.html": ("office/field/#calibrations-and-instruments", "How do I record a calibration?"),
    "field_instrument.html": ("office/field/#calibrations-and-instruments", "How do I record an instrument?"),
    "maintenance.html": ("office/field/#maintenance-windows", "How do I approve a window for work already done?"),
    "inspections.html": ("office/field/#inspections", "How do I record an inspection?"),
    "inspection.html": ("office/field/#inspections", "How do I record an inspection?"),
    "inspection_form.html": ("office/field/#inspections", "How do I record an inspection?"),
    "enforcement.html": ("office/enforcement/", "How do I draft and issue a notice?"),
    "finding.html": ("office/enforcement/", "How do I draft and issue a notice?"),
    "notices.html": ("office/enforcement/", "How do I draft and issue a notice?"),
    "notice.html": ("office/enforcement/#in-the-office", "How do I issue, answer or escalate a notice?"),
    "notice_escalate.html": ("office/enforcement/#in-the-office", "How do I issue, answer or escalate a notice?"),
    "snc.html": ("office/enforcement/#schedules-reports-owed-and-snc", "How do I read the SNC test?"),
    "reports.html": ("office/reports/", "How do I make the state's report?"),
    "state_checklist.html": ("running/state-report/#what-the-states-reviewer-will-question",
                             "How do I answer what the state will ask?"),
    "bills.html": ("office/bills/#bill-a-quarter", "How do I bill a quarter?"),
    "bill_run.html": ("office/bills/#bill-a-quarter", "How do I bill a quarter?"),
    "bill.html": ("office/bills/#bill-a-quarter", "How do I record a payment?"),
    "fog_list.html": ("office/grease/#reading-it", "How do I find what is overdue?"),
    "fog_establishment.html": ("office/grease/#haulers-and-pump-outs", "How do I record a pump-out?"),
    "fog_blockages.html": ("office/grease/#grease-blockages-and-hot-spots", "How do I record a grease blockage?"),
    "fog_inspection_form.html": ("office/grease/#inspections", "How do I record a grease inspection?"),
    "fog_reminders.html": ("office/grease/#reminders", "How do I remind establishments of a pump-out due?"),
    "statement.html": ("office/statements/#what-a-statement-counts", "How do I read a statement of account?"),
    "receivables.html": ("office/statements/", "How do I read the receivables?"),
    "payments_file.html": ("office/statements/#the-banks-file", "How do I record the bank's payments?"),
    "rates.html": ("office/bills/#rates", "How do I enter new rates?"),
    "rates_version.html": ("office/bills/#rates", "How do I enter new rates?"),
    "accounts.html": ("office/accounts/", "How do I add an account?"),
    "portal_people.html": ("portal/invite/", "How do I invite an industrial user's people?"),
    "review_queue.html": ("portal/review/", "How do I accept or reject a report?"),
    "portal_home.html": ("portal/#submit-a-self-monitoring-report", "How do I submit and sign a report?"),
    "portal_draft.html": ("portal/#submit-a-self-monitoring-report", "How do I submit and sign a report?"),
    "portal_sign.html": ("portal/#submit-a-self-monitoring-report", "How do I submit and sign a report?"),
    "portal_submission.html": ("portal/#submit-a-self-monitoring-report", "How do I correct a report?"),
    "portal_statement.html": ("office/statements/#what-a-statement-counts", "How do I read my statement?"),
    "portal_invite.html": ("portal/#your-account", "How do I set up my account?"),
    "kitchen_home.html": ("portal/haulers/#establishments-confirm-or-dispute", "How do I confirm or dispute a pump-out?"),
    "hauler_home.html": ("portal/haulers/", "How do I report a pump-out?"),
    "hauler_report_form.html": ("portal/haulers/#report-a-pump-out", "How do I report a pump-out?"),
    "hauler_report.html": ("portal/haulers/#what-the-village-finds", "How do I read what the village finds?"),
    "login.html": ("office/#sign-in", "How do I sign in?"),
    "login_code.html": ("office/#sign-in", "How do I sign in?"),
}
#: The staff's view of a submission is the review queue's.
STAFF_PAGES = {"portal_submission.html": ("portal/review/", "How do I accept or reject a report?")}
#: The link of a page the table does not name.
DEFAULT = ("", "How do I …? The guide")


def link(template: str | None, account=None) -> tuple[str, str]:
    """The guide's address below :data:`PATH` (``office/lab/``) and the question of the page
    drawn from ``template`` for ``account`` (None: not signed in)."""
    if account is not None and getattr(account, "kind", None) == "staff" and template in STAFF_PAGES:
        return STAFF_PAGES[template]
    return PAGES.get(template or "", DEFAULT)


def sources_root() -> Path | None:
    """The folder holding ``mkdocs.yml`` and ``docs/``: the checkout beside the packages, else
    the installed package's copy below its prefix (found through the package's own record of
    its files, wherever it was installed: a virtual environment, ``--prefix``, ``--user``).
    None when neither is on this machine."""
    if (ROOT / "mkdocs.yml").is_file() and (ROOT / "docs").is_dir():
        return ROOT
    try:
        files = importlib.metadata.distribution("sewerwatch").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.as_posix().endswith(INSTALLED + "/mkdocs.yml"):
            folder = Path(f.locate()).resolve().parent
            if (folder / "docs").is_dir():
                return folder
    return None


class Unavailable(Exception):
    """The guide cannot be served on this machine; the message says why in plain words."""


class Guide:
    """The built site of one office, made on first use.

    Parameters
    ----------
    state_dir : Path
        The state folder; the builds go to its ``help/``.
    root : Path, optional
        The folder holding ``mkdocs.yml`` and ``docs/`` (default: :func:`sources_root`).
    """

    def __init__(self, state_dir: Path, root: Path | None = None):
        self.root = Path(root) if root is not None else (sources_root() or ROOT)
        self.builds = Path(state_dir) / "help"
        self.site: Path | None = None
        self.csp: str | None = None
        self._lock = threading.Lock()

    def sources(self) -> list[Path]:
        """What the site is made of: ``mkdocs.yml``, the README (the guide takes its first hour
        from it) and every file below ``docs/`` (screenshots through their links)."""
        docs = self.root / "docs"
        files = [self.root / "mkdocs.yml", self.root / "README.md"]
        for folder, _dirs, names in os.walk(docs, followlinks=True):
            files += [Path(folder) / n for n in names]
        return sorted(f for f in files if f.is_file())

    def digest(self) -> str:
        """A digest of :meth:`sources`: their paths and bytes."""
        h = hashlib.sha256()
        for f in self.sources():
            h.update(str(f.relative_to(self.root)).encode() + b"\0")
            h.update(f.read_bytes())
        return h.hexdigest()[:16]

    def ensure(self) -> Path:
        """The built site's folder, built first if need be (once, however many ask at once).

        Raises
        ------
        Unavailable
            Without the guide's sources (neither the checkout nor an installed copy: see
            :func:`sources_root`) or without MkDocs, or when the build fails.
        """
        if self.site is not None:
            return self.site
        with self._lock:
            if self.site is None:
                self.site = self._build()
                self.csp = csp(self.site)
        return self.site

    def _build(self) -> Path:
        if not (self.root / "mkdocs.yml").is_file() or not (self.root / "docs").is_dir():
            raise Unavailable("The guide's pages are not on this machine: sewerwatch was installed without them.")
        if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
            raise Unavailable("The guide's tools are not installed on this machine: installing sewerwatch "
                              "again brings them.")
        target = self.builds / self.digest()
        if (target / "index.html").is_file():
            return target
        self.builds.mkdir(parents=True, exist_ok=True)
        work = self.builds / f".building-{os.getpid()}-{threading.get_ident()}"
        shutil.rmtree(work, ignore_errors=True)
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        argv = [sys.executable, "-m", "mkdocs", "build", "--quiet", "--config-file", str(self.root / "mkdocs.yml"),
                "--site-dir", str(work)]
        try:
            r = subprocess.run(argv, cwd=self.root, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            shutil.rmtree(work, ignore_errors=True)
            raise Unavailable(f"The guide could not be made in {BUILD_TIMEOUT_S} s; try again later.") from None
        if r.returncode != 0 or not (work / "index.html").is_file():
            log.error("guide: the build failed (exit %s): %s", r.returncode, (r.stderr or r.stdout)[-2000:])
            shutil.rmtree(work, ignore_errors=True)
            raise Unavailable("The guide could not be made on this machine (sewerwatch's log says why).")
        try:
            work.rename(target)
        except OSError:                      # another process built the same sources meanwhile
            shutil.rmtree(work, ignore_errors=True)
        for old in self.builds.iterdir():    # builds of other sources, and abandoned ones
            if old != target and not old.name.startswith(".building-"):
                shutil.rmtree(old, ignore_errors=True)
        log.info("guide: built into %s", target)
        return target

    def file(self, path: str) -> tuple[Path | None, bool]:
        """The file of the site at ``path`` (below :data:`PATH`) and whether the address must end
        with a slash first (a folder: its ``index.html``, whose links are relative to it).
        ``(None, False)`` for nothing there, or anything outside the site."""
        site = self.ensure().resolve()
        rel = path.lstrip("/")
        target = (site / rel).resolve()
        if target != site and site not in target.parents:
            return None, False
        if target.is_dir():
            if rel and not path.endswith("/"):
                return None, True
            target = target / "index.html"
        return (target, False) if target.is_file() else (None, False)


_INLINE = re.compile(rb"<script>(.*?)</script>", re.S)


def csp(site: Path) -> str:
    """The guide's Content-Security-Policy: the office's, with the built pages' inline scripts
    (the theme's few lines that read its settings) allowed by their SHA-256."""
    hashes: set[str] = set()
    for page in site.rglob("*.html"):
        for m in _INLINE.finditer(page.read_bytes()):
            hashes.add("'sha256-" + base64.b64encode(hashlib.sha256(m.group(1)).digest()).decode() + "'")
    scripts = " ".join(["'self'", *sorted(hashes)])
    return (f"default-src 'none'; style-src 'self'; script-src {scripts}; img-src 'self' data:; "
            "connect-src 'self'; worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


def media_type(path: Path) -> str:
    """The media type of a file of the site."""
    kind, _ = mimetypes.guess_type(path.name)
    if kind is None:
        return "application/octet-stream"
    return kind + ("; charset=utf-8" if kind.startswith("text/") or kind in ("application/javascript",
                                                                              "application/json") else "")
