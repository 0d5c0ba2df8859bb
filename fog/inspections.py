"""A grease inspection of an establishment's device: the device's checks (baffles, cover, the
FOG and solids depth measured [in]) and the kitchen's best management practices (plates
scraped before washing, strainers in the sinks, the staff's grease training on record).

The 25 % reading is the program's rule of the pump-outs (:class:`fog.rules.Rules`
``depth_share``) applied to what the inspector measured: FOG plus solids depth as a share of
the device's liquid depth; reached, it is a finding (an "inspection reading": the
device is to be pumped now), shown among the establishment's findings. It serves the duty of
Palmyra §13.51 (seed ``003_44f871d49a02d8f5.txt``: interceptors "in continuous, efficient
operation") and Webster (19) (seed ``000_68bc5aa0322c9423.txt``: "reports of inspections and
cleaning"). Nothing worked out is stored (migration ``0280_grease_reminders_photos.sql``,
``fog_inspections``: what was seen and measured).

The office's inspection form on an establishment's page and ``sewerwatch fog inspect add`` call
:func:`record`; ``fog inspect list`` calls :func:`listed`.
"""

from __future__ import annotations

from datetime import date

from foundation.errors import InputError
from fog import store
from fog.findings import Finding, _num
from fog.rules import Rules

#: What the inspector may answer for the baffles and the cover.
BAFFLES = ("in place", "damaged", "missing")
COVER = ("sound", "damaged", "missing")
#: The kitchen's best management practices, as a page asks them.
PRACTICES = {"scraping": "Plates and pans scraped into the trash before washing",
             "strainers": "Strainers in the sinks' drains",
             "training_records": "The staff's grease training on record"}
#: The kind of an inspection's finding (pages name it so).
KIND = "inspection reading"
_COLS = ("id", "device_id", "inspected_on", "baffles", "cover", "fog_depth_in", "solids_depth_in", "scraping",
         "strainers", "training_records", "notes", "recorded_at", "recorded_by")


def _yes(value, what: str) -> bool:
    text = str(value or "").strip().lower()
    if text in ("yes", "no"):
        return text == "yes"
    raise InputError(f"{what}: answer yes or no, got {value!r}" if text else f"{what}: missing")


def record(conn, establishment_id: int, fields: dict, actor, today: date) -> dict:
    """Record a grease inspection of a device of establishment ``establishment_id``.

    Parameters
    ----------
    fields : dict
        ``device`` (its label), ``date`` (the day of the visit), ``baffles`` (:data:`BAFFLES`),
        ``cover`` (:data:`COVER`), ``fog_depth_in`` and ``solids_depth_in`` [in], each of
        :data:`PRACTICES` ``yes`` or ``no``, ``notes``.
    today : datetime.date
        The village's day: a visit dated after it is refused.

    Raises
    ------
    InputError
        One line naming the field: missing, not in its list, not a number or a date, a date
        after today, a device the establishment does not have.
    """
    licence = conn.execute("SELECT licence FROM fog_establishments WHERE id = %s", (establishment_id,)).fetchone()
    if licence is None:
        raise InputError(f"no establishment {establishment_id}")
    _, dev = store._device_of(conn, licence[0], str(fields.get("device") or "").strip() or None)
    if not str(fields.get("date") or "").strip():
        raise InputError("date of the visit: missing")
    day = store._day(fields["date"], "date of the visit")
    if day > today:
        raise InputError(f"date of the visit: {day} is after today ({today}); record an inspection once it is done")
    baffles, cover = str(fields.get("baffles") or "").strip(), str(fields.get("cover") or "").strip()
    if baffles not in BAFFLES:
        raise InputError(f"baffles: one of {', '.join(BAFFLES)}, got {baffles!r}")
    if cover not in COVER:
        raise InputError(f"cover: one of {', '.join(COVER)}, got {cover!r}")
    depths = {}
    for key, what in (("fog_depth_in", "FOG depth"), ("solids_depth_in", "solids depth")):
        if not str(fields.get(key) or "").strip():
            raise InputError(f"{what}: missing")
        depths[key] = store._number(fields[key], what, "inches")
    practices = {k: _yes(fields.get(k), words) for k, words in PRACTICES.items()}
    notes = str(fields.get("notes") or "").strip()[:2000]
    iid = conn.execute(
        "INSERT INTO fog_inspections (device_id, inspected_on, baffles, cover, fog_depth_in, solids_depth_in, "
        "scraping, strainers, training_records, notes, recorded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
        "%s, %s) RETURNING id",
        (dev[0], day, baffles, cover, depths["fog_depth_in"], depths["solids_depth_in"], practices["scraping"],
         practices["strainers"], practices["training_records"], notes, store.actor_name(actor))).fetchone()[0]
    store._audit(conn, actor, "fog.inspection.add", licence[0], {"device": dev[1], "on": day, "inspection": iid})
    return {"id": iid, "device": dev[1], "inspected_on": day, **depths}


def of_establishment(conn, establishment_id: int) -> list[dict]:
    """The establishment's inspections, newest first, each with its device's ``label`` and
    ``liquid_depth_in`` [in]."""
    rows = conn.execute(
        f"SELECT {', '.join('i.' + c for c in _COLS)}, d.label, d.liquid_depth_in FROM fog_inspections i JOIN "
        "fog_devices d ON d.id = i.device_id WHERE d.establishment_id = %s ORDER BY i.inspected_on DESC, i.id DESC",
        (establishment_id,)).fetchall()
    return [dict(zip((*_COLS, "label", "liquid_depth_in"), r)) for r in rows]


def listed(conn, establishment_id: int | None = None, year: int | None = None) -> list[dict]:
    """The inspections (of one establishment, of one year), newest first, each with its
    establishment's ``licence`` and ``name`` and its device's ``label`` and ``liquid_depth_in`` [in]."""
    rows = conn.execute(
        f"SELECT {', '.join('i.' + c for c in _COLS)}, d.label, d.liquid_depth_in, e.licence, e.name "
        "FROM fog_inspections i JOIN fog_devices d ON d.id = i.device_id JOIN fog_establishments e "
        "ON e.id = d.establishment_id WHERE (%s::int IS NULL OR e.id = %s) AND (%s::int IS NULL OR "
        "extract(year FROM i.inspected_on) = %s) ORDER BY i.inspected_on DESC, i.id DESC",
        (establishment_id, establishment_id, year, year)).fetchall()
    return [dict(zip((*_COLS, "label", "liquid_depth_in", "licence", "name"), r)) for r in rows]


def line(i: dict) -> str:
    """One inspection in one line (``sewerwatch fog show`` and ``fog inspect list``)."""
    held = float(i["fog_depth_in"]) + float(i["solids_depth_in"])
    practices = ", ".join(f"{w.lower()}: {'yes' if i[k] else 'no'}" for k, w in PRACTICES.items())
    return (f"{i['inspected_on']} {i['label']}: baffles {i['baffles']}, cover {i['cover']}, FOG {_num(i['fog_depth_in'])}"
            f" in + solids {_num(i['solids_depth_in'])} in = {_num(held)} in of {_num(i['liquid_depth_in'])} in "
            f"({held / float(i['liquid_depth_in']):.0%}); {practices}" + (f"; {i['notes']}" if i["notes"] else "")
            + f" (by {i['recorded_by']})")


def reading(rules: Rules, inspection: dict) -> tuple[float, bool]:
    """The 25 % reading of an inspection: FOG plus solids depth as a share of the device's
    liquid depth [fraction], and whether it reached the program's ``depth_share``."""
    held = float(inspection["fog_depth_in"]) + float(inspection["solids_depth_in"])
    share = held / float(inspection["liquid_depth_in"])
    return share, share >= rules.depth_share


def basis(rules: Rules) -> str:
    """Where an inspection's finding comes from, in words (under it on the page)."""
    cited = [s.section for s in rules.sections if "too late" in s.grounds]
    return (f"the program's rule: FOG and solids at {rules.depth_share:.0%} of the liquid depth, measured at the "
            "inspection" + (f"; the duty of {', '.join(cited)}" if cited else ""))


def findings(rules: Rules, inspections: list[dict], as_of: date) -> list[tuple[dict, Finding]]:
    """The findings of inspections (those on or before ``as_of``): one for each whose 25 %
    reading was reached, as ``({"label": device, "id": its id}, Finding)`` pairs, the shape of an
    establishment's findings (:func:`fog.store.establishment`)."""
    out = []
    for i in inspections:
        share, reached = reading(rules, i)
        if reached and i["inspected_on"] <= as_of:
            held = float(i["fog_depth_in"]) + float(i["solids_depth_in"])
            out.append(({"label": i["label"], "id": i["device_id"]}, Finding(
                KIND, i["inspected_on"], f"FOG and solids {_num(held)} in of {_num(i['liquid_depth_in'])} in liquid "
                f"depth at the inspection ({share:.0%}, the rule is {rules.depth_share:.0%}): to be pumped now")))
    return out


def add_to(conn, rules: Rules, e: dict, as_of: date) -> None:
    """Add to establishment ``e`` (:func:`fog.store.establishment`) its inspections
    (``e["inspections"]``, newest first, each with its ``share`` [fraction] and ``reached``)
    and the findings of a 25 % reading reached (among ``e["findings"]``, by day)."""
    found = of_establishment(conn, e["id"])
    for i in found:
        i["share"], i["reached"] = reading(rules, i)
    e["inspections"] = found
    e["findings"] = sorted([*e["findings"], *findings(rules, found, as_of)], key=lambda df: (df[1].on, df[0]["label"]))
