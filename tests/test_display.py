"""Every time a person reads carries its zone, so the repeated hour of
the autumn change is never ambiguous, and a reading of -0 is shown as 0."""

from __future__ import annotations

import json

import psycopg

from foundation import config as sw_config
from foundation.display import local_time, localise, num
from sewerwatch.cli import main
from sewerwatch.db import sync

TZ = "America/Chicago"


def test_the_autumns_two_one_thirty_are_told_apart_and_minus_zero_is_zero():
    # 2026-11-01: CDT (UTC-5) until 07:00 UTC, then CST (UTC-6); 01:30 local happens twice
    assert local_time("2026-11-01T06:30:00Z", TZ) == "2026-11-01 01:30:00 CDT"
    assert local_time("2026-11-01T07:30:00Z", TZ) == "2026-11-01 01:30:00 CST"
    assert localise("pH 3 from 2026-11-01T06:30:00Z to 2026-11-01T07:30:00.5Z", TZ) == \
        "pH 3 from 2026-11-01 01:30:00 CDT to 2026-11-01 01:30:00 CST"
    assert num(-0.0) == "0" and num(-0.0, ".1f") == "0.0" and num(-0.04, ".1f") == "0.0"
    assert num(-1.5) == "-1.5" and num(None) == "n/a"


def test_alerts_list_and_findings_list_show_local_times_with_their_zone(db, tmp_path, capsys):
    cfg = tmp_path / "village.toml"
    cfg.write_text(f'[utility]\nname = "Zone village"\npack = "palmyra-wi"\ntimezone = "{TZ}"\n'
                   f'[services]\ndb_url = "{db.url}"\nmqtt_url = "mqtt://u:p@127.0.0.1:1"\n'
                   f'state_dir = "{tmp_path / "state"}"\n[[sites]]\nid = "acme"\nname = "Acme"\n'
                   '[[sensors]]\nsite = "acme"\nname = "ph"\nparameter = "ph"\nunit = "pH"\nsource = "mqtt"\n')
    with psycopg.connect(db.url) as conn:
        sync.sync(conn, sw_config.load(cfg))
        site, sensor = conn.execute("SELECT s.site_id, s.id FROM sensors s").fetchone()
        vid = conn.execute(
            "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, end_time, peak, "
            "limit_value, unit, source) VALUES (%s, %s, 'ph', 'ph-min', 'palmyra-wi', 'x', '2026-11-01T07:30:00Z', "
            "'2026-11-01T07:40:00Z', -0.0, 6.0, 'pH', 'stream') RETURNING id", (site, sensor)).fetchone()[0]
        conn.execute("INSERT INTO alerts (kind, violation_id, site_id, sensor_id, rule, summary, details, opened_at) "
                     "VALUES ('violation', %s, %s, %s, 'ph-min', 'Acme: pH -0 (lower than 6 pH, ph-min) from "
                     "2026-11-01T07:30:00Z', %s, '2026-11-01T06:31:00Z')", (vid, site, sensor, json.dumps({})))
    capsys.readouterr()
    assert main(["--config", str(cfg), "alerts", "list"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[0]
    assert "2026-11-01 01:31:00 CDT" in line and "from 2026-11-01 01:30:00 CST" in line, line
    assert "T07:30" not in line
    assert main(["--config", str(cfg), "findings", "list", "--since", "2026-10-31", "--until", "2026-11-02"]) == 0
    out = capsys.readouterr().out
    assert "2026-11-01 01:30 CST peak 0 pH" in out, out
