"""Enforcement's rules with hand-computed expectations, no database: late reports (day 45 in
time, day 46 late), milestones (day 90, day 91), forfeiture ranges x days of violation, SNC
periods, the enforcement response guide and its validation, the [enforcement] settings."""

from __future__ import annotations

from datetime import date

import pytest

from foundation import config
from foundation.errors import ConfigError, InputError
from enforcement import milestones, reports
from enforcement.forfeitures import forfeitures, is_inhibiting
from enforcement.guide import load_guide, parse_guide
from enforcement.periods import sampling_period, sampling_periods, snc_period, snc_periods_of_year
from enforcement_support import SEED_PALMYRA
from enforcement.settings import DEFAULT_GUIDE, settings
from foundation import tomlfile


# --- reports: 40 CFR 403.8(f)(2)(viii)(F), "within 45 days after the due date" -----------------

def test_a_report_received_on_day_45_is_in_time_and_on_day_46_late():
    due = date(2026, 4, 30)
    day45, day46 = date(2026, 6, 14), date(2026, 6, 15)    # April 30 + 45 days = June 14
    assert (day45 - due).days == 45 and (day46 - due).days == 46
    assert not reports.is_late(due, day45, today=date(2026, 12, 31))
    assert reports.is_late(due, day46, today=date(2026, 12, 31))
    assert reports.days_late(due, day46, today=date(2026, 12, 31)) == 46


def test_a_report_still_missing_becomes_a_finding_on_day_46():
    due = date(2026, 4, 30)
    assert reports.late_finding_day(due) == date(2026, 6, 15)
    assert not reports.is_late(due, None, today=date(2026, 6, 14))
    assert reports.is_late(due, None, today=date(2026, 6, 15))
    # received later than "today": as far as today tells, it is still missing
    assert not reports.is_late(due, date(2026, 6, 20), today=date(2026, 6, 14))
    assert reports.is_late(due, date(2026, 6, 20), today=date(2026, 6, 16))


def test_a_milestone_met_on_day_90_is_in_time_and_missing_on_day_91_a_finding():
    due = date(2026, 3, 1)
    assert milestones.late_day(due) == date(2026, 5, 31)      # March 1 + 91 days
    assert not milestones.is_late(due, date(2026, 5, 30), today=date(2026, 12, 1))   # day 90
    assert milestones.is_late(due, date(2026, 5, 31), today=date(2026, 12, 1))       # day 91
    assert not milestones.is_late(due, None, today=date(2026, 5, 30))
    assert milestones.is_late(due, None, today=date(2026, 5, 31))


# --- forfeitures: palmyra-wi §13.60(1) $100-$2,500 a day; §13.60(2) up to $200 a day -------------

@pytest.mark.parametrize("days,low,high", [(1, 100, 2500), (2, 200, 5000), (3, 300, 7500), (30, 3000, 75000)])
def test_forfeiture_range_times_days_of_violation(days, low, high):
    [f] = forfeitures("palmyra-wi", days)
    assert (f.section, f.per_day_min, f.per_day_max) == ("§13.60(1)", 100.0, 2500.0)
    assert (f.total_min, f.total_max, f.days) == (low, high, days)
    assert f.sentence() == f"$100 to $2,500 for each day: {days} day{'s' if days > 1 else ''} of violation, " \
                           f"${low:,} to ${high:,}"
    assert "not less than $100 nor more than $2,500 per violation" in f.words


def test_an_inhibiting_discharge_adds_the_13_60_2_penalty():
    general, inhibiting = forfeitures("palmyra-wi", 3, inhibiting=True)
    assert general.section == "§13.60(1)"
    assert (inhibiting.section, inhibiting.per_day_min, inhibiting.per_day_max) == ("§13.60(2)", None, 200.0)
    assert (inhibiting.total_min, inhibiting.total_max) == (None, 600.0)
    assert inhibiting.sentence() == "up to $200 for each day: 3 days of violation, up to $600"
    assert inhibiting.words.startswith("If any user shall discharge a waste or wastewater including septage that is "
                                       "inhibiting to the sewer system")
    # a slug and the findings of pass through or interference inhibit; a pH excursion does not
    assert is_inhibiting("violation", "slug") and is_inhibiting("interference", None)
    assert not is_inhibiting("violation", "ph-min")


def test_the_words_of_the_forfeiture_provisions_are_the_seeds():
    if not SEED_PALMYRA.is_file():
        pytest.skip(f"the ordinances are not beside this checkout ({SEED_PALMYRA}; set SEWERWATCH_SEEDS)")
    seed = SEED_PALMYRA.read_text()
    for f in forfeitures("palmyra-wi", 1, inhibiting=True):
        assert f.words in seed


def test_a_pack_without_forfeiture_rules_states_no_range():
    assert forfeitures("webster-ny", 4) == []


# --- periods --------------------------------------------------------------------------------

def test_snc_periods_halves_and_rolling_quarters():
    h1, h2 = snc_periods_of_year(2026, "halves")
    assert (h1.start, h1.end, h2.start, h2.end) == (date(2026, 1, 1), date(2026, 7, 1), date(2026, 7, 1), date(2027, 1, 1))
    q = snc_periods_of_year(2026, "rolling-quarters")
    assert [(p.start, p.end) for p in q] == [(date(2025, 10, 1), date(2026, 4, 1)), (date(2026, 1, 1), date(2026, 7, 1)),
                                             (date(2026, 4, 1), date(2026, 10, 1)), (date(2026, 7, 1), date(2027, 1, 1))]
    assert snc_period("2026h2") == h2
    with pytest.raises(InputError, match="expected a half year such as 2026H1"):
        snc_period("2026-H1")


def test_sampling_periods():
    assert sampling_period("quarter", date(2026, 5, 17)).name == "2026Q2"
    assert sampling_period("month", date(2026, 2, 28)).end == date(2026, 3, 1)
    w = sampling_period("week", date(2026, 6, 10))     # a Wednesday
    assert (w.start, w.end) == (date(2026, 6, 8), date(2026, 6, 15))
    assert [p.name for p in sampling_periods("quarter", date(2026, 2, 1), date(2026, 10, 1))] == \
        ["2026Q1", "2026Q2", "2026Q3"]


# --- the enforcement response guide -----------------------------------------------------------

def test_the_guide_picks_the_action_by_kind_and_recurrence():
    g = load_guide(DEFAULT_GUIDE)
    first, second, third, fifth = (g.response("violation", n) for n in (1, 2, 3, 5))
    assert (first.action.id, first.respond_within_days) == ("notice-of-violation", 30)
    assert (second.action.id, second.respond_within_days) == ("notice-of-violation", 15)
    assert (third.action.id, third.respond_within_days) == ("administrative-order", 15)
    assert fifth == third                                    # the largest recurrence not above it
    assert g.response("endangerment", 1).action.id == "show-cause"
    ladder, a = [], "notice-of-violation"
    while (e := g.escalation(a)) is not None:
        ladder.append((e.to.id, e.respond_within_days))
        a = e.to.id
    assert ladder == [("administrative-order", 15), ("show-cause", 10), ("legal-action", 10)]


def _guide_data() -> dict:
    return tomlfile.read(DEFAULT_GUIDE)


@pytest.mark.parametrize("change,message", [
    (lambda d: d["responses"][0].update(action="fine"), "responses[0].action: unknown action 'fine'"),
    (lambda d: d["responses"][0].update(finding="smell"), "responses[0].finding: unknown kind of finding 'smell'"),
    (lambda d: d["responses"][0].update(respond_within_days=0), "responses[0].respond_within_days: expected a whole"),
    (lambda d: d.update(responses=[r for r in d["responses"] if r["finding"] != "snc"]),
     "responses: no row with recurrence = 1 for: snc"),
    (lambda d: d["escalations"].append({"from": "legal-action", "to": "notice-of-violation", "respond_within_days": 5}),
     "escalations: the escalations from notice-of-violation go round in a circle"),
    (lambda d: d["actions"]["show-cause"].pop("prefix"), "actions.show-cause.prefix: missing"),
])
def test_a_bad_guide_is_one_line_naming_the_key(change, message):
    d = _guide_data()
    change(d)
    with pytest.raises(InputError) as e:
        parse_guide(d, "my-guide.toml")
    assert str(e.value).startswith("my-guide.toml: ") and message in str(e.value)


def test_enforcement_settings_from_the_config(tmp_path):
    cfg = config.from_dict({"enforcement": {"accidental_report_hours": 4, "snc_periods": "rolling-quarters"}}, "v.toml")
    st = settings(cfg)
    assert (st.accidental_report_hours, st.snc_periods, st.guide) == (4.0, "rolling-quarters", DEFAULT_GUIDE)
    assert settings(config.from_dict({}, "v.toml")).accidental_report_hours == 24.0
    for table, message in [({"snc_periods": "monthly"}, "enforcement.snc_periods: expected one of halves"),
                           ({"accidental_report_hours": 0}, "enforcement.accidental_report_hours: expected hours"),
                           ({"guide": "nowhere.toml"}, "enforcement.guide: no such file 'nowhere.toml'"),
                           ({"respond_days": 3}, "enforcement.respond_days: unknown key")]:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            settings(config.from_dict({"enforcement": table}, "v.toml"))


# --- sampling schedules ---------------------------------------------------------------------

def test_a_missing_quarterly_sample_is_found_on_the_first_day_after_the_quarter():
    from enforcement.schedules import Requirement, judge

    req = Requirement("webster-wi:§240-8", "dairy", ("bod5", "tss"), 1, "quarter", "§240-8")
    # Q1: BOD and TSS sampled on Feb 10; Q2: only BOD, on May 5
    samples = [(date(2026, 2, 10), "S1", "bod5"), (date(2026, 2, 10), "S1", "tss"), (date(2026, 5, 5), "S2", "bod5")]
    on_june_30 = judge(req, samples, date(2026, 1, 1), date(2027, 1, 1), today=date(2026, 6, 30))
    assert [(s.period.name, s.state) for s in on_june_30] == \
        [("2026Q1", "taken"), ("2026Q2", "due"), ("2026Q3", "due"), ("2026Q4", "due")]
    on_july_1 = judge(req, samples, date(2026, 1, 1), date(2027, 1, 1), today=date(2026, 7, 1))
    q2 = on_july_1[1]
    assert (q2.state, q2.counts, q2.short) == ("missing", {"bod5": 1, "tss": 0}, {"tss": 1})
    assert q2.words() == "MISSING: bod5 1/1, tss 0/1"


def test_a_monthly_requirement_counts_samples_per_parameter_and_skips_a_partial_first_period():
    from enforcement.schedules import Requirement, judge

    req = Requirement("PAL-IU-2026-02:5(a)", "plating", ("cu",), 2, "month", "Permit PAL-IU-2026-02, condition 5(a)",
                      start=date(2026, 2, 15))
    samples = [(date(2026, 3, 2), "A", "cu"), (date(2026, 3, 2), "A", "cu"), (date(2026, 3, 20), "B", "cu"),
               (date(2026, 4, 9), "C", "cu")]
    got = judge(req, samples, date(2026, 1, 1), date(2026, 5, 1), today=date(2026, 5, 1))
    # February: in effect from the 15th only: not required; March: A and B; April: only C
    assert [(s.period.name, s.state, s.counts["cu"]) for s in got] == \
        [("2026-02", "not-required", 0), ("2026-03", "taken", 2), ("2026-04", "missing", 1)]
