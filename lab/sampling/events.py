"""Sampling events: who samples where, which parameters, the sample type, the containers and
the laboratory; planned one by one (:func:`create`) or a month at once from the schedule
(:func:`enforcement.sampling_plan.plan_month`), listed (:func:`listing`) and read back with
the results the laboratory returned for them (:func:`show`: what is missing, what is extra,
what was analysed after its holding time).

Each event has one sample id (``SW-2605-0007``: the planned month and a number no other event
has), printed on the chain of custody and written by the laboratory in the lab CSV's
``sample_id``; the results of that id are the event's (:mod:`lab.sampling.matching`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from foundation.errors import InputError
from lab.ordinance import pack_timezone
from lab.readers.analytes import ANALYTES
from lab.sampling.methods import held_hours, method, over_hold

#: Who takes a sample: the utility (its own sampling) or the industrial user (self-monitoring).
SAMPLERS = {"utility": "the utility", "user": "the industrial user"}
SAMPLE_TYPES = {"grab": "grab", "composite": "24-hour composite"}
#: Where a sample is taken when nothing else is said (palmyra-wi 003_44f871d49a02d8f5.txt
#: §13.53(1): the "control manhole" a user maintains for sampling and metering).
DEFAULT_POINT = "control manhole"
#: The analytes the office's form offers (any analyte of the catalogue may be planned from the command line).
COMMON = ("bod5", "tss", "tkn", "tp", "fog", "cn", "ph", "cu", "ni", "zn", "pb", "cd")
STATES = {"planned": "planned", "returned": "results returned", "cancelled": "cancelled"}


@dataclass
class Event:
    """One sampling event (a row of ``sampling_events``) in the village's words.

    Attributes
    ----------
    planned_at, sampled_at : datetime
        Aware; ``sampled_at`` the lab file's collection time, None until results come back.
    """

    id: int
    sample_key: str
    site: str
    site_name: str
    tz: str
    requirement: str | None
    period: str | None
    planned_at: datetime
    sampler: str
    point: str
    sample_type: str
    parameters: list[str]
    laboratory: str | None
    state: str
    sampled_at: datetime | None
    created_by: str
    results: list[dict] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        """Parameters planned but not returned (those returned after their holding time included:
        they are returned, flagged)."""
        got = {r["analyte"] for r in self.results}
        return [p for p in self.parameters if p not in got]

    @property
    def extra(self) -> list[str]:
        """Analytes returned under this sample id but not planned."""
        return [r["analyte"] for r in self.results if r["analyte"] not in self.parameters]

    @property
    def over_hold(self) -> list[str]:
        return [r["analyte"] for r in self.results if r["over_hold"]]

    def as_json(self) -> dict:
        d = asdict(self)
        d.update(missing=self.missing, extra=self.extra, over_hold=self.over_hold)
        return d


def analyte_name(a: str) -> str:
    """The analyte's name as people read it (``Biochemical oxygen demand, 5-day 20 °C``)."""
    return ANALYTES.get(a, a)


def _site(conn, key: str) -> tuple[int, str, str]:
    row = conn.execute("SELECT id, name, pack FROM sites WHERE key = %s", (key,)).fetchone()
    if row is None:
        known = ", ".join(k for (k,) in conn.execute("SELECT key FROM sites ORDER BY key"))
        raise InputError(f"site: no industrial user '{key}' (known: {known})")
    return row


def create(conn, site: str, planned_at: datetime, parameters, *, sample_type: str = "grab", sampler: str = "user",
           point: str | None = None, laboratory: str | None = None, requirement: str | None = None,
           period: str | None = None, actor: str = "sewerwatch", now: datetime | None = None) -> Event:
    """Plan one sampling event and give it its sample id.

    Parameters
    ----------
    site : str
        The industrial user's key.
    planned_at : datetime
        When the sample is to be taken (aware); for a composite, when it starts.
    parameters : iterable of str
        Analyte ids (``bod5``, ``tss``...), each once.
    sample_type : str
        ``grab`` or ``composite`` (as the lab CSV's ``sample_type``).
    sampler : str
        ``utility`` or ``user`` (:data:`SAMPLERS`).
    point : str, optional
        Where (default :data:`DEFAULT_POINT`).
    laboratory : str, optional
        Default: the laboratory of the site's last sample on record.
    requirement, period : str, optional
        The schedule's requirement and period it serves.

    Raises
    ------
    InputError
        An unknown site, analyte, sample type or sampler, no parameter, or a time without offset.
    """
    site_id, _name, _pack = _site(conn, site)
    params = [str(p).strip().lower() for p in parameters if str(p).strip()]
    if not params:
        raise InputError("parameters: name at least one analyte to sample (e.g. bod5, tss)")
    for p in params:
        if p not in ANALYTES:
            raise InputError(f"parameters: unknown analyte '{p}' (e.g. {', '.join(list(ANALYTES)[:6])})")
    if len(set(params)) != len(params):
        raise InputError(f"parameters: an analyte named twice in {', '.join(params)}")
    if sample_type not in SAMPLE_TYPES:
        raise InputError(f"sample type: '{sample_type}' is neither grab nor composite")
    if sampler not in SAMPLERS:
        raise InputError(f"sampler: '{sampler}' is neither utility nor user")
    if planned_at.tzinfo is None:
        raise InputError("planned time: give it with its time zone")
    if laboratory is None:
        row = conn.execute("SELECT laboratory FROM lab_samples WHERE site_id = %s AND laboratory IS NOT NULL "
                           "ORDER BY collected DESC LIMIT 1", (site_id,)).fetchone()
        laboratory = row[0] if row else None
    (eid,) = conn.execute("SELECT nextval('sampling_events_id_seq')").fetchone()
    key = f"SW-{planned_at:%y%m}-{eid:04d}"
    conn.execute("INSERT INTO sampling_events (id, sample_key, site_id, requirement, period, planned_at, sampler, "
                 "point, sample_type, parameters, laboratory, created_by, created_at) "
                 "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                 (eid, key, site_id, requirement, period, planned_at, sampler, point or DEFAULT_POINT, sample_type,
                  params, laboratory, actor, now or datetime.now(timezone.utc)))
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, 'sampling.plan', %s, "
                 "jsonb_build_object('site', %s::text, 'parameters', %s::text[]))",
                 (actor, f"sampling_event:{key}", site, params))
    return show(conn, key)


_COLS = ("SELECT e.id, e.sample_key, s.key, s.name, s.pack, e.requirement, e.period, e.planned_at, e.sampler, "
         "e.point, e.sample_type, e.parameters, e.laboratory, e.state, e.sampled_at, e.created_by "
         "FROM sampling_events e JOIN sites s ON s.id = e.site_id ")


def _event(row) -> Event:
    eid, key, site, name, pack, req, period, planned, sampler, point, kind, params, lab, state, taken, by = row
    return Event(eid, key, site, name, str(pack_timezone(pack)), req, period, planned, sampler, point, kind,
                 list(params), lab, state, taken, by)


def listing(conn, first: datetime | None = None, end: datetime | None = None, site: str | None = None) -> list[Event]:
    """The events planned in ``[first, end)`` (aware instants; None: no bound), one user's with
    ``site``, by planned time; each with its results (:func:`show`'s)."""
    rows = conn.execute(_COLS + "WHERE (%(a)s::timestamptz IS NULL OR e.planned_at >= %(a)s) "
                        "AND (%(b)s::timestamptz IS NULL OR e.planned_at < %(b)s) "
                        "AND (%(s)s::text IS NULL OR s.key = %(s)s) ORDER BY e.planned_at, e.id",
                        {"a": first, "b": end, "s": site}).fetchall()
    out = [_event(r) for r in rows]
    for ev in out:
        ev.results = results(conn, ev)
    return out


def show(conn, key: str) -> Event:
    """One event by its sample id, with the results returned for it.

    Raises
    ------
    InputError
        No event has that sample id.
    """
    row = conn.execute(_COLS + "WHERE e.sample_key = %s", (key.strip().upper(),)).fetchone()
    if row is None:
        raise InputError(f"sampling event: no event has the sample id '{key}'")
    ev = _event(row)
    ev.results = results(conn, ev)
    return ev


def results(conn, ev: Event) -> list[dict]:
    """The current results stored under the event's sample id at its site, each with when it
    was sampled and analysed, the hours between [h] and whether that exceeds the holding time."""
    rows = conn.execute(
        "SELECT r.analyte, r.value_mg_l, r.qualifier, r.raw_value, r.raw_unit, ls.collected, lr.analysed, "
        "h.result_id IS NOT NULL FROM lab_results_current r JOIN lab_results lr ON lr.id = r.id "
        "JOIN lab_samples ls ON ls.id = r.sample_id JOIN sites s ON s.id = ls.site_id "
        "LEFT JOIN lab_result_holds h ON h.result_id = r.id "
        "WHERE ls.sample_key = %s AND s.key = %s ORDER BY r.analyte", (ev.sample_key, ev.site)).fetchall()
    out = []
    for analyte, value, qual, raw, unit, collected, analysed, flagged in rows:
        m = method(analyte)
        out.append({"analyte": analyte, "name": analyte_name(analyte), "value": value, "qualifier": qual,
                    "raw_value": raw, "unit": unit, "sampled": collected, "analysed": analysed,
                    "held_hours": held_hours(collected, analysed) if analysed else None,
                    "holding": m.words, "holding_hours": m.holding_hours,
                    "over_hold": bool(flagged) or over_hold(analyte, collected, analysed),
                    "planned": analyte in ev.parameters})
    return out


def cancel(conn, key: str, actor: str) -> Event:
    """Cancel a planned event (refused once results came back, or when cancelled already)."""
    ev = show(conn, key)
    if ev.state != "planned":
        raise InputError(f"sampling event {ev.sample_key}: {STATES[ev.state]} already: it cannot be cancelled")
    conn.execute("UPDATE sampling_events SET state = 'cancelled' WHERE id = %s", (ev.id,))
    conn.execute("INSERT INTO audit_log (actor, action, object) VALUES (%s, 'sampling.cancel', %s)",
                 (actor, f"sampling_event:{ev.sample_key}"))
    return show(conn, key)
