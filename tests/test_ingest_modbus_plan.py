"""The Modbus read planner and the collector's config, without sockets."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest import profiles
from ingest.modbus import collector as mc
from ingest.modbus.plan import MAX_READ_REGISTERS, Request, merge_cells, plan
from foundation.errors import ConfigError, InputError

SAMPLE = Path(__file__).resolve().parents[1] / "ingest" / "modbus" / "sample.toml"


def covered(cells, requests):
    """Each cell lies wholly inside exactly one request."""
    for a, w in cells:
        inside = [r for r in requests if r[0] <= a and a + w <= r[0] + r[1]]
        assert len(inside) == 1, (a, w, requests)


def test_touching_fields_merge_into_one_request():
    assert merge_cells([(0, 2), (2, 2), (4, 2), (6, 1)], max_fill=0) == [(0, 7)]


def test_gap_within_fill_is_read_beyond_it_splits():
    cells = [(100, 2), (102, 2), (104, 2), (110, 1)]
    assert merge_cells(cells, max_fill=4) == [(100, 11)]
    assert merge_cells(cells, max_fill=3) == [(100, 6), (110, 1)]
    assert merge_cells(cells, max_fill=0) == [(100, 6), (110, 1)]


def test_span_over_125_registers_splits_without_cutting_a_value():
    # float32 values every 2 registers from 0 to 300: one span of 300 registers
    cells = [(a, 2) for a in range(0, 300, 2)]
    reqs = merge_cells(cells, max_fill=0)
    assert all(c <= MAX_READ_REGISTERS for _, c in reqs)
    assert len(reqs) == 3  # ceil(300 / 124): 124 is the largest even count <= 125
    covered(cells, reqs)
    # an odd-aligned float32 straddling register 125 moves wholly to the next request
    reqs = merge_cells([(0, 1), (124, 2)], max_fill=200)
    assert reqs == [(0, 1), (124, 2)]


def test_overlapping_and_unsorted_cells():
    assert merge_cells([(10, 2), (0, 2), (1, 2), (10, 1)], max_fill=0) == [(0, 3), (10, 2)]


@pytest.mark.parametrize("cells, problem", [
    ([(0, 0)], "width 0"),
    ([(0, 126)], "width 126"),
    ([(65535, 2)], "outside"),
    ([(-1, 1)], "outside"),
])
def test_bad_cells_are_errors(cells, problem):
    with pytest.raises(InputError, match=problem):
        merge_cells(cells)


def test_bad_limits_are_errors():
    with pytest.raises(InputError, match="max_count"):
        merge_cells([(0, 1)], max_count=126)
    with pytest.raises(InputError, match="max_fill"):
        merge_cells([(0, 1)], max_fill=-1)


def layout(gaps_widths):
    """Non-overlapping cells (profiles reject fields sharing a register) from (gap, width) pairs."""
    cells, a = [], 0
    for gap, width in gaps_widths:
        a += gap
        cells.append((a, width))
        a += width
    return cells


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.sampled_from([1, 2])), min_size=1, max_size=60)
       .map(layout).flatmap(st.permutations),
       st.integers(0, 40), st.integers(2, 125))
def test_plan_properties(cells, max_fill, max_count):
    reqs = merge_cells(cells, max_fill, max_count)
    assert all(1 <= c <= max_count for _, c in reqs)
    covered(cells, reqs)
    # in address order, disjoint, and no two neighbours could have been one request
    for (a0, c0), (a1, c1) in zip(reqs, reqs[1:]):
        assert a0 + c0 <= a1
        assert a1 - (a0 + c0) > max_fill or (a1 + c1) - a0 > max_count
    # every request starts and ends on a cell: no register read for nothing at the edges
    starts = {a for a, _ in cells}
    ends = {a + w for a, w in cells}
    assert all(a in starts and a + c in ends for a, c in reqs)


@pytest.mark.parametrize("name, fill, expected", [
    ("generic-manhole", 16, [Request("holding", 0, 7, 0)]),
    ("little-endian-float", 16, [Request("holding", 100, 11, 0)]),
    ("little-endian-float", 0, [Request("holding", 100, 6, 0), Request("holding", 110, 1, 10)]),
    ("scaled-int16", 0, [Request("holding", 0, 6, 0)]),
    ("swapped-float", 0, [Request("input", 0, 9, 0)]),
])
def test_plans_of_shipped_profiles(name, fill, expected):
    assert list(plan(profiles.load(name), fill)) == expected


def test_every_shipped_profile_is_planned_within_the_limit():
    for name in profiles.names():
        prof = profiles.load(name)
        reqs = plan(prof)
        assert reqs and all(r.count <= MAX_READ_REGISTERS for r in reqs)
        # the requests land inside the blocks decode_tables reads
        for r in reqs:
            start, count = prof.span(r.table)
            assert r.offset == r.address - start and r.offset + r.count <= count
        assert reqs[0].function_code in (3, 4)


def test_sample_config_loads():
    cfg, options = mc.load_config(SAMPLE)
    assert [d.id for d in cfg.devices] == ["sausage-mh1", "plating-mh1"]
    assert options.timeout_s == 1.0 and options.max_fill == 16
    smap = mc.standalone_sensor_map(cfg)
    assert smap[("sausage-mh1", "flow")] == 1 and smap[("plating-mh1", "ph")] == 4


@pytest.mark.parametrize("table, key, problem", [
    ("timeout_s = 0", "modbus.timeout_s", "positive"),
    ("max_fill = 125", "modbus.max_fill", "0 to 124"),
    ("late_fraction = 1.5", "modbus.late_fraction", "between 0 and 1"),
    ("retries = 3", "modbus.retries", "unknown key"),
    ("backoff_min_s = 5\nbackoff_max_s = 1", "modbus.backoff_max_s", "less than"),
])
def test_bad_options_name_the_key(tmp_path, table, key, problem):
    rest = SAMPLE.read_text()
    text = f"[modbus]\n{table}\n\n" + rest[rest.index("[[sites]]"):]
    p = tmp_path / "c.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=problem) as exc:
        mc.load_config(p)
    assert f"{p}: {key}:" in str(exc.value)


def test_main_reports_a_bad_config_in_one_line(tmp_path, capsys):
    p = tmp_path / "c.toml"
    p.write_text("[[sites]]\nid = 'a'\nname = 'A'\n")
    assert mc.main([str(p), "--duration", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"sewerwatch: error: {p}: devices: no [[devices]] to poll"]


def test_sensor_map_must_name_polled_devices_and_profile_fields():
    from ingest.sink import Sink
    from foundation.config import Device

    devs = [Device("mh1", "a", "127.0.0.1", 15020, 1, "generic-manhole", 1.0)]
    with pytest.raises(InputError, match=r"sensor map: mh1/level: profile 'generic-manhole' has no field 'level'"):
        mc.ModbusCollector(devs, {("mh1", "level"): 1}, Sink())
    with pytest.raises(InputError, match=r"sensor map: mh9/ph: no such Modbus device \(devices: mh1\)"):
        mc.ModbusCollector(devs, {("mh9", "ph"): 1}, Sink())
    with pytest.raises(InputError, match="sensor id -1"):
        mc.ModbusCollector(devs, {("mh1", "ph"): -1}, Sink())
    with pytest.raises(InputError, match="device id 'mh1' appears twice"):
        mc.ModbusCollector(devs * 2, {}, Sink())
    col = mc.ModbusCollector(devs, {("mh1", "ph"): 7}, Sink())
    assert list(col.groups["generic-manhole"].sensor_ids) == ["ph"]


def test_sensor_map_from_sensors_rows():
    rows = [(3, "modbus:mh1/ph"), (4, "mqtt:sewerwatch/a/ph"), (5, "modbus:mh-2/flow")]
    assert mc.sensor_map_from_rows(rows) == {("mh1", "ph"): 3, ("mh-2", "flow"): 5}
    with pytest.raises(InputError, match=r"sensor 9: address 'modbus:mh1': expected modbus:<device>/<field>"):
        mc.sensor_map_from_rows([(9, "modbus:mh1")])
