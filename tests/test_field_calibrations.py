"""The instrument register and calibration records on the command
line, against the real database: an instrument replaced keeps its history; the shortest
calibration interval applies and says where it comes from; a pH calibration passes or fails
against the tolerance (a check buffer within ±0.1 pH), a flow verification by its percent
difference; a failed or overdue calibration is a finding a notice can be drafted from."""

from __future__ import annotations

import json

from enforcement_support import village
from test_field_windows import _ok, cli


def _findings(db, kind):
    with db.connect() as conn:
        return conn.execute("SELECT key, summary, occurred FROM findings WHERE kind = %s ORDER BY id",
                            (kind,)).fetchall()


def test_the_register_keeps_each_instruments_history_and_the_shortest_interval(tmp_path, db):
    village(tmp_path, db, lab=False, dump=False)
    _ok(cli(tmp_path, db, "instruments", "set", "candy/flow", "--make", "Isco", "--model", "2150", "--serial", "F-100",
            "--range", "0:2000", "--owner", "industrial-user", "--installed", "2025-03-01", "--every", "365"))
    _ok(cli(tmp_path, db, "instruments", "set", "candy/flow", "--make", "Isco", "--model", "2150", "--serial", "F-200",
            "--installed", "2026-02-01"))
    r = _ok(cli(tmp_path, db, "instruments", "show", "candy/flow", "--json"))
    hist = json.loads(r.stdout)["instruments"]
    assert [(i["serial"], i["installed"], i["removed"] is not None) for i in hist] == [
        ("F-200", "2026-02-01", False), ("F-100", "2025-03-01", True)]
    assert hist[0]["calibration_interval_days"] == 365 and hist[0]["owner"] == "industrial-user"
    assert (hist[0]["range_low"], hist[0]["range_high"], hist[0]["range_unit"]) == (0.0, 2000.0, "gpm")
    r = _ok(cli(tmp_path, db, "instruments", "list", "--json"))
    reg = {e["sensor"]: e for e in json.loads(r.stdout)}
    assert reg["candy/flow"]["interval"]["days"] == 365 and reg["candy/flow"]["interval"]["source"] == "instrument"
    assert reg["candy/ph"]["instrument"] is None and reg["candy/ph"]["interval"] is None
    r = cli(tmp_path, db, "instruments", "set", "candy/flow", "--range", "5:1")
    assert r.returncode == 2 and "range: the high end 1 is not above the low end 5" in r.stderr


def test_a_ph_calibration_passes_or_fails_against_its_tolerance_and_a_failure_is_a_finding(tmp_path, db):
    village(tmp_path, db, lab=False, dump=False)
    r = _ok(cli(tmp_path, db, "calibrations", "record", "candy/ph", "--buffer", "4.00:4.12:4.01",
                "--buffer", "10.00:9.85:10.02", "--slope", "98.5", "--offset", "-4", "--temperature", "68",
                "--technician", "J. Smith", "--at", "2026-06-09T09:00:00-05:00"))
    assert "PASS candy/ph by J. Smith: buffers 4.00 found 4.12 left 4.01, 10.00 found 9.85 left 10.02" in r.stdout
    # 7.00 left at 7.15: 0.15 pH off, beyond ±0.1; the slope 92 % below 95 %
    r = cli(tmp_path, db, "calibrations", "record", "candy/ph", "--buffer", "7.00:7.40:7.15", "--slope", "92",
            "--technician", "J. Smith", "--at", "2026-06-23T09:00:00-05:00")
    assert r.returncode == 1, r.stderr
    assert "FAIL candy/ph" in r.stdout and "buffer 7.00 read 7.15 after calibration (+0.15 pH; tolerance ±0.1 pH)" \
        in r.stdout and "slope 92 % outside 95-105 %" in r.stdout
    [(key, summary, occurred)] = _findings(db, "calibration-failed")
    assert key.startswith("calibration-failed:") and str(occurred) == "2026-06-23"
    fid = int(r.stdout.split("a finding: ")[1].split()[0])
    r = _ok(cli(tmp_path, db, "notice", "draft", "--finding", str(fid)))
    assert "Notice of violation to Sweet Creek Confections for finding" in r.stdout
    assert "(an instrument of the control manhole failed its calibration); respond within 15 days" in r.stdout
    html = (tmp_path / "NOV-2026-001-draft.html").read_text()
    assert "Repair or replace the instrument that failed its calibration" in html and "40 CFR 403.12(o)" in html
    # a flow meter 12 % above the reference fails (±10 %); 5 % passes
    r = cli(tmp_path, db, "calibrations", "record", "candy/flow", "--reference", "100", "--meter", "112")
    assert r.returncode == 1 and "+12.0 % (tolerance ±10 %)" in r.stdout
    _ok(cli(tmp_path, db, "calibrations", "record", "candy/flow", "--reference", "100", "--meter", "105"))
    r = cli(tmp_path, db, "calibrations", "record", "candy/flow", "--buffer", "4:4:4")
    assert r.returncode == 2 and "buffers are for pH probes" in r.stderr
    r = _ok(cli(tmp_path, db, "calibrations", "list", "--json"))
    assert [(c["sensor"], c["result"]) for c in json.loads(r.stdout)] == [
        ("ph", "pass"), ("ph", "fail"), ("flow", "fail"), ("flow", "pass")]


def test_an_overdue_calibration_is_a_finding_on_the_day_after_it_was_due(tmp_path, db):
    village(tmp_path, db, lab=False, dump=False)
    _ok(cli(tmp_path, db, "instruments", "set", "candy/ph", "--make", "Hach", "--serial", "P-7", "--installed",
            "2026-01-01", "--every", "14"))
    r = _ok(cli(tmp_path, db, "calibrations", "due", "--json"))
    [d] = json.loads(r.stdout)
    assert (d["sensor"], d["due_on"], d["state"], d["interval_days"]) == ("ph", "2026-01-15", "overdue", 14)
    assert _findings(db, "calibration-overdue") == []
    _ok(cli(tmp_path, db, "findings", "list"))            # the enforcement round at the present records it
    [(key, summary, occurred)] = _findings(db, "calibration-overdue")
    assert str(occurred) == "2026-01-16" and "not calibrated by 2026-01-15 (every 14 days" in summary
    _ok(cli(tmp_path, db, "findings", "list"))
    assert len(_findings(db, "calibration-overdue")) == 1     # once


def test_what_runs_field_round_alerts_a_calibration_due_soon_and_a_window_awaiting_approval(tmp_path, db):
    """field.conditions (what run's field round hands the alert manager): a probe calibrated
    every 14 days, installed 10 days ago, is due in 4 (within [field] calibration_remind_days,
    14): a calibration-due condition; a window opened after the fact over judged readings: a
    maintenance-pending condition until a second person decides."""
    from datetime import date, timedelta

    from field import conditions
    from foundation import config as sw_config
    from test_field_windows import WINDOW_AT

    village(tmp_path, db, lab=False)
    cfg = sw_config.load(tmp_path / "village.toml")
    installed = (date.today() - timedelta(days=10)).isoformat()
    _ok(cli(tmp_path, db, "instruments", "set", "candy/flow", "--serial", "F-1", "--installed", installed,
            "--every", "14"))
    r = _ok(cli(tmp_path, db, "maintenance", "start", "candy/ph", "--reason", "calibration", "--at", WINDOW_AT))
    wid = int(r.stdout.split("opened maintenance window ")[1].split(":")[0])
    with db.connect() as conn:
        flow_id = conn.execute("SELECT id FROM sensors WHERE name = 'flow'").fetchone()[0]
        found = conditions.conditions(conn, cfg)
    assert set(found) == {("calibration-due", flow_id), ("maintenance-pending", f"window-{wid}")}
    assert f"calibration due {date.today() + timedelta(days=4)} (every 14 days" in found[("calibration-due", flow_id)]["detail"]
    assert "awaits a second person's approval" in found[("maintenance-pending", f"window-{wid}")]["detail"]
    _ok(cli(tmp_path, db, "maintenance", "reject", str(wid), "--note", "no calibration that day", user="super1"))
    with db.connect() as conn:
        assert set(conditions.conditions(conn, cfg)) == {("calibration-due", flow_id)}
