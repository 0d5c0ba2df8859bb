"""The embedded Mosquitto broker: password authentication, topic ACLs, persistence.

Accounts and what they may do (``acl`` below):

- ``admin``: everything (tests, tools, the demo).
- ``collector``: subscribe to readings ``sewerwatch/#`` only (ingest issue, Security).
- ``site-<id>``: one per site of the config ("Device identity"): publish only
  under that site's topics (``sewerwatch/<id>/#``, per ``[mqtt] topics`` pattern, and the
  explicit topics of its MQTT sensors). A device of one plant cannot write readings for
  another. ``sewerwatch services credentials SITE`` gives the integrator its URL.
- ``device``: publish under ``sewerwatch/#`` (the simulators and tests, which play many
  sites; not for field devices).
- ``notifier``: publish alerts under ``sewerwatch-alerts/#`` only.

Persistence is on and queues are deep, so a collector's persistent QoS 1 session keeps its
messages while the collector is down and across a broker restart. How promptly queued
messages reach the disk is :data:`AUTOSAVE` (the guide, docs/running/services.md, states the window).

Identity: two listeners, each with its own password file
(``per_listener_settings``). sewerwatch's own clients (``run``, ``collect``, the notifier,
the admin and the simulators' ``device`` account) connect to ``mqtt_port``; the sites'
devices to ``mqtt_sites_port``, whose password file holds only the sites' accounts and
where Mosquitto replaces every client id by the account's user name
(``use_username_as_clientid``, a per-listener option of Mosquitto 2.0). A site's account
therefore can neither log in where sewerwatch's clients are nor take any client id but its
own: not ``run``'s, not a collector's, not another site's (:func:`listeners`).

Bounds (:func:`session_bounds`): persistent sessions gone longer than
``mqtt_session_expiry`` expire, and each client's queue is capped in messages and bytes;
Mosquitto applies these to every client alike, so the caps are sized for the longest
outage of ``run`` the guide promises to ride out.

Passwords never reach a command line: the password files are written as plain
``user:password`` lines (0600) and hashed in place by ``mosquitto_passwd -U``.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from foundation.endpoints import HOST, MQTT_USERS, broker_url, site_broker_url, site_user
from foundation.errors import ServiceError
from sewerwatch.services.process import (
    chown_tree,
    find_binary,
    is_root,
    pid_alive,
    port_open,
    read_pid,
    run,
    system_user,
)

#: MQTT user names of the accounts in ``secrets.json``'s ``mqtt`` section.
USERNAMES = MQTT_USERS

ACL = """# written by sewerwatch
user sewerwatch
topic readwrite #

user collector
topic read sewerwatch/#

user device
topic write sewerwatch/#

user notifier
topic write sewerwatch-alerts/#
"""

#: How the broker saves its in-memory state (queued messages of offline sessions among it).
#: Mosquitto 2.0 writes a whole snapshot each time; see docs/running/services.md for the window and the cost
#: measured by ``benchmarks/ingest.py``.
AUTOSAVE = "autosave_on_changes false\nautosave_interval 1"


def site_acl(sites: dict) -> str:
    """ACL entries of the sites' accounts: ``{site: (password, [topic filters])}``."""
    out = []
    for site, (_, topics) in sorted(sites.items()):
        out.append(f"user {site_user(site)}")
        out += [f"topic write {t}" for t in topics]
        out.append("")
    return "\n".join(out)

#: Sparkplug B inputs: the tree, and the node commands (rebirth requests) the collector sends.
SPARKPLUG_TREE, SPARKPLUG_NCMD = "spBv1.0/#", "spBv1.0/+/NCMD/+"


def collector_acl(filters, sparkplug_state: str | None = None) -> str:
    """The collector's read access: every filter it subscribes to
    (:func:`foundation.endpoints.collector_filters`: the input trees and each explicit sensor
    topic outside them), so no subscription is granted and then delivered nothing; and, as
    the Sparkplug primary host, the right to publish its STATE (``spBv1.0/STATE/<host id>``)."""
    out = ["user collector"] + [f"topic read {f}" for f in filters]
    if sparkplug_state:
        out.append(f"topic readwrite {sparkplug_state}")
    return "\n".join(out) + "\n"


def site_read_acl(reads: dict) -> str:
    """What the sites' accounts may read: their Sparkplug edge nodes' commands and the
    primary host's STATE (``{site: [topic filters]}``, :func:`foundation.endpoints.sparkplug_site_topics`)."""
    out = []
    for site, topics in sorted(reads.items()):
        if topics:
            out.append(f"user {site_user(site)}")
            out += [f"topic read {t}" for t in topics]
            out.append("")
    return "\n".join(out)

#: Mosquitto 2.0 logs a publish its ACL refused ("Denied PUBLISH from <client> (d0, q1, r0,
#: m1, '<topic>', ... (<n> bytes))") at debug level only, which also logs every packet.
DEBUG_LOG = "# [services] mqtt_log_denied: refused publishes (and every packet) in the log\nlog_type debug\n"

CONF = """# written by sewerwatch; the embedded broker's settings
per_listener_settings true
persistence true
persistence_location {dir}/data/
{autosave}
pid_file {dir}/mosquitto.pid
log_dest file {dir}/mosquitto.log
log_type error
log_type warning
log_type notice
{debug_line}connection_messages true
# a message goes out at once, not held back behind an earlier unanswered one (up to 40 ms)
set_tcp_nodelay true
{bounds}
max_inflight_messages 20000
{user_line}
{listeners}"""


def session_bounds(expiry: str, max_messages: int, max_bytes: int) -> str:
    """The broker's bounds on sessions and queues (``[services]
    mqtt_session_expiry``, ``mqtt_max_queued_messages``, ``mqtt_max_queued_bytes``)."""
    return (f"# persistent sessions of clients gone for {expiry} expire; each client's queue is capped (the\n"
            f"# collectors' sessions are sized for the outage of run the README promises to ride out)\n"
            f"persistent_client_expiration {expiry}\n"
            f"max_queued_messages {max_messages}\n"
            f"max_queued_bytes {max_bytes}")


def listeners(port: int, sites_port: int, base: Path) -> str:
    """The two listeners: sewerwatch's own clients on ``port``, the
    sites' devices on ``sites_port`` with their client id forced to their account's name."""
    return (f"# sewerwatch's own clients: run, collect, the notifier, admin, the simulators' device account\n"
            f"listener {port} {HOST}\n"
            f"allow_anonymous false\n"
            f"password_file {base}/passwd\n"
            f"acl_file {base}/acl\n"
            f"\n"
            f"# the sites' devices: an account's client id is its user name, so no site can take\n"
            f"# run's, a collector's or another site's identity\n"
            f"listener {sites_port} {HOST}\n"
            f"allow_anonymous false\n"
            f"password_file {base}/passwd-sites\n"
            f"acl_file {base}/acl\n"
            f"use_username_as_clientid true\n")


def write_password_file(path: Path, accounts: list[tuple[str, str]]) -> None:
    """A Mosquitto password file of ``accounts`` (user, password): written as plain lines
    into a file only its owner reads, then hashed in place by ``mosquitto_passwd -U``, so
    no password is ever on a command line (``ps`` shows every process's arguments)."""
    new = path.with_name(path.name + ".new")
    new.unlink(missing_ok=True)
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        for user, password in accounts:
            if ":" in user or "\n" in user + password:
                raise ServiceError(f"broker account {user!r}: a user name may not hold ':' nor a password a newline")
            f.write(f"{user}:{password}\n")
    if accounts:
        run([find_binary("mosquitto_passwd"), "-U", str(new)], what="mosquitto_passwd")
    os.replace(new, path)
    os.chmod(path, 0o600)


@dataclass
class EmbeddedMosquitto:
    """A Mosquitto broker under ``state_dir/mqtt``.

    Parameters
    ----------
    state_dir : pathlib.Path
        The embedded services' state folder.
    port : int
        TCP port on 127.0.0.1.
    passwords : dict
        Account -> password (``secrets.json``'s ``mqtt`` section).
    """

    state_dir: Path
    port: int
    passwords: dict
    sites: dict = field(default_factory=dict)    # site id -> (password, [topic filters])
    trees: tuple = ()        # topic trees of [[mqtt.inputs]] outside sewerwatch/# (``telegraf/#``)
    autosave: str = AUTOSAVE
    log_denied: bool = False   # log_type debug: "Denied PUBLISH from ..." (and every packet)
    collector_topics: tuple = ()     # every filter the collector subscribes to (collector_acl)
    site_reads: dict = field(default_factory=dict)   # site id -> [topic filters it may read]
    sparkplug_state: str | None = None   # spBv1.0/STATE/<host id> when run is a Sparkplug host
    sites_port: int | None = None    # the sites' listener; None: port + 1000
    session_expiry: str = "7d"
    max_queued_messages: int = 5_000_000
    max_queued_bytes: int = 1 << 30

    def __post_init__(self):
        if self.sites_port is None:
            self.sites_port = self.port + 1000

    @property
    def base(self) -> Path:
        return self.state_dir / "mqtt"

    @property
    def log_file(self) -> Path:
        return self.base / "mosquitto.log"

    def url(self, account: str = "admin") -> str:
        return broker_url(account, self.passwords[account], self.port)

    def site_url(self, site: str) -> str:
        """The URL of site ``site``'s devices' account (on the sites' listener)."""
        return site_broker_url(site, self.sites[site][0], self.sites_port)

    def pid(self) -> int | None:
        pid = read_pid(self.base / "mosquitto.pid")
        return pid if pid and pid_alive(pid) else None

    def running(self) -> bool:
        return self.pid() is not None and port_open(HOST, self.port)

    def status(self) -> dict:
        return {"running": self.running(), "pid": self.pid(), "port": self.port, "sites_port": self.sites_port,
                "sites_listening": port_open(HOST, self.sites_port), "state_dir": str(self.base),
                "log": str(self.log_file)}

    def conf_text(self) -> str:
        """The broker's config file."""
        run_as = "mosquitto" if is_root() and system_user("mosquitto") else ("root" if is_root() else "")
        return CONF.format(dir=self.base, user_line=f"user {run_as}" if run_as else "",
                           autosave=self.autosave, debug_line=DEBUG_LOG if self.log_denied else "",
                           bounds=session_bounds(self.session_expiry, self.max_queued_messages, self.max_queued_bytes),
                           listeners=listeners(self.port, self.sites_port, self.base))

    def conf_current(self) -> bool:
        """Whether the running broker was started with the config it would be given now
        (listeners and bounds are not reloaded by SIGHUP: a change needs a restart)."""
        conf = self.base / "mosquitto.conf"
        return conf.is_file() and conf.read_text() == self.conf_text()

    def acl_text(self) -> str:
        """The ACL file: the fixed accounts, the collector and device accounts on the
        input trees of other formats too, and the sites' accounts."""
        extra = "".join(f"\nuser collector\ntopic read {t}\n\nuser device\ntopic write {t}\n"
                        for t in self.trees if t != "sewerwatch/#")
        if SPARKPLUG_TREE in self.trees:   # the collector asks edge nodes for a rebirth (NCMD)
            extra += f"\nuser collector\ntopic write {SPARKPLUG_NCMD}\n\nuser device\ntopic read {SPARKPLUG_NCMD}\n"
            if self.sparkplug_state:
                extra += f"topic read {self.sparkplug_state}\n"
        extra += "\n" + collector_acl(self.collector_topics, self.sparkplug_state)
        return ACL + extra + "\n" + site_acl(self.sites) + site_read_acl(self.site_reads)

    def write_config(self) -> None:
        """(Re)write the broker's config, password files and ACL."""
        (self.base / "data").mkdir(parents=True, exist_ok=True)
        (self.base / "mosquitto.conf").write_text(self.conf_text())
        (self.base / "acl").write_text(self.acl_text())
        own = [(user, self.passwords[a]) for a, user in USERNAMES.items()]
        sites = [(site_user(site), pw) for site, (pw, _) in sorted(self.sites.items())]
        write_password_file(self.base / "passwd", own)
        write_password_file(self.base / "passwd-sites", sites)
        for f in ("acl", "mosquitto.conf"):
            os.chmod(self.base / f, 0o644)
        if is_root() and system_user("mosquitto"):
            chown_tree(self.base, "mosquitto")

    def start(self) -> None:
        """Start the broker unless it runs; a killed one is started again."""
        if self.running():
            return
        if self.pid() is None and port_open(HOST, self.port):
            raise ServiceError(f"port {self.port} on {HOST} is in use by another program; "
                               "set [services].mqtt_port in the config or SEWERWATCH_MQTT_PORT")
        self.write_config()
        (self.base / "mosquitto.pid").unlink(missing_ok=True)
        run([find_binary("mosquitto"), "-c", str(self.base / "mosquitto.conf"), "-d"], what="mosquitto")
        for _ in range(100):
            if self.running():
                return
            time.sleep(0.05)
        tail = self.log_file.read_text().strip().splitlines()[-3:] if self.log_file.exists() else []
        raise ServiceError(f"Mosquitto did not start on {HOST}:{self.port}: {' | '.join(tail)}")

    def sync_accounts(self) -> bool:
        """Rewrite the accounts and ACL of a running broker when they changed (a site added
        to the config) and have it reload them (SIGHUP); True when it did."""
        acl = self.base / "acl"
        want = self.acl_text()
        if not self.running() or (acl.is_file() and acl.read_text() == want
                                   and (self.base / "passwd-sites").is_file()):
            return False
        self.write_config()
        os.kill(self.pid(), signal.SIGHUP)
        return True

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)  # a clean stop saves the persistent sessions
        for _ in range(100):
            if not pid_alive(pid):
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
