"""The analyte catalogue: every pollutant a pack, a permit or a lab file may name, as data.

``analytes.csv`` beside this file holds, one row each: the ``id`` the lab CSV and the packs use
(``as``, ``bod5``, ``benzene``, ...), the ``name``, the CAS registry number where the substance
has one (empty for a sum or a method-defined quantity: "total phenols", "total toxic
organics", BOD), the ``group`` (``priority``: the 126 toxic pollutants of 40 CFR Part 423,
Appendix A, with their ``epa_no`` there; ``conventional``: 40 CFR 401.16; ``nonconventional``:
what local limits commonly name besides), the ``parameter`` its unit belongs to
(:mod:`foundation.units`: ``concentration``, ``ph``, ``bacteria``, ``asbestos``), the
canonical ``unit`` results are stored in, the ``units`` a result or a limit may be written in,
the 40 CFR Part 136 ``method`` family a lab would use, and other spellings labs write
(``aliases``). A village adds its own analytes in its pack (``[[analytes]]``, same keys).

The CSV is read with the standard library's ``csv`` module: 154 rows, read once.
"""

from __future__ import annotations

import csv
import difflib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from foundation import units

CATALOGUE = Path(__file__).resolve().parent / "analytes.csv"


@dataclass(frozen=True)
class Analyte:
    """One analyte of the catalogue (or of a pack's ``[[analytes]]``).

    Attributes
    ----------
    id, name : str
        The id the lab CSV uses, and what it is.
    cas : str
        The CAS registry number, or empty where it has none.
    parameter : str
        The :mod:`foundation.units` parameter of its unit (``concentration``, ...).
    unit : str
        The canonical unit results are stored and judged in.
    units : tuple of str
        The units results and limits may be written in.
    group, method, epa_no : str
        ``priority``, ``conventional``, ``nonconventional`` or ``local`` (a pack's own); the
        40 CFR 136 method family; the number in 40 CFR 423 Appendix A.
    aliases : tuple of str
        Other spellings labs use (compared lower-case).
    """

    id: str
    name: str
    parameter: str
    unit: str
    units: tuple[str, ...]
    cas: str = ""
    group: str = "local"
    method: str = ""
    epa_no: str = ""
    aliases: tuple[str, ...] = ()


@lru_cache(maxsize=1)
def catalogue() -> dict[str, Analyte]:
    """id -> :class:`Analyte` of the shipped catalogue, in its order."""
    with CATALOGUE.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for r in rows:
        out[r["id"]] = Analyte(id=r["id"], name=r["name"], parameter=r["parameter"], unit=r["unit"],
                               units=tuple(r["units"].split(";")), cas=r["cas"], group=r["group"],
                               method=r["method"], epa_no=r["epa_no"],
                               aliases=tuple(a for a in r["aliases"].split(";") if a))
    return out


def known(extra=()) -> dict[str, Analyte]:
    """The catalogue with ``extra`` analytes (a pack's own) added."""
    base = catalogue()
    return {**base, **{a.id: a for a in extra}} if extra else base


def closest(name: str, extra=(), n: int = 3) -> list[str]:
    """The ids closest to ``name`` (by id, name or alias): for "unknown analyte" messages."""
    table = known(extra)
    key = str(name).strip().lower()
    words = {}
    for a in table.values():
        for w in (a.id, a.name.lower(), *a.aliases):
            words.setdefault(w, a.id)
    hits = difflib.get_close_matches(key, list(words), n=n * 3, cutoff=0.6)
    hits += [w for w in words if key and len(key) > 2 and key in w and w not in hits]
    out = []
    for w in hits:
        if words[w] not in out:
            out.append(words[w])
    return out[:n]


def unknown(name: str, extra=()) -> str:
    """``unknown analyte 'x' (closest known: a, b; the catalogue has 154, see limits/analytes.csv)``."""
    near = closest(name, extra)
    hint = f"closest known: {', '.join(near)}" if near else "no known id is close"
    return f"unknown analyte {name!r} ({hint}; {len(known(extra))} are known, see limits/analytes.csv)"


def lookup(text: str, extra=()) -> str | None:
    """The analyte id a lab file means by ``text`` (its id or an alias, any case), or None."""
    key = str(text).strip().lower()
    table = known(extra)
    if key in table:
        return key
    for a in table.values():
        if key in a.aliases:
            return a.id
    return None


def unit_factor(analyte: Analyte, unit: str) -> float:
    """The factor from ``unit`` into the analyte's stored unit (:mod:`foundation.units`)."""
    scale, _offset = units.CONVERSIONS[analyte.parameter][unit]
    return scale
