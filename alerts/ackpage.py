"""The acknowledgement page ``sewerwatch run`` serves.

A superintendent opens the link of an alert message on a phone (:mod:`alerts.links`):

* ``GET /ack/<token>`` shows the alerts not resolved, with the ordinance's words and
  citation and the evidence (value, limit, start, peak, site), and for the link's alert a
  form with a name and a note. A GET never acknowledges anything (mail scanners open links
  before people do).
* ``POST /ack/<token>`` acknowledges the link's alert as ``sewerwatch alerts ack`` does
  (:func:`alerts.store.acknowledge`, via :func:`alerts.store.acknowledge_by_link`, which
  records the link as used in the same transaction); the running alert manager reads
  acknowledgements every second and stops the escalation.
* A used link says who acknowledged with it and when; an expired one says so and what to do;
  one that is not sewerwatch's (bad signature, changed, cut) is refused; every client address
  gets ``[web] rate_per_min`` requests a minute after a burst of ``rate_burst`` (429 with a
  page saying when to try again).
* The database down: the page says so (503), and nothing is acknowledged. An acknowledgement
  is the record of who took the alert in hand; it is written to the database or not at all,
  and the link stays unused so it can be tried again. (The manager's outbox holds the
  manager's own writes; an acknowledgement also has to be seen by ``sewerwatch alerts``, the
  digest and a restarted run, which read the database.)

The page is served by the office's web application (``web/``, one server, one
port, one supervised component ``web`` of ``run``), which mounts :meth:`AckPage.get` and
:meth:`AckPage.post` at ``/ack/<token>`` without a session (the token is the capability)
and without the office's CSRF check (there is no session to ride on). This module knows no
web framework: each request is a call that returns a :class:`Reply`. It is meant to listen
on the loopback address behind the utility's reverse proxy, which terminates TLS;
``[web] trusted_proxies`` are the peers whose ``X-Forwarded-For`` names the client for the
rate limit (:func:`foundation.clients.client_address`). The access log never shows a token
(:func:`alerts.links.redact`). Plain HTML and CSS in one template (``templates/ack.html``,
Jinja2 with autoescaping), no external assets, no scripts.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from jinja2 import Environment, FileSystemLoader, select_autoescape

from alerts import store
from alerts.content import HEALTH_WORDS, PARAMETER_NAMES, local_time, with_unit
from alerts.links import PATH, AckLinks, Claims, LinkExpired, LinkInvalid, redact
from foundation.clients import client_address, networks

log = logging.getLogger("sewerwatch.web")
access_log = logging.getLogger("sewerwatch.web.access")

#: Longest name and note the form takes [characters].
NAME_MAX, NOTE_MAX = 100, 2000
#: Largest request body [bytes] (a form with a name and a note).
BODY_MAX = 16 * 1024
#: Client addresses the rate limiter remembers at most (the fullest buckets are forgotten first).
CLIENTS_MAX = 10_000

#: Sent with every page: never cached, never framed, no referrer (the token is in the URL),
#: nothing loaded from elsewhere.
HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": ("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                "base-uri 'none'; frame-ancestors 'none'"),
}

_templates = Environment(loader=FileSystemLoader(Path(__file__).parent / "templates"),
                         autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)


@dataclass
class Reply:
    """One response of the page: status, the HTML, and headers (:data:`HEADERS` and more)."""

    status: int
    html: str
    headers: dict = field(default_factory=dict)


class DatabaseDown(Exception):
    """The alert database could not be reached (the text says why, without a token)."""


class RateLimiter:
    """A token bucket per client address: ``burst`` requests at once, then ``per_min`` a minute.

    Written here (a few lines) rather than taken from a library: the page wants a burst and
    then a steady rate per address (Litestar's rate limit counts fixed windows), and the
    maintained Python rate-limit library is named ``limits``, the import name of this
    project's own ordinance package.
    """

    def __init__(self, per_min: float, burst: int, clock=time.monotonic):
        self.rate = per_min / 60.0          # [requests/s]
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}   # client -> (tokens, at)

    def take(self, client: str) -> float:
        """Take one request for ``client``: 0.0 when allowed, else the seconds until it would be."""
        now = self.clock()
        tokens, at = self._buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens < 1.0:
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate
        self._buckets[client] = (tokens - 1.0, now)
        if len(self._buckets) > CLIENTS_MAX:
            self._forget(now)
        return 0.0

    def _forget(self, now: float) -> None:
        """Forget the clients whose buckets are full again (they lose nothing by it)."""
        for client, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * self.rate >= self.burst:
                del self._buckets[client]


class AckPage:
    """The acknowledgement page of one utility.

    Parameters
    ----------
    opts : foundation.config.WebOptions
        ``[web]``: bind address and port, rate limits, trusted proxies.
    links : alerts.links.AckLinks
        Reads the links (the same key and lifetime the alert manager makes them with).
    db_url : str
        The alert database (owner role: acknowledging writes ``alerts`` and ``audit_log``).
    tz : str
        The village's time zone (times are shown in it).
    utility : str
        The utility's name (page header).
    """

    def __init__(self, opts, links: AckLinks, db_url: str, *, tz: str, utility: str, clock=time.monotonic):
        self.opts, self.links, self.db_url, self.tz, self.utility = opts, links, db_url, tz, utility
        self.limiter = RateLimiter(opts.rate_per_min, opts.rate_burst, clock)
        self.proxies = networks(opts.trusted_proxies)
        self.stats = {"requests": 0, "acknowledged": 0, "rate_limited": 0, "refused": 0, "expired": 0,
                      "database_down": 0}

    def status(self) -> dict:
        return {"public_url": self.links.base_url, "link_lifetime_h": self.links.lifetime_s / 3600.0, **self.stats}

    # -- requests ----------------------------------------------------------------------------

    def client_of(self, peer: str | None, forwarded_for: list[str]) -> str:
        """The client's address: the peer, or behind a trusted proxy the last address in
        ``X-Forwarded-For`` that is not a trusted proxy."""
        return client_address(peer, forwarded_for, self.proxies)

    async def get(self, token: str, client: str) -> Reply:
        """``GET /ack/<token>``: the page of a link (never acknowledges)."""
        return await self._guard(client, "GET", lambda: self._get(token))

    async def post(self, token: str, form: dict, client: str) -> Reply:
        """``POST /ack/<token>``: acknowledge with the form's ``name`` and ``note``."""
        return await self._guard(client, "POST", lambda: self._post(token, form))

    def refused(self, status: int, reason: str) -> Reply:
        """The page of a request refused before it reached the page (too large, bad method)."""
        what = "There is nothing here." if status in (404, 405) else f"The request was refused: {reason}."
        return self._with_headers(self._page(status, reason, tone="bad", message=[
            what, "Open the link from an alert message."]))

    def _with_headers(self, reply: Reply) -> Reply:
        reply.headers.update(HEADERS)
        return reply

    async def _guard(self, client: str, method: str, handler) -> Reply:
        """Rate limit, safety headers, and no traceback ever shown (or a token logged)."""
        self.stats["requests"] += 1
        wait = self.limiter.take(client)
        if wait > 0:
            self.stats["rate_limited"] += 1
            seconds = max(1, math.ceil(wait))
            resp = self._page(429, "Too many requests", tone="bad", message=[
                "This address has opened the acknowledgement page too often in a short time.",
                f"Wait {seconds} second{'s' if seconds != 1 else ''} and open the link again."])
            resp.headers["Retry-After"] = str(seconds)
        else:
            try:
                resp = await handler()
            except Exception as exc:  # noqa: BLE001 - one line, never a traceback on the page
                log.error("acknowledgement page: %s %s failed: %s: %s", method, PATH + "<token withheld>",
                          type(exc).__name__, redact(str(exc)).splitlines()[0] if str(exc) else "")
                resp = self._page(500, "Something went wrong", tone="bad", message=[
                    "The page could not be made. Nothing was acknowledged.",
                    "Try again in a minute, or use: sewerwatch alerts ack ID --by NAME."])
        return self._with_headers(resp)

    async def _get(self, token: str):
        claims = self._claims(token)
        if isinstance(claims, Reply):
            return claims
        return await self._show(claims)

    async def _post(self, token: str, form: dict):
        claims = self._claims(token)
        if isinstance(claims, Reply):
            return claims
        name, note = str(form.get("name", "")).strip(), str(form.get("note", "")).strip()
        error = None
        if not name:
            error = "Please give your name: the acknowledgement records who took the alert in hand."
        elif len(name) > NAME_MAX or len(note) > NOTE_MAX:
            error = f"The name may have at most {NAME_MAX} characters and the note {NOTE_MAX}."
        if error:
            return await self._show(claims, form={"error": error, "name": name[:NAME_MAX], "note": note[:NOTE_MAX]},
                                    status=400)

        def ack(conn):
            alert_id = store.alert_of_link(conn, claims.alert_id, claims.uid)
            if alert_id is None:
                return None, None
            return alert_id, store.acknowledge_by_link(conn, claims.token_id, alert_id, name, note or None)

        try:
            alert_id, res = await self._db(ack)
        except DatabaseDown as exc:
            return self._db_down(exc, acknowledging=True)
        if alert_id is None:
            return self._not_recorded(claims)
        if res["outcome"] == "link-used":
            return await self._show(claims)
        if res["outcome"] == "already":
            return await self._show(claims, status=409, message=[
                f"Alert #{alert_id} had already been acknowledged by {res['by']} at {self._time(res['at'])}.",
                "Nothing was changed; this link was not used."], tone="warn")
        self.stats["acknowledged"] += 1
        log.info("alert #%d acknowledged by %s on the acknowledgement page", alert_id, name)
        return await self._show(claims, status=200, message=[
            f"Alert #{alert_id} is acknowledged by {name}.",
            "Its escalation stops: sewerwatch sees the acknowledgement within a second.",
            "This link has now been used; the alert stays open until the discharge is over."], tone="ok",
            just_acknowledged=True)

    def _claims(self, token: str) -> Claims | Reply:
        """The link's claims, or the page that refuses it."""
        try:
            return self.links.read(token)
        except LinkExpired as exc:
            self.stats["expired"] += 1
            c = exc.claims
            which = f"alert #{c.alert_id}" if c.alert_id is not None else "this alert"
            cmd = f"sewerwatch alerts ack {c.alert_id if c.alert_id is not None else 'ID'} --by NAME"
            return self._page(410, "This link has expired", tone="bad", message=[
                f"The acknowledgement link for {which} expired at {self._time(exc.expired_at)} "
                f"(links work for {self.links.lifetime_s / 3600:g} hours).",
                "Nothing was acknowledged. Use the link in a newer message about this alert "
                "(an escalation brings a new one), or acknowledge it where sewerwatch runs: " + cmd + "."])
        except LinkInvalid:
            self.stats["refused"] += 1
            return self._page(400, "This link is not valid", tone="bad", message=[
                "This is not an acknowledgement link sewerwatch made: it may have been changed or cut off "
                "when it was copied.",
                "Nothing was acknowledged. Open the link from the alert message again, whole."])

    async def _show(self, claims: Claims, *, form: dict | None = None, status: int = 200,
                    message: list[str] | None = None, tone: str = "", just_acknowledged: bool = False):
        """The page of a genuine link: the link's state, the open alerts, the form."""
        def read(conn):
            alert_id = store.alert_of_link(conn, claims.alert_id, claims.uid)
            if alert_id is None:
                return None, None, []
            return alert_id, store.link_used(conn, claims.token_id), store.page_alerts(conn, also=alert_id)

        try:
            alert_id, used, rows = await self._db(read)
        except DatabaseDown as exc:
            return self._db_down(exc, acknowledging=False)
        if alert_id is None:
            return self._not_recorded(claims)
        title = f"Alert #{alert_id}"
        if used is not None and not just_acknowledged:
            status, tone = 410, "warn"
            title = "This link has been used"
            message = [f"Alert #{alert_id} was acknowledged with this link by {used['used_by']} at "
                       f"{self._time(used['used_at'])}.",
                       "Each link works once. Nothing else needs doing here."]
        views = [self._alert_view(r, target=r["id"] == alert_id) for r in rows]
        target = next((v for v in views if v["target"]), None)
        if used is None and not just_acknowledged and target is not None and not target["acknowledged"]:
            form = {"name": "", "note": "", "error": None, **(form or {})}
            form.update(name_max=NAME_MAX, note_max=NOTE_MAX)
        else:
            form = None
        views.sort(key=lambda v: not v["target"])
        return self._page(status, title, message=message, tone=tone, alerts=views, form=form,
                          alerts_heading="Open alerts" if len(views) > 1 else "The alert",
                          alerts_empty=None if views else "No open alerts.")

    def _not_recorded(self, claims: Claims):
        return self._page(404, "Alert not recorded yet", tone="warn", message=[
            "This alert went out while the alert database could not be reached, and it is not recorded yet.",
            "Try the link again in a few minutes; it works until it expires."])

    def _db_down(self, exc: Exception, acknowledging: bool):
        self.stats["database_down"] += 1
        lines = ["The alert database cannot be reached just now, so the open alerts cannot be shown."]
        if acknowledging:
            lines = ["The alert database cannot be reached just now: NOTHING WAS ACKNOWLEDGED, and the "
                     "alert may still escalate to the next contacts."]
        lines.append("Your link has not been used: try it again in a few minutes (it works until it expires). "
                     "Alerts keep going out meanwhile.")
        return self._page(503, "Database unreachable", tone="bad", message=lines)

    async def _db(self, work):
        """``work(conn)`` on a new autocommit connection, in a worker thread."""
        def run():
            try:
                with psycopg.connect(self.db_url, autocommit=True, connect_timeout=3) as conn:
                    return work(conn)
            except psycopg.OperationalError as exc:
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise DatabaseDown(text) from None

        try:
            return await asyncio.get_running_loop().run_in_executor(None, run)
        except DatabaseDown as exc:
            log.warning("acknowledgement page: the database is unreachable: %s", exc)
            raise

    # -- what the page shows -------------------------------------------------------------------

    def _time(self, t) -> str:
        if t is None:
            return "an unknown time"
        if isinstance(t, (int, float)):
            t = store.ts(t)
        return local_time(t, self.tz)     # an aware datetime or an ISO-8601 text

    def _alert_view(self, r: dict, target: bool) -> dict:
        """One alert as the page shows it: heading, evidence (the episode as it is now), the
        ordinance's words."""
        d = current_episode(r["details"] or {}, r.get("episode"))
        site = r["site_name"] or r["site"] or d.get("site") or ""
        view = {"id": r["id"], "state": r["state"], "target": target, "heading": r["summary"] or r["rule"],
                "evidence": [], "words": None, "citation": None, "acknowledged": None}
        if r["acknowledged_by"]:
            view["acknowledged"] = (f"Acknowledged by {r['acknowledged_by']} at {self._time(r['acknowledged_at'])}"
                                    + (f": {r['ack_note']}" if r["ack_note"] else ""))
        ev = view["evidence"]
        if r["kind"] == "violation" and "parameter" in d:
            param = PARAMETER_NAMES.get(d["parameter"], d["parameter"])
            unit = d.get("unit") or ""
            view["heading"] = f"{param} at {site}"
            ev += [("Site", f"{site} ({d.get('site', '')})" if d.get("site") and d.get("site") != site else site),
                   ("Sensor", f"{d.get('site', '')}/{d.get('sensor', '')}"),
                   ("Value", f"{with_unit(d.get('peak'), unit)} (the most extreme reading)"),
                   ("Limit", f"{d.get('comparison') or ''} {with_unit(d.get('limit'), unit)}".strip()),
                   ("Started", self._time(d.get("start")))]
            if d.get("peak_time"):
                ev.append(("Peak at", self._time(d["peak_time"])))
            ev.append(("Ended", self._time(d["end"]) if d.get("end") else "still going"))
            if d.get("readings"):
                ev.append(("Readings", f"{d['readings']} beyond the limit"))
            if d.get("kind") == "slug" and d.get("average") is not None:
                ev.append(("Baseline", f"{with_unit(d['average'], unit)} ({d.get('baseline') or '24-hour average'})"))
            if r.get("episodes") and r["episodes"] > 1:
                ev.append(("Episodes", str(r["episodes"])))
            view["words"], view["citation"] = d.get("words"), d.get("citation")
        elif r["kind"] == "sensor-health":
            what = HEALTH_WORDS.get(r["rule"], r["rule"])
            subject = d.get("device") or f"{d.get('site', '')}/{d.get('sensor', '')}"
            view["heading"] = f"{what[:1].upper()}{what[1:]}: {d.get('device') or d.get('sensor', '')} at {site}"
            ev += [("Site", site), ("Device" if d.get("device") else "Sensor", subject), ("Condition", what)]
            if d.get("since"):
                ev.append(("Since", self._time(d["since"])))
            if d.get("detail"):
                ev.append(("Detail", str(d["detail"])))
        else:
            ev += [("Kind", r["kind"]), ("Opened", self._time(r["opened_at"]))]
            view["citation"] = d.get("citation")
        return view

    def _page(self, status: int, title: str, *, message: list[str] | None = None, tone: str = "",
              alerts=(), form=None, alerts_heading: str = "", alerts_empty: str | None = None) -> Reply:
        text = _templates.get_template("ack.html").render(
            title=title, utility=self.utility, message=message, tone=tone, alerts=list(alerts), form=form,
            alerts_heading=alerts_heading, alerts_empty=alerts_empty)
        return Reply(status, text)


def current_episode(details: dict, episode: dict | None) -> dict:
    """An alert's details with its episode as it is now: the peak, its
    time, the readings beyond the limit and the end from the violations row ``run`` keeps
    current (:data:`alerts.store.PAGE_SQL`), over what they were when the alert opened."""
    if not episode:
        return details
    ev = episode.get("evidence") or {}
    out = dict(details)
    if episode.get("peak") is not None:
        out["peak"] = episode["peak"]
    for key in ("peak_time", "readings", "duration_s"):
        if ev.get(key) is not None:
            out[key] = ev[key]
    if episode.get("start"):
        out["start"] = episode["start"]
    out["end"] = episode.get("end")
    return out
