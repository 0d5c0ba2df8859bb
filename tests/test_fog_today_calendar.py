"""The grease devices on Today and in the compliance calendar and its iCalendar feed, through
the office (Litestar's test client over the real database; the calendar feed read as a
calendar program reads it, without a session).

The village: tests/hauler_support.py's small grease program, dated from today T (America/
Chicago): Corner Cafe ``H0001`` and Dockside Diner ``H0002`` taken on at T-200 and never
pumped (every 90 days: due T-110, 110 days overdue); Hilltop Bakery ``H0003`` pumped T-100
(due T-10, 10 days overdue). Then the diner's interceptor is pumped at T-80 (by hand, as the
office does): due T+10, within Palmyra's 14-day reminder window. So Today lists 3 grease
devices, 2 overdue (the cafe 110 days first, then the bakery 10) and 1 due (the diner, T+10);
the calendar's month of T+10 shows the diner's due day, and the feed (T-92 to T+400) has the
diner's due day and the bakery's overdue day as grease events (the cafe's, at T-110, is before
the feed's span). A warning letter issued today to the cafe (``fog notices issue``, for its
overdue device) is in the feed on its response deadline, T+30, awaiting the response.
"""

from __future__ import annotations

import re
from datetime import timedelta

import psycopg
import pytest
from icalendar import Calendar

import web_round
from enforcement_support import run
from hauler_support import STAFF, grease_village
from web_support import add_people, cheap_hashes, csrf_of, office_client, sign_in


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def _key(html: str, form_id: str) -> str:
    html = html[html.index(f'id="{form_id}"'):]
    return re.search(r'name="_form_key" value="([^"]+)"', html).group(1)


def test_today_and_the_calendar_list_the_grease_devices_due(db, tmp_path):
    from fog import store

    add_people(db.url)
    g = grease_village(db.url)
    t = g["today"]
    with psycopg.connect(db.url, autocommit=True) as conn:
        store.add_pumpout(conn, {"establishment": "H0002", "device": "GI-1", "date": t - timedelta(days=80),
                                 "hauler": "WI-GH-202", "gallons": 800, "fog_depth_in": 3, "solids_depth_in": 2,
                                 "receiving_facility": "Palmyra WWTP", "manifest": "L-DOCK-1"}, STAFF,
                          source="office", today=t)
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    r = run(tmp_path, db, "fog", "notices", "issue", "H0001", "--kind", "overdue", "--on", t.isoformat())
    assert r.returncode == 0, r.stderr
    letter = r.stdout.split("issued warning letter ")[1].split()[0]
    with office_client(db, tmp_path, public_url="http://office.example") as c:
        sign_in(c, "coord")
        page = c.get("/").text
        part = page[page.index('id="grease-due"'):]
        part = re.sub(r"<[^>]+>", "", part[:part.index("</section>")])
        text = " ".join(part.split())
        assert "Grease devices 3" in text and "2 overdue for pumping, 1 due within 14 days" in text
        cafe = text.index(f"OVERDUE {t - timedelta(days=110)} Corner Cafe: grease device GI-1, 110 days overdue")
        bakery = text.index(f"OVERDUE {t - timedelta(days=10)} Hilltop Bakery: grease device GI-1, 10 days overdue")
        diner = text.index(f"due {t + timedelta(days=10)} Dockside Diner: grease device GI-1 (every 90 days; last "
                           f"pumped {t - timedelta(days=80)})")
        assert cafe < bakery < diner
        assert f'href="/grease/{g["establishments"]["H0002"]}"' in page
        # the live part, as the page refreshes it
        assert "Dockside Diner</a>: grease device GI-1" in c.get("/today/live", headers={"X-Sewerwatch-Live": "1"}).text
        # the calendar's month of the diner's due day
        due = t + timedelta(days=10)
        month = c.get(f"/calendar?view=list&month={due:%Y-%m}").text
        assert "Dockside Diner: grease device GI-1 due for pumping (every 90 days; last pumped" in month
        # the feed, as a calendar program reads it
        page = c.get("/calendar").text
        r = c.post("/calendar/feed", data={"_csrf_token": csrf_of(page), "_form_key": _key(page, "feed-form")})
        url = re.search(r'id="feed-url">([^<]+)<', r.text).group(1)
        c.cookies.clear()
        feed = c.get(url.removeprefix("http://office.example"))
        assert feed.status_code == 200
        events = Calendar.from_ical(feed.content).walk("VEVENT")
        grease = {e.decoded("dtstart"): str(e.get("summary")) for e in events if str(e.get("uid")).startswith("grease:")}
        notices = [(e.decoded("dtstart"), str(e.get("summary"))) for e in events
                   if str(e.get("uid")).startswith("grease-notice:")]
        assert notices == [(t + timedelta(days=30), f"Corner Cafe: Warning letter {letter}: response due")]
        assert grease == {due: "Dockside Diner: grease device GI-1 due for pumping (every 90 days; last pumped "
                               f"{t - timedelta(days=80)})",
                          t - timedelta(days=10): "! Hilltop Bakery: grease device GI-1 10 days overdue (every 90 "
                                                  f"days; last pumped {t - timedelta(days=100)})"}
