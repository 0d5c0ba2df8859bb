"""The law, exactly: days of violation over half-open intervals, the village's
calendar days on the command line, SNC as of a date as a pure question, limits stated as the
permit states them, §13.54(1)(f), and the readings the program takes where the law can be
read two ways.

Each point is run through the CLI as a subprocess (``sewerwatch --config ...`` against a real
TimescaleDB), its expectation computed by hand from the words quoted beside it:

* Palmyra, 003_44f871d49a02d8f5.txt §13.60(1): "shall be subject to a forfeiture of not less
  than $100 nor more than $2,500 per violation ... Each day a condition is allowed to exist
  which is contrary to all or any part of this subchapter shall constitute a new violation."
* §13.48(2)(l): cyanide "in excess of one-half (0.5) mg/l"; §13.54(1)(f): a permit is required
  for a discharge with "Any of the characteristics listed under §13.48"; §13.54(4): "unless
  the person is notified by the Village within 60 days prior to the expiration".
* 40 CFR 403.8(f)(2)(viii)(A) "sixty-six percent or more of all of the measurements ... during
  a six-month period exceed", (B) 33 % "equal or exceed" 1.2 x the limit, (F) "Failure to
  provide, within 45 days after the due date, required reports".
* 40 CFR 122.2: "the daily discharge is calculated as the average measurement of the
  pollutant over the day" (the default reading of a daily maximum).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.documents.pdf import pdf_text
from limits import days as days_mod
from limits.permits import load_permit, renewal

ROOT = Path(__file__).resolve().parent.parent
PERMITS = ROOT / "examples" / "permits"
CHICAGO = ZoneInfo("America/Chicago")
UTC = timezone.utc
US = 1_000_000
DAY_US = 86_400 * US

VILLAGE = """
[utility]
name = "Village of Palmyra (test)"
pack = "palmyra-wi"
timezone = "America/Chicago"
{extra}
[[sites]]
id = "plating"
name = "Lakeside Plating"
sic = "3471"
permit = "PAL-IU-2026-02"

[[sites]]
id = "candy"
name = "Sweet Creek Confections"
sic = "2065"

[[sensors]]
site = "plating"
name = "flow"
parameter = "flow"
unit = "gpm"
source = "mqtt"
interval_s = 60

[[sensors]]
site = "candy"
name = "flow"
parameter = "flow"
unit = "gpm"
source = "mqtt"
interval_s = 60
"""
LAB_HEADER = "sample_id,site,collected,analyte,value,unit,qualifier,method,laboratory\n"


def write_config(tmp_path: Path, name: str = "village.toml", extra: str = "") -> Path:
    p = tmp_path / name
    p.write_text(VILLAGE.format(extra=extra), encoding="utf-8")
    return p


def _env(db) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    if db is not None:
        env["SEWERWATCH_DB_URL"] = db.url
    return env


def cli(tmp_path: Path, db, *args, config: str = "village.toml") -> subprocess.CompletedProcess:
    """``sewerwatch --config CONFIG ARGS`` as a user types it (a subprocess), in ``tmp_path``:
    each point of the issue is asked this way at least once."""
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(tmp_path / config), *args],
                          capture_output=True, text=True, env=_env(db), cwd=tmp_path, timeout=180)


def cli_in(tmp_path: Path, db, *args, config: str = "village.toml") -> subprocess.CompletedProcess:
    """The same command in this process (the ``main`` the console script calls, about a second
    faster than a subprocess on this machine): for setting up and for the further questions
    of a point already asked through :func:`cli`."""
    from sewerwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(_env(db))
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(tmp_path / config), *args])
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def ok(r: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert r.returncode == 0, r.stderr
    return r


def js(r: subprocess.CompletedProcess):
    return json.loads(ok(r).stdout)


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def setup(tmp_path: Path, db, lab_rows: list[str], permits=("plating",), extra: str = "") -> None:
    write_config(tmp_path, extra=extra)
    ok(cli_in(tmp_path, db, "db", "migrate"))
    if permits:
        ok(cli_in(tmp_path, db, "permit", "import", *[str(PERMITS / f"{p}.toml") for p in permits]))
    if lab_rows:
        (tmp_path / "lab.csv").write_text(LAB_HEADER + "\n".join(lab_rows) + "\n", encoding="utf-8")
        ok(cli_in(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab"))


def add_flow(db, site: str, start: datetime, minutes: int, gpm: float) -> None:
    """One reading a minute from ``start`` for ``minutes`` minutes, both ends included."""
    with db.connect() as conn:
        sid = conn.execute("SELECT s.id FROM sensors s JOIN sites t ON t.id = s.site_id WHERE t.key = %s "
                           "AND s.parameter = 'flow'", (site,)).fetchone()[0]
        with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
            for i in range(minutes + 1):
                cp.write_row((start + timedelta(minutes=i), sid, gpm, 0))
        conn.commit()


# --- item 1: one function, half-open intervals; a property test across both DST changes ------------

#: 2026's DST changes in America/Chicago: 02:00 CST -> 03:00 CDT on March 8 (08:00Z), 02:00 CDT ->
#: 01:00 CST on November 1 (07:00Z); the local days around them are 23 and 25 hours long
CHANGES = (datetime(2026, 3, 8, 8, tzinfo=UTC), datetime(2026, 11, 1, 7, tzinfo=UTC))


def local_midnight(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=CHICAGO)


def touched(start: datetime, end: datetime) -> set[str]:
    """The reference, by the definition: the local dates D whose day [midnight D, midnight D+1)
    shares an instant with [start, end) (an instant, end == start, is the day holding it)."""
    end = max(end, start + timedelta(microseconds=1))
    out, d = set(), start.astimezone(UTC).date() - timedelta(days=2)
    while local_midnight(d) < end:
        if local_midnight(d + timedelta(days=1)) > start:
            out.add(d.isoformat())
        d += timedelta(days=1)
    return out


@st.composite
def interval(draw):
    anchor = draw(st.sampled_from(CHANGES))
    start = anchor + timedelta(microseconds=draw(st.integers(-3 * DAY_US, 3 * DAY_US)))
    if draw(st.booleans()):      # a condition that starts at a local midnight
        start = local_midnight(start.astimezone(CHICAGO).date() + timedelta(days=draw(st.integers(0, 1))))
    if draw(st.booleans()):      # ... or ends at one (the case that used to count the next day)
        end = local_midnight(start.astimezone(CHICAGO).date() + timedelta(days=draw(st.integers(1, 3))))
    else:
        end = start + timedelta(microseconds=draw(st.one_of(st.integers(0, 10 * US), st.integers(0, 4 * DAY_US))))
    return start.astimezone(UTC), end.astimezone(UTC)


@settings(max_examples=300, deadline=None)
@given(st.lists(interval(), min_size=1, max_size=4))
def test_days_counted_are_the_local_dates_the_intervals_touch(spans):
    # each interval on its own, and the distinct days of all of them as one site's one rule
    for a, b in spans:
        want = touched(a, b)
        assert days_mod.days_touched([days_mod.us(a)], [days_mod.us(b)], CHICAGO)[0] == len(want)
        assert days_mod.record_days({"start": a, "end": b}, CHICAGO) == len(want)
    recs = [{"site": "s", "rule": "r", "start": a.isoformat(), "end": b.isoformat()} for a, b in spans]
    [got] = days_mod.by_site_and_rule(recs, CHICAGO)
    assert got["dates"] == sorted(set().union(*(touched(a, b) for a, b in spans)))
    assert got["days"] == len(got["dates"])


def test_the_database_counts_the_same_days(db):
    # violation_days (migration 0110) against limits.days on the same rows: plain intervals,
    # episodes (evidence.last, inclusive), instants, and averages' evidence.intervals, around
    # both DST changes, clipped to a period that starts and ends at local midnights
    rng = np.random.default_rng(21)
    rows = []
    for i in range(60):
        anchor = CHANGES[i % 2]
        a = anchor + timedelta(seconds=int(rng.integers(-3 * 86400, 3 * 86400)))
        if i % 4 == 0:
            a = local_midnight(a.astimezone(CHICAGO).date())
        b = a + timedelta(seconds=int(rng.integers(0, 3 * 86400)))
        if i % 4 == 1:
            b = local_midnight(a.astimezone(CHICAGO).date() + timedelta(days=1))
        ev = {}
        if i % 5 == 2:
            ev = {"last": (a + (b - a) / 2).astimezone(UTC).isoformat()}
        elif i % 5 == 3:
            ev = {"intervals": days_mod.day_intervals([a.astimezone(CHICAGO).date().isoformat(),
                                                       b.astimezone(CHICAGO).date().isoformat()], CHICAGO)}
        elif i % 5 == 4:
            b = a                                      # an instant: a lab result
        rows.append((f"r{i % 3}", a, b, ev))
    with db.connect() as conn:
        sid = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('s', 's', 'palmyra-wi') RETURNING id").fetchone()[0]
        for rule, a, b, ev in rows:
            conn.execute("INSERT INTO violations (site_id, parameter, rule, pack, citation, start_time, end_time, "
                         "evidence, source) VALUES (%s, 'ph', %s, 'palmyra-wi', 'c', %s, %s, %s, 'lab')",
                         (sid, rule, a, b, json.dumps(ev)))
        conn.commit()
        period = (local_midnight(date(2026, 3, 6)), local_midnight(date(2026, 11, 3)))
        sql = days_mod.from_db(conn, *period, CHICAGO)
        inside = {r for (r,) in conn.execute(
            "SELECT count(*) FROM violations WHERE violation_in(start_time, end_time, evidence, %s, %s)",
            period).fetchall()}
    recs = [{"site": "s", "rule": r, "start": a, "end": b, "evidence": ev} for r, a, b, ev in rows]
    py = days_mod.by_site_and_rule(recs, CHICAGO, period)
    assert [(d["rule"], d["days"], d["dates"]) for d in sql] == [(d["rule"], d["days"], d["dates"]) for d in py]
    assert inside == {sum(days_mod.overlaps(r, days_mod.us(period[0]), days_mod.us(period[1])) for r in recs)}


def test_a_day_of_flow_is_one_day_on_the_record_the_summary_and_the_notice(db, tmp_path):
    # Permit PAL-IU-2026-02 (examples/permits/plating.toml): maximum daily flow 30,000 gal/day,
    # average 18,000. On 2026-03-02 (CST) the meter reads 25 gpm all day: 25 x 1,440 = 36,000
    # gal > 30,000. The condition existed [2026-03-02 00:00, 2026-03-03 00:00): ONE day, so
    # §13.60(1) gives 1 x $100 to 1 x $2,500 (not 2 days, $200 to $5,000). March's average of
    # its whole days is 36,000 (one day) > 18,000: a violation whose days are the days metered
    # ([enforcement] average_days = "sampled"): 1 day, 2026-03-02; as "period": the month, 31.
    # Copper (condition 3(a), monthly average 0.5 mg/l, daily maximum 1.0): March 3, 10, 17 at
    # 0.6, 0.7, 0.5 -> (0.6 + 0.7 + 0.5) / 3 = 0.6 > 0.5; each under 1.0. April 7: 1.4 at 08:00
    # and 0.4 at 14:00: the day's mean (1.4 + 0.4) / 2 = 0.9 is not more than 1.0 (40 CFR 122.2,
    # the default), while the sample 1.4 is (daily_maximum = "each-sample"). April's average
    # 0.9 > 0.5 too. Days of cu-monthly-avg, sampled: 03-03, 03-10, 03-17, 04-07 = 4; as
    # "period": March 31 + April 30 = 61.
    setup(tmp_path, db, [
        "C-1,plating,2026-03-03T09:00:00-06:00,cu,0.6,mg/l,,EPA 200.7,Rock River Environmental Laboratory",
        "C-2,plating,2026-03-10T09:00:00-05:00,cu,0.7,mg/l,,EPA 200.7,Rock River Environmental Laboratory",
        "C-3,plating,2026-03-17T09:00:00-05:00,cu,0.5,mg/l,,EPA 200.7,Rock River Environmental Laboratory",
        "C-4,plating,2026-04-07T08:00:00-05:00,cu,1.4,mg/l,,EPA 200.7,Rock River Environmental Laboratory",
        "C-5,plating,2026-04-07T14:00:00-05:00,cu,0.4,mg/l,,EPA 200.7,Rock River Environmental Laboratory"])
    add_flow(db, "plating", local_midnight(date(2026, 3, 2)), 24 * 60, 25.0)
    res = js(cli(tmp_path, db, "lab", "check", "--since", "2026-03-01", "--until", "2026-05-01", "--store", "--json"))
    by_rule = {}
    for v in res["violations"]:
        by_rule.setdefault(v["rule"], []).append(v)
    [fd] = by_rule["flow-daily-max"]
    assert (fd["peak"], fd["limit"], fd["days_of_violation"]) == (36_000.0, 30_000.0, 1)
    assert (fd["start"], fd["end"]) == ("2026-03-02T06:00:00Z", "2026-03-03T06:00:00Z")
    [fm] = by_rule["flow-monthly-avg"]
    assert (fm["peak"], fm["days_of_violation"], fm["evidence"]["metered_days"]) == (36_000.0, 1, ["2026-03-02"])
    assert [v["evidence"]["month"] for v in by_rule["cu-monthly-avg"]] == ["2026-03", "2026-04"]
    assert by_rule["cu-monthly-avg"][0]["peak"] == pytest.approx(0.6)
    assert [v["days_of_violation"] for v in by_rule["cu-monthly-avg"]] == [3, 1]
    assert "cu-daily-max" not in by_rule                       # the day's mean 0.9 is within 1.0
    summary = {d["rule"]: (d["days"], d["dates"]) for d in res["days_of_violation"]}
    assert summary["flow-daily-max"] == (1, ["2026-03-02"])
    assert summary["flow-monthly-avg"] == (1, ["2026-03-02"])
    assert summary["cu-monthly-avg"] == (4, ["2026-03-03", "2026-03-10", "2026-03-17", "2026-04-07"])
    # the record stored says the same
    with db.connect() as conn:
        stored = dict(conn.execute("SELECT rule, days_of_violation FROM violations WHERE rule = 'flow-daily-max'"))
        vid = conn.execute("SELECT id FROM violations WHERE rule = 'flow-daily-max'").fetchone()[0]
        cu_id = conn.execute("SELECT id FROM violations WHERE rule = 'cu-monthly-avg' ORDER BY start_time").fetchone()[0]
        sql = {d["rule"]: d["days"] for d in days_mod.from_db(conn, local_midnight(date(2026, 3, 1)),
                                                               local_midnight(date(2026, 5, 1)), CHICAGO)}
    assert stored == {"flow-daily-max": 1} and sql["flow-daily-max"] == 1 and sql["cu-monthly-avg"] == 4
    # and the notice: 1 day, $100 to $2,500; the limit stated as the permit states it (item 4)
    n = js(cli_in(tmp_path, db, "notice", "draft", "--violation", str(vid), "--on", "2026-04-02", "--out", "out",
                  "--json"))
    doc = n["document"]
    assert (doc["days_of_violation"]["days"], doc["days_of_violation"]["dates"]) == (1, ["2026-03-02"])
    [f] = doc["forfeitures"]
    assert (f["total_min"], f["total_max"]) == (100.0, 2500.0)
    assert f["sentence"] == "$100 to $2,500 for each day: 1 day of violation, $100 to $2,500"
    assert "flow 36,000 gal/day on 2026-03-02 (the limit: more than 30,000 gal/day as the maximum daily flow" \
        in doc["finding"]["summary"]
    text = flat(pdf_text(tmp_path / "out" / f"{n['number']}-draft.pdf", layout=False))
    assert "1 day of violation (2026-03-02)" in text and "$100 to $2,500 for each day: 1 day of violation" in text
    assert "as the flow meter at the control manhole measured it" in text
    # item 4: the monthly average, with the samples that make it up, never "in any sample"
    n = js(cli(tmp_path, db, "notice", "draft", "--violation", str(cu_id), "--on", "2026-04-02", "--out", "out",
               "--json"))
    text = flat(pdf_text(tmp_path / "out" / f"{n['number']}-draft.pdf", layout=False))
    assert "copper 0.6 mg/l, the average of 3 results of 2026-03 (the limit: more than 0.5 mg/l as a monthly " \
           "average)" in text
    assert "The average of these 3 results, the month 2026-03, is 0.6 mg/l; the limit is more than 0.5 mg/l as a " \
           "monthly average." in text
    assert all(s in text for s in ("C-1", "C-2", "C-3")) and "in any sample" not in text
    assert ("3 days of violation (2026-03-03, 2026-03-10, 2026-03-17): the distinct local days of the samples (or "
            "the days metered whole) that make up the average") in text
    assert "$100 to $2,500 for each day: 3 days of violation, $300 to $7,500" in text
    # the other readings (item 7): each sample against the daily maximum; an average's month
    write_config(tmp_path, "other.toml", '[enforcement]\ndaily_maximum = "each-sample"\naverage_days = "period"\n')
    res = js(cli_in(tmp_path, db, "lab", "check", "--since", "2026-03-01", "--until", "2026-05-01", "--json",
                    config="other.toml"))
    [dm] = [v for v in res["violations"] if v["rule"] == "cu-daily-max"]
    assert (dm["peak"], dm["evidence"]["samples"], dm["days_of_violation"]) == (1.4, ["C-4"], 1)
    summary = {d["rule"]: d["days"] for d in res["days_of_violation"]}
    assert (summary["flow-monthly-avg"], summary["cu-monthly-avg"], summary["flow-daily-max"]) == (31, 61, 1)


# --- item 2: dates are the village's days; every command agrees on a half-year -----------------

def test_a_half_year_is_the_villages_and_every_command_agrees(db, tmp_path):
    # Cyanide at the plater (no permit stored: the ordinance's 0.5 mg/l, §13.48(2)(l)):
    #   R-1 2025-12-31 23:30 CST 0.9  (05:30Z on January 1: UTC would put it in 2026H1)
    #   R-2 2026-01-01 00:30 CST 0.7
    #   R-3 2026-03-03 09:00 CST 0.3
    #   R-4 2026-06-30 23:30 CDT 0.8  (04:30Z on July 1: UTC would leave it out)
    # 2026H1 = January 1 to June 30, local. In excess of 0.5, on the
    # local days 2026-01-01 and 2026-06-30: 2 days. (A) 2 of 3 = 66.7 % >= 66 %: chronic;
    # (B) 0.7 and 0.8 >= 1.2 x 0.5 = 0.6: 2 of 3 >= 33 %: TRC.
    lab = "SM 4500-CN E,Rock River Environmental Laboratory"
    setup(tmp_path, db, [f"R-1,plating,2025-12-31T23:30:00-06:00,cn,0.9,mg/l,,{lab}",
                         f"R-2,plating,2026-01-01T00:30:00-06:00,cn,0.7,mg/l,,{lab}",
                         f"R-3,plating,2026-03-03T09:00:00-06:00,cn,0.3,mg/l,,{lab}",
                         f"R-4,plating,2026-06-30T23:30:00-05:00,cn,0.8,mg/l,,{lab}"], permits=())
    half = ("2026-01-01", "2026-07-01")
    chk = js(cli(tmp_path, db, "lab", "check", "--since", half[0], "--until", half[1], "--store", "--json"))
    assert [(v["rule"], v["evidence"]["samples"]) for v in chk["violations"]] == [("cyanide-max", ["R-2"]),
                                                                                 ("cyanide-max", ["R-4"])]
    assert [(d["rule"], d["dates"]) for d in chk["days_of_violation"]] == [("cyanide-max", ["2026-01-01", "2026-06-30"])]
    [cn] = [s for s in chk["snc"] if s["site"] == "plating" and s["parameter"] == "cn"]
    assert (cn["window_start"], cn["n"], cn["n_exceed"], cn["n_trc"], cn["chronic"], cn["trc"]) == \
        ("2026-01-01T06:00:00Z", 3, 2, 2, True, True)
    listed = js(cli_in(tmp_path, db, "lab", "list", "--since", half[0], "--until", half[1], "--json"))
    assert [r["sample"] for r in listed] == ["R-2", "R-3", "R-4"]
    snc = js(cli(tmp_path, db, "snc", "--period", "2026H1", "--site", "plating", "--json"))
    a = snc[0]["criteria"]["A"]["evidence"]["cn"]
    assert [m["sample"] for m in a["measurements"]] == ["R-2", "R-3", "R-4"]
    assert (a["n"], a["n_exceed"], snc[0]["criteria_met"]) == (3, 2, ["A", "B"])
    assert [m["date"] for m in a["measurements"]] == ["2026-01-01", "2026-03-03", "2026-06-30"]
    rep = js(cli_in(tmp_path, db, "report", "annual", "--year", "2026", "--out", "report", "--json"))
    [u] = [u for u in rep["users"] if u["site"] == "plating"]
    assert u["samples_taken"] == 3                             # R-1 is 2025's
    assert [(v["rule"], v["episodes"], v["days_of_violation"]) for v in u["violations"]] == [("cyanide-max", 2, 2)]
    [h1] = [p for x in rep["snc"]["users"] if x["site"] == "plating" for p in x["periods"] if p["period"] == "2026H1"]
    assert [c["criterion"] for c in h1["criteria"]] == ["A", "B"]
    assert h1["criteria"][0]["explanation"] == snc[0]["criteria"]["A"]["explanation"]
    n = js(cli_in(tmp_path, db, "notice", "draft", "--snc", "plating", "--period", "2026H1", "--out", "out", "--json"))
    assert n["document"]["days_of_violation"]["dates"] == ["2026-01-01", "2026-06-30"]
    found = js(cli_in(tmp_path, db, "findings", "list", "--since", half[0], "--until", half[1], "--json"))
    assert sorted(v["evidence"]["samples"][0] for v in found["violations"]) == ["R-2", "R-4"]
    # a time with an offset is taken as given: 23:00 CDT on June 30 to the local midnight after it
    late = js(cli_in(tmp_path, db, "lab", "list", "--since", "2026-06-30T23:00:00-05:00", "--until", "2026-07-01",
                     "--json"))
    assert [r["sample"] for r in late] == ["R-4"]
    # a wall-clock time the village's clocks skip is refused, in one line
    r = cli_in(tmp_path, db, "lab", "list", "--since", "2026-03-08T02:30", "--until", "2026-03-09")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "--since: 2026-03-08T02:30 does not exist in America/Chicago" in r.stderr
    # --help says what a date is
    r = ok(cli(tmp_path, db, "lab", "check", "--help"))
    assert "a date is a local calendar day of the village" in flat(r.stdout)


# --- item 3: SNC as of a date is a pure question ------------------------------------------------

def test_snc_as_of_a_date_answers_from_the_records_then_and_writes_nothing(db, tmp_path):
    # (F) "Failure to provide, within 45 days after the due date": the plater's report due
    # 2026-05-15 came on 2026-07-10. Day 45 after May 15 is June 29 (in time), day 46 June 30:
    # as of June 29 no (F); as of June 30 (F) in 2026H1, "not received, 46 days after its due
    # date" (counted from the day asked about, not from today).
    setup(tmp_path, db, [], permits=())
    out = ok(cli_in(tmp_path, db, "user-reports", "require", "--site", "plating", "--due", "2026-05-15")).stdout
    rid = re.match(r"report (\d+):", out).group(1)
    ok(cli_in(tmp_path, db, "user-reports", "receive", rid, "--on", "2026-07-10"))

    def snc(*extra, site="plating", run=cli_in):
        return js(run(tmp_path, db, "snc", "--period", "2026H1", *(("--site", site) if site else ()), "--json", *extra))

    def findings_stored():
        with db.connect() as conn:
            return conn.execute("SELECT count(*) FROM findings").fetchone()[0]

    before = snc("--as-of", "2026-06-29", run=cli)
    at46 = snc("--as-of", "2026-06-30", run=cli)
    assert before[0]["criteria"]["F"]["met"] is False and before[0]["criteria_met"] == []
    f = at46[0]["criteria"]["F"]
    assert f["met"] is True and at46[0]["criteria_met"] == ["F"]
    assert f["explanation"] == [f"finding late-report:{rid} (late-report, 2026-06-30): Self-monitoring report: "
                                "not received, 46 days after its due date 2026-05-15"]
    assert findings_stored() == 0                               # a question writes nothing
    # the enforcement round records the finding at the present: received 56 days after
    found = js(cli_in(tmp_path, db, "findings", "list", "--since", "2026-01-01", "--json"))
    assert [x["summary"] for x in found["findings"]] == [
        "Self-monitoring report: received 2026-07-10, 56 days after its due date"]
    # asked again, in another order, for every site: the same answers
    assert snc("--as-of", "2026-06-30") == at46
    assert snc("--as-of", "2026-06-29") == before
    everyone = snc("--as-of", "2026-06-30", site=None)
    assert [r for r in everyone if r["site"] == "plating"] == at46

    # item 7: a report due in one half and 45 days late in the next. The confectioner's report
    # due 2026-06-01 is not received; day 46 is July 17, in 2026H2. As of July 20 ("not
    # received, 49 days after its due date"): the default ("late") counts it in H2, the period
    # in which it became late; late_report_period = "due" in H1, the period of its due date.
    ok(cli_in(tmp_path, db, "user-reports", "require", "--site", "candy", "--due", "2026-06-01"))
    write_config(tmp_path, "due.toml", '[enforcement]\nlate_report_period = "due"\n')
    for config, h1, h2 in (("village.toml", False, True), ("due.toml", True, False)):
        got = {p: js((cli if config == "due.toml" and p == "2026H1" else cli_in)(
            tmp_path, db, "snc", "--period", p, "--site", "candy", "--as-of", "2026-07-20", "--json",
            config=config))[0]["criteria"]["F"] for p in ("2026H1", "2026H2")}
        assert (got["2026H1"]["met"], got["2026H2"]["met"]) == (h1, h2), config
        met = got["2026H1"] if h1 else got["2026H2"]
        assert met["explanation"][0].endswith("not received, 49 days after its due date 2026-06-01")


# --- item 5: permit need reads all of §13.54(1) ------------------------------------------------

def test_a_prohibited_characteristic_requires_a_permit(db, tmp_path):
    # §13.54(1)(f) "Any of the characteristics listed under §13.48": the confectioner (no permit)
    # discharged cyanide 0.62 mg/l on 2026-02-04, in excess of §13.48(2)(l)'s 0.5 mg/l; its BOD
    # 180 and TSS 200 are under (a) and (b)'s 250. The plater's 0.4 is within 0.5: (f) is not met.
    setup(tmp_path, db, ["K-1,candy,2026-02-04T09:00:00-06:00,cn,0.62,mg/l,,,",
                         "K-1,candy,2026-02-04T09:00:00-06:00,bod5,180,mg/l,,,",
                         "K-1,candy,2026-02-04T09:00:00-06:00,tss,200,mg/l,,,",
                         "P-1,plating,2026-02-04T09:00:00-06:00,cn,0.4,mg/l,,,"], permits=())
    words = ("discharge permit required: any of the characteristics listed under §13.48: cyanide-max 0.62 mg/l, "
             "in excess of 0.5 mg/l on 2026-02-04 (Village of Palmyra Code §13.54(1)(f))")
    out = ok(cli(tmp_path, db, "lab", "check", "--since", "2026-02-01", "--until", "2026-03-01")).stdout
    assert f"candy            {words}" in out
    assert "plating          discharge permit required" not in out
    out = ok(cli_in(tmp_path, db, "permit", "check", "--since", "2026-02-01", "--until", "2026-03-01")).stdout
    assert ("candy            discharge permit required: no permit on file: any of the characteristics listed under "
            "§13.48: cyanide-max 0.62 mg/l") in out
    res = js(cli_in(tmp_path, db, "permit", "check", "--since", "2026-02-01", "--until", "2026-03-01", "--json"))
    need = {p["site"]: p for p in res["permits"]}
    assert [r["criterion"] for r in need["candy"]["reasons"]] == ["characteristics"]
    assert need["candy"]["reasons"][0]["words"] == "Any of the characteristics listed under §13.48."
    assert not need["plating"]["required"]


# --- item 6: no fault reported that is not there; machine output alone on stdout ---------------------

def test_no_flow_condition_judges_no_flow_and_json_stays_clean_with_a_console(db, tmp_path):
    # a permit without [flow]: its site's incomplete metering is no "daily flow not judged"
    permit = tmp_path / "candy.toml"
    permit.write_text('number = "PAL-IU-2026-09"\nsite = "candy"\npack = "palmyra-wi"\nissued = 2026-01-02\n'
                      'effective = 2026-01-02\nexpires = 2027-06-30\n', encoding="utf-8")
    setup(tmp_path, db, [], permits=("plating",), extra="[alerts]\nconsole = true\n")
    ok(cli_in(tmp_path, db, "permit", "import", str(permit)))
    add_flow(db, "candy", local_midnight(date(2026, 3, 2)) + timedelta(hours=6), 60, 10.0)
    add_flow(db, "plating", local_midnight(date(2026, 3, 2)) + timedelta(hours=6), 60, 10.0)
    out = ok(cli(tmp_path, db, "permit", "check", "--since", "2026-03-01", "--until", "2026-03-08")).stdout
    assert "plating          flow-daily-max     daily flow not judged on 7 day(s)" in out
    assert not [line for line in out.splitlines() if line.startswith("candy") and "flow" in line]
    # machine output goes to stdout alone: the console channel's banners to stderr
    ok(cli_in(tmp_path, db, "user-reports", "require", "--site", "candy", "--due", "2026-06-01"))
    r = ok(cli(tmp_path, db, "due", "--alert", "--notify", "--json"))
    got = json.loads(r.stdout)
    assert got["alerts_opened"] and "[sewerwatch] ENFORCEMENT" in r.stderr
    r = ok(cli(tmp_path, db, "alerts", "remind", "--today", "2027-01-10", "--json"))
    opened = json.loads(r.stdout)["opened"]
    assert [x["permit"] for x in opened] == ["PAL-IU-2026-02"] and "[sewerwatch] PERMIT RENEWAL" in r.stderr
    r = cli_in(tmp_path, db, "due", "--alert", "--as-of", "2026-07-01")
    assert r.returncode == 2 and "--alert opens the alerts of the present: it takes no --as-of" in r.stderr


# --- item 7: §13.54(4) "within 60 days prior to the expiration", read both ways ---------------------

def test_the_renewal_notice_read_as_a_window_or_as_a_deadline(tmp_path):
    # The plater's permit term ends 2027-01-31. 60 days before it is 2026-12-02 (January's 31
    # days back to December 31, 29 more). Notice given on 2026-12-15 (47 days before):
    #   window (the pack's reading): within the 60 days prior, so the permit ends 2027-01-31
    #     and has expired on 2027-02-01;
    #   deadline: later than 60 days before, so it ends the next term, 2028-01-31.
    # Without notice, on 2026-11-01 (91 days before the end): under the window the reminder is
    # not due yet (91 > 60); under the deadline the notice is due by 2026-12-02, 31 days away.
    base = (PERMITS / "plating.toml").read_text(encoding="utf-8")
    files = {}
    for reading in ("window", "deadline"):
        for given in (None, "2026-12-15"):
            extra = [f'notice_reading = "{reading}"'] if reading == "deadline" else []
            if given:
                extra.append(f"notice_given = {given}")
            p = tmp_path / f"{reading}-{given or 'none'}.toml"
            p.write_text(base + ("\n[renewal]\n" + "\n".join(extra) + "\n" if extra else ""), encoding="utf-8")
            files[reading, given] = p
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}

    def show(p, today):
        r = subprocess.run([sys.executable, "-m", "sewerwatch", "permit", "show", str(p), "--today", today, "--json"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        return json.loads(ok(r).stdout)

    w = show(files["window", "2026-12-15"], "2027-02-01")
    assert (w["renewal"]["notice_reading"], w["standing"]["state"], w["standing"]["ends"]) == \
        ("window", "expired", "2027-01-31")
    d = show(files["deadline", "2026-12-15"], "2027-02-01")
    assert (d["renewal"]["notice_reading"], d["standing"]["state"], d["standing"]["ends"]) == \
        ("deadline", "in-force", "2028-01-31")
    # the reminder's timing, pure (the same function the CLI and the reminders call)
    pw, pd = load_permit(files["window", None]), load_permit(files["deadline", None])
    assert (renewal(pw, date(2026, 11, 1)).state, renewal(pw, date(2026, 11, 1)).notice_by) == \
        ("in-force", date(2027, 1, 31))
    assert (renewal(pd, date(2026, 11, 1)).state, renewal(pd, date(2026, 11, 1)).notice_by) == \
        ("renewal-due", date(2026, 12, 2))
    assert renewal(pw, date(2026, 12, 2)).state == "renewal-due"          # day 60 before: the window opens
    assert renewal(pd, date(2026, 12, 3)).state == "in-force"             # past the deadline: it renews
    assert renewal(pd, date(2026, 12, 2)).state == "renewal-due"          # the deadline's own day


def test_the_readings_are_checked_where_they_are_set(tmp_path):
    # a config's reading that is not one: one line naming the file and the key
    cfg = write_config(tmp_path, extra='[enforcement]\ndaily_maximum = "max"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "config", "check"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == (
        f"sewerwatch: error: {cfg}: enforcement.daily_maximum: expected one of day-mean, each-sample, got 'max'")
    # a pack's: a reading only where the words read two ways, and one of those readings
    from foundation import tomlfile
    from foundation.errors import InputError
    from limits.packs import PACKS_DIR, parse_pack

    data = tomlfile.read(PACKS_DIR / "palmyra-wi.toml")
    notice = next(r for r in data["rules"] if r["id"] == "permit-notice")
    notice["reading"] = "eventually"
    with pytest.raises(InputError, match=r"permit-notice\)\.reading: expected one of window, deadline, got 'eventually'"):
        parse_pack(data, "palmyra-wi.toml")
    notice["reading"] = "window"
    chars = next(r for r in data["rules"] if r["id"] == "characteristics-permit")
    chars["rules"] = ["cyanide-max", "arsenic-max"]
    with pytest.raises(InputError, match="no rule 'arsenic-max' in this pack"):
        parse_pack(data, "palmyra-wi.toml")
