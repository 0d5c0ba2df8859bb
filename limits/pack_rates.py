"""The rates a pack's formula entry reads (``rates = { name = ... }`` of ``[[charges]]``,
``[late_charge]``, ``[residential_equivalents]``, :mod:`limits.packs`): each by the utility's
rates file's key, with an optional ``default``, or fixed by the ordinance itself with its section
and effective date, which the utility's rates override under the same key (the bill names which
applied, :func:`lab.charges.rates_applied`; a rate neither gives bills nothing, and says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Annotated

from pydantic import BeforeValidator, WithJsonSchema

from foundation.schema import fail, show

RATE_KEY = re.compile(r"^([A-Za-z0-9_-]+|\{site\})(\.([A-Za-z0-9_-]+|\{site\}))*$")


@dataclass(frozen=True)
class RateKey:
    """Where the rates file gives a number the utility sets: a dotted ``key`` (``{site}``
    stands for the site id) and a ``default`` used when it is absent (None: required); or a
    rate the ordinance itself fixes (``value`` [its unit], with its ``section`` and the
    ``effective`` date), which the utility's rates override under ``key`` where they give
    one (the bill names which applied, :func:`lab.charges.rates_applied`)."""

    key: str
    default: float | None = None
    value: float | None = None
    section: str | None = None
    effective: date | None = None
    citation: str = ""


def _rate(v):
    if isinstance(v, RateKey):
        return v
    if isinstance(v, dict) and "value" in v:          # a rate the ordinance fixes
        return _fixed_rate(v)
    if isinstance(v, dict):
        if set(v) != {"key", "default"}:
            raise fail((), f"expected {{ key = ..., default = N }} (or {{ key = ..., value = N, section = ..., "
                       f"effective = YYYY-MM-DD }} for a rate the ordinance fixes), got {show(v)}")
        if isinstance(v["default"], bool) or not isinstance(v["default"], (int, float)):
            raise fail(("default",), f"expected a number, got {show(v['default'])}")
        return RateKey(_rate(v["key"]).key, float(v["default"]))
    if not isinstance(v, str) or not RATE_KEY.match(v):
        raise fail((), f"expected the rates file's key such as \"bill.my-village.rate\" "
                   f"(or {{ key = ..., default = N }}), got {show(v)}")
    return RateKey(v)


def _fixed_rate(v: dict) -> RateKey:
    """``{ key = "...", value = N, section = "§...", effective = YYYY-MM-DD }``: the ordinance's
    rate, overridden by the utility's rates under ``key``."""
    need = {"key", "value", "section", "effective"}
    if set(v) != need:
        missing, extra = sorted(need - set(v)), sorted(set(v) - need)
        raise fail((extra or missing)[0:1], "unknown key (expected: key, value, section, effective)" if extra else
                   "missing (a rate the ordinance fixes gives key, value, section and effective)")
    if isinstance(v["value"], bool) or not isinstance(v["value"], (int, float)) or v["value"] < 0:
        raise fail(("value",), f"expected a number >= 0, got {show(v['value'])}")
    if not isinstance(v["section"], str) or not v["section"].strip():
        raise fail(("section",), f"expected the section that fixes it, got {show(v['section'])}")
    if not isinstance(v["effective"], date) or isinstance(v["effective"], datetime):
        raise fail(("effective",), f"expected a date (effective = 2019-05-01), got {show(v['effective'])}")
    return RateKey(_rate(v["key"]).key, value=float(v["value"]), section=v["section"], effective=v["effective"])


Rates = dict[str, Annotated[RateKey, BeforeValidator(_rate), WithJsonSchema(
    {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"key": {"type": "string"},
                                                                       "default": {"type": "number"}}},
               {"type": "object", "description": "a rate the ordinance fixes, overridden by the utility's rates "
                "under key", "properties": {"key": {"type": "string"}, "value": {"type": "number"},
                                           "section": {"type": "string"},
                                           "effective": {"type": "string", "format": "date"}}}]})]]
