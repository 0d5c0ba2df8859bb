"""The enforcement response guide: what the village does about a finding, held as data.

A guide (``enforcement/guides/epa-erp.toml``, or the file ``[enforcement] guide`` names)
maps each kind of finding and its recurrence to an action (notice of violation,
administrative order, order to show cause, referral for legal action), the days the user has
to respond, the corrective action and the report demanded; and each action to the next one
when a notice goes unanswered. This is the table of EPA's Enforcement Response Plan
guidance (1989), which every pretreatment program keeps (40 CFR 403.8(f)(5)); the file's
header explains its keys.

:func:`load_guide` validates a guide (one-line errors naming the file and the key);
:meth:`Guide.response` picks the row for a finding; :meth:`Guide.escalation` the next step.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, model_validator

from foundation import tomlfile
from foundation.errors import InputError
from foundation.schema import Internal, OneOf, Table, Tables, check, duplicates, fail, is_int, is_text, table, validate

#: The kinds of finding a notice can be drafted from (see :mod:`enforcement.findings`).
FINDING_KINDS = ("violation", "lab-violation", "failure-to-monitor", "late-report", "unreported-noncompliance",
                 "compliance-schedule", "pass-through", "interference", "endangerment", "designated", "snc",
                 "calibration-failed", "calibration-overdue", "inspection-deficiency")
#: The free-text parts of a drafted notice a guide may let people edit (an action's ``editable``).
EDITABLE_PARTS = ("corrective_action", "report_demanded", "remarks")


#: the guide's own words (shown to the people who write it)
Words = Annotated[str, check(is_text, "text", got=repr)]
Days = Annotated[int, check(lambda v: is_int(v) and 1 <= v <= 365, "a whole number of days from 1 to 365", got=repr)]
#: an action's id (``[actions.<id>]``); the loaded guide holds the :class:`Action` itself
ActionRef = Annotated[Any, check(is_text, "text", got=repr)]


@table(kw_only=True)
class Action(Table):
    """``[actions.<id>]``: an enforcement action: ``id`` (``notice-of-violation``), ``title``,
    the number ``prefix`` of its documents (``NOV``), the ``words`` that open them, and the
    free-text parts of a draft people may edit before it is issued (``editable``, of
    :data:`EDITABLE_PARTS`; none where the guide names none)."""

    title: Words
    """What its documents are called (``Notice of violation``)."""
    prefix: Words
    """The prefix of their numbers (``NOV``)."""
    words: Words
    """The words that open them (``{municipality}`` stands for the kind the pack names: City, Village, ...)."""
    editable: Annotated[tuple[str, ...], check(lambda v: isinstance(v, list) and all(x in EDITABLE_PARTS for x in v),
                                               f"a list of {', '.join(EDITABLE_PARTS)}",
                                               lambda v: tuple(dict.fromkeys(v)), repr)] = ()
    """The parts of a draft people may edit before it is issued."""
    id: Internal = ""
    """Its id, the key of its table (set by the guide)."""


@table(kw_only=True)
class Response(Table):
    """``[[responses]]``: what to do about a finding of ``finding`` kind recurring the
    ``recurrence``-th time (or more); ``where`` is the row (``responses[3]``)."""

    finding: OneOf(*FINDING_KINDS, what="kind of finding")
    """The kind of finding (:data:`FINDING_KINDS`)."""
    recurrence: Annotated[int, check(lambda v: is_int(v) and v >= 1, "a whole number >= 1", got=repr)]
    """The recurrence the row applies from (a finding takes the row with the largest one not above its own)."""
    action: ActionRef
    """The action taken."""
    respond_within_days: Days
    """The days the user has to respond."""
    corrective_action: Words
    """What the user must do."""
    report: Words
    """The report demanded of the user."""
    note: Any = None
    """A free note."""
    where: Internal = ""


@table(kw_only=True)
class Escalation(Table):
    """``[[escalations]]``: a notice of action ``source`` (the key ``from``) unanswered by its
    deadline, or answered inadequately -> action ``to``; ``reason`` says why in the guide's words."""

    source: ActionRef = Field(alias="from")
    """The action whose notice went unanswered."""
    to: ActionRef
    """The action that follows."""
    respond_within_days: Days
    """The days the user has to respond to it."""
    reason: Words | None = None
    """Why the guide takes this step, in its own words (shown before a person confirms it)."""
    where: Internal = ""


@table(kw_only=True)
class Guide(Table):
    """An enforcement response guide (see the shipped file for its keys)."""

    name: Words
    """The guide's name, as notices cite it."""
    recurrence_window_days: Annotated[int, check(lambda v: is_int(v) and v >= 1, "a whole number of days",
                                                 got=repr)] = 365
    """A finding's recurrence is 1 + the notices of its kind the user was issued this many days before it [days]."""
    actions: Annotated[dict[str, Action], check(lambda v: isinstance(v, dict) and bool(v),
                                                "a table of actions ([actions.<id>])")]
    """The enforcement actions by id."""
    responses: Tables(Response)
    """What to do about each kind of finding and recurrence."""
    escalations: Tables(Escalation)
    """The ladder of an unanswered notice."""
    path: Internal = ""
    """The file it was read from."""

    @model_validator(mode="after")
    def _references(self, info: ValidationInfo):
        object.__setattr__(self, "path", (info.context or {}).get("path", ""))
        for aid, a in self.actions.items():
            object.__setattr__(a, "id", aid)
        for key, refs in (("responses", (("action", "action"),)), ("escalations", (("source", "from"), ("to", "to")))):
            for i, row in enumerate(getattr(self, key)):
                object.__setattr__(row, "where", f"{key}[{i}]")
                for name, k in refs:
                    if (aid := getattr(row, name)) not in self.actions:
                        raise fail((key, i, k), f"unknown action {aid!r} (actions: {', '.join(self.actions)})")
                    object.__setattr__(row, name, self.actions[aid])
        for i, (kind, rec), first in duplicates(self.responses, lambda r: (r.finding, r.recurrence)):
            raise fail(("responses", i), f"a second row for {kind} recurrence {rec} (first at responses[{first}])")
        missing = [k for k in FINDING_KINDS if not any(r.finding == k and r.recurrence == 1 for r in self.responses)]
        if missing:
            raise fail(("responses",), f"no row with recurrence = 1 for: {', '.join(missing)}")
        for i, src, first in duplicates(self.escalations, lambda e: e.source.id):
            raise fail(("escalations", i, "from"), f"a second escalation from {src} (first at escalations[{first}])")
        # the ladder must end: following `to` from any action never comes back
        nxt = {e.source.id: e.to.id for e in self.escalations}
        for a in nxt:
            seen, cur = {a}, a
            while cur in nxt:
                cur = nxt[cur]
                if cur in seen:
                    raise fail(("escalations",), f"the escalations from {a} go round in a circle")
                seen.add(cur)
        return self

    def response(self, finding: str, recurrence: int) -> Response:
        """The row for a finding of kind ``finding`` that recurs the ``recurrence``-th time:
        the one with the largest recurrence not above it."""
        rows = [r for r in self.responses if r.finding == finding and r.recurrence <= recurrence]
        if not rows:
            raise InputError(f"{self.path}: no response for a finding of kind {finding!r}")
        return max(rows, key=lambda r: r.recurrence)

    def escalation(self, action: str) -> Escalation | None:
        """The next step after an unanswered notice of ``action`` (None: the last step)."""
        return next((e for e in self.escalations if e.source.id == action), None)


def parse_guide(data: dict, path: str = "<guide>") -> Guide:
    """Validate a guide (see the shipped file for its keys): one-line errors naming the file and the key."""
    return validate(Guide, data, str(path), lambda p, k, m: InputError(f"{p}: {k}: {m}" if k else f"{p}: {m}"),
                    context={"path": str(path)})


@lru_cache(maxsize=16)
def _load(path: str, mtime: float) -> Guide:
    return parse_guide(tomlfile.read(path, "enforcement response guide"), path)


def load_guide(path: str | Path) -> Guide:
    """The guide in ``path``, validated (cached while the file is unchanged)."""
    p = Path(path)
    try:
        mtime = p.stat().st_mtime
    except FileNotFoundError:
        raise InputError(f"{p}: no such enforcement response guide") from None
    return _load(str(p), mtime)
