"""The utility's configuration: one TOML file describing the utility and its industrial users.

Each table is a model below; every key is one field with its type, default and description,
from which ``docs/reference/config.md`` and ``docs/reference/config.schema.json`` are
generated (``sewerwatch pack reference``; a test keeps them current). ``examples/demo-village.toml``
is a complete, commented file. ``[modbus]``, ``[documents]`` and ``[enforcement]`` are kept
as data here and validated by their owners (``ingest.modbus.options``, ``lab.documents.pdf``,
``enforcement.settings``); ``sewerwatch config check`` runs those checks too.

Every error names the file, the key and what is wrong, e.g.
``demo.toml: sites[2].sic: expected a 4-digit SIC code as a string, got '20x1'``.
Environment overrides: ``SEWERWATCH_DB_URL``, ``SEWERWATCH_MQTT_URL``,
``SEWERWATCH_STATE_DIR``, ``SEWERWATCH_PG_PORT``, ``SEWERWATCH_MQTT_PORT``; and
``SEWERWATCH_PACK_PATH`` (folders of rule packs separated by ``os.pathsep``, searched first).
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, ValidationInfo, model_validator

from foundation.backup_options import Backup
from foundation.field_options import ChecklistItem, FieldOptions, Instrument
# the MQTT inputs' tables and names, read from here as well
from foundation.mqtt_options import (DEFAULT_SPARKPLUG_HOST_ID, DEFAULT_TOPIC_PATTERN, MQTT_FORMATS,  # noqa: F401
                                     SPARKPLUG_NAMESPACE, TELEGRAF_TIME_UNITS, TOPIC_PLACEHOLDERS, Metric, Mqtt,
                                     MqttInput)
# where rule packs are found (the process's state), read from here as well
from foundation.pack_path import (PACK_PATH_ENV, defer_pack_dirs, find_pack, known_packs, pack_dirs,  # noqa: F401
                                  pack_dirs_problem, pack_files, pack_sources, use_pack_dirs)
from foundation.errors import ConfigError
from foundation.paths import PROFILES_DIR, default_state_dir
from foundation.schema import (SLUG, Address, Bool, Internal, IntRange, Networks, OneOf, Positive, Slug, Table, Tables,
                               Text, TextList, TimeZone, Url, beside, check, duplicates, fail, known_unit, refusing,
                               show, table, validate)
from foundation.units import SENSOR_PARAMETERS, to_canonical

DEFAULT_PG_PORT = 55432
DEFAULT_MQTT_PORT = 51883
#: The embedded broker's sites' listener is this far above ``mqtt_port`` unless configured.
SITES_PORT_OFFSET = 1000
#: 40 CFR 403.12(o)(2): records of monitoring activities and results are kept at least
#: three years (longer during litigation or when the Approval Authority asks).
RECORDS_YEARS_MIN = 3

__all__ = ["Config", "Site", "Device", "Sensor", "Contact", "Alerts", "Retention",
           "IngestOptions", "WebOptions", "Services", "MqttInput", "RunOptions", "FieldOptions", "Instrument",
           "ChecklistItem", "Backup", "load", "from_dict", "find_pack", "pack_dirs"]


def _folders(v, info: ValidationInfo):
    if isinstance(v, tuple):
        return v
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise fail((), f"expected a list of folder names, got {show(v)}")
    return tuple(beside(x, info, folder=True) for x in v)


# --- the tables -----------------------------------------------------------------------------

@table
class Utility(Table):
    """``[utility]``: the utility and the ordinance it enforces."""

    name: Text = "sewerwatch utility"
    """The utility's name as its documents print it (``Village of Palmyra``)."""
    pack: Text = "palmyra-wi"
    """The rule pack of its ordinance: an id found on the pack search path (``<pack>.toml``)."""
    timezone: TimeZone | None = None
    """IANA time zone of the utility's calendar (default: the pack's)."""
    pack_dirs: Annotated[tuple[Path, ...], BeforeValidator(_folders)] = ()
    """Folders holding more rule packs, searched before the shipped ones (relative to the config file's folder)."""

    @model_validator(mode="after")
    def _pack_found(self, info: ValidationInfo):
        if info.context is not None:
            _check_pack(self.pack, self.pack_dirs, ("pack",))
        return self


def _check_pack(pack: str, extra, at: tuple) -> None:
    if find_pack(pack, extra) is None:
        raise fail(at, f"unknown rule pack {pack!r} (known: {', '.join(known_packs(extra)) or 'none installed'}; "
                   f"searched {', '.join(map(str, pack_dirs(extra)))})")


@table
class Services(Table):
    """``[services]``: the database and broker (default: the embedded ones)."""

    db_url: Url("postgresql", "postgres") | None = None
    """A database of your own instead of the embedded TimescaleDB (``$SEWERWATCH_DB_URL`` wins)."""
    mqtt_url: Url("mqtt", "mqtts") | None = None
    """A broker of your own instead of the embedded Mosquitto (``$SEWERWATCH_MQTT_URL`` wins)."""
    state_dir: Annotated[Path, check(lambda v: isinstance(v, (str, Path)) and str(v).strip() != "",
                                     "a non-empty string", Path)] | None = None
    """The embedded services' state folder (default under /var/tmp, keyed to the checkout)."""
    pg_port: IntRange(1024, 65535) = DEFAULT_PG_PORT
    """Port of the embedded TimescaleDB on 127.0.0.1."""
    mqtt_port: IntRange(1024, 65535) = DEFAULT_MQTT_PORT
    """Port of the embedded Mosquitto on 127.0.0.1."""
    mqtt_log_denied: Bool = False
    """The embedded broker writes its debug log, in which every publish its ACL refused is a line
    "Denied PUBLISH from <client> ..." (for wiring a device, not for production rates)."""
    mqtt_sites_port: IntRange(1024, 65535) | None = None
    """Port of the embedded Mosquitto's listener for the sites' devices, where an account's client id is
    its user name (default ``mqtt_port`` + 1000; ``mqtt_port`` is sewerwatch's own clients')."""
    mqtt_session_expiry: Annotated[str, check(lambda v: isinstance(v, str) and
                                              bool(re.fullmatch(r"[1-9]\d{0,5}[hdwmy]", v)),
                                              'a duration such as "12h", "7d", "2w" (h, d, w, m for months, y)')] = "7d"
    """Persistent broker sessions of clients gone this long expire (Mosquitto's units: h, d, w, m, y)."""
    mqtt_max_queued_messages: IntRange(100, 1 << 40) = 5_000_000
    """Each client's broker queue, in messages (sized for the longest outage of ``run`` to ride out)."""
    mqtt_max_queued_bytes: IntRange(1 << 16, 1 << 50) = 1 << 30
    """Each client's broker queue, in bytes."""

    @property
    def sites_port(self) -> int:
        """The embedded broker's port for the sites' devices."""
        return self.mqtt_sites_port or self.mqtt_port + SITES_PORT_OFFSET

    @model_validator(mode="after")
    def _ports(self):
        if self.sites_port > 65535 or self.sites_port == self.mqtt_port:
            why = (f"it is mqtt_port's ({self.mqtt_port})" if self.mqtt_sites_port
                   else f"mqtt_port {self.mqtt_port} + {SITES_PORT_OFFSET} is not a port")
            raise fail(("mqtt_sites_port",), f"the sites' listener needs a port of its own ({why})")
        return self

    def with_environment(self) -> "Services":
        """These services with the ``SEWERWATCH_*`` environment overrides applied."""
        env = os.environ
        state = Path(env["SEWERWATCH_STATE_DIR"]).resolve() if env.get("SEWERWATCH_STATE_DIR") else (
            self.state_dir or default_state_dir())
        return replace(self, db_url=env.get("SEWERWATCH_DB_URL") or self.db_url,
                       mqtt_url=env.get("SEWERWATCH_MQTT_URL") or self.mqtt_url, state_dir=state,
                       pg_port=int(env.get("SEWERWATCH_PG_PORT") or self.pg_port),
                       mqtt_port=int(env.get("SEWERWATCH_MQTT_PORT") or self.mqtt_port),
                       mqtt_sites_port=int(env.get("SEWERWATCH_MQTT_SITES_PORT") or self.mqtt_sites_port or 0) or None)


@table
class Site(Table):
    """``[[sites]]``: an industrial user."""

    id: Slug
    """A short id, used in MQTT topics and on the command line."""
    name: Text
    """The user's name as documents print it."""
    pack: Text | None = None
    """The rule pack it is judged by (default: the utility's)."""
    sic: Annotated[str, check(lambda v: isinstance(v, str) and bool(re.fullmatch(r"\d{4}", v)),
                              "a 4-digit SIC code as a string")] | None = None
    """Its Standard Industrial Classification code (a string: ``"2013"``)."""
    permit: Text | None = None
    """The number of its wastewater discharge permit."""
    contacts: TextList | None = None
    """The people to call at the plant, one line each (``"J. Doe, plant manager, 608-555-0100"``): the office shows them."""
    mqtt_devices: Annotated[tuple[str, ...], check(lambda v: isinstance(v, (list, tuple)) and len(set(v)) == len(v) and
                                                   all(isinstance(x, str) and SLUG.match(x) for x in v),
                                                   "a list of distinct short lowercase ids (letters, digits, - and _)",
                                                   tuple)] = ()
    """Devices of the site that connect to the broker on their own, each with an account of its own
    (``site-<id>.<device>``; on the embedded broker an account is one connection)."""

    def broker_accounts(self) -> list[str]:
        """The ids of the site's broker accounts: its own (``acme``) and one per device (``acme.probe``)."""
        return [self.id] + [f"{self.id}.{d}" for d in self.mqtt_devices]


@table
class Device(Table):
    """``[[devices]]``: a Modbus TCP device at a control manhole."""

    id: Slug
    """The device's id."""
    site: Text
    """The site it stands at (a ``[[sites]]`` id)."""
    host: Text = "127.0.0.1"
    """Its address."""
    port: IntRange(1, 65535) = 502
    """Its Modbus TCP port."""
    unit_id: IntRange(0, 247) = 1
    """Its Modbus unit id."""
    profile: Text = "generic-manhole"
    """Its register profile (``ingest/profiles/<profile>.toml``)."""
    interval_s: Positive = 1.0
    """Seconds between polls [s]."""
    shard: Slug | None = None
    """The collector that polls it (one of ``[modbus] shards``), when the devices are split among several."""


@table
class Sensor(Table):
    """``[[sensors]]``: one measured quantity at a site."""

    site: Text
    """The site (a ``[[sites]]`` id)."""
    name: Slug
    """The sensor's name, unique at its site."""
    parameter: OneOf(*SENSOR_PARAMETERS)
    """What it measures."""
    unit: Text
    """The unit of its readings (one of the parameter's units)."""
    source: OneOf("modbus", "mqtt")
    """Where its readings come from."""
    device: Text | None = None
    """A Modbus sensor's device (a ``[[devices]]`` id)."""
    field: Slug | None = None
    """A Modbus sensor's field of the device profile (default: the parameter)."""
    topic: Text | None = None
    """An MQTT sensor's topic (default ``sewerwatch/<site>/<name>``)."""
    interval_s: Positive | None = None
    """An MQTT sensor's nominal sample interval [s] (a Modbus sensor's is its device's)."""
    full_scale: Positive | None = None
    """The instrument's upper limit [the sensor's unit], above which a reading is implausible."""

    @model_validator(mode="after")
    def _consistent(self):
        if self.name == "maintenance":
            raise fail(("name",), "'maintenance' is taken: sewerwatch/<site>/maintenance is the topic a device opens "
                       "and ends maintenance windows on; name the sensor otherwise")
        known_unit(self.unit, self.parameter)
        if self.source == "modbus":
            if self.device is None:
                raise fail(("device",), "missing (required for a modbus sensor)")
            if self.topic is not None:
                raise fail(("topic",), "only an mqtt sensor has a topic")
            object.__setattr__(self, "field", self.field or self.parameter)
            return self
        for k in ("device", "field"):
            if getattr(self, k) is not None:
                raise fail((k,), "only a modbus sensor has a device and field")
        object.__setattr__(self, "topic", self.topic or f"sewerwatch/{self.site}/{self.name}")
        return self

    @property
    def key(self) -> str:
        """``<site>/<name>``, unique in the utility."""
        return f"{self.site}/{self.name}"

    @property
    def full_scale_canonical(self) -> float | None:
        """:attr:`full_scale` in the parameter's canonical unit, or None."""
        return None if self.full_scale is None else float(to_canonical(self.parameter, self.unit, self.full_scale))

    @property
    def address(self) -> str:
        """Where the reading comes from: ``modbus:<device>/<field>`` or ``mqtt:<topic>``."""
        return f"modbus:{self.device}/{self.field}" if self.source == "modbus" else f"mqtt:{self.topic}"


@table
class Contact(Table):
    """``[[alerts.contacts]]``: who alerts go to."""

    name: Text
    """The contact's name."""
    urls: TextList
    """Apprise URLs (``mailto://...``, ``ntfy://...``, ``json://...``)."""
    escalation: Bool = False
    """True for the second contact list, reached when an alert is not acknowledged in time."""


@table
class Alerts(Table):
    """``[alerts]``: alert delivery, hold-off and escalation, sensor health."""

    hold_off_s: Positive = 300.0
    """An episode must last this long before its alert goes out [s]."""
    escalate_after_min: Positive = 30.0
    """An alert not acknowledged this long goes to the escalation contacts [min]."""
    contacts: Tables(Contact) = ()
    """Who alerts go to."""
    console: Bool = True
    """The console channel on or off."""
    mqtt: Bool = True
    """The MQTT channel (``sewerwatch/alerts/...``) on or off."""
    no_data_after_s: Positive = 900.0
    """A sensor silent this long raises a sensor-health alert [s]."""
    flatline_after_s: Positive = 3600.0
    """A sensor repeating one value this long raises a sensor-health alert [s]."""
    retry_attempts: IntRange(1, 20) = 5
    """Attempts of a failed delivery."""
    retry_backoff_s: Positive = 2.0
    """First wait between attempts, doubling [s]."""
    digest_at: Annotated[str | None, check(lambda v: v is False or v is None or isinstance(v, str) and
                                           bool(re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v)),
                                           "a local time HH:MM (or false for none)", lambda v: v or None)] = "07:00"
    """Local HH:MM of the daily digest, false for none."""
    readings_url: Url("http", "https") | None = None
    """A link template with ``{site}``, ``{sensor}``, ``{from_ms}``, ``{to_ms}`` (e.g. a Grafana dashboard)."""
    clock_skew_s: Positive = 60.0
    """A device whose stamps run steadily further ahead of or behind the collector's clock than this raises a
    "clock-skew" sensor-health alert [s]; a late reading this much older than its sensor's newest is "late"."""


@table
class RunOptions(Table):
    """``[run]``: leadership and liveness of ``sewerwatch run``."""

    lease_s: Positive = 5.0
    """The leader's lease in the database [s], renewed every second: a frozen leader loses it after this long
    and a standby takes over."""
    deadman_url: Url("http", "https") | None = None
    """A dead man's switch (a healthchecks-style URL) the leader GETs every ``deadman_every_s`` while its loop
    answers; the service alerts when the pings stop."""
    deadman_every_s: Positive = 60.0
    """How often the dead man's switch is pinged [s]."""


@table
class Retention(Table):
    """``[retention]``: the storage policy, applied by ``sewerwatch db maintain`` and periodically by ``run``."""

    raw_days: IntRange(1, 366 * 100) | None = None
    """Raw readings are kept this many days (default: the records period)."""
    records_years: IntRange(RECORDS_YEARS_MIN, 100, f"whole years from {RECORDS_YEARS_MIN} (the federal minimum, "
                            "40 CFR 403.12(o)(2)) to 100") = RECORDS_YEARS_MIN
    """One-minute aggregates are kept this long [years]; what a violation, a notice, an SNC decision, a signed
    report or an open enforcement case points to (the raw readings around every violation episode) is kept as long
    as that record."""
    evidence_margin_min: Positive = 60.0
    """Raw readings kept either side of an episode [min]."""
    compress_after_days: Positive = 7.0
    """Where the TimescaleDB build compresses, chunks older than this [days]."""
    aggregate_lookback_h: Positive = 24.0
    """Late readings this much older than the aggregates' end are still folded in [h]."""
    maintain_every_s: Positive = 900.0
    """How often ``run`` maintains [s]."""
    dead_letters_days: IntRange(30, 366 * 100) | None = None
    """Payloads that could not be used are kept this many days (default: the records period) [days]."""
    sessions_days: Positive = 30.0
    """Office sign-in sessions not used for this long are removed from the state folder [days]."""

    @property
    def records_days(self) -> int:
        """The records period [days] (a year counted as 366 days, never short)."""
        return 366 * self.records_years

    @property
    def dead_letters_keep_days(self) -> int:
        """Dead letters kept [days]: ``dead_letters_days``, else the records period."""
        return self.dead_letters_days if self.dead_letters_days is not None else self.records_days

    @property
    def raw_keep_days(self) -> int:
        """Raw readings kept [days]: ``raw_days``, else the records period."""
        return self.raw_days if self.raw_days is not None else self.records_days


@table
class IngestOptions(Table):
    """``[ingest]``: what a collector accepts, and how much disk the writer's spool may take."""

    max_payload_bytes: IntRange(256, 1 << 30) = 1 << 20
    """A message longer than this is a dead letter, unparsed [bytes]."""
    max_nesting: IntRange(2, 1000) = 16
    """Deepest nesting of JSON arrays and objects a payload may have (checked before parsing)."""
    max_future_s: Positive = 300.0
    """A reading stamped more than this ahead of the collector's clock is a dead letter "time out of range" [s]."""
    max_past_days: Positive = 400.0
    """A reading older than this is a dead letter "time out of range" [days]."""
    spool_max_bytes: IntRange(1024, 1 << 50) = 1 << 30
    """The writer's spool may grow to this during a database outage; beyond it the collectors stop acknowledging [bytes]."""


@table
class WebOptions(Table):
    """``[web]``: the office and the acknowledgement page ``sewerwatch run`` serves (only when the
    table is present; ``sewerwatch web`` serves the office with these defaults without one)."""

    bind: Address = "127.0.0.1"
    """Address the page listens on (meant to sit behind the utility's reverse proxy)."""
    port: IntRange(0, 65535) = 8470
    """TCP port (0: any free one)."""
    public_url: Url("http", "https") | None = None
    """The page's address as phones reach it (default ``http://<bind>:<port>``)."""
    link_lifetime_h: Positive = 24.0
    """How long an acknowledgement link is valid after its message was made [h]."""
    rate_per_min: Positive = 30.0
    """Requests one client address may make a minute, on average [1/min]."""
    rate_burst: IntRange(1, 10_000) = 10
    """Requests one client address may make at once before the rate applies."""
    trusted_proxies: Networks = ("127.0.0.1", "::1")
    """Peer addresses (or networks) whose ``X-Forwarded-For`` header names the client."""
    session_idle_min: Positive = 30.0
    """The office: a session without a click for this long ends [min]."""
    session_max_h: Positive = 12.0
    """A session of the office ends this long after its sign-in, whatever the clicks [h]."""
    login_per_min: IntRange(1, 10_000) = 10
    """Sign-in attempts one client address may make a minute."""
    lockout_after: IntRange(1, 1000) = 5
    """Failed sign-ins in a row, from one client address, after which the account is locked from that address."""
    lockout_min: Positive = 15.0
    """How long an account stays locked from that address [min] (``sewerwatch users enable`` unlocks it)."""
    grafana_url: Url("http", "https") | None = None
    """The Grafana server the dashboards were pushed to: an industrial user's page links its Site dashboard."""
    mail_url: Url("mailto", "mailtos") | None = None
    """The portal: the mail server invitations and receipts go through, as an apprise
    ``mailto://`` URL without ``to`` (``mailtos://user:pass@smtp.village.example?from=sewer@...``)."""
    invitation_days: Positive = 7.0
    """How long an invitation to the portal can be used after it was sent [days]."""
    upload_max_mb: Positive = 10.0
    """Largest file the portal takes in one upload (a lab CSV, a lab's PDF report, a plan) [MB]."""

    @property
    def link_base(self) -> str:
        """The public address the links start with, without a trailing slash."""
        return (self.public_url or f"http://{self.bind}:{self.port}").rstrip("/")


#: a table kept as data, checked by its owner (a copy of it)
_as_table = refusing(lambda v: isinstance(v, dict), "a table", dict)
AsData = Annotated[dict, BeforeValidator(_as_table)]


def _modbus(v):
    v = _as_table(v)
    if "shards" in v:
        s = v["shards"]
        if not isinstance(s, list) or not s or not all(isinstance(x, str) and x for x in s):
            raise fail(("shards",), f"expected a non-empty list of strings, got {show(s)}")
        for x in s:
            if not SLUG.match(x):
                raise fail(("shards",), f"expected a short lowercase id (letters, digits, - and _), got {x!r}")
        if len(set(s)) != len(s):
            raise fail(("shards",), f"a shard is named twice in {list(s)}")
    return v


@table(kw_only=True)
class Config(Table):
    """The utility's config file."""

    utility: Utility = Utility()
    """The utility and the ordinance it enforces."""
    services: Services = Services()
    """The database and broker."""
    sites: Tables(Site) = ()
    """The industrial users."""
    devices: Tables(Device) = ()
    """Modbus TCP devices at control manholes."""
    sensors: Tables(Sensor) = ()
    """The sensors, Modbus and MQTT."""
    alerts: Alerts = Alerts()
    """Alerts and their contacts."""
    modbus: Annotated[dict, BeforeValidator(_modbus)] = dataclasses.field(default_factory=dict)
    """The Modbus collector's settings (ingest/modbus/README.md) and ``shards``: the short ids of
    collectors the devices are split among (each device then names its ``shard``)."""
    mqtt: Mqtt = Mqtt()
    """The MQTT collector's topic schemes and inputs."""
    retention: Retention = Retention()
    """The storage policy."""
    documents: AsData = dataclasses.field(default_factory=dict)
    """The letterhead of printed documents: ``letterhead`` (lines under the utility's name),
    ``signed_by`` and ``signer_title`` (who signs notices), ``letters`` (the folder of the
    utility's letter templates, relative to the config file's folder)."""
    enforcement: AsData = dataclasses.field(default_factory=dict)
    """Enforcement settings: ``guide``, ``accidental_report_hours``, ``snc_periods``, ``late_report_period``,
    ``daily_maximum``, ``average_days``, ``annual_report_due`` and ``[enforcement.program]`` (the program's
    facts for the state's ICIS-NPDES report) (enforcement/README.md, enforcement/settings.py, limits/readings.py)."""
    ingest: IngestOptions = IngestOptions()
    """Bounds on what the collectors accept."""
    web: WebOptions | None = None
    """The acknowledgement page; absent: no page, no links."""
    backup: Backup | None = None
    """Backups of the embedded database; absent: none."""
    run: RunOptions = RunOptions()
    """``sewerwatch run``'s lease and the dead man's switch."""
    field: FieldOptions = FieldOptions()
    """Instruments and field work: maintenance windows, calibrations, drift, inspections."""
    instruments: Tables(Instrument) = ()
    """The instruments at the sensors (make, model, serial, owner, calibration interval)."""
    path: Internal = "<dict>"
    raw: Internal = dataclasses.field(default_factory=dict)

    @model_validator(mode="after")
    def _references(self, info: ValidationInfo):
        if info.context is None:    # made from checked tables (dataclasses.replace)
            return self
        sites = _unique(self.sites, "sites", lambda s: s.id, "site id")
        for i, s in enumerate(self.sites):
            if s.pack is not None:
                _check_pack(s.pack, self.utility.pack_dirs, ("sites", i, "pack"))
        object.__setattr__(self, "sites", tuple(s if s.pack else replace(s, pack=self.utility.pack) for s in self.sites))
        shards = self.modbus_shards
        for i, d in enumerate(self.devices):
            _ref(d.site, sites, "site", "sites", ("devices", i, "site"))
            if PROFILES_DIR.is_dir() and not (PROFILES_DIR / f"{d.profile}.toml").is_file():
                known = ", ".join(sorted(p.stem for p in PROFILES_DIR.glob("*.toml")))
                raise fail(("devices", i, "profile"), f"unknown device profile {d.profile!r} (known: {known})")
            if d.shard is not None and d.shard not in shards:
                raise fail(("devices", i, "shard"), f"unknown shard {d.shard!r} " + (
                    f"(shards: {', '.join(shards)})" if shards else "(no [modbus] shards are declared)"))
            if shards and d.shard is None:
                raise fail(("devices", i, "shard"), f"missing: [modbus] shards splits the devices among collectors "
                           f"({', '.join(shards)}); name the one that polls this device")
        devices = _unique(self.devices, "devices", lambda d: d.id, "device id")
        sensors = []
        for i, s in enumerate(self.sensors):
            _ref(s.site, sites, "site", "sites", ("sensors", i, "site"))
            if s.source == "modbus":
                _ref(s.device, devices, "device", "devices", ("sensors", i, "device"))
                if s.interval_s is not None:
                    raise fail(("sensors", i, "interval_s"), "a modbus sensor is read at its device's interval_s; give it there")
                s = replace(s, interval_s=devices[s.device].interval_s)
            sensors.append(s)
        object.__setattr__(self, "sensors", tuple(sensors))
        keys = _unique(self.sensors, "sensors", lambda s: s.key, "sensor")
        for i, ins in enumerate(self.instruments):
            _ref(ins.sensor, keys, "sensor", "sensors", ("instruments", i, "sensor"))
            if ins.range_low is not None and ins.range_high is not None and ins.range_high <= ins.range_low:
                raise fail(("instruments", i, "range_high"), f"{ins.range_high:g} is not above range_low "
                           f"{ins.range_low:g}")
        _unique(self.instruments, "instruments", lambda s: s.sensor, "instrument of sensor")
        for i, topic, first in duplicates(self.sensors, lambda s: s.topic):
            raise fail(("sensors", i), f"duplicate topic {topic!r} (first at sensors[{first}])")
        mqtt_keys = {s.key for s in self.sensors if s.source == "mqtt"}
        for i, inp in enumerate(self.mqtt.inputs):
            for j, m in enumerate(inp.metrics):
                _ref(m.sensor, mqtt_keys, "MQTT sensor", "MQTT sensors", ("mqtt", "inputs", i, "metrics", j, "sensor"))
        return self

    # the config as the packages read it
    name = property(lambda self: self.utility.name, doc="``[utility] name``.")
    pack = property(lambda self: self.utility.pack, doc="``[utility] pack``.")
    timezone = property(lambda self: self.utility.timezone, doc="``[utility] timezone``.")
    pack_dirs = property(lambda self: self.utility.pack_dirs, doc="``[utility] pack_dirs``, resolved.")
    contacts = property(lambda self: self.alerts.contacts, doc="``[[alerts.contacts]]``.")
    hold_off_s = property(lambda self: self.alerts.hold_off_s, doc="``[alerts] hold_off_s``.")
    escalate_after_min = property(lambda self: self.alerts.escalate_after_min, doc="``[alerts] escalate_after_min``.")
    alert_options = property(lambda self: self.alerts, doc="``[alerts]``.")
    mqtt_topics = property(lambda self: self.mqtt.topics, doc="``[mqtt] topics``.")
    mqtt_share_group = property(lambda self: self.mqtt.share_group, doc="``[mqtt] share_group``.")
    sparkplug_host_id = property(lambda self: self.mqtt.sparkplug_host_id, doc="``[mqtt] sparkplug_host_id``.")
    modbus_shards = property(lambda self: tuple(self.modbus.get("shards", ())), doc="``[modbus] shards``.")

    @property
    def mqtt_inputs(self) -> tuple[MqttInput, ...]:
        """``[mqtt] topics`` (each a sewerwatch-format input) and then ``[[mqtt.inputs]]``."""
        return tuple(MqttInput(p) for p in self.mqtt.topics) + self.mqtt.inputs

    def site(self, site_id: str) -> Site:
        for s in self.sites:
            if s.id == site_id:
                return s
        raise KeyError(site_id)


def _unique(items, where: str, key, what: str) -> dict:
    for i, k, first in duplicates(items, key):
        raise fail((where, i), f"duplicate {what} {k!r} (first at {where}[{first}])")
    return {key(item): item for item in items}


def _ref(value, known, what: str, plural: str, at: tuple) -> None:
    if value not in known:
        raise fail(at, f"unknown {what} {value!r} ({plural}: {', '.join(sorted(known)) or 'none'})")


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


def from_dict(data: dict, path: str = "<dict>") -> Config:
    """Validate an already-parsed config (see :func:`load`). A config being read says its own
    pack folders: the config in force is no longer loaded for them (:func:`defer_pack_dirs`)."""
    global _deferred
    _deferred = None
    base = Path(path).resolve().parent if Path(path).is_file() else Path.cwd()
    cfg = validate(Config, data, path, ConfigError, context={"base": base})      # not a table: its first problem
    return replace(cfg, path=path, raw=data, services=cfg.services.with_environment())
