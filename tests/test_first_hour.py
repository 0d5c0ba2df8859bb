"""The first hour of a new user: a fresh state folder, no config, commands in
the wrong order, each answered with one clear line (never a traceback).

Runs the CLI as a subprocess, as the user types it, against embedded services of its own
(a state folder under /var/tmp, free ports), started by ``services up`` in the sequence and
stopped at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import free_port, state_dir

pytestmark = [pytest.mark.services, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A shell of a new user: an empty folder, a fresh state folder, free ports."""
    home = tmp_path_factory.mktemp("newuser")
    state = state_dir("sewerwatch-first-hour-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env.update(SEWERWATCH_STATE_DIR=str(state), SEWERWATCH_PG_PORT=str(free_port()),
               SEWERWATCH_MQTT_PORT=str(free_port()), SEWERWATCH_MQTT_SITES_PORT=str(free_port()))

    def sw(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sewerwatch", *args], capture_output=True, text=True,
                              cwd=home, env=env, timeout=timeout)

    sw.home = home
    try:
        yield sw
    finally:
        sw("services", "down")
        shutil.rmtree(state, ignore_errors=True)


def one_line(r: subprocess.CompletedProcess, code: int, *words: str) -> str:
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code and len(lines) == 1, (r.returncode, r.stderr)
    assert lines[0].startswith("sewerwatch: error: ")
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def test_the_first_hour_in_the_wrong_order(user):
    home = user.home
    (home / "lab.csv").write_text("sample_id,site,collected,analyte,value,unit,qualifier\n"
                                  "S1,mill,2026-02-01,bod5,300,mg/l,\n")
    (home / "rates.toml").write_text("bod = 0.2\ntss = 0.15\ntkn = 0.9\ntp = 2.5\n")

    # no config anywhere: config check says where it looked
    one_line(user("config", "check"), 2, "looked for --config FILE", str(home / "sewerwatch.toml"),
             "examples/demo-village.toml")
    # nothing running yet: status says how to start it, and exits 2 (not running: the
    # monitoring-plugin convention)
    r = user("status")
    assert r.returncode == 2 and "sewerwatch services up" in r.stdout
    r = user("services", "up")
    assert r.returncode == 0, r.stderr

    # services up, but no schema: each command names 'sewerwatch db migrate'
    wrong_order = [
        ("status",), ("alerts", "list"), ("check", "--from", "2026-06-01", "--to", "2026-06-02"),
        ("lab", "import", "lab.csv"), ("bill", "--quarter", "2026Q1", "--rates", "rates.toml"),
        ("dashboards", "preview", "previews"), ("collect",), ("run",),
        ("snc", "--period", "2026H1"), ("due",), ("notice", "list"), ("report", "snc", "--year", "2026"),
    ]
    for argv in wrong_order:
        line = one_line(user(*argv), 2, "has no sewerwatch schema yet", "run 'sewerwatch db migrate' first")
        assert "database sewerwatch on 127.0.0.1:" in line, argv

    r = user("db", "status")
    assert r.returncode == 0 and "0001_schema.sql" in r.stdout and "pending" in r.stdout
    assert "server: PostgreSQL" in r.stdout
    r = user("db", "migrate")
    assert r.returncode == 0, r.stderr

    # a schema, still no config: nothing to check is never "no violations"
    r = user("check", "--from", "2026-06-01", "--to", "2026-06-02")
    one_line(r, 2, "the database has no sensors and there is no config", "looked for --config FILE")
    assert "no violations" not in r.stdout
    # lab import refuses instead of dead-lettering every row
    one_line(user("lab", "import", "lab.csv"), 2, "lab import: the database knows no sites", "--config FILE")
    r = user("status")
    assert r.returncode == 2 and "open alerts: 0" in r.stdout and "run: not running" in r.stdout
    # a site that is not there; a scenario offset past its day; a push without a token
    one_line(user("dashboards", "preview", "previews", "--site", "nowhere"), 2,
             "--site: unknown site 'nowhere'", "the database has no sites yet")
    one_line(user("simulate", "--offset", "25:00", "--no-mqtt"), 2, "--offset 25:00: past the end of the scenario",
             "24:00")
    one_line(user("dashboards", "push", "--url", "http://127.0.0.1:9"), 2, "$SEWERWATCH_GRAFANA_TOKEN",
             "--token-file")


def test_collect_and_bill_say_what_they_do_in_help():
    for argv, words in ((["collect", "--help"], "Run the collectors alone"),
                        (["bill", "--help"], "Each industrial user's bill for a quarter")):
        r = subprocess.run([sys.executable, "-m", "sewerwatch", *argv], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
        assert r.returncode == 0 and words in " ".join(r.stdout.split()), r.stdout
