"""Session fixtures: the real embedded TimescaleDB and Mosquitto, and a database per test.

``services`` starts the embedded services (or reuses running ones) once per session.
``db`` gives each test its own database, cloned from a template that holds every
migration; the template is rebuilt whenever a migration file changes.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from dataclasses import dataclass, field

import psycopg
import pytest
from psycopg import sql

# Parallel workers (`pytest -n N`, the README's test command): each worker runs embedded
# services of its own, in a state folder (the default's name ends with the worker's,
# foundation.paths.default_state_dir; a test's config with its own state_dir keeps it) and on
# ports of its own, so the tests of one worker never see another's broker accounts, databases
# or restarts. Set before any config is read; subprocesses (`sewerwatch run`, `collect`)
# inherit it.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw"):
    _n = int(_WORKER[2:]) + 1
    os.environ["SEWERWATCH_WORKER"] = _WORKER
    os.environ["SEWERWATCH_PG_PORT"] = str(int(os.environ.get("SEWERWATCH_PG_PORT") or 55432) + _n)
    os.environ["SEWERWATCH_MQTT_PORT"] = str(int(os.environ.get("SEWERWATCH_MQTT_PORT") or 51883) + _n)

from foundation import config as sw_config
from foundation import pack_path
from sewerwatch import services as sw_services
from sewerwatch.db import bootstrap, migrate, roles

_counter = itertools.count()

#: The test files that take a minute or more (a crawl of every page as every role, a restore
#: drill, a minute of soak, a frozen leader), longest first. ``make test``'s workers take whole
#: files in the order collected (``--no-loadscope-reorder``): these go first, so that no worker
#: is left running one of them alone at the end while the others have finished.
LONG_FIRST = ("test_web_crawl_browser.py", "test_backup_drill.py", "test_watched_party.py", "test_scale_standby.py",
              "test_live_soak.py", "test_ingest_mqtt.py", "test_arrival_plans_run.py", "test_first_hour_today.py",
              "test_health_truth.py", "test_first_hour.py", "test_bills_once.py", "test_live_ingest.py")


def pytest_collection_modifyitems(config, items):
    """The files of :data:`LONG_FIRST` first, in its order; the rest keep theirs."""
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FIRST)))


@dataclass
class Services:
    """The running services: URLs with credentials (see :class:`sewerwatch.services.Endpoints`)."""

    cfg: sw_config.Config
    db_url: str
    mqtt_url: str
    db_urls: dict
    mqtt_urls: dict
    mqtt_host: str = "127.0.0.1"
    mqtt_port: int = 0
    template: str = ""

    def admin(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(_with_db(self.db_urls["admin"], database), autocommit=True)


@dataclass
class Database:
    """One test's own migrated database."""

    name: str
    urls: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.urls["owner"]

    def connect(self, role: str = "owner", **kwargs) -> psycopg.Connection:
        return psycopg.connect(self.urls[role], **kwargs)


def _with_db(url: str, database: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + database


@pytest.fixture(scope="session")
def services() -> Services:
    cfg = sw_config.from_dict({}, "<tests>")
    ep = sw_services.up(cfg)
    svc = Services(cfg=cfg, db_url=ep.db_url, mqtt_url=ep.mqtt_url, db_urls=ep.db_urls,
                   mqtt_urls=ep.mqtt_urls, mqtt_port=cfg.services.mqtt_port)
    svc.template = _template(svc)
    return svc


def _template(svc: Services) -> str:
    """A database holding every migration, for cloning; built once per migration set."""
    name = "sw_tpl_" + migrate.checksum_all()[:12]
    with svc.admin() as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext('sewerwatch-test-template'))")
        try:
            row = conn.execute("SELECT datallowconn FROM pg_database WHERE datname = %s", (name,)).fetchone()
            if row is None:
                bootstrap.ensure_database(conn, name)
                bootstrap.ensure_timescaledb(_with_db(svc.db_urls["admin"], name))
                migrate.migrate(_with_db(svc.db_urls["owner"], name))
                # No connections, so TimescaleDB's background workers leave it alone and it
                # can always be copied.
                conn.execute(sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
                             .format(sql.Identifier(name)))
            _disconnect(conn, name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext('sewerwatch-test-template'))")
    return name


def _disconnect(conn: psycopg.Connection, name: str) -> None:
    """End every session on database ``name`` (TimescaleDB's scheduler among them)."""
    conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                 "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))


@pytest.fixture(autouse=True)
def _config_pack_dirs_stay_in_their_test():
    """A test that loads a config in this process (``cli.main([...])``) sets the process's
    ``[utility] pack_dirs`` (``foundation.config.use_pack_dirs``); put them back after it, so
    that a later test on the same worker does not search a folder of the earlier test."""
    before = pack_path.config_pack_dirs()
    yield
    sw_config.use_pack_dirs(before)


@pytest.fixture
def db(services: Services, request) -> Database:
    yield from _database(services, request.node.nodeid)


@pytest.fixture(scope="module")
def module_db(services: Services, request) -> Database:
    """A migrated database shared by the tests of one module (e.g. those of one running ``run``)."""
    yield from _database(services, request.node.nodeid)


def _database(services: Services, nodeid: str):
    test = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    name = f"swt_{os.getpid()}_{next(_counter)}_{test}"
    with services.admin() as conn:
        for attempt in range(20):
            try:
                conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} OWNER {} STRATEGY file_copy").format(
                    sql.Identifier(name), sql.Identifier(services.template), sql.Identifier(roles.OWNER)))
                break
            except psycopg.errors.ObjectInUse:  # a session still ending on the template
                if attempt == 19:
                    raise
                _disconnect(conn, services.template)
                time.sleep(0.1)
    database = Database(name=name, urls={r: _with_db(u, name) for r, u in services.db_urls.items()})
    yield database
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def round_village(services, tmp_path_factory):
    """The pretreatment round's village (tests/web_round.py), seeded once for the session's
    round tests, in process and in the browser; each copies it (``web_round.clone``)."""
    import web_round

    yield from web_round.seeded_village(services, tmp_path_factory)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """One headless Chromium for every browser test of the session (``tests/browser.py``);
    each test gets it without cookies, at a desktop's size."""
    import browser as browser_mod

    if not browser_mod.available():
        pytest.skip("Debian's chromium and chromium-driver are missing: run scripts/setup")
    pytest.importorskip("selenium.webdriver")
    b = browser_mod.Browser(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield b
    finally:
        b.quit()


@pytest.fixture
def chromium(browser):
    """The session's browser, fresh for this test."""
    browser.fresh()
    return browser
