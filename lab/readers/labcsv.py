"""Read a lab results CSV, row by row, keeping every bad row with its line number and reason.

The format (DESIGN.md, promised interfaces): header
``sample_id,site,collected,analyte,value,unit,qualifier`` in any order, extra columns
allowed (labs add method, analyst, detection limit ...; they are kept as ``extra``);
``qualifier`` may be missing. ``collected`` is an ISO-8601 date or a time with offset;
``analyte`` one of :data:`lab.readers.analytes.ANALYTES`; ``unit`` ``mg/l`` or ``ug/l`` (``ppm``
also accepted); ``qualifier`` empty or ``<`` (below the detection limit; the value is then
the detection limit).

The file is read as a stream of records (:class:`LabReader`), never whole: each record's
bytes are decoded on their own, so bytes that are not UTF-8, or a NUL byte (which no
database text can hold), make that one row bad with its line number and the rest of the
file is read ("Lab import"); memory follows one record, and
:func:`read_lab_csv` (the in-memory form for ``surcharge``) what it keeps.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Iterator

from lab.readers.analytes import NON_DETECT, analyte_id, to_stored, unit_id, units_of, unknown
from foundation.errors import InputError

REQUIRED = ("sample_id", "site", "collected", "analyte", "value", "unit")
#: the character no database text can hold
NUL = "\x00"
OPTIONAL = ("qualifier",)


@dataclass(frozen=True)
class LabRow:
    """One good result of a lab file.

    Attributes
    ----------
    line : int
        Line number in the file (the header is line 1).
    collected : datetime
        When the sample was collected (timezone-aware).
    value : float
        The value as reported [unit].
    value_mg_l : float
        The value converted [mg/l]; for a non-detect the detection limit [mg/l].
    non_detect : bool
        True when the qualifier is ``<``.
    """

    line: int
    sample_id: str
    site: str
    collected: datetime
    analyte: str
    value: float
    unit: str
    qualifier: str
    value_mg_l: float
    raw: str
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def non_detect(self) -> bool:
        return self.qualifier == NON_DETECT


@dataclass(frozen=True)
class BadRow:
    """A row that could not be used: where, why and its raw text (``raw_bytes``: the row's
    bytes as they were, when they are not text)."""

    line: int
    reason: str
    raw: str
    raw_bytes: bytes | None = field(default=None, compare=False)

    @property
    def payload(self) -> bytes:
        """The row as it was in the file (for ``dead_letters``)."""
        return self.raw_bytes if self.raw_bytes is not None else self.raw.encode("utf-8")


@dataclass
class LabFile:
    path: str
    rows: list[LabRow]
    bad: list[BadRow]
    columns: tuple[str, ...]

    def first_error(self) -> InputError | None:
        """An :class:`InputError` naming the file and the first bad row, or None."""
        if not self.bad:
            return None
        b = self.bad[0]
        more = f" (and {len(self.bad) - 1} more bad rows)" if len(self.bad) > 1 else ""
        return InputError(f"{self.path}: line {b.line}: {b.reason}{more}")


def parse_amount(text: str, name: str, meaning: str) -> float:
    """A finite number >= 0 from a CSV field, or ``ValueError`` saying what ``name`` should be.

    ``meaning`` completes the message for a number out of range, e.g. ``a volume >= 0
    [million gallons]``.
    """
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{name} '{text}' is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} {text} is not {meaning}")
    return v


def parse_collected(text: str, tz: tzinfo | None = None) -> datetime:
    """Parse a ``collected`` field: ISO date (midnight in ``tz``, default UTC) or a time with offset.

    Raises
    ------
    ValueError
        With a message naming what is wrong.
    """
    s = text.strip()
    if not s:
        raise ValueError("empty collected date")
    if len(s) == 10:
        try:
            d = date.fromisoformat(s)
        except ValueError:
            raise ValueError(f"invalid date '{s}' (expected YYYY-MM-DD)") from None
        return datetime.combine(d, time(0), tzinfo=tz or timezone.utc)
    try:
        t = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"invalid collected time '{s}' (expected ISO-8601, e.g. 2026-01-15 or "
                         f"2026-01-15T08:00:00-06:00)") from None
    if t.tzinfo is None:
        if tz is None:
            raise ValueError(f"collected time '{s}' has no UTC offset (add one, e.g. -06:00, or give a date)")
        t = t.replace(tzinfo=tz)
    return t


def read_lab_csv(path: str | Path, *, sites: set[str] | None = None, tz: tzinfo | None = None,
                 now: datetime | None = None, text: str | None = None,
                 site_tz: dict[str, tzinfo] | None = None) -> LabFile:
    """Read and validate a lab CSV (every row in memory: ``surcharge``'s files; the import
    streams with :class:`LabReader`).

    Parameters
    ----------
    path : path-like
        The file (named in every message).
    sites : set of str, optional
        The known site ids; a row naming another site is bad. None accepts any site.
    tz : tzinfo, optional
        Time zone of dates and times without an offset (default: a date is midnight UTC, a
        time without offset is a bad row).
    site_tz : dict, optional
        site -> time zone, taking precedence over ``tz`` (e.g. each site's pack time zone).
    now : datetime, optional
        Rows collected more than a day after ``now`` are bad (default: the current time).
    text : str, optional
        The file's text, when already read.

    Returns
    -------
    LabFile
        Good rows and bad rows (line, reason, raw text).

    Raises
    ------
    InputError
        When the file as a whole is unusable (missing, a header that is not UTF-8, no header,
        missing columns).
    """
    reader = LabReader(path, sites=sites, tz=tz, now=now, site_tz=site_tz, text=text)
    rows: list[LabRow] = []
    bad: list[BadRow] = []
    for item in reader:
        (rows if isinstance(item, LabRow) else bad).append(item)
    return LabFile(str(path), rows, bad, reader.columns)


class LabReader:
    """The rows of a lab CSV, one at a time, in file order: each a :class:`LabRow` or a
    :class:`BadRow` (see :func:`read_lab_csv` for the parameters).

    Parameters
    ----------
    cross_checks : bool
        Check rows against earlier rows of the file too (a result given twice, a sample at
        two sites or times), keeping what that needs in memory. The import turns it off and
        does the same checks in the database, so memory follows one chunk of rows.
    """

    def __init__(self, path: str | Path, *, sites: set[str] | None = None, tz: tzinfo | None = None,
                 now: datetime | None = None, site_tz: dict[str, tzinfo] | None = None, text: str | None = None,
                 cross_checks: bool = True, analytes=(), data: bytes | None = None):
        self.path = str(path)
        self.analytes = tuple(analytes)     # the packs' own analytes (limits.analytes.Analyte)
        self.sites, self.tz, self.site_tz = sites, tz, site_tz
        self.horizon = (now or datetime.now(timezone.utc)) + timedelta(days=1)
        self.cross_checks = cross_checks
        self._text = text
        if data is not None:          # the file's bytes as uploaded (``path`` names it in messages)
            self._f = None
            self._lines = iter(io.BytesIO(data))          # lines as a file in binary mode gives them
        elif text is None:
            try:
                self._f = open(self.path, "rb")
            except FileNotFoundError:
                raise InputError(f"{self.path}: no such file") from None
            except OSError as exc:
                raise InputError(f"{self.path}: cannot read ({exc.strerror})") from None
            self._lines = iter(self._f)
        else:
            self._f = None
            self._lines = iter(text.encode("utf-8").splitlines(keepends=True))
        self.line_no = 0
        try:
            header = self._header()
        except BaseException:
            self.close()
            raise
        self.columns = tuple(h.strip().lower() for h in header)
        missing = [c for c in REQUIRED if c not in self.columns]
        if missing:
            self.close()
            raise InputError(f"{self.path}: line 1: missing column(s) {', '.join(missing)} "
                             f"(expected header {','.join(REQUIRED + OPTIONAL)})")
        dup_cols = sorted({c for c in self.columns if c and self.columns.count(c) > 1})
        if dup_cols:
            self.close()
            raise InputError(f"{self.path}: line 1: column(s) {', '.join(dup_cols)} appear more than once")
        self.idx = {c: self.columns.index(c) for c in REQUIRED + OPTIONAL if c in self.columns}
        self.extra_cols = [(i, c) for i, c in enumerate(self.columns) if c not in self.idx]
        self._seen: dict[tuple[str, str], int] = {}
        self._sample_site: dict[str, tuple] = {}

    def _header(self) -> list[str]:
        rec = self._record()
        if rec is None:
            raise InputError(f"{self.path}: empty file (expected header {','.join(REQUIRED + OPTIONAL)})")
        start, raw = rec
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]                                  # a UTF-8 byte-order mark
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path}: line 1: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        try:
            return next(csv.reader([text]))
        except (csv.Error, StopIteration) as exc:
            raise InputError(f"{self.path}: line 1: {exc or 'empty header'}") from None

    def _record(self) -> tuple[int, bytes] | None:
        """The next record's first line number and bytes (a quoted field may hold line
        breaks: lines are joined until the quotes balance); None at the end."""
        parts = []
        start = self.line_no + 1
        for line in self._lines:
            self.line_no += 1
            parts.append(line)
            if b"".join(parts).count(b'"') % 2 == 0:
                break
        if not parts:
            return None
        return start, b"".join(parts).rstrip(b"\r\n")

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __iter__(self) -> Iterator[LabRow | BadRow]:
        try:
            while (rec := self._record()) is not None:
                start, raw = rec
                item = self._item(start, raw)
                if item is not None:
                    yield item
        finally:
            self.close()

    def _item(self, line: int, raw: bytes) -> LabRow | BadRow | None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return BadRow(line, f"not UTF-8 text ({exc.reason} at byte {exc.start} of the row)",
                          raw.decode("utf-8", "replace"), raw)
        if NUL in text:
            at = raw.index(NUL.encode())
            return BadRow(line, f"a NUL byte at byte {at} of the row (no field may hold one)",
                          text.replace(NUL, "\\x00"), raw)
        try:
            rec = next(csv.reader([text]), [])
        except csv.Error as exc:
            return BadRow(line, f"unreadable CSV ({exc})", text)
        if not rec or all(not f.strip() for f in rec):
            return None  # blank line
        try:
            return _row(rec, self.idx, self.extra_cols, line, text, self.sites, self.tz, self.horizon,
                        self._seen if self.cross_checks else None,
                        self._sample_site if self.cross_checks else None, self.site_tz, self.analytes)
        except ValueError as exc:
            return BadRow(line, str(exc), text)


def check_against_earlier(row: LabRow, seen: dict, sample_site: dict) -> None:
    """The checks of a row against the earlier rows of its file (``seen``: (sample,
    analyte) -> line; ``sample_site``: sample -> (site, line, collected)), recording the row.

    Raises
    ------
    ValueError
        A result given twice, or a sample at two sites or two times.
    """
    key = (row.sample_id, row.analyte)
    if key in seen:
        raise ValueError(f"duplicate result for sample '{row.sample_id}' analyte {row.analyte} "
                         f"(first on line {seen[key]})")
    if row.sample_id in sample_site:
        s, ln, when = sample_site[row.sample_id]
        if s != row.site:
            raise ValueError(f"sample '{row.sample_id}' is at site '{s}' on line {ln}, here at '{row.site}'")
        if when != row.collected:
            raise ValueError(f"sample '{row.sample_id}' was collected {when.isoformat()} on line {ln}, "
                             f"here {row.collected.isoformat()}")
    seen[key] = row.line
    sample_site.setdefault(row.sample_id, (row.site, row.line, row.collected))


def _row(rec, idx, extra_cols, line, raw, sites, tz, horizon, seen, sample_site, site_tz=None, own=()) -> LabRow:
    need = max(idx[c] for c in REQUIRED) + 1
    if len(rec) < need:
        raise ValueError(f"expected at least {need} fields, got {len(rec)}")

    def get(col: str) -> str:
        i = idx.get(col)
        return rec[i].strip() if i is not None and i < len(rec) else ""

    sample_id, site = get("sample_id"), get("site")
    if not sample_id:
        raise ValueError("empty sample_id")
    if not site:
        raise ValueError("empty site")
    if sites is not None and site not in sites:
        raise ValueError(f"unknown site '{site}' (known: {', '.join(sorted(sites)) or 'none'})")
    if site_tz and site in site_tz:
        tz = site_tz[site]
    collected = parse_collected(get("collected"), tz)
    if collected > horizon:
        raise ValueError(f"collected {get('collected')} is in the future")
    analyte = analyte_id(get("analyte"), own)
    if analyte is None:
        raise ValueError(unknown(get("analyte"), own))
    unit = unit_id(get("unit"), analyte, own)
    if unit is None:
        raise ValueError(f"unknown unit '{get('unit')}' for {analyte} (known: {', '.join(units_of(analyte, own))})")
    qualifier = get("qualifier")
    if qualifier not in ("", NON_DETECT):
        raise ValueError(f"unknown qualifier '{qualifier}' (expected empty or '<' for below detection)")
    vtext = get("value")
    value = parse_amount(vtext, "value", "a finite concentration >= 0")
    if qualifier == NON_DETECT and value <= 0:
        raise ValueError(f"non-detect with detection limit {vtext}: the limit must be > 0")
    extra = {c: rec[i] for i, c in extra_cols if i < len(rec) and c}
    row = LabRow(line, sample_id, site, collected, analyte, value, unit, qualifier,
                 to_stored(value, unit, analyte, own), raw, extra)
    if seen is not None:
        check_against_earlier(row, seen, sample_site)
    return row
