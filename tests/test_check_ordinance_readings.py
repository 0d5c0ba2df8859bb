"""``sewerwatch check`` reading the ordinances closer: the slug during normal
operation and on the first day, distinct days of violation, a permit's limits on readings.
Expectations worked out by hand from the quoted words (see tests/test_limits_slug_baseline.py
for the arithmetic of the slug)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from sewerwatch.cli import main
from test_limits_cli import check
from test_limits_cli import write_csv as write

CST = timezone(timedelta(hours=-6))          # Chicago in March before the DST change


def flow_rows(site, start, values, unit="gpm"):
    return [f"{(start + timedelta(minutes=i)).isoformat()},{site},flow,{v},{unit}" for i, v in enumerate(values)]


def permit_file(tmp_path, site="acme", extra=""):
    p = tmp_path / f"{site}-permit.toml"
    p.write_text(f'number = "PAL-T-9"\nsite = "{site}"\nissued = 2026-01-01\neffective = 2026-01-01\n'
                 f'expires = 2026-12-31\n[flow]\naverage_daily_gpd = 144000\n' + extra, encoding="utf-8")
    return p


def test_check_finds_the_20_minute_slug_at_5_2_times_normal_flow(tmp_path, capsys):
    # 25 hours at 100 gpm, 20 minutes at 520 gpm (5.2 x), 30 minutes at 100 gpm: the slug line
    # stays 5 x 100 = 500 gpm ("during normal operation") and the slug lasts 20 minutes
    start = datetime(2026, 3, 1, 0, 0, tzinfo=CST)
    vals = [100.0] * (25 * 60) + [520.0] * 20 + [100.0] * 30
    p = write(tmp_path, flow_rows("acme", start, vals))
    code, out, err = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--json")
    # (the first 24 hours of the file have no baseline: said on stderr, see the next test)
    assert code == 0 and err.endswith("until 2026-03-02T05:59:00Z)\n")
    [v] = json.loads(out)
    slug_start = start + timedelta(hours=25)
    assert v["rule"] == "slug" and v["start"] == slug_start.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    assert v["duration_s"] == 1200.0 and v["limit"] == 500.0 and v["average"] == 100.0 and v["readings"] == 20
    assert v["baseline"] == "24-hour average during normal operation"
    assert v["citation"] == "Village of Palmyra Code §13.43 SLUG"


def test_first_day_no_baseline_is_said_and_a_permit_gives_one(tmp_path, capsys):
    start = datetime(2026, 3, 1, 0, 0, tzinfo=CST)
    vals = [100.0] * 120 + [520.0] * 20 + [100.0] * 30
    p = write(tmp_path, flow_rows("acme", start, vals))
    code, out, err = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--json")
    assert code == 0 and json.loads(out) == []
    assert err == ("acme/flow: slug not judged: no baseline yet (slug, readings from 2026-03-01T06:00:00Z "
                   "until 2026-03-01T08:49:00Z)\n")
    # the table says it too
    code, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(p))
    assert out.splitlines() == ["no violations", "acme/flow: slug not judged: no baseline yet (slug, readings from "
                                "2026-03-01T06:00:00Z until 2026-03-01T08:49:00Z)"]
    # with the permit's average daily flow, 144,000 gal/day = 100 gpm, as the baseline
    code, out, err = check(capsys, "--pack", "palmyra-wi", "--readings", str(p), "--permit",
                           str(permit_file(tmp_path)), "--json")
    [v] = json.loads(out)
    assert err == "" and v["rule"] == "slug" and v["duration_s"] == 1200.0 and v["limit"] == 500.0
    assert v["baseline"] == "permitted average flow"


def test_days_of_violation_are_distinct_local_days_per_site_and_rule(tmp_path, capsys):
    # acme: two pH episodes on one local day (10:00 and 14:00) -> 1 day.
    # bolt: one episode from 23:58 to 00:01 local -> 2 days (March 1 and 2).
    day = datetime(2026, 3, 1, tzinfo=CST)
    rows = []
    for h in (10, 14):
        rows += [f"{(day + timedelta(hours=h, minutes=m)).isoformat()},acme,ph,{v},pH"
                 for m, v in enumerate([7.0, 5.0, 5.1, 7.0])]
    t = day + timedelta(hours=23, minutes=57)
    rows += [f"{(t + timedelta(minutes=m)).isoformat()},bolt,ph,{v},pH" for m, v in enumerate([7.0, 5.0, 5.0, 5.0, 5.0, 7.0])]
    code, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(write(tmp_path, rows)), "--json")
    got = json.loads(out)
    assert [(v["site"], v["days_of_violation"], v["site_rule_days"]) for v in got] == [
        ("acme", 1, 1), ("acme", 1, 1), ("bolt", 2, 2)]
    code, out, _ = check(capsys, "--pack", "palmyra-wi", "--readings", str(write(tmp_path, rows)))
    assert "acme ph-min: 1 day(s) of violation (Village of Palmyra Code §13.48(2)(g); each day a new violation)" in out
    assert "bolt ph-min: 2 day(s) of violation" in out


def test_a_permits_stricter_ph_limit_judges_the_readings(tmp_path, capsys):
    # the permit's pH minimum 6.5 is stricter than "lower than 6.0" (§13.48(2)(g)): 6.3 violates
    # it; the other site, without a permit, is judged by the ordinance alone
    start = datetime(2026, 3, 1, 8, 0, tzinfo=CST)
    rows = [f"{(start + timedelta(minutes=m)).isoformat()},{site},ph,{v},pH"
            for site in ("acme", "bolt") for m, v in enumerate([7.0, 6.3, 7.0])]
    permit = permit_file(tmp_path, extra='[[limits]]\ncondition = "4"\nparameter = "ph"\nunit = "pH"\nminimum = 6.5\n'
                                        'words = "pH at least 6.5."\n')
    code, out, err = check(capsys, "--pack", "palmyra-wi", "--readings", str(write(tmp_path, rows)),
                           "--permit", str(permit), "--json")
    [v] = json.loads(out)
    assert (v["site"], v["rule"], v["peak"], v["limit"], v["citation"], v["applies"]) == \
        ("acme", "ph-min", 6.3, 6.5, "Permit PAL-T-9, condition 4", "permit")
    assert "stricter than Village of Palmyra Code §13.48(2)(g) (lower than 6 pH)" in v["stricter_of"]
    # a permit for a site without readings is an error naming the file
    code = main(["check", "--pack", "palmyra-wi", "--readings", str(write(tmp_path, rows)), "--permit",
                 str(permit_file(tmp_path, site="zed"))])
    _, err = capsys.readouterr()
    assert code == 2 and "zed-permit.toml: site 'zed' has no readings" in err
