"""The services sewerwatch uses: configured ones, or its own embedded TimescaleDB and Mosquitto.

With no ``db_url``/``mqtt_url`` configured, :func:`up` starts a TimescaleDB cluster and a
Mosquitto broker in the state folder (``foundation.paths.default_state_dir``), on loopback
ports 55432 and 51883 by default, and :func:`endpoints` gives their URLs with credentials.
"""

from __future__ import annotations

from foundation import secrets as _secrets
from foundation.config import Config
from foundation.endpoints import (Endpoints, collector_filters, endpoints, hide_password, input_trees, site_topics,
                                  sparkplug_host, sparkplug_site_topics, sparkplug_state_topic)
from foundation.errors import InputError
from sewerwatch.services.mosquitto import EmbeddedMosquitto
from sewerwatch.services.postgres import EmbeddedPostgres

__all__ = ["Endpoints", "down", "embedded", "endpoints", "site_credentials", "status", "up"]


def embedded(cfg: Config) -> tuple[EmbeddedPostgres, EmbeddedMosquitto]:
    """The embedded services described by ``cfg`` (created or not)."""
    state = cfg.services.state_dir
    accounts = [(a, s.id) for s in cfg.sites for a in s.broker_accounts()]
    pw = _secrets.load_or_create(state, [a for a, _ in accounts])
    state.chmod(0o755)  # the postgres and mosquitto users must reach their subfolders
    # a site's devices with accounts of their own publish where the site may
    sites = {a: (pw["mqtt_sites"][a], site_topics(cfg, site)) for a, site in accounts}
    from sewerwatch.backup import archiving     # lazy: the backups build on this module

    return (EmbeddedPostgres(state, cfg.services.pg_port, pw["db"], archiving.archive_command(cfg, pw)),
            EmbeddedMosquitto(state, cfg.services.mqtt_port, pw["mqtt"], sites, input_trees(cfg),
                              log_denied=cfg.services.mqtt_log_denied, collector_topics=tuple(collector_filters(cfg)),
                              site_reads={a: sparkplug_site_topics(cfg, site)[1] for a, site in accounts},
                              sparkplug_state=sparkplug_state_topic(cfg) if sparkplug_host(cfg) else None,
                              sites_port=cfg.services.sites_port, session_expiry=cfg.services.mqtt_session_expiry,
                              max_queued_messages=cfg.services.mqtt_max_queued_messages,
                              max_queued_bytes=cfg.services.mqtt_max_queued_bytes))


def up(cfg: Config, log=lambda msg: None, *, db: bool = True, mqtt: bool = True) -> Endpoints:
    """Start whatever embedded service is needed and not running; bootstrap the database.

    Idempotent: running services are left alone, killed ones are started again.
    ``db``/``mqtt`` choose which of the two to bring up.
    """
    from sewerwatch.db import bootstrap   # lazy: psycopg, which `services status` and --help do not need

    pg, mq = embedded(cfg)
    if db and not cfg.services.db_url:
        if not pg.initialised():
            log(f"creating the TimescaleDB cluster in {pg.data_dir}")
            pg.init()
        if not pg.running():
            log(f"starting TimescaleDB on 127.0.0.1:{pg.port}")
            pg.start()
        bootstrap.embedded(pg)
        from sewerwatch.backup import archiving

        archiving.ensure(cfg, pg, log)
    if mqtt and not cfg.services.mqtt_url:
        if mq.running() and not mq.conf_current():
            # listeners and bounds are not reloaded by SIGHUP; a clean stop saves the sessions
            log("restarting Mosquitto: its listeners or bounds changed")
            mq.stop()
        if not mq.running():
            log(f"starting Mosquitto on 127.0.0.1:{mq.port} (sites' devices: 127.0.0.1:{mq.sites_port})")
            mq.start()
        elif mq.sync_accounts():
            log("Mosquitto: site accounts brought up to date with the config")
    return endpoints(cfg)


def down(cfg: Config, log=lambda msg: None) -> None:
    """Stop the embedded services (their data stays in the state folder)."""
    pg, mq = embedded(cfg)
    if mq.pid() is not None:
        log("stopping Mosquitto")
        mq.stop()
    if pg.pid() is not None:
        log("stopping TimescaleDB")
        pg.stop()


def site_credentials(cfg: Config, site: str) -> dict:
    """What an integrator needs to connect site ``site``'s devices: the broker URL with the
    site's own account, and the topics it may publish to.

    Raises
    ------
    foundation.errors.InputError
        For a site the config does not have, or a broker the config names (its accounts
        are not sewerwatch's to give).
    """
    if site not in {s.id for s in cfg.sites}:
        raise InputError(f"no site {site!r} in {cfg.path} (sites: {', '.join(s.id for s in cfg.sites) or 'none'})")
    if cfg.services.mqtt_url:
        raise InputError("the broker is configured ([services] mqtt_url), not embedded: its accounts are managed "
                         "there")
    ep = endpoints(cfg)
    devices = {d: ep.site_urls[f"{site}.{d}"] for d in cfg.site(site).mqtt_devices}
    return {"site": site, "mqtt_url": ep.site_urls[site], "topics": site_topics(cfg, site),
            "reads": sparkplug_site_topics(cfg, site)[1], "client_id": f"site-{site}", "devices": devices}


def status(cfg: Config, show_secrets: bool = False) -> dict:
    """The services in use: URLs and process state. The URLs' passwords are ``***`` unless
    ``show_secrets`` (``--show-secrets``, for integrators)."""
    ep = endpoints(cfg)
    pg, mq = embedded(cfg)
    shown = (lambda u: u) if show_secrets else hide_password
    out = {"db_url": shown(ep.db_url), "mqtt_url": shown(ep.mqtt_url), "state_dir": str(cfg.services.state_dir),
           "db_urls": {k: shown(u) for k, u in ep.db_urls.items()},
           "mqtt_urls": {k: shown(u) for k, u in ep.mqtt_urls.items()},
           "site_mqtt_urls": {k: shown(u) for k, u in ep.site_urls.items()},
           "secrets_shown": show_secrets}
    out["timescaledb"] = ({"embedded": False, "url": shown(ep.db_url)} if not ep.db_embedded
                          else {"embedded": True, **pg.status()})
    out["mosquitto"] = ({"embedded": False, "url": shown(ep.mqtt_url)} if not ep.mqtt_embedded
                        else {"embedded": True, **mq.status()})
    if not ep.db_embedded or out["timescaledb"].get("running"):
        out["timescaledb"]["server"] = server_description(ep.db_url)
    return out


def server_description(url: str, timeout_s: int = 3) -> dict | None:
    """The database server's name and what it lacks (:mod:`sewerwatch.db.server`), or None
    when it cannot be reached."""
    import psycopg   # lazy: `services status` of stopped services needs no driver

    from sewerwatch.db import server

    try:
        with psycopg.connect(url, connect_timeout=timeout_s, autocommit=True) as conn:
            return server.describe(conn).as_json()
    except psycopg.Error:
        return None


def acl_reads(acl_text: str, user: str) -> list[str]:
    """The topic filters ``user`` may read under a Mosquitto ACL file's text (``topic read``
    and ``topic readwrite`` lines of its ``user`` blocks)."""
    out, current = [], None
    for line in acl_text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "user":
            current = words[1]
        elif current == user and len(words) >= 3 and words[0] == "topic" and words[1] in ("read", "readwrite"):
            out.append(words[2])
        elif current == user and len(words) == 2 and words[0] == "topic":      # "topic X": readwrite
            out.append(words[1])
    return out


def mqtt_access(cfg: Config, granted: dict | None = None) -> dict:
    """Whether every topic a site's account may publish to reaches the collector: the collector's subscriptions (:func:`foundation.endpoints.collector_filters`,
    or the ones a running collector reports with the broker's answers, ``granted``), each
    site's topics and the subscription covering each, and for the embedded broker the read
    access its ACL file (as written now) gives the collector. ``problems`` lists what
    would make readings vanish at the broker: a site topic no subscription covers, a
    subscription the broker refused, one the ACL gives no read on."""
    from foundation.endpoints import filter_covers

    subs = list(granted) if granted else collector_filters(cfg)
    problems = []
    sites = {}
    for s in cfg.sites:
        topics = site_topics(cfg, s.id)
        covered = {t: next((f for f in subs if filter_covers(_unshared(f), t)), None) for t in topics}
        sites[s.id] = covered
        problems += [f"site {s.id} may publish to {t}, which no subscription of the collector covers"
                     for t, f in covered.items() if f is None]
    for f, st in (granted or {}).items():
        if str(st).startswith("refused"):
            problems.append(f"the broker refused the collector's subscription to {f} ({st})")
    readable, stale = None, False
    if not cfg.services.mqtt_url:
        _, mq = embedded(cfg)
        acl = mq.base / "acl"
        # a running collector is judged by the ACL the broker has; the config by the ACL
        # sewerwatch generates from it (what 'services up' and 'run' give the broker)
        text = acl.read_text() if granted is not None and acl.is_file() else mq.acl_text()
        stale = acl.is_file() and acl.read_text() != mq.acl_text()
        reads = acl_reads(text, "collector")
        readable = {f: any(filter_covers(r, _unshared(f)) for r in reads) for f in subs}
        problems += [f"the broker's ACL ({acl}) gives the collector no read on {f}: nothing published there "
                     "arrives (run 'sewerwatch services up' to write it again)" for f, ok in readable.items()
                     if not ok]
    return {"subscriptions": subs, "sites": sites, "collector_reads": readable, "problems": problems,
            "acl_stale": stale, "sparkplug_host": sparkplug_state_topic(cfg) if sparkplug_host(cfg) else None}


def _unshared(f: str) -> str:
    """``$share/<group>/<filter>`` -> ``<filter>``."""
    return f.split("/", 2)[2] if f.startswith("$share/") else f
