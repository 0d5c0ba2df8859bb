"""Episode openings and closings from the streaming evaluator, for every site's pack.

:class:`LiveEpisodes` holds one :class:`limits.streaming.StreamingEvaluator` per rule pack
(sites may use different packs) and turns each batch into the episodes that *opened*
(seen in ``open_episodes()`` for the first time: an alert must go out while the violation
lasts, not after) and those that *closed* (returned by ``push``). An episode that opens and
closes within one batch is reported in both lists. A slug episode opens only once it has
lasted longer than the rule's minimum duration (the evaluator reports nothing shorter).

Time cannot blind it. Each live batch first goes through
:class:`alerts.arrivals.Arrivals` (readings stamped too far ahead of the receive clock wait
for it; offsets and clock skew per sensor). A reading older than the newest one judged for
its sensor is never dropped: its sensor is judged again (:meth:`LiveEpisodes._rejudge`)
from the stored readings once the writer has stored it (the sink's sequence numbers), over
a window around the late readings, by the same evaluator ``check --from --to`` uses
(:mod:`limits.rejudge`). Where that window reaches what the live evaluator still holds, the
judgement runs to the newest reading and its state replaces the sensor's own, so later
readings go on from the right history. The episodes found are matched with those reported
before: a row continues under its new start, merged rows are withdrawn, new episodes open
(and close) as any other; the moves and withdrawals are :meth:`take_changes` for the alert
manager. Late readings that come while a sensor waits for its judgement again wait for the
one after it (``_LateWork.then``), never moving the first one's target: a device that goes
on sending late readings (a clock stepped back) has each batch judged once it is stored.
Without a store of readings (``source``: tests and tools) late readings are counted in
``dropped_late`` and not judged.

A sensor without a nominal interval is held back until its interval is learned: the time-weighted median spacing of its first readings (a start-up burst of
readings milliseconds apart covers milliseconds of time and cannot move it), once at least
:data:`LEARN_AT_MEDIAN` spacings agree with it, bounded by :data:`LEARN_MIN_S` and
:data:`LEARN_MAX_S`; it is then stored so ``check --from --to`` uses the same one.
"""

from __future__ import annotations

import logging
import time as _time
from dataclasses import dataclass, field, replace

import numpy as np

from alerts.arrivals import Arrivals
from limits import core, rejudge
from limits.evaluator import DEFAULT_GAP_MULTIPLE, NO_BASELINE, SensorMeta, iso_utc, violations
from limits.packs import load_pack
from limits.permit_store import current_permits
from limits.permits import continuous, site_rules
from limits.streaming import StreamingEvaluator

log = logging.getLogger("sewerwatch.episodes")


@dataclass(frozen=True)
class SensorInfo:
    id: int
    site_id: int
    site: str
    name: str
    parameter: str
    interval_s: float | None
    pack: str
    permit: object = None        # the site's current discharge permit (limits.permits.Permit) or None


#: Distinct readings of a sensor without a nominal interval looked at, at least, to learn it.
LEARN_READINGS = 12
#: Spacings within 25 % of the learned interval needed before it is taken.
LEARN_AT_MEDIAN = 5
#: Distinct readings after which the time-weighted median is taken whatever the agreement
#: (an irregular sensor is not held back for ever).
LEARN_FALLBACK = 200
#: Bounds of a learned interval [s] (a faster or slower sensor gives its interval_s).
LEARN_MIN_S, LEARN_MAX_S = 0.1, 3600.0
#: Episodes remembered per sensor for matching a judgement again [us] (older: the database's).
KNOWN_KEEP_US = 2 * core.DAY_US
#: Time one push spends judging sensors again at most [s]; the rest waits for the next.
REJUDGE_BUDGET_S = 0.5
#: After a failed judgement again (the database unreachable), wait this long [s].
REJUDGE_RETRY_S = 2.0

SENSORS_SQL = """SELECT se.id, si.id, si.key, se.name, se.parameter, se.interval_s, si.pack
                 FROM sensors se JOIN sites si ON si.id = se.site_id ORDER BY se.id"""


def sensors_from_db(conn) -> list[SensorInfo]:
    """Every sensor with its site, the site's pack and its current discharge permit."""
    permits = current_permits(conn)
    return [SensorInfo(*r, permit=permits.get(r[2])) for r in conn.execute(SENSORS_SQL).fetchall()]


def learned_interval_us(times_us) -> int | None:
    """A sensor's nominal interval [us] from its first readings' stamps, or None (not yet).

    The time-weighted median spacing, bounded by :data:`LEARN_MIN_S` and
    :data:`LEARN_MAX_S`: the spacing at which half of the time the readings span is covered
    by spacings no longer than it. Taken once at least :data:`LEARN_AT_MEDIAN` spacings lie
    within 25 % of the bounded value. A start-up burst of readings a few milliseconds apart
    spans a few milliseconds: it cannot move the median once the device's own spacings are
    in, and on its own (a burst that arrives before the first regular reading) its
    spacings are far under :data:`LEARN_MIN_S`, so none agrees and nothing is learned
    from it.
    """
    t = np.unique(np.asarray(times_us, dtype=np.int64))
    if len(t) < LEARN_READINGS:
        return None
    d = np.sort(np.diff(t))
    cum = np.cumsum(d)
    med = int(d[np.searchsorted(cum, cum[-1] / 2.0)])
    if med <= 0:
        return None
    bounded = int(min(max(med, LEARN_MIN_S * core.US), LEARN_MAX_S * core.US))
    if int((np.abs(d - bounded) <= 0.25 * bounded).sum()) < LEARN_AT_MEDIAN and len(t) < LEARN_FALLBACK:
        return None
    return bounded


@dataclass
class _LateWork:
    """Late readings of one sensor waiting to be judged again."""

    first: int                   # the oldest late reading [us]
    last: int                    # the newest late reading [us]
    needs_seq: int               # the sink's sequence number the writer must have stored
    readings: int = 0
    since: float = 0.0           # [epoch s] first noted
    retry_at: float = 0.0        # [monotonic s]
    buffer: list = field(default_factory=list)   # readings judged live since (not yet stored, maybe)
    #: late readings that came after ``needs_seq``: judged by the judgement after this one, once
    #: the writer has stored them (never moving this one's target: a device streaming late
    #: readings would otherwise keep its sensor waiting for ever)
    then: "_LateWork | None" = None

    def note(self, first: int, last: int, seq: int, readings: int, now_s: float) -> None:
        """Late readings ``[first, last]`` of a batch of sequence number ``seq``: judged after
        this work, by the work that follows it (:attr:`then`)."""
        if self.then is None:
            self.then = _LateWork(first, last, seq, readings, since=now_s)
        else:
            w = self.then
            # everything pushed so far is stored once the writer reaches this batch
            w.first, w.last, w.needs_seq = min(w.first, first), max(w.last, last), max(w.needs_seq, seq)
            w.readings += readings
            w.buffer.clear()

    def keep_live(self, part) -> None:
        """Readings judged live since (time, value, quality), for this judgement and the next."""
        self.buffer.append(part)
        if self.then is not None:
            self.then.buffer.append(part)


class LiveEpisodes:
    """Streaming evaluation of every sensor by its site's pack.

    Parameters
    ----------
    sensors : list of SensorInfo
        The sensors that may report (others are ignored).
    source : alerts.stored.StoredReadings, optional
        The stored readings, episodes and the writer's progress, for judging late readings
        again; None: late readings are counted, not judged.
    skew_limit_s : float
        ``[alerts] clock_skew_s``: see :class:`alerts.arrivals.Arrivals`.
    windows : foundation.windows.WindowBook, optional
        The live maintenance windows: readings in one are not judged (the
        collectors' sink marks them already; stored ones read again are marked by it too).
    """

    def __init__(self, sensors: list[SensorInfo], source=None, skew_limit_s: float = 60.0,
                 gap_multiple: float = DEFAULT_GAP_MULTIPLE, windows=None):
        self.sensors = {s.id: s for s in sensors}
        self.source = source
        self.windows = windows
        self.gap_multiple = gap_multiple
        # one evaluator per rule set: a pack, or a pack merged with a site's permit (the
        # stricter of the two; limits.permits.site_rules)
        sets = sorted({(s.pack, s.permit.number if s.permit else "") for s in sensors})
        permit_of = {(s.pack, s.permit.number): s.permit for s in sensors if s.permit}
        self.packs = [load_pack(p) for p, _ in sets]
        self.rules = [continuous(site_rules(pk, permit_of.get(k))) for pk, k in zip(self.packs, sets)]
        self.rule_index = [{r.id: i for i, r in enumerate(rules)} for rules in self.rules]
        self.meta = [{s.id: SensorMeta(s.parameter, s.interval_s, s.site, s.name,
                                       normal=s.permit.normal_flow_gpm if s.permit and s.parameter == "flow" else None)
                      for s in sensors if (s.pack, s.permit.number if s.permit else "") == k} for k in sets]
        self.evaluators = [StreamingEvaluator(r, m, gap_multiple) for r, m in zip(self.rules, self.meta)]
        top = max(self.sensors, default=0) + 1
        self.pack_of = np.full(top, -1, dtype=np.int32)
        for s in sensors:
            self.pack_of[s.id] = sets.index((s.pack, s.permit.number if s.permit else ""))
        self._open: list[set] = [set() for _ in sets]
        self.ignored = 0
        self._learning = {s.id: [] for s in sensors if not s.interval_s}   # sensor -> held batches
        self.learned: dict[int, float] = {}    # sensor -> interval [s] learned, not yet stored
        self.arrivals = Arrivals(skew_limit_s)
        self._late: dict[int, _LateWork] = {}
        self._known: dict[int, dict[tuple[int, int], int]] = {}    # sensor -> {(rule, start): last}
        self._ends: dict[int, dict[tuple[int, int], int]] = {}     # sensor -> {(rule, start): end reported}
        self._changes: list[dict] = []
        self._seq = 0                          # the newest sink sequence number pushed
        self._arrived: float | None = None     # when the batch being pushed arrived [epoch s]
        self.dropped_late = 0                  # late readings not judged (no source)
        self.rejudged = 0                      # judgements again done
        self.rejudge_error: str | None = None
        self._pruned_at = 0.0

    # -- pushing -------------------------------------------------------------------------

    def push(self, sensor, time_us, value, quality, received_s=None, seq: int = 0,
             now_s: float | None = None) -> tuple[list[dict], list[dict]]:
        """Evaluate a batch; return the violation records that opened and that closed.

        Parameters
        ----------
        sensor, time_us, value, quality : array_like
            The readings [sensor id, us UTC, canonical unit, quality].
        received_s : float or array_like, optional
            When they arrived [epoch s] (live batches; None: stored readings, e.g. a warm-up).
        seq : int
            The sink's sequence number of the batch (the newest of its parts).
        now_s : float, optional
            The clock [epoch s] (default: the system's).

        Records are :func:`limits.evaluator.violations` records with ``sensor_id`` and
        ``site_id`` added. Moves and withdrawals of earlier episodes found by judging late
        readings again wait in :meth:`take_changes`.
        """
        now_s = _time.time() if now_s is None else now_s
        self._seq = max(self._seq, int(seq))
        self._arrived = None if received_s is None or not np.size(received_s) else float(np.max(received_s))
        sensor = np.asarray(sensor, dtype=np.int64)
        time_us, value, quality = np.asarray(time_us, dtype=np.int64), np.asarray(value), np.asarray(quality)
        if self.windows is not None:
            quality = self.windows.mark(sensor, time_us, quality)
        if received_s is not None:
            sensor, time_us, value, quality = self.arrivals.admit(sensor, time_us, value, quality, received_s)
        else:
            sensor, time_us, value, quality = self.arrivals.hold_future(sensor, time_us, value, quality, now_s)
            sensor = np.asarray(sensor, dtype=np.int64)
        if self._learning:
            sensor, time_us, value, quality = self._learn(sensor, time_us, value, quality)
        known = (sensor >= 0) & (sensor < len(self.pack_of))
        pk = np.full(len(sensor), -1, dtype=np.int32)
        pk[known] = self.pack_of[sensor[known]]
        self.ignored += int((pk < 0).sum())
        opened, closed = [], []
        for k, ev in enumerate(self.evaluators):
            m = pk == k
            if not m.any():
                continue
            s, t, v, q = self._in_order(ev, sensor[m], time_us[m], value[m], quality[m], now_s)
            done = ev.push(s, t, v, q)
            still = ev.open_episodes()
            o, c = self._diff(k, done, still)
            opened += o
            closed += c
        if self._late:
            before = len(self._changes)
            o, c = self._judge_late(now_s)
            gone = _superseded(self._changes[before:])
            if gone:
                # the caller applies the moves and withdrawals first: a record of this push's
                # live part naming an episode they replaced would write its old row again
                opened = [r for r in opened if (r["sensor_id"], r["rule"], r["start"]) not in gone]
                closed = [r for r in closed if (r["sensor_id"], r["rule"], r["start"]) not in gone]
            opened += o
            closed += c
        if now_s - self._pruned_at > 600:
            self._prune(now_s)
        return opened, closed

    def _in_order(self, ev: StreamingEvaluator, s, t, v, q, now_s: float):
        """The readings newer than the newest judged of their sensor; the others are noted
        (a repeated stamp is a duplicate: the first stays, as in the database) and, where
        older, their sensor is queued to be judged again."""
        codes, inv = np.unique(s, return_inverse=True)
        latest = ev.latest_many(codes)[inv]
        seen = latest != np.iinfo(np.int64).min
        behind = np.where(seen, latest - np.where(seen, t, 0), -1)
        older = behind >= 0
        # readings judged live while a sensor waits to be judged again: kept for that judgement
        if self._late:
            for c in set(codes.tolist()) & set(self._late):
                mine = (s == c) & ~older
                if mine.any():
                    self._late[c].keep_live((t[mine], v[mine], q[mine]))
        if self._arrived is not None and older.any():
            # a clock stepped back shows in the first batch that holds it
            self.arrivals.note_step(s, t, older, behind, self._arrived)
        if not older.any():
            return s, t, v, q
        self.arrivals.note_order(s[older], behind[older])
        late = behind > 0
        if late.any():
            if self.source is None:
                self.dropped_late += int(late.sum())
            else:
                lc, li = np.unique(s[late], return_inverse=True)
                lo = np.full(len(lc), np.iinfo(np.int64).max)
                hi = np.full(len(lc), np.iinfo(np.int64).min)
                np.minimum.at(lo, li, t[late])
                np.maximum.at(hi, li, t[late])
                n = np.bincount(li)
                for c, a, b, cnt in zip(lc.tolist(), lo.tolist(), hi.tolist(), n.tolist()):
                    w = self._late.get(c)
                    if w is None:
                        self._late[c] = _LateWork(a, b, self._seq, cnt, since=now_s)
                    else:
                        w.note(a, b, self._seq, cnt, now_s)
        keep = ~older
        return s[keep], t[keep], v[keep], q[keep]

    def _diff(self, k: int, done, still) -> tuple[list[dict], list[dict]]:
        """Records of the episodes first seen open (or closed unseen) and of those closed."""
        keys_now = {(int(e["sensor"]), int(e["rule"]), int(e["start"])) for e in still}
        new_open = [i for i, e in enumerate(still)
                    if (int(e["sensor"]), int(e["rule"]), int(e["start"])) not in self._open[k]]
        done_new = [i for i, e in enumerate(done)
                    if (int(e["sensor"]), int(e["rule"]), int(e["start"])) not in self._open[k]]
        opened, closed = [], []
        if new_open:
            opened += self._records(k, still[new_open])
        if done_new:
            opened += self._records(k, done[done_new])
        if len(done):
            closed += self._records(k, done)
        self._open[k] = keys_now
        self._remember(done)
        self._remember(still)
        return opened, closed

    def _remember(self, eps) -> None:
        for e in eps:
            key = (int(e["rule"]), int(e["start"]))
            self._known.setdefault(int(e["sensor"]), {})[key] = int(e["last"])
            self._ends.setdefault(int(e["sensor"]), {})[key] = int(e["end"])

    def _prune(self, now_s: float) -> None:
        self._pruned_at = now_s
        horizon = int(now_s * core.US) - KNOWN_KEEP_US
        for c, eps in list(self._known.items()):
            for key in [key for key, last in eps.items() if last < horizon]:
                del eps[key]
                self._ends.get(c, {}).pop(key, None)
            if not eps:
                del self._known[c]
                self._ends.pop(c, None)

    # -- late readings ---------------------------------------------------------------------

    def due(self, now_s: float) -> bool:
        """Whether held readings are due or late readings can be judged now (an empty
        :meth:`push` does it)."""
        if self.arrivals.due(now_s):
            return True
        if not self._late or self.source is None:
            return False
        stored = self.source.stored_seq()
        mono = _time.monotonic()
        return any(w.needs_seq <= stored and w.retry_at <= mono for w in self._late.values())

    def take_changes(self) -> list[dict]:
        """Moves and withdrawals of episodes reported before, in order, since the last call:
        ``{"op": "move", "sensor_id", "rule", "old_start", "record", "open"}`` (the row of
        ``old_start`` continues as ``record``) and ``{"op": "withdraw", "sensor_id", "rule",
        "start", "into"}`` (merged into the episode starting at ``into``, or, None, gone)."""
        out, self._changes = self._changes, []
        return out

    def judge_again(self, windows, now_s: float | None = None) -> int:
        """Judge again, from the stored readings, the sensors whose maintenance windows
        appeared, changed or went (a window opened from the office or the command
        line a moment after its first readings were judged, or one approved after the fact):
        their episodes inside are withdrawn, as for late readings. ``windows``:
        :class:`foundation.windows.Window` items. Returns the sensors queued."""
        now_s = _time.time() if now_s is None else now_s
        n = 0
        for win in windows:
            c = int(win.sensor_id)
            if c not in self.sensors or self.source is None:
                continue
            k = int(self.pack_of[c]) if c < len(self.pack_of) else -1
            if k < 0:
                continue
            latest = self.evaluators[k].latest(c)
            if latest is None or latest < win.start_us:
                continue                    # nothing judged in it yet: the marks do it
            last = latest                  # to the newest: a window that shrank gives back readings after it
            w = self._late.get(c)
            if w is None:
                self._late[c] = _LateWork(win.start_us, last, self._seq, 0, since=now_s)
            else:
                w.note(win.start_us, last, self._seq, 0, now_s)
            n += 1
        return n

    @property
    def late_waiting(self) -> dict[int, dict]:
        """Sensors whose late readings wait to be judged again: readings, oldest [us], since."""
        out = {}
        for c, w in self._late.items():
            n, oldest = w.readings, w.first
            if w.then is not None:
                n, oldest = n + w.then.readings, min(oldest, w.then.first)
            out[c] = {"readings": n, "oldest_us": oldest, "since": w.since}
        return out

    @property
    def has_late(self) -> bool:
        """Whether late readings of any sensor wait to be judged again."""
        return bool(self._late)

    def _judge_late(self, now_s: float) -> tuple[list[dict], list[dict]]:
        if self.source is None:
            return [], []
        try:
            stored = self.source.stored_seq()
        except Exception:  # noqa: BLE001 - no progress known: wait
            return [], []
        opened, closed = [], []
        began = _time.monotonic()
        for c in sorted(self._late, key=lambda c: self._late[c].since):
            w = self._late[c]
            if w.needs_seq > stored or w.retry_at > _time.monotonic():
                continue
            if _time.monotonic() - began > REJUDGE_BUDGET_S:
                break
            try:
                o, cl = self._rejudge(c, w, now_s)
            except Exception as exc:  # noqa: BLE001 - the database went away: tried again
                w.retry_at = _time.monotonic() + REJUDGE_RETRY_S
                text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                if self.rejudge_error != text:
                    log.warning("judging late readings of sensor %d again failed (%s); trying again", c, text)
                self.rejudge_error = text[:300]
                continue
            self.rejudge_error = None
            if w.then is not None:
                self._late[c] = w.then          # late readings that came meanwhile: judged next
            else:
                del self._late[c]
            self.rejudged += 1
            opened += o
            closed += cl
        return opened, closed

    def _old_episodes(self, k: int, c: int, since_us: int) -> np.ndarray:
        """Episodes of sensor ``c`` reported before whose last reading is at or after
        ``since_us``: remembered ones, and the database's rows (any run's, any source but lab)."""
        rows = {key: last for key, last in self._known.get(c, {}).items() if last >= since_us}
        for rule_id, start, last in self.source.episodes(c, since_us):
            ri = self.rule_index[k].get(rule_id)
            if ri is not None and last >= since_us:
                rows.setdefault((ri, start), last)
        out = np.empty(len(rows), dtype=rejudge.OLD_DTYPE)
        for j, ((ri, start), last) in enumerate(sorted(rows.items())):
            out[j] = (ri, start, last)
        return out

    def _rejudge(self, c: int, w: _LateWork, now_s: float) -> tuple[list[dict], list[dict]]:
        """Judge sensor ``c`` again from its stored readings around its late ones, as
        ``check --from --to`` would (see the module's description)."""
        k = int(self.pack_of[c])
        ev, rules, m = self.evaluators[k], self.rules[k], self.meta[k][c]
        gap = ev.gap_of(c) or int(round(self.gap_multiple * (m.interval_s or 1.0) * core.US))
        lead = rejudge.lead_us(rules, m.parameter, gap)
        tail = rejudge.slug_window_us(rules, m.parameter) + 2 * gap
        affected = w.first - gap
        old = self._old_episodes(k, c, affected)
        history = self.source.first_reading(c)
        start = min([w.first - lead] + old["start"].tolist()) - gap
        if history is not None:
            start = max(start, history)
        latest = ev.latest(c)
        held = ev.open_episodes()
        open_starts = held["start"][held["sensor"] == c].tolist()
        live_from = None if latest is None else min([latest] + open_starts) - tail
        end = w.last + tail + 1
        # stored readings up to what the hold lets through (still-held ones come later)
        bound = int((now_s + self.arrivals.tolerance_s + max(self.arrivals.offset_s(c), 0.0)) * core.US) + 1
        for _ in range(8):
            live = live_from is None or end >= live_from
            s, t, v, q = self.source.read(c, start, bound if live else end)
            if live and w.buffer:
                s, t, v, q = _with_buffer(c, (s, t, v, q), w.buffer)
            if self.windows is not None:
                q = self.windows.mark(s, t, q)
            fresh, done, still = rejudge.judge(rules, {c: m}, s, t, v, q, gap_multiple=self.gap_multiple,
                                               history_start=None if history is None else {c: history})
            eps = np.concatenate([done, still])
            ok = core.valid_mask(v, q)
            first_usable = int(t[ok][0]) if ok.any() else None
            if rejudge.needs_earlier(eps, first_usable, start, history):
                start = max(start - 2 * lead, history if history is not None else start - 2 * lead)
                continue
            if not live and len(still):
                live_from = end          # a run still going at the window's end: judge on to the newest
                continue
            break
        new = eps[eps["last"] >= affected]
        old = old if live else old[old["start"] < end]
        plan = rejudge.reconcile(old, new)
        recs = self._records(k, new) if len(new) else []
        still_keys = {(int(e["rule"]), int(e["start"])) for e in still} if live else set()
        old_last = {(int(o["rule"]), int(o["start"])): int(o["last"]) for o in old}
        ends = self._ends.get(c, {})
        opened, closed = [], []
        for i, e in enumerate(new):
            row, rec = plan.rows[i], recs[i]
            key = (int(e["rule"]), int(e["start"]))
            is_open = key in still_keys
            if row is not None and row != key[1]:
                self._changes.append({"op": "move", "sensor_id": c, "rule": rules[key[0]].id,
                                      "old_start": iso_utc(row), "record": rec, "open": is_open})
            if is_open:
                continue                      # reported through the open set below
            if row is None:
                opened.append(rec)
                closed.append(rec)
            elif (row != key[1] or old_last.get((key[0], row)) != int(e["last"])
                  or ends.get((key[0], row), int(e["end"])) != int(e["end"])):
                # moved, grown, or ended at another reading (the one that ended it came late)
                closed.append(rec)
        for ri, old_start, into in plan.withdrawn:
            self._changes.append({"op": "withdraw", "sensor_id": c, "rule": rules[ri].id,
                                  "start": iso_utc(old_start), "into": None if into is None else iso_utc(into)})
        known = self._known.setdefault(c, {})
        for o in old:
            known.pop((int(o["rule"]), int(o["start"])), None)
            ends.pop((int(o["rule"]), int(o["start"])), None)
        self._remember(new)
        if live:
            ev.adopt(fresh, [c])
            mine = {key for key in self._open[k] if key[0] == c}
            now_open = ev.open_episodes()
            now_open = now_open[now_open["sensor"] == c]
            new_keys = {(c, int(e["rule"]), int(e["start"])) for e in now_open}
            fresh_open = [i for i, e in enumerate(now_open) if (c, int(e["rule"]), int(e["start"])) not in mine]
            if fresh_open:
                opened += self._records(k, now_open[fresh_open])
            self._open[k] = (self._open[k] - mine) | new_keys
        moves = [f"{ch['old_start']} to {ch['record']['start']}" for ch in self._changes
                 if ch.get("sensor_id") == c and ch["op"] == "move"]
        log.info("sensor %d: %d late readings judged again from the stored readings (%s window, %d episodes, "
                 "%d moved%s, %d withdrawn)", c, w.readings, "live" if live else "past", len(new), len(moves),
                 f": {', '.join(moves)}" if moves else "", len(plan.withdrawn))
        return opened, closed

    # -- learning intervals ------------------------------------------------------------------

    def _learn(self, sensor, time_us, value, quality):
        """Hold back the readings of sensors still learning their interval; release a
        sensor's readings (with this batch's) once it has enough to know it."""
        learning = np.isin(sensor, list(self._learning))
        if not learning.any():
            return sensor, time_us, value, quality
        released = []
        for c in np.unique(sensor[learning]).tolist():
            m = sensor == c
            held = self._learning[c]
            held.append((time_us[m], value[m], quality[m]))
            interval_us = learned_interval_us(np.concatenate([h[0] for h in held]))
            if interval_us is None:
                continue
            interval_s = round(interval_us / 1000) / 1000          # whole milliseconds
            self._set_interval(c, interval_s)
            del self._learning[c]
            released.append((c, held))
        keep = ~learning
        parts = [(sensor[keep], time_us[keep], value[keep], quality[keep])]
        for c, held in released:
            t = np.concatenate([h[0] for h in held])
            parts.append((np.full(len(t), c, dtype=np.int64), t, np.concatenate([h[1] for h in held]),
                          np.concatenate([h[2] for h in held])))
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))

    def _set_interval(self, c: int, interval_s: float) -> None:
        k = self.pack_of[c]
        meta = replace(self.meta[k][c], interval_s=interval_s)
        self.meta[k][c] = meta
        self.evaluators[k].meta[c] = meta
        self.learned[c] = interval_s

    @property
    def learning(self) -> list[int]:
        """Sensors whose readings are held back until their interval is known."""
        return sorted(self._learning)

    # -- records -----------------------------------------------------------------------------

    def open_records(self) -> list[dict]:
        """Every episode still open, as records (its latest peak and last reading)."""
        out = []
        for k, ev in enumerate(self.evaluators):
            still = ev.open_episodes()
            if len(still):
                out += self._records(k, still)
        return out

    def _records(self, k: int, eps) -> list[dict]:
        recs = violations(eps, self.rules[k], self.packs[k], self.meta[k])
        for r, e in zip(recs, eps):
            s = self.sensors[int(e["sensor"])]
            r["sensor_id"], r["site_id"] = s.id, s.site_id
        return recs

    def without_baseline(self) -> list[dict]:
        """Sensors whose slug cannot be judged yet: fewer than 24 hours of readings and no
        permitted average flow (``sewerwatch status``: "slug not judged: no baseline yet")."""
        out = []
        for ev in self.evaluators:
            for c in ev.without_baseline():
                s = self.sensors[c]
                out.append({"sensor_id": s.id, "site": s.site, "sensor": s.name, "note": NO_BASELINE})
        return sorted(out, key=lambda x: (x["site"], x["sensor"]))


def _superseded(changes: list[dict]) -> set[tuple[int, str, str]]:
    """``(sensor id, rule id, start)`` of the episodes that moves and withdrawals replaced
    (the old starts; a move's new start is the record that continues the row)."""
    out = set()
    for ch in changes:
        if ch["op"] == "move" and ch["old_start"] != ch["record"]["start"]:
            out.add((ch["sensor_id"], ch["rule"], ch["old_start"]))
        elif ch["op"] == "withdraw":
            out.add((ch["sensor_id"], ch["rule"], ch["start"]))
    return out


def _with_buffer(c: int, stored, buffer):
    """Stored readings of sensor ``c`` with those judged live since its late ones (not all
    stored yet); where a time is in both, the stored one (the first) stays."""
    s, t, v, q = stored
    bt = np.concatenate([b[0] for b in buffer])
    fresh = ~np.isin(bt, t)
    if not fresh.any():
        return stored
    t2 = np.concatenate([t, bt[fresh]])
    v2 = np.concatenate([v, np.concatenate([b[1] for b in buffer])[fresh]])
    q2 = np.concatenate([q, np.concatenate([b[2] for b in buffer])[fresh]])
    order = np.argsort(t2, kind="stable")
    return np.full(len(t2), c, dtype=np.int64), t2[order], v2[order].astype(np.float64), q2[order]
