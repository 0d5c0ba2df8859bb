"""What an alert says: text a superintendent can act on.

A violation message gives the site, the parameter, the value and the limit with units, the
start time in the village's time zone, the rule with the ordinance's words and citation,
and a command (or link) to see the readings. An episode of a rule for which the village's
ordinance requires the discharger to report (a slug, an acid or caustic dump, a hot
discharge) adds that duty, in the ordinance's words, and the report laid out as a form to
complete. Both come from the pack's ``[report_duty]`` (:class:`limits.packs.ReportDuty`):
which rules call for the report, the section and words of the duty, and the report's
contents (e.g. webster-wi, 000_68bc5aa0322c9423.txt §240-6: "location of discharge, date and
time thereof, type of waste, concentration and volume, and corrective actions").
"""

from __future__ import annotations

from datetime import datetime

from foundation import display
from foundation.errors import InputError
from limits.packs import ReportDuty, load_pack

PARAMETER_NAMES = {"ph": "pH", "temperature": "Temperature", "flow": "Flow", "level": "Level"}

EVENT_WORDS = {"open": "VIOLATION", "escalate": "ESCALATED (unacknowledged)", "resolve": "RESOLVED",
               "continue": "VIOLATION CONTINUES"}
HEALTH_WORDS = {"no-data": "no data", "flatline": "flatline", "device-unreachable": "device unreachable",
                "sensor-fault": "sensor fault (readings outside the physically possible range or flagged)",
                "clock-skew": "clock skew (its stamps run ahead of or behind the collector's clock)",
                # instruments and field work (field/conditions.py)
                "maintenance-open": "maintenance window left open",
                "maintenance-pending": "maintenance window opened after the fact awaits approval",
                "calibration-due": "calibration due",
                "calibration-overdue": "calibration overdue",
                "calibration-failed": "calibration failed",
                "sensor-drift": "sensor drift (a grab sample disagrees with the sensor)"}
#: What each field condition means for the readings (the health message's last line).
FIELD_CONSEQUENCE = {
    "maintenance-open": "Its readings are not judged while the window is open: end it when the work is done.",
    "maintenance-pending": "Until a second person approves it the window excludes nothing: its readings stay judged.",
    "calibration-due": "Calibrate it by the due date; after it the calibration is overdue (a finding).",
    "calibration-overdue": "An instrument past its calibration date is a finding; calibrate it and record it.",
    "calibration-failed": "Its readings may be wrong until it is repaired and calibrated again (a finding).",
    "sensor-drift": "Readings judged while it drifted are marked in the evidence; calibrate the probe and record it.",
}


def _label(alert_id) -> str:
    """``#12``; ``#pending`` while the database has not numbered the alert (it is down)."""
    return f"#{alert_id}" if alert_id is not None else "#pending"


def _ack_line(alert_id, link: dict | None = None) -> str:
    """How to acknowledge: the link to the acknowledgement page (``link``: ``url``, ``until``
    as local text; :mod:`alerts.links`) where ``sewerwatch run`` serves it, and the command."""
    if alert_id is None:
        cli = ("the database is unreachable, so this alert has no number yet; "
               "'sewerwatch alerts list' shows it once the database is back")
    else:
        cli = f"sewerwatch alerts ack {alert_id} --by NAME [--note TEXT]"
    if link is None:
        return f"Acknowledge: {cli}"
    return (f"Acknowledge from your phone: {link['url']}\n"
            f"  (works once, until {link['until']}; or: {cli})")


def local_time(iso_or_dt, tz: str) -> str:
    """``2026-06-01 10:30:00 CDT`` from an ISO-8601 UTC text or aware datetime."""
    return display.local_time(iso_or_dt, tz)


def _num(x) -> str:
    return display.num(x, ".4g")


def with_unit(x, unit: str | None, parameter: str | None = None) -> str:
    """``3.468 pH`` or ``713.5 gpm``: a value with its unit."""
    return f"{_num(x)} {unit}".rstrip() if unit else _num(x)


def reading_text(parameter: str, x, unit: str | None) -> str:
    """``pH 3.1`` or ``Temperature 160 degF``: a parameter's value as a person writes it (pH
    is its own unit, named once, before the number; not "pH 3.1 pH")."""
    if unit == "pH" or (parameter == "ph" and not unit):
        return f"pH {_num(x)}"
    return f"{PARAMETER_NAMES.get(parameter, parameter)} {with_unit(x, unit)}"


def limit_text(comparison: str | None, x, unit: str | None) -> str:
    """``< 5`` (pH, no unit repeated) or ``> 150 degF``."""
    return f"{comparison or ''} {_num(x) if unit == 'pH' else with_unit(x, unit)}".strip()


def summary(v: dict, site_name: str, tz: str | None = None) -> str:
    """One line: site, parameter, value and limit with units, rule, start (in ``tz`` with its
    zone; UTC without)."""
    start = local_time(v["start"], tz) if tz else v["start"]
    return (f"{site_name}: {reading_text(v['parameter'], v['peak'], v.get('unit'))} "
            f"({limit_text(v.get('comparison'), v['limit'], v.get('unit'))}, {v['rule']}) from {start}")


def readings_hint(v: dict, options=None) -> str:
    """A command (and a link when ``readings_url`` is configured) to see the readings."""
    start = v["start"]
    end = v.get("end") or v.get("last") or start
    cmd = (f"sewerwatch check --from {start} --to {end} --site {v['site']}")
    url_t = getattr(options, "readings_url", None) if options is not None else None
    if url_t:
        t0 = int(datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1000) - 3_600_000
        t1 = int(datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp() * 1000) + 3_600_000
        return cmd + "\n  " + url_t.format(site=v["site"], sensor=v.get("sensor", ""), from_ms=t0, to_ms=t1)
    return cmd


def violation_message(alert_id: int | None, event: str, v: dict, *, site_name: str, tz: str, options=None,
                      ack: dict | None = None, link: dict | None = None) -> tuple[str, str]:
    """Title and body of a violation alert's notification.

    Parameters
    ----------
    alert_id : int or None
        ``alerts.id``; None while the database is unreachable (the message says so).
    event : str
        ``open``, ``escalate``, ``resolve`` or ``continue``.
    v : dict
        A violation record (:func:`limits.evaluator.violations`: site, sensor, parameter,
        rule, kind, start, end, peak, limit, unit, comparison, citation, words, pack, ...);
        ``end`` may be None while the episode lasts.
    site_name : str
        The industrial user's name.
    tz : str
        The village's IANA time zone (times are shown in it).
    ack : dict, optional
        The acknowledgement (``by``, ``at``, ``note``), once there is one.
    link : dict, optional
        The acknowledgement link of this message (``url``, ``until``; :mod:`alerts.links`).
    """
    param = PARAMETER_NAMES.get(v["parameter"], v["parameter"])
    unit = v.get("unit") or ""
    cmp_ = v.get("comparison") or ""
    title = (f"[sewerwatch] {EVENT_WORDS.get(event, event.upper())} {_label(alert_id)}: {site_name} — "
             f"{reading_text(v['parameter'], v['peak'], unit)} ({limit_text(cmp_, v['limit'], unit)}, {v['rule']})")
    lines = [
        f"Alert {_label(alert_id)} — {EVENT_WORDS.get(event, event)}",
        "",
        f"Site:        {site_name} ({v['site']})",
        f"Sensor:      {v['site']}/{v.get('sensor', '')} ({param})",
        f"Value:       {_num(v['peak'])} {unit} (most extreme reading so far)",
        f"Limit:       {cmp_} {_num(v['limit'])} {unit}",
        f"Started:     {local_time(v['start'], tz)}",
    ]
    if v.get("end"):
        lines.append(f"Ended:       {local_time(v['end'], tz)}")
    else:
        lines.append("Ended:       still going")
    if v.get("kind") == "slug" and v.get("average") is not None:
        # the baseline: the 24-hour average during normal operation, or before 24 hours of
        # readings the permitted average flow (palmyra-wi, 003_44f871d49a02d8f5.txt §13.43 SLUG,
        # §13.54(2)(b)); an older record has no "baseline"
        basis = v.get("baseline") or "24-hour average"
        lines.append(f"Slug:        more than {_num(v.get('multiple'))} x the {basis} "
                     f"({_num(v['average'])} {unit})")
        if v.get("baseline") and v["baseline"] != "24-hour average during normal operation":
            lines.append(f"Baseline:    {v['baseline']} (fewer than 24 hours of readings so far)")
    lines += [
        f"Rule:        {v['rule']} ({v.get('pack', '')})",
        f"Ordinance:   {v.get('citation', '')}",
        f"  \"{v.get('words', '')}\"",
        "",
        "See the readings:",
        f"  {readings_hint(v, options)}",
        _ack_line(alert_id, link),
    ]
    if ack:
        lines.insert(2, f"Acknowledged by {ack.get('by')} at {ack.get('at')}" +
                     (f": {ack['note']}" if ack.get("note") else ""))
    duty = report_duty(v.get("pack"))
    if event in ("open", "escalate") and duty is not None and v["rule"] in duty.rules:
        lines += ["", *discharge_report(v, duty, site_name=site_name, tz=tz)]
    return title, "\n".join(lines)


def report_duty(pack: str | None) -> ReportDuty | None:
    """The pack's duty to report a discharge, or None (no pack, an unknown one, or no duty).

    An alert goes out even when its pack cannot be read: the message then has no report.
    """
    if not pack:
        return None
    try:
        return load_pack(pack).report_duty
    except InputError:
        return None


def _fill(fill: str, v: dict, site_name: str, tz: str) -> str:
    """What the report form pre-fills for an item of kind ``fill`` (see
    :data:`limits.packs.REPORT_FILLS`) from the violation record; blanks to complete."""
    if fill == "location":
        return f"{site_name}, control manhole of sensor {v['site']}/{v.get('sensor', '')}"
    if fill == "date-time":
        return f"from {local_time(v['start'], tz)} to {local_time(v['end'], tz) if v.get('end') else '________'}"
    if fill == "measured":
        param = PARAMETER_NAMES.get(v["parameter"], v["parameter"])
        unit = "" if v.get("unit") == param else " " + (v.get("unit") or "")
        return f"______________________ (measured: {param} {_num(v['peak'])}{unit})"
    if fill == "concentration-volume":
        return "____________ mg/l, ____________ gallons"
    return "______________________________________"


def discharge_report(v: dict, duty: ReportDuty, *, site_name: str, tz: str) -> list[str]:
    """The discharger's report the ordinance requires, pre-filled where the readings tell."""
    kind = "a slug discharge" if v.get("kind") == "slug" else "an accidental discharge of a prohibited substance"
    head = [f"Discharger's report required for {kind}: {duty.citation}", f"  \"{duty.words}\""]
    if duty.contents_citation != duty.citation:
        head.append(f"  (contents as {duty.contents_citation} lists them)")
    return [*head, "Complete and return:",
            *(f"  {i}. {item.words}: {_fill(item.fill, v, site_name, tz)}" for i, item in enumerate(duty.contents, 1))]


PERMIT_WORDS = {"permit-renewal": "permit term ends: renews automatically unless notice is given",
                "permit-ends": "permit ends", "permit-expired": "PERMIT EXPIRED"}


def permit_summary(r: dict, site_name: str) -> str:
    """One line of a permit reminder (``r``: :func:`alerts.reminders.due`'s record)."""
    if r["rule"] == "permit-expired":
        return f"{site_name}: permit {r['permit']} expired on {r['term_end']}"
    return f"{site_name}: permit {r['permit']} term ends {r['term_end']} (in {r['days_left']} days)"


def permit_message(alert_id: int | None, event: str, r: dict, *, site_name: str, tz: str) -> tuple[str, str]:
    """Title and body of a permit reminder: the term ending (palmyra-wi, 003_44f871d49a02d8f5.txt
    §13.54(4): renewed year to year "unless the person is notified by the Village within 60
    days prior to the expiration"), or the permit expired."""
    head = {"permit-renewal": "PERMIT RENEWAL", "permit-ends": "PERMIT ENDS", "permit-expired": "PERMIT EXPIRED"}
    what = "RESOLVED" if event == "resolve" else head.get(r["rule"], "PERMIT")
    title = f"[sewerwatch] {what} {_label(alert_id)}: {permit_summary(r, site_name)}"
    lines = [f"Alert {_label(alert_id)} — {PERMIT_WORDS.get(r['rule'], r['rule'])}", "",
             f"Site:        {site_name} ({r['site']})", f"Permit:      {r['permit']}"]
    if r["rule"] == "permit-renewal":
        by = r.get("notice_by")
        when = (f"by {by}, {r['notice_days']} days before the term ends (the reading of \"within "
                f"{r['notice_days']} days prior\" this village takes)" if r.get("notice_reading") == "deadline" and by
                else f"before the term ends (within the {r['notice_days']} days before it)")
        lines += [f"Term ends:   {r['term_end']} (in {r['days_left']} days)",
                  f"The permit renews for another term unless the utility notifies the permittee {when}: "
                  "decide now whether to renew it as it is, change its conditions or end it."]
    elif r["rule"] == "permit-ends":
        lines += [f"Ends:        {r['term_end']} (in {r['days_left']} days; notice was given)",
                  "The user must apply again before discharging after that day."]
    else:
        lines += [f"Ended:       {r['term_end']} ({-r['days_left']} days ago)",
                  "Discharging without a permit where one is required is a violation each day it goes on."]
    if r.get("citation"):
        lines += [f"Ordinance:   {r['citation']}", f"  \"{r.get('words', '')}\""]
    lines += ["", f"See the permit: sewerwatch permit show {r['permit']}", _ack_line(alert_id)]
    return title, "\n".join(lines)


def health_message(alert_id: int | None, event: str, h: dict, *, site_name: str, tz: str,
                   link: dict | None = None) -> tuple[str, str]:
    """Title and body of a sensor-health alert (``h``: rule, site, sensor or device, since,
    detail; ``link``: its acknowledgement link, as for :func:`violation_message`)."""
    if h.get("kind") == "permit":   # a permit reminder tracked by the manager as a non-violation alert
        return permit_message(alert_id, event, h, site_name=site_name, tz=tz)
    what = HEALTH_WORDS.get(h["rule"], h["rule"])
    subject = h.get("label") or h.get("device") or f"{h.get('site', '')}/{h.get('sensor', '')}"
    title = (f"[sewerwatch] SENSOR HEALTH {EVENT_WORDS.get(event, event.upper())} {_label(alert_id)}: {site_name} "
             f"{subject}: {what}")
    lines = [
        f"Alert {_label(alert_id)} — sensor health: {what}" + (" (resolved)" if event == "resolve" else ""),
        "",
        f"Site:        {site_name} ({h.get('site', '')})",
        f"{'Window' if h.get('label') else 'Device' if h.get('device') else 'Sensor'}:      {subject}",
    ]
    if h.get("since"):
        lines.append(f"Since:       {local_time(h['since'], tz)}")
    if h.get("detail"):
        lines.append(f"Detail:      {h['detail']}")
    lines += ["", FIELD_CONSEQUENCE.get(h["rule"], "Readings from it cannot show a violation while this lasts."),
              _ack_line(alert_id, link)]
    return title, "\n".join(lines)


def system_message(event: str, rec: dict, *, utility: str, tz: str) -> tuple[str, str]:
    """Title and body of a "sewerwatch degraded" alert (``rec``: component, problem, since):
    sewerwatch itself cannot fully watch the manholes, and says which part and why."""
    component = rec.get("component", "?")
    if event == "resolve":
        title = f"[sewerwatch] RECOVERED: {utility}: {component} is working again"
        head = f"{component} is working again (degraded since {local_time(rec['since'], tz)})."
    else:
        title = f"[sewerwatch] DEGRADED: {utility}: {component}: {rec.get('problem', '')}"[:300]
        head = f"sewerwatch is degraded: {component} cannot do all its work."
    lines = [head, "",
             f"Component:   {component}",
             f"Problem:     {rec.get('problem', '')}",
             f"Since:       {local_time(rec['since'], tz)}" if rec.get("since") else "Since:       unknown",
             "",
             "Until this is resolved, silence from sewerwatch does not mean compliance.",
             "See: sewerwatch status"]
    return title, "\n".join(lines)


def digest_message(day: str, rows: list[dict], tz: str, utility: str) -> tuple[str, str]:
    """The daily digest: every alert opened or active on ``day`` (local), one line each."""
    title = f"[sewerwatch] Daily digest {day}: {len(rows)} alert{'s' if len(rows) != 1 else ''} — {utility}"
    lines = [f"{utility}: alerts of {day} ({tz})", ""]
    if not rows:
        lines.append("No violation episodes or sensor-health alerts.")
    for r in rows:
        ack = f", acknowledged by {r['acknowledged_by']}" if r.get("acknowledged_by") else ""
        lines.append(f"#{r['id']} {r['state']:<12} {local_time(r['opened_at'], tz)}  {r['summary']}{ack}")
    return title, "\n".join(lines)
