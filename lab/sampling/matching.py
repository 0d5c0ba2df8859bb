"""Results matched to sampling events when the laboratory's file comes back, and results
analysed after their holding time flagged.

:func:`after_import` runs inside the lab import's transaction (:func:`lab.store.results.import_lab_file`,
so ``lab import``, its preview and the office's upload alike): each sample of the file whose
sample id is an event's becomes that event's return (state ``returned``, its actual time the
lab file's collection time); each result with an analysis time later than its holding time
(:mod:`lab.sampling.methods`, 40 CFR 136.3(e) Table II) is kept and flagged
(``lab_result_holds``): the schedule does not count it as taken
(:func:`enforcement.schedules.site_samples`).
"""

from __future__ import annotations

from datetime import datetime, timezone

from lab.sampling import events
from lab.sampling.methods import held_hours, method, over_hold


def flag_holds(conn, sample_ids) -> list[dict]:
    """Flag the current results of these lab samples analysed after their holding time.

    Returns
    -------
    list of dict
        ``sample``, ``site``, ``analyte``, ``held_hours`` and ``limit_hours`` [h], ``holding``
        (in words) of each result flagged now or before.
    """
    rows = conn.execute(
        "SELECT r.id, ls.sample_key, s.key, r.analyte, ls.collected, lr.analysed FROM lab_results_current r "
        "JOIN lab_results lr ON lr.id = r.id JOIN lab_samples ls ON ls.id = r.sample_id "
        "JOIN sites s ON s.id = ls.site_id WHERE r.sample_id = ANY(%s) AND lr.analysed IS NOT NULL "
        "ORDER BY ls.sample_key, r.analyte", (sorted(sample_ids),)).fetchall()
    out = []
    for rid, key, site, analyte, collected, analysed in rows:
        if not over_hold(analyte, collected, analysed):
            continue
        m = method(analyte)
        hours = held_hours(collected, analysed)
        conn.execute("INSERT INTO lab_result_holds (result_id, held_hours, limit_hours, citation) "
                     "VALUES (%s, %s, %s, %s) ON CONFLICT (result_id) DO NOTHING",
                     (rid, hours, m.holding_hours, m.citation))
        out.append({"sample": key, "site": site, "analyte": analyte, "held_hours": round(hours, 2),
                    "limit_hours": m.holding_hours, "holding": m.words})
    return out


def after_import(conn, sample_ids, now: datetime | None = None) -> dict:
    """What a lab file brought for the sampling events (in the import's transaction).

    Parameters
    ----------
    sample_ids : iterable of int
        The ``lab_samples`` of the file's good rows.

    Returns
    -------
    dict
        ``events``: each event matched, with its sample id, ``missing``, ``extra`` and
        ``over_hold`` analytes; ``unknown``: the file's sample ids no event has (when the file
        matched at least one event, else empty: a file of the user's own sampling is no
        event's); ``over_hold``: every result of the file flagged (:func:`flag_holds`).
    """
    ids = sorted(set(sample_ids))
    if not ids:
        return {"events": [], "unknown": [], "over_hold": []}
    held = flag_holds(conn, ids)
    rows = conn.execute(
        "SELECT ls.sample_key, min(ls.collected), e.sample_key FROM lab_samples ls "
        "LEFT JOIN sampling_events e ON e.sample_key = ls.sample_key AND e.site_id = ls.site_id "
        "AND e.state <> 'cancelled' WHERE ls.id = ANY(%s) GROUP BY ls.sample_key, e.sample_key "
        "ORDER BY ls.sample_key", (ids,)).fetchall()
    matched = [(k, c) for k, c, e in rows if e is not None]
    unknown = [k for k, _c, e in rows if e is None] if matched else []
    out = []
    for key, collected in matched:
        conn.execute("UPDATE sampling_events SET state = 'returned', sampled_at = coalesce(sampled_at, %s), "
                     "returned_at = coalesce(returned_at, %s) WHERE sample_key = %s",
                     (collected, now or datetime.now(timezone.utc), key))
        ev = events.show(conn, key)
        out.append({"sample": key, "site": ev.site, "missing": ev.missing, "extra": ev.extra,
                    "over_hold": ev.over_hold})
    return {"events": out, "unknown": unknown, "over_hold": held}


def words(match: dict) -> list[str]:
    """The import's matching as lines people read (the CLI, the office's upload)."""
    lines = []
    for m in match.get("events", []):
        parts = []
        if m["missing"]:
            parts.append("missing " + ", ".join(events.analyte_name(a) for a in m["missing"]))
        if m["extra"]:
            parts.append("not planned " + ", ".join(events.analyte_name(a) for a in m["extra"]))
        if m["over_hold"]:
            parts.append("analysed after its holding time " + ", ".join(events.analyte_name(a) for a in m["over_hold"]))
        lines.append(f"sampling event {m['sample']} ({m['site']}): " + ("; ".join(parts) if parts else "every planned result returned"))
    if match.get("unknown"):
        lines.append("sample ids of no sampling event: " + ", ".join(match["unknown"]))
    for h in match.get("over_hold", []):
        lines.append(f"held too long: sample {h['sample']} {events.analyte_name(h['analyte'])} analysed "
                     f"{h['held_hours']:g} hours after sampling (at most {h['holding']}): kept, flagged, not counted as taken")
    return lines
