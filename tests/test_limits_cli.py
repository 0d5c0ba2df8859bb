"""``sewerwatch check`` over CSV files: the promised interface."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from limits.csvio import parse_times, read_readings_csv
from sewerwatch.cli import main
from foundation.errors import InputError

HEADER = "time,site,parameter,value,unit\n"


def write_csv(tmp_path, rows, header=HEADER, name="readings.csv"):
    p = tmp_path / name
    p.write_text(header + "".join(r + "\n" for r in rows), encoding="utf-8")
    return p


def check(capsys, *argv):
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def minutes(start: datetime, n: int, step_s: int = 60):
    return [(start + timedelta(seconds=i * step_s)).isoformat() for i in range(n)]


def test_json_violations_with_units_converted(tmp_path, capsys):
    chicago = timezone(timedelta(hours=-6))
    t = minutes(datetime(2026, 3, 1, 23, 58, tzinfo=chicago), 6)
    rows = [f"{t[0]},acme,ph,7.0,pH", f"{t[1]},acme,ph,4.99,pH", f"{t[2]},acme,ph,5.0,pH",
            f"{t[3]},acme,ph,4.2,pH", f"{t[4]},acme,ph,7.1,pH",
            f"{t[0]},acme,temperature,40.0,degC", f"{t[1]},acme,temperature,104.0,degF",
            f"{t[2]},acme,temperature,40.5,degC", f"{t[3]},acme,temperature,100,degF",
            f"{t[0]},bolt,ph,9.5,pH", f"{t[1]},bolt,ph,9.0,pH"]
    p = write_csv(tmp_path, rows)
    code, out, err = check(capsys, "--pack", "webster-wi", "--readings", str(p), "--json")
    assert code == 0 and err == ""
    got = json.loads(out)
    summary = [(v["site"], v["parameter"], v["rule"], v["start"], v["end"]) for v in got]
    assert summary == [
        # 4.99 then 5.0 ("less than 5.0": lawful) then 4.2: two episodes
        ("acme", "ph", "ph-min", "2026-03-02T05:59:00Z", "2026-03-02T06:00:00Z"),
        ("acme", "ph", "ph-min", "2026-03-02T06:01:00Z", "2026-03-02T06:02:00Z"),
        ("acme", "temperature", "temperature-max", "2026-03-02T06:00:00Z", "2026-03-02T06:01:00Z"),
        ("bolt", "ph", "ph-max", "2026-03-02T05:58:00Z", "2026-03-02T05:59:00Z"),
    ]
    temp = got[2]
    assert temp["unit"] == "degF" and temp["peak"] == pytest.approx(104.9) and temp["limit"] == 104.0
    # the ordinance by its title and section; the seed file is provenance
    assert temp["citation"] == "Village of Webster (WI) Code §240-5" and "exceeds 40° C." in temp["words"]
    assert temp["provenance"] == "000_68bc5aa0322c9423.txt §240-5"
    assert got[0]["peak"] == 4.99 and got[0]["limit"] == 5.0 and got[0]["days_of_violation"] == 1
    assert all(v["pack"] == "webster-wi" for v in got)


def test_no_violations_is_exit_0_and_an_empty_array(tmp_path, capsys):
    p = write_csv(tmp_path, ["2026-03-01T00:00:00Z,acme,ph,7.0,pH"])
    code, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--json")
    assert code == 0 and json.loads(out) == []


def test_table_output(tmp_path, capsys):
    p = write_csv(tmp_path, ["2026-03-01T00:00:00Z,acme,ph,5.5,pH", "2026-03-01T00:01:00Z,acme,ph,7,pH"])
    code, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(p))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["site", "sensor", "rule"]
    assert "ph-min" in lines[1] and "§13.48(2)(g)" in lines[1] and lines[2] == "1 violation(s)"
    # the distinct days of violation per site and rule follow the table
    assert lines[3] == "acme ph-min: 1 day(s) of violation (Village of Palmyra Code §13.48(2)(g); each day a new violation)"


def test_slug_from_flow_in_mixed_units(tmp_path, capsys):
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    t = minutes(start, 26 * 60 + 60)
    rows = []
    for i, ts in enumerate(t):
        if 26 * 60 <= i < 26 * 60 + 20:
            rows.append(f"{ts},acme,flow,{0.144 * 6},mgd")       # 600 gpm
        elif i % 2:
            rows.append(f"{ts},acme,flow,100,gpm")
        else:
            rows.append(f"{ts},acme,flow,{100 * 1440 * 3.785411784 / 1000},m3/d")  # 100 gpm
    p = write_csv(tmp_path, rows)
    code, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--json")
    got = json.loads(out)
    assert code == 0 and [v["rule"] for v in got] == ["slug"]
    slug = got[0]
    assert slug["start"] == "2026-03-02T02:00:00Z" and slug["end"] == "2026-03-02T02:20:00Z"
    assert slug["peak"] == pytest.approx(600.0) and slug["limit"] == pytest.approx(500.0)
    assert slug["average"] == pytest.approx(100.0) and slug["unit"] == "gpm"
    assert slug["citation"] == "Village of Palmyra Code §13.43 SLUG"
    assert slug["provenance"] == "003_44f871d49a02d8f5.txt §13.43 SLUG"


def test_days_of_violation_in_the_packs_time_zone(tmp_path, capsys):
    # 22:00 to 02:00 Chicago time, readings every 10 minutes: two local days
    start = datetime(2026, 7, 1, 22, 0, tzinfo=timezone(timedelta(hours=-5)))
    rows = [f"{ts},acme,ph,4.0,pH" for ts in minutes(start, 25, 600)]
    p = write_csv(tmp_path, rows)
    _, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--json")
    (v,) = json.loads(out)
    assert v["days_of_violation"] == 2 and v["readings"] == 25


@pytest.mark.parametrize("rows,message", [
    (["2026-03-01T00:00:00Z,acme,ph,7.0"], "line 2: expected 5 fields"),
    (["2026-03-01T00:00:00Z,acme,ph,7.0,pH", "2026-03-01T00:01:00,acme,ph,7.0,pH"], "line 3: bad time '2026-03-01T00:01:00': no UTC offset"),
    (["2026-02-30T00:00:00Z,acme,ph,7.0,pH"], "line 2: bad time '2026-02-30T00:00:00Z'"),
    (["yesterday,acme,ph,7.0,pH"], "line 2: bad time 'yesterday'"),
    (["2026-03-01T00:00:00Z,acme,ph,7.0,pH", "2026-03-01T00:00:00Z,acme,ph,seven,pH"], "line 3: bad value 'seven'"),
    (["2026-03-01T00:00:00Z,acme,ph,7.0,pH", "2026-03-01T00:01:00Z,acme,temperature,70,degK"],
     "line 3: unknown unit 'degK' for temperature"),
    (["2026-03-01T00:00:00Z,acme,flow,7.0,gpm", "2026-03-01T00:01:00Z,acme,flow,7.0,pH"],
     "line 3: unknown unit 'pH' for flow"),
    (["2026-03-01T00:00:00Z,acme,conductivity,7.0,uS/cm"], "line 2: unknown parameter 'conductivity'"),
])
def test_bad_input_is_exit_2_with_one_line_naming_the_line(tmp_path, capsys, rows, message):
    p = write_csv(tmp_path, rows)
    code, out, err = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("sewerwatch: error: ")
    assert message in err and str(p) in err


def test_bad_header_unknown_pack_and_missing_file(tmp_path, capsys):
    p = write_csv(tmp_path, ["x"], header="when,site,parameter,value,unit\n")
    code, _, err = check(capsys, "--pack", "palmyra-wi", "--readings", str(p))
    assert code == 2 and "line 1: unknown column 'when'" in err
    good = write_csv(tmp_path, ["2026-03-01T00:00:00Z,acme,ph,7.0,pH"], name="g.csv")
    code, _, err = check(capsys, "--pack", "lakeside-wi", "--readings", str(good))
    assert code == 2 and "unknown rule pack 'lakeside-wi'" in err
    code, _, err = check(capsys, "--pack", "palmyra-wi", "--readings", str(tmp_path / "none.csv"))
    assert code == 2 and "no such file" in err
    code, _, err = check(capsys, "--readings", str(good))
    assert code == 2 and "--pack is required" in err


def test_quality_column_skips_flagged_readings(tmp_path, capsys):
    p = write_csv(tmp_path, ["2026-03-01T00:00:00Z,acme,ph,2.0,pH,2", "2026-03-01T00:01:00Z,acme,ph,7.0,pH,0",
                             "2026-03-01T00:02:00Z,acme,ph,nan,pH,0"],
                  header="time,site,parameter,value,unit,quality\n")
    _, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--json")
    assert json.loads(out) == []


def test_time_formats():
    got = parse_times(["2026-03-01T00:00:00Z", "2026-03-01 00:00:00+00:00", "2026-02-28T18:00:00-06:00",
                       "2026-02-28T18:00-0600", "2026-02-28T19:00:00.000000-05", "2026-03-01T05:30:00.5+05:30"])
    base = int(datetime(2026, 3, 1, tzinfo=timezone.utc).timestamp()) * 1_000_000
    assert got.tolist() == [base] * 5 + [base + 500_000]
    with pytest.raises(InputError, match="line 1: bad time"):
        parse_times(["2026-03-01"])


def test_reader_groups_sensors_by_site_and_parameter(tmp_path):
    p = write_csv(tmp_path, ["2026-03-01T00:00:00Z,b,ph,7,pH", "2026-03-01T00:00:00Z,a,ph,7,pH",
                             "2026-03-01T00:01:00Z,b,ph,7,pH", "2026-03-01T00:00:00Z,b,flow,1,mgd"])
    tab = read_readings_csv(p)
    names = [(tab.meta[c].site, tab.meta[c].parameter) for c in tab.sensor.tolist()]
    assert names == [("b", "ph"), ("a", "ph"), ("b", "ph"), ("b", "flow")]
    assert tab.value[3] == pytest.approx(1e6 / 1440) and tab.line.tolist() == [2, 3, 4, 5]


def test_console_script_exit_codes(tmp_path):
    good = write_csv(tmp_path, ["2026-03-01T00:00:00Z,acme,ph,3.0,pH"], name="g.csv")
    bad = write_csv(tmp_path, ["2026-03-01T00:00:00Z,acme,ph,3.0,furlongs"], name="b.csv")
    cmd = [sys.executable, "-m", "sewerwatch", "check", "--pack", "palmyra-wi", "--json", "--readings"]
    r = subprocess.run(cmd + [str(good)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)[0]["rule"] == "ph-min"
    r = subprocess.run(cmd + [str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "line 2: unknown unit 'furlongs' for ph" in r.stderr
