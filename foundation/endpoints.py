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


def site_user(site: str) -> str:
    """The MQTT user name of site ``site``'s devices (``site-<id>``)."""
    return f"{SITE_USER_PREFIX}{site}"


def site_topics(cfg, site: str) -> list[str]:
    """The topic filters site ``site``'s devices may publish to: each ``[mqtt] topics``
    and ``[[mqtt.inputs]]`` pattern with the site filled in and everything from its ``{site}`` level down
    (``sewerwatch/acme/#``), and the explicit topics of the site's MQTT sensors."""
    out = []
    for inp in cfg.mqtt_inputs:
        levels = inp.topic.split("/")
        if "{site}" not in levels:      # a telegraf input naming its sites in tags: no site's own
            continue
        i = levels.index("{site}")
        f = "/".join([*levels[:i], site, "#"])
        if f not in out:
            out.append(f)
    for s in cfg.sensors:
        if s.site == site and s.source == "mqtt" and s.topic and not any(topic_matches(f, s.topic) for f in out):
            out.append(s.topic)
    return out


def input_trees(cfg) -> tuple[str, ...]:
    """The topic trees the collector subscribes to: ``sewerwatch/#`` and the first level of
    every ``[[mqtt.inputs]]`` pattern (``telegraf/#``), as ingest/mqtt/topics.py does."""
    out = ["sewerwatch/#"]
    for inp in cfg.mqtt_inputs:
        f = tree_filter(inp.topic)
        if f not in out:
            out.append(f)
    return tuple(out)


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


def pg_url(account: str, password: str, port: int, database: str = DATABASE) -> str:
    """URL of an embedded-cluster ``account`` (``admin``, ``owner``, ``ingest``, ``grafana``)."""
    return f"postgresql://{DB_ROLES[account]}:{password}@{HOST}:{port}/{database}"


def broker_url(account: str, password: str, port: int) -> str:
    """URL of an embedded-broker ``account`` (``admin``, ``collector``, ``device``, ``notifier``)."""
    return f"mqtt://{MQTT_USERS[account]}:{quote(password, safe='')}@{HOST}:{port}"


def site_broker_url(site: str, password: str, port: int) -> str:
    """URL of site ``site``'s account on the embedded broker."""
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
    pw = secrets.load_or_create(svc.state_dir, [s.id for s in cfg.sites])
    db_urls = {} if svc.db_url else {a: pg_url(a, pw["db"][a], svc.pg_port) for a in DB_ROLES}
    mqtt_urls = {} if svc.mqtt_url else {a: broker_url(a, pw["mqtt"][a], svc.mqtt_port) for a in MQTT_USERS}
    site_urls = {} if svc.mqtt_url else {s.id: site_broker_url(s.id, pw["mqtt_sites"][s.id], svc.mqtt_port)
                                         for s in cfg.sites}
    return Endpoints(
        db_url=svc.db_url or db_urls["owner"],
        mqtt_url=svc.mqtt_url or mqtt_urls["admin"],
        db_embedded=not svc.db_url, mqtt_embedded=not svc.mqtt_url,
        db_urls=db_urls, mqtt_urls=mqtt_urls, site_urls=site_urls,
    )
