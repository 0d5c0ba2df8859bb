"""The acknowledgement page shows the episode as it is now (the violations
row ``run`` keeps current), the subject says "pH 3.1" once, ``run --no-modbus`` raises no
device alert from health rows it did not write, and ``status`` offers ``deadletters
replay`` only for the dead letters it can replay. Against a real database."""

from __future__ import annotations

import asyncio
import json
import types

from alerts.content import summary, violation_message
from foundation import config as sw_config
from ingest import deadletters
from sewerwatch.cli_run import replay_hint
from sewerwatch.pipeline import Pipeline
from support import add_site_and_sensors
from test_ack_page import Served, _on, _page, http

V = {"site": "plater", "sensor": "ph", "parameter": "ph", "rule": "ph-min", "kind": "range", "peak": 3.1,
     "limit": 6.0, "unit": "pH", "comparison": "lower than", "start": "2026-06-01T15:30:00Z", "end": None,
     "citation": "Village of Palmyra Code §13.48(2)(g)", "words": "No user shall ...", "pack": "palmyra-wi"}


def test_the_subject_names_ph_once():
    title, _ = violation_message(7, "open", V, site_name="Acme Plating", tz="America/Chicago")
    assert title == "[sewerwatch] VIOLATION #7: Acme Plating — pH 3.1 (lower than 6, ph-min)"
    assert summary(V, "Acme Plating").startswith("Acme Plating: pH 3.1 (lower than 6, ph-min) from ")
    hot = {**V, "parameter": "temperature", "unit": "degF", "peak": 160.0, "limit": 150.0, "comparison": "above",
           "rule": "temperature-max"}
    title, _ = violation_message(8, "open", hot, site_name="Acme", tz="America/Chicago")
    assert title.endswith("Acme — Temperature 160 degF (above 150 degF, temperature-max)")


def test_the_page_shows_the_episode_as_it_is_now(db):
    ids = add_site_and_sensors(db.url, "plater", {"ph": ("ph", "pH")})
    opened = {**V, "peak": 3.468, "peak_time": "2026-06-01T15:35:00Z", "readings": 3}
    with db.connect() as conn:
        conn.execute("UPDATE sites SET name = 'Acme Plating' WHERE key = 'plater'")
        vid = conn.execute(
            "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, start_time, end_time, peak, "
            "limit_value, unit, evidence, source) SELECT site_id, id, 'ph', 'ph-min', 'palmyra-wi', 'x', "
            "'2026-06-01T15:30:00Z', '2026-06-01T16:10:00Z', 2.9, 6.0, 'pH', %s, 'stream' FROM sensors WHERE id = %s "
            "RETURNING id", (json.dumps({"peak_time": "2026-06-01T15:52:00Z", "readings": 41}), ids["ph"])).fetchone()[0]
        aid = conn.execute(
            "INSERT INTO alerts (kind, violation_id, site_id, sensor_id, rule, state, summary, details) SELECT "
            "'violation', %s, site_id, id, 'ph-min', 'notified', 'Acme Plating: pH 3.468', %s FROM sensors "
            "WHERE id = %s RETURNING id", (vid, json.dumps(opened), ids["ph"])).fetchone()[0]
    page, links = _page(db.url)
    served = Served(page)
    try:
        status, body, _ = http(_on(served, links.url(aid, None, "open")))
    finally:
        served.close()
    assert status == 200
    assert "2.9 pH (the most extreme reading)" in body and "3.468" not in body
    assert "41 beyond the limit" in body and "2026-06-01 10:52:00 CDT" in body       # the peak now, and its time
    assert "2026-06-01 11:10:00 CDT" in body and "still going" not in body           # it ended


def test_run_no_modbus_raises_no_device_alert_from_old_health_rows(db, tmp_path):
    cfg = sw_config.from_dict({"sites": [{"id": "plant", "name": "Plant"}],
                               "devices": [{"id": "mh1", "site": "plant"}],
                               "sensors": [{"site": "plant", "name": "flow", "parameter": "flow", "unit": "gpm",
                                            "source": "modbus", "device": "mh1"}]}, "v.toml")
    with db.connect() as conn:
        conn.execute("INSERT INTO device_health (device, site_key, state, last_error) VALUES "
                     "('mh1', 'plant', 'down', 'timed out')")

    def down(modbus: bool) -> dict:
        p = Pipeline(cfg, owner_url=db.url, ingest_url=db.url, mqtt_url=None, notifier_url=None,
                     spool_dir=tmp_path / "spool", modbus=modbus)
        p.ingest = types.SimpleNamespace(writer=types.SimpleNamespace(stats=types.SimpleNamespace(db_up=True)))
        p.device_sites = {"mh1": "plant"}
        return asyncio.run(p._devices_down())

    assert down(modbus=False) == {}
    assert list(down(modbus=True)) == [("device-unreachable", "mh1")]


def test_status_offers_replay_only_for_what_can_be_replayed(db):
    with db.connect() as conn:
        for source, topic in (("mqtt", "sewerwatch/acme/ph"), ("mqtt", "spBv1.0/plant/DDATA/mh1/probe"),
                              ("mqtt", "spBv1.0/plant/NDATA/mh1"), ("lab-import", None)):
            conn.execute("INSERT INTO dead_letters (source, topic, payload, reason) VALUES (%s, %s, 'x', 'r')",
                         (source, topic))
        dl = deadletters.summary(conn)
    assert (dl["replayable"], dl["sparkplug"]) == (1, 2)
    assert replay_hint(dl) == ("; 'deadletters replay' stores the 1 MQTT one after the config is fixed; 2 Sparkplug "
                               "B: not replayable, the edge node's rebirth sends its values again; 1 lab-import: "
                               "import the corrected file")
    with db.connect() as conn:
        conn.execute("DELETE FROM dead_letters WHERE topic = 'sewerwatch/acme/ph'")
        assert "replay' stores" not in replay_hint(deadletters.summary(conn))
