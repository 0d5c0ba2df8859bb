"""Notification channels: apprise URLs of the contacts, the MQTT alert topic, the console.

Each channel's :meth:`send` is blocking and raises :class:`DeliveryError` with the reason
when a message was not delivered; the alert manager runs it in a thread pool (never on
the event loop) and retries with backoff.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import apprise
import paho.mqtt.client as mqtt

from alerts.links import redact as withhold_links
from foundation.errors import ConfigError

log = logging.getLogger("sewerwatch.alerts")

#: The broker's notifier account may publish only under this prefix
#: (sewerwatch/services/mosquitto.py).
MQTT_PREFIX = "sewerwatch-alerts"


class DeliveryError(Exception):
    """A notification was not delivered (the text says why)."""


def failure_text(exc: Exception) -> str:
    """Why a send failed, in words for the alert's page (no exception name): a
    :class:`DeliveryError`'s own text, else the error's message (at most 2,000 characters)."""
    text = str(exc).strip()
    if not isinstance(exc, DeliveryError):
        text = f"the notification could not be sent: {text.splitlines()[0] if text else 'an unexpected error'}"
    return (text or "the notification was not delivered")[:2000]


class _ThreadLog(logging.Handler):
    """Collects apprise's log lines of the current thread, to record why a send failed."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.local = threading.local()

    def emit(self, record):
        buf = getattr(self.local, "buf", None)
        if buf is not None:
            buf.append(record.getMessage())


_apprise_log = _ThreadLog()


def redact(url: str) -> str:
    """An apprise URL without its query and password (for the database and logs):
    ``mailto://127.0.0.1:8025``, ``json://user:***@host/path``."""
    if "://" not in url:
        return url.split("?", 1)[0]
    scheme, rest = url.split("://", 1)
    rest = rest.split("?", 1)[0]
    netloc, _, path = rest.partition("/")
    if "@" in netloc:
        creds, host = netloc.rsplit("@", 1)
        netloc = f"{creds.split(':', 1)[0]}:***@{host}"
    return f"{scheme}://{netloc}" + (f"/{path}" if path else "")


class AppriseChannel:
    """One apprise URL of one contact (``mailto://``, ``json://``, ``ntfy://``, ...)."""

    kind = "apprise"

    def __init__(self, url: str, contact: str):

        self.url, self.contact = url, contact
        self.name = redact(url)
        # One URL, sent in the alert manager's own delivery thread. apprise would otherwise
        # hand each send to a pool thread of its own and wait for it there: one more thread
        # to wake under load, and the failure's log line (the reason kept for the
        # delivery) written in that other thread. Each plugin keeps its own connect and
        # read timeouts; the manager retries failures with backoff.
        self._apprise = apprise.Apprise(asset=apprise.AppriseAsset(async_mode=False, service_timeout=0))
        self._text = apprise.NotifyFormat.TEXT
        if not self._apprise.add(url):
            raise ValueError(f"not an apprise URL apprise can use: {self.name}")
        # apprise waits 5.5 s between two sends of one plugin (its anti-spam throttle): an
        # escalation or a second alert would queue behind it. Deliveries here are few, and
        # failures are retried with backoff by the alert manager instead.
        for plugin in self._apprise:
            plugin.request_rate_per_sec = 0
        lg = logging.getLogger("apprise")
        if _apprise_log not in lg.handlers:
            lg.addHandler(_apprise_log)

    def send(self, title: str, body: str, payload: dict) -> None:
        _apprise_log.local.buf = []
        try:
            ok = self._apprise.notify(title=title, body=body, body_format=self._text)
        finally:
            lines, _apprise_log.local.buf = _apprise_log.local.buf, None
        if not ok:
            raise DeliveryError("; ".join(lines[-3:]) or "the service did not confirm the delivery")


class ConsoleChannel:
    """Prints each message to a stream (standard output by default), acknowledgement links
    withheld: the console ends up in the service's log, and a link is a capability
    (:func:`alerts.links.redact`)."""

    kind = "console"
    name = "console"
    contact = "console"

    def __init__(self, stream=None):
        self.stream = stream
        self._lock = threading.Lock()

    def send(self, title: str, body: str, payload: dict) -> None:
        out = self.stream or sys.stdout
        with self._lock:
            out.write(f"\n{'=' * 78}\n{title}\n{'-' * 78}\n{withhold_links(body)}\n{'=' * 78}\n")
            out.flush()


class MqttChannel:
    """Publishes a JSON alert on ``sewerwatch-alerts/<site>/<kind>`` (QoS 1) with the
    broker's notifier account; one connection kept open."""

    kind = "mqtt"
    contact = "mqtt"

    def __init__(self, url: str, client_id: str = "sewerwatch-notifier", prefix: str = MQTT_PREFIX):


        u = urlsplit(url)
        self.prefix = prefix
        self.name = f"mqtt://{u.hostname}:{u.port}/{prefix}"
        self._c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv311)
        if u.username:
            self._c.username_pw_set(unquote(u.username), unquote(u.password or ""))
        self._c.reconnect_delay_set(0.5, 10)
        self._c.connect_async(u.hostname or "127.0.0.1", u.port or 1883)
        self._c.loop_start()

    def send(self, title: str, body: str, payload: dict) -> None:
        site = payload.get("site") or "utility"
        topic = f"{self.prefix}/{site}/{payload.get('kind', 'alert')}"
        msg = json.dumps({**payload, "title": title, "body": body}, default=str)
        info = self._c.publish(topic, msg, qos=1)
        try:
            info.wait_for_publish(5)
        except (RuntimeError, ValueError) as exc:
            raise DeliveryError(f"MQTT publish to {topic} failed: {exc}") from None
        if not info.is_published():
            raise DeliveryError(f"MQTT publish to {topic} not acknowledged within 5 s (rc {info.rc})")

    def close(self) -> None:
        self._c.loop_stop()
        self._c.disconnect()


@dataclass
class Route:
    """A channel and the contact list it belongs to (``primary`` or ``escalation``)."""

    channel: object
    escalation: bool = False


def primary(routes: list[Route]) -> list[Route]:
    """The routes to the primary contacts (not the escalation list)."""
    return [r for r in routes if not r.escalation]


def build_routes(cfg, mqtt_url: str | None = None, console_stream=None,
                 client_id: str = "sewerwatch-notifier") -> list[Route]:
    """Every channel the config asks for: each contact's apprise URLs, console, MQTT."""

    routes = []
    for i, c in enumerate(cfg.contacts):
        for j, url in enumerate(c.urls):
            try:
                routes.append(Route(AppriseChannel(url, c.name), c.escalation))
            except ValueError as exc:
                raise ConfigError(cfg.path, f"alerts.contacts[{i}].urls[{j}]", str(exc)) from None
    opts = cfg.alert_options
    if opts.console:
        routes.append(Route(ConsoleChannel(console_stream)))
    if opts.mqtt and mqtt_url:
        routes.append(Route(MqttChannel(mqtt_url, client_id=client_id)))
    return routes
