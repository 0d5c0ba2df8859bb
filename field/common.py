"""What the field modules share: sites and sensors by key, times, the audit trail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from foundation.actor import Actor
from foundation.errors import InputError


@dataclass(frozen=True)
class SensorRow:
    """A sensor as the ``sensors`` table holds it, with its site."""

    id: int
    name: str
    parameter: str
    unit: str
    site_id: int
    site: str
    site_name: str
    pack: str
    interval_s: float | None = None

    @property
    def key(self) -> str:
        return f"{self.site}/{self.name}"


SENSOR_SQL = """SELECT se.id, se.name, se.parameter, se.unit, si.id, si.key, si.name, si.pack, se.interval_s
                FROM sensors se JOIN sites si ON si.id = se.site_id"""


def sensor(conn, key: str) -> SensorRow:
    """The sensor ``<site>/<name>`` (an :class:`InputError` naming the known ones otherwise)."""
    site, _, name = (key or "").partition("/")
    row = conn.execute(SENSOR_SQL + " WHERE si.key = %s AND se.name = %s", (site, name)).fetchone()
    if row is None:
        known = [f"{r[5]}/{r[1]}" for r in conn.execute(SENSOR_SQL + " ORDER BY si.key, se.name").fetchall()]
        raise InputError(f"unknown sensor {key!r} (sensors: {', '.join(known) or 'none; run sewerwatch db migrate'})")
    return SensorRow(*row)


def sensor_by_id(conn, sensor_id: int) -> SensorRow:
    row = conn.execute(SENSOR_SQL + " WHERE se.id = %s", (sensor_id,)).fetchone()
    if row is None:
        raise InputError(f"no sensor {sensor_id}")
    return SensorRow(*row)


def sensors_of_site(conn, site_id: int) -> list[SensorRow]:
    return [SensorRow(*r) for r in conn.execute(SENSOR_SQL + " WHERE si.id = %s ORDER BY se.name", (site_id,))]


def all_sensors(conn) -> list[SensorRow]:
    return [SensorRow(*r) for r in conn.execute(SENSOR_SQL + " ORDER BY si.key, se.name")]


def site(conn, key: str) -> tuple[int, str, str, str]:
    """``(id, key, name, pack)`` of site ``key``."""
    row = conn.execute("SELECT id, key, name, pack FROM sites WHERE key = %s", (key,)).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute("SELECT key FROM sites ORDER BY key")]
        raise InputError(f"unknown site {key!r} (sites: {', '.join(known) or 'none; run sewerwatch db migrate'})")
    return row


def db_now(conn) -> datetime:
    """The database's clock (every record of one action is stamped by one clock)."""
    return conn.execute("SELECT now()").fetchone()[0]


def utc(t: datetime) -> datetime:
    if t.tzinfo is None:
        raise InputError(f"a time needs its UTC offset, got {t.isoformat()}")
    return t.astimezone(timezone.utc)


def parse_time(text: str | None, what: str) -> datetime | None:
    """An ISO-8601 time with its offset (``2026-06-01T10:30:00-05:00``), or None."""
    if text is None or text == "":
        return None
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{what}: not an ISO-8601 time: {text!r} (e.g. 2026-06-01T10:30:00-05:00)") from None
    if t.tzinfo is None:
        raise InputError(f"{what}: {text!r} has no UTC offset (e.g. 2026-06-01T10:30:00-05:00)")
    return t


def audit(conn, actor: Actor, action: str, obj: str, detail: dict) -> None:
    """One ``audit_log`` row: who (the account or operating-system user) did what, and via which face."""
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, obj, json.dumps({**detail, "via": actor.via}, default=str)))


def iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


#: How far ahead of the database's clock a time typed may be (a phone's clock a little fast) [s].
CLOCK_SLACK = timedelta(minutes=5)


def not_in_future(at: datetime, now: datetime, tz, what: str, why: str) -> None:
    """Refuse a time ``at`` later than ``now`` (beyond :data:`CLOCK_SLACK`): one line naming
    the field ``what``, both times in the village's zone ``tz``, and ``why`` it must not be."""
    if at > now + CLOCK_SLACK:
        f = "%Y-%m-%d %H:%M %Z"
        raise InputError(f"{what}: {at.astimezone(tz).strftime(f)} is in the future (it is now "
                         f"{now.astimezone(tz).strftime(f)} in the village): {why}")


def village_zone(pack: str):
    """The time zone of the village whose ordinance is ``pack`` (its rule pack's)."""
    from zoneinfo import ZoneInfo

    from limits.packs import load_pack
    return ZoneInfo(load_pack(pack).timezone)
