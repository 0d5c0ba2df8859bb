"""The README's "Your first hour", walked to the Today page: its commands, read from the
README's own block and run as subprocesses against a state folder of this test's own (as
``tests/test_first_hour.py`` does), then the office in Chromium, signed in as the README says.

Checked on the page: every sensor's age is seconds old (the simulators play at the present),
and each industrial user's permit is the stored one (``permit import`` of the example
permits), never the config's number.

The only changes to the README's commands: the interpreter of the checkout for
``.venv/bin/sewerwatch``, the demo village's config copied with ports of the test's own (its
Modbus devices, the office, the mail catcher), ``--modbus-port`` to match, and the password
on standard input instead of a terminal.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from selenium.webdriver.common.by import By
from browser import gone
from selenium.webdriver.support.ui import WebDriverWait

from support import free_port, state_dir, wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "a first-hour password"


def first_hour_commands() -> list[str]:
    """The commands of the README's "Your first hour" block, comments and blank lines aside."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Your first hour", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    out = []
    for line in block.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


@pytest.fixture
def village(tmp_path):
    """The demo village's config with ports of this test's own, and a fresh state folder."""
    state = state_dir("sewerwatch-first-hour-today-")
    modbus, web, mail = free_port(), free_port(), free_port()
    cfg = (ROOT / "examples" / "demo-village.toml").read_text(encoding="utf-8")
    cfg = cfg.replace("port = 15020", f"port = {modbus}").replace("port = 8470", f"port = {web}")
    cfg = cfg.replace("http://127.0.0.1:8470", f"http://127.0.0.1:{web}").replace("127.0.0.1:8025",
                                                                                  f"127.0.0.1:{mail}")
    path = tmp_path / "demo-village.toml"
    path.write_text(cfg, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    env.update(SEWERWATCH_STATE_DIR=str(state), SEWERWATCH_PG_PORT=str(free_port()),
               SEWERWATCH_MQTT_PORT=str(free_port()), SEWERWATCH_MQTT_SITES_PORT=str(free_port()))
    v = {"cfg": path, "env": env, "modbus": modbus, "web": web, "state": state, "procs": []}
    try:
        yield v
    finally:
        for p in reversed(v["procs"]):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in v["procs"]:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run([sys.executable, "-m", "sewerwatch", "services", "down"], env=env, cwd=ROOT,
                       capture_output=True, timeout=120)
        shutil.rmtree(state, ignore_errors=True)


def play(village, line: str, tmp_path: Path) -> None:
    """One command of the README as the user types it (a line ending in ``&``, and ``run``
    and ``simulate``, which run until stopped, in the background)."""
    background = line.endswith("&")
    line = line.rstrip("&").strip()
    if line == "scripts/setup":
        return                                   # the test runs in the checkout it set up
    if line.startswith("export SEWERWATCH_CONFIG="):
        village["env"]["SEWERWATCH_CONFIG"] = str(village["cfg"])
        return
    argv = shlex.split(line.replace("$PWD", str(ROOT)))
    assert argv[0] == ".venv/bin/sewerwatch", line
    argv = [sys.executable, "-m", "sewerwatch", *argv[1:]]
    if "permit" in argv and "import" in argv:
        i = argv.index("import") + 1
        argv[i:i + 1] = sorted(str(p) for p in ROOT.glob(argv[i]))      # the shell's glob
    stdin = None
    if "users" in argv and "add" in argv:
        argv.append("--password-stdin")
        stdin = PASSWORD + "\n"
    if "simulate" in argv and "--no-mqtt" in argv:
        argv += ["--modbus-port", str(village["modbus"])]
    if background or argv[3] in ("run", "simulate"):
        log = open(tmp_path / f"{argv[3]}-{len(village['procs'])}.log", "w")
        village["procs"].append(subprocess.Popen(argv, cwd=ROOT, env=village["env"], stdout=log,
                                                 stderr=subprocess.STDOUT, text=True))
        return
    r = subprocess.run(argv, cwd=ROOT, env=village["env"], input=stdin, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, (line, r.stdout, r.stderr)


def test_the_first_hour_ends_on_a_today_page_of_the_present(village, chromium, tmp_path, monkeypatch):
    commands = first_hour_commands()
    assert any("permit import" in c for c in commands) and any("simulate" in c for c in commands)
    for line in commands:
        play(village, line, tmp_path)
    user = next(shlex.split(c)[3] for c in commands if " users add " in c)

    from foundation import config, db
    for k, v in village["env"].items():
        if k.startswith("SEWERWATCH_"):
            monkeypatch.setenv(k, v)                      # this test's own services, as the commands had
    cfg = config.load(village["cfg"])
    with db.connect("owner", cfg) as conn:
        from limits.permit_store import current_permits
        stored = {k: p.number for k, p in current_permits(conn).items()}
        sensors = conn.execute("SELECT count(*) FROM sensors").fetchone()[0]
    assert set(stored) == {"sausage", "plating", "candy"}
    assert stored["sausage"] == "PAL-IU-2026-01"         # the permit issued again, not the one that ended

    def fresh():
        with db.connect("owner", cfg) as conn:
            return conn.execute("SELECT count(*) FROM sensors s WHERE (SELECT max(time) FROM readings r "
                                "WHERE r.sensor_id = s.id) > now() - interval '20 s'").fetchone()[0] == sensors
    assert wait_until(fresh, 120), [p.poll() for p in village["procs"]]

    d = chromium.driver
    base = f"http://127.0.0.1:{village['web']}"

    def answers():
        import urllib.request
        try:
            return urllib.request.urlopen(base + "/login", timeout=5).status == 200
        except OSError:
            return False
    logs = lambda: "\n".join(p.read_text()[-2000:] for p in sorted(tmp_path.glob("*.log")))  # noqa: E731
    assert wait_until(answers, 90), logs()
    d.get(base + "/")                                    # no session: the sign-in page, as served
    assert "/login" in d.current_url
    d.find_element(By.ID, "username").send_keys(user)
    d.find_element(By.ID, "password").send_keys(PASSWORD)
    button = d.find_element(By.ID, "sign-in")
    button.click()
    WebDriverWait(d, 20).until(gone(button))
    assert wait_until(lambda: "Industrial users" in chromium.text(), 20), chromium.text()[:400]

    def shown():
        """Each card's sensors' ages and its permit, read at one instant (the page refreshes
        its cards every few seconds)."""
        return d.execute_script("""
            const out = {ages: {}, permits: {}};
            for (const card of document.querySelectorAll('article.card.site')) {
                const key = card.id.replace(/^site-/, '');
                out.permits[key] = card.querySelector('.permit').textContent.trim();
                for (const li of card.querySelectorAll('li.sensor'))
                    out.ages[key + '/' + li.querySelector('.sensor-name').textContent.trim()] =
                        li.querySelector('.age').textContent.trim();
            }
            return out;""")

    seen = {}

    def all_seconds_old():
        seen.update(shown())
        return len(seen["ages"]) == sensors and all(re.fullmatch(r"\d+ s ago", a) for a in seen["ages"].values())
    assert wait_until(all_seconds_old, 30), seen
    assert all(int(a.split()[0]) < 60 for a in seen["ages"].values()), seen
    for key, number in stored.items():
        assert seen["permits"][key].startswith(f"permit {number}"), (key, seen["permits"])
    assert "PAL-IU-2025-01" not in chromium.text()
    # the user's page names the same stored permit
    d.find_element(By.LINK_TEXT, "Palmyra Sausage Co.").click()
    assert wait_until(lambda: "PAL-IU-2026-01" in chromium.text("permit"), 20)


def test_today_and_the_users_page_name_the_stored_permit_never_the_configs(db, tmp_path):
    """A user whose config names a permit number nobody stored: "no permit on file"; once a
    permit is stored (here an expired one), its number and state."""
    import tomllib

    from limits.packs import load_pack
    from limits.permit_store import import_permit
    from limits.permits import parse_permit
    from web_support import ADMIN, PASSWORD as STAFF_PASSWORD, add_people, cheap_hashes, office_client, sign_in
    from web_support import village as office_village

    with cheap_hashes():
        office_village(db)
        add_people(db.url)
        with psycopg.connect(db.url, autocommit=True) as conn:
            conn.execute("UPDATE sites SET permit = 'PAL-IU-FROM-CONFIG' WHERE key = 'plater'")
        with office_client(db, tmp_path) as c:
            sign_in(c, "super", STAFF_PASSWORD)
            today, page = c.get("/").text, c.get("/sites/plater").text
        assert "no permit on file" in today and "No permit on file" in page
        assert "PAL-IU-FROM-CONFIG" not in today + page
        text = (ROOT / "examples" / "permits" / "sausage.toml").read_text(encoding="utf-8")
        doc = tomllib.loads(text.replace('site = "sausage"', 'site = "plater"'))
        with psycopg.connect(db.url, autocommit=True) as conn:
            import_permit(conn, parse_permit(doc, "sausage.toml", load_pack("palmyra-wi")), actor=ADMIN)
        with office_client(db, tmp_path) as c:
            sign_in(c, "super", STAFF_PASSWORD)
            today, page = c.get("/").text, c.get("/sites/plater").text
    assert "permit PAL-IU-2025-01, expired 2026-10-31" in today
    assert "PAL-IU-2025-01" in page and "(expired" in page and "PAL-IU-FROM-CONFIG" not in today + page
