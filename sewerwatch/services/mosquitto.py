"""The embedded Mosquitto broker: password authentication, topic ACLs, persistence.

Accounts and what they may do (``acl`` below):

- ``admin``: everything (tests, tools, the demo).
- ``collector``: subscribe to readings ``sewerwatch/#`` only (ingest issue, Security).
- ``site-<id>``: one per site of the config (issue 12, "Device identity"): publish only
  under that site's topics (``sewerwatch/<id>/#``, per ``[mqtt] topics`` pattern, and the
  explicit topics of its MQTT sensors). A device of one plant cannot write readings for
  another. ``sewerwatch services credentials SITE`` gives the integrator its URL.
- ``device``: publish under ``sewerwatch/#`` (the simulators and tests, which play many
  sites; not for field devices).
- ``notifier``: publish alerts under ``sewerwatch-alerts/#`` only.

Persistence is on and queues are deep, so a collector's persistent QoS 1 session keeps its
messages while the collector is down and across a broker restart. How promptly queued
messages reach the disk is :data:`AUTOSAVE` (the README states the window).
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
#: Mosquitto 2.0 writes a whole snapshot each time; see the README for the window and the cost
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
per_listener_settings false
listener {port} 127.0.0.1
allow_anonymous false
password_file {dir}/passwd
acl_file {dir}/acl
persistence true
persistence_location {dir}/data/
{autosave}
pid_file {dir}/mosquitto.pid
log_dest file {dir}/mosquitto.log
log_type error
log_type warning
log_type notice
{debug_line}connection_messages true
# A collector's persistent session must hold its backlog while it is down.
max_queued_messages 5000000
max_queued_bytes 0
max_inflight_messages 20000
{user_line}
"""


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

    @property
    def base(self) -> Path:
        return self.state_dir / "mqtt"

    @property
    def log_file(self) -> Path:
        return self.base / "mosquitto.log"

    def url(self, account: str = "admin") -> str:
        return broker_url(account, self.passwords[account], self.port)

    def site_url(self, site: str) -> str:
        """The URL of site ``site``'s devices' account."""
        return site_broker_url(site, self.sites[site][0], self.port)

    def pid(self) -> int | None:
        pid = read_pid(self.base / "mosquitto.pid")
        return pid if pid and pid_alive(pid) else None

    def running(self) -> bool:
        return self.pid() is not None and port_open(HOST, self.port)

    def status(self) -> dict:
        return {"running": self.running(), "pid": self.pid(), "port": self.port,
                "state_dir": str(self.base), "log": str(self.log_file)}

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
        """(Re)write the broker's config, password file and ACL."""
        (self.base / "data").mkdir(parents=True, exist_ok=True)
        run_as = "mosquitto" if is_root() and system_user("mosquitto") else ("root" if is_root() else "")
        conf = CONF.format(port=self.port, dir=self.base, user_line=f"user {run_as}" if run_as else "",
                           autosave=self.autosave, debug_line=DEBUG_LOG if self.log_denied else "")
        (self.base / "mosquitto.conf").write_text(conf)
        (self.base / "acl").write_text(self.acl_text())
        passwd = self.base / "passwd"
        new = self.base / "passwd.new"
        new.unlink(missing_ok=True)
        tool = find_binary("mosquitto_passwd")
        new.touch(mode=0o600)
        accounts = [(user, self.passwords[a]) for a, user in USERNAMES.items()]
        accounts += [(site_user(site), pw) for site, (pw, _) in sorted(self.sites.items())]
        for user, password in accounts:
            run([tool, "-b", str(new), user, password], what="mosquitto_passwd")
        os.replace(new, passwd)
        for f in ("passwd", "acl", "mosquitto.conf"):
            os.chmod(self.base / f, 0o600 if f == "passwd" else 0o644)
        if run_as == "mosquitto":
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
        if not self.running() or (acl.is_file() and acl.read_text() == want):
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
