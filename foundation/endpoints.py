"""Where the database and the broker are, with credentials.

A configured ``db_url``/``mqtt_url`` (config or environment) is used as given. Otherwise
the URLs are those of the embedded services that ``sewerwatch services up`` starts: on
loopback, on the config's ports, with the passwords kept in the state folder's
``secrets.json`` (:mod:`foundation.secrets`). Computing a URL starts nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote

from foundation import secrets

#: The embedded services listen on loopback only.
HOST = "127.0.0.1"
#: The database the embedded cluster serves.
DATABASE = "sewerwatch"
#: Database account (``secrets.json``'s ``db`` section) -> PostgreSQL role name. ``admin``
#: is the embedded cluster's superuser; the others are described in ``sewerwatch/db/roles.py``.
DB_ROLES = {"admin": "sewerwatch_admin", "owner": "sewerwatch_owner", "ingest": "sewerwatch_ingest",
            "grafana": "sewerwatch_grafana"}
#: Broker account (``secrets.json``'s ``mqtt`` section) -> MQTT user name.
MQTT_USERS = {"admin": "sewerwatch", "collector": "collector", "device": "device", "notifier": "notifier"}
#: A site's own broker account is this prefix and the site id (``secrets.json``'s ``mqtt_sites``).
SITE_USER_PREFIX = "site-"
#: The tree every sewerwatch reading topic lives under, subscribed whole.
WHOLE_TREE = "sewerwatch/#"
#: The Sparkplug B namespace (``spBv1.0/<group>/<type>/<edge node>[/<device>]``).
SPARKPLUG = "spBv1.0"


def site_user(site: str) -> str:
    """The MQTT user name of site ``site``'s devices (``site-<id>``)."""
    return f"{SITE_USER_PREFIX}{site}"


def site_topics(cfg, site: str) -> list[str]:
    """The topic filters site ``site``'s devices may publish to: each ``[mqtt] topics``
    and ``[[mqtt.inputs]]`` pattern with the site filled in and everything from its ``{site}``
    level down (``sewerwatch/acme/#``, ``telegraf/acme/#``, ``plc/acme/#``), the explicit
    topics of the site's MQTT sensors, and the messages of the Sparkplug edge nodes whose
    metrics map to the site's sensors (:func:`sparkplug_site_topics`), and always the site's
    maintenance topic ``sewerwatch/<site>/maintenance`` (a device opens and ends maintenance
    windows there: ``ingest/mqtt/maintenance.py``)."""
    out = []
    for inp in cfg.mqtt_inputs:
        levels = inp.topic.split("/")
        if "{site}" not in levels:      # a telegraf input naming its sites in tags, Sparkplug: below
            continue
        i = levels.index("{site}")
        f = "/".join([*levels[:i], site, "#"])
        if f not in out:
            out.append(f)
    for s in cfg.sensors:
        if s.site == site and s.source == "mqtt" and s.topic and not any(topic_matches(f, s.topic) for f in out):
            out.append(s.topic)
    maintenance = f"sewerwatch/{site}/maintenance"
    if not any(topic_matches(f, maintenance) for f in out):
        out.append(maintenance)
    return out + [f for f in sparkplug_site_topics(cfg, site)[0] if f not in out]


#: The Sparkplug B messages an edge node publishes: of the node, and of its devices.
SPARKPLUG_NODE_TYPES = ("NBIRTH", "NDATA", "NDEATH")
SPARKPLUG_DEVICE_TYPES = ("DBIRTH", "DDATA", "DDEATH")


def sparkplug_site_topics(cfg, site: str) -> tuple[list[str], list[str]]:
    """What the Sparkplug edge nodes of site ``site`` (those whose metrics map to its
    sensors, ``[[mqtt.inputs.metrics]]``) may publish, and what they may read: their own
    births, data and deaths (``spBv1.0/<group>/NBIRTH/<node>``, ...,
    ``spBv1.0/<group>/DDATA/<node>/+``); their commands (``.../NCMD/<node>/#``,
    ``.../DCMD/<node>/#``: rebirth requests) and the primary host's STATE
    (``spBv1.0/STATE/<host id>``)."""
    write, read = [], []
    for inp in cfg.mqtt_inputs:
        if inp.format != "sparkplug":
            continue
        group = inp.topic.split("/")[1]
        for node in sorted({n for n, _, _, sensor in inp.metrics if sensor.split("/", 1)[0] == site}):
            base = f"{SPARKPLUG}/{group}"
            write += [f"{base}/{t}/{node}" for t in SPARKPLUG_NODE_TYPES]
            write += [f"{base}/{t}/{node}/+" for t in SPARKPLUG_DEVICE_TYPES]
            read += [f"{base}/NCMD/{node}/#", f"{base}/DCMD/{node}/#"]
    if read:
        read.append(sparkplug_state_topic(cfg))
    return write, read


def sparkplug_state_topic(cfg) -> str:
    """The primary host's STATE topic, ``spBv1.0/STATE/<[mqtt] sparkplug_host_id>``."""
    return f"{SPARKPLUG}/STATE/{cfg.sparkplug_host_id}"


def sparkplug_host(cfg) -> str | None:
    """The Sparkplug host id ``run`` takes the part of, when the config has Sparkplug inputs."""
    return cfg.sparkplug_host_id if any(i.format == "sparkplug" for i in cfg.mqtt_inputs) else None


def input_trees(cfg) -> tuple[str, ...]:
    """The topic trees the collector subscribes to: ``sewerwatch/#`` and the first level of
    every ``[[mqtt.inputs]]`` pattern (``telegraf/#``), as ingest/mqtt/topics.py does."""
    return tuple(subscription_filters([inp.topic for inp in cfg.mqtt_inputs]))


def collector_filters(cfg) -> list[str]:
    """Every topic filter the collector subscribes to, and so must be allowed to read:
    :func:`input_trees` and each explicit MQTT sensor topic outside them (Node-RED on
    ``nodered/<site>/ph``). The broker's ACL for the collector is made from this list, and
    the collector's topic map subscribes to the same (``TopicMap.subscriptions``)."""
    return subscription_filters([inp.topic for inp in cfg.mqtt_inputs],
                                [s.topic for s in cfg.sensors if s.source == "mqtt" and s.topic])


def subscription_filters(patterns, explicit=()) -> list[str]:
    """``sewerwatch/#``, the tree of each pattern (:func:`tree_filter`), and each explicit
    topic no filter before it covers."""
    out = [WHOLE_TREE]
    for p in patterns:
        f = tree_filter(p)
        if f not in out:
            out.append(f)
    for topic in explicit:
        if not any(topic_matches(f, topic) for f in out) and topic not in out:
            out.append(topic)
    return out


def filter_covers(wide: str, narrow: str) -> bool:
    """Whether every topic the MQTT filter ``narrow`` matches is matched by ``wide``
    (``sewerwatch/#`` covers ``sewerwatch/acme/#``; ``spBv1.0/#`` covers ``spBv1.0/g/DDATA/n/+``)."""
    w, n = wide.split("/"), narrow.split("/")
    for i, lvl in enumerate(w):
        if lvl == "#":
            return True
        if i >= len(n):
            return False
        if n[i] == "#" or (lvl != "+" and (n[i] == "+" or lvl != n[i])):
            return False
    return len(w) == len(n)


def tree_filter(pattern: str) -> str:
    """The subscription covering every topic under ``pattern``'s literal first level
    (``telegraf/{site}/{sensor}`` -> ``telegraf/#``; a pattern starting with a placeholder
    -> ``#``)."""
    first = pattern.split("/")[0]
    return "#" if "{" in first else f"{first}/#"


def topic_matches(filt: str, topic: str) -> bool:
    """Whether the MQTT topic filter ``filt`` (``+`` one level, ``#`` the rest) matches ``topic``."""
    f, t = filt.split("/"), topic.split("/")
    for i, lvl in enumerate(f):
        if lvl == "#":
            return True
        if i >= len(t) or (lvl != "+" and lvl != t[i]):
            return False
    return len(f) == len(t)


def hide_password(url: str | None) -> str | None:
    """``url`` with its password replaced by ``***`` (what a person or a log may read)."""
    if not url or "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    cred, host = rest.rsplit("@", 1)
    if ":" not in cred:
        return url
    return f"{scheme}://{cred.split(':', 1)[0]}:***@{host}"


def pg_url(account: str, password: str, port: int, database: str = DATABASE) -> str:
    """URL of an embedded-cluster ``account`` (``admin``, ``owner``, ``ingest``, ``grafana``)."""
    return f"postgresql://{DB_ROLES[account]}:{password}@{HOST}:{port}/{database}"


def broker_url(account: str, password: str, port: int) -> str:
    """URL of an embedded-broker ``account`` (``admin``, ``collector``, ``device``, ``notifier``)."""
    return f"mqtt://{MQTT_USERS[account]}:{quote(password, safe='')}@{HOST}:{port}"


def site_broker_url(site: str, password: str, port: int) -> str:
    """URL of site ``site``'s account on the embedded broker (its sites' listener, where the
    client id is the account's name)."""
    return f"mqtt://{site_user(site)}:{quote(password, safe='')}@{HOST}:{port}"


@dataclass
class Endpoints:
    """Where the database and the broker are, with credentials.

    ``db_urls`` maps ``owner``, ``ingest``, ``grafana`` (and ``admin`` for the embedded
    superuser) to URLs; ``mqtt_urls`` maps ``admin``, ``collector``, ``device``,
    ``notifier`` to broker URLs; ``site_urls`` each site id to its devices' account. A
    configured service has only its one URL, under ``owner``/``admin``.
    """

    db_url: str
    mqtt_url: str
    db_embedded: bool
    mqtt_embedded: bool
    db_urls: dict = field(default_factory=dict)
    mqtt_urls: dict = field(default_factory=dict)
    site_urls: dict = field(default_factory=dict)

    def db(self, role: str = "owner") -> str:
        return self.db_urls.get(role) or self.db_url

    def mqtt(self, account: str = "admin") -> str:
        return self.mqtt_urls.get(account) or self.mqtt_url


def endpoints(cfg) -> Endpoints:
    """The endpoints of ``cfg`` (:class:`foundation.config.Config`)."""
    svc = cfg.services
    accounts = [(a, s.id) for s in cfg.sites for a in s.broker_accounts()]
    pw = secrets.load_or_create(svc.state_dir, [a for a, _ in accounts])
    db_urls = {} if svc.db_url else {a: pg_url(a, pw["db"][a], svc.pg_port) for a in DB_ROLES}
    mqtt_urls = {} if svc.mqtt_url else {a: broker_url(a, pw["mqtt"][a], svc.mqtt_port) for a in MQTT_USERS}
    site_urls = {} if svc.mqtt_url else {a: site_broker_url(a, pw["mqtt_sites"][a], svc.sites_port)
                                         for a, _ in accounts}
    return Endpoints(
        db_url=svc.db_url or db_urls["owner"],
        mqtt_url=svc.mqtt_url or mqtt_urls["admin"],
        db_embedded=not svc.db_url, mqtt_embedded=not svc.mqtt_url,
        db_urls=db_urls, mqtt_urls=mqtt_urls, site_urls=site_urls,
    )
