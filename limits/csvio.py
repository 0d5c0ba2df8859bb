"""Reading the long-format readings CSV of ``sewerwatch check`` into numpy arrays.

Header ``time,site,parameter,value,unit`` (any column order, an optional ``quality``
column); one reading per line; ``time`` ISO-8601 with a UTC offset (``Z``, ``+HH:MM``,
``+HHMM`` or ``+HH``), ``T`` or a space between date and time; ``value`` a number or
``nan`` (a missing reading, skipped by evaluation); ``unit`` one of the parameter's units
in :mod:`foundation.units`. Each (site, parameter) is one sensor.

The columns are split once and every column is parsed by numpy as a whole: times through
a byte matrix (offsets read by position) and ``datetime64``, numbers by ``astype``, names
by ``np.unique``. Only when numpy rejects a column is it walked row by row, to name the
first bad line in the error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from foundation import units
from foundation.errors import InputError
from limits.evaluator import SensorMeta

REQUIRED = ("time", "site", "parameter", "value", "unit")
OPTIONAL = ("quality",)


@dataclass
class ReadingsTable:
    """Readings from a CSV, not yet sorted.

    Attributes
    ----------
    sensor : ndarray of int64
        Sensor code (index into ``meta``'s keys).
    time : ndarray of int64
        [us UTC].
    value : ndarray of float64
        [canonical unit of the sensor's parameter].
    quality : ndarray of int16
        0 unless the file has a ``quality`` column.
    meta : dict of int to SensorMeta
        Site, parameter (sensor name = parameter) per code.
    line : ndarray of int64
        File line of each reading (1-based, the header is line 1).
    """

    sensor: np.ndarray
    time: np.ndarray
    value: np.ndarray
    quality: np.ndarray
    meta: dict
    line: np.ndarray


def parse_times(texts, lines=None, where: str = "") -> np.ndarray:
    """ISO-8601 times with a UTC offset -> int64 microseconds since the epoch, UTC.

    Parameters
    ----------
    texts : sequence of str
    lines : ndarray of int, optional
        File line of each text, for error messages.
    where : str
        File name for error messages.

    Raises
    ------
    InputError
        Naming the first line whose time is malformed or has no offset.
    """
    n = len(texts)
    lines = np.arange(1, n + 1) if lines is None else lines
    if n == 0:
        return np.empty(0, dtype=np.int64)
    try:
        b = _fixed_bytes(texts)
    except UnicodeEncodeError:
        bad = next(i for i, x in enumerate(texts) if not x.isascii())
        _bad_time(where, lines[bad], texts[bad], "not an ISO-8601 time")
    width = b.dtype.itemsize
    m = b.view(np.uint8).reshape(n, width)
    ln = np.strings.str_len(b).astype(np.int64)
    rows = np.arange(n)

    uniform = bool((ln == ln[0]).all())

    def at(k):
        if uniform:                    # the usual case: one layout, a column of the matrix
            return m[:, ln[0] - k] if ln[0] - k >= 0 else np.zeros(n, dtype=np.uint8)
        pos = ln - k
        ok = pos >= 0
        out = np.zeros(n, dtype=np.uint8)
        out[ok] = m[rows[ok], pos[ok]]
        return out

    def digits(*ks):
        vals = [at(k).astype(np.int64) - 48 for k in ks]
        good = np.logical_and.reduce([(x >= 0) & (x <= 9) for x in vals])
        num = np.zeros(n, dtype=np.int64)
        for x in vals:
            num = num * 10 + x
        return num, good

    sign_ch = lambda c: (c == ord("+")) | (c == ord("-"))  # noqa: E731
    c1, c3, c5, c6 = at(1), at(3), at(5), at(6)
    zulu = (c1 == ord("Z")) | (c1 == ord("z"))
    colon = ~zulu & sign_ch(c6) & (c3 == ord(":"))
    compact = ~zulu & ~colon & sign_ch(c5)
    hours = ~zulu & ~colon & ~compact & sign_ch(c3)
    local_len = np.select([zulu, colon, compact, hours], [ln - 1, ln - 6, ln - 5, ln - 3], -1)
    hh_c, ok_hc = digits(5, 4)
    mm_c, ok_mc = digits(2, 1)
    hh_k, ok_hk = digits(4, 3)
    mm_k, ok_mk = digits(2, 1)
    hh_h, ok_hh = digits(2, 1)
    off_min = np.select([colon, compact, hours], [hh_c * 60 + mm_c, hh_k * 60 + mm_k, hh_h * 60], 0)
    off_ok = np.select([zulu, colon, compact, hours],
                       [True, ok_hc & ok_mc, ok_hk & ok_mk, ok_hh], False)
    sign = np.select([colon, compact, hours], [c6, c5, c3], ord("+"))
    off_min = np.where(sign == ord("-"), -off_min, off_min)
    # a local part at least YYYY-MM-DDTHH:MM with the separator at position 10
    sep = m[:, 10] if width > 10 else np.zeros(n, dtype=np.uint8)
    good = off_ok & (local_len >= 16) & ((sep == ord("T")) | (sep == ord(" ")) | (sep == ord("t")))
    good &= (np.abs(off_min) <= 18 * 60)
    if not good.all():
        i = int(np.flatnonzero(~good)[0])
        why = "no UTC offset (expected e.g. 2026-03-01T06:00:00-06:00 or ...Z)" if local_len[i] < 0 \
            else "not an ISO-8601 time with offset"
        _bad_time(where, lines[i], texts[i], why)
    col = np.arange(width)
    m2 = np.where(col[None, :] < local_len[:, None], m, 0).astype(np.uint8)
    m2[:, 10] = np.where(m2[:, 10] == ord(" "), ord("T"), m2[:, 10])
    local = m2.view(f"S{width}").reshape(n)
    try:
        t = local.astype("datetime64[us]").astype(np.int64)
    except ValueError:
        for i in range(n):
            try:
                np.datetime64(local[i].decode(), "us")
            except ValueError:
                _bad_time(where, lines[i], texts[i], "not a valid date and time")
        raise
    return t - off_min * 60_000_000


def _fixed_bytes(texts) -> np.ndarray:
    """A list of ASCII str as a stripped numpy bytes array (one join when all are equally long)."""
    width = len(texts[0])
    joined = "".join(texts)
    if len(joined) == width * len(texts) and (np.fromiter(map(len, texts), np.int64, len(texts)) == width).all():
        b = np.frombuffer(joined.encode("ascii"), dtype=f"S{width}") if width else np.array(texts, dtype="S")
    else:
        b = np.array(texts, dtype="S")
    return np.strings.strip(b)


def _factorize(col) -> tuple[list[str], np.ndarray]:
    """Distinct stripped strings of a column (in order of appearance) and each row's index."""
    raw_uniq = list(dict.fromkeys(col))
    stripped = [u.strip() for u in raw_uniq]
    names = list(dict.fromkeys(stripped))
    code_of_name = {nm: i for i, nm in enumerate(names)}
    code_of_raw = {u: code_of_name[sv] for u, sv in zip(raw_uniq, stripped)}
    return names, np.fromiter(map(code_of_raw.__getitem__, col), dtype=np.int64, count=len(col))


def _field_count_error(where, lines, ncol, header, first_line):
    for i, ln in enumerate(lines, start=first_line):
        got = ln.count(",") + 1
        if got != ncol:
            raise InputError(f"{where}line {i}: expected {ncol} fields ({','.join(header)}), got {got}")
    raise InputError(f"{where}: inconsistent number of fields")


def _bad_time(where, line, text, why):
    raise InputError(f"{where}line {int(line)}: bad time {text!r}: {why}")


def read_readings_csv(path: str | Path) -> ReadingsTable:
    """Read a readings CSV (see the module docstring).

    Raises
    ------
    InputError
        One line naming the file, the line and what is wrong: a missing column, a row
        with the wrong number of fields, a bad time or number, an unknown parameter or
        a unit unknown for its parameter.
    """
    path = Path(path)
    where = f"{path}: "
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if '"' in text:
        raise InputError(f"{path}: quoted fields are not supported in a readings CSV")
    text = text.replace("\r\n", "\n")
    head, _, body = text.partition("\n")
    if not head.strip():
        raise InputError(f"{path}: empty file (expected a header {','.join(REQUIRED)})")
    header = [h.strip() for h in head.split(",")]
    for name in header:
        if name not in REQUIRED + OPTIONAL:
            raise InputError(f"{where}line 1: unknown column {name!r} (expected {','.join(REQUIRED)}"
                             f" and optionally {','.join(OPTIONAL)})")
    for name in REQUIRED:
        if name not in header:
            raise InputError(f"{where}line 1: missing column {name!r} (expected header {','.join(REQUIRED)})")
    if len(set(header)) != len(header):
        raise InputError(f"{where}line 1: a column is named twice")
    ncol = len(header)
    body = body.rstrip("\n")
    if not body:
        cols = {h: [] for h in header}
        line_no = np.empty(0, dtype=np.int64)
    elif "\n\n" not in body and "\r" not in body:
        # fast path: every line one reading; split all fields at once, columns by stride
        nlines = body.count("\n") + 1
        flat = body.replace("\n", ",").split(",")
        if len(flat) != nlines * ncol:
            _field_count_error(where, body.split("\n"), ncol, header, first_line=2)
        cols = {h: flat[k::ncol] for k, h in enumerate(header)}
        del flat
        line_no = np.arange(2, nlines + 2, dtype=np.int64)
    else:
        # blank lines in the file: skip them, keep the numbering
        all_lines = body.splitlines()
        body_no = [i for i, ln in enumerate(all_lines, start=2) if ln.strip()]
        rows = [all_lines[i - 2].split(",") for i in body_no]
        for r, ln in zip(rows, body_no):
            if len(r) != ncol:
                raise InputError(f"{where}line {ln}: expected {ncol} fields ({','.join(header)}), got {len(r)}")
        cols = {h: [r[k] for r in rows] for k, h in enumerate(header)}
        line_no = np.asarray(body_no, dtype=np.int64)
    n = len(line_no)
    time = parse_times(cols["time"], line_no, where)

    raw_values = cols["value"]
    try:
        value = np.fromiter(map(float, raw_values), dtype=np.float64, count=n)
    except ValueError:
        for i, x in enumerate(raw_values):
            try:
                float(x)
            except ValueError:
                raise InputError(f"{where}line {line_no[i]}: bad value {x!r}: not a number") from None
        raise
    quality = np.zeros(n, dtype=np.int16)
    if "quality" in cols:
        try:
            quality = np.fromiter(map(int, cols["quality"]), dtype=np.int16, count=n)
        except (ValueError, OverflowError):
            for i, x in enumerate(cols["quality"]):
                if not x.strip().isdigit() or int(x) > 32767:
                    raise InputError(f"{where}line {line_no[i]}: bad quality {x!r}: expected 0, 1 or 2") from None
            raise

    sites, site_i = _factorize(cols["site"])
    params, param_i = _factorize(cols["parameter"])
    unit_names, unit_i = _factorize(cols["unit"])
    for k, p in enumerate(params):
        if p not in units.CONVERSIONS:
            first = line_no[np.flatnonzero(param_i == k)[0]]
            raise InputError(f"{where}line {first}: unknown parameter {p!r} (known: {', '.join(units.PARAMETERS)})")
    if "" in sites:
        first = line_no[np.flatnonzero(site_i == sites.index(""))[0]]
        raise InputError(f"{where}line {first}: empty site")
    combo = param_i * max(len(unit_names), 1) + unit_i
    ucombo, cinv = np.unique(combo, return_inverse=True)
    scale = np.empty(len(ucombo))
    offset = np.empty(len(ucombo))
    bad = []
    for k, c in enumerate(ucombo.tolist()):
        p = params[c // max(len(unit_names), 1)]
        u = unit_names[c % max(len(unit_names), 1)]
        if u not in units.CONVERSIONS[p]:
            bad.append((int(line_no[np.flatnonzero(cinv == k)[0]]), p, u))
            continue
        scale[k], offset[k] = units.CONVERSIONS[p][u]
    if bad:
        first, p, u = min(bad)
        raise InputError(f"{where}line {first}: unknown unit {u!r} for {p} "
                         f"(known: {', '.join(units.CONVERSIONS[p])})")
    value = value * scale[cinv] + offset[cinv]

    skey = site_i * max(len(params), 1) + param_i
    usk, sensor = np.unique(skey, return_inverse=True)
    meta = {}
    for code, k in enumerate(usk.tolist()):
        site, param = sites[k // len(params)], params[k % len(params)]
        meta[code] = SensorMeta(parameter=param, interval_s=None, site=site, name=param)
    return ReadingsTable(sensor=sensor.astype(np.int64), time=time, value=value,
                         quality=quality, meta=meta, line=line_no)
