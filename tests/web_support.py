"""Helpers for the office's tests: a village in a test database, accounts of every role, the
office in process (Litestar's test client over the real database), and one headless
Chromium for every browser test (``office_browser``, session-scoped, in ``conftest``-free
form so each test module that needs it imports it).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import types
from dataclasses import replace
from pathlib import Path

from foundation import config as sw_config
from foundation.actor import Actor
from foundation.config import WebOptions
from support import add_site_and_sensors
from identity import accounts

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
#: A phone's viewport [CSS px] (every page works at 390 px).
PHONE = (390, 844)
DESKTOP = (1280, 900)
ADMIN = Actor("test-admin", "cli")
#: One account of each role, with its password.
PEOPLE = {"super": ("Sam Super", "superintendent"), "coord": ("Cora Coordinator", "coordinator"),
          "clerk": ("Cliff Clerk", "clerk"), "inspector": ("Ines Inspector", "inspector"),
          "viewer": ("Vic Viewer", "viewer")}
PASSWORD = "correct horse battery"


@contextlib.contextmanager
def cheap_hashes():
    """Accounts hashed with argon2id at its smallest parameters while the tests make them (a
    hash at argon2-cffi's defaults, which the office keeps, takes about 0.5 s on the loaded
    test machine; verifying reads the parameters from the hash, so sign-ins are cheap too)."""
    from argon2 import PasswordHasher
    saved = accounts._hasher, accounts._DUMMY_HASH
    accounts._hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    accounts._DUMMY_HASH = accounts._hasher.hash("not a password of any account")
    try:
        yield
    finally:
        accounts._hasher, accounts._DUMMY_HASH = saved


def chromium_available() -> bool:
    return bool(shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER))


def add_people(db_url: str) -> None:
    import psycopg
    with psycopg.connect(db_url, autocommit=True) as conn:
        for user, (name, role) in PEOPLE.items():
            accounts.add(conn, user, name, role, PASSWORD, actor=ADMIN)


def village(db, name: str = "Acme Plating") -> dict:
    """One site with pH and temperature sensors, its readings and an open alert."""
    import psycopg
    ids = add_site_and_sensors(db.url, "plater", {"ph": ("ph", "pH"), "temp": ("temperature", "degF")})
    rec = {"site": "plater", "sensor": "ph", "parameter": "ph", "rule": "ph-min", "kind": "range",
           "start": "2026-06-01T15:30:00Z", "end": None, "peak": 3.468, "peak_time": "2026-06-01T15:35:00Z",
           "limit": 6.0, "unit": "pH", "comparison": "lower than", "citation": "Village of Palmyra Code §13.48(2)(g)",
           "words": "No user shall discharge wastewater with a pH lower than 6.0", "pack": "palmyra-wi"}
    with psycopg.connect(db.url) as conn:
        conn.execute("UPDATE sites SET name = %s, sic = '3471' WHERE key = 'plater'", (name,))
        conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT now() - g * interval '1 s', %s, 7.0 + "
                     "0.2 * sin(g / 600.0) FROM generate_series(1, 3600) g", (ids["ph"],))
        aid = conn.execute(
            "INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details) SELECT 'violation', "
            "site_id, id, 'ph-min', 'notified', 'Acme Plating: pH 3.468 pH', %s FROM sensors WHERE id = %s "
            "RETURNING id", (json.dumps(rec), ids["ph"])).fetchone()[0]
    return {"ids": ids, "alert": aid}


def office_config(tmp_path: Path, **web) -> sw_config.Config:
    cfg = sw_config.from_dict({"utility": {"name": "Village of Palmyra", "timezone": "America/Chicago"},
                               "services": {"state_dir": str(tmp_path)}}, "<tests>")
    return replace(cfg, web=WebOptions(**web))


@contextlib.contextmanager
def office_client(db, tmp_path: Path, *, status=None, base_url: str = "http://127.0.0.1", cfg=None, **web):
    """Litestar's test client of the office over the test's database (no socket, no browser);
    ``cfg``: the utility's config (default: a village with only its name and time zone)."""
    from litestar.testing import TestClient

    from sewerwatch.office import office_server
    cfg = office_config(tmp_path, **web) if cfg is None else cfg
    server = office_server(cfg, db.url, tmp_path, status_source=(lambda: status) if status is not None else
                           (lambda: {"running": True, "state": "ok", "problems": {}}))
    server.office.open()
    from web.app import asgi
    app = asgi(server.office, "t" * 32)
    try:
        with TestClient(app=app, base_url=base_url) as client:
            client.office = server.office
            client.litestar = app.app          # the Litestar application behind the edge
            yield client
    finally:
        server.office.close()


def csrf_of(html: str) -> str:
    m = re.search(r'name="_csrf_token" value="([^"]+)"', html)
    assert m, "no CSRF token in the page"
    return m.group(1)


def sign_in(client, user: str, password: str = PASSWORD, follow: bool = True):
    page = client.get("/login")
    r = client.post("/login", data={"username": user, "password": password, "next": "/",
                                    "_csrf_token": csrf_of(page.text)}, follow_redirects=follow)
    return r


def fake_comp():
    return types.SimpleNamespace(beat=lambda: None)


#: The demo's permits (examples/permits/) and its lab file (examples/demo/lab-results.csv).
ROOT = Path(__file__).resolve().parent.parent
PERMITS = ROOT / "examples" / "permits"
DEMO_LAB = ROOT / "examples" / "demo" / "lab-results.csv"


def demo_users(db_url: str, permits: bool = True) -> None:
    """The demo village's three industrial users (as ``examples/demo-village.toml`` names
    them), and with ``permits`` their permits imported as the CLI does."""
    import psycopg

    from limits.packs import load_pack
    from limits.permit_store import import_permit
    from limits.permits import load_permit
    with psycopg.connect(db_url) as conn:
        conn.execute("INSERT INTO sites (key, name, pack, sic, permit) VALUES "
                     "('plating', 'Lakeside Plating', 'palmyra-wi', '3471', 'PAL-IU-2026-02'), "
                     "('sausage', 'Palmyra Sausage Co.', 'palmyra-wi', '2013', 'PAL-IU-2025-01'), "
                     "('candy', 'Sweet Creek Confections', 'palmyra-wi', '2065', 'PAL-IU-2026-03')")
        if permits:
            for name in ("plating", "sausage", "candy"):
                import_permit(conn, load_permit(PERMITS / f"{name}.toml", load_pack("palmyra-wi")), actor=ADMIN)


def spoiled_demo_lab(line: int = 6, value: str = "4z0") -> bytes:
    """The demo's lab file with the value of one row spoiled (line ``line``: a number that is not one)."""
    lines = DEMO_LAB.read_bytes().splitlines(keepends=True)
    fields = lines[line - 1].split(b",")
    fields[4] = value.encode()
    lines[line - 1] = b",".join(fields)
    return b"".join(lines)
