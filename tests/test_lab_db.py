"""Lab results in the real TimescaleDB: import with dead letters, corrections as versions,
composites linked to flow readings, volumes from metered flow, violations and quarterly bills."""

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg
import pytest

from lab.store.current import load_results
from lab.store.flow import composite_loadings, period_volume
from lab.store.results import import_lab_file

pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parent.parent
HEADER = "sample_id,site,collected,analyte,value,unit,qualifier\n"
NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def setup_sites(conn):
    conn.execute("INSERT INTO sites (key, name, pack, sic) VALUES ('mill', 'Paper Mill', 'palmyra-wi', '2621'), "
                 "('dairy', 'Dairy', 'palmyra-wi', '2023')")
    conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source, interval_s) "
                 "SELECT id, 'flow', 'flow', 'gpm', 'modbus', 60 FROM sites WHERE key = 'mill'")
    conn.commit()


def add_flow(conn, start: datetime, minutes: int, gpm, site="mill"):
    """One reading a minute from ``start``; ``gpm`` a number or an array."""
    sid = conn.execute("SELECT s.id FROM sensors s JOIN sites t ON t.id = s.site_id WHERE t.key = %s "
                       "AND s.parameter = 'flow'", (site,)).fetchone()[0]
    q = np.broadcast_to(np.asarray(gpm, dtype=float), (minutes + 1,))
    with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
        for i in range(minutes + 1):
            cp.write_row((start + timedelta(minutes=i), sid, float(q[i]), 0))
    conn.commit()


def test_import_stores_good_rows_and_dead_letters_bad_ones(db, tmp_path):
    with db.connect() as conn:
        setup_sites(conn)
        f = tmp_path / "q1.csv"
        f.write_text(HEADER.rstrip("\n") + ",analyst\n" + "\n".join([
            "S1,mill,2026-01-05,bod5,420,mg/l,,JK",        # 2 good
            "S1,mill,2026-01-05,tp,9500,ug/l,,JK",         # 3 good: 9.5 mg/l
            "S1,mill,2026-01-05,cn,5,ug/l,<,JK",           # 4 good non-detect
            "S2,brewery,2026-01-06,bod5,300,mg/l,,JK",     # 5 unknown site
            "S3,dairy,2026-01-06,nitrat,3,mg/l,,JK",       # 6 unknown analyte (a typo)
            "S3,dairy,2026-13-06,bod5,3,mg/l,,JK",         # 7 bad date
            "S1,mill,2026-01-05,bod5,420,mg/l,,JK",        # 8 duplicate of line 2
            "S3,dairy,2026-01-06,tss,180,mg/l,,JK",        # 9 good
        ]) + "\n")
        rep = import_lab_file(conn, f, actor="lab-tech", now=NOW)
        assert (rep.stored, rep.corrected, rep.samples_created) == (4, 0, 2)
        assert [b.line for b in rep.bad] == [5, 6, 7, 8]
        rows = conn.execute("SELECT s.sample_key, r.analyte, r.value_mg_l, r.qualifier, r.version, r.entered_by, "
                            "r.source FROM lab_results r JOIN lab_samples s ON s.id = r.sample_id "
                            "ORDER BY r.id").fetchall()
        assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
            ("S1", "bod5", 420.0, "", 1), ("S1", "tp", 9.5, "", 1), ("S1", "cn", 0.005, "<", 1),
            ("S3", "tss", 180.0, "", 1)]
        assert rows[0][5] == "lab-tech" and rows[0][6] == f"{f}:2"
        dead = conn.execute("SELECT source, topic, payload, reason, detail FROM dead_letters ORDER BY id").fetchall()
        assert [d[1] for d in dead] == [f"{f}:5", f"{f}:6", f"{f}:7", f"{f}:8"]
        assert all(d[0] == "lab-import" for d in dead)
        assert bytes(dead[0][2]) == b"S2,brewery,2026-01-06,bod5,300,mg/l,,JK"
        assert "unknown site 'brewery'" in dead[0][3] and dead[0][4]["line"] == 5
        assert "duplicate" in dead[3][3]
        # the dead letter names the closest known ids
        assert dead[1][3].startswith("unknown analyte 'nitrat' (closest known: no3")
        audit = conn.execute("SELECT actor, action, object, detail FROM audit_log").fetchall()
        assert audit == [("lab-tech", "lab.import", str(f), {"stored": 4, "corrected": 0, "unchanged": 0, "bad": 4, "samples_created": 2,
                                                               "via": "cli"})]


def test_correction_is_a_new_version_with_audit(db, tmp_path):
    with db.connect() as conn:
        setup_sites(conn)
        (tmp_path / "a.csv").write_text(HEADER + "S1,mill,2026-01-05,bod5,420,mg/l,\n")
        import_lab_file(conn, tmp_path / "a.csv", actor="tech", now=NOW)
        # the same file again: nothing stored, nothing bad, no dead letter
        rep = import_lab_file(conn, tmp_path / "a.csv", actor="tech", now=NOW)
        assert (rep.stored, rep.unchanged, rep.bad) == (0, 1, [])
        assert conn.execute("SELECT count(*) FROM dead_letters").fetchone()[0] == 0
        # a changed value without --correct is refused and says how
        (tmp_path / "b.csv").write_text(HEADER + "S1,mill,2026-01-05,bod5,380,mg/l,\n")
        rep = import_lab_file(conn, tmp_path / "b.csv", actor="tech", now=NOW)
        assert rep.corrected == 0 and "--correct" in rep.bad[0].reason
        rep = import_lab_file(conn, tmp_path / "b.csv", actor="supervisor", correct=True, now=NOW)
        assert (rep.corrected, rep.bad) == (1, [])
        versions = conn.execute("SELECT version, value_mg_l, entered_by, reason FROM lab_results ORDER BY version").fetchall()
        assert [(v[0], v[1], v[2]) for v in versions] == [(1, 420.0, "tech"), (2, 380.0, "supervisor")]
        assert versions[1][3] == f"correction from {tmp_path / 'b.csv'}:2"
        cur = conn.execute("SELECT value_mg_l FROM lab_results_current").fetchall()
        assert cur == [(380.0,)]
        at, actor, obj, detail = conn.execute(
            "SELECT at, actor, object, detail FROM audit_log WHERE action = 'lab.correct'").fetchone()
        assert actor == "supervisor" and obj == "lab_result:mill/S1/bod5"
        assert (detail["previous_mg_l"], detail["value_mg_l"], detail["version"]) == (420.0, 380.0, 2)
        assert abs((datetime.now(timezone.utc) - at).total_seconds()) < 600
        conn.commit()
        # versions are never overwritten
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("UPDATE lab_results SET value_mg_l = 1")
        conn.rollback()
        t = load_results(conn, datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 4, 1, tzinfo=timezone.utc))
        assert list(t.value_mg_l) == [380.0]


def test_composite_linked_to_flow_readings_of_its_window(db, tmp_path):
    with db.connect() as conn:
        setup_sites(conn)
        t0 = datetime(2026, 2, 2, 8, tzinfo=timezone.utc)
        # 100 gpm from 06:00 to 10:00 the next day; the window is 08:00 -> 08:00
        add_flow(conn, t0 - timedelta(hours=2), 26 * 60, 100.0)
        (tmp_path / "c.csv").write_text(
            "sample_id,site,collected,analyte,value,unit,qualifier,sample_type,window_start,window_end\n"
            "C1,mill,2026-02-03T08:00:00+00:00,bod5,400,mg/l,,composite,2026-02-02T08:00:00+00:00,\n"
            "C1,mill,2026-02-03T08:00:00+00:00,tss,500,mg/l,,composite,2026-02-02T08:00:00+00:00,\n"
            "C2,dairy,2026-02-03T08:00:00+00:00,bod5,100,mg/l,,soup,,\n")
        rep = import_lab_file(conn, tmp_path / "c.csv", actor="t", now=NOW)
        assert [b.line for b in rep.bad] == [4] and "sample_type 'soup'" in rep.bad[0].reason
        [link] = rep.composites_linked
        # 24 h x 60 min x 100 gal/min = 144,000 gal, readings at every minute 08:00 ... 07:59
        assert link["volume_gal"] == pytest.approx(144_000.0) and link["coverage"] == pytest.approx(1.0)
        assert link["readings"] == 1440
        sid, sensor = conn.execute("SELECT id, flow_sensor_id FROM lab_samples WHERE sample_key = 'C1'").fetchone()
        assert sensor == link["sensor_id"]
        ld = composite_loadings(conn, sid)
        # 400 mg/l x 0.144 MG x 8.34 = 480.384 lb; TSS 500 x 0.144 x 8.34 = 600.48 lb
        assert ld["analytes"]["bod5"]["pounds"] == pytest.approx(480.384)
        assert ld["analytes"]["tss"]["pounds"] == pytest.approx(600.48)


def test_period_volume_integrated_from_metered_flow(db):
    with db.connect() as conn:
        setup_sites(conn)
        # 2 days at 250 gpm from Jan 10 00:00 UTC: 250 x 2880 = 720,000 gal = 0.72 MG
        add_flow(conn, datetime(2026, 1, 10, tzinfo=timezone.utc), 2 * 1440, 250.0)
        q1 = (datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 4, 1, tzinfo=timezone.utc))
        v = period_volume(conn, "mill", *q1, tz=timezone.utc)
        assert v["volume_gal"] == pytest.approx(720_000.0) and v["volume_mg"] == pytest.approx(0.72)
        # the two whole UTC days are 250 x 1440 = 360,000 gal each
        assert v["daily_gal"] == pytest.approx({"2026-01-10": 360_000.0, "2026-01-11": 360_000.0})
        # in the pack's time zone (palmyra-wi: America/Chicago, UTC-6 in January) the readings
        # run Jan 9 18:00 to Jan 11 18:00: only Jan 10 is a whole day
        v = period_volume(conn, "mill", *q1)
        assert v["daily_gal"] == pytest.approx({"2026-01-10": 360_000.0})
        # a window of 6 hours inside: 250 x 360 = 90,000 gal
        v = period_volume(conn, "mill", datetime(2026, 1, 10, 6, tzinfo=timezone.utc),
                          datetime(2026, 1, 10, 12, tzinfo=timezone.utc))
        assert v["volume_gal"] == pytest.approx(90_000.0) and v["coverage"] == pytest.approx(1.0)


def _env(db):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env["SEWERWATCH_DB_URL"] = db.url
    return env


def test_cli_lab_import_check_and_quarterly_bill(db, tmp_path):
    with db.connect() as conn:
        setup_sites(conn)
        # mill: 200 gpm for 3 whole days in Q1 (Chicago time): 200 x 4320 = 864,000 gal = 0.864 MG
        add_flow(conn, datetime(2026, 2, 1, 6, tzinfo=timezone.utc), 3 * 1440, 200.0)
    lab = tmp_path / "q1.csv"
    lab.write_text(HEADER + "\n".join([
        "S1,mill,2026-02-01,bod5,300,mg/l,",
        "S2,mill,2026-02-02,bod5,500,mg/l,",
        "S1,mill,2026-02-01,tss,200,mg/l,",
        "S1,mill,2026-02-01,cn,0.8,mg/l,",
        "S1,mill,2026-02-01,fog,120,mg/l,",
        "S9,mill,2026-02-02,fog,abc,mg/l,",
        "D1,dairy,2026-02-01,bod5,260,mg/l,",
    ]) + "\n")
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "lab", "import", str(lab), "--actor", "lab", "--json"],
                       capture_output=True, text=True, env=_env(db), cwd=tmp_path, timeout=120)
    assert r.returncode == 4, r.stderr       # a row became a dead letter
    assert "1 of 7 rows became dead letters (not imported): line 7: value 'abc' is not a number" in r.stderr
    rep = json.loads(r.stdout)
    assert (rep["stored"], rep["bad"], rep["complete"]) == (6, 1, False)
    assert rep["bad_rows"] == [{"line": 7, "reason": "value 'abc' is not a number"}]

    r = subprocess.run([sys.executable, "-m", "sewerwatch", "lab", "check", "--since", "2026-01-01",
                        "--until", "2026-04-01", "--store", "--json"],
                       capture_output=True, text=True, env=_env(db), cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    # cyanide 0.8 > 0.5 (§13.48(2)(l)); FOG average 120 > 100 (§13.48(2)(k))
    assert sorted((v["site"], v["rule"]) for v in res["violations"]) == [("mill", "cyanide-max"), ("mill", "fog-max")]
    assert res["stored"] == 2
    mill_permit = next(p for p in res["permits"] if p["site"] == "mill")
    # BOD average (300 + 500)/2 = 400 > 250 and 288,000 gal/day >= 5,000: permit required; and
    # §13.54(1)(f) "Any of the characteristics listed under §13.48": cyanide 0.8 in excess of 0.5
    assert {x["criterion"] for x in mill_permit["reasons"]} == {"bod5", "volume", "characteristics"}
    # SNC Jan-Jun 2026, mill: cyanide 1 of 1 > 0.5 (chronic) and >= 1.2 x 0.5 = 0.6 (TRC);
    # FOG 1 of 1 > 100 (chronic) but 120 < 1.4 x 100 = 140 (no TRC)
    snc = {(x["site"], x["parameter"]): x for x in res["snc"]}
    assert (snc["mill", "cn"]["chronic"], snc["mill", "cn"]["trc"]) == (True, True)
    assert (snc["mill", "fog"]["chronic"], snc["mill", "fog"]["trc"], snc["mill", "fog"]["snc"]) == (True, False, True)
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM violations WHERE source = 'lab'").fetchone()[0] == 2
    # checking again stores nothing twice
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "lab", "check", "--since", "2026-01-01",
                        "--until", "2026-04-01", "--store", "--json"],
                       capture_output=True, text=True, env=_env(db), cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["stored"] == 0

    rates = tmp_path / "rates.toml"
    rates.write_text("bod = 0.20\ntss = 0.15\ntkn = 0.90\ntp = 2.50\n[bill.volume_mg]\ndairy = 0.3\n")
    out = tmp_path / "bills"
    bill = lambda *a: subprocess.run([sys.executable, "-m", "sewerwatch", "bill", "--quarter", "2026Q1", "--rates",
                                      str(rates), "--out", str(out), *a], capture_output=True, text=True,
                                     env=_env(db), cwd=tmp_path, timeout=180)
    # mill's meter covers 3 of the quarter's 90 days and the rates file gives no volume: its
    # volume is unknown, so no bill is issued (a bill that cannot mislead)
    r = bill("--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("sewerwatch: error: bill 2026Q1: not issued, volume unknown for mill (the flow "
                               "readings cover 3.3 % of the quarter, a bill needs 95 %") and "bill.volume_mg.mill" in r.stderr
    assert "dairy" not in r.stderr and not out.exists()
    # --draft: the same computation, marked DRAFT, nothing stored
    r = bill("--json", "--draft")
    assert r.returncode == 0, r.stderr
    bills = {b["site"]: b for b in json.loads(r.stdout)}
    mill, dairy = bills["mill"], bills["dairy"]
    assert mill["draft"] and dairy["draft"] and not mill["volume_known"] and dairy["volume_known"]
    assert mill["volume_mg"] == pytest.approx(0.864) and "metered" in mill["volume_source"]
    # 3 days of readings in a 90-day quarter: the clerk is told the metered volume is incomplete
    assert [n for n in mill["notes"] if "the flow readings cover 3% of the quarter" in n]
    assert not [n for n in dairy["notes"] if "flow readings cover" in n]     # its volume is given
    # mill BOD 400: 0.864 MG x 150 x 8.34 = 1,080.864 lb x $0.20 = $216.17; TSS 200 < 250: $0
    [sur] = mill["charges"]
    assert sur["charge"] == "surcharge" and "§13.45(4)" in sur["citation"]
    assert sur["detail"]["analytes"]["bod5"]["dollars"] == 216.17 and mill["total_dollars"] == 216.17
    # dairy: volume given 0.3 MG; BOD 260: 0.3 x 10 x 8.34 = 25.02 lb x 0.20 = $5.00 (5.004)
    assert dairy["total_dollars"] == 5.0
    # Palmyra §13.46(8): due 20 days after issue, 3 % after; 3 % of 216.17 = 6.4851 -> $6.49
    assert mill["payment"]["late_charge_if_late"] == 6.49 and "§13.46(8)" in mill["payment"]["citation"]
    # loadings: the readings cover Feb 1-3 Chicago time whole (200 x 1440 = 288,000 gal a day);
    # BOD 300 mg/l on Feb 1 x 0.288 MG x 8.34 = 720.576 lb/day; 500 on Feb 2: 1,200.96 lb/day
    bod = {x["date"]: x for x in mill["loadings"] if x["analyte"] == "bod5"}
    assert bod["2026-02-01"]["metered_day"] and bod["2026-02-01"]["lb_per_day"] == pytest.approx(720.576)
    assert bod["2026-02-02"]["lb_per_day"] == pytest.approx(1200.96)
    # dairy has no meter: its day is the quarter's average, 0.3 MG / 90 days; 260 x 0.3/90 x 8.34 = 7.228 lb/day
    [d] = [x for x in dairy["loadings"] if x["analyte"] == "bod5"]
    assert not d["metered_day"] and d["lb_per_day"] == pytest.approx(260 * 0.3 / 90 * 8.34)
    page = (out / "bill-2026Q1-mill-draft.html").read_text()
    assert "<svg" in page and "$216.17" in page and "§13.45(4)" in page
    assert "A wastewater discharge permit is required" in page and "§13.54(1)(a)" in page
    # the violation by the analyte's name and the limit's words, never the rule's id
    assert "Cyanide (total): " in page and "in excess of 0.5 mg/l in any sample" in page and "cyanide-max" not in page
    assert "&lt;" not in page.split("<h2>Lab results</h2>")[1].split("</table>")[0]
    assert json.loads((out / "bill-2026Q1-mill-draft.json").read_text())["total_dollars"] == 216.17
    with db.connect() as conn:   # a draft is not issued
        assert conn.execute("SELECT count(*) FROM bills").fetchone()[0] == 0
    # the metered water use gives mill's volume: the bills are issued and stored
    rates.write_text("bod = 0.20\ntss = 0.15\ntkn = 0.90\ntp = 2.50\n[bill.volume_mg]\ndairy = 0.3\nmill = 0.864\n")
    r = bill()
    assert r.returncode == 0, r.stderr
    assert "DRAFT" not in r.stdout and "$216.17" in r.stdout and "$5.00" in r.stdout
    assert json.loads((out / "bill-2026Q1-mill.json").read_text())["total_dollars"] == 216.17
    with db.connect() as conn:
        stored = conn.execute("SELECT t.key, b.period, b.total_dollars FROM bills b JOIN sites t ON t.id = b.site_id "
                              "ORDER BY t.key").fetchall()
        assert [(k, p, float(d)) for k, p, d in stored] == [("dairy", "2026Q1", 5.0), ("mill", "2026Q1", 216.17)]


def test_cli_lab_list_and_unusable_file(db, tmp_path):
    with db.connect() as conn:
        setup_sites(conn)
    (tmp_path / "a.csv").write_text(HEADER + "S1,mill,2026-01-05,bod5,420,mg/l,\nS1,mill,2026-01-05,cn,2,ug/l,<\n")
    run = lambda *a: subprocess.run([sys.executable, "-m", "sewerwatch", *a], capture_output=True, text=True,
                                    env=_env(db), cwd=tmp_path, timeout=120)
    r = run("lab", "import", "a.csv", "--actor", "t")
    assert r.returncode == 0 and "2 stored, 0 corrected, 0 unchanged, 0 bad" in r.stdout
    r = run("lab", "list", "--since", "2026-01-01", "--until", "2026-02-01", "--json")
    assert r.returncode == 0, r.stderr
    got = [(x["site"], x["sample"], x["analyte"], x["qualifier"], x["mg_l"]) for x in json.loads(r.stdout)]
    assert got == [("mill", "S1", "bod5", "", 420.0), ("mill", "S1", "cn", "<", 0.002)]
    (tmp_path / "bad.csv").write_text("sample,site,value\n1,mill,3\n")
    r = run("lab", "import", "bad.csv")
    assert r.returncode == 2 and r.stderr.startswith("sewerwatch: error: bad.csv: line 1: missing column(s)")
    with db.connect() as conn:  # nothing half-imported
        assert conn.execute("SELECT count(*) FROM lab_results").fetchone()[0] == 2


def test_bills_of_webster_ny_and_westfield_users(db, tmp_path):
    from datetime import date

    from lab.billing import build_bills
    with db.connect() as conn:
        conn.execute("INSERT INTO sites (key, name, pack) VALUES ('laundry', 'Laundry', 'webster-ny'), "
                     "('cannery', 'Cannery', 'westfield-wi'), ('bakery', 'Bakery', 'palmyra-wi')")
        conn.commit()
        rates = tmp_path / "rates.toml"
        rates.write_text("bod = 0.30\ntss = 0.10\n"
                         "[bill.volume_mg]\nlaundry = 0.15\ncannery = 0.2\nbakery = 0.0425\n"
                         "[bill.palmyra-wi]\nuse_per_1000_gal = 6.37\n"
                         "[bill.webster-ny]\nunit_rent = 400.0\n"
                         "[bill.westfield-wi]\nannual_debt_budget = 40000.0\ntotal_re = 500\n"
                         "[bill.re]\ncannery = 3.0\n"
                         # Westfield's ordinance sets no surcharge formula; the
                         # village states it adopted none (else the bill is refused)
                         "[adopted.surcharge]\nformula = \"none\"\nby = \"Village Board minutes 2026-01-12\"\n")
        bills = {b["site"]: b for b in build_bills(conn, "2026Q2", str(rates), issued=date(2026, 7, 1))}
    ny = bills["laundry"]
    # §113-75: 0.15 MG = 150,000 gal / 60,000 = 2.5 units x $400 = $1,000.00
    assert [(c["charge"], c["dollars"]) for c in ny["charges"]] == [("sewer rent", 1000.0)]
    assert ny["total_dollars"] == 1000.0 and ny["payment"] is None   # no late charge in the seed
    wf = bills["cannery"]
    # westfield: ($81 + $40,000 / 500 / 4 = $20) x 3 RE = $303.00; no lab results -> no surcharge
    assert [(c["charge"], c["dollars"]) for c in wf["charges"]] == [("sewer service charge", 303.0)]
    assert wf["period_start"].startswith("2026-04-01T00:00:00-05:00")  # America/Chicago, daylight time
    bk = bills["bakery"]
    # palmyra-wi §13.45(2)(a): 0.0425 MG = 42,500 gal / 1,000 x $6.37 = $270.725 -> $270.73
    assert [(c["charge"], c["dollars"]) for c in bk["charges"]] == [("sewer use charge", 270.73)]
    assert "§13.45(2)(a)" in bk["charges"][0]["citation"]


def test_composite_relinked_when_readings_arrive_after_the_import(db, tmp_path):
    from lab.store.period_checks import composites
    with db.connect() as conn:
        setup_sites(conn)
        (tmp_path / "c.csv").write_text(
            "sample_id,site,collected,analyte,value,unit,qualifier,sample_type\n"
            "C1,mill,2026-03-02T07:00:00-06:00,tss,300,mg/l,,composite\n")
        rep = import_lab_file(conn, tmp_path / "c.csv", actor="t", now=NOW)
        # no readings yet: linked with nothing covered
        assert rep.composites_linked[0]["volume_gal"] == 0.0 and rep.composites_linked[0]["coverage"] == 0.0
        # the window is the 24 h before collection: 2026-03-01 13:00Z .. 2026-03-02 13:00Z; 50 gpm
        add_flow(conn, datetime(2026, 3, 1, 13, tzinfo=timezone.utc), 1440, 50.0)
        span = (datetime(2026, 3, 1, tzinfo=timezone.utc), datetime(2026, 3, 3, tzinfo=timezone.utc))
        assert composites(conn, *span)[0]["volume_gal"] == 0.0          # not recomputed without relink
        [c] = composites(conn, *span, relink=True)
        # 50 gpm x 1440 min = 72,000 gal; TSS 300 mg/l x 0.072 MG x 8.34 = 180.144 lb
        assert c["volume_gal"] == pytest.approx(72_000.0) and c["coverage"] == pytest.approx(1.0)
        assert c["analytes"]["tss"]["pounds"] == pytest.approx(180.144)
