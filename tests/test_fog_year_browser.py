"""The grease program's year, part through the haulers' portal in a real browser (Debian's
Chromium), the rest through the command line; then the findings and the notices due, as
worked out by hand.

The village: the business-licence list of tests/fog_support.py (300 establishments, 306
devices, six bad rows rejected), generated here and imported with ``fog import``; the two
haulers registered with ``fog hauler add``, each with a portal account (``badger``,
``lakeshore``, made as an accepted invitation makes it). The year is tests/fog_support.py's
plan (its docstring works every finding out), entered two ways:

- **in the portal** (four reports, each filed from the hauler's own form as served, read back
  on its report's page): Badger Grease Service (the even establishments' hauler) files
  Kitchen 8's 06-10 pumping (FOG 8 + solids 5 = 13 in of 48 in = 27 %: "too late") and Cafe
  100's 12-01 (6 + 5.9 = 11.9 in, 24.8 %: no finding); Lakeshore Pumping (the odd ones') files
  Cafe 5's 10-20 pumping (due 06-10 + 90 days = 09-08: 42 days overdue) and Kitchen 99's
  12-01 (6 + 6 = 12 in, exactly 25 %: "too late"). The staff hired each hauler for those
  devices first (``fog hauler assign``): a hauler reports only its own devices.
- **by the command line**: the haulers' CSV less those four rows (``fog pumpout import``:
  the unknown licence and the manifest given twice rejected to the dead letters), with the
  pumping by the unregistered Quick Vac LLC (Cafe 200), and Kitchen 123's 03-15 pumping of
  1,250 gal from a 1,000 gal interceptor by hand (``fog pumpout add``: "over capacity").

What is found as of 2026-12-31 (``fog counts``), fog_support.EXPECTED: overdue 3 (LATE) + 2 x 2
(OVER25) + 5 + 1 (NEVER's interceptors and 250's trap) = 13; too late 2 + 1 = 3; over capacity
1; unregistered hauler 1; missing device 0. ``fog due`` as of 2026-12-31: the six never-pumped devices, 250's
trap first (due 02-05: 329 days), then the interceptors (due 04-01: 274 days).

The notices due (``fog notices due``, the grease guide: the 1st finding in 365 days a warning
letter, the 2nd a notice of violation, the 3rd a notice of forfeiture; over capacity none; no
blockage in this year): warning letters LATE 3 + OVER25 2 + EXACT25 1 + UNREG 1 + NEVER 5 =
12; notices of violation OVER25 2 + 250's trap 1 = 3; forfeitures OVER25 2: 17 notices.
"""

from __future__ import annotations

import json
from datetime import date

import psycopg
import pytest

import fog_enforcement_support as fe
import fog_support as fs
import web_round
from enforcement_support import run
from support import wait_until
from test_fog_browser import type_date
from test_rates_browser import fill

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

#: (hauler's account, licence, pumped on, FOG [in], solids [in], manifest): the rows filed in
#: the portal, taken out of the CSV the command line imports.
PORTAL = (("badger", "F0008", "2026-06-10", "8", "5", "M-0008-1"),
          ("badger", "F0100", "2026-12-01", "6", "5.9", "M-0100-3"),
          ("lakeshore", "F0005", "2026-10-20", "4", "3", "M-0005-2"),
          ("lakeshore", "F0099", "2026-12-01", "6", "6", "M-0099-3"))
ACCOUNTS = {"badger": ("Bea Badger", fs.HAULERS[0][1]), "lakeshore": ("Lee Lakeshore", fs.HAULERS[1][1])}


def ok(village, db, *args) -> str:
    r = run(village, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


@pytest.fixture(scope="module")
def year(services, round_village, tmp_path_factory):
    """The list, the haulers and their accounts, the assignments and the command line's part
    of the year; the office served over it."""
    from identity import accounts
    from portal_support import ADMIN, PASSWORD

    for db in web_round.clone(services, round_village[0]):
        tmp = tmp_path_factory.mktemp("grease-year")
        (tmp / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
        (tmp / "licences.csv").write_text(fs.licence_csv(), encoding="utf-8")
        text, good = fs.pumpout_csv()
        manifests = {"," + p[-1] for p in PORTAL}
        lines = [line for line in text.splitlines() if not any(line.endswith(m) for m in manifests)]
        assert len(lines) == len(text.splitlines()) - len(PORTAL)
        (tmp / "pumpouts.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        ok(tmp, db, "fog", "import", "licences.csv", "--registered", "2026-01-01", "--commit")
        for company, licence in fs.HAULERS:
            ok(tmp, db, "fog", "hauler", "add", company, "--licence", licence)
        for user, licence, *_ in PORTAL:
            ok(tmp, db, "fog", "hauler", "assign", ACCOUNTS[user][1], "--establishment", licence, "--device", "GI-1")
        with psycopg.connect(db.url, autocommit=True) as conn:
            for user, (name, licence) in ACCOUNTS.items():
                accounts.add(conn, user, name, None, PASSWORD, actor=ADMIN, kind="grease-hauler", hauler=licence,
                             portal={"email": f"{user}@example.com"})
        out = ok(tmp, db, "fog", "pumpout", "import", "pumpouts.csv", "--commit")
        assert f"{good - len(PORTAL)} rows stored; 2 rejected" in out, out
        ok(tmp, db, "fog", "pumpout", "add", "--establishment", "F0123", "--date", "2026-03-15", "--hauler",
           "WI-GH-202", "--gallons", "1250", "--fog-depth", "4", "--solids-depth", "3", "--facility",
           "Palmyra WWTP", "--manifest", "M-0123-0")
        served = tmp / "served"
        served.mkdir()
        with web_round.served(db, served) as base:
            yield {"base": base, "db": db, "tmp": tmp, "good": good}


def _file(b, base: str, licence: str, day: str, fog: str, solids: str, manifest: str) -> str:
    """File one report from the hauler's home as a person does; returns its page's findings."""
    d = b.driver
    d.get(base + "/portal/grease")
    row = next(r for r in d.find_elements(By.CSS_SELECTOR, "#devices tbody tr") if f"licence {licence}" in r.text)
    row.find_element(By.LINK_TEXT, "Report a pump-out").click()
    assert wait_until(lambda: d.find_elements(By.ID, "report-form"), 15)
    type_date(d, "r-date", day)
    for el, text in (("r-gallons", "900"), ("r-fog", fog), ("r-solids", solids), ("r-facility", "Palmyra WWTP"),
                     ("r-manifest", manifest)):
        fill(d, el, text)
    d.find_element(By.ID, "report-send").click()
    assert wait_until(lambda: d.find_elements(By.ID, "filed"), 15), b.text()[:600]
    assert "Your pump-out report is recorded" in b.text("filed") and day in b.text("report")
    assert d.title.startswith(f"Pump-out {manifest}") and "Photos" not in d.title    # the title, nothing more
    return b.text("findings")


def test_a_year_through_the_portal_and_the_command_line_gives_the_findings_and_notices(year, chromium):
    b, base, tmp, db = chromium, year["base"], year["tmp"], year["db"]
    found = {}
    for user in ("badger", "lakeshore"):
        web_round.sign_in(b, base, user)
        assert wait_until(lambda: b.driver.current_url.endswith("/portal/grease"), 15), b.driver.current_url
        for who, licence, day, fog, solids, manifest in PORTAL:
            if who == user:
                found[licence] = _file(b, base, licence, day, fog, solids, manifest)
    # each report read back with what the village finds in it
    assert "What the village finds in it (1)" in found["F0008"] and "27%, the rule is 25%" in found["F0008"]
    assert "No finding about this pump-out" in found["F0100"]
    assert "pumped 42 days after it was due on 2026-09-08 (every 90 days)" in found["F0005"]
    assert "12 in of 48 in liquid depth (25%, the rule is 25%)" in found["F0099"]
    with psycopg.connect(db.url) as conn:
        filed = conn.execute("SELECT manifest, source, recorded_by FROM fog_pumpouts WHERE source = 'portal' "
                             "ORDER BY manifest").fetchall()
        total = conn.execute("SELECT count(*) FROM fog_pumpouts").fetchone()[0]
    assert filed == sorted((p[-1], "portal", p[0]) for p in PORTAL)
    assert total == year["good"] + 1
    # the findings of the year, counted by hand (the module's docstring)
    c = json.loads(ok(tmp, db, "fog", "counts", "--year", "2026", "--as-of", "2026-12-31", "--json"))
    assert c["findings"] == fs.EXPECTED == {"overdue": 13, "too late": 3, "over capacity": 1,
                                           "unregistered hauler": 1, "missing device": 0}
    assert (c["establishments"], c["devices"], c["pumpouts"]) == (300, 306, year["good"] + 1)
    due = json.loads(ok(tmp, db, "fog", "due", "--as-of", "2026-12-31", "--json"))
    assert [(r["licence"], r["device"], r["overdue_days"]) for r in due] == \
        [("F0250", "HT-1", 329)] + [(f"F{i:04d}", "GI-1", 274) for i in (250, 251, 253, 254, 252)]
    # the notices due, by the grease guide
    as_of = fe.as_of()
    assert as_of >= date(2026, 12, 2)
    notices = json.loads(ok(tmp, db, "fog", "notices", "due", "--as-of", as_of.isoformat(), "--json"))
    by_step: dict[str, int] = {}
    for n in notices:
        by_step[n["step"]] = by_step.get(n["step"], 0) + 1
    assert by_step == {fe.WL: 12, fe.NOV: 3, fe.FN: 2}
    want = dict(fe.EXPECTED_NOTICES)
    want["F0042"] = [(fe.WL, "overdue")]                   # no blockage this year: no cost recovery
    got: dict[str, list] = {}
    for n in notices:
        got.setdefault(n["licence"], []).append((n["step"], n["kind"]))
    assert got == want
