"""The alert manager's part for violation episodes: an alert per episode, the next episode
within the hold-off continuing it, episodes moved or withdrawn by late readings judged
again, rows brought up to date as episodes grow.

A part of :class:`alerts.manager.AlertManager` (its memory ``active`` and ``alerted``, its
outbox ``_op``, audit ``_audit`` and notifications ``_notify``). One episode is one
``violations`` row and one episode of one alert, whatever order its readings came in.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from alerts import content
from alerts.active import Active, same_alert, when, worse
from alerts.keys import AlertKey

#: A growing episode's violations row is brought up to date at most this often [s].
GROW_EVERY_S = 5.0


class EpisodeAlerts:
    """Violation episodes to alerts, for :class:`alerts.manager.AlertManager`."""


    async def on_episodes(self, opened: list[dict], closed: list[dict]) -> None:
        """React to episodes the evaluator saw open or closed (records as
        :func:`limits.evaluator.violations` plus ``sensor_id`` and ``site_id``), in the
        order they happened (a batch may close one episode of a sensor and open its next:
        the next then continues the alert as its second episode)."""
        events = [(when(v["start"]), 1, k, v) for k, v in enumerate(opened)]
        events += [(when(v["end"]), 0, k, v) for k, v in enumerate(closed)]
        for _, is_open, _, v in sorted(events, key=lambda e: e[:3]):
            await (self._episode_opened(v) if is_open else self._episode_closed(v))
        if self._dirty:
            # the deliveries just begun hand their messages to the pool first: the state file's
            # fsync need not go before them (the outbox's journal holds the opening already)
            await asyncio.sleep(0)
            self._save()

    async def on_rejudged(self, changes: list[dict]) -> None:
        """Episodes reported before that late readings changed
        (:meth:`alerts.episodes.LiveEpisodes.take_changes`), before the openings and
        closings of the same judgement: a row that continues under an earlier start
        (``move``), a row merged into another or gone (``withdraw``). One episode stays one
        ``violations`` row and one alert's one episode; nothing is notified again."""
        now = self.clock()
        for ch in changes:
            sensor_id, rule = int(ch["sensor_id"]), ch["rule"]
            key = AlertKey.violation(sensor_id, rule)
            a = self.active.get(key)
            if ch["op"] == "move":
                old, rec = ch["old_start"], ch["record"]
                new = rec["start"]
                self._op({"op": "violation-move", "old_start": old, "v": rec, "end": None if ch["open"] else rec["end"]})
                uid = self.alerted.get((sensor_id, rule, old))
                if uid is not None:
                    self.alerted[(sensor_id, rule, new)] = uid
                if a is not None and old in a.starts:
                    a.starts[a.starts.index(old)] = new
                    if old in a.open_starts:
                        a.open_starts[a.open_starts.index(old)] = new
                    if a.record.get("start") == old:
                        a.record = {**a.record, "start": new}
                    self._dirty = True
                self._audit("violation-moved", a if a is not None and new in a.starts else None,
                            {"rule": rule, "from": old, "to": new, "why": "late readings judged again"},
                            violation_of=(sensor_id, rule, new))
            elif ch["op"] == "withdraw":
                start, into = ch["start"], ch["into"]
                self._op({"op": "violation-withdraw", "sensor_id": sensor_id, "rule": rule, "start": start,
                          "into": into})
                if into is not None and (sensor_id, rule, start) in self.alerted:
                    self.alerted.setdefault((sensor_id, rule, into), self.alerted[(sensor_id, rule, start)])
                if a is not None and start in a.starts and into is not None and into not in a.starts:
                    # merged into an episode this alert has not seen yet (its opening follows in
                    # the same judgement): the same episode of this alert, going on under that start
                    a.starts[a.starts.index(start)] = into
                    if start in a.open_starts:
                        a.open_starts[a.open_starts.index(start)] = into
                    self.alerted.setdefault((sensor_id, rule, into), a.uid)
                    self._dirty = True
                elif a is not None and start in a.starts:
                    a.starts.remove(start)
                    if start in a.open_starts:
                        a.open_starts.remove(start)
                    if into is not None and into in a.starts and a.episodes > 1:
                        a.episodes -= 1
                        self._op({"op": "episodes", "uid": a.uid, "episodes": a.episodes})
                    if not a.starts and a.ended is None:
                        a.ended = now            # its one episode is gone: resolved after the hold-off
                        self._op({"op": "episode-ended", "uid": a.uid, "at": now, "details": None})
                    self._dirty = True
                self._audit("violation-withdrawn", a, {"rule": rule, "start": start, "merged_into": into,
                                                       "why": "late readings judged again"},
                            object_=None if a is not None else f"sensor:{sensor_id}")
        if self._dirty:
            self._save()

    async def on_growing(self, records: list[dict]) -> None:
        """Episodes still open (records as for :meth:`on_episodes`): their ``violations``
        rows are brought up to date as they grow, at most every :data:`GROW_EVERY_S`."""
        now = time.monotonic()
        for v in records:
            a = self.active.get(AlertKey.violation(v["sensor_id"], v["rule"]))
            if a is None or v["start"] not in a.starts or now - a.grown_at < GROW_EVERY_S:
                continue
            if a.record.get("last") == v.get("last") and a.record.get("peak") == v.get("peak"):
                continue
            a.grown_at = now
            a.record = {**v, "end": None, "start": a.record.get("start", v["start"]),
                        "peak": worse(a.record.get("peak"), v["peak"], v.get("comparison"))}
            self._op({"op": "violation", "v": v, "end": None})

    async def _episode_opened(self, v: dict) -> None:
        key = AlertKey.violation(v["sensor_id"], v["rule"])
        episode = (int(v["sensor_id"]), v["rule"], v["start"])
        rec = {**v, "end": None}
        a = self.active.get(key)
        if a is not None and episode in self.alerted and not same_alert(self.alerted[episode], a):
            # an episode another alert covered (before a restart or a takeover), judged again
            self._op({"op": "violation", "v": v, "end": None})
            self._seen(episode, self.alerted[episode], v)
            return
        if a is not None:
            # within the hold-off (or still open): the same alert goes on
            was_ended = a.ended is not None
            a.ended = None
            self._op({"op": "violation", "v": v, "end": None})
            if v["start"] not in a.open_starts:
                a.open_starts.append(v["start"])
                self._dirty = True
            if v["start"] in a.starts:           # the same episode seen again: no new episode
                return
            a.starts.append(v["start"])
            self.alerted[episode] = a.uid
            self._dirty = True
            # a next episode within the hold-off, or an earlier one found by late readings while
            # a later one goes on: an episode of this alert either way
            a.episodes += 1
            if was_ended:
                a.record = {**rec, "start": a.record.get("start", rec["start"])}
            self._op({"op": "episode-continued", "uid": a.uid, "episodes": a.episodes, "details": a.record})
            self._audit("alert-episode-continued", a, {"start": v["start"]}, violation_of=episode)
            return
        # The same episode seen again (readings redelivered after a restart, or replayed) was
        # alerted already: one alert per episode, never a second round of notifications.
        if episode in self.alerted:
            self._op({"op": "violation", "v": v, "end": None})
            self._seen(episode, self.alerted[episode], v)
            return
        site_id, site_name = self.sites.get(v["site"], (v.get("site_id"), v["site"]))
        summary = content.summary(v, site_name, self.tz)
        number, sure = await self._number_ahead(v["start"])
        a = Active(uid=uuid.uuid4().hex, id=number, kind="violation", key=key,
                   rule=v["rule"], site=v["site"], site_name=site_name, record=rec, opened=self.clock(),
                   starts=[v["start"]], open_starts=[v["start"]], summary=summary)
        self.active[key] = a
        self.alerted[episode] = a.uid
        self._dirty = True
        fut = self._op({"op": "open-violation", "uid": a.uid, "id": a.id, "v": v, "summary": summary,
                        "details": rec, "at": a.opened})
        if not await self._opened_row(a, fut, wait=not sure):
            # the database knew this episode as alerted (an earlier run): no second alert
            if self.active.get(key) is a:
                del self.active[key]
            self._seen(episode, a.uid, v)
            return
        self.stats["opened"] += 1
        self._audit("alert-open", a, {"summary": summary}, violation_of=episode)
        self._notify(a, "open")

    def _seen(self, episode: tuple, uid: str, v: dict) -> None:
        if episode not in self._seen_again:
            self._seen_again.add(episode)
            self._audit("alert-episode-seen-again", None, {"start": v["start"]}, violation_of=episode,
                        object_=f"alert:{uid[6:]}" if uid.startswith("alert-") else None)

    async def _episode_closed(self, v: dict) -> None:
        key = AlertKey.violation(v["sensor_id"], v["rule"])
        if key not in self.active and (int(v["sensor_id"]), v["rule"], v["start"]) not in self.alerted:
            await self._episode_opened(v)
        self._op({"op": "violation", "v": v, "end": v["end"]})
        a = self.active.get(key)
        if a is None or v["start"] not in a.starts:
            return          # an episode alerted before (see _episode_opened): its record is kept current
        a.record = {**v, "start": a.record.get("start", v["start"]),
                    "peak": worse(a.record.get("peak"), v["peak"], v.get("comparison"))}
        self._dirty = True
        if v["start"] not in a.open_starts and a.ended is not None:
            return          # an episode that ended before, its end judged again: its row is kept current
        if v["start"] in a.open_starts:
            a.open_starts.remove(v["start"])
        if a.open_starts:
            return          # another episode of this alert goes on
        a.ended = self.clock()
        self._dirty = True
        self._op({"op": "episode-ended", "uid": a.uid, "at": a.ended, "details": a.record})
        self._audit("alert-episode-ended", a, {"end": v["end"], "hold_off_s": self.cfg.hold_off_s})
