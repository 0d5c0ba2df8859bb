"""Helpers for the portal's tests: two industrial users in a test database, the
plater's permit (copper 1.0 mg/l daily maximum), a coordinator, portal people made through
the invitation functions, lab CSVs with and without a spoiled row, and TOTP codes that are
each used once (a step the account has not used yet, waiting for the next step only when the
window's three are spent)."""

from __future__ import annotations

import time
from datetime import date, datetime, timedelta, timezone

import psycopg
import pyotp

from foundation.actor import Actor
from support import add_site_and_sensors
from identity import accounts

ADMIN = Actor("test-admin", "cli")
PASSWORD = "correct horse battery"
PERMIT = """
number = "PAL-IU-2026-02"
site = "plater"
pack = "palmyra-wi"
issued = {issued}
effective = {issued}
expires = {expires}
issued_by = "Village of Palmyra, Approving Authority"
[flow]
average_daily_gpd = 18000
maximum_daily_gpd = 30000
[[limits]]
condition = "3(a)"
analyte = "cu"
unit = "mg/l"
daily_maximum = 1.0
words = "Copper, total: 1.0 mg/l daily maximum."
[[limits]]
condition = "4"
parameter = "ph"
unit = "pH"
minimum = 6.5
maximum = 9.0
words = "The pH of the discharge shall be between 6.5 and 9.0 at all times."
[[monitoring]]
condition = "5(a)"
parameters = ["cu"]
sample_type = "composite-24h-flow"
frequency = {{ times = 1, per = "month" }}
words = "One 24-hour flow-proportional composite sample a month."
"""


def two_users(db_url: str, *, permit_days_left: int = 200, names=("Acme Plating", "Sweet Creek Confections")) -> dict:
    """Sites ``plater`` (with its permit) and ``candy``; a coordinator and a viewer."""
    add_site_and_sensors(db_url, "plater", {"ph": ("ph", "pH")})
    add_site_and_sensors(db_url, "candy", {"ph": ("ph", "pH")})
    today = datetime.now(timezone.utc).date()
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("UPDATE sites SET name = %s, sic = '3471' WHERE key = 'plater'", (names[0],))
        conn.execute("UPDATE sites SET name = %s, sic = '2065' WHERE key = 'candy'", (names[1],))
        import_permit(conn, today - timedelta(days=300), today + timedelta(days=permit_days_left))
        accounts.add(conn, "coord", "Cora Coordinator", "coordinator", PASSWORD, actor=ADMIN)
        accounts.add(conn, "viewer", "Vic Viewer", "viewer", PASSWORD, actor=ADMIN)
    return {"today": today}


def import_permit(conn, issued: date, expires: date) -> dict:
    import tomllib

    from limits.packs import load_pack
    from limits.permit_store import import_permit as store
    from limits.permits import parse_permit
    data = tomllib.loads(PERMIT.format(issued=issued.isoformat(), expires=expires.isoformat()))
    return store(conn, parse_permit(data, "test permit", load_pack("palmyra-wi")), actor="test-admin")


def person(db_url: str, site: str, username: str, name: str, *, signatory: bool, email: str | None = None) -> str | None:
    """A portal account made as an invitation makes it; its TOTP secret (a signatory's)."""
    secret = pyotp.random_base32() if signatory else None
    with psycopg.connect(db_url, autocommit=True) as conn:
        accounts.add(conn, username, name, None, PASSWORD, actor=ADMIN, kind="industrial-user", site_key=site,
                     portal={"email": email or f"{username}@example.com", "signatory": signatory,
                             "title": "Plant manager (duly authorized representative)" if signatory else None,
                             "subscriber_agreement_on": date.today() if signatory else None, "totp_secret": secret})
    return secret


def code(db_url: str, username: str, secret: str, deadline_s: float = 65.0) -> str:
    """A TOTP code of a step the account has not used (sign-in and signing each use one)."""
    totp = pyotp.TOTP(secret)
    end = time.monotonic() + deadline_s
    while True:
        with psycopg.connect(db_url) as conn:
            last = conn.execute("SELECT totp_last_step FROM web_accounts WHERE username = %s", (username,)).fetchone()[0]
        now = datetime.now(timezone.utc)
        here = totp.timecode(now)
        for step in (here - 1, here, here + 1):
            if last is None or step > last:
                # one step either side of now is accepted; keep a margin from the window's edges
                if step == here + 1 and (now.timestamp() % 30) < 3:
                    continue
                if step == here - 1 and (now.timestamp() % 30) > 27:
                    continue
                return totp.generate_otp(step)
        if time.monotonic() > end:
            raise AssertionError(f"no unused TOTP step for {username} within {deadline_s} s")
        time.sleep(0.5)


def lab_csv(site: str = "plater", *, spoiled: bool, copper: float = 1.8, days_ago: int = 10) -> bytes:
    """A lab CSV of one composite sample at ``site``: copper (above the permit's 1.0 mg/l when
    ``copper`` is), nickel and TSS; ``spoiled`` makes the nickel row's value unreadable."""
    when = (datetime.now(timezone.utc) - timedelta(days=days_ago)).replace(hour=14, minute=0, second=0, microsecond=0)
    t = when.isoformat().replace("+00:00", "Z")
    ni = "n/a" if spoiled else "0.4"
    return ("sample_id,site,collected,analyte,value,unit,qualifier,laboratory\n"
            f"P-0601,{site},{t},cu,{copper},mg/l,,Northern Lake Labs\n"
            f"P-0601,{site},{t},ni,{ni},mg/l,,Northern Lake Labs\n"
            f"P-0601,{site},{t},tss,120,mg/l,,Northern Lake Labs\n").encode()


#: A lab's report (a PDF's first bytes and enough of one for the type check: it is stored, not read).
LAB_PDF = b"%PDF-1.4\n% Northern Lake Labs report P-0601\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF\n"
