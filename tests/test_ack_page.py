"""The acknowledgement page over plain HTTP: links that are used, expired,
changed or cut; GET never acknowledges; single use; acknowledged before by the command line;
rate limiting per client address (behind a trusted proxy too); the database down; the
access log and the console without tokens; ``[web]`` in the config.

The page runs here mounted in the office's server alone (:class:`alerts.ackpage.AckPage` in
:class:`web.server.WebServer`, on a loop of its own) against a real database; ``tests/test_ack_browser.py`` drives it in headless Chromium through
``sewerwatch run``'s pipeline.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
import time
import types
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message  # noqa: F401 - the headers type
from pathlib import Path

import pytest
from itsdangerous.encoding import base64_decode, base64_encode

from alerts import store
from alerts.ackpage import AckPage, RateLimiter
from alerts.channels import ConsoleChannel
from alerts.links import WITHHELD, AckLinks
from foundation import config as sw_config
from foundation.config import WebOptions
from foundation.errors import ConfigError
from sewerwatch.services.scratch import free_port
from support import add_site_and_sensors

KEY = "k" * 43


class Served:
    """An :class:`AckPage` mounted in the office (its one server, as ``run`` serves it), on
    a loop of its own in a thread."""

    def __init__(self, page: AckPage, tmp_path=None):
        import tempfile

        from web.office import Office
        from web.server import WebServer

        self.page = page
        state = Path(tempfile.mkdtemp(prefix="sw-ack-"))
        cfg = sw_config.from_dict({"utility": {"name": "Village of Palmyra", "timezone": "America/Chicago"},
                                   "services": {"state_dir": str(state)}}, "<tests>")
        self.server = WebServer(Office(cfg, page.opts, page.db_url, state_dir=state, ack_page=page), "c" * 32)
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        comp = types.SimpleNamespace(beat=lambda: None)
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self.server.serve(comp, self.stop),),
                                       daemon=True)
        self.thread.start()
        end = time.monotonic() + 10
        while self.server.listening is None and time.monotonic() < end:
            time.sleep(0.02)
        assert self.server.listening, "the page did not start"
        self.listening = self.server.listening

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)
        self.loop.close()


def http(url: str, data: dict | None = None, headers: dict | None = None) -> tuple[int, str, "Message"]:
    """(status, body, headers) of a GET, or a POST of the form ``data``."""
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    req = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), r.headers       # case-insensitive, as HTTP is
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers


def _alert(db, site="plater") -> int:
    """One open violation alert with the record the manager writes."""
    ids = add_site_and_sensors(db.url, site, {"ph": ("ph", "pH")})
    rec = {"site": site, "sensor": "ph", "parameter": "ph", "rule": "ph-min", "kind": "range",
           "start": "2026-06-01T15:30:00Z", "end": None, "last": "2026-06-01T15:40:00Z", "peak": 3.468,
           "peak_time": "2026-06-01T15:35:00Z", "limit": 6.0, "unit": "pH", "comparison": "lower than",
           "citation": "Village of Palmyra Code §13.48(2)(g)",
           "words": "No user shall discharge wastewater with a pH lower than 6.0", "pack": "palmyra-wi"}
    with db.connect() as conn:
        conn.execute("UPDATE sites SET name = 'Acme Plating' WHERE key = %s", (site,))
        return conn.execute(
            "INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, details) SELECT 'violation', "
            "site_id, id, 'ph-min', 'notified', 'Acme Plating: pH 3.468 pH', %s FROM sensors WHERE id = %s "
            "RETURNING id", (json.dumps(rec), ids["ph"])).fetchone()[0]


def _page(db_url: str, port: int = 0, **web) -> tuple[AckPage, AckLinks]:
    opts = WebOptions(port=port, **web)
    links = AckLinks(KEY, "http://127.0.0.1:1", 3600.0)
    page = AckPage(opts, links, db_url, tz="America/Chicago", utility="Village of Palmyra")
    return page, links


def _on(served: Served, url: str) -> str:
    """A link made for the public address, sent to where the page listens."""
    return served.listening + url[url.index("/ack/"):]


def test_get_never_acknowledges_post_does_once(db, caplog):
    caplog.set_level(logging.DEBUG)
    aid = _alert(db)
    page, links = _page(db.url)
    served = Served(page)
    try:
        url = _on(served, links.url(aid, None, "open"))
        token = url.rsplit("/", 1)[1]
        for _ in range(2):      # a mail scanner, then the person
            status, body, headers = http(url)
            assert status == 200 and 'id="ack-form"' in body
        assert "Acme Plating" in body and "3.468 pH" in body and "lower than 6 pH" in body
        assert "Village of Palmyra Code §13.48(2)(g)" in body and "with a pH lower than 6.0" in body
        assert "2026-06-01 10:30:00 CDT" in body                      # start, in the village's time
        assert headers["Cache-Control"] == "no-store" and headers["Referrer-Policy"] == "no-referrer"
        assert "<script" not in body and "http" not in body.split("</style>")[0].split("<style>")[1]
        with db.connect() as conn:
            assert conn.execute("SELECT acknowledged_by FROM alerts WHERE id = %s", (aid,)).fetchone()[0] is None
        # no name: refused, said on the page, nothing written
        status, body, _ = http(url, {"name": "  ", "note": "x"})
        assert status == 400 and "Please give your name" in body
        status, body, _ = http(url, {"name": "Pat <b>Jones</b>", "note": "called the plant"})
        assert status == 200 and f"Alert #{aid} is acknowledged by Pat &lt;b&gt;Jones&lt;/b&gt;" in body
        assert 'id="ack-form"' not in body
        # the same link again: used, by whom and when; a second POST changes nothing
        status, body, _ = http(url)
        assert status == 410 and "This link has been used" in body and "by Pat &lt;b&gt;Jones&lt;/b&gt; at" in body
        status, body, _ = http(url, {"name": "Mallory", "note": ""})
        assert status == 410 and "Mallory" not in body
        with db.connect() as conn:
            row = conn.execute("SELECT state, acknowledged_by, ack_note FROM alerts WHERE id = %s", (aid,)).fetchone()
            used = conn.execute("SELECT token_id, used_by FROM ack_links_used").fetchall()
            audit = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'alert-acknowledged'").fetchall()
        assert row == ("acknowledged", "Pat <b>Jones</b>", "called the plant")
        assert len(used) == 1 and used[0][1] == "Pat <b>Jones</b>" and used[0][0] not in token   # the id, not the link
        assert audit == [("Pat <b>Jones</b>", {"from": "notified", "to": "acknowledged", "note": "called the plant",
                                                "via": "link"})]
    finally:
        served.close()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "/ack/" + WITHHELD in logged and token not in logged and token[:20] not in logged


def test_acknowledged_before_expired_changed_and_cut_links(db):
    aid = _alert(db)
    page, links = _page(db.url)
    served = Served(page)
    try:
        # acknowledged on the command line first: the link says by whom, and stays unused
        url = _on(served, links.url(aid, None, "escalate"))
        with db.connect() as conn:
            assert store.acknowledge(conn, aid, "Chris (CLI)", None) == ("notified", None)
        status, body, _ = http(url)
        assert status == 200 and "Acknowledged by Chris (CLI) at" in body and 'id="ack-form"' not in body
        status, body, _ = http(url, {"name": "Pat", "note": ""})
        assert status == 409 and "had already been acknowledged by Chris (CLI)" in body
        with db.connect() as conn:
            assert conn.execute("SELECT count(*) FROM ack_links_used").fetchone()[0] == 0
        # a genuine link made 25 hours ago
        old = AckLinks(KEY, links.base_url, 3600.0, clock=lambda: time.time() - 25 * 3600)
        status, body, _ = http(_on(served, old.url(aid, None, "open")))
        assert status == 410 and "This link has expired" in body and f"link for alert #{aid} expired at" in body
        assert f"sewerwatch alerts ack {aid} --by NAME" in body
        # changed: another alert's number under the first link's signature
        token = links.token(aid, None, "open")
        payload, rest = token.split(".", 1)
        claims = json.loads(base64_decode(payload))
        forged = base64_encode(json.dumps({**claims, "a": aid + 1}, separators=(",", ":"))).decode() + "." + rest
        assert links.read(token).alert_id == aid and forged != token
        for bad in (forged, token[: len(token) // 2], "not-a-token", AckLinks("x" * 43, "", 60).token(aid, None, "open")):
            status, body, _ = http(served.listening + "/ack/" + bad, {"name": "Eve", "note": ""})
            assert status == 400 and "This link is not valid" in body and "Eve" not in body
        status, body, _ = http(served.listening + "/elsewhere")
        assert status == 404 and "There is nothing here" in body and "Traceback" not in body
        status, body, _ = http(url, {"name": "Pat", "note": "x" * 20_000})     # more than a form's worth
        assert status == 413 and "The request was refused" in body
    finally:
        served.close()
    assert page.stats["refused"] == 4 and page.stats["expired"] == 1


def test_rate_limited_per_client_address(db):
    aid = _alert(db)
    page, links = _page(db.url, rate_per_min=60.0, rate_burst=3)
    served = Served(page)
    try:
        url = _on(served, links.url(aid, None, "open"))
        assert [http(url)[0] for _ in range(3)] == [200, 200, 200]
        status, body, headers = http(url)
        assert status == 429 and "Too many requests" in body and int(headers["Retry-After"]) >= 1
        # behind the (trusted, loopback) reverse proxy each client has a bucket of its own
        assert http(url, headers={"X-Forwarded-For": "203.0.113.7"})[0] == 200
        assert [http(url, headers={"X-Forwarded-For": "198.51.100.1, 203.0.113.7"})[0] for _ in range(3)] == [200, 200, 429]
        # a claimed address from an untrusted peer is not believed (the peer is the client)
        served.page.proxies = []
        assert http(url, headers={"X-Forwarded-For": "192.0.2.99"})[0] == 429
        time.sleep(1.05)                  # a second later one more request is allowed
        assert http(url)[0] == 200
    finally:
        served.close()
    assert page.stats["rate_limited"] == 3


def test_rate_limiter_refills_and_forgets():
    now = [0.0]
    rl = RateLimiter(per_min=6.0, burst=2, clock=lambda: now[0])
    assert [rl.take("a"), rl.take("a")] == [0.0, 0.0]
    assert rl.take("a") == pytest.approx(10.0)      # one request every 10 s
    now[0] = 10.0
    assert rl.take("a") == 0.0 and rl.take("b") == 0.0


def test_database_down_said_on_the_page(db):
    page, links = _page(f"postgresql://nobody:x@127.0.0.1:{free_port()}/nothing")
    served = Served(page)
    try:
        url = _on(served, links.url(7, None, "open"))
        status, body, _ = http(url)
        assert status == 503 and "The alert database cannot be reached" in body and "Traceback" not in body
        status, body, _ = http(url, {"name": "Pat", "note": ""})
        assert status == 503 and "NOTHING WAS ACKNOWLEDGED" in body and "has not been used" in body
    finally:
        served.close()


def test_console_channel_withholds_links():
    out = io.StringIO()
    links = AckLinks(KEY, "https://sewer.example.org/sw", 3600.0)
    url = links.url(3, None, "open")
    ConsoleChannel(out).send("title", f"Acknowledge from your phone: {url}\nmore", {})
    assert url not in out.getvalue() and "https://sewer.example.org/sw/ack/<token withheld>" in out.getvalue()


def test_web_table_in_the_config():
    cfg = sw_config.from_dict({"web": {"port": 8471, "public_url": "https://sewer.example.org/sw/",
                                       "link_lifetime_h": 12}}, "<test>")
    assert cfg.web.link_base == "https://sewer.example.org/sw" and cfg.web.bind == "127.0.0.1"
    assert sw_config.from_dict({}, "<test>").web is None            # no [web]: no page, no links
    assert sw_config.from_dict({"web": {}}, "<test>").web.link_base == "http://127.0.0.1:8470"
    for web, key, words in (({"bind": "sewer.example.org"}, "web.bind", "expected an IP address"),
                            ({"public_url": "sewer.example.org"}, "web.public_url", "expected a URL"),
                            ({"trusted_proxies": ["10.0.0.0/8", "proxy"]}, "web.trusted_proxies", "not an IP"),
                            ({"secret": "x"}, "web.secret", "unknown key")):
        with pytest.raises(ConfigError, match=words) as e:
            sw_config.from_dict({"web": web}, "v.toml")
        assert key in str(e.value)
