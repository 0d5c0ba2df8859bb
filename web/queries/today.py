"""What the Today page shows, read in a few set-based queries.

Every industrial user with its sensors (last value, its age and unit, the limits it is
judged against and how close it is), its open episodes (start, peak), its devices' health;
the open alerts; what is due or overdue this week; and the problems that make a banner
(:mod:`web.queries.health`). The SQL here is what ``benchmarks/web.py`` runs bare as the
page's peer (:data:`SQL`).
"""

from __future__ import annotations

import math
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from markupsafe import Markup, escape

from foundation.units import CANONICAL
from web import formats
from web.queries import alerts as alerts_q
from limits.packs import load_pack
from limits.permits import continuous, renewal, site_rules

#: A sensor is stale when its last reading is older than this many sample intervals, and at
#: least :data:`STALE_MIN_S` (as ``dash_site_status``, migration 0050).
STALE_INTERVALS = 10
STALE_MIN_S = 300.0
#: Above this many industrial users, those in compliance are one row each (cards for the rest).
CARDS_MAX = 12
#: "This week": due within this many days, or overdue.
WEEK_DAYS = 7

#: The order of the users on the page, by state.
STATE_ORDER = {"violation": 0, "attention": 1, "no-data": 2, "ok": 3}

SQL = {
    "sites": "SELECT id, key, name, pack, sic FROM sites ORDER BY name, key",
    "sensors": """
        SELECT s.id, s.site_id, s.name, s.parameter, s.unit, s.source, s.interval_s,
               last.time, last.value, last.quality, now()
        FROM sensors s
        LEFT JOIN LATERAL (SELECT r.time, r.value, r.quality FROM readings r
                           WHERE r.sensor_id = s.id ORDER BY r.time DESC LIMIT 1) last ON true
        ORDER BY s.site_id, s.name""",
    "episodes": """
        SELECT id, site_id, sensor_id, parameter, rule, start_time, end_time, peak, limit_value, unit, citation,
               evidence->>'peak_time'
        FROM violations WHERE end_time IS NULL AND source = 'stream' ORDER BY start_time""",
    "recent": """
        SELECT site_id, count(*) FROM violations WHERE start_time > now() - interval '30 days' GROUP BY site_id""",
    "alerts": """
        SELECT a.id, a.kind, a.state, a.rule, a.summary, a.details, a.opened_at, a.acknowledged_at,
               a.acknowledged_by, a.ack_note, a.episodes, a.site_id, s.key, s.name
        FROM alerts a LEFT JOIN sites s ON s.id = a.site_id
        WHERE a.state <> 'resolved' ORDER BY a.opened_at DESC, a.id DESC LIMIT 200""",
    "devices": "SELECT device, site_key, state, last_good_at, last_error FROM device_health ORDER BY device",
}

ALERT_COLS = ("id", "kind", "state", "rule", "summary", "details", "opened_at", "acknowledged_at", "acknowledged_by",
              "ack_note", "episodes", "site_id", "site", "site_name")


@dataclass(slots=True)
class Limit:
    """One limit a sensor is judged against, and where its last value stands."""

    rule: str
    comparison: str
    value: float               # [canonical unit]
    op: str
    citation: str
    margin: float | None = None    # how far inside the limit the last value is [unit]; < 0 beyond it
    beyond: bool = False


@dataclass(slots=True)
class SensorView:
    id: int
    name: str
    parameter: str
    unit: str
    source: str
    interval_s: float | None
    last_time: datetime | None
    last_value: float | None
    quality: int | None
    age_s: float | None
    stale: bool
    episode: dict | None = None
    # in words, made once here rather than by the template (600 sensors a page)
    value_text: str = ""
    age_text: str = ""
    limits: list[Limit] | None = None      # a card's sensors: set by detail()
    slug: str | None = None
    gauge: "Gauge | None" = None
    limits_text: str = ""
    margin_text: str = ""
    beyond: bool = False
    citation: str = ""
    cell: str = ""                          # its cell in the row of a user in compliance (escaped)

    @classmethod
    def of(cls, row, now: datetime) -> "SensorView":
        """The sensor of a :data:`SQL` ``sensors`` row at ``now``, its value and age in words."""
        sid, _, name, parameter, unit, source, interval_s, t, v, q, _ = row
        unit = CANONICAL.get(parameter, unit)
        if t is None:
            age, stale, age_text = None, True, "no reading yet"
        else:
            age = max(0.0, (now - t).total_seconds())
            stale = age > max(STALE_MIN_S, STALE_INTERVALS * (interval_s or 60.0))
            age_text = f"{formats.age(age)} ago"
        value_text = formats.num(v, unit)
        view = cls(sid, name, parameter, unit, source, interval_s, t, v, q, age, stale, None, value_text, age_text)
        view.cell = f"<td>{_escaped(name)} {_escaped(value_text)} · {age_text}</td>"
        return view

    def detail(self, rules) -> None:
        """The limits it is judged against and where the value stands (a card's sensors)."""
        self.limits, self.slug = sensor_limits(rules, self.parameter, self.last_value)
        self.gauge = gauge(self.limits, self.last_value)
        self.limits_text = " or ".join(f"{lim.comparison} {formats.num(lim.value, self.unit)}" for lim in self.limits)
        self.citation = self.limits[0].citation if self.limits else ""
        near = min((lim for lim in self.limits if lim.margin is not None), key=lambda lim: lim.margin, default=None)
        self.beyond = bool(self.episode) or (near is not None and near.beyond)
        if near is not None:
            self.margin_text = (f"beyond the limit by {formats.num(-near.margin, self.unit)}" if near.beyond
                                else f"{formats.num(near.margin, self.unit)} inside the limit")


@dataclass(slots=True)
class SiteView:
    id: int
    key: str
    name: str
    pack: str
    sic: str | None
    #: the stored permit's number (never the config's), and the permit in words
    permit: str | None = None
    permit_text: str = ""
    sensors: list[SensorView] = field(default_factory=list)
    episodes: list[dict] = field(default_factory=list)
    devices: list[dict] = field(default_factory=list)
    alerts: int = 0
    violations_30d: int = 0

    state: str = ""
    row_html: str = ""
    card_html: str = ""       # its card, when :func:`read` was given the page's ``card``

    def row(self, base: str) -> None:
        """The site as one row of the table of those in compliance, made here (escaped by
        markupsafe) rather than by the template: above 12 users most of the page is rows.
        Each sensor's cell is made with its view, as its row arrives (:meth:`SensorView.of`);
        what does not change from one refresh to the next (the site's link and name, each
        sensor's name) is escaped once (:func:`_escaped`)."""
        cells = "".join([s.cell for s in self.sensors])
        self.row_html = Markup(f"{_row_head(base, self.key, self.name)}{cells}</tr>")

    def judge(self) -> str:
        """``violation``, ``attention`` (stale, implausible, device down, open alert) or ``ok``."""
        if self.episodes:
            return "violation"
        if self.alerts or any(s.stale or (s.quality or 0) != 0 for s in self.sensors) or \
                any(d["state"] == "down" for d in self.devices):
            return "attention"
        if not self.sensors or all(s.last_time is None for s in self.sensors):
            return "no-data"
        return "ok"


@lru_cache(maxsize=8192)
def _escaped(text: str) -> str:
    """``text`` escaped for HTML (names and values repeat from one refresh to the next)."""
    return str(escape(text))


@lru_cache(maxsize=4096)
def _row_head(base: str, key: str, name: str) -> str:
    key = escape(key)
    return f'<tr id="site-{key}"><th scope="row"><a href="{escape(base)}/sites/{key}">{escape(name)}</a></th>'


#: A stored permit's state (:func:`limits.permits.renewal`) in words; in force says nothing.
PERMIT_STATE_WORDS = {"in-force": "", "renewal-due": "renewal due", "expires-soon": "ends soon",
                      "expired": "expired", "not-yet-effective": "not yet in effect"}


def permit_words(permit, today) -> str:
    """A site's stored permit in words for Today's card: its number and, unless it is in force,
    its state with the day (``permit PAL-IU-2025-01, expired 2026-10-31``); without a stored
    permit ``no permit on file`` (the config's number is never shown as a permit).

    Parameters
    ----------
    permit : limits.permits.Permit or None
        The site's current stored permit (:func:`limits.permit_store.current_permits`).
    today : datetime.date
        The day the state is read on.
    """
    if permit is None:
        return "no permit on file"
    st = renewal(permit, today)
    if st.state == "expired":
        return f"permit {permit.number}, expired {st.ends.isoformat()}"
    if st.state == "expires-soon":
        return f"permit {permit.number}, ends {st.ends.isoformat()}"
    if st.state == "renewal-due":
        return f"permit {permit.number}, renewal due: term ends {st.term_end.isoformat()}"
    if st.state == "not-yet-effective":
        return f"permit {permit.number}, takes effect {permit.effective.isoformat()}"
    return f"permit {permit.number}"


_RULES: dict = {}


def site_continuous_rules(pack: str, permit):
    """The continuous rules of a site: its pack with its permit's limits, the stricter
    applying (:func:`limits.permits.site_rules`); kept per pack and permit version."""
    key = (pack, None) if permit is None else (pack, permit.number, repr(permit.limits))
    hit = _RULES.get(key)
    if hit is None:
        if len(_RULES) > 1024:
            _RULES.clear()
        hit = _RULES[key] = continuous(site_rules(load_pack(pack), permit))
    return hit


_APPLYING: dict = {}


def _applying(rules, parameter: str) -> tuple[tuple, str | None]:
    """The range rules of ``rules`` judging ``parameter`` and its slug rule in words, kept per
    rule set (the set itself held with them, so its id names it while it is kept)."""
    hit = _APPLYING.get((id(rules), parameter))
    if hit is not None and hit[0] is rules:
        return hit[1], hit[2]
    ranged, slug = [], None
    for r in rules:
        if not r.applies_to(parameter):
            continue
        if r.kind == "slug":
            slug = (f"slug: more than {r.multiple:g} × the {r.window_h:g}-hour average for more than "
                    f"{r.longer_than_min:g} min ({r.citation})")
        elif r.limit_canonical is not None and r.op is not None:
            ranged.append(r)
    if len(_APPLYING) > 4096:
        _APPLYING.clear()
    _APPLYING[(id(rules), parameter)] = (rules, tuple(ranged), slug)
    return tuple(ranged), slug


def sensor_limits(rules, parameter: str, value: float | None) -> tuple[list[Limit], str | None]:
    """The range limits of ``parameter`` and where ``value`` stands; the slug rule in words."""
    out = []
    ranged, slug = _applying(rules, parameter)
    for r in ranged:
        lim = Limit(r.id, r.comparison or r.op, r.limit_canonical, r.op, r.citation)
        if value is not None and math.isfinite(value):
            lim.margin = (value - r.limit_canonical) if r.op in ("<", "<=") else (r.limit_canonical - value)
            lim.beyond = (value < r.limit_canonical if r.op == "<" else value <= r.limit_canonical if r.op == "<="
                          else value > r.limit_canonical if r.op == ">" else value >= r.limit_canonical)
        out.append(lim)
    return out, slug


@dataclass(slots=True)
class Gauge:
    """Where a value sits between its limits: fractions 0-1 of the little bar's scale, and the
    bar's coordinates in its 200-unit box, written once here. (An object, not a dict: the
    template reads its attributes at the cost of an attribute, where a dict's key read as one
    costs Jinja a caught exception.)"""

    value: float
    low: float | None
    high: float | None
    mark_x: str = ""
    low_w: str = ""
    high_x: str = ""
    high_w: str = ""


def gauge(limits: list[Limit], value: float | None) -> Gauge | None:
    """Where the value sits between its limits, for the little bar: fractions 0-1 of the
    scale's ``lo``-``hi`` for the value and for each limit."""
    if value is None or not math.isfinite(value) or not limits:
        return None
    lows = [lim.value for lim in limits if lim.op in ("<", "<=")]
    highs = [lim.value for lim in limits if lim.op in (">", ">=")]
    lo_lim, hi_lim = (max(lows) if lows else None), (min(highs) if highs else None)
    if lo_lim is not None and hi_lim is not None:
        span = hi_lim - lo_lim
        lo, hi = lo_lim - span * 0.3, hi_lim + span * 0.3
    elif hi_lim is not None:
        lo, hi = min(0.0, value), max(hi_lim * 1.25, value)
    else:
        lo, hi = min(lo_lim * 0.5, value), max(lo_lim * 2.0, value)
    lo, hi = min(lo, value), max(hi, value)
    if hi <= lo:
        return None

    def f(x):
        return max(0.0, min(1.0, (x - lo) / (hi - lo)))
    g = Gauge(f(value), None if lo_lim is None else f(lo_lim), None if hi_lim is None else f(hi_lim))
    g.mark_x = f"{g.value * 200 - 2:.1f}"
    if g.low is not None:
        g.low_w = f"{g.low * 200:.1f}"
    if g.high is not None:
        g.high_x, g.high_w = f"{g.high * 200:.1f}", f"{200 - g.high * 200:.1f}"
    return g


#: The sensors' rows come from the database in chunks of this many, each made into its view
#: (and each user, once its last sensor came, judged and made into its row or card) while the
#: database reads the next (:func:`read`).
STREAM_ROWS = 20


@dataclass
class Program:
    """What the page knows of every industrial user before its sensors (:func:`program`)."""

    sites: dict[int, SiteView]           # by id
    episodes: dict[int, list[dict]]      # the open episodes, by sensor id
    rules: dict[int, tuple]              # the continuous rules, by site id
    alerts: list                         # their rows, or with a time zone their views
    devices: list[dict]


def program(conn, permits: dict | None = None, tz: str | None = None) -> Program:
    """The users, their open episodes, violations in 30 days, open alerts and devices
    (:data:`SQL` but ``sensors``); the page may read them on a connection of its own while
    :func:`read` reads the sensors. With ``tz`` (the village's), the alerts are as the pages
    show them (:func:`web.queries.alerts.view`)."""
    permits = permits or {}
    sites = {r[0]: SiteView(*r) for r in conn.execute(SQL["sites"]).fetchall()}
    today = datetime.now(timezone.utc).date()
    for s in sites.values():
        stored = permits.get(s.key)
        s.permit = stored.number if stored is not None else None
        s.permit_text = permit_words(stored, today)
    episodes_by_sensor = {}
    for e in conn.execute(SQL["episodes"]).fetchall():
        ep = dict(zip(("id", "site_id", "sensor_id", "parameter", "rule", "start", "end", "peak", "limit", "unit",
                       "citation", "peak_time"), e))
        episodes_by_sensor.setdefault(ep["sensor_id"], []).append(ep)
        if ep["site_id"] in sites:
            sites[ep["site_id"]].episodes.append(ep)
    rules = {s.id: site_continuous_rules(s.pack, permits.get(s.key)) for s in sites.values()}
    for site_id, n in conn.execute(SQL["recent"]).fetchall():
        if site_id in sites:
            sites[site_id].violations_30d = n
    alerts = [dict(zip(ALERT_COLS, r)) for r in conn.execute(SQL["alerts"]).fetchall()]
    for a in alerts:
        if a["site_id"] in sites:
            sites[a["site_id"]].alerts += 1
    by_key = {s.key: s for s in sites.values()}
    devices = [dict(zip(("device", "site", "state", "last_good_at", "last_error"), r))
               for r in conn.execute(SQL["devices"]).fetchall()]
    for d in devices:
        if d["site"] in by_key:
            by_key[d["site"]].devices.append(d)
    if tz is not None:
        alerts = [alerts_q.view(a, tz) for a in alerts]
    return Program(sites, episodes_by_sensor, rules, alerts, devices)


def read(conn, *, now: datetime | None = None, permits=None, due=None, base: str = "",
         known: Future | None = None, tz: str | None = None, card=None) -> dict:
    """Everything the Today page shows, at ``now`` (default: the database's clock, as the
    sensors' query reads it).

    The sensors' last values (:data:`SQL` ``sensors``, the page's costliest query) are
    streamed: each sensor is made into its view as its row arrives, and each user, once its
    last sensor came (the rows are in site order), is judged and made into its card or its
    row, while the database still reads the rest.

    Parameters
    ----------
    base : str
        The office's path behind the proxy (links).
    permits : dict, optional
        ``{site key: Permit}`` (:func:`limits.permit_store.current_permits`; the page keeps
        them a minute).
    due : list, optional
        :class:`enforcement.due.Item` s (the page keeps them a minute).
    known : concurrent.futures.Future, optional
        Of :func:`program`'s ``Program``, read elsewhere meanwhile (the page reads it on a
        second connection while this one reads the sensors; views made before it is there
        wait for it); default: read on ``conn`` first.
    tz : str, optional
        For ``known``'s default: the alerts as the pages show them (:func:`program`).
    card : callable, optional
        ``(SiteView) -> Markup``: the page's card of a user (its template's macro), made as
        soon as the user is judged (``SiteView.card_html``); default: the template makes it.
    """
    permits = permits or {}
    if known is None:
        known = Future()
        known.set_result(program(conn, permits, tz))
    pg, compact = None, False

    def finish(site: SiteView) -> None:
        site.state = site.judge()
        if not compact or site.state != "ok":          # a card: each sensor with its limits
            for sensor in site.sensors:
                sensor.detail(pg.rules[site.id])
            if card is not None:
                site.card_html = card(site)
        else:
            site.row(base)

    current, waiting = None, []

    def place(site_id: int, view: SensorView) -> None:
        nonlocal current
        site = pg.sites.get(site_id)
        if site is None:
            return
        if site is not current:
            if current is not None:
                finish(current)
            current = site
        eps = pg.episodes.get(view.id)
        if eps:
            view.episode = eps[-1]
        site.sensors.append(view)

    def take_known() -> None:
        """The users are known: the views that waited for them take their places."""
        nonlocal pg, compact
        pg = known.result()
        compact = len(pg.sites) > CARDS_MAX
        for site_id, v in waiting:
            place(site_id, v)
        waiting.clear()

    for row in conn.cursor().stream(SQL["sensors"], size=STREAM_ROWS):
        now = now or row[-1]
        view = SensorView.of(row, now)
        if pg is not None:
            place(row[1], view)
            continue
        waiting.append((row[1], view))
        if known.done():
            take_known()
    now = now or conn.execute("SELECT now()").fetchone()[0]          # no sensors
    if pg is None:
        take_known()
    for site in pg.sites.values():
        if not site.state:                             # the last one streamed, and those without sensors
            finish(site)
    ordered = sorted(pg.sites.values(), key=lambda s: (STATE_ORDER[s.state], s.name.lower()))
    # the rows of those in compliance, in their order, as one block of the page
    rows = Markup("\n".join(s.row_html for s in ordered if s.row_html))
    return {"now": now, "sites": ordered, "alerts": pg.alerts, "devices": pg.devices, "compact": compact,
            "rows_html": rows, "due": this_week(due or [], now, permits, {s.key: s.name for s in ordered})}


def this_week(items, now: datetime, permits: dict, names: dict | None = None) -> list[dict]:
    """What is due within :data:`WEEK_DAYS` days or overdue: the enforcement items, and the
    permits whose term ends (palmyra-wi §13.54(4) renewal) within the week."""
    until = (now + timedelta(days=WEEK_DAYS)).date().isoformat()
    out = [{"kind": i.kind, "site": i.site, "site_name": i.site_name, "overdue": i.overdue, "due": i.due,
            "title": i.title, "citation": i.citation} for i in items if i.overdue or i.due[:10] <= until]
    today = now.astimezone(timezone.utc).date()
    for key, permit in permits.items():
        st = renewal(permit, today)
        end = st.ends or st.term_end
        if end <= today + timedelta(days=WEEK_DAYS):
            out.append({"kind": "permit-renewal", "site": key, "site_name": (names or {}).get(key, key), "overdue": end < today,
                        "due": end.isoformat(), "title": f"permit {permit.number}: term ends {end.isoformat()}",
                        "citation": "renewal of the permit"})
    out.sort(key=lambda d: (not d["overdue"], d["due"]))
    return out
