"""Reading the long-format readings CSV of ``sewerwatch check`` into numpy arrays.

Header ``time,site,parameter,value,unit`` (any column order, an optional ``quality``
column); one reading per line; ``time`` ISO-8601 with a UTC offset (``Z``, ``+HH:MM``,
``+HHMM`` or ``+HH``), ``T`` or a space between date and time; ``value`` a number, or
``nan`` or an empty field (a missing reading, skipped by evaluation); ``unit`` one of the
parameter's units in :mod:`foundation.units`. Each (site, parameter) is one sensor. A value
outside the physically possible range of its parameter (pH 0-14, temperature -40 to 250
degF, no negative flow) gets quality 1: it is not judged, and ``sewerwatch check`` counts it.

What spreadsheets and historians write is read too: a UTF-8 byte-order mark, CRLF line
ends, quoted fields, blank lines, Excel's ``sep=;`` first line, and ``;`` or tab as the
delimiter (with ``;``, a decimal comma in values, ``7,21``).

The file is read by pyarrow's streaming CSV reader (a maintained columnar reader, in
C++) in blocks of :data:`BLOCK_BYTES`, so memory follows one block plus the result's
numpy arrays (26 bytes a reading); each block's columns are converted by Arrow compute
(``cast`` to UTC microseconds and to float64) and its names dictionary-encoded. Line
numbers are not kept per row: only when a block fails is the file walked again to name
the line, and the error classified by :func:`parse_times`, so every error is one line
naming the file and line as before. A progress bar (tqdm, on a terminal) shows long files.
"""

from __future__ import annotations

import csv
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from tqdm import tqdm

from foundation import units
from foundation.errors import InputError
from limits.evaluator import SensorMeta

REQUIRED = ("time", "site", "parameter", "value", "unit")
OPTIONAL = ("quality",)


#: bytes of the file converted at a time (memory follows it, not the file)
BLOCK_BYTES = 16 << 20
#: files at least this large show a progress bar (on a terminal) [bytes]
PROGRESS_BYTES = 64 << 20
#: delimiters tried on the header line, in order
DELIMITERS = (",", ";", "\t")


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
    implausible : ndarray of bool
        Readings outside the physically possible range of their parameter
        (:data:`foundation.units.PHYSICAL_RANGE`): given quality 1, so never judged.
    """

    sensor: np.ndarray
    time: np.ndarray
    value: np.ndarray
    quality: np.ndarray
    meta: dict
    layout: "_Layout | None" = field(default=None, repr=False)
    implausible: np.ndarray | None = field(default=None, repr=False)

    @property
    def line(self) -> np.ndarray:
        """File line of each reading (1-based, the header is line 1): read again from the file."""
        return self.layout.lines(len(self.time)) if self.layout else np.arange(2, len(self.time) + 2)


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


def _bad_time(where, line, text, why):
    raise InputError(f"{where}line {int(line)}: bad time {text!r}: {why}")


@dataclass
class _Layout:
    """Where the data rows of a file are: the lines before the header, the delimiter."""

    path: Path
    skip: int                      # lines before the header (Excel's "sep=;")
    delimiter: str

    def lines(self, rows: int, first: int = 0) -> np.ndarray:
        """File lines (1-based) of data rows ``first .. first + rows - 1``, blank lines skipped."""
        out = np.empty(rows, dtype=np.int64)
        k = -1
        with open(self.path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if number <= self.skip + 1 or not raw.strip(b"\r\n"):
                    continue
                k += 1
                if k >= first + rows:
                    break
                if k >= first:
                    out[k - first] = number
        return out

    def line_of(self, row: int) -> int:
        return int(self.lines(1, row)[0])


def _layout(path: Path) -> tuple[_Layout, list[str]]:
    """Read the header: its names (stripped), the delimiter, the lines before it."""
    where = f"{path}: "
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 16)
            second = fh.readline(1 << 16)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a CSV file") from None
    try:
        text = first.decode("utf-8-sig")
        skip = 0
        if text.strip().lower().startswith("sep=") and len(text.strip()) == 5:
            delimiters = (text.strip()[4],)
            skip, text = 1, second.decode("utf-8")
        else:
            delimiters = DELIMITERS
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise InputError(f"{path}: empty file (expected a header {','.join(REQUIRED)})")
    line = skip + 1
    best = None
    for d in delimiters:
        names = [h.strip() for h in next(csv.reader([text.rstrip("\r\n")], delimiter=d))]
        if best is None or sum(n in REQUIRED for n in names) > sum(n in REQUIRED for n in best[1]):
            best = (d, names)
    delimiter, header = best
    for name in header:
        if name not in REQUIRED + OPTIONAL:
            raise InputError(f"{where}line {line}: unknown column {name!r} (expected {','.join(REQUIRED)}"
                             f" and optionally {','.join(OPTIONAL)})")
    for name in REQUIRED:
        if name not in header:
            raise InputError(f"{where}line {line}: missing column {name!r} (expected header {','.join(REQUIRED)})")
    if len(set(header)) != len(header):
        raise InputError(f"{where}line {line}: a column is named twice")
    return _Layout(path, skip, delimiter), header


class _Names:
    """Stripped names across blocks -> one code each, in order of appearance."""

    def __init__(self):
        self.names: list[str] = []
        self._code: dict[str, int] = {}

    def codes(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        enc = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        table = np.fromiter((self._code.setdefault(v.strip(), len(self._code)) for v in enc.dictionary.to_pylist()),
                            dtype=np.int32, count=len(enc.dictionary))
        for name, code in self._code.items():
            if code == len(self.names):
                self.names.append(name)
        return table[enc.indices.to_numpy(zero_copy_only=False)]


def _strings(column) -> pa.Array:
    return pc.utf8_trim_whitespace(column)


def read_readings_csv(path: str | Path, progress: bool | None = None,
                      block_bytes: int = BLOCK_BYTES) -> ReadingsTable:
    """Read a readings CSV (see the module docstring), block by block.

    The first pass lets Arrow's reader convert every column itself (times to UTC
    microseconds, values to float64, names dictionary-encoded): all in C++. A file that
    pass refuses (a bad field, padding, a decimal comma) is read again with every column
    as text and converted here, which either reads it or names the bad line.

    Parameters
    ----------
    progress : bool, optional
        Show a progress bar on stderr: True always, False never, None (default) for files
        of :data:`PROGRESS_BYTES` or more when stderr is a terminal.
    block_bytes : int
        Bytes converted at a time.

    Raises
    ------
    InputError
        One line naming the file, the line and what is wrong: a missing column, a row
        with the wrong number of fields, a bad time or number, an unknown parameter or
        a unit unknown for its parameter.
    """
    path = Path(path)
    layout, header = _layout(path)
    if layout.delimiter != ";":
        try:
            return _read_typed(path, layout, header, progress, block_bytes)
        except _Refused:
            pass
    return _read(path, layout, header, progress, block_bytes, typed=False)


class _Refused(Exception):
    """The typed pass met a field it cannot convert: read the file as text."""


class _Range:
    """Bytes ``[start, end)`` of a file as the read-only stream pyarrow reads (``os.pread``)."""

    closed = False

    def __init__(self, path: Path, start: int, end: int, bar):
        self._fd = os.open(path, os.O_RDONLY)
        self._pos, self._end, self._bar = start, end, bar

    def read(self, n: int = -1) -> bytes:
        n = self._end - self._pos if n is None or n < 0 else min(n, self._end - self._pos)
        data = os.pread(self._fd, n, self._pos) if n > 0 else b""
        self._pos += len(data)
        self._bar.update(len(data))
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
            self.closed = True


def _ranges(path: Path, layout: "_Layout", size: int, parts: int) -> list[tuple[int, int]]:
    """The data bytes (after the header) cut into ``parts`` ranges at line ends."""
    with open(path, "rb") as fh:
        for _ in range(layout.skip + 1):
            fh.readline()
        start = fh.tell()
        cuts = [start]
        for i in range(1, parts):
            fh.seek(max(cuts[-1], start + (size - start) * i // parts))
            fh.readline()
            cuts.append(min(fh.tell(), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _read_typed(path: Path, layout: "_Layout", header: list, progress, block_bytes: int) -> ReadingsTable:
    """The fast pass: Arrow converts every column; the file's ranges are read in parallel
    threads (Arrow releases the GIL), each in blocks, so memory follows the blocks."""
    where = f"{path}: "
    size = path.stat().st_size
    show = progress if progress is not None else (size >= PROGRESS_BYTES and None)
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {path.name}", leave=False,
               disable=(None if show is None else not show), mininterval=0.5)
    # names as text, dictionary-encoded per block by Arrow compute (faster than the reader's
    # own dictionary conversion)
    types = {"time": pa.timestamp("us", tz="UTC"), "value": pa.float64(), "quality": pa.int16(),
             "site": pa.string(), "parameter": pa.string(), "unit": pa.string()}
    convert = pacsv.ConvertOptions(column_types={h: types[h] for h in header}, null_values=["", "nan", "NaN"],
                                   strings_can_be_null=False, quoted_strings_can_be_null=False)
    parse = pacsv.ParseOptions(delimiter=layout.delimiter, newlines_in_values=False, ignore_empty_lines=True)
    workers = max(1, min(os.cpu_count() or 1, size // block_bytes, 4))

    def read_range(rng) -> list:
        src = _Range(path, rng[0], rng[1], bar)
        out = []
        try:
            reader = pacsv.open_csv(src, read_options=pacsv.ReadOptions(column_names=header, block_size=block_bytes),
                                    parse_options=parse, convert_options=convert)
            for batch in reader:
                col = dict(zip(header, batch.columns))
                q = None
                if "quality" in col:
                    q = col["quality"].to_numpy(zero_copy_only=False) if not col["quality"].null_count else None
                    if q is None or (q < 0).any():
                        raise _Refused()
                out.append((col["time"].cast(pa.int64()).to_numpy(zero_copy_only=False),
                            col["value"].to_numpy(zero_copy_only=False), q,
                            *(pc.dictionary_encode(col[k]) for k in ("site", "parameter", "unit"))))
        except pa.ArrowInvalid as exc:
            if "conversion error" in str(exc):
                raise _Refused() from None
            raise _arrow_error(exc, where, layout, header, 0) from None
        finally:
            src.close()
        return out

    try:
        ranges = _ranges(path, layout, size, workers)
        if len(ranges) > 1:
            with ThreadPoolExecutor(len(ranges)) as pool:
                blocks = [b for part in pool.map(read_range, ranges) for b in part]
        else:
            blocks = [b for rng in ranges for b in read_range(rng)]
    finally:
        bar.close()
    names = {k: _Names() for k in ("site", "parameter", "unit")}
    cols = list(zip(*blocks)) if blocks else [[] for _ in range(6)]
    codes = [[names[k].codes(a) for a in cols[3 + i]] for i, k in enumerate(("site", "parameter", "unit"))]
    n = sum(len(t) for t in cols[0])
    cat = lambda arrays, dtype: np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)  # noqa: E731
    quality = cat(cols[2], np.int16).astype(np.int16) if "quality" in header else np.zeros(n, dtype=np.int16)
    return _assemble(where, layout, cat(cols[0], np.int64), cat(cols[1], np.float64), quality,
                     cat(codes[0], np.int32), cat(codes[1], np.int32), cat(codes[2], np.int32),
                     names["site"].names, names["parameter"].names, names["unit"].names)


def _read(path: Path, layout: "_Layout", header: list, progress, block_bytes: int, typed: bool) -> ReadingsTable:
    """One stream through the file: the text pass (every column as text, converted and
    checked here, naming the first bad line)."""
    where = f"{path}: "
    size = path.stat().st_size
    show = progress if progress is not None else (size >= PROGRESS_BYTES and None)
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {path.name}", leave=False,
               disable=(None if show is None else not show), mininterval=0.5)
    source = pa.OSFile(str(path), "rb")   # native: its position drives the bar
    if typed:
        # names as text, dictionary-encoded per block by Arrow compute (faster than the
        # reader's own dictionary conversion)
        types = {"time": pa.timestamp("us", tz="UTC"), "value": pa.float64(), "quality": pa.int16(),
                 "site": pa.string(), "parameter": pa.string(), "unit": pa.string()}
        types = {h: types[h] for h in header}
        convert = pacsv.ConvertOptions(column_types=types, null_values=["", "nan", "NaN"],
                                       strings_can_be_null=False, quoted_strings_can_be_null=False)
    else:
        convert = pacsv.ConvertOptions(column_types={h: pa.string() for h in header}, strings_can_be_null=False,
                                       quoted_strings_can_be_null=False, null_values=[])
    # (no invalid_row_handler: a Python callback per block halves Arrow's speed)
    try:
        reader = pacsv.open_csv(
            source, read_options=pacsv.ReadOptions(skip_rows=layout.skip, block_size=block_bytes),
            parse_options=pacsv.ParseOptions(delimiter=layout.delimiter, newlines_in_values=False, ignore_empty_lines=True),
            convert_options=convert)
    except pa.ArrowInvalid as exc:
        source.close()
        bar.close()
        if "Empty CSV file" in str(exc):
            raise InputError(f"{path}: empty file (expected a header {','.join(REQUIRED)})") from None
        if typed and "conversion error" in str(exc):
            raise _Refused() from None
        raise _arrow_error(exc, where, layout, header, 0) from None
    names = {k: _Names() for k in ("site", "parameter", "unit")}
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("time", "value", "quality", "site", "parameter", "unit")}
    done = 0
    decimal_comma = layout.delimiter == ";"
    try:
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                break
            except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
                if typed and "conversion error" in str(exc):
                    raise _Refused() from None
                raise _arrow_error(exc, where, layout, header, done) from None
            col = {name.strip(): batch.column(i) for i, name in enumerate(batch.schema.names)}
            if typed:
                parts["time"].append(col["time"].cast(pa.int64()).to_numpy(zero_copy_only=False))
                parts["value"].append(col["value"].to_numpy(zero_copy_only=False))
                if "quality" in col:
                    q = col["quality"]
                    if q.null_count or (q.to_numpy(zero_copy_only=False) < 0).any():
                        raise _Refused()
                    parts["quality"].append(q.to_numpy(zero_copy_only=False))
            else:
                parts["time"].append(_times(_strings(col["time"]), where, layout, done))
                parts["value"].append(_values(_strings(col["value"]), where, layout, done, decimal_comma))
                if "quality" in col:
                    parts["quality"].append(_quality(_strings(col["quality"]), where, layout, done))
            for k in ("site", "parameter", "unit"):
                parts[k].append(names[k].codes(col[k]))
            done += batch.num_rows
            bar.update(source.tell() - bar.n)
    finally:
        source.close()
        bar.close()
    cat = {k: (np.concatenate(v) if v else np.empty(0, dtype=np.int32)) for k, v in parts.items()}
    time = cat["time"].astype(np.int64, copy=False) if parts["time"] else np.empty(0, dtype=np.int64)
    value = cat["value"].astype(np.float64, copy=False) if parts["value"] else np.empty(0)
    quality = cat["quality"].astype(np.int16, copy=False) if parts["quality"] else np.zeros(done, dtype=np.int16)
    del parts
    return _assemble(where, layout, time, value, quality, cat["site"], cat["parameter"], cat["unit"],
                     names["site"].names, names["parameter"].names, names["unit"].names)


def _name(batch, wanted: str) -> str:
    """The batch's column for ``wanted`` (headers are matched stripped)."""
    for n in batch.schema.names:
        if n.strip() == wanted:
            return n
    raise KeyError(wanted)


def _arrow_error(exc, where, layout: _Layout, header: list, done: int) -> InputError:
    """An Arrow parse failure as the one line naming the file line."""
    if isinstance(exc, UnicodeDecodeError) or "UTF8" in str(exc):
        return InputError(f"{where.rstrip(': ')}: not UTF-8 text ({str(exc).splitlines()[0]})")
    m = re.search(r"Expected \d+ columns, got (\d+): (.*)", str(exc), re.S)
    if m:
        return InputError(f"{where}line {_find_line(layout, m.group(2).rstrip()[:1000])}: expected {len(header)} "
                          f"fields ({','.join(header)}), got {m.group(1)}")
    return InputError(f"{where}{str(exc).splitlines()[0]} (after data row {done})")


def _find_line(layout: _Layout, text: str) -> int | str:
    """The first line holding ``text`` (Arrow names a bad row by its text, not its line)."""
    with open(layout.path, encoding="utf-8-sig", errors="replace") as fh:
        for number, raw in enumerate(fh, start=1):
            if number > layout.skip + 1 and raw.rstrip("\r\n").startswith(text):
                return number
    return "?"


def _times(col, where, layout: _Layout, done: int) -> np.ndarray:
    """ISO-8601 strings with offsets -> [us UTC]; a failure named by :func:`parse_times`."""
    try:
        t = pc.cast(col, pa.timestamp("us", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        texts = col.to_pylist()
        lines = layout.lines(len(texts), done)
        parse_times(texts, lines, where)     # raises with the line and the reason
        for i, x in enumerate(texts):        # Arrow is stricter than the classifier
            try:
                pc.cast(pa.array([x]), pa.timestamp("us", tz="UTC"))
            except pa.ArrowInvalid:
                _bad_time(where, lines[i], x, "not an ISO-8601 time with offset")
        raise
    return t.cast(pa.int64()).to_numpy(zero_copy_only=False)


def _values(col, where, layout: _Layout, done: int, decimal_comma: bool) -> np.ndarray:
    """Numbers, ``nan`` or empty (missing) -> float64."""
    if decimal_comma:
        col = pc.replace_substring(col, ",", ".")
    col = pc.if_else(pc.equal(col, ""), pa.scalar("nan"), col)
    try:
        return pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        texts = col.to_pylist()
        for i, x in enumerate(texts):
            try:
                float(x)
            except ValueError:
                raise InputError(f"{where}line {layout.line_of(done + i)}: bad value {x!r}: not a number") from None
        raise


def _quality(col, where, layout: _Layout, done: int) -> np.ndarray:
    try:
        q = pc.cast(col, pa.int16()).to_numpy(zero_copy_only=False)
        if (q < 0).any():
            raise pa.ArrowInvalid("negative")
        return q
    except pa.ArrowInvalid:
        for i, x in enumerate(col.to_pylist()):
            if not x.isdigit() or int(x) > 32767:
                raise InputError(f"{where}line {layout.line_of(done + i)}: bad quality {x!r}: "
                                 "expected 0, 1 or 2") from None
        raise


def _small_unique(keys: np.ndarray, domain: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for keys in ``[0, domain)``: one pass, no sort."""
    present = np.zeros(max(domain, 1), dtype=bool)
    present[keys] = True
    uniq = np.flatnonzero(present)
    rank = np.zeros(max(domain, 1), dtype=np.int64)
    rank[uniq] = np.arange(len(uniq))
    return uniq, rank[keys]


def _assemble(where, layout, time, value, quality, site_i, param_i, unit_i, sites, params, unit_names) -> ReadingsTable:
    """Check names and units, convert to canonical units, number the sensors."""
    def first_line(mask) -> int:
        return layout.line_of(int(np.flatnonzero(mask)[0]))

    for k, p in enumerate(params):
        if p not in units.CONVERSIONS:
            raise InputError(f"{where}line {first_line(param_i == k)}: unknown parameter {p!r} "
                             f"(known: {', '.join(units.PARAMETERS)})")
    if "" in sites:
        raise InputError(f"{where}line {first_line(site_i == sites.index(''))}: empty site")
    nu = max(len(unit_names), 1)
    combo = param_i.astype(np.int64) * nu + unit_i
    ucombo, cinv = _small_unique(combo, len(params) * nu)
    scale = np.empty(len(ucombo))
    offset = np.empty(len(ucombo))
    bad = []
    for k, c in enumerate(ucombo.tolist()):
        p, u = params[c // nu], unit_names[c % nu]
        if u not in units.CONVERSIONS[p]:
            bad.append((first_line(cinv == k), p, u))
            continue
        scale[k], offset[k] = units.CONVERSIONS[p][u]
    if bad:
        first, p, u = min(bad)
        raise InputError(f"{where}line {first}: unknown unit {u!r} for {p} "
                         f"(known: {', '.join(units.CONVERSIONS[p])})")
    if (scale != 1.0).any() or (offset != 0.0).any():   # all canonical already: nothing to do
        value = value * scale[cinv] + offset[cinv]
    del cinv, combo
    # outside the physically possible range: kept, flagged (quality 1), never judged
    lo = np.array([units.PHYSICAL_RANGE.get(p, (-np.inf, np.inf))[0] for p in params] or [-np.inf])
    hi = np.array([units.PHYSICAL_RANGE.get(p, (-np.inf, np.inf))[1] for p in params] or [np.inf])
    with np.errstate(invalid="ignore"):
        implausible = (value < lo[param_i]) | (value > hi[param_i])
    if implausible.any():
        quality = np.where((quality == 0) & implausible, np.int16(1), quality).astype(np.int16)

    np_ = max(len(params), 1)
    skey = site_i.astype(np.int64) * np_ + param_i
    usk, sensor = _small_unique(skey, len(sites) * np_)
    meta = {}
    for code, k in enumerate(usk.tolist()):
        site, param = sites[k // np_], params[k % np_]
        meta[code] = SensorMeta(parameter=param, interval_s=None, site=site, name=param)
    return ReadingsTable(sensor=sensor.astype(np.int64), time=time, value=value,
                         quality=quality, meta=meta, layout=layout, implausible=implausible)
