"""Read the lab-side numbers from the rule packs of ``limits`` when the packs give them.

Each function returns None when the pack does not (yet) carry the number, and
:mod:`lab.standards` then uses its own cited constants.
"""

from __future__ import annotations


def normal_strength(pack: str):
    return None


def permit_thresholds(pack: str):
    return None


def lab_limits(pack: str):
    return None
