"""One pack search path for every command that takes ``--pack``: the config's ``pack_dirs``
(and ``$SEWERWATCH_PACK_PATH``), then the shipped packs; ``pack list`` says where each comes
from; an id found twice is refused naming both files. The pack is the fictional Town of
Exampleford's (tests/data/by-sample-type/), which sewerwatch does not ship."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOWN = ROOT / "tests" / "data" / "by-sample-type"
READINGS = "time,site,parameter,value,unit\n2026-03-03T12:00:00Z,plater,ph,7.5,pH\n"


def _run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    return subprocess.run([sys.executable, "-m", "sewerwatch", *args], capture_output=True, text=True, cwd=cwd,
                          env={**base, "PYTHONPATH": str(ROOT), **env}, timeout=120)


def _town(tmp_path: Path) -> Path:
    (tmp_path / "packs").mkdir()
    shutil.copy(TOWN / "exampleford-mn.toml", tmp_path / "packs" / "exampleford-mn.toml")
    cfg = (TOWN / "town.toml").read_text(encoding="utf-8").replace('pack_dirs = ["."]', 'pack_dirs = ["packs"]')
    (tmp_path / "town.toml").write_text(cfg, encoding="utf-8")
    (tmp_path / "readings.csv").write_text(READINGS, encoding="utf-8")
    return tmp_path


def test_check_pack_name_finds_the_pack_in_the_configs_pack_dirs(tmp_path):
    d = _town(tmp_path)
    r = _run(d, "--config", "town.toml", "check", "--pack", "exampleford-mn", "--readings", "readings.csv", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []
    # the config found as ./sewerwatch.toml serves the same
    shutil.copy(d / "town.toml", d / "sewerwatch.toml")
    r = _run(d, "check", "--pack", "exampleford-mn", "--readings", "readings.csv", "--json")
    assert r.returncode == 0, r.stderr
    # without a config the pack is unknown, and the message says where it was looked for
    (d / "sewerwatch.toml").unlink()
    r = _run(d, "check", "--pack", "exampleford-mn", "--readings", "readings.csv")
    assert r.returncode == 2 and "unknown rule pack 'exampleford-mn'" in r.stderr and "searched" in r.stderr
    # pack check by id, through the config's folders too
    r = _run(d, "--config", "town.toml", "pack", "check", "exampleford-mn")
    assert r.returncode == 0 and "ok: Town of Exampleford" in r.stdout, r.stderr


def test_pack_list_says_where_each_pack_comes_from(tmp_path):
    d = _town(tmp_path)
    r = _run(d, "--config", "town.toml", "pack", "list", "--json")
    assert r.returncode == 0, r.stderr
    rows = {x["id"]: x for x in json.loads(r.stdout)}
    assert rows["exampleford-mn"]["files"] == [{"path": str((d / "packs" / "exampleford-mn.toml").resolve()),
                                                 "from": "the config's pack_dirs"}]
    assert rows["exampleford-mn"]["name"] == "Town of Exampleford"
    assert rows["palmyra-wi"]["files"] == [{"path": str(ROOT / "limits" / "packs" / "palmyra-wi.toml"),
                                            "from": "shipped"}]
    r = _run(d, "pack", "list", SEWERWATCH_PACK_PATH=str(d / "packs"))
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("exampleford-mn "))
    assert line == f"exampleford-mn  Town of Exampleford  ($SEWERWATCH_PACK_PATH: {d / 'packs' / 'exampleford-mn.toml'})"


def test_a_pack_id_found_twice_is_refused_naming_both_files(tmp_path):
    d = _town(tmp_path)
    (d / "more").mkdir()
    shutil.copy(TOWN / "exampleford-mn.toml", d / "more" / "exampleford-mn.toml")
    r = _run(d, "--config", "town.toml", "check", "--pack", "exampleford-mn", "--readings", "readings.csv",
             SEWERWATCH_PACK_PATH=str(d / "more"))
    assert r.returncode == 2
    [line] = r.stderr.splitlines()
    assert "rule pack 'exampleford-mn' is found twice: " in line, line
    assert str(d / "more" / "exampleford-mn.toml") in line and str(d / "packs" / "exampleford-mn.toml") in line
    # the same folder twice on the path is one file, not two
    r = _run(d, "--config", "town.toml", "check", "--pack", "exampleford-mn", "--readings", "readings.csv",
             SEWERWATCH_PACK_PATH=str(d / "packs"))
    assert r.returncode == 0, r.stderr


def test_a_config_that_cannot_be_read_leaves_a_command_on_files_alone_running(tmp_path):
    d = _town(tmp_path)
    (d / "sewerwatch.toml").write_text("[utility\n", encoding="utf-8")
    r = _run(d, "check", "--pack", "palmyra-wi", "--readings", "readings.csv", "--json")
    assert r.returncode == 0, r.stderr
    # a pack only its pack_dirs hold: not found, and the message says why those were not searched
    r = _run(d, "check", "--pack", "exampleford-mn", "--readings", "readings.csv")
    assert r.returncode == 2
    [line] = r.stderr.splitlines()
    assert "unknown rule pack 'exampleford-mn'" in line and \
        "the config's pack_dirs were not read: sewerwatch.toml: not valid TOML" in line, line
    # another config checked by name is read on its own
    r = _run(d, "config", "check", "town.toml")
    assert r.returncode == 0 and "pack exampleford-mn" in r.stdout, r.stderr
