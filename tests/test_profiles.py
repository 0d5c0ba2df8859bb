"""Device profiles and register codecs (ingest/profiles.py, ingest/registers.py).

The codec is checked against ``struct`` (the standard library's packing, an independent
implementation) for every data type and word order.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest import profiles, registers
from foundation.errors import InputError

ORDERS = ("ABCD", "CDAB", "BADC", "DCBA")


def reference_registers(value: float, data_type: str, order: str) -> list[int]:
    """Registers of one raw value by struct: big-endian bytes ABCD, permuted per order."""
    fmt = {"float32": ">f", "int32": ">i", "int16": ">h", "uint16": ">H"}[data_type]
    raw = value if data_type == "float32" else int(value)
    b = struct.pack(fmt, raw)
    if len(b) == 4:
        a, bb, c, d = b
        wire = {"ABCD": [a, bb, c, d], "CDAB": [c, d, a, bb], "BADC": [bb, a, d, c], "DCBA": [d, c, bb, a]}[order]
    else:
        a, bb = b
        wire = [a, bb] if order in ("ABCD", "CDAB") else [bb, a]
    return [wire[i] << 8 | wire[i + 1] for i in range(0, len(wire), 2)]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("data_type,values", [
    ("float32", [0.0, 1.0, -2.5, 7.21, 123456.78, 3.4e38, -1e-30]),
    ("int32", [0, 1, -1, 2_000_000_000, -2_147_483_648, 123456]),
    ("int16", [0, 1, -1, 32767, -32768, 721]),
    ("uint16", [0, 1, 65535, 40000, 721]),
])
def test_encode_matches_struct_for_every_type_and_word_order(data_type, order, values):
    got = registers.encode(np.array(values, dtype=np.float64), data_type, order)
    want = [reference_registers(v, data_type, order) for v in values]
    assert got.dtype == np.uint16
    assert got.tolist() == want
    back = registers.decode(got, data_type, order)
    expect = np.array(values, dtype=np.float32 if data_type == "float32" else np.float64).astype(np.float64)
    np.testing.assert_array_equal(back, expect)


def test_known_generic_manhole_bytes():
    # 7.21 as IEEE-754 float32 is 0x40E6B852: ABCD sends [0x40E6, 0xB852], CDAB [0xB852, 0x40E6]
    assert registers.encode([7.21], "float32", "ABCD").tolist() == [[0x40E6, 0xB852]]
    assert registers.encode([7.21], "float32", "CDAB").tolist() == [[0xB852, 0x40E6]]
    assert registers.encode([7.21], "float32", "BADC").tolist() == [[0xE640, 0x52B8]]
    assert registers.encode([7.21], "float32", "DCBA").tolist() == [[0x52B8, 0xE640]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=20), st.sampled_from(ORDERS))
def test_float32_round_trip(values, order):
    regs = registers.encode(values, "float32", order)
    np.testing.assert_array_equal(registers.decode(regs, "float32", order), np.array(values, dtype=np.float64))


def test_scale_offset_rounding_and_saturation():
    # value = raw * 0.1 - 40: 25.04 -> raw 650.4 -> 650 -> 25.0
    regs = registers.encode([25.04, -40.0, 1e9, -1e9], "int16", "ABCD", scale=0.1, offset=-40.0)
    assert regs[:, 0].astype(np.int16).tolist() == [650, 0, 32767, -32768]
    np.testing.assert_allclose(registers.decode(regs, "int16", "ABCD", 0.1, -40.0), [25.0, -40.0, 3236.7, -3316.8])


def test_nan_encodes_as_invalid_and_decodes_back():
    regs = registers.encode([np.nan, 7.0], "int16", "ABCD", scale=0.01, invalid=-32768)
    assert regs.tolist() == [[0x8000], [700]]
    out = registers.decode(regs, "int16", "ABCD", scale=0.01, invalid=-32768)
    assert math.isnan(out[0]) and out[1] == pytest.approx(7.0)
    f = registers.decode(registers.encode([np.nan], "float32", "CDAB"), "float32", "CDAB")
    assert math.isnan(f[0])


def test_codec_rejects_bad_input():
    with pytest.raises(InputError, match="word order 'ABDC'"):
        registers.encode([1.0], "float32", "ABDC")
    with pytest.raises(InputError, match="data type 'float64'"):
        registers.decode([[1, 2]], "float64")
    with pytest.raises(InputError, match="needs 2 register"):
        registers.decode([[1, 2, 3]], "float32")
    with pytest.raises(InputError, match="0..65535"):
        registers.decode([[70000]], "uint16")


def test_shipped_profiles_load_and_cover_the_word_orders():
    names = profiles.names()
    assert {"generic-manhole", "swapped-float", "scaled-int16"} <= set(names)
    orders, types = set(), set()
    for n in names:
        p = profiles.load(n)
        assert p.name == n
        for f in p.fields:
            orders.add(f.word_order)
            types.add(f.type)
        for table, address, count in p.read_requests():
            assert count <= profiles.MAX_READ_REGISTERS
    assert {"ABCD", "CDAB", "DCBA"} <= orders
    assert {"float32", "int16", "uint16", "int32"} <= types


def test_generic_manhole_is_the_promised_map():
    # DESIGN.md: holding registers from 0: 0-1 flow gpm, 2-3 pH, 4-5 temperature degF, float32 ABCD, 6 status
    p = profiles.load("generic-manhole")
    got = [(f.name, f.register, f.address, f.type, f.word_order, f.unit) for f in p.fields]
    assert got == [("flow", "holding", 0, "float32", "ABCD", "gpm"), ("ph", "holding", 2, "float32", "ABCD", "pH"),
                   ("temperature", "holding", 4, "float32", "ABCD", "degF")]
    assert (p.status.register, p.status.address) == ("holding", 6)
    assert p.read_requests() == [("holding", 0, 7)]


@pytest.mark.parametrize("name", ["generic-manhole", "swapped-float", "little-endian-float", "scaled-int16"])
def test_encode_decode_tables_round_trip(name):
    p = profiles.load(name)
    rng = np.random.default_rng(1)
    n = 50
    vals = {f.name: np.round(rng.uniform(0, 100, n), 1) for f in p.fields}
    vals[p.fields[0].name][3] = np.nan
    status = rng.integers(0, 8, n)
    blocks = p.encode_tables(vals, status)
    for t in p.tables():
        assert blocks[t].shape == (n, p.span(t)[1])
    got, st_back = p.decode_tables(blocks)
    for f in p.fields:
        np.testing.assert_allclose(got[f.name], vals[f.name], rtol=1e-6, atol=abs(f.scale) / 2 + 1e-9)
    assert st_back.tolist() == status.tolist()
    faults = p.faulted(status)
    assert faults["flow"].tolist() == ((status & 1) == 1).tolist()
    assert p.fault_word(faults).tolist() == (status & sum(1 << b for b in p.status.bits.values())).tolist()


def _write(tmp_path, text):
    f = tmp_path / "p.toml"
    f.write_text(text)
    return f


GOOD = """
name = "x"
[[fields]]
name = "flow"
parameter = "flow"
unit = "gpm"
address = 0
type = "float32"
"""


@pytest.mark.parametrize("change,message", [
    ('type = "float32"', ("type = \"float64\"", "fields[0].type: expected one of float32")),
    ('unit = "gpm"', ("unit = \"furlong\"", "fields[0].unit: unknown unit 'furlong' for flow")),
    ('address = 0', ("address = -1", "fields[0].address: expected a protocol address")),
    ('address = 0', ("address = 0\nword_order = \"ABDC\"", "fields[0].word_order")),
    ('address = 0', ("address = 0\ncolour = 1", "fields[0].colour: unknown key")),
])
def test_bad_profile_names_file_and_key(tmp_path, change, message):
    old, (new, msg) = change, message
    f = _write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(InputError) as exc:
        profiles.load_file(f)
    assert str(f) in str(exc.value) and msg in str(exc.value)


def test_overlapping_registers_and_unknown_profile(tmp_path):
    f = _write(tmp_path, GOOD + '\n[[fields]]\nname = "ph"\nparameter = "ph"\nunit = "pH"\naddress = 1\ntype = "int16"\n')
    with pytest.raises(InputError, match=r"fields\[1\]: holding register 1 is already used by fields\[0\]"):
        profiles.load_file(f)
    with pytest.raises(InputError, match="unknown device profile 'nope' \\(known: .*generic-manhole"):
        profiles.load("nope")
    f = _write(tmp_path, GOOD + '\n[status]\naddress = 5\n[status.bits]\nph = 1\n')
    with pytest.raises(InputError, match="status.bits.ph: no field named 'ph'"):
        profiles.load_file(f)
