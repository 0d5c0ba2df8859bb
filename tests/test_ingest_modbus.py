"""The Modbus collector against the real simulator over real TCP sockets (no mocks)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ingest import profiles
from ingest.batch import DEVICE_FAULT, GOOD, OUT_OF_RANGE, Readings
from ingest.modbus.collector import ModbusCollector, Options, sensor_map_from_rows
from ingest.sink import Sink
from foundation.units import CONVERSIONS
from foundation.config import Device
from simulators import scenarios
from simulators.modbus_server import ModbusSimulator
from simulators.sources import ScenarioSource, SimClock

from sewerwatch.services.scratch import free_port

ROOT = Path(__file__).resolve().parents[1]
FAST = Options(timeout_s=0.3, backoff_min_s=0.1, backoff_max_s=2.0, flush_s=0.2, health_s=0.2)


def simulator(profile: str, n: int, port: int, scenario: str = "normal-day", offset_s: float = 0.0):
    """A simulator with a frozen clock: every read returns the same, known registers."""
    src = ScenarioSource(scenarios.load(scenario), n)
    return ModbusSimulator(src, profiles.load(profile), SimClock(src.start, 0.0, offset_s),
                           "127.0.0.1", port, tick_s=3600.0)


def devices(n: int, port: int, profile: str, interval_s: float = 0.1) -> list[Device]:
    return [Device(f"dev{i}", "site-a", "127.0.0.1", port, i + 1, profile, interval_s) for i in range(n)]


def sensor_map(devs, profile: str) -> dict:
    prof = profiles.load(profile)
    return {(d.id, f.name): 1000 * i + j for i, d in enumerate(devs) for j, f in enumerate(prof.fields)}


def drain(sink: Sink) -> tuple[Readings, list[dict]]:
    sink.close()
    parts, health = [], []
    while (chunk := sink.take(max_delay=0)) is not None:
        parts.append(chunk.readings)
        health.extend(chunk.health)
    return Readings.concat(parts), health


async def run_for(collector: ModbusCollector, seconds: float) -> None:
    task = asyncio.create_task(collector.run())
    await asyncio.sleep(seconds)
    collector.stop()
    await task


def poll(sim_profile: str, n: int, seconds: float, *, scenario: str = "normal-day", offset_s: float = 0.0,
         profile: str | None = None, interval_s: float = 0.1):
    """Serve ``n`` devices from a frozen simulator of ``sim_profile`` (``scenario`` at
    ``offset_s``) and poll them for ``seconds`` with ``profile`` (default the same).

    Returns
    -------
    (simulator, collector, sink)
    """
    port, profile = free_port(), profile or sim_profile

    async def go():
        sim = simulator(sim_profile, n, port, scenario, offset_s)
        await sim.start()
        sink = Sink()
        devs = devices(n, port, profile, interval_s)
        col = ModbusCollector(devs, sensor_map(devs, profile), sink, FAST)
        try:
            await run_for(col, seconds)
        finally:
            await sim.stop()
        return sim, col, sink

    return asyncio.run(go())


def check_served_values(profile: str, n: int = 3, seconds: float = 0.8) -> tuple:
    """Poll ``n`` devices of a frozen simulator; every reading equals the value it serves."""
    prof = profiles.load(profile)
    sim, col, sink = poll(profile, n, seconds)
    readings, _ = drain(sink)
    snap = sim.source.sample(sim.sim_time)
    polls = sum(h.polls for h in col.health().values())
    assert polls >= 3 * n
    for i in range(n):
        for j, f in enumerate(prof.fields):
            got = readings.value[readings.sensor_id == 1000 * i + j]
            assert len(got) == col.health()[f"dev{i}"].polls
            expected = snap.values[f.name if f.name in snap.values else f.parameter][i]
            if f.type == "float32":
                np.testing.assert_allclose(got, expected, rtol=1e-6)
            else:  # one raw step of the scaled integer, in the canonical unit
                step = abs(f.scale) * CONVERSIONS[f.parameter][f.unit][0]
                np.testing.assert_allclose(got, expected, atol=step / 2 + 1e-9)
    assert (readings.quality == GOOD).all()
    return sim, polls


@pytest.mark.parametrize("profile", profiles.names())
def test_values_decoded_equal_what_the_simulator_serves(profile):
    sim, polls = check_served_values(profile)
    # one request per poll on the wire: every shipped profile fits one merged read (a
    # request cut off by the stop has no finished poll)
    assert polls <= sim.requests <= polls + 3


@pytest.mark.parametrize("order", ["ABCD", "CDAB", "BADC", "DCBA"])
def test_float32_in_every_word_order(tmp_path, order):
    text = (ROOT / "ingest" / "profiles" / "generic-manhole.toml").read_text()
    assert text.count('word_order = "ABCD"') == 3
    path = tmp_path / f"order-{order}.toml"
    path.write_text(text.replace('word_order = "ABCD"', f'word_order = "{order}"'))
    check_served_values(str(path), n=2, seconds=0.5)


def test_span_over_125_registers_is_read_in_two_requests(tmp_path):
    # 66 float32 fields at 0..131: 132 registers, more than one request may carry
    path = tmp_path / "wide.toml"
    path.write_text('name = "wide"\n' + "".join(
        f'[[fields]]\nname = "f{k}"\nparameter = "flow"\nunit = "gpm"\naddress = {2 * k}\ntype = "float32"\n'
        for k in range(66)))
    sim, polls = check_served_values(str(path), n=2, seconds=0.5)
    assert 2 * polls <= sim.requests <= 2 * polls + 2


def test_status_bit_and_nan_give_device_fault_and_are_kept():
    # sensor-faults: pH drops out at 09:00 (NaN on the wire and its status bit set)
    _, _, sink = poll("generic-manhole", 2, 0.5, scenario="sensor-faults", offset_s=9 * 3600 + 60)
    readings, _ = drain(sink)
    ph = np.isin(readings.sensor_id, [1, 1001])
    assert ph.sum() >= 2
    assert (readings.quality[ph] == DEVICE_FAULT).all() and np.isnan(readings.value[ph]).all()
    assert (readings.quality[~ph] == GOOD).all() and np.isfinite(readings.value[~ph]).all()


def test_impossible_ph_is_out_of_range_and_kept(tmp_path):
    # The simulator serves scaled-int16; a collector that mis-reads pH as x0.1 instead of
    # x0.01 sees pH 70: physically impossible, flagged OUT_OF_RANGE, stored anyway.
    text = (ROOT / "ingest" / "profiles" / "scaled-int16.toml").read_text()
    text = text.replace('name = "scaled-int16"', 'name = "misread"').replace(
        "address = 1\ntype = \"int16\"\nscale = 0.01", "address = 1\ntype = \"int16\"\nscale = 0.1")
    assert "scale = 0.1\ninvalid = -32768\n\n[[fields]]\nname = \"temperature\"" in text
    path = tmp_path / "misread.toml"
    path.write_text(text)

    sim, _, sink = poll("scaled-int16", 1, 0.4, profile=str(path))
    readings, _ = drain(sink)
    ph = readings.sensor_id == 1
    assert ph.any()
    assert (readings.value[ph] > 14).all() and (readings.quality[ph] == OUT_OF_RANGE).all()
    assert (readings.quality[~ph] == GOOD).all()


@pytest.mark.parametrize("offset_s, code", [(13 * 3600 + 60, 6), (13.5 * 3600 + 60, 2)])
def test_scenario_exception_replies_are_not_transport_errors(offset_s, code):
    _, col, sink = poll("generic-manhole", 2, 0.6, scenario="sensor-faults", offset_s=offset_s)
    readings, health = drain(sink)
    assert len(readings) == 0
    for dev, h in col.health().items():
        assert h.polls >= 3
        assert h.exception_replies == h.polls
        assert h.transport_errors == 0 and h.reconnects == 0
        assert h.last_good_us is None
        assert h.last_error.startswith(f"exception reply {code:02X}")
    snaps = [r for r in health if r["kind"] == "snapshot"]
    assert snaps and all(r["exception_replies"] >= 1 and r["transport_errors"] == 0 for r in snaps)
    assert not [r for r in health if r["kind"] == "outage"]


def test_read_of_an_illegal_address_is_an_exception_reply(tmp_path):
    # a profile with one more field, at an address the simulated device does not have
    text = (ROOT / "ingest" / "profiles" / "generic-manhole.toml").read_text()
    text = text.replace('name = "generic-manhole"', 'name = "with-extra"') + (
        '\n[[fields]]\nname = "level"\nparameter = "level"\nunit = "ft"\nregister = "holding"\n'
        'address = 300\ntype = "float32"\n')
    path = tmp_path / "with-extra.toml"
    path.write_text(text)

    h = poll("generic-manhole", 1, 0.5, profile=str(path))[1].health()["dev0"]
    assert h.polls >= 2 and h.exception_replies == h.polls and h.transport_errors == 0
    assert "exception reply 02 (illegal data address) to function 03 at 300" in h.last_error
    assert h.state == "up"


async def _outage_run(sink: Sink, port: int, smap: dict | None = None, down_s: float = 2.0):
    """Poll one device, stop its server for ``down_s``, start it again; returns times [µs]."""
    profile = "generic-manhole"
    sim = simulator(profile, 1, port)
    await sim.start()
    devs = devices(1, port, profile)
    col = ModbusCollector(devs, smap or sensor_map(devs, profile), sink, FAST)
    task = asyncio.create_task(col.run())
    try:
        await asyncio.sleep(1.0)
        await sim.stop()
        stopped_us = time.time_ns() // 1000
        await asyncio.sleep(down_s)
        sim = simulator(profile, 1, port)
        await sim.start()
        restarted_us = time.time_ns() // 1000
        # backoff 0.1 s doubling, +20 % jitter: the longest wait after 2 s down is < 2 s
        await asyncio.sleep(2.5)
    finally:
        col.stop()
        await task
        await sim.stop()
    return col, stopped_us, restarted_us


def test_stopped_server_is_reconnected_with_backoff_and_the_outage_recorded():
    sink = Sink()
    col, stopped_us, restarted_us = asyncio.run(_outage_run(sink, free_port()))
    readings, health = drain(sink)
    h = col.health()["dev0"]
    assert h.state == "up" and h.reconnects >= 1
    # polled every 0.1 s, 20 polls fell in the outage; backoff (0.1, 0.2, 0.4, 0.8, 1.6 s)
    # tries only a few times
    assert 1 <= h.transport_errors <= 7
    assert h.missed_polls >= 10
    outages = [r for r in health if r["kind"] == "outage"]
    assert len(outages) == 2
    start, end = outages
    assert start["ended_us"] is None and end["started_us"] == start["started_us"]
    assert stopped_us - 300_000 <= start["started_us"] <= restarted_us
    assert restarted_us <= end["ended_us"] <= restarted_us + 2_500_000
    assert h.outages == [(start["started_us"], end["ended_us"])]
    states = [r["state"] for r in health if r["kind"] == "snapshot"]
    assert "down" in states and states[-1] == "up"
    # the gap is in the readings too: none inside the outage, some on both sides
    t = np.sort(readings.time_us[readings.sensor_id == 0])
    assert (t < start["started_us"]).sum() >= 5 and (t >= end["ended_us"]).sum() >= 3
    assert not ((t > start["started_us"]) & (t < end["ended_us"])).any()
    assert np.diff(t).max() >= 1_900_000


def test_outage_lands_in_device_outages(db, tmp_path):
    from ingest.writer import Writer

    with db.connect() as conn:
        site = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('site-a', 'A', 'palmyra-wi') "
                            "RETURNING id").fetchone()[0]
        ids = [conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) "
                            "VALUES (%s, %s, %s, %s, 'modbus', %s, 0.1) RETURNING id",
                            (site, f.name, f.parameter, f.unit, f"modbus:dev0/{f.name}")).fetchone()[0]
               for f in profiles.load("generic-manhole").fields]
        conn.commit()
    sink = Sink()
    writer = Writer(db.urls["ingest"], sink, tmp_path / "spool").start()

    with db.connect() as conn:
        smap = sensor_map_from_rows(conn.execute("SELECT id, address FROM sensors").fetchall())
    assert smap == {("dev0", f.name): ids[j] for j, f in enumerate(profiles.load("generic-manhole").fields)}
    try:
        col, stopped_us, restarted_us = asyncio.run(_outage_run(sink, free_port(), smap))
    finally:
        writer.stop()
    assert writer.stats.readings_inserted > 0
    with db.connect() as conn:
        rows = conn.execute("SELECT device, extract(epoch FROM started_at), extract(epoch FROM ended_at), reason "
                            "FROM device_outages").fetchall()
        health = conn.execute("SELECT state, reconnects, transport_errors, polls FROM device_health "
                              "WHERE device = 'dev0'").fetchone()
        gap = conn.execute("SELECT max(d) FROM (SELECT extract(epoch FROM time - lag(time) OVER (ORDER BY time)) d "
                           "FROM readings WHERE sensor_id = %s) x", (ids[0],)).fetchone()[0]
    assert len(rows) == 1
    device, started, ended, reason = rows[0]
    assert device == "dev0" and ended is not None and reason
    assert stopped_us / 1e6 - 0.3 <= float(started) <= restarted_us / 1e6 <= float(ended)
    h = col.health()["dev0"]
    assert health == ("up", h.reconnects, h.transport_errors, h.polls)
    assert float(gap) >= float(ended) - float(started) - 0.2


def test_runs_alone_against_the_simulator_process(tmp_path):
    """``python -m simulators.modbus_server`` and the collector's ``main`` end to end."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    sim = subprocess.Popen([sys.executable, "-m", "simulators.modbus_server", "--devices", "2",
                            "--modbus-port", str(port), "--speed", "60", "--duration", "30"],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "modbus: tcp://127.0.0.1" in sim.stdout.readline() + sim.stdout.readline()
        text = (ROOT / "ingest" / "modbus" / "sample.toml").read_text().replace("port = 15020", f"port = {port}")
        cfg = tmp_path / "c.toml"
        cfg.write_text(text)
        out = subprocess.run([sys.executable, "-m", "ingest.modbus.collector", str(cfg), "--duration", "2.5",
                              "--print", "readings"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=60)
    finally:
        sim.kill()
        sim.wait()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    ph = [float(line.split()[2]) for line in lines if " sausage-mh1/ph " in line]
    assert len(ph) >= 2 and all(4 < v < 11 for v in ph)
    assert any(line.startswith("sausage-mh1: state up polls ") for line in lines)
    n = int(lines[-1].split()[1])
    assert n == len([line for line in lines if " q=" in line]) >= 8


def test_silent_device_times_out_as_a_transport_error():
    # sensor-faults: every device stops answering at 11:00 (comms loss, no reply at all)
    _, col, sink = poll("generic-manhole", 2, 1.5, scenario="sensor-faults", offset_s=11 * 3600 + 60)
    readings, health = drain(sink)
    assert len(readings) == 0
    for dev, h in col.health().items():
        assert h.state == "down" and h.last_good_us is None
        assert h.transport_errors >= 2 and h.exception_replies == 0
        assert h.last_error.startswith("no reply from the device at"), h.last_error
        outages = [r for r in health if r["kind"] == "outage" and r["device"] == dev]
        assert len(outages) == 1 and outages[0]["ended_us"] is None


def test_polls_are_staggered_and_health_is_reported_periodically():
    n = 10
    _, _, sink = poll("generic-manhole", n, 1.3, interval_s=1.0)
    readings, health = drain(sink)
    first = np.array([readings.time_us[readings.sensor_id == 1000 * i].min() for i in range(n)])
    gaps = np.diff(first) / 1e6
    # device i starts i/10 of the 1 s interval late
    np.testing.assert_allclose(gaps, 0.1, atol=0.05)
    snaps = [r for r in health if r["kind"] == "snapshot" and r["device"] == "dev0"]
    assert len(snaps) >= 4  # every 0.2 s, plus the state change to up
    assert snaps[-1]["polls"] >= 2 and snaps[-1]["state"] == "up"


def test_a_blocked_loop_counts_missed_polls():
    port, profile = free_port(), "generic-manhole"

    async def go():
        sim = simulator(profile, 1, port)
        await sim.start()
        sink = Sink()
        devs = devices(1, port, profile, interval_s=0.1)
        col = ModbusCollector(devs, sensor_map(devs, profile), sink, FAST)
        task = asyncio.create_task(col.run())
        try:
            await asyncio.sleep(0.5)
            before = col.health()["dev0"].missed_polls
            time.sleep(0.65)  # the loop stalls: six or seven polls fall due meanwhile
            await asyncio.sleep(0.3)
        finally:
            col.stop()
            await task
            await sim.stop()
        return before, col.health()["dev0"]

    before, h = asyncio.run(go())
    # a loaded machine may miss a poll of its own before the stall: the stall's are counted on top
    assert before <= 2
    assert 5 <= h.missed_polls - before <= 9
    assert h.transport_errors == 0


def test_a_full_sink_does_not_block_polling():
    port, profile = free_port(), "generic-manhole"
    sink = Sink(max_readings=1)

    async def go():
        sim = simulator(profile, 1, port)
        await sim.start()
        devs = devices(1, port, profile, interval_s=0.1)
        col = ModbusCollector(devs, sensor_map(devs, profile),
                              sink, Options(timeout_s=0.3, flush_s=0.1, health_s=0.2))
        task = asyncio.create_task(col.run())
        try:
            await asyncio.sleep(1.5)  # nobody drains: the second put waits in a thread
        finally:
            h = col.health()["dev0"]
            polls, missed = h.polls, h.missed_polls
            col.stop()
            # stop's last flush waits for room: drain from another thread
            threading.Thread(target=lambda: [sink.take(max_delay=0.2) for _ in range(20)], daemon=True).start()
            await task
            await sim.stop()
        return polls, missed

    polls, missed = asyncio.run(go())
    # 15 polls are due in the 1.5 s; a collector blocked by the full sink makes one or two and
    # misses the rest. A loaded machine (the suite's other worker) may delay a few: those are
    # not the sink's, so the bounds leave room for them and none for a block.
    assert polls >= 10 and missed <= 3, (polls, missed)


def test_the_maintenance_status_bit_marks_the_readings_and_opens_a_window_once():
    """The ``calibration`` scenario at 09:01, device 0 in its maintenance window
    (bit 15 of generic-manhole's status register), device 1 not: device 0's readings are
    stored with the maintenance code, device 1's are good, and one window start is handed
    over for device 0 (not one per poll), with the sensors it covers."""
    from ingest.batch import MAINTENANCE
    _, col, sink = poll("generic-manhole", 2, 0.6, scenario="calibration", offset_s=9 * 3600 + 60)
    readings, health = drain(sink)
    dev0 = readings.sensor_id < 1000
    assert dev0.sum() >= 6 and (~dev0).sum() >= 6
    assert (readings.quality[dev0] == MAINTENANCE).all()
    assert (readings.quality[~dev0] == GOOD).all()
    windows = [h for h in health if h.get("kind") == "window"]
    assert [(w["state"], w["source"], w["device"], sorted(w["sensor_ids"])) for w in windows] == [
        ("start", "modbus", "dev0", [0, 1, 2])]
