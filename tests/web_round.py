"""The pretreatment round's village for the office's tests: the demo
village's plater with its permit (copper 1.0 mg/l daily maximum, condition 3(a)), the demo's
lab results imported and checked (the copper result 1.6 mg/l of 2026-02-04 a lab violation),
the documents' letterhead, the program's facts for the state's report, and a rates file with
the plater's volume. Seeded through the package functions the command line calls (in
process), not through the pages."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

from enforcement_support import run

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """
[utility]
name = "Village of Palmyra"
pack = "palmyra-wi"
timezone = "America/Chicago"

[documents]
letterhead = ["Department of Public Works, Wastewater Utility", "123 Main Street, Palmyra, WI 53156"]
signed_by = "Pat Example"
signer_title = "Utility Superintendent"

[enforcement.program]
npdes_permit = "WI0020231"
submitter_id = "PALMYRA-WWTP"
ordinance = "Ch. 13"
ordinance_adopted = 2019-06-03
significant_users = ["plating", "candy"]
categorical_users = ["plating"]
local_limits_evaluated = 2018-10-01
local_limits_adopted = 2019-06-03

[[sites]]
id = "plating"
name = "Lakeside Plating"
sic = "3471"
permit = "PAL-IU-2026-02"

[[sites]]
id = "candy"
name = "Sweet Creek Confections"
sic = "2065"
"""

RATES = """bod = 0.20
tss = 0.15
tkn = 0.90
tp = 2.50
[bill.palmyra-wi]
use_per_1000_gal = 6.37
[bill.volume_mg]
plating = 0.12
candy = 0.30
"""


def seed(tmp_path: Path, db) -> Path:
    """Write the config and rates, migrate, import the permit and the lab results, store the
    lab violations; return the config's path."""
    cfg = tmp_path / "village.toml"
    cfg.write_text(CONFIG, encoding="utf-8")
    (tmp_path / "rates.toml").write_text(RATES, encoding="utf-8")
    for args in (("db", "migrate"), ("permit", "import", str(ROOT / "examples" / "permits" / "plating.toml"),
                                     "--actor", "test"),
                 ("lab", "import", str(ROOT / "examples" / "demo" / "lab-results.csv"), "--actor", "lab"),
                 ("lab", "check", "--since", "2026-01-01", "--until", "2026-07-01", "--store")):
        r = run(tmp_path, db, *args)
        assert r.returncode in (0, 4), (args, r.stderr)
    return cfg


def config(tmp_path: Path, cfg_path: Path, **web):
    """The seeded village's config, as the office reads it, its state in ``tmp_path``."""
    from dataclasses import replace

    from foundation import config as sw_config
    from foundation.config import WebOptions

    cfg = sw_config.load(str(cfg_path))
    return replace(cfg, services=replace(cfg.services, state_dir=str(tmp_path)), web=WebOptions(**web))


def copper_violation(db) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT v.id FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = 'plating' "
                            "AND v.parameter = 'cu' ORDER BY v.start_time LIMIT 1").fetchone()[0]


def seeded_village(services, tmp_path_factory):
    """The village seeded once (:func:`seed`, the accounts of ``web_support.add_people``) in a
    database that then takes no connections, so it is copied at once (:func:`clone`); yields
    ``(database, folder, config path)`` and drops it afterwards. The session fixture
    ``round_village`` (tests/conftest.py) holds it for both of the round's modules."""
    from psycopg import sql

    from conftest import _database, _disconnect
    from web_support import add_people, cheap_hashes

    tmp = tmp_path_factory.mktemp("round")
    made = _database(services, "tests/web_round.py")
    db = next(made)
    try:
        cfg = seed(tmp, db)
        with cheap_hashes():
            add_people(db.url)
        with services.admin() as conn:       # TimescaleDB's scheduler stays away: no waiting to copy it
            conn.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(db.name)))
            _disconnect(conn, db.name)
        yield db, tmp, cfg
    finally:
        next(made, None)                      # _database's drop


def clone(services, seeded, tag: str = ""):
    """A database of the test's own, copied from the seeded one (``CREATE DATABASE ...
    TEMPLATE``: a second instead of seeding again); dropped afterwards."""
    import os
    import time

    import psycopg
    from psycopg import sql

    from conftest import Database, _disconnect, _with_db
    from sewerwatch.db import roles

    name = f"swr_{os.getpid()}_{next(_clones)}"
    with services.admin() as conn:
        deadline = time.monotonic() + 30
        while True:          # a session still ending on it: end it and try again
            _disconnect(conn, seeded.name)
            try:
                conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {} STRATEGY file_copy").format(
                    sql.Identifier(name), sql.Identifier(seeded.name), sql.Identifier(roles.OWNER)))
                break
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    db = Database(name=name, urls={r: _with_db(u, name) for r, u in services.db_urls.items()})
    try:
        yield db
    finally:
        with services.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


_clones = itertools.count()


@contextlib.contextmanager
def served(db, tmp: Path, login_per_min: int = 200, config: str = CONFIG, web: str = ""):
    """``sewerwatch web`` over ``db`` with the round village's config (or ``config``), its
    state in ``tmp``, ``web`` more lines of its ``[web]`` table (``mail_url = "..."``);
    yields the office's address, stopped afterwards."""
    import os
    import subprocess
    import sys

    from sewerwatch.services.scratch import free_port
    from support import wait_until

    port = free_port()
    cfg = tmp / "village.toml"
    cfg.write_text(config + f'\n[services]\ndb_url = "{db.url}"\nstate_dir = "{tmp / "state"}"\n'
                   f'[web]\nport = {port}\npublic_url = "http://127.0.0.1:{port}"\nlogin_per_min = {login_per_min}\n{web}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    with open(tmp / "web.err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "web"],
                                stdout=subprocess.DEVNULL, stderr=err, cwd=tmp, env=env)
        try:
            assert wait_until(lambda: "the office on http" in (tmp / "web.err").read_text() or proc.poll() is not None,
                              60), (tmp / "web.err").read_text()
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(30)


def sign_in(b, base: str, user: str) -> None:
    """Sign the browser ``b`` in at the office ``base`` as ``user``, through the sign-in form."""
    from selenium.webdriver.common.by import By

    from support import wait_until
    from web_support import PASSWORD

    d = b.driver
    d.execute_cdp_cmd("Network.clearBrowserCookies", {})
    d.get(base + "/login")
    d.find_element(By.ID, "username").send_keys(user)
    d.find_element(By.ID, "password").send_keys(PASSWORD)
    d.find_element(By.ID, "sign-in").click()
    assert wait_until(lambda: "/login" not in d.current_url, 15), (user, b.text()[:300])
