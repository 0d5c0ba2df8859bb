"""Each reading's stamp against the receive clock: readings stamped ahead, late, reordered,
and devices whose clocks run ahead or behind.

A device's stamp says when it measured; the collector's clock says when the reading
arrived. :class:`Arrivals` is fed every live batch with both (numpy per batch; per-sensor
work only over the sensors present) and

* **holds** a reading stamped further ahead of the receive clock than the sensor's usual
  offset plus :data:`HOLD_TOLERANCE_S`, until the clock reaches its stamp: one stamp a few
  minutes ahead (within ``[ingest] max_future_s``) then cannot push the sensor's clock
  forward and make every later reading look late. A device whose stamps run ahead all the
  time is not held once its offset is known (its readings are in order among themselves);
* counts, per sensor, the readings **reordered** (older than the newest seen for the sensor
  by less than the skew limit), **late** (by more) and **duplicate** (the same stamp again),
  as :class:`alerts.episodes.LiveEpisodes` finds them;
* estimates each sensor's **clock offset**: at most twice a second of receive time, the
  median of ``stamp - receive time`` over the sensor's readings in the batch, kept for the
  last :data:`SKEW_SAMPLES` samples. A median beyond ``clock_skew_s`` (``[alerts]``, default
  60 s) that is *steady* (the samples' spread within the limit) is a sensor-health
  "clock-skew" condition with the offset. Steadiness tells a skewed clock from a backlog
  being drained after an outage, whose stamps catch up with the clock within seconds;
* names a clock **stepped back** from the first batch that shows it (:meth:`Arrivals.note_step`:
  all of a sensor's readings in it late by the limit or more, the newest stamped beyond the
  limit behind the clock), until an arrival is stamped right again.
"""

from __future__ import annotations

import statistics
from collections import deque

import numpy as np

US = 1_000_000
#: A reading stamped up to this far ahead of the receive clock (beyond the sensor's usual
#: offset) is judged at once; further ahead it waits for the clock [s].
HOLD_TOLERANCE_S = 1.0
#: Offset samples kept per sensor, and the least time between two of them [s].
SKEW_SAMPLES = 15
SKEW_SAMPLE_EVERY_S = 0.5
#: Samples needed before the sensor's usual offset moves the hold threshold.
OFFSET_MIN_SAMPLES = 5


class Arrivals:
    """Stamps against the receive clock, per sensor.

    Parameters
    ----------
    skew_limit_s : float
        An offset beyond this [s] is clock skew; a reading older than the newest of its
        sensor by this much or more is "late" rather than "reordered".
    tolerance_s : float
        See :data:`HOLD_TOLERANCE_S`.
    """

    def __init__(self, skew_limit_s: float = 60.0, tolerance_s: float = HOLD_TOLERANCE_S):
        self.skew_limit_s = float(skew_limit_s)
        self.tolerance_s = float(tolerance_s)
        e = np.empty(0, dtype=np.int64)
        self._held = (e, e.copy(), np.empty(0), np.empty(0, dtype=np.int16))
        self._ring: dict[int, deque] = {}
        self._usual: dict[int, float] = {}       # sensor -> median of its ring, once it holds enough
        self._sampled_at: dict[int, float] = {}
        self._skew_since: dict[int, float] = {}
        self._stepped: dict[int, tuple[float, float]] = {}   # sensor -> (when [epoch s], offset [s])
        self.counts: dict[int, dict] = {}        # sensor -> {"late", "reordered", "duplicate", "ahead", ...}

    # -- the hold --------------------------------------------------------------------

    def offset_s(self, code: int) -> float:
        """The sensor's usual offset [s] (0 until :data:`OFFSET_MIN_SAMPLES` samples)."""
        return self._usual.get(code, 0.0)

    def _usual_of(self, codes) -> np.ndarray:
        """:meth:`offset_s` of each of ``codes``, never below 0 (only an ahead offset moves the hold)."""
        return np.maximum(np.array([self._usual.get(c, 0.0) for c in codes.tolist()]), 0.0)

    def admit(self, sensor, time_us, value, quality, received_s):
        """A batch as it arrived (``received_s`` [epoch s], one per reading or one for all):
        note the offsets, hold what is stamped too far ahead, and return what is to be
        judged now (this batch's readings not held, and held readings now due)."""
        sensor = np.asarray(sensor, dtype=np.int64)
        time_us = np.asarray(time_us, dtype=np.int64)
        received = np.broadcast_to(np.asarray(received_s, dtype=np.float64), sensor.shape)
        now = float(received.max()) if len(received) else None
        if len(sensor):
            off = time_us / US - received
            codes, inv = np.unique(sensor, return_inverse=True)
            # each sensor's (lower) median offset in this batch, by one sort, not a pass per sensor
            order = np.lexsort((off, inv))
            cnt = np.bincount(inv, minlength=len(codes))
            first = np.concatenate([[0], np.cumsum(cnt)[:-1]])
            batch_median = off[order][first + (cnt - 1) // 2]
            for c, m in zip(codes.tolist(), batch_median.tolist()):
                at = self._sampled_at.get(c)
                if at is None or now - at >= SKEW_SAMPLE_EVERY_S:
                    self._sampled_at[c] = now
                    ring = self._ring.setdefault(c, deque(maxlen=SKEW_SAMPLES))
                    ring.append((now, m))
                    if len(ring) >= OFFSET_MIN_SAMPLES:
                        # statistics.median, not numpy's: the same value, without numpy's cost
                        # per call on a handful of floats (benchmarks/README.md, the alert path)
                        self._usual[c] = float(statistics.median([o for _, o in ring]))
            usual = self._usual_of(codes)[inv]
            ahead = off > self.tolerance_s + usual
            if ahead.any():
                hc, hn = np.unique(sensor[ahead], return_counts=True)
                for c, n in zip(hc.tolist(), hn.tolist()):
                    self._count(c)["ahead"] += n
                self._held = tuple(np.concatenate([h, np.asarray(x)[ahead]])
                                   for h, x in zip(self._held, (sensor, time_us, value, quality)))
                keep = ~ahead
                sensor, time_us = sensor[keep], time_us[keep]
                value, quality = np.asarray(value)[keep], np.asarray(quality)[keep]
        due = self.release(now) if now is not None else None
        if due is not None and len(due[0]):
            return tuple(np.concatenate([np.asarray(a), d]) for a, d in zip((sensor, time_us, value, quality), due))
        return sensor, time_us, np.asarray(value), np.asarray(quality)

    def hold_future(self, sensor, time_us, value, quality, now_s: float):
        """Stored readings (a warm-up): those stamped ahead of ``now_s`` beyond the tolerance
        are held as if they had just arrived (a takeover must not judge a stamp that the
        leader before it held); returns the rest, with held readings now due."""
        time_us = np.asarray(time_us, dtype=np.int64)
        ahead = time_us / US > now_s + self.tolerance_s
        if ahead.any():
            self._held = tuple(np.concatenate([h, np.asarray(x)[ahead]])
                               for h, x in zip(self._held, (sensor, time_us, value, quality)))
            keep = ~ahead
            sensor, time_us, value, quality = (np.asarray(x)[keep] for x in (sensor, time_us, value, quality))
        due = self.release(now_s)
        if len(due[0]):
            return tuple(np.concatenate([np.asarray(a), d]) for a, d in zip((sensor, time_us, value, quality), due))
        return sensor, time_us, value, quality

    def due(self, now_s: float) -> bool:
        """Whether held readings are due at ``now_s`` [epoch s]."""
        return bool(len(self._held[0])) and bool(self._due_mask(now_s).any())

    def release(self, now_s: float):
        """Take the held readings due at ``now_s`` [epoch s] (sensor, time, value, quality)."""
        if not len(self._held[0]):
            return self._held
        m = self._due_mask(now_s)
        out = tuple(h[m] for h in self._held)
        self._held = tuple(h[~m] for h in self._held)
        return out

    def _due_mask(self, now_s: float) -> np.ndarray:
        s, t = self._held[0], self._held[1]
        codes, inv = np.unique(s, return_inverse=True)
        return t / US <= now_s + self.tolerance_s + self._usual_of(codes)[inv]

    @property
    def held(self) -> int:
        return len(self._held[0])

    # -- order -------------------------------------------------------------------------

    def note_order(self, sensor, behind_us) -> None:
        """Readings older than (``behind_us`` > 0) or as old as (0) the newest judged of
        their sensor."""
        sensor = np.asarray(sensor, dtype=np.int64)
        behind = np.asarray(behind_us, dtype=np.int64)
        if not len(sensor):
            return
        limit = int(self.skew_limit_s * US)
        kind = np.where(behind <= 0, 0, np.where(behind < limit, 1, 2))
        for k, name in enumerate(("duplicate", "reordered", "late")):
            m = kind == k
            if not m.any():
                continue
            codes, n = np.unique(sensor[m], return_counts=True)
            worst = np.zeros(len(codes))
            np.maximum.at(worst, np.searchsorted(codes, sensor[m]), behind[m] / US)
            for c, cnt, w in zip(codes.tolist(), n.tolist(), worst.tolist()):
                rec = self._count(c)
                rec[name] += cnt
                if name != "duplicate":
                    rec["most_behind_s"] = max(rec["most_behind_s"], w)

    def note_step(self, sensor, time_us, older, behind_us, received_s: float) -> None:
        """A clock stepped back, seen in the first batch that shows it: every reading of a
        sensor in the batch older than the newest judged of it by the skew limit or more,
        and the newest of them stamped more than the limit behind the receive clock
        ``received_s`` [epoch s]. Its offset [s] is that newest stamp's (a logger flushing
        its buffer sends its latest measurement last). A backlog drained after an outage
        comes in order, newer than what was judged, and is never taken for a step."""
        sensor = np.asarray(sensor, dtype=np.int64)
        if not len(sensor):
            return
        limit = int(self.skew_limit_s * US)
        codes, inv = np.unique(sensor, return_inverse=True)
        step = np.where(np.asarray(older), np.asarray(behind_us, dtype=np.int64), -1)
        least = np.full(len(codes), np.iinfo(np.int64).max)
        np.minimum.at(least, inv, step)
        newest = np.full(len(codes), np.iinfo(np.int64).min)
        np.maximum.at(newest, inv, np.asarray(time_us, dtype=np.int64))
        offset = newest / US - received_s
        for c, lo, off in zip(codes.tolist(), least.tolist(), offset.tolist()):
            if lo >= limit and off < -self.skew_limit_s:
                since = self._stepped.get(c, (received_s, 0.0))[0]
                self._stepped[c] = (since, off)
                self._skew_since.setdefault(c, since)

    def _count(self, c: int) -> dict:
        rec = self.counts.get(c)
        if rec is None:
            rec = self.counts[c] = {"ahead": 0, "reordered": 0, "late": 0, "duplicate": 0, "most_behind_s": 0.0}
        return rec

    # -- skew --------------------------------------------------------------------------

    def skew(self, code: int) -> float | None:
        """The sensor's clock offset beyond the limit [s, + ahead], or None: a steady one
        (:data:`SKEW_SAMPLES` arrivals agreeing), else a step back (:meth:`note_step`) for as
        long as the latest arrival is still stamped beyond the limit."""
        ring = self._ring.get(code)
        steady = self._steady(ring)
        if steady is not None:
            return steady
        step = self._stepped.get(code)
        if step is None:
            return None
        latest = ring[-1] if ring else None
        if latest is not None and latest[0] > step[0] and abs(latest[1]) <= self.skew_limit_s:
            del self._stepped[code]             # stamped right again
            return None
        return step[1] if latest is None or latest[0] <= step[0] else latest[1]

    def stepped(self, code: int) -> bool:
        """Whether the sensor's clock was seen stepping back (and is not right again)."""
        return code in self._stepped and self.skew(code) is not None and self._steady(self._ring.get(code)) is None

    def _steady(self, ring) -> float | None:
        if not ring or len(ring) < SKEW_SAMPLES:
            return None
        offs = [o for _, o in ring]
        med = float(statistics.median(offs))
        if abs(med) <= self.skew_limit_s or float(max(offs) - min(offs)) > self.skew_limit_s:
            return None
        return med

    def problems(self, now_s: float) -> dict:
        """``{("clock-skew", sensor): {"since" [epoch s], "detail", "offset_s"}}``."""
        out = {}
        for c in set(self._ring) | set(self._stepped):
            med = self.skew(c)
            if med is None:
                self._skew_since.pop(c, None)
                continue
            since = self._skew_since.setdefault(c, self._ring[c][0][0] if self._ring.get(c) else now_s)
            way = "ahead of" if med > 0 else "behind"
            how = (f"its clock stepped back: readings older than those it sent before (limit "
                   f"{self.skew_limit_s:g} s)" if self.stepped(c) else
                   f"median of the last {SKEW_SAMPLES} arrivals; limit {self.skew_limit_s:g} s")
            out[("clock-skew", c)] = {
                "since": since, "offset_s": round(med, 1),
                "detail": f"its readings are stamped {abs(med):.0f} s {way} the collector's clock ({how}); "
                          "judged by their stamps: check the device's clock (NTP)"}
        return out

    def status(self) -> dict:
        """Per sensor with anything to say: the counts, the offset, the skew, readings held."""
        held_codes, held_n = np.unique(self._held[0], return_counts=True)
        held = dict(zip(held_codes.tolist(), held_n.tolist()))
        out = {}
        for c in sorted(set(self.counts) | set(held) | {c for c in set(self._ring) | set(self._stepped)
                                                         if self.skew(c) is not None}):
            rec = dict(self.counts.get(c, {"ahead": 0, "reordered": 0, "late": 0, "duplicate": 0,
                                           "most_behind_s": 0.0}))
            rec["held_now"] = held.get(c, 0)
            rec["offset_s"] = round(self.offset_s(c), 3)
            rec["skew_s"] = self.skew(c)
            out[c] = rec
        return out
