"""The grease program's rules for a village: its ordinance's grease interceptor sections,
quoted (``fog/packs/<pack>.toml``), and the program's own figures where the ordinance is
silent (the pumping interval, the 25 % rule, how a late pump-out shortens the interval).

None of the five shipped ordinances gives a pumping interval or a share of the liquid depth:
the figures in ``[program]`` are the program's, and pages say so ("the program's rule").
A village without a grease section (Webster NY, Superior WI, Westfield WI) gets
``_program.toml``: the figures alone.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from foundation.errors import ConfigError

HERE = Path(__file__).with_name("packs")

#: The categories of establishment the licence list gives.
CATEGORIES = ("restaurant", "school kitchen", "hospital kitchen", "bakery", "repair garage", "gasoline station",
              "car wash", "other")
#: The kinds of finding, as pages and the command line name them.
KINDS = ("too late", "overdue", "over capacity", "unregistered hauler", "blockage", "missing device")


@dataclass(frozen=True)
class Section:
    """A section of the ordinance, quoted: ``section`` (as the ordinance numbers it),
    ``title``, ``words`` (verbatim) and ``grounds`` (the kinds of finding whose duty it states)."""

    section: str
    title: str
    words: str
    grounds: tuple[str, ...]


@dataclass(frozen=True)
class Rules:
    """The program's rules for one village.

    Attributes
    ----------
    pack : str
        The rule pack's id (the config's ``[utility] pack``).
    interval_days : int
        The pumping interval of a device whose record gives none [days].
    depth_share : float
        The 25 % rule: FOG plus solids depth at or above this share of the liquid depth at
        pumping is a pump-out too late [fraction].
    late_factor : float
        The interval after a pump-out too late is the interval times this [factor].
    interval_min_days : int
        No interval is shortened below this [days].
    sections : tuple of Section
        The ordinance's grease sections (none where it has none).
    reminder_days : int
        A device due within this many days gets a reminder (:mod:`fog.reminders`) [days].
    requires_device : tuple of str
        The categories of establishment the ordinance requires an interceptor of (none where
        it has no grease section): one found without is a finding (:mod:`fog.missing_devices`).
    """

    pack: str
    interval_days: int
    depth_share: float
    late_factor: float
    interval_min_days: int
    sections: tuple[Section, ...]
    reminder_days: int = 14
    requires_device: tuple[str, ...] = ()

    def shortened(self, interval_days: int) -> int:
        """The interval after a pump-out too late [days]: ``interval × late_factor``, rounded
        down, not below ``interval_min_days`` (nor above the interval it was)."""
        return min(interval_days, max(self.interval_min_days, math.floor(interval_days * self.late_factor)))

    def basis(self, kind: str) -> str:
        """Where a finding of ``kind`` comes from, in words: the ordinance's section(s) whose
        duty it serves, or the program's rule."""
        cited = [s.section for s in self.sections if kind in s.grounds]
        program = {"too late": f"the program's rule: FOG and solids at {self.depth_share:.0%} of the liquid depth",
                   "overdue": f"the program's pumping interval ({self.interval_days} days unless the device's own)",
                   "over capacity": "the program's rule: more gallons than the device holds",
                   "unregistered hauler": "the program's rule: haulers registered with the village",
                   "blockage": "the sewer crew's report of a grease blockage traced to the establishment",
                   "missing device": "a grease removal device required and not found"}[kind]
        return program + (f"; the duty of {', '.join(cited)}" if cited else "")

    def _factor(self) -> str:
        words = {0.5: "half what it was", 0.25: "a quarter of what it was", 1.0: "what it was"}
        return words.get(self.late_factor, f"{self.late_factor:g} times what it was")

    def describe(self) -> str:
        """The rules in one paragraph (``sewerwatch fog rules``, the office's list page)."""
        return (f"The program's rules: a device is pumped every {self.interval_days} days unless its record says "
                f"otherwise; FOG plus solids at {self.depth_share:.0%} of the liquid depth or more at pumping is a "
                f"pump-out too late, and the interval becomes {self._factor()}, not below "
                f"{self.interval_min_days} days. These figures are the program's; the ordinance gives none.")


def _number(doc: dict, key: str, where: str, low: float, high: float) -> float:
    v = doc.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not low <= v <= high:
        raise ConfigError(where, f"[program] {key}", f"expected a number from {low:g} to {high:g}, got {v!r}")
    return v


@lru_cache(maxsize=16)
def for_pack(pack: str, folder: Path = HERE) -> Rules:
    """The grease rules of rule pack ``pack`` (its own file, else the program's alone).

    Raises
    ------
    ConfigError
        A rules file that is not TOML or has a figure out of range (naming the file and key).
    """
    path = folder / f"{pack}.toml"
    if not path.exists():
        path = folder / "_program.toml"
    where = f"the grease rules {path.name}"
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(where, "", f"not TOML: {exc}") from None
    prog = doc.get("program", {})
    sections = []
    for i, s in enumerate(doc.get("sections", [])):
        grounds = tuple(s.get("grounds", ()))
        bad = [g for g in grounds if g not in KINDS]
        if bad or not s.get("words") or not s.get("section"):
            raise ConfigError(where, f"sections {i + 1}", f"needs section and words; grounds among {', '.join(KINDS)}")
        sections.append(Section(s["section"], s.get("title", ""), s["words"], grounds))
    return Rules(pack=pack, interval_days=int(_number(prog, "interval_days", where, 1, 3650)),
                 depth_share=float(_number(prog, "depth_share", where, 0.01, 1.0)),
                 late_factor=float(_number(prog, "late_factor", where, 0.05, 1.0)),
                 interval_min_days=int(_number(prog, "interval_min_days", where, 1, 3650)),
                 sections=tuple(sections),
                 reminder_days=int(_number(prog, "reminder_days", where, 0, 365)) if "reminder_days" in prog else 14,
                 requires_device=_categories(prog, where))


def _categories(prog: dict, where: str) -> tuple[str, ...]:
    named = prog.get("requires_device", [])
    if not isinstance(named, list) or any(c not in CATEGORIES for c in named):
        raise ConfigError(where, "[program] requires_device", f"expected a list of {', '.join(CATEGORIES)}, got {named!r}")
    return tuple(named)
