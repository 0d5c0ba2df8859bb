"""The pack format documented and checked: ``sewerwatch pack check`` names
each problem of a malformed pack in one line (file, table, key); the reference pages and
JSON Schemas are generated from the models that check the files and kept current here."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from datetime import date
from pathlib import Path

import jsonschema
import pytest

from limits.pack_cli import REFERENCE_DIR, check_pack
from sewerwatch.reference import reference_files
from limits.packs import PACKS_DIR

ROOT = Path(__file__).resolve().parent.parent
CITY = ROOT / "tests" / "data" / "example-city"
PACK = (CITY / "examplehaven-mn.toml").read_text(encoding="utf-8")


def _pack(tmp_path, old: str, new: str) -> Path:
    assert old in PACK, old
    p = tmp_path / "examplehaven-mn.toml"
    p.write_text(PACK.replace(old, new, 1), encoding="utf-8")
    return p


#: (what is changed, into what, the one line expected after "<file>: ")
MALFORMED = [
    # unknown keys: at the top, in a rule (named by its id), in a table
    ('seed = "example-city-ordinance.txt"', 'seed = "example-city-ordinance.txt"\ncolour = "blue"',
     "colour: unknown key (expected one of: id, name, code, timezone, seed, municipality"),
    ('longer_than_min = 60\nsection = "Sec. 22-41(b)"', 'longer_then_min = 60\nsection = "Sec. 22-41(b)"',
     "rules[0] (ph-min).longer_then_min: unknown key for a range rule (expected one of: id, section, words"),
    ('municipality = { kind = "city", name = "Examplehaven" }', 'municipality = { kind = "city", nom = "X" }',
     "municipality.nom: unknown key (expected one of: kind, name)"),
    ('municipality = { kind = "city", name = "Examplehaven" }', 'municipality = { kind = "metropolis", name = "X" }',
     "municipality.kind: expected one of city, village, town"),
    # unknown analytes (with the closest ids) and units
    ('analyte = "as"', 'analyte = "arsenik"', "rules[3] (arsenic-max).analyte: unknown analyte 'arsenik' (closest known: as"),
    ('analyte = "hg"', 'analyte = "quicksilver"', "rules[5] (mercury-max).analyte: unknown analyte 'quicksilver'"),
    ('limit = 2.0\nunit = "ug/l"', 'limit = 2.0\nunit = "ppb"', "rules[5] (mercury-max).unit: unknown unit 'ppb' for hg (known: mg/l, ug/l"),
    ('unit = "degF"', 'unit = "kelvin"', "rules[2] (temperature-max).unit: unknown unit 'kelvin' for temperature"),
    ('unit = "lb/d"', 'unit = "kg/d"', "rules[7] (barium-loading).unit: unknown unit for a loading 'kg/d' (known: lb/d)"),
    # a limit without its words or its section (the citation), or with empty words
    ('section = "Sec. 22-41(a)"\n', '', "rules[2] (temperature-max).section: missing (required)"),
    ('words = "No user shall discharge into the public sewer any liquid or vapor having a temperature higher '
     'than 150 degrees Fahrenheit."\n', '', "rules[2] (temperature-max).words: missing (required)"),
    ('words = "No user shall discharge more than 0.50 pounds of barium per day."', 'words = "  "',
     "rules[7] (barium-loading).words: expected a non-empty string, got '  '"),
    # overlapping rules: two that limit the same thing the same way
    ('id = "arsenic-monthly"\nkind = "lab-limit"\nanalyte = "as"\nbasis = "monthly"',
     'id = "arsenic-monthly"\nkind = "lab-limit"\nanalyte = "as"\nbasis = "sample"',
     "rules[6] (arsenic-monthly): overlaps rules[3] (arsenic-max): both limit as (lab-limit, basis sample)"),
    ('longer_than_min = 60\nsection = "Sec. 22-41(b)"\nwords = "No user shall discharge wastewater having a pH '
     'lower than 5.5 or higher than 10.5 for more than one hour."\n\n[[rules]]\nid = "ph-max"',
     'longer_than_min = 60\nsection = "Sec. 22-41(b)"\nwords = "No user shall discharge wastewater having a pH '
     'lower than 5.5 or higher than 10.5 for more than one hour."\n\n[[rules]]\nid = "ph-max"\nkind = "range"\n'
     'parameter = "ph"\ncomparison = "below"\nlimit = 5.0\nunit = "pH"\nlonger_than_min = 60\nsection = "x"\n'
     'words = "y"\n\n[[rules]]\nid = "ph-max2"',
     "rules[1] (ph-max): overlaps rules[0] (ph-min): both limit ph from below for more than 60 min"),
    # wrong kinds, comparisons, types, ids
    ('kind = "lab-limit"\nanalyte = "ba"', 'kind = "lab-limt"\nanalyte = "ba"',
     "rules[4] (barium-max).kind: unknown kind 'lab-limt' (known: range, slug, lab-limit"),
    ('comparison = "higher than"\nlimit = 150.0', 'comparison = "hotter than"\nlimit = 150.0',
     "rules[2] (temperature-max).comparison: unknown comparison 'hotter than'"),
    ('limit = 0.10', 'limit = "0.10"', "rules[3] (arsenic-max).limit: expected a number, got '0.10'"),
    ('longer_than_min = 60', 'longer_than_min = -60', "rules[0] (ph-min).longer_than_min: expected a positive number, got int -60"),
    ('id = "barium-max"', 'id = "Barium Max"', "rules[4] (Barium Max).id: expected a lowercase rule id (letters, digits, -), got 'Barium Max'"),
    ('id = "barium-max"', 'id = "arsenic-max"', "rules[4] (arsenic-max).id: duplicate rule id 'arsenic-max' (first at rules[3])"),
    ('timezone = "America/Chicago"', 'timezone = "Central"', "timezone: unknown time zone 'Central'"),
    ('id = "examplehaven-mn"', 'id = "examplehaven"', "id: pack id 'examplehaven' does not match the file name 'examplehaven-mn'"),
    # charges and duties
    ('formula = "per-1000-gal"', 'formula = "per-1000-gal"\nbasis = "volume"', "charges[0].basis: unknown key"),
    ('id = "service-charge"', 'id = "Service Charge"',
     "charges[0].id: expected a lowercase charge id (letters, digits, -), got 'Service Charge'"),
    ('rules = ["ph-min", "ph-max", "temperature-max"]', 'rules = ["ph-min", "slug"]',
     "report_duty.rules: no rule 'slug' in this pack"),
    ('{ fill = "blank", words', '{ fill = "signature", words', "report_duty.contents[3].fill: unknown fill 'signature'"),
    # the pack's own analytes
    ('[[rules]]\nid = "ph-min"', '[[analytes]]\nid = "as"\nname = "Arsenic again"\n\n[[rules]]\nid = "ph-min"',
     "analytes[1].id: 'as' is in the catalogue (Arsenic): name it, or give your own id"),
    ('[[rules]]\nid = "ph-min"', '[[analytes]]\nid = "pfos"\nname = "PFOS"\nunits = ["ng/l", "ppt"]\n\n[[rules]]\nid = "ph-min"',
     "analytes[1].units: unknown unit 'ppt' for concentration"),
]


@pytest.mark.parametrize("old,new,line", MALFORMED, ids=[m[2].split(":")[0] for m in MALFORMED])
def test_pack_check_names_each_problem_in_one_line(tmp_path, old, new, line):
    p = _pack(tmp_path, old, new)
    got = check_pack(p)
    assert got and got[0].startswith(f"{p}: {line}"), got
    assert all("\n" not in x and x.startswith(f"{p}: ") for x in got)


def test_pack_check_lists_every_problem_and_the_cli_exits_2(tmp_path):
    # every problem of the tables, one line each (the checks across tables, such as unknown
    # analytes, run once the tables themselves are sound)
    p = _pack(tmp_path, 'limit = 0.10', 'limit = "0.10"')
    p.write_text(p.read_text().replace('unit = "degF"', 'unit = "kelvin"').replace('seed =', 'colour = 1\nseed ='),
                 encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "pack", "check", str(p)], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 2
    lines = r.stdout.splitlines()
    assert [x.split(": ")[1] for x in lines] == ["colour", "rules[2] (temperature-max).unit", "rules[3] (arsenic-max).limit"]
    assert r.stderr == f"sewerwatch: error: {p}: 3 problems\n"
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "pack", "check", str(CITY / "examplehaven-mn.toml")],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and "ok: City of Examplehaven" in r.stdout, r.stderr


def test_a_config_is_never_mistaken_for_a_pack():
    [line] = check_pack(CITY / "city.toml")
    assert line.startswith(f"{CITY / 'city.toml'}: a sewerwatch config, not a rule pack")


def test_the_shipped_packs_have_no_problem():
    for f in sorted(PACKS_DIR.glob("*.toml")):
        assert check_pack(f) == [], f


def test_the_reference_pages_and_schemas_are_current():
    """``sewerwatch pack reference`` writes them from the models: regenerate after changing a model."""
    for name, text in reference_files().items():
        assert (REFERENCE_DIR / name).read_text(encoding="utf-8") == text, f"docs/reference/{name} is stale: " \
            "run sewerwatch pack reference"


def _json(data):
    return json.loads(json.dumps(data, default=lambda x: x.isoformat() if isinstance(x, date) else str(x)))


def test_the_json_schemas_accept_the_shipped_files_and_refuse_a_wrong_key():
    schemas = {n: json.loads((REFERENCE_DIR / f"{n}.schema.json").read_text()) for n in ("pack", "permit", "config")}
    for n, s in schemas.items():
        jsonschema.Draft202012Validator.check_schema(s)
    files = [("pack", f) for f in PACKS_DIR.glob("*.toml")] + [("pack", CITY / "examplehaven-mn.toml")]
    files += [("permit", f) for f in (ROOT / "examples" / "permits").glob("*.toml")]
    files += [("config", ROOT / "examples" / "demo-village.toml"), ("config", CITY / "city.toml")]
    for n, f in files:
        jsonschema.validate(_json(tomllib.loads(f.read_text(encoding="utf-8"))), schemas[n])
    bad = _json(tomllib.loads(PACK.replace('kind = "range"', 'kind = "range"\nlimt = 3', 1)))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schemas["pack"])


def test_every_command_finds_packs_one_way_and_a_config_is_no_pack(tmp_path):
    """``surcharge --pack FILE.toml`` works like ``check --pack FILE.toml``;
    an unknown pack is named with where it was looked for; a config given as a pack is said to be one."""
    village = ROOT / "tests" / "data" / "example-village"
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("SEWERWATCH_")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "sewerwatch", *a], capture_output=True, text=True,
                                    cwd=tmp_path, timeout=60, env=env)
    r = run("surcharge", "--pack", str(village / "example-wi.toml"), "--lab", str(village / "lab.csv"),
            "--volume-mg", "0.6", "--rates", str(village / "rates.toml"), "--json")
    assert r.returncode == 0, r.stderr
    # §18-31(1): BOD (420 + 380) / 2 = 400 over 300: 0.6 MG x 100 x 8.34 = 500.4 lb x $0.25 = $125.10
    assert json.loads(r.stdout)[0]["total_dollars"] == 125.10
    r = run("surcharge", "--pack", "example-wi", "--lab", str(village / "lab.csv"), "--volume-mg", "0.6",
            "--rates", str(village / "rates.toml"))
    assert r.returncode == 2 and r.stderr.startswith("sewerwatch: error: unknown rule pack 'example-wi' (known: "
                                                     "palmyra-wi") and f"searched {PACKS_DIR}" in r.stderr
    for cmd in (("check", "--readings", str(village / "readings.csv")),
                ("surcharge", "--lab", str(village / "lab.csv"), "--volume-mg", "1", "--rates", str(village / "rates.toml"))):
        r = run(*cmd, "--pack", str(village / "village.toml"))
        assert r.returncode == 2 and r.stderr == (f"sewerwatch: error: {village / 'village.toml'}: a sewerwatch config, "
                                                  "not a rule pack (a pack has id, name, code, timezone, seed and "
                                                  "[[rules]]; the config's [utility] pack names the utility's pack)\n")
