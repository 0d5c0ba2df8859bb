"""Device profiles: the Modbus register map of a kind of device, one TOML file each.

The profiles in ``ingest/profiles/*.toml`` are shared by the Modbus collector (decoding)
and the simulators (encoding); neither keeps a copy. A profile names its fields, each with
the register table, protocol address (0-based, as on the wire), data type, word order,
scale and offset (``value = raw * scale + offset``), the parameter and the unit, plus a
status register whose bits flag a faulted sensor::

    name = "generic-manhole"
    description = "..."

    [[fields]]
    name = "flow"            # the sensor name the collector stores it under
    parameter = "flow"       # foundation.units parameter: flow, ph, temperature, level
    unit = "gpm"             # a unit foundation.units knows for the parameter
    register = "holding"     # holding (function 3) or input (function 4)
    address = 0
    type = "float32"         # float32, int16, uint16, int32
    word_order = "ABCD"      # ABCD, CDAB, BADC, DCBA (see ingest.registers)
    scale = 1.0              # optional, default 1
    offset = 0.0             # optional, default 0
    invalid = -32768         # optional, integer types: raw value meaning "no reading"

    [status]
    register = "holding"
    address = 6              # one uint16 register
    maintenance = 15         # optional: the bit the device sets while in maintenance
    [status.bits]            # bit number of each sensor's fault flag
    flow = 0
    ph = 1
    temperature = 2

While the ``maintenance`` bit is set (a technician's switch or the RTU's maintenance mode at
the manhole) the device's readings are in a maintenance window: stored with the maintenance
code, never judged; the collector opens the window when the bit is first seen set and ends it
at the first poll that sees it clear (``maintenance_windows``, ``source`` ``modbus``).

Every problem is reported as an :class:`~foundation.errors.InputError` naming the file,
the key and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from foundation import tomlfile
from foundation.errors import InputError
from foundation.units import CONVERSIONS
from ingest import registers as codec

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
REGISTER_TABLES = ("holding", "input")
#: Modbus function code reading each table (Modbus Application Protocol V1.1b3 §6.3, §6.4)
FUNCTION_CODE = {"holding": 3, "input": 4}
#: at most 125 registers in one read request (Modbus Application Protocol V1.1b3 §6.3)
MAX_READ_REGISTERS = 125


@dataclass(frozen=True)
class Field:
    """One value in a device's register map (see the module docstring for the keys)."""

    name: str
    parameter: str
    unit: str
    register: str
    address: int
    type: str
    word_order: str = "ABCD"
    scale: float = 1.0
    offset: float = 0.0
    invalid: int | None = None

    @property
    def width(self) -> int:
        """Registers the field occupies."""
        return codec.WIDTH[self.type]

    def encode(self, values) -> np.ndarray:
        """Engineering values (...) -> registers (..., width), see :func:`ingest.registers.encode`."""
        return codec.encode(values, self.type, self.word_order, self.scale, self.offset, self.invalid)

    def decode(self, registers) -> np.ndarray:
        """Registers (..., width) -> engineering values (...), see :func:`ingest.registers.decode`."""
        return codec.decode(registers, self.type, self.word_order, self.scale, self.offset, self.invalid)


@dataclass(frozen=True)
class Status:
    """The status register: one uint16 whose bits flag faulted sensors (and, optionally,
    one bit the device sets while in maintenance)."""

    register: str
    address: int
    bits: dict  # sensor name -> bit number
    maintenance: int | None = None   # the bit set while the device is in maintenance


@dataclass(frozen=True)
class Profile:
    """A device profile: its fields and status register."""

    name: str
    description: str
    fields: tuple[Field, ...]
    status: Status | None
    path: str = ""

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise InputError(f"profile {self.name!r} has no field {name!r} "
                         f"(fields: {', '.join(f.name for f in self.fields)})")

    def tables(self) -> tuple[str, ...]:
        """The register tables the profile uses, in :data:`REGISTER_TABLES` order."""
        used = {f.register for f in self.fields}
        if self.status:
            used.add(self.status.register)
        return tuple(t for t in REGISTER_TABLES if t in used)

    def span(self, table: str) -> tuple[int, int]:
        """``(first address, register count)`` covering every field in ``table``."""
        lo, hi = None, None
        for f in self.fields:
            if f.register == table:
                lo = f.address if lo is None else min(lo, f.address)
                hi = f.address + f.width if hi is None else max(hi, f.address + f.width)
        if self.status and self.status.register == table:
            a = self.status.address
            lo = a if lo is None else min(lo, a)
            hi = a + 1 if hi is None else max(hi, a + 1)
        if lo is None:
            raise InputError(f"profile {self.name!r} uses no {table} registers")
        return lo, hi - lo

    def read_requests(self) -> list[tuple[str, int, int]]:
        """``(table, address, count)`` requests reading every field, each at most 125 registers."""
        out = []
        for t in self.tables():
            start, count = self.span(t)
            for a in range(start, start + count, MAX_READ_REGISTERS):
                out.append((t, a, min(MAX_READ_REGISTERS, start + count - a)))
        return out

    def encode_tables(self, values: dict, status=None, n: int | None = None) -> dict:
        """Encode the values of many devices into register blocks.

        Parameters
        ----------
        values : dict of str -> array_like, shape (n,)
            Engineering values per field name [the field's unit]; a missing field is
            sent as NaN (or its ``invalid`` raw value).
        status : array_like of int, shape (n,), optional
            Status register value per device (0 if omitted).
        n : int, optional
            Number of devices, if no value array gives it.

        Returns
        -------
        dict of str -> numpy.ndarray of uint16, shape (n, count)
            Per table, the registers from ``span(table)[0]`` on, one row per device.
        """
        if n is None:
            n = next((np.asarray(v).shape[0] for v in values.values()), None)
            if n is None:
                n = np.asarray(status).shape[0] if status is not None else 1
        out = {}
        for t in self.tables():
            start, count = self.span(t)
            out[t] = np.zeros((n, count), dtype=np.uint16)
        for f in self.fields:
            v = values.get(f.name)
            v = np.full(n, np.nan) if v is None else np.broadcast_to(np.asarray(v, dtype=np.float64), (n,))
            a = f.address - self.span(f.register)[0]
            out[f.register][:, a:a + f.width] = f.encode(v)
        if self.status:
            a = self.status.address - self.span(self.status.register)[0]
            s = np.zeros(n, dtype=np.uint16) if status is None else np.asarray(status, dtype=np.uint16)
            out[self.status.register][:, a] = s
        return out

    def decode_tables(self, blocks: dict) -> tuple[dict, np.ndarray | None]:
        """Decode register blocks of many devices (inverse of :meth:`encode_tables`).

        Parameters
        ----------
        blocks : dict of str -> array_like of int, shape (n, count)
            Per table, registers from ``span(table)[0]`` on.

        Returns
        -------
        values : dict of str -> numpy.ndarray of float64, shape (n,)
            Engineering values per field name [the field's unit].
        status : numpy.ndarray of uint16, shape (n,), or None
        """
        arrays = {t: np.asarray(b) for t, b in blocks.items()}
        values = {}
        for f in self.fields:
            a = f.address - self.span(f.register)[0]
            values[f.name] = f.decode(arrays[f.register][:, a:a + f.width])
        status = None
        if self.status:
            a = self.status.address - self.span(self.status.register)[0]
            status = arrays[self.status.register][:, a].astype(np.uint16)
        return values, status

    def faulted(self, status) -> dict:
        """Per sensor name with a status bit, a bool array: True where the bit is set."""
        s = np.asarray(status, dtype=np.uint16)
        bits = self.status.bits if self.status else {}
        return {name: (s >> np.uint16(bit)) & np.uint16(1) == 1 for name, bit in bits.items()}

    def in_maintenance(self, status) -> np.ndarray | None:
        """A bool array: True where the device's maintenance bit is set (None: the profile has none)."""
        if not self.status or self.status.maintenance is None:
            return None
        s = np.asarray(status, dtype=np.uint16)
        return (s >> np.uint16(self.status.maintenance)) & np.uint16(1) == 1

    def maintenance_word(self, flags) -> np.ndarray:
        """The status bits of ``flags`` (bool per device) in maintenance (inverse of :meth:`in_maintenance`)."""
        if not self.status or self.status.maintenance is None:
            return np.zeros(len(np.atleast_1d(flags)), dtype=np.uint16)
        return np.asarray(flags, dtype=np.uint16) << np.uint16(self.status.maintenance)

    def fault_word(self, faults: dict) -> np.ndarray:
        """Status register value from ``{sensor name: bool array}`` (inverse of :meth:`faulted`)."""
        bits = self.status.bits if self.status else {}
        out = None
        for name, flag in faults.items():
            if name not in bits:
                continue
            v = np.asarray(flag, dtype=np.uint16) << np.uint16(bits[name])
            out = v if out is None else out | v
        return out if out is not None else np.zeros(0, dtype=np.uint16)


# --- loading -------------------------------------------------------------------------


def _fail(path, key, problem):
    raise InputError(f"{path}: {key}: {problem}")


def _get(path, where, table, key, kind, default=...):
    if key not in table:
        if default is ...:
            _fail(path, f"{where}.{key}" if where else key, "missing (required)")
        return default
    v = table[key]
    ok = {
        "str": isinstance(v, str) and v != "",
        "int": isinstance(v, int) and not isinstance(v, bool),
        "num": isinstance(v, (int, float)) and not isinstance(v, bool),
        "table": isinstance(v, dict),
    }[kind]
    if not ok:
        want = {"str": "a non-empty string", "int": "an integer", "num": "a number", "table": "a table"}[kind]
        _fail(path, f"{where}.{key}" if where else key, f"expected {want}, got {v!r}")
    return v


def parse(data: dict, path: str = "<profile>") -> Profile:
    """Validate a parsed profile TOML (see the module docstring for the keys)."""
    allowed_top = {"name", "description", "fields", "status"}
    for k in data:
        if k not in allowed_top:
            _fail(path, k, f"unknown key (expected one of: {', '.join(sorted(allowed_top))})")
    name = _get(path, "", data, "name", "str")
    description = _get(path, "", data, "description", "str", "")
    raw_fields = data.get("fields")
    if not isinstance(raw_fields, list) or not raw_fields or not all(isinstance(x, dict) for x in raw_fields):
        _fail(path, "fields", "expected a non-empty array of tables ([[fields]])")
    allowed = {"name", "parameter", "unit", "register", "address", "type", "word_order",
               "scale", "offset", "invalid"}
    fields = []
    for i, t in enumerate(raw_fields):
        w = f"fields[{i}]"
        for k in t:
            if k not in allowed:
                _fail(path, f"{w}.{k}", f"unknown key (expected one of: {', '.join(sorted(allowed))})")
        fname = _get(path, w, t, "name", "str")
        parameter = _get(path, w, t, "parameter", "str")
        if parameter not in CONVERSIONS:
            _fail(path, f"{w}.parameter", f"unknown parameter {parameter!r} (known: {', '.join(CONVERSIONS)})")
        unit = _get(path, w, t, "unit", "str")
        if unit not in CONVERSIONS[parameter]:
            _fail(path, f"{w}.unit", f"unknown unit {unit!r} for {parameter} (known: {', '.join(CONVERSIONS[parameter])})")
        register = _get(path, w, t, "register", "str", "holding")
        if register not in REGISTER_TABLES:
            _fail(path, f"{w}.register", f"expected one of {', '.join(REGISTER_TABLES)}, got {register!r}")
        address = _get(path, w, t, "address", "int")
        if not 0 <= address <= 65535:
            _fail(path, f"{w}.address", f"expected a protocol address 0..65535, got {address}")
        dtype = _get(path, w, t, "type", "str")
        if dtype not in codec.DATA_TYPES:
            _fail(path, f"{w}.type", f"expected one of {', '.join(codec.DATA_TYPES)}, got {dtype!r}")
        order = _get(path, w, t, "word_order", "str", "ABCD")
        if order not in codec.WORD_ORDERS:
            _fail(path, f"{w}.word_order", f"expected one of {', '.join(codec.WORD_ORDERS)}, got {order!r}")
        scale = float(_get(path, w, t, "scale", "num", 1.0))
        if scale == 0.0:
            _fail(path, f"{w}.scale", "must not be zero")
        offset = float(_get(path, w, t, "offset", "num", 0.0))
        invalid = _get(path, w, t, "invalid", "int", None)
        if invalid is not None:
            if dtype == "float32":
                _fail(path, f"{w}.invalid", "only integer types have an invalid raw value (float32 sends NaN)")
            lo, hi = codec._INT_RANGE[dtype]
            if not lo <= invalid <= hi:
                _fail(path, f"{w}.invalid", f"{invalid} does not fit in {dtype}")
        fields.append(Field(fname, parameter, unit, register, address, dtype, order, scale, offset, invalid))

    status = None
    if "status" in data:
        st = _get(path, "", data, "status", "table")
        for k in st:
            if k not in {"register", "address", "bits", "maintenance"}:
                _fail(path, f"status.{k}", "unknown key (expected one of: address, bits, maintenance, register)")
        register = _get(path, "status", st, "register", "str", "holding")
        if register not in REGISTER_TABLES:
            _fail(path, "status.register", f"expected one of {', '.join(REGISTER_TABLES)}, got {register!r}")
        address = _get(path, "status", st, "address", "int")
        bits = _get(path, "status", st, "bits", "table", {})
        names = {f.name for f in fields}
        for bname, bit in bits.items():
            if bname not in names:
                _fail(path, f"status.bits.{bname}", f"no field named {bname!r} (fields: {', '.join(sorted(names))})")
            if not isinstance(bit, int) or isinstance(bit, bool) or not 0 <= bit <= 15:
                _fail(path, f"status.bits.{bname}", f"expected a bit number 0..15, got {bit!r}")
        maint = st.get("maintenance")
        if maint is not None:
            if not isinstance(maint, int) or isinstance(maint, bool) or not 0 <= maint <= 15:
                _fail(path, "status.maintenance", f"expected a bit number 0..15, got {maint!r}")
            if maint in bits.values():
                _fail(path, "status.maintenance", f"bit {maint} is a sensor's fault bit already")
        status = Status(register, address, dict(bits), maint)

    # no two fields (or a field and the status register) may share a register
    seen: dict = {}
    cells = [(f"fields[{i}]", f.register, f.address, f.width) for i, f in enumerate(fields)]
    if status:
        cells.append(("status", status.register, status.address, 1))
    for where, table, address, width in cells:
        for a in range(address, address + width):
            if (table, a) in seen:
                _fail(path, where, f"{table} register {a} is already used by {seen[(table, a)]}")
            seen[(table, a)] = where
    dup = [n for n in {f.name for f in fields} if sum(f.name == n for f in fields) > 1]
    if dup:
        _fail(path, "fields", f"duplicate field name {dup[0]!r}")
    return Profile(name, description, tuple(fields), status, path)


def load_file(path: str | Path) -> Profile:
    """Load and validate one profile file."""
    return parse(tomlfile.read(path, "profile file"), str(Path(path)))


def names() -> list[str]:
    """The shipped profiles' names."""
    return sorted(p.stem for p in PROFILES_DIR.glob("*.toml"))


@lru_cache(maxsize=None)
def load(name: str) -> Profile:
    """Load a shipped profile by name (``ingest/profiles/<name>.toml``) or a path to a TOML file."""
    if name.endswith(".toml") or "/" in name:
        return load_file(name)
    p = PROFILES_DIR / f"{name}.toml"
    if not p.is_file():
        raise InputError(f"unknown device profile {name!r} (known: {', '.join(names())})")
    prof = load_file(p)
    if prof.name != name:
        raise InputError(f"{p}: name: {prof.name!r} differs from the file name {name!r}")
    return prof
