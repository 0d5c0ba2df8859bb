"""The utility's configuration: one TOML file describing the village and its industrial users.

Sections (see ``examples/demo-village.toml`` for a complete, commented file):

``[utility]``
    ``name``, ``pack`` (the jurisdiction's rule pack, ``<pack>.toml`` on the pack search
    path, see :func:`pack_dirs`), optional ``timezone``, optional ``pack_dirs`` (folders
    holding more rule packs, searched before ``limits/packs/``; relative to the config
    file's folder).
``[services]``
    optional ``db_url``, ``mqtt_url`` (use those instead of the embedded services),
    ``state_dir``, ``pg_port``, ``mqtt_port`` for the embedded ones; ``mqtt_log_denied``
    (default false): the embedded broker writes its debug log, in which every publish its
    ACL refused is a line "Denied PUBLISH from <client> ..." (Mosquitto logs denials only
    at debug level, with every packet: for wiring a device, not for production rates).
``[[sites]]``
    the industrial users: ``id`` (a short slug used in MQTT topics), ``name``, ``sic``,
    ``permit``, optional ``pack`` (defaults to the utility's).
``[[devices]]``
    Modbus TCP devices at control manholes: ``id``, ``site``, ``host``, ``port``,
    ``unit_id``, ``profile``, ``interval_s``; ``shard`` (one of ``[modbus] shards``) when
    the devices are split among several collectors (issue 15).
``[[sensors]]``
    ``site``, ``name``, ``parameter`` (``ph``, ``temperature``, ``flow``, ``level``), ``unit``,
    ``source`` (``modbus`` or ``mqtt``); a Modbus sensor names its ``device`` and the profile
    ``field``; an MQTT sensor may give its ``topic`` (default ``sewerwatch/<site>/<name>``)
    and its nominal ``interval_s`` (a Modbus sensor's is its device's); optional
    ``full_scale`` (in the sensor's unit): the instrument's upper limit, above which a
    reading is implausible (flow, level).
``[modbus]``
    optional settings of the Modbus collector (``timeout_s``, ``backoff_min_s``,
    ``backoff_max_s``, ``max_fill``, ``flush_s``, ``health_s``, ``late_fraction``; see
    ``ingest/modbus/README.md``). Kept here as data (:attr:`Config.modbus`): the collector
    validates its own options (``ingest.modbus.collector.Options.from_config``), and
    ``sewerwatch config check`` runs that check too. ``shards`` (a list of short ids) is
    validated here: with it, every device names its ``shard`` and ``collect --shard``
    polls only those devices (:attr:`Config.modbus_shards`).
``[documents]``
    optional: the letterhead of printed documents (bills, notices, reports): ``letterhead``
    (lines under the village's name), ``signed_by`` and ``signer_title`` (who signs
    notices). Kept here as data (:attr:`Config.documents`); ``lab.documents.pdf`` validates it.
``[enforcement]``
    optional settings of enforcement (notices, reports owed, SNC periods, the response
    guide); kept as data (:attr:`Config.enforcement`), ``enforcement.settings`` validates it.
``[mqtt]``
    optional ``topics``: topic patterns with one ``{site}`` and one ``{sensor}`` level
    (default ``["sewerwatch/{site}/{sensor}"]``), carrying the sewerwatch JSON format;
    ``[[mqtt.inputs]]``, each a ``topic`` pattern and the ``format`` of its payloads
    (:class:`MqttInput`: ``sewerwatch``, ``telegraf``, ``number``, ``sparkplug`` with its
    ``[[mqtt.inputs.metrics]]``); optional ``share_group``: the ``collect`` processes share
    the readings through the broker's shared subscriptions of that group
    (``$share/<group>/...``), each message to one of them (issue 15; ``run`` takes all).
``[ingest]``
    bounds on what the collectors accept (:class:`IngestOptions`): ``max_payload_bytes``
    (default 1 MiB) and ``max_nesting`` (16) checked before a payload is parsed,
    ``max_future_s`` (300) and ``max_past_days`` (400) around the collector's clock,
    ``spool_max_bytes`` (1 GiB) the writer's spool cap.
``[alerts]``
    ``hold_off_s``, ``escalate_after_min``, and ``[[alerts.contacts]]`` with ``name``, ``urls``
    (apprise URLs) and ``escalation`` (true for the second contact list); ``console`` and
    ``mqtt`` (channels on or off), ``no_data_after_s`` and ``flatline_after_s`` (sensor
    health), ``retry_attempts`` and ``retry_backoff_s`` (failed deliveries), ``digest_at``
    (local HH:MM of the daily digest, false for none), ``readings_url`` (a link template
    with ``{site}``, ``{sensor}``, ``{from_ms}``, ``{to_ms}``, e.g. a Grafana dashboard).

``[web]``
    optional: the acknowledgement page ``sewerwatch run`` serves (:class:`WebOptions`), only
    when the table is present: ``bind`` (default 127.0.0.1), ``port`` (8470; 0 picks a free
    one), ``public_url`` (the address the links in alerts use, as the utility's reverse proxy
    publishes the page; default ``http://<bind>:<port>``), ``link_lifetime_h`` (24),
    ``rate_per_min`` and ``rate_burst`` (requests a client address may make), and
    ``trusted_proxies`` (addresses whose ``X-Forwarded-For`` names the client; default the
    loopback addresses).

``[retention]``
    storage policy (issue 15; applied by ``sewerwatch db maintain`` and periodically by
    ``sewerwatch run``): ``raw_days`` (raw readings kept this many days; default: the
    records period), ``records_years`` (one-minute aggregates and the raw readings around
    every violation episode kept this long; at least and by default 3, 40 CFR
    403.12(o)(2)), ``evidence_margin_min`` (raw readings kept either side of an episode,
    default 60), ``compress_after_days`` (where the TimescaleDB build compresses; default
    7), ``aggregate_lookback_h`` (late readings this much older than the aggregates' end
    are still folded in; default 24), ``maintain_every_s`` (how often ``run`` maintains;
    default 900).

Every validation error names the file, the key and what is wrong, e.g.
``demo.toml: sites[2].sic: expected a 4-digit SIC code, got '20x1'``.
Environment overrides: ``SEWERWATCH_DB_URL``, ``SEWERWATCH_MQTT_URL``,
``SEWERWATCH_STATE_DIR``, ``SEWERWATCH_PG_PORT``, ``SEWERWATCH_MQTT_PORT``; and
``SEWERWATCH_PACK_PATH`` (folders of rule packs separated by ``os.pathsep``, searched first:
for the commands on files, such as ``check`` and ``surcharge``, that need no config).
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from foundation.errors import ConfigError
from foundation.paths import PACKS_DIR, PROFILES_DIR, default_state_dir
from foundation.units import CONVERSIONS, to_canonical

DEFAULT_PG_PORT = 55432
#: The documented topic scheme (DESIGN.md): ``sewerwatch/<site>/<sensor>``.
DEFAULT_TOPIC_PATTERN = "sewerwatch/{site}/{sensor}"
#: Payload formats an ``[[mqtt.inputs]]`` entry may name (ingest/mqtt/README.md).
MQTT_FORMATS = ("sewerwatch", "telegraf", "number", "sparkplug")
#: The Sparkplug B topic namespace: ``spBv1.0/<group>/<type>/<edge node>[/<device>]``.
SPARKPLUG_NAMESPACE = "spBv1.0"
#: Telegraf's ``json_timestamp_units`` -> microseconds per unit.
TELEGRAF_TIME_UNITS = {"1ns": 0.001, "1us": 1, "1ms": 1000, "1s": 1_000_000}
DEFAULT_MQTT_PORT = 51883
SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass(frozen=True)
class Site:
    id: str
    name: str
    pack: str
    sic: str | None = None
    permit: str | None = None


@dataclass(frozen=True)
class Device:
    id: str
    site: str
    host: str
    port: int
    unit_id: int
    profile: str
    interval_s: float
    shard: str | None = None       # [modbus] shards: the collectors that poll it (issue 15)


@dataclass(frozen=True)
class Sensor:
    site: str
    name: str
    parameter: str
    unit: str
    source: str
    device: str | None = None
    field: str | None = None
    topic: str | None = None
    interval_s: float | None = None     # nominal sample interval [s] (a Modbus sensor: its device's)
    full_scale: float | None = None     # the instrument's full scale [the sensor's unit]

    @property
    def key(self) -> str:
        """``<site>/<name>``, unique in the utility."""
        return f"{self.site}/{self.name}"

    @property
    def full_scale_canonical(self) -> float | None:
        """:attr:`full_scale` in the parameter's canonical unit, or None."""
        if self.full_scale is None:
            return None
        return float(to_canonical(self.parameter, self.unit, self.full_scale))

    @property
    def address(self) -> str:
        """Where the reading comes from: ``modbus:<device>/<field>`` or ``mqtt:<topic>``."""
        if self.source == "modbus":
            return f"modbus:{self.device}/{self.field}"
        return f"mqtt:{self.topic}"


@dataclass(frozen=True)
class Contact:
    name: str
    urls: tuple[str, ...]
    escalation: bool = False


@dataclass(frozen=True)
class AlertOptions:
    """The ``[alerts]`` keys beyond contacts, hold-off and escalation (see the module doc)."""

    console: bool = True
    mqtt: bool = True
    no_data_after_s: float = 900.0
    flatline_after_s: float = 3600.0
    retry_attempts: int = 5
    retry_backoff_s: float = 2.0
    digest_at: str | None = "07:00"
    readings_url: str | None = None


#: 40 CFR 403.12(o)(2): records of monitoring activities and results are kept at least
#: three years (longer during litigation or when the Approval Authority asks).
RECORDS_YEARS_MIN = 3


@dataclass(frozen=True)
class Retention:
    """The ``[retention]`` storage policy (see the module doc)."""

    raw_days: int | None = None          # None: the records period
    records_years: int = RECORDS_YEARS_MIN
    evidence_margin_min: float = 60.0
    compress_after_days: float = 7.0
    aggregate_lookback_h: float = 24.0
    maintain_every_s: float = 900.0

    @property
    def records_days(self) -> int:
        """The records period [days] (a year counted as 366 days, never short)."""
        return 366 * self.records_years

    @property
    def raw_keep_days(self) -> int:
        """Raw readings kept [days]: ``raw_days``, else the records period."""
        return self.raw_days if self.raw_days is not None else self.records_days


@dataclass(frozen=True)
class IngestOptions:
    """The ``[ingest]`` table: what a collector accepts (issue 12, "No message can stop
    ingest" and "Time sanity") and how much disk the writer's spool may take.

    Attributes
    ----------
    max_payload_bytes : int
        A message longer than this [bytes] is a dead letter, unparsed (default 1 MiB: a
        batch of 1,000 readings is about 30 kB).
    max_nesting : int
        Deepest nesting of JSON arrays and objects a payload may have (checked before
        parsing; the wire format needs 2).
    max_future_s : float
        A reading stamped more than this ahead of the collector's clock [s] is a dead
        letter "time out of range" (default 5 minutes: clock drift, not the future).
    max_past_days : float
        A reading older than this [days] is a dead letter "time out of range" (default
        400: a year of a device's own backlog, and more).
    spool_max_bytes : int
        The writer's spool may grow to this [bytes] during a database outage (default
        1 GiB); beyond it the collectors stop acknowledging and the broker keeps the
        messages.
    """

    max_payload_bytes: int = 1 << 20
    max_nesting: int = 16
    max_future_s: float = 300.0
    max_past_days: float = 400.0
    spool_max_bytes: int = 1 << 30


@dataclass(frozen=True)
class WebOptions:
    """The ``[web]`` table: the acknowledgement page of ``sewerwatch run`` (issue 14 item 7).

    Attributes
    ----------
    bind : str
        Address the page listens on (default loopback: it is meant to sit behind the
        utility's reverse proxy, which terminates TLS).
    port : int
        TCP port (0: any free one, for tests).
    public_url : str or None
        The page's address as phones reach it (``https://sewer.example.org/sewerwatch``);
        None: ``http://<bind>:<port>``.
    link_lifetime_h : float
        How long an acknowledgement link is valid after its message was made [h].
    rate_per_min : float
        Requests one client address may make a minute, on average [1/min].
    rate_burst : int
        Requests one client address may make at once before the rate applies.
    trusted_proxies : tuple of str
        Peer addresses (or networks) whose ``X-Forwarded-For`` header names the client.
    """

    bind: str = "127.0.0.1"
    port: int = 8470
    public_url: str | None = None
    link_lifetime_h: float = 24.0
    rate_per_min: float = 30.0
    rate_burst: int = 10
    trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")

    @property
    def link_base(self) -> str:
        """The public address the links start with, without a trailing slash."""
        return (self.public_url or f"http://{self.bind}:{self.port}").rstrip("/")


@dataclass(frozen=True)
class Services:
    db_url: str | None
    mqtt_url: str | None
    state_dir: Path
    pg_port: int
    mqtt_port: int
    mqtt_log_denied: bool = False     # the embedded broker logs denied publishes (its debug log)


@dataclass(frozen=True)
class MqttInput:
    """One ``[[mqtt.inputs]]`` entry: a topic pattern and the format of its payloads.

    Attributes
    ----------
    topic : str
        Pattern with ``{site}`` and ``{sensor}`` levels (``telegraf`` may leave out
        ``{sensor}``, and ``{site}`` too when a tag names it).
    format : str
        ``sewerwatch`` (the documented JSON), ``telegraf`` (Telegraf's JSON output) or
        ``number`` (a bare number, stamped on receipt, in the sensor's configured unit).
    site_from : str
        telegraf: ``topic`` (the ``{site}`` level) or ``tag:<name>``; default ``topic``
        when the pattern has ``{site}``, else ``tag:site``.
    sensor_from : str
        telegraf: ``topic`` (the ``{sensor}`` level, one field per metric), ``field`` (each
        field is a sensor of that name), ``name`` (the metric's name) or ``tag:<name>``;
        default ``topic`` when the pattern has ``{sensor}``, else ``field``.
    timestamp_units : str
        telegraf: the ``json_timestamp_units`` Telegraf was configured with (``1s``,
        ``1ms``, ``1us``, ``1ns``; default ``1s``, Telegraf's own default).
    metrics : tuple of (str, str, str, str)
        sparkplug (``topic = "spBv1.0/<group>"``): ``(edge node, device or '', metric
        name, sensor key <site>/<name>)`` from ``[[mqtt.inputs.metrics]]``.
    """

    topic: str
    format: str = "sewerwatch"
    site_from: str = ""
    sensor_from: str = ""
    timestamp_units: str = "1s"
    metrics: tuple = ()

    def __post_init__(self):
        if not self.site_from:
            object.__setattr__(self, "site_from", "topic" if "{site}" in self.topic.split("/") else "tag:site")
        if not self.sensor_from:
            object.__setattr__(self, "sensor_from", "topic" if "{sensor}" in self.topic.split("/") else "field")


@dataclass(frozen=True)
class Config:
    path: str
    name: str
    pack: str
    timezone: str | None
    services: Services
    pack_dirs: tuple[Path, ...] = ()          # [utility] pack_dirs, resolved
    sites: tuple[Site, ...] = ()
    devices: tuple[Device, ...] = ()
    sensors: tuple[Sensor, ...] = ()
    contacts: tuple[Contact, ...] = ()
    hold_off_s: float = 300.0
    escalate_after_min: float = 30.0
    alert_options: AlertOptions = field(default_factory=AlertOptions)
    modbus: dict = field(default_factory=dict)   # [modbus] as data; the collector validates it
    mqtt_topics: tuple[str, ...] = (DEFAULT_TOPIC_PATTERN,)   # [mqtt] topics
    mqtt_inputs: tuple[MqttInput, ...] = (MqttInput(DEFAULT_TOPIC_PATTERN),)  # topics + [[mqtt.inputs]]
    mqtt_share_group: str | None = None          # [mqtt] share_group: shared subscriptions
    modbus_shards: tuple[str, ...] = ()          # [modbus] shards: devices split among collectors
    retention: Retention = field(default_factory=Retention)
    documents: dict = field(default_factory=dict)   # [documents] as data; lab.documents.pdf validates it
    enforcement: dict = field(default_factory=dict)  # [enforcement] as data; enforcement.settings validates it
    ingest: IngestOptions = field(default_factory=IngestOptions)      # [ingest]
    web: WebOptions | None = None               # [web]; None: no acknowledgement page
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    def site(self, site_id: str) -> Site:
        for s in self.sites:
            if s.id == site_id:
                return s
        raise KeyError(site_id)


# --- a small validator: each key has a type check and a default ----------------------

_REQUIRED = object()


class _Section:
    """Check one TOML table against a spec ``{key: (checker, default)}``."""

    def __init__(self, path: str, where: str, table: Any, spec: dict[str, tuple[Callable, Any]]):
        self.path, self.where = path, where
        if not isinstance(table, dict):
            raise ConfigError(path, where, f"expected a table, got {_show(table)}")
        unknown = sorted(set(table) - set(spec))
        if unknown:
            raise ConfigError(path, self.key(unknown[0]),
                              f"unknown key (expected one of: {', '.join(spec)})")
        self.values = {}
        for key, (check, default) in spec.items():
            if key in table:
                self.values[key] = check(self, key, table[key])
            elif default is _REQUIRED:
                raise ConfigError(path, self.key(key), "missing (required)")
            else:
                self.values[key] = default

    def key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, problem: str):
        raise ConfigError(self.path, self.key(key), problem)


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else f"{type(value).__name__} {value!r}"


def _str(sec, key, v):
    if not isinstance(v, str) or not v.strip():
        sec.fail(key, f"expected a non-empty string, got {_show(v)}")
    return v


def _slug(sec, key, v):
    _str(sec, key, v)
    if not SLUG.match(v):
        sec.fail(key, f"expected a short lowercase id (letters, digits, - and _), got {v!r}")
    return v


def _int_range(lo: int, hi: int):
    def check(sec, key, v):
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            sec.fail(key, f"expected an integer from {lo} to {hi}, got {_show(v)}")
        return v
    return check


def _records_years(sec, key, v):
    if isinstance(v, bool) or not isinstance(v, int) or not RECORDS_YEARS_MIN <= v <= 100:
        sec.fail(key, f"expected whole years from {RECORDS_YEARS_MIN} (the federal minimum, 40 CFR "
                 f"403.12(o)(2)) to 100, got {_show(v)}")
    return v


def _positive(sec, key, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        sec.fail(key, f"expected a positive number, got {_show(v)}")
    return float(v)


def _bool(sec, key, v):
    if not isinstance(v, bool):
        sec.fail(key, f"expected true or false, got {_show(v)}")
    return v


def _sic(sec, key, v):
    if not isinstance(v, str) or not re.fullmatch(r"\d{4}", v):
        sec.fail(key, f"expected a 4-digit SIC code as a string, got {_show(v)}")
    return v


def _pack_in(extra: tuple[Path, ...]):
    """A check that a rule pack of this id is on the search path (``extra`` first)."""
    def check(sec, key, v):
        _str(sec, key, v)
        if find_pack(v, extra) is None:
            sec.fail(key, f"unknown rule pack {v!r} (known: {', '.join(known_packs(extra)) or 'none installed'}; "
                     f"searched {', '.join(map(str, pack_dirs(extra)))})")
        return v
    return check


def _folders(base: Path):
    """A check of ``pack_dirs``: a list of existing folders, relative to ``base``."""
    def check(sec, key, v):
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            sec.fail(key, f"expected a list of folder names, got {_show(v)}")
        out = []
        for x in v:
            d = (base / x).resolve()
            if not d.is_dir():
                sec.fail(key, f"no such folder {x!r} (looked for {d})")
            out.append(d)
        return tuple(out)
    return check


def _timezone(sec, key, v):
    _str(sec, key, v)
    try:
        ZoneInfo(v)
    except (ZoneInfoNotFoundError, ValueError):
        sec.fail(key, f"unknown time zone {v!r} (expected an IANA name such as 'America/Chicago')")
    return v


def _url(*schemes: str):
    def check(sec, key, v):
        _str(sec, key, v)
        scheme = v.split("://", 1)[0] if "://" in v else ""
        if scheme not in schemes:
            sec.fail(key, f"expected a URL starting with {' or '.join(s + '://' for s in schemes)}, got {v!r}")
        return v
    return check


def _address(sec, key, v):
    _str(sec, key, v)
    try:
        ipaddress.ip_address(v)
    except ValueError:
        sec.fail(key, f"expected an IP address to listen on (e.g. 127.0.0.1 or 0.0.0.0), got {v!r}")
    return v


def _networks(sec, key, v):
    if not isinstance(v, list):
        sec.fail(key, f"expected a list of IP addresses or networks, got {_show(v)}")
    for x in v:
        try:
            ipaddress.ip_network(x, strict=False)
        except (TypeError, ValueError):
            sec.fail(key, f"not an IP address or network: {_show(x)}")
    return tuple(v)


def _clock_time(sec, key, v):
    if v is False:
        return None
    if not isinstance(v, str) or not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v):
        sec.fail(key, f"expected a local time HH:MM (or false for none), got {_show(v)}")
    return v


def _one_of(*choices: str):
    def check(sec, key, v):
        if v not in choices:
            sec.fail(key, f"expected one of {', '.join(choices)}, got {_show(v)}")
        return v
    return check


def _str_list(sec, key, v):
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        sec.fail(key, f"expected a non-empty list of strings, got {_show(v)}")
    return tuple(v)


def _table(sec, key, v):
    if not isinstance(v, dict):
        sec.fail(key, f"expected a table, got {_show(v)}")
    return dict(v)


def _topic_patterns(sec, key, v):
    """``[mqtt] topics``: patterns with one ``{site}`` and one ``{sensor}`` level."""
    patterns = _str_list(sec, key, v)
    for p in patterns:
        levels = p.split("/")
        if levels.count("{site}") != 1 or levels.count("{sensor}") != 1 or "+" in p or "#" in p:
            sec.fail(key, f"pattern {p!r} needs exactly one {{site}} and one {{sensor}} level, and no + or #")
    return patterns


def _share_group(sec, key, v):
    """``[mqtt] share_group``: one topic level, no wildcards (``$share/<group>/<filter>``)."""
    _str(sec, key, v)
    if any(ch in v for ch in "/+#") or v.startswith("$"):
        sec.fail(key, f"expected one topic level without /, + or # (the group of $share/<group>/...), got {v!r}")
    return v


def _modbus_shards(path: str, modbus: Any) -> tuple[str, ...]:
    """``[modbus] shards``: the short ids of the collectors' shares of the devices."""
    if not isinstance(modbus, dict) or "shards" not in modbus:
        return ()
    sec = _Section(path, "modbus", {"shards": modbus["shards"]}, {"shards": (_str_list, ())})
    shards = sec.values["shards"]
    for s in shards:
        _slug(sec, "shards", s)
    if len(set(shards)) != len(shards):
        sec.fail("shards", f"a shard is named twice in {list(shards)}")
    return shards


def _mqtt_input(path: str, where: str, table) -> MqttInput:
    """One ``[[mqtt.inputs]]`` entry, checked."""
    v = _Section(path, where, table, {
        "topic": (_str, _REQUIRED), "format": (_one_of(*MQTT_FORMATS), "sewerwatch"),
        "site_from": (_str, ""), "sensor_from": (_str, ""),
        "timestamp_units": (_one_of(*TELEGRAF_TIME_UNITS), "1s"),
        "metrics": (lambda s, k, x: _array_of_tables(path, f"{where}.metrics", x), []),
    }).values
    levels = v["topic"].split("/")
    if v["format"] == "sparkplug":
        if len(levels) != 2 or levels[0] != SPARKPLUG_NAMESPACE or not levels[1] or "{" in levels[1]:
            raise ConfigError(path, f"{where}.topic", f"a sparkplug input's topic is {SPARKPLUG_NAMESPACE}/<group id>, "
                              f"got {v['topic']!r}")
        if not v["metrics"]:
            raise ConfigError(path, f"{where}.metrics", "missing: [[mqtt.inputs.metrics]] map the edge nodes' "
                              "metrics to sensors (node, device, metric, sensor)")
        metrics = []
        for j, t in enumerate(v["metrics"]):
            mv = _Section(path, f"{where}.metrics[{j}]", t, {
                "node": (_str, _REQUIRED), "device": (_str, ""), "metric": (_str, _REQUIRED),
                "sensor": (_str, _REQUIRED)}).values
            metrics.append((mv["node"], mv["device"], mv["metric"], mv["sensor"]))
        _unique(path, f"{where}.metrics", metrics, lambda x: x[:3], "metric")
        return MqttInput(v["topic"], "sparkplug", metrics=tuple(metrics))
    if v["metrics"]:
        raise ConfigError(path, f"{where}.metrics", "only a sparkplug input maps metrics")
    del v["metrics"]
    if "+" in v["topic"] or "#" in v["topic"]:
        raise ConfigError(path, f"{where}.topic", f"pattern {v['topic']!r}: write {{site}}/{{sensor}} "
                          "instead of MQTT wildcards")
    if levels.count("{site}") > 1 or levels.count("{sensor}") > 1:
        raise ConfigError(path, f"{where}.topic", f"pattern {v['topic']!r} has {{site}} or {{sensor}} twice")
    if v["format"] != "telegraf":
        if levels.count("{site}") != 1 or levels.count("{sensor}") != 1:
            raise ConfigError(path, f"{where}.topic", f"pattern {v['topic']!r} needs exactly one {{site}} and "
                              f"one {{sensor}} level for format {v['format']!r}")
        for k in ("site_from", "sensor_from"):
            if v[k]:
                raise ConfigError(path, f"{where}.{k}", "only a telegraf input says where site and sensor come from")
    inp = MqttInput(**v)
    if not (inp.site_from == "topic" or inp.site_from.startswith("tag:") and len(inp.site_from) > 4):
        raise ConfigError(path, f"{where}.site_from", f"expected 'topic' or 'tag:<name>', got {inp.site_from!r}")
    if inp.site_from == "topic" and "{site}" not in levels:
        raise ConfigError(path, f"{where}.site_from", "'topic' needs a {site} level in the topic pattern")
    if not (inp.sensor_from in ("topic", "field", "name")
            or inp.sensor_from.startswith("tag:") and len(inp.sensor_from) > 4):
        raise ConfigError(path, f"{where}.sensor_from",
                          f"expected 'topic', 'field', 'name' or 'tag:<name>', got {inp.sensor_from!r}")
    if inp.sensor_from == "topic" and "{sensor}" not in levels:
        raise ConfigError(path, f"{where}.sensor_from", "'topic' needs a {sensor} level in the topic pattern")
    return inp


def _array_of_tables(path: str, where: str, value: Any) -> list:
    if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
        raise ConfigError(path, where, f"expected an array of tables ([[{where}]]), got {_show(value)}")
    return value


def _unique(path: str, where: str, items: list, key: Callable, what: str) -> None:
    seen: dict = {}
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            raise ConfigError(path, f"{where}[{i}]", f"duplicate {what} {k!r} (first at {where}[{seen[k]}])")
        seen[k] = i


# --- loading -------------------------------------------------------------------------


def find_config_path(explicit: str | None = None) -> Path | None:
    """The config file to use: ``explicit``, ``$SEWERWATCH_CONFIG``, or ``./sewerwatch.toml``."""
    for candidate in (explicit, os.environ.get("SEWERWATCH_CONFIG")):
        if candidate:
            p = Path(candidate)
            if not p.is_file():
                raise ConfigError(str(p), "", "no such file")
            return p
    p = Path("sewerwatch.toml")
    return p if p.is_file() else None


def load(path: str | os.PathLike | None = None) -> Config:
    """Load and validate the utility's config.

    Parameters
    ----------
    path : path-like, optional
        The TOML file. Without one, :func:`find_config_path` decides; with no file at all
        the result is an empty utility using the embedded services.

    Raises
    ------
    ConfigError
        Naming the file, the key and what is wrong.
    """
    p = find_config_path(str(path) if path else None)
    if p is None:
        return from_dict({}, "<no config>")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), "", f"not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(str(p), "", "not UTF-8 text") from None
    cfg = from_dict(data, str(p))
    use_pack_dirs(cfg.pack_dirs)
    return cfg


# --- where rule packs are found ---------------------------------------------------------

#: Environment variable: folders of rule packs (``os.pathsep``-separated), searched first.
PACK_PATH_ENV = "SEWERWATCH_PACK_PATH"

#: The ``[utility] pack_dirs`` of the config this process runs with (set by :func:`load`).
_config_pack_dirs: tuple[Path, ...] = ()


def use_pack_dirs(folders) -> None:
    """Make ``folders`` the config's pack folders for this process (:func:`load` calls it
    with the loaded config's ``[utility] pack_dirs``; a config without them clears them)."""
    global _config_pack_dirs
    _config_pack_dirs = tuple(Path(f) for f in folders)


def pack_dirs(extra=()) -> tuple[Path, ...]:
    """The folders searched for a rule pack ``<id>.toml``, in order (the first match wins).

    ``extra`` (e.g. the ``pack_dirs`` of a config being validated), then
    ``$SEWERWATCH_PACK_PATH``, then the ``[utility] pack_dirs`` of the config loaded in this
    process, then the packs shipped in ``limits/packs/``.
    """
    env = tuple(Path(p) for p in os.environ.get(PACK_PATH_ENV, "").split(os.pathsep) if p)
    return (*(Path(e) for e in extra), *env, *_config_pack_dirs, PACKS_DIR)


def find_pack(pack_id: str, extra=()) -> Path | None:
    """The file of rule pack ``pack_id`` on the search path (:func:`pack_dirs`), or None."""
    for folder in pack_dirs(extra):
        p = folder / f"{pack_id}.toml"
        if p.is_file():
            return p
    return None


def known_packs(extra=()) -> list[str]:
    """The ids of every rule pack on the search path, sorted."""
    return sorted({p.stem for folder in pack_dirs(extra) if folder.is_dir() for p in folder.glob("*.toml")})


def from_dict(data: dict, path: str = "<dict>") -> Config:
    """Validate an already-parsed config (see :func:`load`)."""
    top = _Section(path, "", data, {
        "utility": (lambda s, k, v: v, {}),
        "services": (lambda s, k, v: v, {}),
        "sites": (lambda s, k, v: _array_of_tables(path, k, v), []),
        "devices": (lambda s, k, v: _array_of_tables(path, k, v), []),
        "sensors": (lambda s, k, v: _array_of_tables(path, k, v), []),
        "alerts": (lambda s, k, v: v, {}),
        "modbus": (_table, {}),
        "mqtt": (lambda s, k, v: v, {}),
        "retention": (lambda s, k, v: v, {}),
        "documents": (_table, {}),
        "enforcement": (_table, {}),
        "ingest": (lambda s, k, v: v, {}),
        "web": (lambda s, k, v: v, None),
    }).values

    ret = _Section(path, "retention", top["retention"], {
        "raw_days": (_int_range(1, 366 * 100), None),
        "records_years": (_records_years, RECORDS_YEARS_MIN),
        "evidence_margin_min": (_positive, 60.0),
        "compress_after_days": (_positive, 7.0),
        "aggregate_lookback_h": (_positive, 24.0),
        "maintain_every_s": (_positive, 900.0),
    }).values

    ing = _Section(path, "ingest", top["ingest"], {
        "max_payload_bytes": (_int_range(256, 1 << 30), IngestOptions.max_payload_bytes),
        "max_nesting": (_int_range(2, 1000), IngestOptions.max_nesting),
        "max_future_s": (_positive, IngestOptions.max_future_s),
        "max_past_days": (_positive, IngestOptions.max_past_days),
        "spool_max_bytes": (_int_range(1024, 1 << 50), IngestOptions.spool_max_bytes),
    }).values

    web = None if top["web"] is None else WebOptions(**_Section(path, "web", top["web"], {
        "bind": (_address, WebOptions.bind), "port": (_int_range(0, 65535), WebOptions.port),
        "public_url": (_url("http", "https"), None), "link_lifetime_h": (_positive, WebOptions.link_lifetime_h),
        "rate_per_min": (_positive, WebOptions.rate_per_min), "rate_burst": (_int_range(1, 10_000), WebOptions.rate_burst),
        "trusted_proxies": (_networks, WebOptions.trusted_proxies),
    }).values)

    mqtt = _Section(path, "mqtt", top["mqtt"], {
        "topics": (_topic_patterns, (DEFAULT_TOPIC_PATTERN,)),
        "share_group": (_share_group, None),
        "inputs": (lambda s, k, v: _array_of_tables(path, "mqtt.inputs", v), []),
    }).values
    mqtt_inputs = [MqttInput(p) for p in mqtt["topics"]]
    mqtt_inputs += [_mqtt_input(path, f"mqtt.inputs[{i}]", t) for i, t in enumerate(mqtt["inputs"])]
    _unique(path, "mqtt.inputs", mqtt_inputs[len(mqtt["topics"]):], lambda m: m.topic, "topic pattern")
    for i, m in enumerate(mqtt_inputs[len(mqtt["topics"]):]):
        if m.topic in mqtt["topics"]:
            raise ConfigError(path, f"mqtt.inputs[{i}].topic", f"pattern {m.topic!r} is also in [mqtt] topics")

    raw_utility = top["utility"] if isinstance(top["utility"], dict) else {}
    base = Path(path).resolve().parent if Path(path).is_file() else Path.cwd()
    folders = _Section(path, "utility", {k: raw_utility[k] for k in ("pack_dirs",) if k in raw_utility},
                       {"pack_dirs": (_folders(base), ())}).values["pack_dirs"]
    _pack = _pack_in(folders)
    utility = _Section(path, "utility", top["utility"], {
        "name": (_str, "sewerwatch utility"),
        "pack": (_pack, "palmyra-wi"),
        "timezone": (_timezone, None),
        "pack_dirs": (lambda s, k, v: folders, ()),
    }).values

    svc = _Section(path, "services", top["services"], {
        "db_url": (_url("postgresql", "postgres"), None),
        "mqtt_url": (_url("mqtt", "mqtts"), None),
        "state_dir": (_str, None),
        "pg_port": (_int_range(1024, 65535), DEFAULT_PG_PORT),
        "mqtt_port": (_int_range(1024, 65535), DEFAULT_MQTT_PORT),
        "mqtt_log_denied": (_bool, False),
    }).values
    env = os.environ
    services = Services(
        db_url=env.get("SEWERWATCH_DB_URL") or svc["db_url"],
        mqtt_url=env.get("SEWERWATCH_MQTT_URL") or svc["mqtt_url"],
        state_dir=Path(env["SEWERWATCH_STATE_DIR"]).resolve() if env.get("SEWERWATCH_STATE_DIR")
        else (Path(svc["state_dir"]) if svc["state_dir"] else default_state_dir()),
        pg_port=int(env.get("SEWERWATCH_PG_PORT") or svc["pg_port"]),
        mqtt_port=int(env.get("SEWERWATCH_MQTT_PORT") or svc["mqtt_port"]),
        mqtt_log_denied=svc["mqtt_log_denied"],
    )

    sites = []
    for i, t in enumerate(top["sites"]):
        v = _Section(path, f"sites[{i}]", t, {
            "id": (_slug, _REQUIRED), "name": (_str, _REQUIRED), "sic": (_sic, None),
            "permit": (_str, None), "pack": (_pack, utility["pack"]),
        }).values
        sites.append(Site(**v))
    _unique(path, "sites", sites, lambda s: s.id, "site id")
    site_ids = {s.id for s in sites}

    def _site_ref(sec, key, v):
        _str(sec, key, v)
        if v not in site_ids:
            sec.fail(key, f"unknown site {v!r} (sites: {', '.join(sorted(site_ids)) or 'none'})")
        return v

    def _profile(sec, key, v):
        _str(sec, key, v)
        if PROFILES_DIR.is_dir() and not (PROFILES_DIR / f"{v}.toml").is_file():
            known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.toml")))
            sec.fail(key, f"unknown device profile {v!r} (known: {known})")
        return v

    shards = _modbus_shards(path, top["modbus"])

    def _shard_ref(sec, key, v):
        _slug(sec, key, v)
        if v not in shards:
            sec.fail(key, f"unknown shard {v!r} " + (f"(shards: {', '.join(shards)})" if shards else
                                                       "(no [modbus] shards are declared)"))
        return v

    devices = []
    for i, t in enumerate(top["devices"]):
        v = _Section(path, f"devices[{i}]", t, {
            "id": (_slug, _REQUIRED), "site": (_site_ref, _REQUIRED), "host": (_str, "127.0.0.1"),
            "port": (_int_range(1, 65535), 502), "unit_id": (_int_range(0, 247), 1),
            "profile": (_profile, "generic-manhole"), "interval_s": (_positive, 1.0),
            "shard": (_shard_ref, None),
        }).values
        if shards and v["shard"] is None:
            raise ConfigError(path, f"devices[{i}].shard", f"missing: [modbus] shards splits the devices among "
                              f"collectors ({', '.join(shards)}); name the one that polls this device")
        devices.append(Device(**v))
    _unique(path, "devices", devices, lambda d: d.id, "device id")
    device_ids = {d.id for d in devices}

    sensors = []
    for i, t in enumerate(top["sensors"]):
        where = f"sensors[{i}]"
        v = _Section(path, where, t, {
            "site": (_site_ref, _REQUIRED), "name": (_slug, _REQUIRED),
            "parameter": (_one_of(*CONVERSIONS), _REQUIRED), "unit": (_str, _REQUIRED),
            "source": (_one_of("modbus", "mqtt"), _REQUIRED), "device": (_str, None),
            "field": (_slug, None), "topic": (_str, None),
            "interval_s": (_positive, None), "full_scale": (_positive, None),
        }).values
        if v["unit"] not in CONVERSIONS[v["parameter"]]:
            raise ConfigError(path, f"{where}.unit", f"unknown unit {v['unit']!r} for {v['parameter']} "
                              f"(known: {', '.join(CONVERSIONS[v['parameter']])})")
        if v["source"] == "modbus":
            if v["device"] is None:
                raise ConfigError(path, f"{where}.device", "missing (required for a modbus sensor)")
            if v["device"] not in device_ids:
                raise ConfigError(path, f"{where}.device", f"unknown device {v['device']!r} "
                                  f"(devices: {', '.join(sorted(device_ids)) or 'none'})")
            if v["topic"] is not None:
                raise ConfigError(path, f"{where}.topic", "only an mqtt sensor has a topic")
            if v["interval_s"] is not None:
                raise ConfigError(path, f"{where}.interval_s", "a modbus sensor is read at its device's "
                                  "interval_s; give it there")
            v["field"] = v["field"] or v["parameter"]
            v["interval_s"] = next(d.interval_s for d in devices if d.id == v["device"])
        else:
            for k in ("device", "field"):
                if v[k] is not None:
                    raise ConfigError(path, f"{where}.{k}", "only a modbus sensor has a device and field")
            v["topic"] = v["topic"] or f"sewerwatch/{v['site']}/{v['name']}"
        sensors.append(Sensor(**v))
    _unique(path, "sensors", sensors, lambda s: s.key, "sensor")
    _unique(path, "sensors", [s for s in sensors if s.topic], lambda s: s.topic, "topic")

    mqtt_keys = {s.key for s in sensors if s.source == "mqtt"}
    for i, inp in enumerate(mqtt_inputs[len(mqtt["topics"]):]):
        for j, (_, _, _, key) in enumerate(inp.metrics):
            if key not in mqtt_keys:
                raise ConfigError(path, f"mqtt.inputs[{i}].metrics[{j}].sensor", f"unknown MQTT sensor {key!r} "
                                  f"(MQTT sensors: {', '.join(sorted(mqtt_keys)) or 'none'})")

    alerts = _Section(path, "alerts", top["alerts"], {
        "hold_off_s": (_positive, 300.0), "escalate_after_min": (_positive, 30.0),
        "contacts": (lambda s, k, v: _array_of_tables(path, "alerts.contacts", v), []),
        "console": (_bool, True), "mqtt": (_bool, True),
        "no_data_after_s": (_positive, 900.0), "flatline_after_s": (_positive, 3600.0),
        "retry_attempts": (_int_range(1, 20), 5), "retry_backoff_s": (_positive, 2.0),
        "digest_at": (_clock_time, "07:00"), "readings_url": (_url("http", "https"), None),
    }).values
    contacts = []
    for i, t in enumerate(alerts["contacts"]):
        v = _Section(path, f"alerts.contacts[{i}]", t, {
            "name": (_str, _REQUIRED), "urls": (_str_list, _REQUIRED), "escalation": (_bool, False),
        }).values
        contacts.append(Contact(**v))

    return Config(
        path=path, name=utility["name"], pack=utility["pack"], timezone=utility["timezone"],
        services=services, pack_dirs=folders, sites=tuple(sites), devices=tuple(devices), sensors=tuple(sensors),
        contacts=tuple(contacts), hold_off_s=alerts["hold_off_s"],
        escalate_after_min=alerts["escalate_after_min"],
        alert_options=AlertOptions(**{k: alerts[k] for k in (
            "console", "mqtt", "no_data_after_s", "flatline_after_s", "retry_attempts",
            "retry_backoff_s", "digest_at", "readings_url")}),
        modbus={k: v for k, v in top["modbus"].items() if k != "shards"}, mqtt_topics=mqtt["topics"],
        mqtt_inputs=tuple(mqtt_inputs), mqtt_share_group=mqtt["share_group"], modbus_shards=shards,
        retention=Retention(**ret),
        ingest=IngestOptions(**ing), web=web,
        documents=top["documents"], enforcement=top["enforcement"],
        raw=data,
    )
