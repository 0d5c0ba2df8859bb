"""The words people read for the program's own names: an analyte's name as the catalogue
writes it (``cu`` is "Copper"), a rule's name made from its id ("cu-daily-max" is "Copper,
daily maximum", "ph-min" is "pH, minimum"), and the states, kinds and sample types the
records keep as short ids ("response-received" is "response received", "composite-24h-flow"
is "24-hour flow-proportional composite"). Pages, documents and e-mails show these; the ids
stay what the CLI, the files and the database use.

Written here rather than taken from a library: the words are the catalogue's and the
ordinances' own, and a rule's id is the pack's; no maintained library knows either.
"""

from __future__ import annotations

import re
from functools import lru_cache

from limits.analytes import catalogue

#: A parameter of the sensors and of the ordinances' rules, by the id the packs use.
PARAMETERS = {"ph": "pH", "temp": "temperature", "temperature": "temperature", "flow": "flow",
              "slug": "slug discharge", "slugload": "slug load", "cyanide": "cyanide", "fog": "fat, oil and grease",
              "bod5": "BOD", "tss": "TSS", "tkn": "TKN", "tp": "total phosphorus", "volume": "volume",
              "conductivity": "conductivity", "level": "level"}
#: The parts of a rule's id after its analyte or parameter.
STATISTICS = {"daily": "daily", "monthly": "monthly", "weekly": "weekly", "max": "maximum", "min": "minimum",
              "avg": "average", "average": "average", "loading": "loading", "instant": "instantaneous",
              "grab": "grab", "composite": "composite", "permit": "permit", "normal": "normal strength",
              "lb": "pounds", "30d": "30-day", "7d": "7-day", "prohibited": "prohibited",
              "notification": "notification"}
#: Ids of states, kinds and types the records keep, and their words.
TERMS = {
    "lab-violation": "lab result over a limit", "violation": "violation", "failure-to-monitor": "failure to monitor",
    "failure-to-report": "failure to report", "late-report": "late report", "response-received": "response received",
    "renewal-due": "term ends soon", "expires-soon": "ends soon", "in-force": "in force",
    "not-yet-effective": "not yet in effect", "daily-maximum": "daily maximum", "monthly-average": "monthly average",
    "daily-maximum-lb": "daily maximum load", "composite-24h-flow": "24-hour flow-proportional composite",
    "composite-24h-time": "24-hour time-proportional composite", "composite": "composite", "grab": "grab",
    "continuous": "continuous", "lab-import": "lab import", "due-soon": "due soon", "not-needed": "not needed",
    "mqtt": "MQTT", "modbus": "Modbus", "sparkplug": "Sparkplug", "accidental-discharge": "accidental discharge",
    "slug-report": "slug discharge report", "self-monitoring": "self-monitoring", "notice-response": "notice response",
    "industrial-user": "industrial user",
}


@lru_cache(maxsize=4096)
def analyte_name(code: str | None) -> str:
    """The catalogue's name of the analyte ``code`` ("Copper"), or the code itself if it
    is not one (a pack's own, already in words)."""
    if not code:
        return ""
    a = catalogue().get(code)
    if a is not None:
        return a.name
    return PARAMETERS.get(code, code)


@lru_cache(maxsize=4096)
def rule_name(rule_id: str | None) -> str:
    """A rule's name from its id: its analyte or parameter by name, then what the rest of
    the id says ("cu-daily-max": "Copper, daily maximum"; "temperature-max":
    "Temperature, maximum"); an id of other words with its hyphens as spaces."""
    if not rule_id:
        return ""
    parts = rule_id.split("-")
    cat = catalogue()
    for k in range(len(parts), 0, -1):
        head = "-".join(parts[:k])
        if head in cat or head in PARAMETERS:
            name = cat[head].name if head in cat else PARAMETERS[head]
            rest = [STATISTICS.get(p, p) for p in parts[k:]]
            text = f"{name}, {' '.join(rest)}" if rest else name
            return text[:1].upper() + text[1:] if not text.startswith("pH") else text
    text = " ".join(STATISTICS.get(p, p) for p in parts)
    return text[:1].upper() + text[1:]


def term(value: str | None) -> str:
    """A state, kind or type kept as an id, in words ("response-received": "response
    received"); an unknown id with its hyphens and underscores as spaces."""
    if value is None:
        return ""
    v = str(value)
    if v in TERMS:
        return TERMS[v]
    return re.sub(r"[-_]", " ", v) if re.fullmatch(r"[a-z0-9]+(?:[-_][a-z0-9]+)+", v) else v


@lru_cache(maxsize=64)
def pack_name(pack_id: str | None) -> str:
    """The ordinance a rule pack states, by its title ("Village of Palmyra Code, Ch. 13"
    as the pack names it), or the id when no pack of that name is found."""
    if not pack_id:
        return ""
    from foundation.errors import SewerwatchError
    from limits.packs import load_pack
    try:
        return load_pack(pack_id).name or pack_id
    except (SewerwatchError, OSError):
        return pack_id
