"""Dead letters you can work with: list, show, and replay after a config fix.

A dead letter (table ``dead_letters``) is a payload or row the collectors or an import could
not use, kept with its raw bytes, its topic and the reason. ``sewerwatch deadletters``:

``list``
    newest first, filtered by source, age, reason text; with counts by source and reason.
``show``
    one dead letter: reason, topic, when, what a replay made of it, the payload as text or,
    when it is not text, as a hex dump.
``replay``
    feeds each MQTT dead letter's stored topic and payload through the *current* config's
    decoding again (:func:`ingest.mqtt.formats.decode`, the same as the collector's, with the
    letter's receipt time as the clock, so a bare number is stamped when it was received)
    and stores the readings by the writer's path (:func:`ingest.writer.store_readings`: a
    reading stored already is dropped). The letter is marked replayed (when, as what) in
    the same transaction; replaying it again stores nothing twice. One that still fails
    keeps its row with the new reason, the old ones in ``detail.previous_reasons``.
    Lab-import dead letters are replayed by importing the corrected file
    (``sewerwatch lab import``: rows stored already are unchanged), not here; Sparkplug B
    ones are not replayed (their aliases and sequence belong to a session long gone: the
    collector's rebirth request has the edge node send its values again).

Readings stored by a replay are judged by ``sewerwatch check --from/--to`` over the stored
readings; a running ``sewerwatch run`` does not see them (its evaluator judges what the
collectors hand it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from foundation import moments
from foundation.errors import InputError
from ingest.mqtt.collector import sensor_refs_from_db
from ingest.mqtt.formats import decode
from ingest.mqtt.payload import Bounds, Unusable
from ingest.mqtt.topics import Match, topic_map
from ingest.writer import store_readings

#: Sources whose dead letters ``replay`` can decode again.
REPLAYABLE = ("mqtt",)
#: A dead letter's topic that is a file and line (a lab import's), not an MQTT topic.
FILE_SOURCE = re.compile(r"\.[A-Za-z0-9]{1,5}(?::\d+)?$")
#: Why a lab-import dead letter is not replayed here.
LAB_IMPORT_NOTE = ("the rows a lab import could not use are replayed by importing the corrected file "
                   "('sewerwatch lab import FILE'; rows stored already are left unchanged)")
#: Why a dead letter of a source other than the collectors' is not replayed, in words.
NOT_REPLAYABLE = {
    "lab-import": LAB_IMPORT_NOTE,
    "mail-bounce": "a mail server's report that could not be read is not replayed: read the corrected "
                   "report again on the mailing page (mail that came back)",
}
_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h|d)$")
_UNIT_S = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
#: Why a Sparkplug B dead letter is not replayed.
SPARKPLUG_NOTE = ("a Sparkplug B message depends on the births and sequence numbers before it; the edge node "
                  "sends its current values again on a rebirth request (the collector asks for one)")
#: The topics of Sparkplug B dead letters (never replayed: :data:`SPARKPLUG_NOTE`).
SPARKPLUG_LIKE = "spBv1.0/%"
#: How many payload bytes ``show`` prints.
SHOW_BYTES = 4096


def parse_since(text: str, now: datetime | None = None, tz=timezone.utc) -> datetime:
    """``--since``: ``30m``, ``2h``, ``7d`` ago, or a date or time (:func:`foundation.moments.instant`:
    a date is local midnight in ``tz``, the village's time zone; a time without an offset its clock)."""
    now = now or datetime.now(timezone.utc)
    m = _AGO.match(text.strip())
    if m:
        return now - timedelta(seconds=float(m.group(1)) * _UNIT_S[m.group(2)])
    try:
        return moments.instant(text, "--since", tz)
    except InputError:
        raise InputError(f"deadletters: --since {text!r} is neither an age (30m, 2h, 7d) nor a date or ISO-8601 "
                         "time") from None


@dataclass
class Filters:
    """Which dead letters: by id, source, age, reason text; replayed ones or not."""

    ids: tuple[int, ...] = ()
    source: str | None = None
    since: datetime | None = None
    reason: str | None = None
    state: str = "pending"        # pending | replayed | all
    limit: int | None = None

    def where(self) -> tuple[str, list]:
        clauses, params = [], []
        if self.ids:
            clauses.append("id = ANY(%s)")
            params.append(list(self.ids))
        if self.source:
            clauses.append("source = %s")
            params.append(self.source)
        if self.since:
            clauses.append("received_at >= %s")
            params.append(self.since)
        if self.reason:
            clauses.append("reason ILIKE %s")
            params.append("%" + self.reason.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
        if self.state == "pending" and not self.ids:
            clauses.append("replayed_at IS NULL")
        elif self.state == "replayed":
            clauses.append("replayed_at IS NOT NULL")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


COLUMNS = ("id", "received_at", "source", "topic", "reason", "replayed_at", "replayed_as", "replay_tries", "size")


def listing(conn, f: Filters) -> dict:
    """Dead letters matching ``f``, newest first (at most ``f.limit``), and the counts of
    all that match by source and by reason."""
    where, params = f.where()
    rows = conn.execute(
        f"SELECT id, received_at, source, topic, reason, replayed_at, replayed_as, replay_tries, "
        f"octet_length(payload) FROM dead_letters{where} ORDER BY received_at DESC, id DESC"
        + (" LIMIT %s" % int(f.limit) if f.limit else ""), params).fetchall()
    by_source = conn.execute(f"SELECT source, count(*) FROM dead_letters{where} GROUP BY source ORDER BY 2 DESC",
                             params).fetchall()
    by_reason = conn.execute(
        f"SELECT source, left(regexp_replace(reason, '[0-9]+', 'N', 'g'), 120) AS kind, count(*), max(received_at) "
        f"FROM dead_letters{where} GROUP BY 1, 2 ORDER BY 3 DESC, 4 DESC LIMIT 20", params).fetchall()
    return {"letters": [dict(zip(COLUMNS, r)) for r in rows],
            "total": sum(n for _, n in by_source),
            "by_source": dict(by_source),
            "by_reason": [{"source": s, "reason": k, "count": n, "latest": t} for s, k, n, t in by_reason]}


def one(conn, letter_id: int) -> dict:
    """Dead letter ``letter_id`` with its payload and detail (InputError when there is none)."""
    row = conn.execute("SELECT id, received_at, source, topic, reason, replayed_at, replayed_as, replay_tries, "
                       "octet_length(payload), payload, detail, last_replay_at FROM dead_letters WHERE id = %s",
                       (letter_id,)).fetchone()
    if row is None:
        raise InputError(f"deadletters: no dead letter with id {letter_id}")
    d = dict(zip(COLUMNS, row[:9]))
    d["payload"], d["detail"], d["last_replay_at"] = (bytes(row[9]) if row[9] is not None else None), row[10], row[11]
    return d


def payload_text(payload: bytes | None, limit: int = SHOW_BYTES) -> tuple[str, str]:
    """``("text" | "hex" | "none", shown)``: UTF-8 text when it is text, else a hex dump."""
    if payload is None:
        return "none", ""
    part = payload[:limit]
    more = f"\n... ({len(payload) - limit:,} more bytes)" if len(payload) > limit else ""
    try:
        text = part.decode("utf-8")
        if all(c.isprintable() or c in "\n\r\t" for c in text):
            return "text", text + more
    except UnicodeDecodeError:
        pass
    lines = []
    for off in range(0, len(part), 16):
        chunk = part[off:off + 16]
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:08x}  {chunk.hex(' '):<47}  {ascii_}")
    return "hex", "\n".join(lines) + more


def summary(conn, window_s: float = 3600.0, latest: int = 5) -> dict:
    """For ``sewerwatch status``: dead letters not replayed, by source, in the last
    ``window_s`` seconds and in all, and the latest reasons."""
    rows = conn.execute(
        "SELECT source, count(*) FILTER (WHERE received_at > now() - make_interval(secs => %s)), count(*) "
        "FROM dead_letters WHERE replayed_at IS NULL GROUP BY source ORDER BY 3 DESC", (window_s,)).fetchall()
    recent = conn.execute("SELECT id, received_at, source, topic, reason FROM dead_letters WHERE replayed_at IS NULL "
                          "ORDER BY received_at DESC, id DESC LIMIT %s", (latest,)).fetchall()
    replayable, sparkplug = conn.execute(
        "SELECT count(*) FILTER (WHERE source = ANY(%s) AND coalesce(topic, '') NOT LIKE %s), "
        "count(*) FILTER (WHERE source = ANY(%s) AND topic LIKE %s) FROM dead_letters WHERE replayed_at IS NULL",
        (list(REPLAYABLE), SPARKPLUG_LIKE, list(REPLAYABLE), SPARKPLUG_LIKE)).fetchone()
    return {"window_s": window_s, "replayable": int(replayable), "sparkplug": int(sparkplug),
            "by_source": {s: {"last_window": int(h), "all": int(a)} for s, h, a in rows},
            "last_window": sum(int(h) for _, h, _ in rows), "all": sum(int(a) for _, _, a in rows),
            "latest": [dict(zip(("id", "received_at", "source", "topic", "reason"), r)) for r in recent]}


@dataclass
class Outcome:
    """What replaying one dead letter did."""

    id: int
    topic: str | None
    stored: int = 0          # readings decoded
    new: int = 0             # readings not stored before
    reason: str | None = None   # still unusable: why
    skipped: str | None = None  # not tried: why

    def line(self, dry_run: bool) -> str:
        where = self.topic or "-"
        if FILE_SOURCE.search(where):                  # a file (a lab import's) by its name, not its folders
            where = where.replace("\\", "/").rsplit("/", 1)[-1]
        head = f"#{self.id} {where}: "
        if self.skipped:
            return head + "skipped: " + self.skipped
        if self.reason is not None and not self.stored:
            return head + "still unusable: " + self.reason
        verb = "would store" if dry_run else "stored"
        tail = "" if dry_run else f" ({self.new} new)"
        return head + f"{verb} {self.stored} reading{'s' * (self.stored != 1)}{tail}" + (
            f"; {self.reason}" if self.reason else "")


def replay(conn, cfg, f: Filters, dry_run: bool = False, actor=None) -> list[Outcome]:
    """Replay the dead letters ``f`` selects (see the module's docstring); one transaction
    per letter, so what is done stays done. ``actor`` (:class:`foundation.actor.Actor`: the
    operating-system user of ``sewerwatch deadletters replay``, the account of the office)
    is recorded in the audit log with what each letter became."""
    out = _replay(conn, cfg, f, dry_run)
    if actor is not None and not dry_run and out:
        with conn.transaction():
            conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'deadletters-replay', %s, %s)",
                         (actor.audit_name, "dead_letters", json.dumps({
                             "via": actor.via, "ids": [o.id for o in out], "stored": sum(o.stored for o in out),
                             "new": sum(o.new for o in out),
                             "still_unusable": [o.id for o in out if o.reason is not None and not o.stored],
                             "skipped": [o.id for o in out if o.skipped]})))
    return out


def _replay(conn, cfg, f: Filters, dry_run: bool) -> list[Outcome]:
    where, params = f.where()
    rows = conn.execute(f"SELECT id, received_at, source, topic, payload, reason, replayed_at, replayed_as "
                        f"FROM dead_letters{where} ORDER BY received_at, id"
                        + (" LIMIT %s" % int(f.limit) if f.limit else ""), params).fetchall()
    conn.commit()
    topics = topic_map(cfg, sensor_refs_from_db(conn, "mqtt"))
    conn.commit()
    bounds = Bounds.from_options(cfg.ingest)
    out = []
    for lid, received, source, topic, payload, old_reason, replayed_at, replayed_as in rows:
        if source not in REPLAYABLE:
            out.append(Outcome(lid, topic, skipped=NOT_REPLAYABLE.get(
                source, f"a {source.replace('-', ' ')} dead letter cannot be replayed")))
            continue
        if replayed_at is not None:
            out.append(Outcome(lid, topic, skipped=f"replayed already at {replayed_at:%Y-%m-%d %H:%M:%S %Z} "
                                                   f"as {replayed_as}"))
            continue
        m = topics.match(topic or "")
        if isinstance(m, Match) and m.input.format == "sparkplug":
            out.append(Outcome(lid, topic, skipped=SPARKPLUG_NOTE))
            continue
        received_us = int(received.timestamp() * 1_000_000)
        try:
            d = decode(topics, topic or "", bytes(payload or b""), bounds, now_us=received_us)
        except Unusable as exc:
            o = Outcome(lid, topic, reason=str(exc))
            if not dry_run:
                with conn.transaction():
                    conn.execute("UPDATE dead_letters SET reason = %s, last_replay_at = now(), "
                                 "replay_tries = replay_tries + 1, detail = jsonb_set(detail, '{previous_reasons}', "
                                 "coalesce(detail->'previous_reasons', '[]'::jsonb) || to_jsonb(%s::text)) "
                                 "WHERE id = %s", (o.reason, old_reason, lid))
            out.append(o)
            continue
        o = Outcome(lid, topic, stored=len(d.readings), reason=d.bad)
        if not dry_run:
            with conn.transaction():
                o.new, _ = store_readings(conn, d.readings)
                sensors = ", ".join(sorted({topics.by_id[int(i)].key for i in set(d.readings.sensor_id.tolist())}))
                as_ = f"{o.stored} reading{'s' * (o.stored != 1)} of {sensors}" + (f" ({d.bad})" if d.bad else "")
                conn.execute("UPDATE dead_letters SET replayed_at = now(), replayed_as = %s, last_replay_at = now(), "
                             "replay_tries = replay_tries + 1 WHERE id = %s", (as_[:1000], lid))
        out.append(o)
    return out


def as_json(obj) -> str:
    """``obj`` as one JSON line (times as ISO text, bytes as hex)."""
    return json.dumps(obj, default=lambda x: x.isoformat() if isinstance(x, datetime) else
                      x.hex() if isinstance(x, bytes) else str(x))
