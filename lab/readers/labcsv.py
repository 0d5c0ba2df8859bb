"""Read a lab results CSV, row by row, keeping every bad row with its line number and reason.

The format (DESIGN.md, promised interfaces): header
``sample_id,site,collected,analyte,value,unit,qualifier`` in any order, extra columns
allowed (labs add method, analyst, detection limit ...; they are kept as ``extra``);
``qualifier`` may be missing. ``collected`` is an ISO-8601 date or a time with offset;
``analyte`` one of :data:`lab.readers.analytes.ANALYTES`; ``unit`` ``mg/l`` or ``ug/l`` (``ppm``
also accepted); ``qualifier`` empty or ``<`` (below the detection limit; the value is then
the detection limit).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path

from lab.readers.analytes import ANALYTES, NON_DETECT, analyte_id, to_stored, unit_id, units_of
from foundation.errors import InputError

REQUIRED = ("sample_id", "site", "collected", "analyte", "value", "unit")
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
    """A row that could not be used: where, why and its raw text."""

    line: int
    reason: str
    raw: str


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
    """Read and validate a lab CSV.

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
        When the file as a whole is unusable (missing, not UTF-8, no header, missing columns).
    """
    path = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{path}: empty file (expected header {','.join(REQUIRED + OPTIONAL)})") from None
    except csv.Error as exc:
        raise InputError(f"{path}: line 1: {exc}") from None
    columns = tuple(h.strip().lower() for h in header)
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise InputError(f"{path}: line 1: missing column(s) {', '.join(missing)} "
                         f"(expected header {','.join(REQUIRED + OPTIONAL)})")
    dup_cols = sorted({c for c in columns if c and columns.count(c) > 1})
    if dup_cols:
        raise InputError(f"{path}: line 1: column(s) {', '.join(dup_cols)} appear more than once")
    idx = {c: columns.index(c) for c in REQUIRED + OPTIONAL if c in columns}
    extra_cols = [(i, c) for i, c in enumerate(columns) if c not in idx]
    now = now or datetime.now(timezone.utc)
    horizon = now + timedelta(days=1)

    rows: list[LabRow] = []
    bad: list[BadRow] = []
    seen: dict[tuple[str, str], int] = {}
    sample_site: dict[str, tuple[str, int]] = {}
    prev_end = reader.line_num
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            start = prev_end + 1
            bad.append(BadRow(start, f"unreadable CSV ({exc})", "\n".join(lines[start - 1:reader.line_num])))
            prev_end = reader.line_num
            continue
        start, end = prev_end + 1, reader.line_num
        prev_end = end
        raw = "\n".join(lines[start - 1:end])
        if not rec or all(not f.strip() for f in rec):
            continue  # blank line
        try:
            rows.append(_row(rec, idx, extra_cols, start, raw, sites, tz, horizon, seen, sample_site, site_tz))
        except ValueError as exc:
            bad.append(BadRow(start, str(exc), raw))
    return LabFile(path, rows, bad, columns)


def _row(rec, idx, extra_cols, line, raw, sites, tz, horizon, seen, sample_site, site_tz=None) -> LabRow:
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
    analyte = analyte_id(get("analyte"))
    if analyte is None:
        raise ValueError(f"unknown analyte '{get('analyte')}' (known: {', '.join(ANALYTES)})")
    unit = unit_id(get("unit"), analyte)
    if unit is None:
        raise ValueError(f"unknown unit '{get('unit')}' for {analyte} (known: {', '.join(units_of(analyte))})")
    qualifier = get("qualifier")
    if qualifier not in ("", NON_DETECT):
        raise ValueError(f"unknown qualifier '{qualifier}' (expected empty or '<' for below detection)")
    vtext = get("value")
    value = parse_amount(vtext, "value", "a finite concentration >= 0")
    if qualifier == NON_DETECT and value <= 0:
        raise ValueError(f"non-detect with detection limit {vtext}: the limit must be > 0")
    key = (sample_id, analyte)
    if key in seen:
        raise ValueError(f"duplicate result for sample '{sample_id}' analyte {analyte} (first on line {seen[key]})")
    if sample_id in sample_site:
        s, ln, when = sample_site[sample_id]
        if s != site:
            raise ValueError(f"sample '{sample_id}' is at site '{s}' on line {ln}, here at '{site}'")
        if when != collected:
            raise ValueError(f"sample '{sample_id}' was collected {when.isoformat()} on line {ln}, "
                             f"here {collected.isoformat()}")
    seen[key] = line
    sample_site.setdefault(sample_id, (site, line, collected))
    extra = {c: rec[i] for i, c in extra_cols if i < len(rec) and c}
    return LabRow(line, sample_id, site, collected, analyte, value, unit, qualifier,
                  to_stored(value, unit, analyte), raw, extra)
