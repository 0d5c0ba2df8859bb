"""Rule packs: loading, validation, and each pack's rules at the boundaries its words set."""

from __future__ import annotations

import numpy as np
import pytest

from limits import core
from limits.evaluator import SensorMeta, evaluate
from limits.packs import COMPARISONS, PACKS_DIR, available_packs, load_pack, parse_pack
from foundation.errors import InputError

T0 = 1_772_344_800 * core.US  # 2026-03-01T06:00:00Z, midnight in Wisconsin


def test_all_five_packs_load_with_their_time_zones():
    assert available_packs() == ["palmyra-wi", "superior-wi", "webster-ny", "webster-wi", "westfield-wi"]
    zones = {p: load_pack(p).timezone for p in available_packs()}
    assert zones == {"palmyra-wi": "America/Chicago", "superior-wi": "America/Chicago",
                     "webster-ny": "America/New_York", "webster-wi": "America/Chicago",
                     "westfield-wi": "America/Chicago"}


@pytest.mark.parametrize("name", ["palmyra-wi", "superior-wi", "webster-ny", "webster-wi", "westfield-wi"])
def test_every_rule_cites_its_seed_and_quotes_words(name):
    pack = load_pack(name)
    assert pack.rules
    for r in pack.rules:
        # people read the ordinance's title and section; the seed file is
        # the rule's provenance
        assert r.citation.startswith(pack.code) and r.section in r.citation and ".txt" not in r.citation
        assert r.provenance == f"{pack.seed} {r.section}"
        assert len(r.words) > 20
        if r.comparison and r.kind != "definition":
            assert r.op == COMPARISONS[r.comparison]
            # the comparison words appear in the quoted words (exact comparison, not paraphrase)
            assert r.comparison.lower() in r.words.lower(), (r.id, r.comparison)


def test_numbers_from_the_ordinances():
    pal = load_pack("palmyra-wi")
    assert (pal.rule("ph-min").limit_canonical, pal.rule("ph-min").op) == (6.0, "<")
    assert (pal.rule("ph-max").limit_canonical, pal.rule("ph-max").op) == (9.0, ">")
    assert pal.rule("temperature-max").limit_canonical == 150.0
    slug = pal.rule("slug")
    assert (slug.multiple, slug.window_h, slug.longer_than_min, slug.op) == (5.0, 24.0, 15.0, ">")
    assert pal.normal_strength() == {"bod5": 250.0, "tss": 250.0, "tkn": 40.0, "tp": 7.0}
    th = pal.permit_thresholds()
    assert {k: r.limit_canonical for k, r in th.items() if k != "flow"} == \
        {"bod5": 250.0, "tss": 250.0, "tkn": 40.0, "tp": 7.0}
    assert th["flow"].op == ">=" and th["flow"].limit_canonical == pytest.approx(5000 / 1440)
    assert pal.lab_limits("cn")[0].limit_canonical == 0.5
    assert pal.lab_limits("fog")[0].basis == "average"
    assert pal.definition("forfeiture-max") == 2500.0
    web = load_pack("webster-wi")
    assert web.rule("temperature-max").unit == "degC" and web.rule("temperature-max").limit_canonical == 104.0
    assert web.normal_strength() == {"bod5": 200.0, "tss": 250.0}
    assert web.lab_limits("fog")[0].unit == "ppm" and web.lab_limits("fog")[0].limit_canonical == 100.0
    assert load_pack("westfield-wi").normal_strength() == {"bod5": 200.0, "tss": 250.0}
    assert load_pack("superior-wi").rule("temperature-max").limit_canonical == 150.0
    assert load_pack("webster-ny").continuous_rules() == ()
    assert load_pack("webster-ny").definition("sewer-rent-unit") == 60000.0


def _one_reading_each(pack, parameter, values, unit_scale=(1.0, 0.0)):
    """Each value a separate sensor's single reading: which ones violate which rule."""
    values = np.asarray(values, dtype=float) * unit_scale[0] + unit_scale[1]
    n = len(values)
    meta = {i: SensorMeta(parameter, 60.0) for i in range(n)}
    eps = evaluate(pack, np.arange(n), np.full(n, T0), values, meta=meta)
    rules = pack.continuous_rules()
    return {(int(e["sensor"]), rules[e["rule"]].id) for e in eps}


@pytest.mark.parametrize("name,low,high", [("webster-wi", 5.0, 9.0), ("palmyra-wi", 6.0, 9.0)])
def test_ph_boundaries(name, low, high):
    # webster-wi §240-5 "a pH less than 5.0 or higher than nine"; palmyra-wi §13.48(2)(g)
    # "lower than 6.0 or higher than 9.0": the limit itself is lawful.
    pack = load_pack(name)
    got = _one_reading_each(pack, "ph", [low, np.nextafter(low, 0), high, np.nextafter(high, 99), 7.0])
    assert got == {(1, "ph-min"), (3, "ph-max")}


def test_temperature_boundaries():
    # webster-wi §240-5 "exceeds 40° C. (104° F.)": 104.0 degF and 40.0 degC are lawful
    web = load_pack("webster-wi")
    assert _one_reading_each(web, "temperature", [104.0, 104.01, 103.9]) == {(1, "temperature-max")}
    c = (9 / 5, 32.0)
    assert _one_reading_each(web, "temperature", [40.0, 40.01], c) == {(1, "temperature-max")}
    # palmyra-wi §13.48(2)(a) and superior-wi B(8): "higher than 150° F"
    for name in ("palmyra-wi", "superior-wi"):
        assert _one_reading_each(load_pack(name), "temperature", [150.0, 150.001, 149.0]) == \
            {(1, "temperature-max")}
    # westfield-wi and webster-ny set no temperature limit
    assert _one_reading_each(load_pack("westfield-wi"), "temperature", [500.0]) == set()


def _write(tmp_path, name, text):
    p = tmp_path / f"{name}.toml"
    p.write_text(text, encoding="utf-8")
    return p


HEAD = 'id = "{id}"\nname = "Village X"\ncode = "Village X Code"\ntimezone = "America/Chicago"\nseed = "x.txt"\n'
RULE = ('[[rules]]\nid = "ph-min"\nkind = "range"\nparameter = "ph"\ncomparison = "less than"\n'
        'limit = 5.5\nunit = "pH"\nsection = "§1"\nwords = "pH less than 5.5 is prohibited."\n')


def test_a_sixth_village_is_a_new_file(tmp_path):
    p = _write(tmp_path, "newtown-wi", HEAD.format(id="newtown-wi") + RULE)
    pack = load_pack(str(p))
    assert pack.rule("ph-min").limit_canonical == 5.5
    assert _one_reading_each(pack, "ph", [5.5, 5.4]) == {(1, "ph-min")}


@pytest.mark.parametrize("edit,message", [
    (lambda s: s.replace('unit = "pH"', 'unit = "pH units"'), "unknown unit 'pH units' for ph"),
    (lambda s: s.replace('parameter = "ph"', 'parameter = "acidity"'), "unknown parameter 'acidity'"),
    (lambda s: s.replace('comparison = "less than"', 'comparison = "under"'), "unknown comparison 'under'"),
    (lambda s: s.replace('limit = 5.5', 'limit = 5.5\nlimt = 3'), "limt: unknown key"),
    (lambda s: s.replace('kind = "range"', 'kind = "rang"'), "unknown kind 'rang'"),
    (lambda s: s.replace('limit = 5.5', 'limit = "5.5"'), "expected a number"),
    (lambda s: s.replace('words = "pH less than 5.5 is prohibited."\n', ''), "words: missing"),
    (lambda s: s.replace('timezone = "America/Chicago"', 'timezone = "America/Madison"'), "unknown time zone"),
    (lambda s: s + RULE, "duplicate rule id 'ph-min'"),
    (lambda s: "colour = 1\n" + s, "colour: unknown key"),
])
def test_bad_packs_fail_with_a_clear_error(tmp_path, edit, message):
    p = _write(tmp_path, "bad-wi", edit(HEAD.format(id="bad-wi") + RULE))
    with pytest.raises(InputError) as exc:
        load_pack(str(p))
    assert message in str(exc.value)
    assert str(p) in str(exc.value) and "\n" not in str(exc.value)


def test_pack_id_must_match_file_and_unknown_pack_names_known_ones(tmp_path):
    p = _write(tmp_path, "other-wi", HEAD.format(id="bad-wi") + RULE)
    with pytest.raises(InputError, match="does not match the file name"):
        load_pack(str(p))
    with pytest.raises(InputError, match="unknown rule pack 'nowhere-wi'.*palmyra-wi"):
        load_pack("nowhere-wi")


def test_shipped_packs_hold_no_unknown_keys():
    import tomllib
    for f in PACKS_DIR.glob("*.toml"):
        parse_pack(tomllib.loads(f.read_text(encoding="utf-8")), str(f), expected_id=f.stem)


@pytest.mark.parametrize("name,rule_id,lawful,unlawful", [
    # webster-wi §240-5 "more than 100 parts per million by weight of fat, oil, or grease"
    ("webster-wi", "fog-max", [100.0, 99.9], [100.01]),
    ("superior-wi", "fog-max", [100.0], [100.5]),
    # palmyra-wi §13.48(2)(k) "exceeding on analysis an average of 100 mg/l"
    ("palmyra-wi", "fog-max", [100.0], [100.001]),
    # palmyra-wi §13.48(2)(l) "in excess of one-half (0.5) mg/l"
    ("palmyra-wi", "cyanide-max", [0.5, 0.0], [0.51]),
    # palmyra-wi §13.43 NORMAL SEWAGE "not more than 250 parts per million": 250 is normal
    ("palmyra-wi", "bod5-normal", [250.0], [250.1]),
    ("palmyra-wi", "tp-normal", [7.0], [7.01]),
    # palmyra-wi §13.54(1)(c) "greater than 40mg/L"; (e) "5,000 gallons per day or greater"
    ("palmyra-wi", "tkn-permit", [40.0], [40.5]),
    ("palmyra-wi", "volume-permit", [4999.0 / 1440], [5000.0 / 1440, 6000.0 / 1440]),
    # palmyra-wi §13.43 INDUSTRIAL USER (b) "25,000 gallons or more per average day"
    ("palmyra-wi", "industrial-user", [24999.0 / 1440], [25000.0 / 1440]),
    # westfield-wi INDUSTRIAL USE B: "25,000 gallons per day or less" is excluded
    ("westfield-wi", "industrial-user", [25000.0 / 1440], [25001.0 / 1440]),
    # webster-wi §240-7 "no greater than 200 and 250 milligrams per liter"
    ("webster-wi", "bod5-normal", [200.0], [200.5]),
    ("westfield-wi", "tss-normal", [250.0], [251.0]),
])
def test_lab_and_threshold_rules_at_their_boundaries(name, rule_id, lawful, unlawful):
    rule = load_pack(name).rule(rule_id)
    assert not rule.exceeded_by(lawful).any()
    assert rule.exceeded_by(unlawful).all()
