"""A village's charges and duties are data: a sixth village from files alone.

The Village of Example, Wisconsin is a FICTIONAL test fixture (tests/data/example-village/:
its made-up ordinance, its rule pack, a config and a rates file). Nothing in the code names
it: its bills and its alerts come from the pack through the same generic biller and content
builder as the five real villages', with its own sections and words. Also here: where packs
are found (``[utility] pack_dirs``, ``$SEWERWATCH_PACK_PATH``) and the one-line errors of a
pack whose charges cannot be read.
"""

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from alerts.content import violation_message
from foundation import config as sw_config
from foundation.errors import ConfigError, InputError
from lab.charges import charges, late_charge, late_terms, rec_terms
from limits.packs import available_packs, load_pack

ROOT = Path(__file__).resolve().parent.parent
VILLAGE = ROOT / "tests" / "data" / "example-village"
SEED = "example-ordinance.txt"
#: documents cite the ordinance by its title (the pack's ``code``) and section
CODE = "Village of Example Code"
#: the real villages' seed files: none of them may show up in the fixture village's documents
REAL_SEEDS = ("000_68bc5aa0322c9423", "001_344667c7b04e812e", "002_32e890e17155ca0d", "003_44f871d49a02d8f5",
              "004_736876c28764ff16")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env.update(extra)
    return env


def _run(*args, env, cwd=VILLAGE, timeout=180):
    return subprocess.run([sys.executable, "-m", "sewerwatch", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


@pytest.mark.services
def test_a_sixth_village_is_billed_from_its_pack_alone(db, tmp_path):
    env = _env(SEWERWATCH_DB_URL=db.url)
    cfg = ["--config", str(VILLAGE / "village.toml")]
    r = _run(*cfg, "db", "migrate", env=env)
    assert r.returncode == 0, r.stderr
    r = _run(*cfg, "lab", "import", "lab.csv", "--actor", "clerk", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["stored"] == 4, r.stderr
    out = tmp_path / "bills"
    r = _run(*cfg, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", str(out), "--json", env=env)
    assert r.returncode == 0, r.stderr
    bills = {b["site"]: b for b in json.loads(r.stdout)}

    tannery = bills["tannery"]
    assert tannery["pack"] == "example-wi"
    lines = {c["charge"]: c for c in tannery["charges"]}
    assert list(lines) == ["strength surcharge", "volume charge", "service charge per residential equivalent"]
    # §18-31(1): BOD (420 + 380) / 2 = 400 mg/l over the §18-4 base 300: 0.6 MG x 100 x 8.34 = 500.4 lb
    # x $0.25 = $125.10; TSS (250 + 350) / 2 = 300 is not above 300: $0
    sur = lines["strength surcharge"]
    assert sur["citation"] == f"{CODE} §18-31(1)" and sur["dollars"] == 125.10
    assert sur["detail"]["analytes"]["bod5"]["base_mg_l"] == 300.0
    assert sur["detail"]["analytes"]["bod5"]["base_citation"] == f"{CODE} §18-4 NORMAL STRENGTH WASTEWATER"
    assert sur["detail"]["analytes"]["tss"]["dollars"] == 0.0
    # §18-31(2): 600,000 gal / 1,000 x $3.10 (the rates file's bill.example-wi key) = $1,860.00
    vol = lines["volume charge"]
    assert vol["citation"] == f"{CODE} §18-31(2)" and vol["dollars"] == 1860.0
    assert vol["detail"] == {"volume_gal": 600_000.0, "per_1000_gal": 3.10, "minimum_applied": False}
    # §18-32 in 2026: user $48 + debt $60,000 / 1,200 RE / 4 = $12.50 -> $60.50 x 4 RE = $242.00
    re_line = lines["service charge per residential equivalent"]
    assert re_line["citation"] == f"{CODE} §18-32" and re_line["dollars"] == 242.0
    assert re_line["detail"] == {"re": 4.0, "user_per_re": 48.0, "debt_per_re": 12.5}
    assert tannery["total_dollars"] == 2227.10
    # §18-40: 1.5 % a month from 25 days after billing: no fixed late charge to print
    pay = tannery["payment"]
    assert pay["citation"] == f"{CODE} §18-40"
    assert pay["terms"] == "1.5 % interest a month, prorated, from 25 days after billing"
    assert pay["late_charge_if_late"] is None

    # the bakery: 5,000 gal x $3.10 / 1,000 = $15.50, raised to the §18-31(2) minimum of $25.00;
    # no RE in the rates file, so no service charge; no lab results, so no surcharge
    bakery = bills["bakery"]
    assert [(c["charge"], c["dollars"], c["detail"]["minimum_applied"]) for c in bakery["charges"]] == \
        [("volume charge", 25.0, True)]
    assert bakery["total_dollars"] == 25.0

    text = json.dumps(bills)
    assert not [s for s in REAL_SEEDS if s in text], "a real village's ordinance cited on the fixture's bill"
    page = (out / "bill-2026Q1-tannery.html").read_text(encoding="utf-8")
    assert "strength surcharge" in page and "§18-31(1)" in page and "$2,227.10" in page
    assert "<td>bod5</td>" in page   # the per-analyte table of the surcharge, whatever its name


def test_a_sixth_village_alerts_in_its_own_words(monkeypatch):
    env = _env(SEWERWATCH_PACK_PATH=str(VILLAGE))
    r = _run("check", "--pack", "example-wi", "--readings", "readings.csv", "--json", env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    [v] = json.loads(r.stdout)
    assert (v["rule"], v["peak"], v["citation"]) == ("ph-min", 4.8, f"{CODE} §18-12(b)")

    monkeypatch.setenv("SEWERWATCH_PACK_PATH", str(VILLAGE))
    pack = load_pack("example-wi")
    title, body = violation_message(12, "open", v, site_name="Example Tannery", tz=pack.timezone)
    assert "#12" in title and "Example Tannery" in title and "pH 4.8 (below 5.5" in title
    assert "Started:     2026-03-02 08:02:00 CST" in body
    assert f"Ordinance:   {CODE} §18-12(b)" in body
    # its own duty to report (§18-21), in its words, and its own report form
    assert f"Discharger's report required for an accidental discharge of a prohibited substance: {CODE} §18-21" in body
    assert "shall notify the Utility Superintendent by telephone within one hour" in body
    assert "  1. Name of the user and point of discharge: Example Tannery, control manhole of sensor tannery/ph" in body
    assert "  2. Time the discharge began and ended: from 2026-03-02 08:02:00 CST to 2026-03-02 08:05:00 CST" in body
    assert "  3. Wastes discharged: ______________________ (measured: pH 4.8)" in body
    assert "  5. Steps taken to prevent a recurrence: " in body
    assert "contents as" not in body and not [s for s in REAL_SEEDS if s in body]
    # a resolved episode carries no report form
    _, resolved = violation_message(12, "resolve", v, site_name="Example Tannery", tz=pack.timezone)
    assert "§18-21" not in resolved

    # and its late charge: $2,227.10 paid 70 days after billing is 45 days late:
    # 45 / 30 x 1.5 % x 2,227.10 = $50.10975 -> $50.11
    lc = late_charge("example-wi", 2227.10, date(2026, 4, 1), date(2026, 6, 10))
    assert (lc.days_late, lc.dollars, lc.citation) == (45, 50.11, f"{CODE} §18-40")


# --- where packs are found -----------------------------------------------------------------

def test_config_pack_dirs_are_searched_and_checked(tmp_path):
    cfg = sw_config.from_dict({"utility": {"pack": "example-wi", "pack_dirs": [str(VILLAGE)]},
                               "sites": [{"id": "a", "name": "A"}]}, "village.toml")
    assert cfg.pack == "example-wi" and cfg.sites[0].pack == "example-wi" and cfg.pack_dirs == (VILLAGE,)
    with pytest.raises(ConfigError) as e:   # without the folder the pack is unknown
        sw_config.from_dict({"utility": {"pack": "example-wi"}}, "village.toml")
    assert str(e.value).startswith("village.toml: utility.pack: unknown rule pack 'example-wi'")
    with pytest.raises(ConfigError) as e:
        sw_config.from_dict({"utility": {"pack_dirs": ["nowhere"]}}, str(tmp_path / "v.toml"))
    assert "utility.pack_dirs: no such folder 'nowhere'" in str(e.value) and "\n" not in str(e.value)
    # relative folders are the config file's: a config loaded from a file puts them on the
    # search path of the process (and a config without them takes them off again)
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "example-wi.toml").write_bytes((VILLAGE / "example-wi.toml").read_bytes())
    (tmp_path / "v.toml").write_text('[utility]\npack = "example-wi"\npack_dirs = ["packs"]\n')
    (tmp_path / "plain.toml").write_text('[utility]\nname = "x"\n')
    try:
        assert sw_config.load(tmp_path / "v.toml").pack_dirs == ((tmp_path / "packs").resolve(),)
        assert load_pack("example-wi").path == str((tmp_path / "packs" / "example-wi.toml").resolve())
    finally:
        sw_config.load(tmp_path / "plain.toml")
    with pytest.raises(InputError, match="unknown rule pack 'example-wi'"):
        load_pack("example-wi")


def test_the_pack_path_variable_is_searched_and_a_name_found_twice_is_refused(monkeypatch, tmp_path):
    # a folder on $SEWERWATCH_PACK_PATH is searched beside limits/packs/; a pack there with a
    # shipped pack's id is not a silent override: which one is meant is refused, naming both
    text = (ROOT / "limits" / "packs" / "superior-wi.toml").read_text(encoding="utf-8")
    (tmp_path / "superior-wi.toml").write_text(text.replace("rate = { rule = \"late-interest\" }", "rate = 0.02"))
    monkeypatch.setenv("SEWERWATCH_PACK_PATH", os.pathsep.join([str(tmp_path), str(VILLAGE)]))
    assert "example-wi" in available_packs() and "palmyra-wi" in available_packs()
    with pytest.raises(InputError) as e:
        late_charge("superior-wi", 500.0, date(2026, 4, 1), date(2026, 6, 15))
    assert str(e.value) == (f"rule pack 'superior-wi' is found twice: {tmp_path / 'superior-wi.toml'} "
                            f"($SEWERWATCH_PACK_PATH) and {ROOT / 'limits' / 'packs' / 'superior-wi.toml'} (shipped); "
                            "rename or remove one (a pack's id is its file's name)")
    # under an id of its own it is the utility's: 45 days late at 2 % a month on $500: $15.00
    (tmp_path / "superior-wi.toml").unlink()
    (tmp_path / "superior-local.toml").write_text(text.replace("rate = { rule = \"late-interest\" }", "rate = 0.02")
                                                  .replace('id = "superior-wi"', 'id = "superior-local"', 1))
    assert late_charge("superior-local", 500.0, date(2026, 4, 1), date(2026, 6, 15)).dollars == 15.0


# --- a pack whose charges cannot be read is a one-line error naming file and key -------------

def _pack_with(tmp_path, old: str, new: str) -> Path:
    text = (VILLAGE / "example-wi.toml").read_text(encoding="utf-8")
    assert old in text
    p = tmp_path / "example-wi.toml"
    p.write_text(text.replace(old, new, 1), encoding="utf-8")
    return p


@pytest.mark.parametrize("old,new,message", [
    ('formula = "epa-model-2"', 'formula = "epa-model-3"',
     "charges[0].formula: unknown formula kind 'epa-model-3' for [charges] (known: epa-model-2, per-1000-gal, "
     "sewer-rent-units, re-user-and-debt)"),
    ('formula = "monthly-interest"', 'formula = "per-1000-gal"',
     "late_charge.formula: unknown formula kind 'per-1000-gal' for [late_charge] (known: flat, monthly-interest)"),
    ("params = { minimum_dollars = 25.0 }", "params = { minimum = 25.0 }",
     "charges[1].params.minimum: unknown parameter of per-1000-gal (expected: minimum_dollars)"),
    ("params = { minimum_dollars = 25.0 }", "params = { minimum_dollars = [25.0] }",
     "charges[1].params.minimum_dollars: expected a number [usd], got [25.0]"),
    ("debt_charge_computed_since = 2025", "", "charges[2].params.debt_charge_computed_since: missing"),
    ("user_charge_per_re = { 2024 = 45.0, 2026 = 48.0 }", "user_charge_per_re = 45.0",
     "charges[2].params.user_charge_per_re: expected a table year -> dollars"),
    ('rates = { per_1000_gal = "bill.example-wi.volume_charge_per_1000_gal" }',
     'rates = { per_gallon = "bill.example-wi.volume_charge_per_1000_gal" }',
     "charges[1].rates.per_1000_gal: missing (the rates file's key for it)"),
    ("grace_days = 25,", "grace_days = 25.5,", "late_charge.params.grace_days: expected a whole number of days"),
])
def test_a_bad_charge_in_a_pack_names_the_file_and_key(tmp_path, monkeypatch, old, new, message):
    p = _pack_with(tmp_path, old, new)
    monkeypatch.setenv("SEWERWATCH_PACK_PATH", str(tmp_path))
    with pytest.raises(InputError) as e:
        charges("example-wi")
        late_terms("example-wi")
    assert str(e.value).startswith(f"{p.resolve()}: {message}")
    assert "\n" not in str(e.value)


def test_the_surcharge_command_says_which_pack_key_is_wrong(tmp_path):
    p = _pack_with(tmp_path, 'formula = "epa-model-2"', 'formula = "epa-model-3"')
    (tmp_path / "lab.csv").write_bytes((VILLAGE / "lab.csv").read_bytes())
    r = _run("surcharge", "--pack", "example-wi", "--lab", "lab.csv", "--volume-mg", "0.6", "--rates",
             str(VILLAGE / "rates.toml"), env=_env(SEWERWATCH_PACK_PATH=str(tmp_path)), cwd=tmp_path, timeout=60)
    assert r.returncode == 2
    assert r.stderr == (f"sewerwatch: error: {p.resolve()}: charges[0].formula: unknown formula kind 'epa-model-3' "
                        "for [charges] (known: epa-model-2, per-1000-gal, sewer-rent-units, re-user-and-debt)\n")


@pytest.mark.parametrize("old,new,message", [
    ('[[charges]]\nid = "surcharge"\nname', '[[charges]]\nid = "surcharge"\nnmae = "x"\nname',
     "charges[0].nmae: unknown key"),
    ('rates = { per_1000_gal = "bill.example-wi.volume_charge_per_1000_gal" }',
     'rates = { per_1000_gal = "bill example" }', "charges[1].rates.per_1000_gal: expected the rates file's key"),
    ('rules = ["ph-min", "ph-max", "temperature-max"]', 'rules = ["ph-min", "slug"]',
     "report_duty.rules: no rule 'slug' in this pack"),
    ('{ fill = "blank", words', '{ fill = "signature", words', "report_duty.contents[4].fill: unknown fill 'signature'"),
    ('params = { minimum_dollars = 25.0 }', 'params = { minimum_dollars = "25" }',
     "charges[1].params.minimum_dollars: expected a number, a table, a list or { rule = \"<id>\" }, got '25'"),
    ('[[charges]]\nid = "surcharge"\n', '[[charges]]\nid = "extra"\nmodel = "lakeside-wi"\n\n[[charges]]\nid = "surcharge"\n',
     "charges[0].model: unknown rule pack 'lakeside-wi'"),
])
def test_a_bad_pack_section_names_the_file_and_key(tmp_path, old, new, message):
    p = _pack_with(tmp_path, old, new)
    with pytest.raises(InputError) as e:
        load_pack(str(p))
    assert str(e.value).startswith(f"{p}: {message}") and "\n" not in str(e.value)


def test_the_shipped_packs_charges_are_all_readable():
    # where an ordinance sets no formula, the rates file states the one the village adopted
    adopted = {"adopted": {"surcharge": {"formula": "epa-model-2", "by": "Village Board resolution 2026-04"}}}
    for pack in available_packs():
        for provision, kind, _terms in charges(pack, adopted):
            assert provision.citation.startswith(load_pack(provision.model or pack).code)
            assert ".txt" not in provision.citation and provision.provenance.startswith(load_pack(pack).seed)
        late_terms(pack)
    assert rec_terms("palmyra-wi").round_to == 0.25
