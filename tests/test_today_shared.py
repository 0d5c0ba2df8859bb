"""Many viewers of Today share one read: requests that arrive while the page's state is being
read wait for that read instead of starting their own; nothing is kept after it, and no read
begun before a write of the office's is shared after it (web.office.Office.shared)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from web.pages import today as today_page
from web_support import add_people, cheap_hashes, csrf_of, office_client, sign_in, village

pytestmark = pytest.mark.services


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def test_requests_arriving_during_a_read_share_it_and_none_after_it(db, tmp_path):
    with office_client(db, tmp_path) as c:
        office = c.office
        made, started = [], threading.Event()

        def slow():
            made.append(time.monotonic())
            n = len(made)
            started.set()
            time.sleep(0.5)
            return {"n": n}

        with ThreadPoolExecutor(10) as pool:
            first = pool.submit(office.shared, "k", slow)
            assert started.wait(5)
            rest = [pool.submit(office.shared, "k", slow) for _ in range(9)]   # all while the first reads
            values = [first.result()] + [f.result() for f in rest]
        assert len(made) == 1 and all(v == {"n": 1} for v in values)
        assert office.shared("k", slow) == {"n": 2}          # after it is done: read again, not kept

        # a write of the office's while a read runs: a request after the write is not given it
        started.clear()
        with ThreadPoolExecutor(2) as pool:
            before = pool.submit(office.shared, "k", slow)
            assert started.wait(5)
            office.wrote()
            after = pool.submit(office.shared, "k", slow)
            assert before.result() == {"n": 3} and after.result() == {"n": 4}

        # an error reaches every request that shared the read
        def broken():
            started.set()
            time.sleep(0.3)
            raise RuntimeError("no database")

        started.clear()
        with ThreadPoolExecutor(3) as pool:
            futures = [pool.submit(office.shared, "e", broken)]
            assert started.wait(5)
            futures += [pool.submit(office.shared, "e", broken) for _ in range(2)]
            for f in futures:
                with pytest.raises(RuntimeError, match="no database"):
                    f.result()


def test_a_read_kept_for_a_while_is_served_until_then_and_never_after_a_write(db, tmp_path):
    """Today keeps its read for half the refresh interval: a viewer who asks after the read is
    done, within that time, is served it; after it, or after an office write, a new read is
    made; a read that failed is not kept."""
    with office_client(db, tmp_path) as c:
        office = c.office
        made = []

        def read():
            made.append(time.monotonic())
            return {"n": len(made)}

        assert office.shared("kept", read, keep_s=0.6) == {"n": 1}
        assert office.shared("kept", read, keep_s=0.6) == {"n": 1}      # done, within the time: kept
        time.sleep(0.7)
        assert office.shared("kept", read, keep_s=0.6) == {"n": 2}      # the time passed: read again
        office.wrote()
        assert office.shared("kept", read, keep_s=0.6) == {"n": 3}      # a write came between
        assert office.shared("kept", read, keep_s=0.6) == {"n": 3}

        fails = []

        def broken():
            fails.append(1)
            raise RuntimeError("no database")

        for _ in range(2):
            with pytest.raises(RuntimeError, match="no database"):
                office.shared("broken", broken, keep_s=5.0)
        assert len(fails) == 2                                            # an error is not kept


def test_viewers_refreshing_together_cost_fewer_reads_and_an_acknowledgement_shows_at_once(db, tmp_path):
    """Twelve signed-in viewers fetch Today's live part at once, four rounds: fewer reads are made
    than requests served (some arrive while another's read runs). An acknowledgement, then Today:
    the page shows it, though other viewers keep reading meanwhile."""
    v = village(db)
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        office = c.office
        sign_in(c, "viewer")

        def fetch(_):
            r = c.get("/today/live")
            assert r.status_code == 200
            return r.text

        before = dict(office.shared_reads)
        with ThreadPoolExecutor(12) as pool:
            for _ in range(4):
                pages = list(pool.map(fetch, range(12)))
                assert all("Acme Plating" in p for p in pages)
        served = office.shared_reads["served"] - before["served"]
        made = office.shared_reads["made"] - before["made"]
        assert served == 48 and made < served, (made, served)

        sign_in(c, "inspector")
        page = c.get("/")
        stop = threading.Event()

        card = c.litestar.template_engine.engine.get_template("_site_card.html").module.site_card

        def others():            # another viewer's reads of Today, one after another
            while not stop.is_set():
                office.shared("today", lambda: today_page.gather(office, card))

        watcher = threading.Thread(target=others, daemon=True)
        watcher.start()
        try:
            r = c.post(f"/alerts/{v['alert']}/acknowledge", data={"_csrf_token": csrf_of(page.text), "note": "seen",
                                                                 "back": "today"})
            assert r.status_code == 200 and "Acknowledged by Ines Inspector" in r.text
        finally:
            stop.set()
            watcher.join(5)
    with psycopg.connect(db.url) as conn:
        assert conn.execute("SELECT state FROM alerts").fetchone()[0] == "acknowledged"
