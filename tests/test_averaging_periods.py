"""The averaging period of a lab limit as the pack states it (``basis``): each calendar month
(``monthly``), each calendar week Sunday to Saturday (``weekly``), the rolling 30 days ending
on each day sampled (``rolling-30-day``), or the period checked (``average``). The pack is the
FICTIONAL Town of Exampleford's (tests/data/by-sample-type/) with its copper 30 Day Average of
composites (1.0 mg/l, "exceeding") read each way; every number is worked out by hand."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from lab.checks.compliance import check_lab
from lab.results_table import LabTable
from limits.days import record_days
from limits.pack_cli import check_pack
from limits.readings import Readings
from limits.statements import of_violation

ROOT = Path(__file__).resolve().parent.parent
TOWN = ROOT / "tests" / "data" / "by-sample-type"
UTC = timezone.utc


def pack_reading(tmp_path, basis: str) -> str:
    text = (TOWN / "exampleford-mn.toml").read_text(encoding="utf-8")
    old = 'id = "cu-30-day"\nkind = "lab-limit"\nanalyte = "cu"\nbasis = "monthly"'
    assert old in text
    p = tmp_path / "exampleford-mn.toml"
    p.write_text(text.replace(old, old.replace('"monthly"', f'"{basis}"')), encoding="utf-8")
    assert check_pack(p) == []
    return str(p)


def composites(*rows):
    """rows: ('YYYY-MM-DD', copper mg/l): composites collected at 15:00 UTC (morning in Chicago)."""
    when = [datetime.fromisoformat(f"{d}T15:00").replace(tzinfo=UTC) for d, _ in rows]
    return LabTable.from_columns(["plater"] * len(rows), [f"C{i}" for i in range(len(rows))], when,
                                 ["cu"] * len(rows), [v for _, v in rows], [False] * len(rows),
                                 ["composite"] * len(rows))


def averages(tb, pack, readings=Readings()):
    return [v for v in check_lab(tb, pack, readings=readings) if v["rule"] == "cu-30-day"]


def test_rolling_30_days_ending_on_each_day_sampled(tmp_path):
    pack = pack_reading(tmp_path, "rolling-30-day")
    tb = composites(("2026-03-01", 1.5), ("2026-03-20", 0.4), ("2026-04-05", 0.9), ("2026-04-25", 1.3))
    got = averages(tb, pack)
    # ending Mar 1: {1.5} > 1.0; ending Mar 20: (1.5 + 0.4) / 2 = 0.95; ending Apr 5 (Mar 7 to
    # Apr 5): (0.4 + 0.9) / 2 = 0.65; ending Apr 25 (Mar 27 to Apr 25): (0.9 + 1.3) / 2 = 1.1 > 1.0
    assert [(v["evidence"]["window"], v["evidence"]["samples"]) for v in got] == [
        (["2026-01-31", "2026-03-01"], ["C0"]), (["2026-03-27", "2026-04-25"], ["C2", "C3"])]
    assert got[1]["peak"] == pytest.approx(1.1)
    assert of_violation(got[1]) == "exceeding 1 mg/l as a rolling 30-day average of composite samples"
    # a calendar month reads the same results otherwise: March (1.5 + 0.4) / 2 = 0.95 lawful,
    # April (0.9 + 1.3) / 2 = 1.1 over
    monthly = averages(tb, str(TOWN / "exampleford-mn.toml"))
    assert [v["evidence"]["month"] for v in monthly] == ["2026-04"]


def test_the_30th_day_back_is_in_the_window_the_31st_is_not(tmp_path):
    pack = pack_reading(tmp_path, "rolling-30-day")
    # ending Mar 30 (Mar 1 to Mar 30): (0.2 + 1.6) / 2 = 0.9 lawful; ending Mar 31 (Mar 2 to
    # Mar 31): (1.6 + 1.0) / 2 = 1.3 over
    got = averages(composites(("2026-03-01", 0.2), ("2026-03-30", 1.6), ("2026-03-31", 1.0)), pack)
    assert [(v["evidence"]["window"], v["evidence"]["samples"]) for v in got] == [
        (["2026-03-02", "2026-03-31"], ["C1", "C2"])]
    # its days of violation: the days of its samples, or every day of the 30 (average_days)
    assert got[0]["days_of_violation"] == 2
    [whole] = averages(composites(("2026-03-01", 0.2), ("2026-03-30", 1.6), ("2026-03-31", 1.0)), pack,
                       Readings(average_days="period"))
    assert whole["days_of_violation"] == 30


def test_the_calendar_week_runs_sunday_to_saturday(tmp_path):
    pack = pack_reading(tmp_path, "weekly")
    # Sunday 2026-03-01 to Saturday 03-07: (0.6 + 1.5) / 2 = 1.05 over; the week of Sunday
    # 03-08: 0.5 lawful (a Monday-to-Sunday week would average all three: 0.87, lawful)
    got = averages(composites(("2026-03-02", 0.6), ("2026-03-07", 1.5), ("2026-03-08", 0.5)), pack)
    assert [(v["evidence"]["week"], v["evidence"]["samples"]) for v in got] == [("2026-03-01", ["C0", "C1"])]
    assert of_violation(got[0]) == "exceeding 1 mg/l as a weekly average of composite samples"
    [whole] = averages(composites(("2026-03-02", 0.6), ("2026-03-07", 1.5)), pack, Readings(average_days="period"))
    assert whole["days_of_violation"] == 7


def test_an_unknown_averaging_period_is_refused_in_one_line(tmp_path):
    text = (TOWN / "exampleford-mn.toml").read_text(encoding="utf-8").replace('basis = "monthly"',
                                                                               'basis = "rolling-31-day"', 1)
    p = tmp_path / "exampleford-mn.toml"
    p.write_text(text, encoding="utf-8")
    [line] = check_pack(p)
    assert line == (f"{p}: rules[2] (cu-30-day).basis: expected one of sample, average, monthly, weekly, "
                    "rolling-30-day, got 'rolling-31-day'"), line


@pytest.mark.services
def test_a_rolling_average_reaches_back_before_the_period_checked(tmp_path, db):
    import json
    import shutil

    from tests.test_sample_type_limits import _main

    shutil.copy(TOWN / "town.toml", tmp_path / "town.toml")
    pack_reading(tmp_path, "rolling-30-day")
    (tmp_path / "lab.csv").write_text(
        "sample_id,site,collected,analyte,value,unit,qualifier,sample_type\n"
        "C-220,plater,2026-02-20T09:00:00-06:00,cu,1.5,mg/l,,composite\n"
        "C-303,plater,2026-03-03T09:00:00-06:00,cu,0.8,mg/l,,composite\n", encoding="utf-8")
    assert _main(tmp_path, db, "db", "migrate")[0] == 0
    assert _main(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab")[0] == 0
    code, out, err = _main(tmp_path, db, "lab", "check", "--since", "2026-03-01", "--until", "2026-04-01", "--json")
    assert code == 0, err
    got = [(v["rule"], v["evidence"]["window"], v["evidence"]["samples"]) for v in json.loads(out)["violations"]]
    # the window ending Mar 3 (Feb 2 to Mar 3): (1.5 + 0.8) / 2 = 1.15 > 1.0, though March alone
    # holds only 0.8; the window ending Feb 20 (1.5) ends before the period and is not March's
    assert got == [("cu-30-day", ["2026-02-02", "2026-03-03"], ["C-220", "C-303"])]
    # the office's results table of March says the same of C-303
    from lab.store.listing import results_with_limits
    with db.connect() as conn:
        rows = results_with_limits(conn, datetime(2026, 3, 1, 6, tzinfo=UTC), datetime(2026, 4, 1, 5, tzinfo=UTC))
    [c303] = [r for r in rows if r["sample"] == "C-303"]
    assert [(x["rule"], x["form"]) for x in c303["exceeds"]] == [("cu-30-day", "as a rolling 30-day average of composite "
                                                                   "samples")]
