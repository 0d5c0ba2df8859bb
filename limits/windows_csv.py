"""Maintenance windows for ``sewerwatch check --readings``: a small CSV beside the
readings, and the ``quality`` column's code 3.

A check of a file needs no database, so its windows come with it, one of two ways:

* ``--windows FILE.csv`` with header ``site,parameter,start,end,reason,person`` (``parameter``
  empty: every sensor of the site; ``end`` empty: to the end of the readings; times ISO-8601
  with their offset, as in the readings), e.g.::

      site,parameter,start,end,reason,person
      candy,ph,2026-06-01T09:00:00-05:00,2026-06-01T09:06:00-05:00,calibration,J. Smith

* the readings' own ``quality`` column: 3 marks a reading taken in a window (the code
  ``sewerwatch`` stores, :mod:`foundation.quality`), as a historian that knows its
  maintenance mode exports it.

Either way the readings in a window are not judged, nor counted in a slug's baseline, and
``check`` lists each window with the readings it kept from being judged.
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import numpy as np

from foundation.errors import InputError
from foundation.quality import MAINTENANCE
from foundation.windows import OPEN_END, Window, Windows

HEADER = ("site", "parameter", "start", "end", "reason", "person")
US = 1_000_000


def _time(text: str, where: str) -> int:
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: not an ISO-8601 time: {text!r}") from None
    if t.tzinfo is None:
        raise InputError(f"{where}: {text!r} has no UTC offset (e.g. 2026-06-01T09:00:00-05:00)")
    return int(round(t.timestamp() * US))


def read_windows_csv(path: str | Path, meta: dict) -> tuple[Windows, list[dict]]:
    """The windows of a windows CSV for the sensors ``meta`` (code -> SensorMeta with
    ``site`` and ``parameter``, as :func:`limits.csvio.read_readings_csv` gives them).

    Returns
    -------
    (Windows, list of dict)
        The windows by sensor code, and each window's row (``line``, ``site``, ``parameter``,
        ``start``, ``end``, ``reason``, ``person``, ``codes``) for the notes.
    """
    p = Path(path)
    try:
        fh = p.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"{path}: cannot read the windows file ({exc.strerror or exc})") from None
    by_site: dict[str, dict[str, int]] = {}
    for code, m in meta.items():
        by_site.setdefault(m.site, {})[m.parameter] = code
    items, rows = [], []
    with fh:
        reader = csv.reader(fh)
        head = next(reader, None)
        if head is None or tuple(h.strip().lower() for h in head) [:len(HEADER)] != HEADER:
            raise InputError(f"{path}: line 1: expected the header {','.join(HEADER)}, got {','.join(head or [])!r}")
        for n, row in enumerate(reader, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            where = f"{path}: line {n}"
            if len(row) < len(HEADER):
                raise InputError(f"{where}: expected {len(HEADER)} fields ({','.join(HEADER)}), got {len(row)}")
            site, param, start, end, reason, person = (x.strip() for x in row[:len(HEADER)])
            if not reason:
                raise InputError(f"{where}: a window needs a reason")
            if not person:
                raise InputError(f"{where}: a window needs a person")
            a = _time(start, f"{where}: start")
            b = _time(end, f"{where}: end") if end else OPEN_END
            if b <= a:
                raise InputError(f"{where}: the end {end} is not after the start {start}")
            if site not in by_site:
                raise InputError(f"{where}: site {site!r} has no readings in the file "
                                 f"(sites: {', '.join(sorted(by_site)) or 'none'})")
            if param and param not in by_site[site]:
                raise InputError(f"{where}: site {site!r} has no {param} readings in the file "
                                 f"(its parameters: {', '.join(sorted(by_site[site]))})")
            codes = [by_site[site][param]] if param else sorted(by_site[site].values())
            items += [Window(None, c, a, b, None, reason, person) for c in codes]
            rows.append({"line": n, "site": site, "parameter": param or None, "start": start, "end": end or None,
                         "reason": reason, "person": person, "codes": codes, "start_us": a, "end_us": b})
    return Windows.of(items), rows


def notes(tab, windows: Windows, rows: list[dict]) -> list[dict]:
    """What ``check`` says about maintenance in a file: each window of ``--windows`` with the
    readings it kept from being judged, and the readings the ``quality`` column marks 3."""
    out = []
    for r in rows:
        m = np.isin(tab.sensor, r["codes"]) & (tab.time >= r["start_us"]) & (tab.time < r["end_us"])
        n = int(m.sum())
        scope = f"{r['site']}/{r['parameter']}" if r["parameter"] else f"{r['site']} (the whole site)"
        out.append({"window": {k: r[k] for k in ("site", "parameter", "start", "end", "reason", "person")},
                    "line": f"maintenance window: {scope} {r['start']} to {r['end'] or 'the end of the readings'} "
                            f"({r['reason']}, {r['person']}): {n} reading{'s' if n != 1 else ''} not judged"})
    marked = tab.quality == MAINTENANCE
    if windows:
        marked &= ~windows.inside(tab.sensor, tab.time)
    if marked.any():
        codes, counts = np.unique(tab.sensor[marked], return_counts=True)
        per = ", ".join(f"{tab.meta[c].site}/{tab.meta[c].parameter}: {k}" for c, k in zip(codes.tolist(),
                                                                                          counts.tolist()))
        total = int(counts.sum())
        out.append({"line": f"{total} reading{'s' if total != 1 else ''} marked 3 (maintenance) in the quality column "
                            f"{'were' if total != 1 else 'was'} not judged ({per})"})
    return out
