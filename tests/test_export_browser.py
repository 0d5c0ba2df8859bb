"""The year's records downloaded from the Reports page in a real browser (Debian's Chromium,
the session's one browser) against ``sewerwatch web`` over a copy of the seeded village of
tests/web_round.py, its 2026Q1 bills and a notice of violation issued: the viewer (a council
member, the state's auditor) opens Reports, chooses 2026 and clicks the records' link as
served; Chromium saves the zip, whose manifest lists every file with its SHA-256, the notice's
PDF among them with the bytes issued (the SHA-256 stored at issue) and the bills' PDFs. An
industrial user's portal account opening the same address is refused and gets no file.
"""

from __future__ import annotations

import hashlib
import json
import zipfile

import httpx
import psycopg
import pytest

import web_round
from support import wait_until
from test_backup_export_cli import issue_the_year
from web_support import cheap_hashes

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def office(services, round_village, tmp_path_factory):
    import portal_support

    db_gen = web_round.clone(services, round_village[0], "export-browser")
    db = next(db_gen)
    tmp = tmp_path_factory.mktemp("export-browser")
    (tmp / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    (tmp / "rates.toml").write_text(web_round.RATES, encoding="utf-8")
    try:
        issue_the_year(tmp, db)
        with cheap_hashes():
            portal_support.person(db.url, "plating", "plater-pm", "Pat Plater", signatory=False)
        with web_round.served(db, tmp) as base:
            yield {"base": base, "db": db, "tmp": tmp}
    finally:
        next(db_gen, None)


def downloads_into(b, folder) -> None:
    """Chromium saves what a click downloads into ``folder`` (DevTools' download behaviour)."""
    folder.mkdir(parents=True, exist_ok=True)
    b.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(folder)})


def test_the_viewer_downloads_the_years_records_and_a_portal_account_is_refused(office, chromium, tmp_path):
    b, d, base, db = chromium, chromium.driver, office["base"], office["db"]
    saved = tmp_path / "downloads"
    downloads_into(b, saved)
    try:
        web_round.sign_in(b, base, "viewer")
        d.get(base + "/")
        d.find_element(By.LINK_TEXT, "Reports").click()
        assert wait_until(lambda: "/reports" in d.current_url, 15)
        Select(d.find_element(By.ID, "f-year")).select_by_visible_text("2026")
        d.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]").click()
        assert wait_until(lambda: "year=2026" in d.current_url and "Reports, 2026" in b.text(), 15)
        link = d.find_element(By.ID, "records-zip")
        assert link.text == "The records of 2026 (zip)"
        link.click()
        target = saved / "records-2026.zip"
        assert wait_until(lambda: target.is_file() and not list(saved.glob("*.crdownload")), 120), \
            sorted(p.name for p in saved.iterdir())
    finally:
        d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "default"})

    scratch = office["tmp"] / "state" / "exports"          # the folder it was gathered in: removed once sent
    assert wait_until(lambda: scratch.is_dir() and not any(scratch.iterdir()), 15), sorted(scratch.rglob("*"))
    with zipfile.ZipFile(target) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("records-2026/manifest.json"))
        assert {f"records-2026/{n}" for n in manifest["files"]} | {"records-2026/manifest.json",
                                                                   "records-2026/SHA256SUMS"} == names
        assert manifest["year"] == 2026 and manifest["utility"] == "Village of Palmyra"
        with psycopg.connect(db.url) as conn:
            number, at_issue = conn.execute("SELECT number, pdf_sha256 FROM notices").fetchone()
            n_bills = conn.execute("SELECT count(*) FROM bills").fetchone()[0]
        notice = f"documents/notices/{number}.pdf"
        pdf = z.read(f"records-2026/{notice}")
        assert pdf.startswith(b"%PDF") and hashlib.sha256(pdf).hexdigest() == manifest["files"][notice]["sha256"]
        assert manifest["files"][notice]["sha256_at_issue"] == at_issue == hashlib.sha256(pdf).hexdigest()
        assert len([n for n in manifest["files"] if n.startswith("documents/bills/")]) == n_bills == 2
        readings = z.read("records-2026/lab_results.csv")
        assert hashlib.sha256(readings).hexdigest() == manifest["files"]["lab_results.csv"]["sha256"]
        assert b"cu" in readings                     # the demo's copper result of 2026-02-04 is in it

    # an industrial user's portal account: refused, nothing saved
    web_round.sign_in(b, base, "plater-pm")
    before = sorted(saved.iterdir())
    d.get(base + "/reports/2026/records.zip")
    assert wait_until(lambda: "Your account belongs to the industrial users' portal" in b.text(), 15), b.text()[:400]
    assert sorted(saved.iterdir()) == before
    cookies = {c["name"]: c["value"] for c in d.get_cookies()}
    r = httpx.get(base + "/reports/2026/records.zip", cookies=cookies, timeout=60)
    assert r.status_code == 403 and not r.content.startswith(b"PK")
