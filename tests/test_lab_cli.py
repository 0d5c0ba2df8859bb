"""``sewerwatch surcharge`` as DESIGN.md promises it: files only, no config, database or service."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "lab"
HEADER = "sample_id,site,collected,analyte,value,unit,qualifier\n"


def run(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env["SEWERWATCH_DB_URL"] = "postgresql://nobody@127.0.0.1:1/none"  # must not be used
    return subprocess.run([sys.executable, "-m", "sewerwatch", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, env=env, timeout=60)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "lab.csv").write_text(HEADER + "\n".join([
        "A1,mill,2026-01-05,bod5,300,mg/l,",
        "A2,mill,2026-02-05,bod5,500,mg/l,",
        "A1,mill,2026-01-05,tss,200,mg/l,",
        "A1,mill,2026-01-05,tp,9000,ug/l,",
        "A1,mill,2026-01-05,tkn,10,mg/l,<",
        "B1,dairy,2026-01-06,bod5,650,mg/l,",
        "B1,dairy,2026-01-06,fog,130,mg/l,",
    ]) + "\n")
    (tmp_path / "rates.toml").write_text("bod = 0.20\ntss = 0.15\ntkn = 0.90\ntp = 2.50\n")
    (tmp_path / "volumes.csv").write_text("site,volume_mg\nmill,0.5\ndairy,0.25\n")
    return tmp_path


def test_surcharge_json_several_sites(files):
    r = run("surcharge", "--pack", "palmyra-wi", "--lab", str(files / "lab.csv"), "--volume",
            str(files / "volumes.csv"), "--rates", str(files / "rates.toml"), "--json", cwd=files)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [s["site"] for s in out] == ["dairy", "mill"]
    dairy, mill = out
    # dairy: 0.25 MG x (650 - 250) x 8.34 = 834 lb x $0.20 = $166.80; FOG is not surcharged
    assert dairy["volume_mg"] == 0.25 and set(dairy["analytes"]) == {"bod5"}
    assert dairy["analytes"]["bod5"]["pounds"] == pytest.approx(834.0)
    assert dairy["analytes"]["bod5"]["dollars"] == 166.80 and dairy["total_dollars"] == 166.80
    # mill: BOD (300 + 500)/2 = 400: 0.5 x 150 x 8.34 = 625.5 lb x 0.20 = $125.10
    #       TSS 200 < 250: $0; TKN "<10" counts 0: $0
    #       TP 9000 ug/l = 9 mg/l: 0.5 x 2 x 8.34 = 8.34 lb x $2.50 = $20.85
    a = mill["analytes"]
    assert {k: a[k]["average_mg_l"] for k in a} == {"bod5": 400.0, "tss": 200.0, "tp": 9.0, "tkn": 0.0}
    assert {k: a[k]["base_mg_l"] for k in a} == {"bod5": 250.0, "tss": 250.0, "tp": 7.0, "tkn": 40.0}
    assert {k: a[k]["dollars"] for k in a} == {"bod5": 125.10, "tss": 0.0, "tp": 20.85, "tkn": 0.0}
    assert mill["total_dollars"] == 145.95


def test_surcharge_volume_mg_single_site_and_table(files):
    (files / "one.csv").write_text(HEADER + "B1,dairy,2026-01-06,bod5,650,mg/l,\n")
    args = ("surcharge", "--pack", "palmyra-wi", "--lab", str(files / "one.csv"), "--volume-mg", "0.1",
            "--rates", str(files / "rates.toml"))
    r = run(*args, "--json")
    # 0.1 MG x 400 x 8.34 = 333.6 lb x 0.20 = $66.72
    assert r.returncode == 0 and json.loads(r.stdout)[0]["total_dollars"] == 66.72
    r = run(*args)
    assert r.returncode == 0 and "dairy" in r.stdout and "66.72" in r.stdout and "333.60" in r.stdout


@pytest.mark.parametrize("lab, volumes, rates, message", [
    ("A1,mill,2026-01-05,bod5,300,mg/dl,\n", "site,volume_mg\nmill,1\n", "bod = 0.2\n", "lab.csv: line 2: unknown unit 'mg/dl'"),
    ("A1,mill,2026-01-05,bod5,300,mg/l,\n", "site,volume_mg\nmill,lots\n", "bod = 0.2\n", "volumes.csv: line 2: volume_mg 'lots'"),
    ("A1,mill,2026-01-05,bod5,300,mg/l,\n", "site,volume_mg\nmill,1\n", "bod = 'cheap'\n", "rates.toml: bod: expected a number"),
    ("A1,mill,2026-01-05,bod5,300,mg/l,\n", "site,volume_mg\nmill,1\n", "bod = \n", "rates.toml: not valid TOML"),
    ("A1,mill,2026-01-05,bod5,300,mg/l,\n", "site,volume_mg\ndairy,1\n", "bod = 0.2\n", "volumes.csv: no volume for site(s) mill"),
    ("A1,mill,2026-01-05,tkn,300,mg/l,\n", "site,volume_mg\nmill,1\n", "bod = 0.2\n", "rates.toml: no rate for tkn"),
    ("A1,mill,2026-01-05,bod5,300,mg/l,\nA1,mill,2026-01-05,bod5,300,mg/l,\n", "site,volume_mg\nmill,1\n",
     "bod = 0.2\n", "lab.csv: line 3: duplicate"),
])
def test_surcharge_bad_input_exit_2_one_line(tmp_path, lab, volumes, rates, message):
    (tmp_path / "lab.csv").write_text(HEADER + lab)
    (tmp_path / "volumes.csv").write_text(volumes)
    (tmp_path / "rates.toml").write_text(rates)
    r = run("surcharge", "--pack", "palmyra-wi", "--lab", "lab.csv", "--volume", "volumes.csv",
            "--rates", "rates.toml", "--json", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sewerwatch: error: ") and message in lines[0], r.stderr


def test_volume_mg_with_two_sites_is_an_error(files):
    r = run("surcharge", "--pack", "palmyra-wi", "--lab", str(files / "lab.csv"), "--volume-mg", "1", "--rates",
            str(files / "rates.toml"))
    assert r.returncode == 2 and "--volume-mg is for one site" in r.stderr


def test_example_files_run():
    r = run("surcharge", "--pack", "palmyra-wi", "--lab", str(EXAMPLES / "lab-results.csv"), "--volume",
            str(EXAMPLES / "volumes.csv"), "--rates", str(EXAMPLES / "rates.toml"), "--json")
    assert r.returncode == 0, r.stderr
    out = {s["site"]: s for s in json.loads(r.stdout)}
    # cheese-plant BOD (420 + 380)/2 = 400: 0.85 MG x 150 x 8.34 = 1,063.35 lb x $0.20 = $212.67
    assert out["cheese-plant"]["analytes"]["bod5"]["dollars"] == 212.67


def test_non_detect_policy_from_rates_file_and_flag(tmp_path):
    (tmp_path / "lab.csv").write_text(HEADER + "A1,mill,2026-01-05,tkn,80,mg/l,\nA2,mill,2026-01-12,tkn,20,mg/l,<\n")
    (tmp_path / "r.toml").write_text("tkn = 0.90\nnon_detect = \"dl\"\n")
    base = ("surcharge", "--pack", "palmyra-wi", "--lab", "lab.csv", "--volume-mg", "1", "--rates", "r.toml", "--json")
    # rates file says dl: (80 + 20)/2 = 50 -> 1 MG x 10 x 8.34 = 83.4 lb x $0.90 = $75.06
    r = run(*base, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["total_dollars"] == 75.06
    # the flag wins: zero -> (80 + 0)/2 = 40 = base -> $0
    r = run(*base, "--non-detect", "zero", cwd=tmp_path)
    assert json.loads(r.stdout)[0]["total_dollars"] == 0.0
    (tmp_path / "r.toml").write_text("tkn = 0.90\nnon_detect = \"maybe\"\n")
    r = run(*base, cwd=tmp_path)
    assert r.returncode == 2 and "r.toml: non_detect: expected one of zero, half, dl" in r.stderr


@pytest.mark.parametrize("args, message", [
    (("--volume-mg", "lots", "--pack", "palmyra-wi"), "--volume-mg: expected a volume >= 0"),
    (("--volume-mg", "-1", "--pack", "palmyra-wi"), "--volume-mg: expected a volume >= 0"),
    # the one pack search path, and where it looked
    (("--volume-mg", "1", "--pack", "springfield"), "unknown rule pack 'springfield' (known: palmyra-wi"),
    (("--volume-mg", "1", "--pack", "superior-wi"), "defines no normal sewage strength"),
    # no other village's pack by default
    (("--volume-mg", "1"), "surcharge needs --pack PACK"),
])
def test_bad_arguments_exit_2_one_line(tmp_path, args, message):
    (tmp_path / "lab.csv").write_text(HEADER + "A1,mill,2026-01-05,bod5,300,mg/l,\n")
    (tmp_path / "r.toml").write_text("bod = 0.2\n")
    r = run("surcharge", "--lab", "lab.csv", "--rates", "r.toml", *args, cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and message in lines[0], r.stderr
