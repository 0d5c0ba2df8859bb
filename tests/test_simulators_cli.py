"""``sewerwatch simulate``: what it prints, and one-line errors for bad input."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.test_simulators_modbus import MBPOLL, free_ports, values


def sw(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "sewerwatch", "simulate", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args,msg", [
    (["--scenario", "nope", "--no-mqtt"], "unknown scenario 'nope' (known: acid-dump"),
    (["--profile", "nope", "--no-mqtt"], "unknown device profile 'nope'"),
    (["--devices", "0", "--no-mqtt"], "--devices: expected at least 1, got 0"),
    (["--speed", "-1", "--no-mqtt"], "--speed: expected 0 or more"),
    (["--offset", "noon", "--no-mqtt"], "--offset: expected seconds or HH:MM[:SS], got 'noon'"),
    (["--no-mqtt", "--no-modbus"], "leave nothing to simulate"),
    (["--no-modbus", "--mqtt-url", "http://x"], "--mqtt-url: expected mqtt://"),
    (["--replay", "/nonexistent.csv", "--no-mqtt"], "/nonexistent.csv: no such replay file"),
    (["--sites", "Bad Site", "--no-mqtt"], "--sites: expected short lowercase site ids"),
    (["--tick", "0", "--no-mqtt"], "--tick: expected a positive number"),
    (["--start", "2026-06-01T00:00", "--no-mqtt"], "--start: expected 'now', 'scenario' or a date-time with its UTC "
                                                   "offset (e.g. 2026-06-01T00:00-05:00), got '2026-06-01T00:00'"),
    (["--speed", "60", "--no-modbus", "--mqtt-url", "mqtt://127.0.0.1:1"],
     "--speed 60 with --start now would stamp MQTT readings ahead of the present"),
    (["--no-modbus", "--mqtt-url", "mqtt://127.0.0.1:1", "--mqtt-unit", "ph=degF"], "--mqtt-unit: unknown unit 'degF' for ph"),
])
def test_bad_input_is_one_line_exit_2(args, msg):
    r = sw(*args, "--duration", "1", "--modbus-port", str(free_ports()))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sewerwatch: error: ") and msg in lines[0]


def test_port_in_use_is_a_one_line_error():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        r = sw("--no-mqtt", "--duration", "1", "--modbus-port", str(s.getsockname()[1]))
    finally:
        s.close()
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sewerwatch: error: cannot serve Modbus TCP on 127.0.0.1:") and "--modbus-port" in lines[0]


def test_list_names_scenarios_and_profiles():
    r = sw("--list")
    assert r.returncode == 0
    names = re.findall(r"^(scenario|profile) (\S+):", r.stdout, re.M)
    assert ("scenario", "acid-dump") in names and ("profile", "swapped-float") in names


def test_modbus_only_prints_where_and_serves_a_replay(tmp_path):
    csv = tmp_path / "r.csv"
    csv.write_text("time,site,parameter,value,unit\n"
                   "2026-06-01T10:00:00+00:00,acme,ph,7.25,pH\n"
                   "2026-06-01T10:00:00+00:00,acme,temperature,20.0,degC\n"
                   "2026-06-01T10:00:00+00:00,acme,flow,1.0,mgd\n"
                   "2026-06-01T10:00:00+00:00,beta,ph,3.5,pH\n")
    port = free_ports()
    p = subprocess.Popen([sys.executable, "-m", "sewerwatch", "simulate", "--replay", str(csv), "--no-mqtt",
                          "--speed", "0", "--duration", "20", "--modbus-port", str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline()
        assert first.startswith(f"simulating 2 device(s): replay of {csv}, speed 0x, for 20 s")
        assert p.stdout.readline().startswith(f"modbus: tcp://127.0.0.1:{port} unit ids 1-2 profile generic-manhole")
        if os.path.exists(MBPOLL):
            got = values(subprocess.run([MBPOLL, "-m", "tcp", "-a", "1", "-0", "-r", "0", "-c", "3", "-t", "4:float",
                                         "-B", "-1", "-p", str(port), "127.0.0.1"],
                                        capture_output=True, text=True, timeout=30).stdout)
            # the profile's units: 1 mgd = 694.44 gpm, 20 degC = 68 degF
            assert float(got[0]) == pytest.approx(1e6 / 1440, rel=1e-5)
            assert float(got[2]) == pytest.approx(7.25, rel=1e-6)
            assert float(got[4]) == pytest.approx(68.0, rel=1e-6)
    finally:
        p.terminate()
        p.wait(10)


def test_offset_past_the_scenario_is_refused():
    from foundation.errors import InputError
    from simulators.options import parse_offset

    assert parse_offset("23:59", 86400) == 86340 and parse_offset("90", 86400) == 90
    for bad in ("25:00", "24:00", "86400"):
        with pytest.raises(InputError, match="past the end of the scenario, which spans 24:00"):
            parse_offset(bad, 86400)
    with pytest.raises(InputError, match="0 or more seconds"):
        parse_offset("-5")


def test_a_scenario_plays_at_the_present_unless_given_its_start():
    """``--start now`` (the default): the point ``--offset`` into the scenario is the present;
    ``--start scenario``: the file's own day; a date-time: that."""
    import time

    from simulators import scenarios
    from simulators.options import parse_start

    scn = scenarios.load("acid-dump")
    now = time.time()
    assert parse_start("now", scn.start, 10 * 3600, now=now) == int(now) - 36000
    assert parse_start("scenario", scn.start, 36000) == scn.start
    assert parse_start("2026-12-04T08:00:00-06:00", scn.start, 0) == 1796392800.0
    r = sw("--scenario", "acid-dump", "--offset", "10:25", "--no-mqtt", "--duration", "0", "--modbus-port",
           str(free_ports()))
    assert r.returncode == 0, r.stderr
    shown = re.search(r"from (\S+)$", r.stdout.splitlines()[0]).group(1)
    import datetime as dt
    assert abs(dt.datetime.fromisoformat(shown).timestamp() - time.time()) < 30
