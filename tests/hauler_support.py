"""A small grease program for the haulers' portal tests, dated from today (a report may not be
after the day it is filed, so the days move with the calendar):

- three establishments, each with an interceptor ``GI-1`` (1,000 gal, 48 in liquid depth,
  every 90 days), taken on by the program 200 days ago: ``H0001`` Corner Cafe, ``H0002``
  Dockside Diner, ``H0003`` Hilltop Bakery;
- two registered haulers: Badger Grease Service (``WI-GH-101``), hired by staff for the
  cafe's interceptor, and Lakeshore Pumping (``WI-GH-202``), hired for the diner's, and which
  pumped the bakery's 100 days ago (entered by staff: manifest ``L-BAKERY-1``), so it was
  hired for that one too;
- a portal account of each hauler (``badger`` and ``lakeshore``), made as an accepted
  invitation makes it.

The 25 % rule: 12 in of the 48 in interceptor.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg

from foundation.actor import Actor
from identity import accounts
from portal_support import ADMIN, PASSWORD

HEADER = "licence,name,address,contact,category,device,kind,capacity_gal,liquid_depth_in,location,installed," \
         "interval_days"
ESTABLISHMENTS = (("H0001", "Corner Cafe", "1 Main St", "restaurant"),
                  ("H0002", "Dockside Diner", "2 Dock St", "restaurant"),
                  ("H0003", "Hilltop Bakery", "3 Hill St", "bakery"))
BADGER, LAKESHORE = ("Badger Grease Service", "WI-GH-101"), ("Lakeshore Pumping", "WI-GH-202")
STAFF = Actor("coord", "web")


def grease_village(db_url: str, today: date | None = None) -> dict:
    """The establishments, haulers, assignments and hauler accounts above; returns the
    device ids by licence and today's date in the test villages' time zone."""
    from fog import haulers, imports, store
    from fog.rules import for_pack

    today = today or datetime.now(ZoneInfo("America/Chicago")).date()     # the office's today (its village's)
    rows = [HEADER] + [f"{lic},{name},{addr},Owner,{cat},GI-1,interceptor,1000,48,kitchen,2020-06-01,90"
                       for lic, name, addr, cat in ESTABLISHMENTS]
    with psycopg.connect(db_url, autocommit=True) as conn:
        rep = imports.import_establishments(conn, "\n".join(rows) + "\n", "licences.csv", for_pack("palmyra-wi"),
                                            STAFF, commit=True, registered_on=today - timedelta(days=200))
        assert not rep.rejected, rep.rejected
        for company, licence in (BADGER, LAKESHORE):
            store.add_hauler(conn, company, licence, STAFF)
        haulers.assign(conn, BADGER[1], "H0001", "GI-1", STAFF)
        haulers.assign(conn, LAKESHORE[1], "H0002", "GI-1", STAFF)
        store.add_pumpout(conn, {"establishment": "H0003", "device": "GI-1", "date": today - timedelta(days=100),
                                 "hauler": LAKESHORE[1], "gallons": 800, "fog_depth_in": 3, "solids_depth_in": 2,
                                 "receiving_facility": "Palmyra WWTP", "manifest": "L-BAKERY-1"}, STAFF,
                          source="office", today=today)
        for username, name, (company, licence) in (("badger", "Bea Badger", BADGER),
                                                   ("lakeshore", "Lee Lakeshore", LAKESHORE)):
            accounts.add(conn, username, name, None, PASSWORD, actor=ADMIN, kind="grease-hauler", hauler=licence,
                         portal={"email": f"{username}@example.com"})
        ids = dict(conn.execute("SELECT e.licence, d.id FROM fog_devices d JOIN fog_establishments e ON "
                                "e.id = d.establishment_id").fetchall())
        est = dict(conn.execute("SELECT licence, id FROM fog_establishments").fetchall())
    return {"today": today, "devices": ids, "establishments": est}


def served_village(services, round_village, tmp, web: str = ""):
    """The office (``sewerwatch web``) over a copy of the session's seeded village
    (tests/web_round.py) with the grease program above, its state in ``tmp`` (``web``: more lines
    of its ``[web]`` table); yields ``{"base", "db", "g"}`` (``g``: :func:`grease_village`'s),
    the copy dropped afterwards. The grease browser tests' office."""
    import web_round

    for db in web_round.clone(services, round_village[0]):
        g = grease_village(db.url)
        with web_round.served(db, tmp, web=web) as base:
            yield {"base": base, "db": db, "g": g}
