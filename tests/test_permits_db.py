"""Permits in the database: versions and their audit trail,
``sewerwatch permit``, the lab check and the bill with a permit, days of violation in SQL
and in Python, and the renewal reminder to the superintendent. Real TimescaleDB, real
SMTP (aiosmtpd)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import psycopg
import pytest

from alerts import reminders
from alerts.catchers import MailCatcher
from alerts.channels import build_routes
from foundation import config as sw_config
from lab.billing import build_bills
from lab.documents.bill_page import render_html
from lab.store.period_checks import check_db
from lab.store.results import import_lab_file
from limits import days as days_mod
from limits.permit_store import current_permits, history, import_permit, versions
from limits.permits import load_permit, parse_permit

ROOT = Path(__file__).resolve().parent.parent
PERMITS = ROOT / "examples" / "permits"
CHICAGO = ZoneInfo("America/Chicago")
HEADER = "sample_id,site,collected,analyte,value,unit,qualifier\n"


def sites(conn):
    conn.execute("INSERT INTO sites (key, name, pack, sic, permit) VALUES "
                 "('plating', 'Lakeside Plating', 'palmyra-wi', '3471', 'PAL-IU-2026-02'), "
                 "('sausage', 'Palmyra Sausage Co.', 'palmyra-wi', '2013', 'PAL-IU-2025-01'), "
                 "('candy', 'Sweet Creek Confections', 'palmyra-wi', '2065', 'PAL-IU-2026-03')")
    conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source, interval_s) "
                 "SELECT id, 'flow', 'flow', 'gpm', 'modbus', 60 FROM sites WHERE key = 'plating'")
    conn.commit()


def flow(conn, start: datetime, minutes: int, gpm: float, site="plating"):
    sid = conn.execute("SELECT s.id FROM sensors s JOIN sites t ON t.id = s.site_id WHERE t.key = %s", (site,)).fetchone()[0]
    with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
        for i in range(minutes + 1):
            cp.write_row((start + timedelta(minutes=i), sid, gpm, 0))
    conn.commit()


def edited(tmp_path, name, old, new):
    text = (PERMITS / f"{name}.toml").read_text(encoding="utf-8")
    assert old in text
    p = tmp_path / f"{name}.toml"
    p.write_text(text.replace(old, new), encoding="utf-8")
    return p


def test_permit_versions_and_who_changed_what(db, tmp_path):
    with db.connect() as conn:
        sites(conn)
        first = import_permit(conn, load_permit(PERMITS / "plating.toml"), actor="J. Kowalski", reason="issued")
        again = import_permit(conn, load_permit(PERMITS / "plating.toml"), actor="J. Kowalski")
        lowered = edited(tmp_path, "plating", "daily_maximum = 1.0", "daily_maximum = 0.8")
        change = import_permit(conn, load_permit(lowered), actor="M. Nowak", reason="copper limit lowered")
        assert (first["status"], first["version"]) == ("stored", 1)
        assert (again["status"], again["version"]) == ("unchanged", 1)
        assert (change["status"], change["version"]) == ("changed", 2)
        assert change["changes"] == [{"key": "limits[3(a)].daily_maximum", "old": 1.0, "new": 0.8}]
        vs = versions(conn, "PAL-IU-2026-02")
        assert [(v["version"], v["entered_by"], v["reason"]) for v in vs] == [
            (1, "J. Kowalski", "issued"), (2, "M. Nowak", "copper limit lowered")]
        trail = history(conn, "PAL-IU-2026-02")
        assert [(h["actor"], h["action"]) for h in trail] == [("J. Kowalski", "permit.import"), ("M. Nowak", "permit.change")]
        assert trail[1]["changes"] == change["changes"]
        # the current permit is the latest version, read with the site's pack
        p = current_permits(conn)["plating"]
        assert next(lim for lim in p.limits if lim.analyte == "cu").daily_maximum == 0.8
        assert p.renewal.citation == "Village of Palmyra Code §13.54(4)"
        # append-only: a version is never edited
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("UPDATE permits SET expires = '2030-01-01'")
        conn.rollback()
        # a permit is issued to one user (§13.54(5): not transferred); unknown sites are refused
        moved = edited(tmp_path, "plating", 'site = "plating"', 'site = "candy"')
        with pytest.raises(Exception, match="is another site's"):
            import_permit(conn, load_permit(moved))
        conn.rollback()
        nowhere = edited(tmp_path, "plating", 'site = "plating"', 'site = "tannery"')
        with pytest.raises(Exception, match="unknown site 'tannery'"):
            import_permit(conn, load_permit(nowhere))


def run(db, *args, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env["SEWERWATCH_DB_URL"] = db.url
    return subprocess.run([sys.executable, "-m", "sewerwatch", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=120)


def test_permit_commands(db, tmp_path):
    with db.connect() as conn:
        sites(conn)
    # no database needed to validate permit files
    r = run(db, "permit", "check", *[str(PERMITS / f"{n}.toml") for n in ("plating", "sausage", "candy")],
            "--today", "2026-12-01")
    assert r.returncode == 0, r.stderr
    assert "3 permit file(s) valid" in r.stdout and "cu-daily-max" in r.stdout
    assert "stricter than Village of Palmyra Code §13.48(2)(g)" in r.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('number = "X"\nsite = "plating"\nissued = 2026-01-01\neffective = 2026-01-01\nexpires = 2025-01-01\n')
    r = run(db, "permit", "check", str(bad))
    assert r.returncode == 2 and r.stderr.strip() == \
        f"sewerwatch: error: {bad}: expires: 2025-01-01 is not after the permit takes effect (2026-01-01)"

    r = run(db, "permit", "import", *[str(PERMITS / f"{n}.toml") for n in ("plating", "sausage", "candy")],
            "--actor", "J. Kowalski")
    assert r.returncode == 0, r.stderr
    assert "PAL-IU-2026-02 (plating): stored as version 1" in r.stdout
    r = run(db, "permit", "list", "--today", "2026-12-01", "--json")
    states = {x["site"]: (x["number"], x["state"], x["term_end"]) for x in json.loads(r.stdout)}
    # plating: term ends 2027-01-31, 61 days away: in force; candy: 2027-01-15, 45 days: the
    # renewal is due; sausage: notice given, ended 2026-10-31
    assert states == {"plating": ("PAL-IU-2026-02", "in-force", "2027-01-31"),
                      "candy": ("PAL-IU-2026-03", "renewal-due", "2027-01-15"),
                      "sausage": ("PAL-IU-2025-01", "expired", "2026-10-31")}
    r = run(db, "permit", "show", "PAL-IU-2026-02", "--today", "2026-12-01", "--json")
    d = json.loads(r.stdout)
    assert d["flow"] == {"average_daily_gpd": 18000.0, "maximum_daily_gpd": 30000.0}
    assert {x["rule"]: (x["limit"], x["applies"]) for x in d["rules"]}["ph-min"] == (6.5, "permit")
    assert d["monitoring"][0] == {"condition": "5(a)", "parameters": ["cu", "ni", "cn", "tss"],
                                  "sample_type": "composite-24h-flow", "times": 1, "per": "month",
                                  "words": "One 24-hour flow-proportional composite sample a month at the control "
                                           "manhole (§13.53(3))."}
    assert [v["entered_by"] for v in d["versions"]] == ["J. Kowalski"]
    r = run(db, "permit", "show", "PAL-IU-2026-02", "--today", "2026-12-01")
    assert "Permit PAL-IU-2026-02 — site plating (palmyra-wi)" in r.stdout and "1 a month" in r.stdout
    # the daily reminder job (no contacts configured: the console channel prints it)
    r = run(db, "alerts", "remind", "--today", "2026-12-01", "--json")
    assert r.returncode == 0, r.stderr
    opened = json.loads(r.stdout)["opened"]
    assert sorted((x["site"], x["rule"], x["sent"]) for x in opened) == [
        ("candy", "permit-renewal", ["console"]), ("sausage", "permit-expired", ["console"])]
    assert "PERMIT RENEWAL" in r.stderr and "Village of Palmyra Code §13.54(4)" in r.stderr
    r = run(db, "alerts", "remind", "--today", "2026-12-01")
    assert r.stdout.strip() == "no new permit reminders (2 still open)"


def test_lab_check_with_the_permit_loadings_days_and_the_expired_permit(db, tmp_path):
    with db.connect() as conn:
        sites(conn)
        for n in ("plating", "sausage"):
            import_permit(conn, load_permit(PERMITS / f"{n}.toml"), actor="t")
        # flow: 2026-03-02 metered whole at 25 gpm (36,000 gal: over the 30,000 maximum);
        # 2026-03-03 from 12:00 local only (half the day); 2026-03-04 none
        flow(conn, datetime(2026, 3, 2, tzinfo=CHICAGO), 36 * 60, 25.0)
        (tmp_path / "lab.csv").write_text(HEADER + "\n".join([
            # copper: 1.6 mg/l on 03-02 over the 1.0 daily maximum; the loading 1.6 x 0.036 MG
            # x 8.34 = 0.4804 lb over 0.15 lb/day. March average (1.6 + 0.4 + 0.3) / 3 = 0.7667
            # over the 0.5 monthly average.
            "P1,plating,2026-03-02T09:00:00-06:00,cu,1.6,mg/l,",
            "P2,plating,2026-03-03T09:00:00-06:00,cu,0.4,mg/l,",
            "P3,plating,2026-03-04T09:00:00-06:00,cu,0.3,mg/l,",
            # cyanide 0.3: lawful under §13.48(2)(l) (0.5), over the permit's 0.2 (3(c))
            "P1,plating,2026-03-02T09:00:00-06:00,cn,0.3,mg/l,",
        ]) + "\n")
        import_lab_file(conn, tmp_path / "lab.csv", actor="t", now=datetime(2026, 4, 1, tzinfo=timezone.utc))
        res = check_db(conn, datetime(2026, 3, 1, 6, tzinfo=timezone.utc), datetime(2026, 4, 1, 5, tzinfo=timezone.utc),
                       store=True, today=date(2026, 12, 1))
    got = [(v["site"], v["rule"], round(v["peak"], 4), v["citation"]) for v in res["violations"]]
    assert ("plating", "cu-daily-max", 1.6, "Permit PAL-IU-2026-02, condition 3(a)") in got
    assert ("plating", "cu-loading-max", round(1.6 * 0.036 * 8.34, 4), "Permit PAL-IU-2026-02, condition 3(a)") in got
    assert ("plating", "cu-monthly-avg", round((1.6 + 0.4 + 0.3) / 3, 4), "Permit PAL-IU-2026-02, condition 3(a)") in got
    assert ("plating", "cyanide-max", 0.3, "Permit PAL-IU-2026-02, condition 3(c)") in got
    assert ("plating", "flow-daily-max", 36000.0, "Permit PAL-IU-2026-02, condition flow") in got
    # the sausage maker's permit ended 2026-10-31: no finding in March, but it stands expired
    assert not [g for g in got if g[1] == "permit-expired"]
    # the loadings of 03-03 (half the day metered) and 03-04 (none) are stated, not guessed
    inc = {(x["rule"], x.get("sample"), x["day"]): x["coverage"] for x in res["incomplete"] if x["rule"] == "cu-loading-max"}
    assert inc == {("cu-loading-max", "P2", "2026-03-03"): 0.5, ("cu-loading-max", "P3", "2026-03-04"): 0.0}
    [no_flow] = [x for x in res["incomplete"] if x["rule"] == "flow-daily-max"]
    # 03-01 (the readings start at 03-02 00:00), 03-03 half, and every day from 03-04 on
    assert no_flow["note"] == ("daily flow not judged on 30 day(s) whose metered flow is incomplete: "
                               "2026-03-01, 2026-03-03..2026-03-31")
    standing = {s["site"]: s["state"] for s in res["standing"]}
    assert standing == {"plating": "in-force", "sausage": "expired"}
    days = {(d["site"], d["rule"]): d["days"] for d in res["days_of_violation"]}
    assert days[("plating", "cu-daily-max")] == 1 and days[("plating", "cu-monthly-avg")] == 3   # 03-02 .. 03-04
    # November: every day of it without the permit (2026-11-01 .. 2026-11-30: 30 days)
    with db.connect() as conn:
        nov = check_db(conn, datetime(2026, 11, 1, 5, tzinfo=timezone.utc), datetime(2026, 12, 1, 6, tzinfo=timezone.utc),
                       today=date(2026, 12, 1))
    [exp] = [v for v in nov["violations"] if v["rule"] == "permit-expired"]
    assert (exp["site"], exp["days_of_violation"], exp["start"], exp["end"]) == \
        ("sausage", 30, "2026-11-01T05:00:00Z", "2026-12-01T06:00:00Z")
    assert exp["citation"] == "Village of Palmyra Code §13.54(1)(g); Village of Palmyra Code §13.54(4)"
    assert {(d["site"], d["rule"]): d["days"] for d in nov["days_of_violation"]}[("sausage", "permit-expired")] == 30
    # stored: the SQL function counts the same distinct local days per site and rule
    with db.connect() as conn:
        sql = days_mod.from_db(conn, datetime(2026, 3, 1, 6, tzinfo=timezone.utc),
                               datetime(2026, 4, 1, 5, tzinfo=timezone.utc), CHICAGO)
    sql = {(d["site"], d["rule"]): d["days"] for d in sql}
    assert sql[("plating", "cu-daily-max")] == 1 and sql[("plating", "cu-monthly-avg")] == 3


def test_days_of_violation_in_the_violations_table_match_python(db):
    # §13.60(1): two episodes on one local day are one day; one across local midnight is two
    with db.connect() as conn:
        sites(conn)
        sid = conn.execute("SELECT id FROM sites WHERE key = 'plating'").fetchone()[0]
        rows = [("ph-min", "2026-03-02T16:00:00Z", "2026-03-02T16:05:00Z"),     # 10:00 local
                ("ph-min", "2026-03-02T20:00:00Z", "2026-03-02T20:03:00Z"),     # 14:00 local, same day
                ("ph-max", "2026-03-03T05:58:00Z", "2026-03-03T06:02:00Z"),     # 23:58 -> 00:02 local
                ("ph-max", "2026-03-08T07:00:00Z", "2026-03-08T07:01:00Z")]     # after the DST change
        for rule, a, b in rows:
            conn.execute("INSERT INTO violations (site_id, parameter, rule, pack, citation, start_time, end_time, "
                         "evidence, source) VALUES (%s, 'ph', %s, 'palmyra-wi', 'c', %s, %s, %s, 'batch')",
                         (sid, rule, a, b, json.dumps({"last": b})))
        conn.commit()
        period = (datetime(2026, 3, 1, 6, tzinfo=timezone.utc), datetime(2026, 4, 1, 5, tzinfo=timezone.utc))
        sql = days_mod.from_db(conn, *period, CHICAGO)
    py = days_mod.by_site_and_rule([{"site": "plating", "rule": r, "start": a, "last": b} for r, a, b in rows], CHICAGO,
                                   (date(2026, 3, 1), date(2026, 4, 1)))
    assert [(d["rule"], d["days"], d["dates"]) for d in sql] == [
        ("ph-max", 3, ["2026-03-02", "2026-03-03", "2026-03-08"]), ("ph-min", 1, ["2026-03-02"])]
    assert [(d["rule"], d["days"], d["dates"]) for d in py] == [(d["rule"], d["days"], d["dates"]) for d in sql]


def test_the_bill_shows_permit_findings_days_of_violation_and_readable_citations(db, tmp_path):
    with db.connect() as conn:
        sites(conn)
        import_permit(conn, load_permit(PERMITS / "plating.toml"), actor="t")
        flow(conn, datetime(2026, 2, 2, tzinfo=CHICAGO), 24 * 60, 10.0)     # 14,400 gal on 2026-02-02
        (tmp_path / "lab.csv").write_text(HEADER + "P1,plating,2026-02-02T09:00:00-06:00,cu,1.6,mg/l,\n"
                                                   "P2,plating,2026-02-16T09:00:00-06:00,cu,1.2,mg/l,\n")
        import_lab_file(conn, tmp_path / "lab.csv", actor="t", now=datetime(2026, 4, 1, tzinfo=timezone.utc))
        rates = tmp_path / "rates.toml"
        rates.write_text("bod = 0.2\ntss = 0.15\n[bill.palmyra-wi]\nuse_per_1000_gal = 6.37\n")
        # one metered day of the quarter: the volume is unknown, so drafts (not issued)
        bills = {b["site"]: b for b in build_bills(conn, "2026Q1", str(rates), issued=date(2026, 4, 5), draft=True)}
    b = bills["plating"]
    # two samples over the 1.0 daily maximum on two days; the loading of 02-02, 1.6 mg/l x
    # 0.0144 MG x 8.34 = 0.192 lb over 0.15 lb/day (02-16 has no flow: incomplete); February's
    # average (1.6 + 1.2) / 2 = 1.4 over 0.5: its days are the days sampled ([enforcement]
    # average_days = "sampled", the default), 02-02 and 02-16: 2 days (the days between, on
    # which nothing was sampled, are not counted)
    assert [(d["rule"], d["days"]) for d in b["days_of_violation"]] == [
        ("cu-daily-max", 2), ("cu-loading-max", 1), ("cu-monthly-avg", 2)]
    assert [(x["rule"], x["day"]) for x in b["incomplete"]] == [("cu-loading-max", "2026-02-16")]
    assert b["days_of_violation"][0]["citation"] == "Permit PAL-IU-2026-02, condition 3(a)"
    assert b["permit_standing"]["state"] == "in-force"
    assert [c["citation"] for c in b["charges"]] == ["Village of Palmyra Code §13.45(4)", "Village of Palmyra Code §13.45(2)(a)"]
    page = render_html(b)
    assert "Village of Palmyra Code §13.45(2)(a)" in page and "Days of violation" in page
    assert ".txt" not in page and ".txt" not in json.dumps(b["charges"]) + json.dumps(b["payment"])


def test_a_permit_coming_up_for_renewal_reminds_the_superintendent_once(db):
    pytest.importorskip("aiosmtpd")
    mail = MailCatcher().start()
    try:
        cfg = sw_config.from_dict({"utility": {"name": "Test village", "timezone": "America/Chicago"},
                                   "alerts": {"console": False, "mqtt": False, "contacts": [
                                       {"name": "Superintendent", "urls": [mail.url("super@village.example")]},
                                       {"name": "Village President", "urls": [mail.url("president@village.example")],
                                        "escalation": True}]}}, "<test>")
        routes = build_routes(cfg)
        with db.connect() as conn:
            sites(conn)
            for n in ("plating", "sausage", "candy"):
                import_permit(conn, load_permit(PERMITS / f"{n}.toml"), actor="t")
            res = reminders.send(conn, routes, current_permits(conn), date(2026, 12, 1), tz="America/Chicago")
            # candy's term ends in 45 days (within 60): renewal reminder; sausage expired
            assert sorted((r["site"], r["rule"]) for r in res["opened"]) == [("candy", "permit-renewal"),
                                                                             ("sausage", "permit-expired")]
            # the same day again (a second run of the daily job): nothing new, nothing sent twice
            again = reminders.send(conn, routes, current_permits(conn), date(2026, 12, 1), tz="America/Chicago")
            assert again["opened"] == [] and len(again["open"]) == 2
            rows = conn.execute("SELECT kind, rule, state FROM alerts ORDER BY id").fetchall()
            assert rows == [("permit", "permit-renewal", "notified"), ("permit", "permit-expired", "notified")]
            # candy renewed (a new version with the next term): its reminder is resolved
            renewed = load_permit(PERMITS / "candy.toml")
            doc = {**renewed.document, "expires": date(2028, 1, 15)}
            import_permit(conn, parse_permit(doc, "candy.toml"), actor="t", reason="renewed")
            after = reminders.send(conn, routes, current_permits(conn), date(2026, 12, 1), tz="America/Chicago")
            assert len(after["resolved"]) == 1 and after["opened"] == []
        assert len(mail.to("super@village.example")) == 2 and mail.to("president@village.example") == []
        # (plating's term, 2027-01-31, comes within the 60 days on 2026-12-02: a reminder then)
        with db.connect() as conn:
            nxt = reminders.due(current_permits(conn), date(2026, 12, 2))
        assert ("plating", "permit-renewal") in [(r["site"], r["rule"]) for r in nxt]
        body = next(m["body"] for m in mail.to("super@village.example") if "RENEWAL" in m["subject"])
        assert "Term ends:   2027-01-15 (in 45 days)" in body and "Ordinance:   Village of Palmyra Code §13.54(4)" in body
        assert "sewerwatch permit show PAL-IU-2026-03" in body
    finally:
        mail.stop()
