"""The grease program's rules: every ordinance section quoted is the seed's own words, the
villages without a grease section get the program's figures alone, a late pump-out halves
the interval down to its floor, and a bad rules file is refused naming the file and key."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from enforcement_support import SEEDS
from fog import findings, rules
from foundation.errors import ConfigError

PACKS = ("palmyra-wi", "webster-wi", "webster-ny", "superior-wi", "westfield-wi")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("pack", PACKS)
def test_the_sections_are_the_ordinances_words(pack):
    import tomllib

    r = rules.for_pack(pack)
    assert (r.interval_days, r.depth_share, r.late_factor, r.interval_min_days) == (90, 0.25, 0.5, 30)
    seed = tomllib.loads((Path(__file__).parent.parent / "limits" / "packs" / f"{pack}.toml").read_text())["seed"]
    if not (SEEDS / seed).exists():
        pytest.skip(f"the ordinances are not beside this checkout ({SEEDS}; set SEWERWATCH_SEEDS)")
    text = _flat((SEEDS / seed).read_text(encoding="utf-8"))
    for s in r.sections:
        assert _flat(s.words) in text, (pack, s.section)
    assert bool(r.sections) == (pack in ("palmyra-wi", "webster-wi"))


def test_a_late_pumpout_halves_the_interval_down_to_the_floor():
    r = rules.for_pack("palmyra-wi")
    assert [r.shortened(n) for n in (90, 45, 31, 30, 20)] == [45, 30, 30, 30, 20]
    dev = {"interval_days": 90, "capacity_gal": 1000, "liquid_depth_in": 48, "installed_on": date(2020, 1, 1),
           "registered_on": date(2026, 1, 1)}
    full = {"gallons": 900, "fog_depth_in": 9, "solids_depth_in": 3, "hauler_id": 1, "hauler_name": "H"}
    pumps = [{**full, "id": k, "pumped_on": day} for k, day in
             enumerate((date(2026, 2, 1), date(2026, 3, 1), date(2026, 3, 25), date(2026, 4, 20)))]
    s = findings.schedule(dev, pumps, r, date(2026, 5, 1))
    late = [f.words for f in s.findings if f.kind == "too late"]
    assert [w.split("; ")[1] for w in late] == ["the interval is now 45 days (was 90)",
                                                "the interval is now 30 days (was 45)",
                                                "the interval stays 30 days, the shortest",
                                                "the interval stays 30 days, the shortest"]
    assert s.interval_days == 30 and s.due_on == date(2026, 5, 20) and s.overdue_days == 0
    assert "the program's rule" in r.basis("too late") and "§13.51" in r.basis("too late")
    assert "§" not in rules.for_pack("webster-ny").basis("too late")


def test_a_bad_rules_file_is_refused_naming_it(tmp_path):
    (tmp_path / "x.toml").write_text("[program]\ninterval_days = 0\ndepth_share = 0.25\nlate_factor = 0.5\n"
                                     "interval_min_days = 30\n")
    with pytest.raises(ConfigError, match=r"the grease rules x.toml: \[program\] interval_days: expected a number "
                                          r"from 1 to 3650, got 0"):
        rules.for_pack("x", tmp_path)
