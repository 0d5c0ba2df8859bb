"""The grease program's enforcement response guide, held as data
(``enforcement/guides/grease-erp.toml``; its header explains the keys): the steps (warning
letter, notice of violation, forfeiture, cost recovery), the figures they charge, and which
step a finding takes by the establishment's history.

:func:`load` validates the guide (one-line errors naming the file and the key);
:meth:`GreaseGuide.step_for` picks the step of a finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from foundation import tomlfile
from foundation.errors import InputError

#: The shipped guide.
DEFAULT = Path(__file__).resolve().parent / "guides" / "grease-erp.toml"
#: The kinds of finding of the grease program a guide may name (:data:`fog.rules.KINDS` and a
#: missing device, which an inspection finds).
FINDING_KINDS = ("overdue", "too late", "missing device", "unregistered hauler", "over capacity", "blockage")


@dataclass(frozen=True)
class Step:
    """``[steps.<id>]``: ``id``, ``title``, number ``prefix``, opening ``words``, ``demand``,
    ``respond_within_days`` [days], ``amount_dollars`` [$] (None: it charges nothing),
    ``amount_words`` (what the amount is for) and ``forfeiture`` (its notice quotes the
    ordinance's forfeiture range)."""

    id: str
    title: str
    prefix: str
    words: str
    demand: str
    respond_within_days: int
    amount_dollars: float | None = None
    amount_words: str = ""
    forfeiture: bool = False


@dataclass(frozen=True)
class GreaseGuide:
    """The guide: its ``name``, the ``window_days`` a history counts back [days], the steps by
    id and the responses, each ``(kinds, steps)``."""

    name: str
    window_days: int
    steps: dict
    responses: tuple
    path: str

    def step_for(self, kind: str, nth: int) -> Step | None:
        """The step of an establishment's ``nth`` finding (1 the first) among the kinds that
        count with ``kind``; None where the guide names no response for ``kind``."""
        for kinds, steps in self.responses:
            if kind in kinds:
                return self.steps[steps[min(nth, len(steps)) - 1]]
        return None

    def counts_with(self, kind: str) -> tuple[str, ...]:
        """The kinds of finding that count together with ``kind`` (none: no response)."""
        return next((kinds for kinds, _ in self.responses if kind in kinds), ())


def _text(where: str, key: str, v) -> str:
    if not isinstance(v, str) or not v.strip():
        raise InputError(f"{where}: {key}: expected text, got {v!r}")
    return v.strip()


def parse(doc: dict, path: str) -> GreaseGuide:
    """A guide from its TOML table; one-line errors naming ``path`` and the key."""
    name = _text(path, "name", doc.get("name"))
    window = doc.get("window_days", 365)
    if isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= 3650:
        raise InputError(f"{path}: window_days: expected a whole number of days from 1 to 3650, got {window!r}")
    steps = {}
    for sid, s in (doc.get("steps") or {}).items():
        w = f"steps.{sid}"
        if not isinstance(s, dict):
            raise InputError(f"{path}: {w}: expected a table")
        days = s.get("respond_within_days")
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 365:
            raise InputError(f"{path}: {w}.respond_within_days: expected a whole number of days from 1 to 365, "
                             f"got {days!r}")
        amount = s.get("amount_dollars")
        if amount is not None and (isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0):
            raise InputError(f"{path}: {w}.amount_dollars: expected a number of dollars above 0, got {amount!r}")
        steps[sid] = Step(sid, _text(path, f"{w}.title", s.get("title")), _text(path, f"{w}.prefix", s.get("prefix")),
                          _text(path, f"{w}.words", s.get("words")), _text(path, f"{w}.demand", s.get("demand")),
                          days, float(amount) if amount is not None else None,
                          _text(path, f"{w}.amount_words", s.get("amount_words")) if amount is not None else "",
                          s.get("forfeiture") is True)
    if not steps:
        raise InputError(f"{path}: steps: expected at least one step ([steps.<id>])")
    responses, seen = [], {}
    for i, r in enumerate(doc.get("responses") or []):
        w = f"responses[{i}]"
        kinds, named = r.get("findings"), r.get("steps")
        if not isinstance(kinds, list) or not kinds or any(k not in FINDING_KINDS for k in kinds):
            raise InputError(f"{path}: {w}.findings: expected a list of {', '.join(FINDING_KINDS)}, got {kinds!r}")
        if not isinstance(named, list) or not named or any(s not in steps for s in named):
            raise InputError(f"{path}: {w}.steps: expected a list of the steps {', '.join(steps)}, got {named!r}")
        for k in kinds:
            if k in seen:
                raise InputError(f"{path}: {w}.findings: {k} is in responses[{seen[k]}] already")
            seen[k] = i
        responses.append((tuple(kinds), tuple(named)))
    return GreaseGuide(name, window, steps, tuple(responses), str(path))


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> GreaseGuide:
    return parse(tomlfile.read(path, "grease enforcement guide"), Path(path).name)


def load(path: str | Path = DEFAULT) -> GreaseGuide:
    """The guide in ``path`` (default: the shipped one), validated (cached while unchanged)."""
    p = Path(path)
    try:
        mtime = p.stat().st_mtime
    except FileNotFoundError:
        raise InputError(f"{p}: no such grease enforcement guide") from None
    return _load(str(p), mtime)
