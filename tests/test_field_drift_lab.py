"""Drift against the laboratory's grab samples: a grab sample's pH imported
by the lab file's path (``lab import``) is compared with the live sensor's readings at its time,
as an inspector's grab reading is (tests/test_field_run.py): 0.6 pH apart, beyond the 0.3 pH
tolerance, the sensor is drifting, with both numbers; 0.1 apart it is not; a composite's pH is no
grab. Against the real database."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import psycopg

from field import drift
from foundation import config as sw_config
from foundation.actor import Actor
from lab.store.results import import_lab_file
from support import add_site_and_sensors

LAB = Actor.account("coord", "Cora Coordinator")


def test_a_lab_grab_samples_ph_against_the_sensor(db, tmp_path):
    ids = add_site_and_sensors(db.url, "plater", {"ph": ("ph", "pH")})
    t = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=2)
    cfg = sw_config.from_dict({"utility": {"timezone": "America/Chicago"}, "services": {"state_dir": str(tmp_path)}},
                              "<tests>")
    with psycopg.connect(db.url) as conn:
        conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT %s + g * interval '10 s', %s, 7.0 "
                     "FROM generate_series(-60, 60) g", (t, ids["ph"]))           # the probe reads 7.0 all along
        conn.commit()
        csv = ("sample_id,site,collected,analyte,value,unit,qualifier,sample_type\n"
               f"G-1,plater,{t.isoformat()},ph,7.6,pH,,grab\n"
               f"G-2,plater,{(t + timedelta(minutes=5)).isoformat()},ph,7.1,SU,,grab\n"   # standard units
               f"C-1,plater,{(t + timedelta(minutes=8)).isoformat()},ph,9.0,pH,,composite\n").encode()
        res = import_lab_file(conn, "grabs.csv", data=csv, actor=LAB)
        assert res.stored == 3 and not res.bad, res
        rows = {r["ref"]: r for r in drift.check_new(conn, cfg)}
        conn.commit()
        assert drift.check_new(conn, cfg) == []                                  # each grab compared once
        checks = drift.checks(conn)
    assert len(rows) == 2 and {r["source"] for r in rows.values()} == {"lab"}      # the composite is no grab
    by_grab = {r["grab"]: r for r in rows.values()}
    far, near = by_grab[7.6], by_grab[7.1]
    assert far["drifted"] and far["sensor_value"] == 7.0 and abs(far["difference"] - 0.6) < 1e-9
    assert "grab pH 7.60 pH (lab sample G-1" in far["detail"] and "against the sensor's 7.00 pH" in far["detail"]
    assert "tolerance 0.3 pH: the sensor is drifting" in far["detail"]
    assert not near["drifted"] and abs(near["difference"] - 0.1) < 1e-9
    assert len(checks) == 2
