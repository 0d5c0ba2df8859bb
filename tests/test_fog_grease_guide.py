"""The grease program's enforcement response guide (enforcement/guides/grease-erp.toml): the
shipped one read as the program reads it, the step of an establishment's n-th finding, and a
guide with a mistake refused in one line naming the file and the key."""

from __future__ import annotations

import tomllib

import pytest

from enforcement.grease_guide import DEFAULT, load, parse
from foundation.errors import InputError


def test_the_shipped_guide_gives_the_steps_by_the_history():
    g = load()
    steps = [g.step_for("overdue", n).title for n in (1, 2, 3, 4)]
    assert steps == ["Warning letter", "Notice of violation", "Notice of forfeiture", "Notice of forfeiture"]
    # a pump-out too late counts with an overdue one; a blockage apart; over capacity takes no step
    assert g.counts_with("too late") == g.counts_with("overdue") and "blockage" not in g.counts_with("overdue")
    assert g.step_for("blockage", 1).title == "Notice of cost recovery" and g.step_for("blockage", 1).amount_dollars
    assert g.step_for("over capacity", 1) is None and g.counts_with("over capacity") == ()
    assert g.step_for("overdue", 3).forfeiture and not g.step_for("blockage", 1).forfeiture


@pytest.mark.parametrize("change, message", [
    (lambda d: d["steps"]["forfeiture"].update(amount_dollars=-5),
     "g.toml: steps.forfeiture.amount_dollars: expected a number of dollars above 0, got -5"),
    (lambda d: d["steps"]["warning-letter"].update(respond_within_days=0),
     "g.toml: steps.warning-letter.respond_within_days: expected a whole number of days from 1 to 365, got 0"),
    (lambda d: d["responses"][0].update(steps=["warning-letter", "a-letter"]),
     "g.toml: responses[0].steps: expected a list of the steps warning-letter, notice-of-violation, forfeiture, "
     "cost-recovery, got ['warning-letter', 'a-letter']"),
    (lambda d: d["responses"][1]["findings"].append("overdue"),
     "g.toml: responses[1].findings: overdue is in responses[0] already"),
    (lambda d: d["responses"][1].update(findings=["grease"]), "g.toml: responses[1].findings: expected a list of"),
    (lambda d: d.update(window_days="a year"),
     "g.toml: window_days: expected a whole number of days from 1 to 3650, got 'a year'"),
])
def test_a_guide_with_a_mistake_is_refused_in_one_line(change, message):
    doc = tomllib.loads(DEFAULT.read_text(encoding="utf-8"))
    change(doc)
    with pytest.raises(InputError) as exc:
        parse(doc, "g.toml")
    assert str(exc.value).startswith(message) and "\n" not in str(exc.value)
