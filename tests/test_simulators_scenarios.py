"""Scenarios produce the events they claim, read back from generate(); same seed, same readings."""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest

import simulators
from foundation.errors import InputError
from simulators import scenarios
from simulators.sources import ReplaySource, ScenarioSource

N = 4


def day(name, step_s=1.0, devices=N, **kw):
    return simulators.generate(name, step_s=step_s, devices=devices, **kw)


def window(series, event, pad_s=0.0):
    t = series.times
    return (t >= event["start"] - pad_s) & (t < event["end"] + pad_s)


def only_event(series, kind, parameter=None):
    evs = [e for e in series.events if e["kind"] == kind and (parameter is None or e["parameter"] == parameter)]
    assert len(evs) == 1, series.events
    return evs[0]


def test_every_shipped_scenario_loads():
    names = scenarios.names()
    for want in ("normal-day", "acid-dump", "caustic", "hot-discharge", "slug", "sensor-faults", "bad-payloads"):
        assert want in names
    for n in names:
        s = scenarios.load(n)
        assert s.name == n and s.description and s.duration_s in (86400, 172800)


def test_normal_day_stays_inside_the_limits():
    s = day("normal-day", step_s=10.0)
    assert s.events == []
    ph, temp, flow = s.values["ph"], s.values["temperature"], s.values["flow"]
    assert 6.0 < ph.min() and ph.max() < 9.0            # palmyra-wi §13.48(2)(g) range
    assert temp.max() < 104.0                             # webster-wi §240-5
    assert not np.isnan(flow).any() and (flow > 0).all()
    assert not s.silent.any() and not s.modbus_error.any() and not s.payload.any()


@pytest.mark.parametrize("name,parameter,value,tol,normal", [
    ("acid-dump", "ph", 3.5, 0.1, (6.0, 9.0)),
    ("caustic", "ph", 11.0, 0.1, (6.0, 9.0)),
    ("hot-discharge", "temperature", 170.0, 0.3, (40.0, 104.0)),
])
def test_set_events(name, parameter, value, tol, normal):
    s = day(name)
    ev = only_event(s, "set", parameter)
    inside = window(s, ev)
    v = s.values[parameter]
    assert inside.sum() == ev["end"] - ev["start"]              # the claimed duration, at 1 s
    assert np.abs(v[:, inside] - value).max() < tol             # every device, every second
    outside = ~window(s, ev, pad_s=600)                         # ramps end within ramp_s
    assert normal[0] < v[:, outside].min() and v[:, outside].max() < normal[1]


def test_acid_dump_lasts_30_minutes():
    s = day("acid-dump")
    ev = only_event(s, "set", "ph")
    assert ev["end"] - ev["start"] == 1800
    below = (s.values["ph"] < 5.0).sum(axis=1)                  # under webster-wi §240-5 minimum
    assert ((below >= 1800) & (below < 1800 + 120)).all()


def test_slug_is_above_five_times_the_24h_average_for_more_than_15_minutes():
    s = day("slug")
    ev = only_event(s, "scale", "flow")
    flow = s.values["flow"]
    start = np.searchsorted(s.times, ev["start"])
    assert start >= 86400                                   # a full day of history before it
    for i in range(N):
        # trailing 24-h average at the end of the slug (1-s samples: the plain mean)
        end = np.searchsorted(s.times, ev["end"])
        avg24 = flow[i, end - 86400:end].mean()
        above = flow[i] > 5 * avg24
        # longest run above 5 x the daily average
        runs = np.diff(np.flatnonzero(np.diff(np.r_[0, above.astype(int), 0])))[::2]
        assert runs.max() > 15 * 60 and runs.max() <= 25 * 60 + 120
        assert above[window(s, ev)].mean() > 0.99
        assert flow[i, ~window(s, ev, pad_s=300)].max() < 3 * avg24
    # the flume level rises with the slug
    lvl = s.values["level"]
    assert (lvl[:, window(s, ev)].mean(axis=1) > 2 * lvl.mean(axis=1)).all()


def test_sensor_faults():
    scn = scenarios.load("sensor-faults")
    s = day("sensor-faults")
    clean = simulators.generate(dataclasses.replace(scn, events=()), step_s=1.0, devices=N)
    # flatline: pH frozen at its value at the start, exactly
    ev = only_event(s, "flatline", "ph")
    w = window(s, ev)
    ph = s.values["ph"][:, w]
    assert (ph == ph[:, :1]).all() and ph[:, 0].tolist() == clean.values["ph"][:, w][:, 0].tolist()
    assert (clean.values["ph"][:, w].std(axis=1) > 0.01).all()
    # drift: temperature departs from the clean reading at 3 degF per hour
    ev = only_event(s, "drift", "temperature")
    w = window(s, ev)
    d = s.values["temperature"][:, w] - clean.values["temperature"][:, w]
    np.testing.assert_allclose(d, np.broadcast_to(3.0 * (s.times[w] - ev["start"]) / 3600.0, d.shape), atol=1e-9)
    assert d[:, -1].min() > 5.9
    # spikes: +-400 gpm on about 60 seconds an hour
    ev = only_event(s, "spikes", "flow")
    w = window(s, ev)
    jump = np.abs(s.values["flow"][:, w] - clean.values["flow"][:, w])
    hits = np.isclose(jump, 400.0)
    assert ((hits | (jump < 1e-9)).all())
    assert (hits.sum(axis=1) > 35).all() and (hits.sum(axis=1) < 90).all()
    assert np.abs(s.values["flow"][:, ~w] - clean.values["flow"][:, ~w]).max() == 0
    # dropout: no pH reading and the fault flag, only in the window
    ev = only_event(s, "dropout", "ph")
    w = window(s, ev)
    assert np.isnan(s.values["ph"][:, w]).all() and s.faults["ph"][:, w].all()
    assert not np.isnan(s.values["ph"][:, ~w]).any() and not s.faults["ph"][:, ~w].any()
    # comms loss and Modbus exception replies
    ev = only_event(s, "comms_loss")
    assert s.silent[:, window(s, ev)].all() and s.silent.sum() == N * 15 * 60
    codes = sorted({int(c) for c in np.unique(s.modbus_error)})
    assert codes == [0, 2, 6]
    busy = [e for e in s.events if e["kind"] == "modbus_error"][0]
    assert (s.modbus_error[:, window(s, busy)] == 6).all()


def test_bad_payload_windows():
    s = day("bad-payloads", step_s=5.0)
    evs = [e for e in s.events if e["kind"] == "bad_payload"]
    assert len(evs) == 4
    for code, ev in zip((1, 2, 3, 4), evs):
        w = window(s, ev)
        assert (s.payload[:, :, w] == code).all()
    assert s.payload.astype(bool).sum() == N * 4 * 4 * 600 // 5


def test_same_seed_same_readings_and_seed_matters():
    a = day("acid-dump", step_s=30.0)
    b = day("acid-dump", step_s=30.0)
    for k in a.values:
        np.testing.assert_array_equal(a.values[k], b.values[k])
    c = day("acid-dump", step_s=30.0, seed=99)
    assert not np.allclose(a.values["ph"], c.values["ph"])
    # a device's readings depend neither on the other devices nor on the sampling grid
    one = simulators.generate("acid-dump", step_s=1.0, devices=[2], duration_s=3600,
                              start=scenarios.load("acid-dump").start + 10 * 3600)
    np.testing.assert_array_equal(one.values["ph"][0, ::30],
                                  a.values["ph"][2, 1200:1320])


def test_live_sample_equals_batch():
    src = ScenarioSource(scenarios.load("hot-discharge"), 6)
    t = src.start + 9.5 * 3600
    snap = src.sample(t)
    s = simulators.generate("hot-discharge", start=t, duration_s=1, step_s=1, devices=6)
    for k in ("flow", "ph", "temperature", "level"):
        np.testing.assert_array_equal(snap.values[k], s.values[k][:, 0])
    r = src.readings(t - 10, t, 1.0)
    assert {x.sensor for x in r} == {"flow", "ph", "temperature"} and all(len(x.times) == 10 for x in r)


def test_to_csv_long_format(tmp_path):
    s = simulators.generate("acid-dump", step_s=600, devices=2)
    path = tmp_path / "r.csv"
    n = s.to_csv(path)
    rows = list(csv.DictReader(open(path)))
    assert n == len(rows) == 2 * 3 * 144
    assert rows[0].keys() == {"time", "site", "parameter", "value", "unit"}
    assert rows[0]["time"].endswith("+00:00") and rows[0]["site"] == "site-001"
    assert {r["unit"] for r in rows} == {"gpm", "pH", "degF"}
    # the replay source plays it back
    rep = ReplaySource(path)
    assert rep.sites == ("site-001", "site-002")
    t = s.times[70] + 1
    np.testing.assert_allclose(rep.sample(t).values["ph"], np.round(s.values["ph"][:, 70], 4))
    got = rep.readings(s.times[10] - 1, s.times[12], 0)
    assert sorted((x.device, x.sensor, len(x.times)) for x in got) == sorted(
        (d, p, 3) for d in (0, 1) for p in ("flow", "ph", "temperature"))


@pytest.mark.parametrize("text,msg", [
    ('name = "x"\n[[events]]\nkind = "explode"\nat = "01:00"\nminutes = 5\n', "events[0].kind: expected one of set"),
    ('name = "x"\n[[events]]\nkind = "set"\nparameter = "ph"\nvalue = 3\nat = "1 pm"\nminutes = 5\n', "events[0].at"),
    ('name = "x"\n[[events]]\nkind = "set"\nparameter = "ph"\nvalue = 3\nat = "01:00"\n', "exactly one of minutes or seconds"),
    ('name = "x"\n[[events]]\nkind = "modbus_error"\ncode = "oops"\nat = "01:00"\nminutes = 1\n', "events[0].code"),
    ('name = "x"\n[devices]\nthroat_in = 5\n', "devices.throat_in: expected a standard Parshall throat"),
    ('name = "x"\nstart = 2026-01-01T00:00:00\n', "start: expected a TOML date-time with a UTC offset"),
])
def test_bad_scenario_files(tmp_path, text, msg):
    f = tmp_path / "s.toml"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        scenarios.load_file(f)
    assert str(f) in str(exc.value) and msg in str(exc.value)


def test_replay_rejects_bad_rows(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("time,site,parameter,value,unit\n2026-06-01T00:00:00+00:00,a,ph,7.1,pH\n2026-06-01T00:01:00,a,ph,7.2,pH\n")
    with pytest.raises(InputError, match=r"r.csv:3: time .* has no UTC offset"):
        ReplaySource(f)
    f.write_text("time,site,parameter,value,unit\n2026-06-01T00:00:00+00:00,a,ph,7.1,furlong\n")
    with pytest.raises(InputError, match="unknown unit 'furlong' for ph"):
        ReplaySource(f)
    with pytest.raises(InputError, match="unknown scenario 'nope'"):
        simulators.generate("nope")


def test_meter_variants_direct_and_throat_width(tmp_path):
    base = 'name = "m"\nstart = 2026-06-01T00:00:00-05:00\nduration_s = 7200\nseed = 11\n'
    f = tmp_path / "direct.toml"
    f.write_text(base + '[devices]\nmeter = "direct"\nflow_mean_gpm = 300\n')
    direct = simulators.generate(scenarios.load_file(f), step_s=1.0, devices=3)
    assert np.isnan(direct.values["level"]).all()               # a direct meter has no head
    f3, f12 = tmp_path / "t3.toml", tmp_path / "t12.toml"
    f3.write_text(base + "[devices]\nthroat_in = 3\nflow_mean_gpm = 300\n")
    f12.write_text(base + "[devices]\nthroat_in = 12\nflow_mean_gpm = 300\n")
    s3 = simulators.generate(scenarios.load_file(f3), step_s=1.0, devices=3)
    s12 = simulators.generate(scenarios.load_file(f12), step_s=1.0, devices=3)
    # same discharge, narrower throat: higher head; both convert back with their own Q = C H^n
    assert (s3.values["level"].mean(axis=1) > 1.5 * s12.values["level"].mean(axis=1)).all()
    np.testing.assert_allclose(s3.values["flow"].mean(axis=1), s12.values["flow"].mean(axis=1), rtol=0.01)
    np.testing.assert_allclose(direct.values["flow"].mean(axis=1), s12.values["flow"].mean(axis=1), rtol=0.01)
    # noise: the direct meter's is multiplicative (1.5 %); the flume's comes from the level sensor
    rel = np.diff(direct.values["flow"], axis=1) / direct.values["flow"][:, 1:]
    assert 0.013 < rel.std() / np.sqrt(2) < 0.017


@pytest.mark.parametrize("name,rule", [
    ("acid-dump", "ph-min"), ("caustic", "ph-max"), ("hot-discharge", "temperature-max"), ("slug", "slug"),
    ("normal-day", None),
])
def test_sewerwatch_check_finds_the_claimed_violation(tmp_path, name, rule):
    """Read back through the project's evaluator (``sewerwatch check``, palmyra-wi pack)."""
    import json
    import subprocess
    import sys

    s = simulators.generate(name, step_s=60.0, devices=2)
    path = tmp_path / f"{name}.csv"
    s.to_csv(path)
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "check", "--pack", "palmyra-wi", "--readings",
                        str(path), "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    if rule is None:
        assert found == []
        return
    ev = [e for e in s.events if e["kind"] in ("set", "scale")][0]
    assert sorted({v["site"] for v in found}) == ["site-001", "site-002"]
    assert {v["rule"] for v in found} == {rule}
    import datetime as dt
    for v in found:
        start = dt.datetime.fromisoformat(v["start"].replace("Z", "+00:00")).timestamp()
        end = dt.datetime.fromisoformat(v["end"].replace("Z", "+00:00")).timestamp()
        assert ev["start"] - 300 <= start <= ev["start"] + 900 and ev["end"] - 900 <= end <= ev["end"] + 300
