"""Re-evaluating history: readings from the database, judged by each site's pack.

``sewerwatch check --from T --to T`` judges ``[from, to)`` in **time windows per sensor
group**, in bounded memory: the sensors of one pack are taken in groups
(``sensors_per_read``), each group's range is cut into windows of about
``window_readings`` readings, and the windows are pushed in time order into one
:class:`limits.streaming.StreamingEvaluator` per group, which carries what later readings
still need (the trailing 24 h of a slug-judged sensor, open episodes) from window to window.
The streaming evaluator gives the batch evaluator's episodes whatever the batch boundaries
(``tests/test_limits_streaming.py``), so the result equals one batch evaluation of the
whole range; peak memory follows the number of sensors in a group and the 24-h slug window,
not the range. (An episode still open keeps its readings in the evaluator until it ends:
a pH probe in violation for a month holds that month.)

Reading: each window is one ``COPY (SELECT ...) TO STDOUT (FORMAT BINARY)`` that returns
one row per sensor with its readings as three arrays (``array_agg`` over the rows in
(sensor, time) order), so the client receives a few large messages instead of one message
per reading, and numpy parses the arrays' fixed-size elements in place. ``readers``
threads, each with its own connection, read windows ahead while the calling thread judges
(at most ``readers + 1`` windows are held), so reading overlaps judging and the server
works on several windows at once.

The range read starts two slug windows (48 h) plus the gap limit before ``--from``, so a
slug at ``--from`` is judged on a full trailing average during normal operation (whether
each reading of that window was itself above the slug line is judged on a window of its
own); episodes that end before ``--from`` are not reported. Each site is judged by its
pack merged with its current discharge permit (``limits.permits.site_pack``: the stricter
of the two; the permit's average daily flow is the slug baseline before 24 hours of
readings). Each sensor's first reading ever (from the database) decides
whether a full window of history exists. A sensor without a nominal interval
(``sensors.interval_s`` NULL) gets the median spacing of its readings in the first window
(the whole-range evaluation took the whole range's median: the same for a sensor sampled
at a steady rate).
"""

from __future__ import annotations

import json
import sys
import threading
import time as _time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import psycopg
from psycopg import sql

from foundation.errors import DatabaseError, InputError
from foundation import moments
from foundation.windows import load as load_windows
from foundation.windows import on_record as windows_on_record
from limits import core
from limits.evaluator import DEFAULT_GAP_MULTIPLE, NO_BASELINE, SensorMeta, iso_utc, violations
from limits.packs import load_pack
from limits.permit_store import current_permits
from limits.permits import site_pack
from limits.streaming import StreamingEvaluator

#: PostgreSQL's binary COPY: signature, then flags and header extension length (int32 each).
PGCOPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
#: timestamptz on the wire: microseconds since 2000-01-01 UTC.
PG_EPOCH_US = 946_684_800 * core.US

#: Readings a window of one sensor group holds, about (memory: ~60 bytes a reading while
#: read, parsed and judged).
WINDOW_READINGS = 250_000
#: Window length bounds [us].
MIN_WINDOW_US = 10 * core.MINUTE_US
MAX_WINDOW_US = 31 * core.DAY_US
#: Reader threads (connections) by default.
DEFAULT_READERS = 2

#: One row per sensor: its readings in the window as arrays, in time order.
WINDOW_COPY = """
COPY (
  SELECT w.sensor_id::int4, array_agg(w.time), array_agg(w.value), array_agg(w.quality)
  FROM (
    SELECT r.sensor_id, r.time, coalesce(r.value, 'NaN'::float8)::float8 AS value, r.quality::int2 AS quality
    FROM readings r
    WHERE r.time >= {start} AND r.time < {end} AND r.sensor_id = ANY({ids})
    ORDER BY r.sensor_id, r.time
  ) w
  GROUP BY w.sensor_id
  ORDER BY w.sensor_id
) TO STDOUT (FORMAT BINARY)
"""

#: Binary array elements: (type oid, big-endian numpy type) of the three arrays.
_ELEMENTS = ((1184, ">i8"), (701, ">f8"), (21, ">i2"))   # timestamptz, float8, int2


def parse_time_arg(text: str, name: str, tz=timezone.utc) -> int:
    """A command-line date or time -> [us UTC] (:func:`foundation.moments.instant`: a date is
    local midnight in ``tz``, a time without an offset ``tz``'s wall clock)."""
    return _us(moments.instant(text, name, tz))


def parse_range(from_: str, to: str, tz=timezone.utc) -> tuple[int, int]:
    """``--from``/``--to`` as [us UTC], the end after the start (dates local to ``tz``)."""
    a, b = moments.span(from_, to, tz, ("--from", "--to"))
    return _us(a), _us(b)


# --- reading a window ------------------------------------------------------------------


def _array(buf: memoryview, pos: int, size: int, oid: int, dtype: str) -> np.ndarray:
    """A one-dimensional binary array without NULLs (PostgreSQL ``array_send``) as numpy."""
    ndim, hasnull, elem = np.frombuffer(buf, dtype=">i4", count=3, offset=pos)
    if ndim == 0:
        return np.empty(0, dtype=dtype)
    if ndim != 1 or hasnull or elem != oid:
        raise DatabaseError(f"binary COPY: unexpected array (ndim {ndim}, nulls {hasnull}, type {elem})")
    n = int(np.frombuffer(buf, dtype=">i4", count=1, offset=pos + 12)[0])
    width = np.dtype(dtype).itemsize
    if size != 20 + n * (4 + width):
        raise DatabaseError("binary COPY: array length does not match its elements")
    el = np.frombuffer(buf, dtype=[("len", ">i4"), ("v", dtype)], count=n, offset=pos + 20)
    if (el["len"] != width).any():
        raise DatabaseError("binary COPY: array element of unexpected length")
    return el["v"]


def parse_window(data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The binary COPY stream of :data:`WINDOW_COPY` -> sensor (int64), time [us UTC],
    value, quality arrays, sorted by sensor then time.

    Parameters
    ----------
    data : bytes-like
        The whole stream (header, rows, trailer).
    """
    buf = memoryview(data)
    if len(buf) < 19 or bytes(buf[:11]) != PGCOPY_SIGNATURE:
        raise DatabaseError("binary COPY: unexpected signature")
    pos = 19 + int.from_bytes(buf[15:19], "big")
    sensors, times, values, quals = [], [], [], []
    while True:
        if pos + 2 > len(buf):
            raise DatabaseError("binary COPY: stream ends without its trailer")
        nf = int.from_bytes(buf[pos:pos + 2], "big", signed=True)
        pos += 2
        if nf == -1:
            break
        if nf != 4:
            raise DatabaseError(f"binary COPY: {nf} fields in a row, expected 4")
        fields = []
        for _ in range(4):
            size = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
            if size < 0:
                raise DatabaseError("binary COPY: NULL field")
            fields.append((pos + 4, size))
            pos += 4 + size
        if pos > len(buf):
            raise DatabaseError("binary COPY: row runs past the end of the stream")
        sensor = int.from_bytes(buf[fields[0][0]:fields[0][0] + 4], "big", signed=True)
        cols = [_array(buf, p, n, oid, dt) for (p, n), (oid, dt) in zip(fields[1:], _ELEMENTS)]
        if not len(cols[0]) == len(cols[1]) == len(cols[2]):
            raise DatabaseError("binary COPY: arrays of one sensor differ in length")
        sensors.append(np.full(len(cols[0]), sensor, dtype=np.int64))
        times.append(cols[0])
        values.append(cols[1])
        quals.append(cols[2])
    if pos != len(buf):
        raise DatabaseError(f"binary COPY: {len(buf) - pos} trailing bytes after the trailer")
    if not sensors:
        e = np.empty(0, dtype=np.int64)
        return e, e.copy(), np.empty(0), np.empty(0, dtype=np.int16)
    s = np.concatenate(sensors)
    t = np.concatenate(times).astype(np.int64) + PG_EPOCH_US
    v = np.concatenate(values).astype(np.float64)
    q = np.concatenate(quals).astype(np.int16)
    # array_agg over the sorted subquery keeps its order (PostgreSQL: "usually"): check
    if len(t) > 1:
        same = s[1:] == s[:-1]
        if (same & (t[1:] <= t[:-1])).any():
            order = np.lexsort((t, s))
            s, t, v, q = s[order], t[order], v[order], q[order]
    return s, t, v, q


def read_readings(conn, sensor_ids, start_us: int, end_us: int):
    """Readings of ``sensor_ids`` in ``[start, end)``, sorted by sensor then time.

    Returns
    -------
    sensor (int64), time [us UTC], value (NaN for NULL), quality (int16) : ndarray
    """
    q = sql.SQL(WINDOW_COPY).format(
        start=sql.Literal(datetime.fromtimestamp(start_us / core.US, timezone.utc)),
        end=sql.Literal(datetime.fromtimestamp(end_us / core.US, timezone.utc)),
        ids=sql.Literal(list(map(int, sensor_ids))))
    buf = bytearray()
    with conn.cursor() as cur, cur.copy(q) as copy:
        for data in copy:
            buf += data
    return parse_window(buf)


# --- the plan: sensor groups and time windows ---------------------------------------------


@dataclass(frozen=True)
class Group:
    """Sensors of one pack judged together, and the windows their range is read in."""

    pack: str
    label: str
    ids: tuple[int, ...]
    windows: tuple[tuple[int, int], ...]   # [start, end) [us UTC], in time order


def windows(start_us: int, end_us: int, readings_per_us: float, window_readings: int = WINDOW_READINGS):
    """``[start, end)`` cut into windows of about ``window_readings`` readings."""
    length = int(window_readings / max(readings_per_us, 1e-12))
    length = min(max(length, MIN_WINDOW_US), MAX_WINDOW_US)
    edges = list(range(start_us, end_us, length)) + [end_us]
    return tuple(zip(edges[:-1], edges[1:]))


class _Readers:
    """Reader threads with a connection each; windows read ahead in submission order."""

    def __init__(self, connect, n: int):
        self._connect = connect
        self._local = threading.local()
        self._conns: list = []
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max(1, n), thread_name_prefix="history-read")

    def _read(self, ids, a, b):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
            with self._lock:
                self._conns.append(conn)
        return read_readings(conn, ids, a, b)

    def submit(self, ids, a, b):
        return self._pool.submit(self._read, ids, a, b)

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)
        for c in self._conns:
            c.close()


def reader_connect(conn):
    """A function opening another connection like ``conn`` (autocommit, no JIT: each window's
    query is cheap to plan and JIT compiling it costs more than it saves)."""
    dsn, password = conn.info.dsn, conn.info.password

    def connect():
        try:
            return psycopg.connect(dsn, password=password, autocommit=True, options="-c jit=off")
        except psycopg.OperationalError as exc:
            raise DatabaseError(f"cannot open a reader connection: {str(exc).strip().splitlines()[0]}") from None
    return connect


# --- checking a range ---------------------------------------------------------------------


def check_history(from_: str, to: str, conn, *, pack: str | None = None, sites=None, store: bool = False,
                  gap_multiple: float | None = None, progress: bool = True,
                  sensors_per_read: int = 64, window_readings: int = WINDOW_READINGS,
                  readers: int = DEFAULT_READERS, connect=None, stats: dict | None = None,
                  notes: list | None = None, tz=timezone.utc) -> list[dict]:
    """Re-evaluate readings of ``[from_, to)`` in the database.

    Parameters
    ----------
    from_, to : str
        Dates or ISO-8601 times (:func:`parse_range`: a date is local midnight in ``tz``, a
        time without an offset ``tz``'s wall clock).
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
        Sensors judged together (one streaming evaluator each group).
    window_readings : int
        About how many readings of a group one window holds (memory follows it).
    readers : int
        Connections reading windows in parallel, ahead of the judging.
    connect : callable, optional
        Opens a reader connection (default: like ``conn``, :func:`reader_connect`).
    stats : dict, optional
        Filled with ``readings``, ``windows``, ``read_wait_s`` (time the judging waited for
        a window) and ``seconds``.
    notes : list, optional
        Extended with what could not be judged: one note per sensor whose slug had no
        baseline for part of the range (:func:`slug_not_judged_in_range`), and every
        maintenance window on record in the range (readings in a window in effect
        are not judged; one awaiting approval or rejected excludes nothing), as
        ``{"window": ..., "line": ...}`` (:func:`foundation.windows.on_record`).
    tz : zoneinfo.ZoneInfo
        The village's time zone for ``from_`` and ``to`` (default UTC).

    Returns
    -------
    list of dict
        The records of :func:`limits.evaluator.violations`, each with ``site_id`` and
        ``sensor_id`` added.
    """
    start_us, end_us = parse_range(from_, to, tz)
    gm = gap_multiple or DEFAULT_GAP_MULTIPLE
    began = _time.monotonic()
    metas, site_of, packs = _sensors(conn, pack, sites)
    if not site_of:
        return []
    window = max((int(r.window_h * core.HOUR_US) for p in packs.values() for r in p.continuous_rules()
                  if r.kind == "slug"), default=0)
    max_interval = max((m.interval_s or 60.0 for ms in metas.values() for m in ms.values()), default=60.0)
    lead = 2 * window + int(gm * max_interval * core.US)
    ids = sorted(site_of)
    # each sensor's first reading ever, by the (sensor_id, time) index, not a scan
    first = dict(conn.execute(
        "SELECT s.id, (SELECT r.time FROM readings r WHERE r.sensor_id = s.id ORDER BY r.time LIMIT 1) "
        "FROM unnest(%s::int[]) AS s(id)", (ids,)).fetchall())
    history = {sid: _us(t) for sid, t in first.items() if t is not None}
    # readings in a maintenance window are not judged, nor in a slug's baseline
    maintenance = load_windows(conn, ids, start_us - lead, end_us)
    if notes is not None:
        notes += slug_not_judged_in_range(conn, metas, packs, history, start_us, end_us)
        from foundation.windows import note_line as window_line
        notes += [{"window": w, "line": window_line(w)} for w in windows_on_record(conn, ids, start_us, end_us)]
    conn.commit()   # no transaction left open while the readers work
    groups = []
    for name, ms in metas.items():
        gids = sorted(ms)
        for g in range(0, len(gids), sensors_per_read):
            part = tuple(gids[g:g + sensors_per_read])
            rate = sum(1.0 / ((ms[i].interval_s or 1.0) * core.US) for i in part)
            groups.append(Group(name, f"{name}: sensors {g + 1}-{g + len(part)} of {len(gids)}", part,
                                windows(start_us - lead, end_us, rate, window_readings)))
    found = []
    st = {"readings": 0, "windows": 0, "read_wait_s": 0.0}
    pool = _Readers(connect or reader_connect(conn), readers)
    try:
        tasks = [(gi, w) for gi, g in enumerate(groups) for w in g.windows]
        ahead: deque = deque()
        nxt = 0
        evaluator, current = None, -1
        for _ in range(len(tasks)):
            while nxt < len(tasks) and len(ahead) <= readers:
                gi, (a, b) = tasks[nxt]
                ahead.append((gi, a, b, pool.submit(groups[gi].ids, a, b)))
                nxt += 1
            gi, a, b, fut = ahead.popleft()
            g = groups[gi]
            if gi != current:
                if evaluator is not None:
                    found.append((groups[current], evaluator.flush()))
                evaluator = StreamingEvaluator(packs[g.pack], {i: metas[g.pack][i] for i in g.ids}, gm,
                                               history_start={i: history[i] for i in g.ids if i in history})
                current = gi
            t0 = _time.monotonic()
            s, t, v, q = fut.result()
            q = maintenance.mark(s, t, q)
            st["read_wait_s"] += _time.monotonic() - t0
            st["readings"] += len(t)
            st["windows"] += 1
            found.append((g, evaluator.push(s, t, v, q)))
            del s, t, v, q
            if progress:
                _progress(g, b, start_us - lead, end_us, st, began)
        if evaluator is not None:
            found.append((groups[current], evaluator.flush()))
    finally:
        pool.close()
    if progress and st["windows"]:
        el = _time.monotonic() - began
        print(f"\rjudged {st['readings']:,} readings in {el:.1f} s ({st['readings'] / max(el, 1e-9):,.0f}/s)"
              + " " * 20, file=sys.stderr, flush=True)
    records = []
    for g, eps in found:
        eps = eps[eps["last"] >= start_us]
        if not len(eps):
            continue
        pk = packs[g.pack]
        recs = violations(eps, pk, pk, metas[g.pack])
        for r, code in zip(recs, eps["sensor"].tolist()):
            r["sensor_id"], r["site_id"] = code, site_of[code]
        records += recs
    records.sort(key=lambda r: (r["site"], r["sensor"], r["start"], r["rule"]))
    if store:
        n = store_violations(conn, records)
        if progress:
            print(f"stored: {n} violation(s)", file=sys.stderr)
    if stats is not None:
        stats.update(st, seconds=_time.monotonic() - began)
    return records


def slug_not_judged_in_range(conn, metas: dict, packs: dict, history: dict[int, int], start_us: int,
                             end_us: int) -> list[dict]:
    """Where a slug rule could not judge a sensor in ``[start_us, end_us)``: its readings
    began less than the rule's window before them and it has no configured normal value
    (a permit's average flow). The history counterpart of
    :func:`limits.evaluator.slug_not_judged` (the same notes).

    Parameters
    ----------
    metas, packs : dict
        As :func:`_sensors` returns them.
    history : dict
        Sensor id -> its first reading ever [µs since the epoch, UTC].
    start_us, end_us : int
        The range [µs since the epoch, UTC].

    Returns
    -------
    list of dict
        ``site``, ``sensor``, ``parameter``, ``rule``, ``from``, ``until`` (the first and last
        reading not judged, ISO-8601 UTC) and ``note`` (:data:`limits.evaluator.NO_BASELINE`).
    """
    out = []
    for name, ms in metas.items():
        slugs = [r for r in packs[name].continuous_rules() if r.kind == "slug"]
        for sid, m in sorted(ms.items()):
            if m.normal is not None or sid not in history:
                continue
            for r in slugs:
                judged_from = history[sid] + int(round(r.window_h * core.HOUR_US))   # the first full window
                if not r.applies_to(m.parameter) or judged_from <= start_us:
                    continue
                a, b = (datetime.fromtimestamp(x / core.US, timezone.utc)
                        for x in (start_us, min(judged_from, end_us)))
                first, last = conn.execute("SELECT min(time), max(time) FROM readings WHERE sensor_id = %s "
                                           "AND time >= %s AND time < %s", (sid, a, b)).fetchone()
                if first is not None:
                    out.append({"site": m.site, "sensor": m.name, "parameter": m.parameter, "rule": r.id,
                                "from": iso_utc(_us(first)), "until": iso_utc(_us(last)), "note": NO_BASELINE})
    return out


def _us(t: datetime) -> int:
    """An aware datetime -> [us since the epoch, UTC]."""
    return int(round(t.timestamp() * core.US))


def _sensors(conn, pack_override, sites):
    """The sensors to judge: ``{rule set: {sensor id: SensorMeta}}``, sensor -> site id, and
    each rule set's pack (a site with a permit: its pack merged with the permit)."""
    rows = conn.execute(
        "SELECT se.id, se.name, se.parameter, se.interval_s, si.id, si.key, si.pack "
        "FROM sensors se JOIN sites si ON si.id = se.site_id "
        "WHERE (%s::text[] IS NULL OR si.key = ANY(%s::text[])) ORDER BY se.id",
        (sites, sites)).fetchall()
    if sites:
        missing = sorted(set(sites) - {r[5] for r in rows})
        if missing:
            raise InputError(f"--site: no sensors for site(s) {', '.join(missing)} in the database")
    permits = current_permits(conn) if not pack_override else {}
    by_pack: dict[str, dict[int, SensorMeta]] = {}
    site_of: dict[int, int] = {}
    sets: dict[str, tuple] = {}
    for sid, name, param, interval_s, site_id, site_key, pack_id in rows:
        pk = pack_override or pack_id
        if not pk:
            raise InputError(f"site {site_key!r} has no rule pack; give --pack")
        permit = permits.get(site_key)
        key = pk if permit is None else f"{pk} + permit {permit.number}"
        sets[key] = (pk, permit)
        normal = permit.normal_flow_gpm if permit is not None and param == "flow" else None
        by_pack.setdefault(key, {})[sid] = SensorMeta(param, interval_s, site=site_key, name=name, normal=normal)
        site_of[sid] = site_id
    return by_pack, site_of, {key: site_pack(load_pack(pk), permit) for key, (pk, permit) in sets.items()}


def _progress(g: Group, upto: int, lo: int, hi: int, st: dict, began: float) -> None:
    el = _time.monotonic() - began
    pct = 100.0 * (upto - lo) / max(hi - lo, 1)
    print(f"\rreading {g.label}: {pct:5.1f} % of the range, {st['readings']:,} readings, "
          f"{st['readings'] / max(el, 1e-9):,.0f}/s", end="", file=sys.stderr, flush=True)


def store_violations(conn, records: list[dict]) -> int:
    """Upsert violation records into ``violations``; returns the number of rows written."""
    if not records:
        return 0
    evidence_keys = ("last", "duration_s", "peak_time", "readings", "comparison", "average", "multiple",
                     "baseline", "applies", "stricter_of", "provenance")
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
