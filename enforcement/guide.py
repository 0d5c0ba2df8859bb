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

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from foundation import tomlfile
from foundation.errors import InputError

#: The kinds of finding a notice can be drafted from (see :mod:`enforcement.findings`).
FINDING_KINDS = ("violation", "lab-violation", "failure-to-monitor", "late-report", "unreported-noncompliance",
                 "compliance-schedule", "pass-through", "interference", "endangerment", "designated", "snc",
                 "calibration-failed", "calibration-overdue", "inspection-deficiency")
GUIDE_KEYS = ("name", "recurrence_window_days", "actions", "responses", "escalations")
ACTION_KEYS = ("title", "prefix", "words", "editable")
#: The free-text parts of a drafted notice a guide may let people edit (an action's ``editable``).
EDITABLE_PARTS = ("corrective_action", "report_demanded", "remarks")
RESPONSE_KEYS = ("finding", "recurrence", "action", "respond_within_days", "corrective_action", "report", "note")
ESCALATION_KEYS = ("from", "to", "respond_within_days")


@dataclass(frozen=True)
class Action:
    """An enforcement action: ``id`` (``notice-of-violation``), ``title``, the number
    ``prefix`` of its documents (``NOV``), the ``words`` that open them, and the free-text
    parts of a draft people may edit before it is issued (``editable``, of
    :data:`EDITABLE_PARTS`; none where the guide names none)."""

    id: str
    title: str
    prefix: str
    words: str
    editable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Response:
    """What to do about a finding of ``finding`` kind recurring the ``recurrence``-th time (or more)."""

    finding: str
    recurrence: int
    action: Action
    respond_within_days: int
    corrective_action: str
    report: str
    where: str


@dataclass(frozen=True)
class Escalation:
    """A notice of action ``source`` unanswered by its deadline -> action ``to``."""

    source: Action
    to: Action
    respond_within_days: int
    where: str


@dataclass(frozen=True)
class Guide:
    name: str
    path: str
    recurrence_window_days: int
    actions: dict
    responses: tuple[Response, ...]
    escalations: tuple[Escalation, ...]

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


def _fail(path, where: str, problem: str):
    raise InputError(f"{path}: {where}: {problem}")


def _keys(path, where: str, t, allowed, required):
    if not isinstance(t, dict):
        _fail(path, where, "expected a table")
    for k in t:
        if k not in allowed:
            _fail(path, f"{where}.{k}", f"unknown key (expected one of: {', '.join(allowed)})")
    for k in required:
        if k not in t:
            _fail(path, f"{where}.{k}", "missing (required)")


def _array(path, data: dict, key: str) -> list:
    if not isinstance(data[key], list):
        _fail(path, key, f"expected an array of tables ([[{key}]])")
    return data[key]


def _text(path, where: str, v) -> str:
    if not isinstance(v, str) or not v.strip():
        _fail(path, where, f"expected text, got {v!r}")
    return v


def _days(path, where: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 365:
        _fail(path, where, f"expected a whole number of days from 1 to 365, got {v!r}")
    return v


def parse_guide(data: dict, path: str = "<guide>") -> Guide:
    """Validate a guide (see the shipped file for its keys)."""
    _keys(path, "guide", data, GUIDE_KEYS, ("name", "actions", "responses", "escalations"))
    actions = {}
    if not isinstance(data["actions"], dict) or not data["actions"]:
        _fail(path, "actions", "expected a table of actions ([actions.<id>])")
    for aid, t in data["actions"].items():
        _keys(path, f"actions.{aid}", t, ACTION_KEYS, ACTION_KEYS[:3])
        ed = t.get("editable", [])
        if not isinstance(ed, list) or any(x not in EDITABLE_PARTS for x in ed):
            _fail(path, f"actions.{aid}.editable", f"expected a list of {', '.join(EDITABLE_PARTS)}, got {ed!r}")
        actions[aid] = Action(aid, _text(path, f"actions.{aid}.title", t["title"]),
                              _text(path, f"actions.{aid}.prefix", t["prefix"]),
                              _text(path, f"actions.{aid}.words", t["words"]), tuple(dict.fromkeys(ed)))

    def action(where, v) -> Action:
        if v not in actions:
            _fail(path, where, f"unknown action {v!r} (actions: {', '.join(actions)})")
        return actions[v]

    window = data.get("recurrence_window_days", 365)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        _fail(path, "recurrence_window_days", f"expected a whole number of days, got {window!r}")
    responses = []
    seen = {}
    for i, t in enumerate(_array(path, data, "responses")):
        where = f"responses[{i}]"
        _keys(path, where, t, RESPONSE_KEYS, RESPONSE_KEYS[:-1])
        if t["finding"] not in FINDING_KINDS:
            _fail(path, f"{where}.finding", f"unknown kind of finding {t['finding']!r} (known: {', '.join(FINDING_KINDS)})")
        rec = t["recurrence"]
        if isinstance(rec, bool) or not isinstance(rec, int) or rec < 1:
            _fail(path, f"{where}.recurrence", f"expected a whole number >= 1, got {rec!r}")
        if (t["finding"], rec) in seen:
            _fail(path, where, f"a second row for {t['finding']} recurrence {rec} (first at responses[{seen[t['finding'], rec]}])")
        seen[t["finding"], rec] = i
        responses.append(Response(t["finding"], rec, action(f"{where}.action", t["action"]),
                                  _days(path, f"{where}.respond_within_days", t["respond_within_days"]),
                                  _text(path, f"{where}.corrective_action", t["corrective_action"]),
                                  _text(path, f"{where}.report", t["report"]), where))
    missing = [k for k in FINDING_KINDS if (k, 1) not in seen]
    if missing:
        _fail(path, "responses", f"no row with recurrence = 1 for: {', '.join(missing)}")
    escalations = []
    sources = {}
    for i, t in enumerate(_array(path, data, "escalations")):
        where = f"escalations[{i}]"
        _keys(path, where, t, ESCALATION_KEYS, ESCALATION_KEYS)
        src, to = action(f"{where}.from", t["from"]), action(f"{where}.to", t["to"])
        if src.id in sources:
            _fail(path, f"{where}.from", f"a second escalation from {src.id} (first at escalations[{sources[src.id]}])")
        sources[src.id] = i
        escalations.append(Escalation(src, to, _days(path, f"{where}.respond_within_days", t["respond_within_days"]),
                                      where))
    # the ladder must end: following `to` from any action never comes back
    nxt = {e.source.id: e.to.id for e in escalations}
    for a in nxt:
        seen_a, cur = {a}, a
        while cur in nxt:
            cur = nxt[cur]
            if cur in seen_a:
                _fail(path, "escalations", f"the escalations from {a} go round in a circle")
            seen_a.add(cur)
    return Guide(_text(path, "name", data["name"]), str(path), window, actions, tuple(responses), tuple(escalations))


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
