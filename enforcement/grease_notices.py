"""The grease program's enforcement: each finding of an establishment (:mod:`fog.findings`,
:mod:`fog.blockages`) with the step the grease guide proposes for it (:mod:`enforcement.grease_guide`:
the first finding in twelve months a warning letter, the second a notice of violation, the
third a notice of forfeiture; a blockage traced to the establishment a notice of cost
recovery), and the notice issued: its document stored as JSON, its PDF as issued with the
bytes' SHA-256 (``fog_notices``, migration ``0270_grease_enforcement.sql``).

``sewerwatch fog notices due|issue|list|pdf`` and the office's establishment page call these
functions. A finding gets one notice: issuing again is refused naming the notice issued.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, timedelta

from enforcement.grease_guide import GreaseGuide
from foundation.errors import InputError

#: Each kind of finding as a notice names it.
KIND_WORDS = {"overdue": "overdue for pumping", "too late": "pumped too late (the 25 % rule)",
              "over capacity": "more gallons removed than the device holds",
              "unregistered hauler": "pumped by a hauler not registered with the village",
              "blockage": "a grease blockage traced to the establishment",
              "missing device": "no grease removal device"}
_ORDINAL = {1: "the first finding", 2: "the second finding", 3: "the third finding"}
_NOTICE = ("id", "number", "establishment_id", "finding_key", "finding_kind", "finding_on", "step", "title",
           "amount_dollars", "issued_on", "pdf_sha256", "issued_by", "issued_at", "response_due",
           "response_received_on", "response_note", "response_by", "escalated_to", "escalated_on", "escalation_note")


def finding_key(place: dict, f) -> str:
    """What names a finding for good, whatever day it is judged on: its pump-out and kind, its
    blockage report, or (a device overdue as of a day) its device and the day it fell due."""
    if f.blockage_id is not None:
        return f"blockage:{f.blockage_id}"
    if f.missing_id is not None:
        return f"missing device:{f.missing_id}"
    if f.pumpout_id is not None:
        return f"{f.kind}:pumpout:{f.pumpout_id}"
    return f"{f.kind}:device:{place['id']}:{f.on - timedelta(days=f.days or 0)}"


def _issued(conn, establishment_id: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in conn.execute(f"SELECT {', '.join(_NOTICE)} FROM fog_notices WHERE establishment_id = %s ORDER BY id",
                          (establishment_id,)).fetchall():
        n = dict(zip(_NOTICE, r))
        out.setdefault(n["finding_key"], []).append(n)
    return out


def proposals(conn, guide: GreaseGuide, est: dict) -> list[dict]:
    """The establishment's findings (``est`` as :func:`fog.store.establishment` gives it),
    oldest first, each with ``key``, ``kind``, ``on``, ``device``, ``words``, ``nth`` (its
    place among the establishment's findings that count with it in the guide's window, 1 the
    first), ``step`` (the guide's :class:`~enforcement.grease_guide.Step`, None where the
    guide has none for its kind) and ``issued`` (the notices issued for it)."""
    issued = _issued(conn, est["id"])
    out = []
    for place, f in est["findings"]:
        kinds = guide.counts_with(f.kind)
        start = f.on - timedelta(days=guide.window_days)
        nth = 1 + sum(1 for p in out if p["kind"] in kinds and p["on"] >= start)
        key = finding_key(place, f)
        out.append({"key": key, "kind": f.kind, "on": f.on, "device": place["label"], "words": f.words,
                    "pumpout_id": f.pumpout_id, "blockage_id": f.blockage_id, "device_id": place["id"],
                    "nth": nth if kinds else None, "step": guide.step_for(f.kind, nth), "issued": issued.get(key, [])})
    return out


def due(conn, rules, guide: GreaseGuide, as_of: date) -> list[dict]:
    """Every finding as of ``as_of`` for which the guide proposes a step and no notice was
    issued: establishments by name, their findings oldest first; each a proposal
    (:func:`proposals`) with the establishment's ``licence``, ``name`` and ``establishment_id``."""
    from fog import store

    out = []
    for est in sorted(store.establishments(conn, rules, as_of), key=lambda e: (e["name"].lower(), e["id"])):
        for p in proposals(conn, guide, est):
            if p["step"] is not None and not p["issued"]:
                out.append({**p, "licence": est["licence"], "name": est["name"], "establishment_id": est["id"]})
    return out


def _refusal(n: dict) -> str:
    return (f"{n['title'].lower()} {n['number']} was issued for this finding on {n['issued_on']} by "
            f"{n['issued_by']}: nothing was issued")


def _number(conn, prefix: str, year: int) -> str:
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('fog_notices numbers'))")
    n = conn.execute("SELECT count(*) FROM fog_notices WHERE number LIKE %s", (f"{prefix}-{year}-%",)).fetchone()[0]
    return f"{prefix}-{year}-{n + 1:03d}"


def _ordinance(rules, kind: str) -> list[dict]:
    cited = [s for s in rules.sections if kind in s.grounds] or list(rules.sections)
    return [{"section": s.section, "title": s.title, "words": s.words} for s in cited]


def _manifests(est: dict, p: dict, window_days: int) -> list[dict]:
    """The pump-outs of the finding's device (every device for a blockage) in the window up to it."""
    start = p["on"] - timedelta(days=window_days)
    return [{"pumped_on": str(q["pumped_on"]), "device": d["label"], "hauler": q["hauler_name"],
             "registered": q["hauler_id"] is not None, "manifest": q["manifest"], "gallons": float(q["gallons"]),
             "fog_depth_in": float(q["fog_depth_in"]), "solids_depth_in": float(q["solids_depth_in"]),
             "receiving_facility": q["receiving_facility"]}
            for d in est["devices"] if p["device_id"] in (None, d["id"])
            for q in d["pumpouts"] if start <= q["pumped_on"] <= p["on"]]


def document(conn, est: dict, p: dict, all_found: list[dict], *, number: str, issued_on: date, letterhead,
             pack: str, rules, guide: GreaseGuide) -> dict:
    """Everything the notice of proposal ``p`` says, as JSON-ready data."""
    from enforcement.forfeitures import forfeitures
    from enforcement.notice_evidence import as_the_municipality
    from limits.packs import load_pack

    step = p["step"]
    said = as_the_municipality(load_pack(pack))
    start = p["on"] - timedelta(days=guide.window_days)
    upto = next(i for i, q in enumerate(all_found) if q["key"] == p["key"])
    history = [{"on": str(q["on"]), "device": q["device"], "what": f"{KIND_WORDS[q['kind']]}: {q['words']}"}
               for q in all_found[:upto + 1] if q["on"] >= start]
    blockage = None
    if p["blockage_id"] is not None:
        row = conn.execute("SELECT found_on, location, found, found_by FROM fog_blockages WHERE id = %s",
                           (p["blockage_id"],)).fetchone()
        blockage = dict(zip(("found_on", "location", "found", "found_by"), (str(row[0]), *row[1:])))
    return {"number": number, "title": step.title, "step": step.id, "words": said(step.words),
            "letterhead": {"village": letterhead.village, "lines": list(letterhead.lines),
                           "signed_by": letterhead.signed_by, "signer_title": letterhead.signer_title},
            "establishment": {k: est[k] for k in ("licence", "name", "address", "contact")},
            "finding": {"kind": p["kind"], "kind_words": KIND_WORDS[p["kind"]], "on": str(p["on"]),
                        "device": p["device"], "words": p["words"], "basis": rules.basis(p["kind"])},
            "occurrence": _ORDINAL.get(p["nth"], f"finding number {p['nth']}") + " of its kind",
            "ordinance": _ordinance(rules, p["kind"]), "manifests": _manifests(est, p, guide.window_days),
            "blockage": blockage, "history": history,
            "amount_dollars": step.amount_dollars, "amount_words": step.amount_words,
            "penalties": [{"citation": f.section, "words": f.words} for f in forfeitures(pack, 1)]
            if step.forfeiture else [],
            "demand": said(step.demand), "respond_within_days": step.respond_within_days,
            "respond_by": str(issued_on + timedelta(days=step.respond_within_days)), "guide": guide.name}


def issue(conn, *, establishment, key: str, step: str, as_of: date, today: date, actor, letterhead, pack: str,
          rules, guide: GreaseGuide, issued_on: date | None = None) -> dict:
    """Issue the notice the guide proposes for the finding ``key`` of ``establishment`` (its
    licence or id) as of ``as_of``, dated ``issued_on`` (default ``today``, the village's day:
    a notice mailed earlier is recorded on its own day); store its document, PDF and hash.
    Returns the notice's row with its ``pdf``.

    Raises
    ------
    InputError
        ``as_of`` or ``issued_on`` after today, ``issued_on`` before ``as_of``; no such finding
        as of ``as_of``; a step other than the guide's; a notice issued for the finding
        already (naming it).
    """
    from fog import store

    if as_of > today:
        raise InputError(f"as of: {as_of} is after today ({today}): a notice answers what was found by today")
    issued_on = issued_on or today
    if issued_on > today:
        raise InputError(f"issued on: {issued_on} is after today ({today})")
    if issued_on < as_of:
        raise InputError(f"issued on: {issued_on} is before the day the findings are judged on ({as_of})")
    est = store.establishment(conn, rules, as_of, establishment)
    conn.execute("SELECT id FROM fog_establishments WHERE id = %s FOR UPDATE", (est["id"],))
    found = proposals(conn, guide, est)
    p = next((q for q in found if q["key"] == key), None)
    if p is None:
        raise InputError(f"{est['name']} has no such finding as of {as_of}")
    if p["issued"]:
        raise InputError(_refusal(p["issued"][0]))
    if p["step"] is None:
        raise InputError(f"the grease guide proposes no step for a finding {KIND_WORDS[p['kind']]}")
    if step != p["step"].id:
        raise InputError(f"the grease guide's step for this finding is the {p['step'].title.lower()}")
    return store_notice(conn, est, p, found, today=issued_on, actor=actor, letterhead=letterhead, pack=pack,
                        rules=rules, guide=guide)


def store_notice(conn, est: dict, p: dict, found: list[dict], *, today: date, actor, letterhead, pack: str, rules,
                 guide: GreaseGuide, escalated_from: dict | None = None) -> dict:
    """Number, render and store the notice of proposal ``p`` (its ``step``) of ``est``, dated
    ``today``; ``escalated_from`` (``number``, ``title``, ``issued_on``, ``reason``): the
    notice it follows, whose words then open it (:mod:`enforcement.grease_responses`)."""
    from enforcement.documents.grease_notice_page import render
    from fog import store
    from fog.store import actor_name

    number = _number(conn, p["step"].prefix, today.year)
    doc = document(conn, est, p, found, number=number, issued_on=today, letterhead=letterhead, pack=pack,
                   rules=rules, guide=guide)
    if escalated_from:
        from enforcement.notice_evidence import as_the_municipality
        from limits.packs import load_pack

        said = as_the_municipality(load_pack(pack))
        doc["escalated_from"] = {k: str(escalated_from[k]) for k in ("number", "title", "issued_on", "reason")}
        doc["words"] = said(f"The {{municipality}} issued the {escalated_from['title'].lower()} "
                            f"{escalated_from['number']} on {escalated_from['issued_on']} for the finding below. "
                            f"{escalated_from['reason']} The {{municipality}} therefore takes the next step of its "
                            f"enforcement response guide: this {p['step'].title.lower()}.")
    _, pdf = render(doc, today)
    sha = hashlib.sha256(pdf).hexdigest()
    row = conn.execute(
        "INSERT INTO fog_notices (number, establishment_id, finding_key, finding_kind, finding_on, step, title, "
        "amount_dollars, issued_on, document, pdf, pdf_sha256, issued_by, response_due) VALUES (%s, %s, %s, %s, %s, "
        f"%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING {', '.join(_NOTICE)}",
        (number, est["id"], p["key"], p["kind"], p["on"], p["step"].id, p["step"].title, p["step"].amount_dollars,
         today, json.dumps(doc), pdf, sha, actor_name(actor), date.fromisoformat(doc["respond_by"]))).fetchone()
    store._audit(conn, actor, "fog.notice.issue", number, {"establishment": est["licence"], "finding": p["key"],
                                                           "step": p["step"].id, "sha256": sha,
                                                           **({"escalated_from": escalated_from["number"]}
                                                              if escalated_from else {})})
    return {**dict(zip(_NOTICE, row)), "name": est["name"], "licence": est["licence"], "pdf": pdf}


def find(conn, rules, guide: GreaseGuide, establishment, as_of: date, kind: str, on: date,
         device: str | None = None) -> tuple[dict, dict]:
    """The establishment and its finding of ``kind`` on ``on`` (of ``device``, where two
    devices have one that day) with its proposal (:func:`proposals`), as the command line
    names a finding.

    Raises
    ------
    InputError
        None such, or more than one (naming the devices).
    """
    from fog import store

    est = store.establishment(conn, rules, as_of, establishment)
    hits = [p for p in proposals(conn, guide, est) if p["kind"] == kind and p["on"] == on
            and (not device or p["device"].lower() == device.strip().lower())]
    if not hits:
        raise InputError(f"{est['name']} has no finding {kind!r} on {on} as of {as_of} (sewerwatch fog show "
                         f"{est['licence']} lists them)")
    if len(hits) > 1:
        raise InputError(f"{est['name']} has {len(hits)} such findings on {on} ({', '.join(p['device'] for p in hits)}):"
                         " name the device")
    return est, hits[0]


def notices(conn, establishment_id: int | None = None, year: int | None = None) -> list[dict]:
    """The notices issued (of one establishment, of one year), newest first, with the
    establishment's name and licence."""
    rows = conn.execute(
        f"SELECT {', '.join('n.' + c for c in _NOTICE)}, e.name, e.licence FROM fog_notices n "
        "JOIN fog_establishments e ON e.id = n.establishment_id "
        "WHERE (%s::int IS NULL OR n.establishment_id = %s) AND (%s::int IS NULL OR "
        "extract(year FROM n.issued_on) = %s) ORDER BY n.issued_on DESC, n.id DESC",
        (establishment_id, establishment_id, year, year)).fetchall()
    return [dict(zip(_NOTICE + ("name", "licence"), r)) for r in rows]


def pdf(conn, ref) -> tuple[dict, bytes]:
    """A notice (by its number, or its id) and its PDF as issued.

    Raises
    ------
    InputError
        No notice of that number.
    """
    where, arg = ("n.id = %s", ref) if isinstance(ref, int) else ("n.number = %s", str(ref).strip())
    row = conn.execute(f"SELECT {', '.join('n.' + c for c in _NOTICE)}, e.name, e.licence, n.pdf FROM fog_notices n "
                       f"JOIN fog_establishments e ON e.id = n.establishment_id WHERE {where}", (arg,)).fetchone()
    if row is None:
        raise InputError(f"no grease notice {ref!r} (sewerwatch fog notices list shows them)")
    return dict(zip(_NOTICE + ("name", "licence"), row[:-1])), bytes(row[-1])
