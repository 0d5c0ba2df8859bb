"""Maintenance windows on the command line and in ``check --from --to``:
a window over the acid dump of ``tests/enforcement_support.py`` opened after the fact waits
for a second person, excludes nothing until approved, then its readings are stored with
their own quality code (3) and judged by nothing; every window is listed in ``check``'s
output whatever its state. Against the real database."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess

from enforcement_support import env, village
from foundation.quality import MAINTENANCE

#: 2026-06-09: the dump is 10:30-11:00 CDT (15:30-16:00Z), pH 3.5, 30 readings one a minute
WINDOW_AT = "2026-06-09T10:25:00-05:00"
WINDOW_END = "2026-06-09T11:05:00-05:00"
RANGE = ("--from", "2026-06-09T00:00:00Z", "--to", "2026-06-10T12:00:00Z")


def cli(tmp_path, db, *args, user: str = "tech1") -> subprocess.CompletedProcess:
    """``sewerwatch --config village.toml ARGS`` in this process as operating-system user ``user``."""
    from sewerwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env(db, USER=user, LOGNAME=user))
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(tmp_path / "village.toml"), *args])
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _ok(r):
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r


def _check(tmp_path, db):
    r = _ok(cli(tmp_path, db, "check", *RANGE, "--json", "--quiet"))
    return json.loads(r.stdout), r.stderr


def test_a_window_after_the_fact_needs_a_second_person_then_hides_nothing_from_check(tmp_path, db):
    village(tmp_path, db, lab=False)
    recs, _ = _check(tmp_path, db)
    assert [r["rule"] for r in recs if r["parameter"] == "ph"] == ["ph-min"]

    # opened now over readings judged a year ago: pending, excludes nothing
    r = _ok(cli(tmp_path, db, "maintenance", "start", "candy/ph", "--reason", "calibration", "--person", "J. Smith",
                "--at", WINDOW_AT))
    # 10:25 CDT to the day's last reading at 23:59 CDT: 815 readings judged already
    assert "it reaches back over 815 readings already judged" in r.stdout and "excludes nothing" in r.stdout
    wid = int(r.stdout.split("opened maintenance window ")[1].split(":")[0])
    recs, _ = _check(tmp_path, db)
    assert len([x for x in recs if x["parameter"] == "ph"]) == 1
    text = _ok(cli(tmp_path, db, "check", *RANGE, "--quiet")).stdout
    assert f"maintenance window {wid}: candy/ph" in text and "awaiting a second person's approval" in text

    # the one who opened it cannot approve it
    r = cli(tmp_path, db, "maintenance", "approve", str(wid))
    assert r.returncode != 0 and "a second person must approve" in r.stderr
    _ok(cli(tmp_path, db, "maintenance", "end", str(wid), "--at", WINDOW_END))
    r = _ok(cli(tmp_path, db, "maintenance", "approve", str(wid), "--note", "buffers in the log", user="super1"))
    assert "approved by super1" in r.stdout

    with db.connect() as conn:
        q = dict(conn.execute(
            "SELECT r.quality, count(*) FROM readings r JOIN sensors s ON s.id = r.sensor_id "
            "WHERE s.name = 'ph' AND r.time >= %s AND r.time < %s GROUP BY 1",
            ("2026-06-09T15:25:00Z", "2026-06-09T16:05:00Z")).fetchall())
        outside = conn.execute("SELECT count(*) FROM readings WHERE quality = %s AND time >= %s",
                               (MAINTENANCE, "2026-06-09T16:05:00Z")).fetchone()[0]
    assert q == {MAINTENANCE: 40}           # 10:25 to 11:05, one a minute: all marked, none judged
    assert outside == 0                     # nothing after the window's end
    recs, _ = _check(tmp_path, db)
    assert [x for x in recs if x["parameter"] == "ph"] == []
    text = _ok(cli(tmp_path, db, "check", *RANGE, "--quiet")).stdout
    line = [ln for ln in text.splitlines() if f"maintenance window {wid}" in ln]
    assert line and "40 readings not judged" in line[0] and "J. Smith" in line[0] and "calibration" in line[0]
    r = _ok(cli(tmp_path, db, "maintenance", "list", "--json"))
    [w] = json.loads(r.stdout)
    assert (w["approval"], w["approved_by"], w["opened_by"], w["source"]) == ("approved", "super1", "tech1", "cli")


def test_a_window_refused_in_one_line(tmp_path, db):
    village(tmp_path, db, lab=False, dump=False)
    r = cli(tmp_path, db, "maintenance", "start", "candy/ph", "--reason", " ")
    assert r.returncode == 2 and "needs a reason" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = cli(tmp_path, db, "maintenance", "start", "candy/nope", "--reason", "cleaning")
    assert r.returncode == 2 and "unknown sensor 'candy/nope'" in r.stderr
    _ok(cli(tmp_path, db, "maintenance", "start", "candy", "--reason", "cleaning"))
    r = cli(tmp_path, db, "maintenance", "start", "candy/flow", "--reason", "cleaning")
    assert r.returncode == 2 and "is in maintenance window" in r.stderr and "end it first" in r.stderr


def test_a_meter_cleaning_window_is_left_out_of_the_slug_baseline(tmp_path, db):
    """25 hours of flow at 100 gpm, one a minute, the meter cleaned (0 gpm) for 20 minutes
    at 10:00Z, then 496 gpm for 20 minutes at 24.5 h. With the cleaning's zeros in the trailing
    24-hour average (98.6 gpm: 1420 of 1440 minutes at 100) the slug line is 493.1 gpm and 496
    for 20 minutes (longer than 15, palmyra-wi §13.43) is a slug; with them left out (the
    window approved) the average is 100, the line 500, and it is none."""
    from datetime import datetime, timedelta, timezone

    village(tmp_path, db, lab=False, dump=False)
    t0 = datetime(2026, 6, 1, tzinfo=timezone.utc)
    with db.connect() as conn:
        sid = conn.execute("SELECT se.id FROM sensors se JOIN sites s ON s.id = se.site_id "
                           "WHERE s.key = 'candy' AND se.name = 'flow'").fetchone()[0]
        with conn.cursor().copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
            for i in range(25 * 60):
                v = 0.0 if 600 <= i < 620 else 496.0 if 1470 <= i < 1490 else 100.0
                cp.write_row((t0 + timedelta(minutes=i), sid, v, 0))
        conn.commit()
    rng = ("--from", "2026-06-01T00:00:00Z", "--to", "2026-06-02T02:00:00Z")

    def slugs():
        r = _ok(cli(tmp_path, db, "check", *rng, "--json", "--quiet"))
        return [(x["rule"], x["start"]) for x in json.loads(r.stdout) if x["rule"] == "slug"]
    assert slugs() == [("slug", "2026-06-02T00:30:00Z")]
    r = _ok(cli(tmp_path, db, "maintenance", "start", "candy/flow", "--reason", "cleaning", "--person", "J. Smith",
                "--at", "2026-06-01T10:00:00Z"))
    wid = int(r.stdout.split("opened maintenance window ")[1].split(":")[0])
    _ok(cli(tmp_path, db, "maintenance", "end", str(wid), "--at", "2026-06-01T10:20:00Z"))
    assert slugs() == [("slug", "2026-06-02T00:30:00Z")]       # pending: excludes nothing

    def day_volume():
        from lab.store.flow import period_volume
        with db.connect() as conn:
            return period_volume(conn, "candy", t0, t0 + timedelta(days=1), tz=timezone.utc)
    pending = day_volume()
    # the zeros counted as flow (trapezoids a minute wide): 1419 minutes at 100 gpm, two half-minutes
    # of ramp (50 gal each), 19 at 0
    assert pending["days"]["2026-06-01"]["volume_gal"] == 1419 * 100.0 + 2 * 50.0
    assert pending["daily_gal"] == {"2026-06-01": 142000.0} and pending["sensors"][0]["windows"] == []
    _ok(cli(tmp_path, db, "maintenance", "approve", str(wid), user="super1"))
    assert slugs() == []
    # approved: the window's 20 minutes are no flow at all, never zero: 09:59 to 10:20 (21 min) is
    # longer than the 15 minutes the integration joins, so the day is incomplete, its volume missing there
    v = day_volume()
    day = v["days"]["2026-06-01"]
    assert day["maintenance_s"] == 1200.0 and day["coverage"] == (1440 - 21) / 1440
    assert day["volume_gal"] == 1419 * 100.0 and "2026-06-01" not in v["daily_gal"]
    assert [(w["id"], w["seconds"], w["volume"]) for w in v["sensors"][0]["windows"]] == [(wid, 1200.0, "missing")]


def test_check_readings_takes_its_windows_from_a_file_or_the_quality_column(tmp_path, capsys):
    """``check --readings --windows``: the buffers of a calibration inside the file's window
    are not judged, the window is listed with the readings it kept; a quality column of 3
    marks them alike; the same readings without either are the violations of today."""
    from sewerwatch.cli import main

    rows = [f"2026-06-01T14:{m:02d}:00Z,candy,ph,{v},pH" for m, v in enumerate([7.0] * 3 + [4.0] * 3 + [10.0] * 3
                                                                                 + [7.0] * 3)]
    (tmp_path / "r.csv").write_text("time,site,parameter,value,unit\n" + "\n".join(rows) + "\n")
    (tmp_path / "q.csv").write_text("time,site,parameter,value,unit,quality\n" + "\n".join(
        r + (",3" if 3 <= i < 9 else ",0") for i, r in enumerate(rows)) + "\n")
    (tmp_path / "w.csv").write_text("site,parameter,start,end,reason,person\n"
                                    "candy,ph,2026-06-01T09:03:00-05:00,2026-06-01T09:09:00-05:00,calibration,J. Smith\n")

    def check(*argv):
        code = main(["check", "--pack", "palmyra-wi", *argv, "--quiet"])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out
    assert [v["rule"] for v in json.loads(check("--readings", str(tmp_path / "r.csv"), "--json"))] == [
        "ph-min", "ph-max"]
    assert json.loads(check("--readings", str(tmp_path / "r.csv"), "--windows", str(tmp_path / "w.csv"), "--json")) == []
    out = check("--readings", str(tmp_path / "r.csv"), "--windows", str(tmp_path / "w.csv"))
    assert "maintenance window: candy/ph 2026-06-01T09:03:00-05:00 to 2026-06-01T09:09:00-05:00 (calibration, " \
           "J. Smith): 6 readings not judged" in out
    assert json.loads(check("--readings", str(tmp_path / "q.csv"), "--json")) == []
    assert "6 readings marked 3 (maintenance) in the quality column were not judged (candy/ph: 6)" in \
        check("--readings", str(tmp_path / "q.csv"))
    code = main(["check", "--pack", "palmyra-wi", "--readings", str(tmp_path / "r.csv"), "--windows",
                 str(tmp_path / "r.csv")])
    assert code == 2 and "line 1: expected the header site,parameter,start,end,reason,person" in capsys.readouterr().err


def test_the_evidence_chart_of_a_notice_hatches_a_maintenance_window_beside_the_episode(tmp_path, db):
    """A calibration window at 09:45-10:00 CDT, approved, before the acid dump of 10:30: the
    notice drafted from the dump's violation draws its readings grey in a hatched window,
    and names the window under the chart."""
    import subprocess as sp

    village(tmp_path, db, lab=False)
    r = _ok(cli(tmp_path, db, "maintenance", "start", "candy/ph", "--reason", "calibration", "--person", "J. Smith",
                "--at", "2026-06-09T09:45:00-05:00"))
    wid = int(r.stdout.split("opened maintenance window ")[1].split(":")[0])
    _ok(cli(tmp_path, db, "maintenance", "end", str(wid), "--at", "2026-06-09T10:00:00-05:00"))
    _ok(cli(tmp_path, db, "maintenance", "approve", str(wid), user="super1"))
    # an inspector's grab at 12:00 CDT reads 7.9 where the probe reads 7.2: drifting (0.7 > 0.3 pH)
    _ok(cli(tmp_path, db, "grab", "record", "--site", "candy", "--parameter", "ph", "--value", "7.9",
            "--at", "2026-06-09T12:00:00-05:00"))
    r = _ok(cli(tmp_path, db, "grab", "list"))
    assert "0.70 pH apart, tolerance 0.3 pH: the sensor is drifting" in r.stdout
    with db.connect() as conn:
        vid = conn.execute("SELECT id FROM violations WHERE rule = 'ph-min'").fetchone()[0]
    r = _ok(cli(tmp_path, db, "notice", "draft", "--violation", str(vid)))
    number = r.stdout.split()[0]
    with db.connect() as conn:
        [(doc,)] = conn.execute("SELECT document FROM notices WHERE number = %s", (number,)).fetchall()
    ev = doc["evidence"]
    assert [(w["id"], w["reason"]) for w in ev["maintenance"]] == [(wid, "calibration")]
    assert len(ev["maintenance_points"]) == 15                   # 09:45 .. 09:59, one a minute, never judged
    html = (tmp_path / f"{number}-draft.html").read_text()
    assert f"Maintenance window {wid}" in html and "its readings were not judged (hatched on the chart)" in html
    assert "maintenance window (calibration)" in html and "readings in maintenance (not judged)" in html   # the legend
    [d] = ev["drift"]
    assert d["until"] is None and "grab pH 7.90 pH (field reading" in d["detail"]
    assert "Sensor drift" in html and "not calibrated since" in html
    text = sp.run(["pdftotext", str(tmp_path / f"{number}-draft.pdf"), "-"], capture_output=True, text=True,
                  check=True).stdout
    assert "2026-06-09 09:45 CDT to 2026-06-09 10:00 CDT: calibration, J. Smith (cli)" in " ".join(text.split())
