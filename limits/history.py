"""Re-evaluating history: readings from the database, judged by each site's pack.

``sewerwatch check --from T --to T`` reads ``readings`` joined with ``sensors`` and
``sites`` for the range with a binary ``COPY (SELECT ...) TO STDOUT (FORMAT BINARY)``,
parses the tuples straight into numpy (a structured big-endian dtype over the fixed-size
binary rows: the query makes every field non-NULL so every row has the same 40 bytes),
evaluates each site by its own rule pack and optionally stores the violations. Sensors are
read and evaluated in groups (64 at a time), so memory follows a group, not the range.

The range read starts one slug window (24 h) plus the gap limit before ``--from``, so a
slug at ``--from`` is judged on a full trailing average; episodes that end before
``--from`` are not reported. Each sensor's first reading ever (from the database) decides
whether a full window of history exists.
"""

from __future__ import annotations

import json
import sys
import time as _time
from datetime import datetime, timezone

import numpy as np
from psycopg import sql

from foundation.errors import DatabaseError, InputError
from limits import core
from limits.evaluator import DEFAULT_GAP_MULTIPLE, SensorMeta, evaluate, violations
from limits.packs import load_pack

#: PostgreSQL's binary COPY: signature, then flags and header extension length (int32 each).
PGCOPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
#: timestamptz on the wire: microseconds since 2000-01-01 UTC.
PG_EPOCH_US = 946_684_800 * core.US

#: One row of ``SELECT sensor_id::int4, time, coalesce(value, 'NaN')::float8, quality::int2``.
ROW_DTYPE = np.dtype([
    ("nfields", ">i2"),
    ("len_sensor", ">i4"), ("sensor", ">i4"),
    ("len_time", ">i4"), ("time", ">i8"),
    ("len_value", ">i4"), ("value", ">f8"),
    ("len_quality", ">i4"), ("quality", ">i2"),
])
_EXPECTED_LENGTHS = {"nfields": 4, "len_sensor": 4, "len_time": 8, "len_value": 8, "len_quality": 2}

READINGS_COPY = """
COPY (
  SELECT r.sensor_id::int4, r.time, coalesce(r.value, 'NaN'::float8)::float8, r.quality::int2
  FROM readings r
  WHERE r.time >= {start} AND r.time < {end} AND r.sensor_id = ANY({ids})
  ORDER BY r.sensor_id, r.time
) TO STDOUT (FORMAT BINARY)
"""


def parse_time_arg(text: str, name: str) -> int:
    """An ISO-8601 command-line time -> [us UTC]; without an offset it is UTC."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{name}: not an ISO-8601 time: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(round(dt.timestamp() * core.US))


class BinaryCopyParser:
    """Incremental parser of a binary COPY stream of :data:`ROW_DTYPE` rows.

    The server sends about one message per row; :meth:`feed` only collects them, and the
    rows are parsed by numpy once ``flush_bytes`` have gathered (a Python step per row would
    cost more than the whole numpy parse).
    """

    def __init__(self, flush_bytes: int = 8 << 20):
        self._pending: list = []
        self._pending_bytes = 0
        self._rest = b""
        self._header_done = False
        self._parts: list[np.ndarray] = []
        self.flush_bytes = flush_bytes
        self.rows = 0
        self.bytes = 0

    def feed(self, data) -> None:
        self._pending.append(bytes(data))
        self._pending_bytes += len(data)
        if self._pending_bytes >= self.flush_bytes:
            self._parse()

    def _parse(self) -> None:
        buf = self._rest + b"".join(self._pending)
        self.bytes += self._pending_bytes
        self._pending, self._pending_bytes = [], 0
        if not self._header_done:
            if len(buf) < 19 or len(buf) < 19 + int.from_bytes(buf[15:19], "big"):
                self._rest = buf
                return
            if buf[:11] != PGCOPY_SIGNATURE:
                raise DatabaseError("binary COPY: unexpected signature")
            buf = buf[19 + int.from_bytes(buf[15:19], "big"):]
            self._header_done = True
        size = ROW_DTYPE.itemsize
        n = len(buf) // size
        if n:
            rows = np.frombuffer(buf, dtype=ROW_DTYPE, count=n)
            for f, want in _EXPECTED_LENGTHS.items():
                if (rows[f] != want).any():
                    raise DatabaseError(f"binary COPY: unexpected {f} (not {want}); NULL in a column?")
            self._parts.append(rows)
            self.rows += n
        self._rest = buf[n * size:]

    def result(self):
        """sensor (int64), time [us UTC], value, quality arrays."""
        self._parse()
        if self._rest not in (b"\xff\xff", b""):
            raise DatabaseError(f"binary COPY: {len(self._rest)} trailing bytes that are no row")
        rows = np.concatenate(self._parts) if self._parts else np.empty(0, dtype=ROW_DTYPE)
        return (rows["sensor"].astype(np.int64), rows["time"].astype(np.int64) + PG_EPOCH_US,
                rows["value"].astype(np.float64), rows["quality"].astype(np.int16))


def read_readings(conn, sensor_ids, start_us: int, end_us: int, progress: bool = False, label: str = ""):
    """Readings of ``sensor_ids`` in ``[start, end)`` via binary COPY, sorted by sensor, time."""

    q = sql.SQL(READINGS_COPY).format(
        start=sql.Literal(datetime.fromtimestamp(start_us / core.US, timezone.utc)),
        end=sql.Literal(datetime.fromtimestamp(end_us / core.US, timezone.utc)),
        ids=sql.Literal(list(map(int, sensor_ids))))
    parser = BinaryCopyParser()
    t0 = last = _time.monotonic()
    with conn.cursor() as cur, cur.copy(q) as copy:
        for data in copy:
            parser.feed(data)
            if not progress or parser._pending_bytes:
                continue
            now = _time.monotonic()
            if now - last > 0.5:
                last = now
                print(f"\rreading {label}: {parser.rows:,} readings, {parser.bytes / 1e6:.0f} MB, "
                      f"{parser.rows / max(now - t0, 1e-9):,.0f}/s", end="", file=sys.stderr, flush=True)
    result = parser.result()
    if progress:
        el = _time.monotonic() - t0
        print(f"\rreading {label}: {parser.rows:,} readings in {el:.1f} s" + " " * 20, file=sys.stderr, flush=True)
    return result


def parse_range(from_: str, to: str) -> tuple[int, int]:
    """``--from``/``--to`` as [us UTC], the end after the start."""
    start_us, end_us = parse_time_arg(from_, "--from"), parse_time_arg(to, "--to")
    if end_us <= start_us:
        raise InputError(f"--to ({to}) must be after --from ({from_})")
    return start_us, end_us


def check_history(from_: str, to: str, conn, *, pack: str | None = None, sites=None, store: bool = False,
                  gap_multiple: float | None = None, progress: bool = True,
                  sensors_per_read: int = 64) -> list[dict]:
    """Re-evaluate readings of ``[from_, to)`` in the database.

    Parameters
    ----------
    from_, to : str
        ISO-8601 times (UTC if without offset).
    conn : psycopg.Connection
        The database (owner role when ``store``).
    pack : str, optional
        Judge every site by this pack instead of its own (``sites.pack``).
    sites : list of str, optional
        Site keys to evaluate (default: all).
    store : bool
        Upsert the violations into ``violations`` (source ``batch``; an episode already
        stored with the same sensor, rule and start is updated).
    sensors_per_read : int
        Sensors read and evaluated together (memory follows one group).

    Returns
    -------
    list of dict
        The records of :func:`limits.evaluator.violations`, each with ``site_id`` and
        ``sensor_id`` added.
    """
    start_us, end_us = parse_range(from_, to)
    gm = gap_multiple or DEFAULT_GAP_MULTIPLE
    return _check(conn, start_us, end_us, pack, sites, store, gm, progress, sensors_per_read)


def _check(conn, start_us, end_us, pack_override, sites, store, gm, progress, sensors_per_read=64):
    rows = conn.execute(
        "SELECT se.id, se.name, se.parameter, se.interval_s, si.id, si.key, si.pack "
        "FROM sensors se JOIN sites si ON si.id = se.site_id "
        "WHERE (%s::text[] IS NULL OR si.key = ANY(%s::text[])) ORDER BY se.id",
        (sites, sites)).fetchall()
    if sites:
        missing = sorted(set(sites) - {r[5] for r in rows})
        if missing:
            raise InputError(f"--site: no sensors for site(s) {', '.join(missing)} in the database")
    by_pack: dict[str, dict[int, SensorMeta]] = {}
    site_of: dict[int, int] = {}
    for sid, name, param, interval_s, site_id, site_key, site_pack in rows:
        pk = pack_override or site_pack
        if not pk:
            raise InputError(f"site {site_key!r} has no rule pack; give --pack")
        by_pack.setdefault(pk, {})[sid] = SensorMeta(param, interval_s, site=site_key, name=name)
        site_of[sid] = site_id
    packs = {name: load_pack(name) for name in by_pack}
    window = max((int(r.window_h * core.HOUR_US) for p in packs.values() for r in p.continuous_rules()
                  if r.kind == "slug"), default=0)
    max_interval = max((m.interval_s or 60.0 for metas in by_pack.values() for m in metas.values()),
                       default=60.0)
    lead = window + int(gm * max_interval * core.US)
    ids = sorted(site_of)
    if not ids:
        return []
    # each sensor's first reading ever, by the (sensor_id, time) index, not a scan
    first = dict(conn.execute(
        "SELECT s.id, (SELECT r.time FROM readings r WHERE r.sensor_id = s.id ORDER BY r.time LIMIT 1) "
        "FROM unnest(%s::int[]) AS s(id)", (ids,)).fetchall())
    history = {sid: int(round(t.timestamp() * core.US)) for sid, t in first.items() if t is not None}
    records = []
    for name, metas in by_pack.items():
        pk = packs[name]
        group_ids = sorted(metas)
        for g in range(0, len(group_ids), sensors_per_read):
            group = group_ids[g:g + sensors_per_read]
            label = f"{name}: sensors {g + 1}-{g + len(group)} of {len(group_ids)}"
            s, t, v, q = read_readings(conn, group, start_us - lead, end_us, progress=progress, label=label)
            eps = evaluate(pk, s, t, v, q, meta=metas, gap_multiple=gm, history_start=history)
            del s, t, v, q
            eps = eps[eps["last"] >= start_us]
            recs = violations(eps, pk, pk, metas)
            for r, code in zip(recs, eps["sensor"].tolist()):
                r["sensor_id"], r["site_id"] = code, site_of[code]
            records += recs
    records.sort(key=lambda r: (r["site"], r["sensor"], r["start"], r["rule"]))
    if store:
        n = store_violations(conn, records)
        if progress:
            print(f"stored: {n} violation(s)", file=sys.stderr)
    return records


def store_violations(conn, records: list[dict]) -> int:
    """Upsert violation records into ``violations``; returns the number of rows written."""
    if not records:
        return 0
    evidence_keys = ("last", "duration_s", "peak_time", "readings", "comparison", "average", "multiple")
    rows = [(r["site_id"], r["sensor_id"], r["parameter"], r["rule"], r["pack"], r["citation"], r["words"],
             r["start"], r["end"], r["peak"], r["limit"], r["unit"], r["days_of_violation"],
             json.dumps({k: r[k] for k in evidence_keys if k in r}))
            for r in records]
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, start_time, "
            "end_time, peak, limit_value, unit, days_of_violation, evidence, source) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, 'batch') "
            "ON CONFLICT (sensor_id, rule, start_time) DO UPDATE SET end_time = EXCLUDED.end_time, "
            "peak = EXCLUDED.peak, limit_value = EXCLUDED.limit_value, "
            "days_of_violation = EXCLUDED.days_of_violation, evidence = EXCLUDED.evidence, "
            "detected_at = now()", rows)
    conn.commit()
    return len(rows)
