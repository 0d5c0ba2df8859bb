"""Which sensor a topic is: explicit topics from the config, or patterns with placeholders.

A pattern names the site and sensor parts of a topic, ``sewerwatch/{site}/{sensor}`` (the
default scheme, DESIGN.md) or e.g. ``plant/{site}/probes/{sensor}/value``, and the payload
format its messages carry (``[[mqtt.inputs]]``, :class:`foundation.config.MqttInput`). A
sensor's explicit ``topic`` in the config wins over any pattern.

The collector subscribes to whole trees, not to the patterns ("No reading
vanishes at the broker"): ``sewerwatch/#`` and the root of every other pattern
(``telegraf/#`` for ``telegraf/{site}/{sensor}``), so a message on a topic of the wrong
shape reaches the collector and becomes a dead letter whose reason shows the expected
form, instead of being dropped by the broker for want of a subscriber.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from foundation.config import DEFAULT_TOPIC_PATTERN, SPARKPLUG_NAMESPACE, MqttInput
from foundation.endpoints import WHOLE_TREE, subscription_filters  # noqa: F401 - WHOLE_TREE: the face of this module
from foundation.errors import InputError

DEFAULT_PATTERNS = (DEFAULT_TOPIC_PATTERN,)
#: Formats whose payload may name the site or sensor (the decoder resolves them).
PAYLOAD_NAMES_SENSORS = ("telegraf",)
#: Trees whose messages depend on the ones before them (Sparkplug B births and sequence
#: numbers): never a shared subscription, every collector of a group takes all of them (the
#: database drops the doubles), or each would see gaps in every edge node's sequence.
SESSION_TREES = ("spBv1.0/#",)
#: A device's retained birth and last will, ``sewerwatch/<site>/<device>/status``
#: (simulators/mqtt_publisher.py): no reading and no dead letter, passed over (unless a
#: configured pattern takes the topic).
DEVICE_STATUS = MqttInput("sewerwatch/{site}/{device}/status", "status")
#: A Sparkplug host application's STATE (``spBv1.0/STATE/<host id>``, sewerwatch's own
#: among them): no reading and no dead letter (ingest/mqtt/sparkplug_state.py).
SPARKPLUG_STATE = MqttInput("spBv1.0/STATE/{host}", "sparkplug-state")
#: A Sparkplug group the config does not name: passed over, counted (``status``), not a
#: dead letter (other plants' gateways share the broker's namespace).
SPARKPLUG_OTHER = MqttInput("spBv1.0/{group}", "sparkplug-other")
#: A device's maintenance window: ``sewerwatch/<site>/maintenance``
#: (ingest/mqtt/maintenance.py), taken before any pattern.
MAINTENANCE = MqttInput("sewerwatch/{site}/maintenance", "maintenance")
#: Formats whose messages are passed over: neither readings nor dead letters.
PASSED_OVER = ("status", "sparkplug-state", "sparkplug-other")
#: Known names shown in a dead letter's reason at most.
SHOWN_NAMES = 12
#: The prefix of an MQTT shared subscription: ``$share/<group>/<filter>`` (MQTT 5, section
#: 4.8.2; Mosquitto also grants it to MQTT 3.1.1 clients, as EMQX and HiveMQ do).
SHARE_PREFIX = "$share"


def shared(topic_filter: str, group: str | None) -> str:
    """``topic_filter`` as a shared subscription of ``group`` (unchanged without a group).

    Each message matching a shared subscription goes to one member of the group, so any
    number of collectors with the same group split the readings between them.
    """
    return f"{SHARE_PREFIX}/{group}/{topic_filter}" if group else topic_filter


@dataclass(frozen=True)
class SensorRef:
    """A sensor as the collector needs it."""

    id: int
    key: str        # <site>/<name>
    parameter: str
    full_scale: float | None = None   # the instrument's full scale [canonical unit], if configured
    unit: str | None = None           # the configured unit: a bare number's unit


@dataclass(frozen=True)
class Match:
    """A topic resolved: its sensor (None when the format names sensors in the payload),
    the input (pattern and format) it matched, and the site and sensor parts of the topic."""

    ref: SensorRef | None
    input: MqttInput
    site: str | None = None
    sensor: str | None = None


def expected_form(pattern: str) -> str:
    """``sewerwatch/{site}/{sensor}`` as an integrator reads it: ``sewerwatch/<site>/<sensor>``."""
    return pattern.replace("{", "<").replace("}", ">")


def _names(names) -> str:
    names = sorted(names)
    shown = ", ".join(names[:SHOWN_NAMES])
    return (shown + f", ... ({len(names)} in all)") if len(names) > SHOWN_NAMES else (shown or "none")


class TopicMap:
    """Resolve topics to sensors.

    Parameters
    ----------
    sensors : iterable of SensorRef
        Every sensor the collector may store readings for.
    explicit : dict
        topic -> sensor key, from the config's MQTT sensors.
    patterns : sequence of str or MqttInput
        Topic patterns with ``{site}`` and ``{sensor}`` placeholders (a plain string is the
        sewerwatch JSON format).
    """

    def __init__(self, sensors, explicit: dict | None = None, patterns=DEFAULT_PATTERNS):
        self.by_key = {s.key: s for s in sensors}
        self.by_id = {s.id: s for s in self.by_key.values()}
        self.inputs = [p if isinstance(p, MqttInput) else MqttInput(p) for p in patterns]
        self.patterns = [self._compile(i.topic, i.format) for i in self.inputs]
        self.sites: dict[str, list[str]] = {}
        for key in self.by_key:
            site, _, name = key.partition("/")
            self.sites.setdefault(site, []).append(name)
        self.explicit = {}
        for topic, key in (explicit or {}).items():
            if key in self.by_key:
                self.explicit[topic] = self.by_key[key]
        self._cache: dict[str, Match | str] = {}
        #: the groups of the sparkplug inputs (``spBv1.0/<group>``)
        self.sparkplug_groups = {i.topic.split("/")[1] for i in self.inputs if i.format == "sparkplug"}

    @staticmethod
    def _compile(pattern: str, fmt: str = "sewerwatch") -> tuple[str, ...]:
        levels = tuple(pattern.split("/"))
        if fmt == "sparkplug":     # spBv1.0/<group>: any type, edge node and device under it
            return levels
        need_sensor = fmt in ("sewerwatch", "number")
        if levels.count("{site}") > 1 or levels.count("{sensor}") > 1 or (
                need_sensor and (levels.count("{site}") != 1 or levels.count("{sensor}") != 1)):
            raise InputError(f"topic pattern {pattern!r} needs exactly one {{site}} and one {{sensor}} level")
        if any(ch in lvl for lvl in levels for ch in "+#"):
            raise InputError(f"topic pattern {pattern!r}: write {{site}}/{{sensor}} instead of MQTT wildcards")
        return levels

    def subscriptions(self) -> list[str]:
        """MQTT topic filters: the whole ``sewerwatch/#`` tree, the tree of every other
        pattern, and any explicit topic outside them."""
        return subscription_filters([inp.topic for inp in self.inputs], self.explicit)

    def resolve(self, topic: str) -> SensorRef | None:
        """The sensor of ``topic``, or None when no sensor is known for it."""
        m = self.match(topic)
        return m.ref if isinstance(m, Match) else None

    def match(self, topic: str) -> Match | str:
        """``topic`` resolved, or the reason it cannot be (a dead letter's reason: the
        expected form when no pattern fits, the known names when a site or sensor is
        unknown)."""
        m = self._cache.get(topic)
        if m is None:
            m = self._match(topic)
            if len(self._cache) < 100_000:
                self._cache[topic] = m
        return m

    def _match(self, topic: str) -> Match | str:
        ref = self.explicit.get(topic)
        if ref is not None:
            return Match(ref, MqttInput(topic), *ref.key.split("/", 1))
        parts = topic.split("/")
        unknown = None
        if len(parts) == 3 and parts[0] == "sewerwatch" and parts[2] == "maintenance" and parts[1]:
            return Match(None, MAINTENANCE, parts[1], None)
        if parts[0] == SPARKPLUG_NAMESPACE and self.sparkplug_groups:
            if len(parts) == 3 and parts[1] == SPARKPLUG_STATE.topic.split("/")[1]:
                return Match(None, SPARKPLUG_STATE, sensor=parts[2])
            if len(parts) > 1 and parts[1] not in self.sparkplug_groups:
                return Match(None, SPARKPLUG_OTHER, site=parts[1])
        for levels, inp in zip(self.patterns, self.inputs):
            if inp.format == "sparkplug":
                if tuple(parts[:2]) == levels:
                    if len(parts) in (4, 5) and all(parts):
                        return Match(None, inp)
                    unknown = unknown or (f"topic does not match {inp.topic}/<message type>/<edge node>[/<device>] "
                                          "(Sparkplug B)")
                continue
            if len(levels) != len(parts):
                continue
            site = sensor = None
            for lvl, part in zip(levels, parts):
                if lvl == "{site}":
                    site = part
                elif lvl == "{sensor}":
                    sensor = part
                elif lvl != part and not (lvl.startswith("{") and lvl.endswith("}")):   # {measurement}: any
                    break
            else:
                if inp.format in PAYLOAD_NAMES_SENSORS:   # the decoder resolves site and sensor
                    if site is not None and site not in self.sites:
                        unknown = unknown or self._unknown_site(site)
                        continue
                    return Match(None, inp, site, sensor)
                ref = self.by_key.get(f"{site}/{sensor}")
                if ref is not None:
                    return Match(ref, inp, site, sensor)
                unknown = unknown or (self._unknown_site(site) if site not in self.sites
                                      else f"unknown sensor {sensor!r} at site {site!r} "
                                           f"(its MQTT sensors: {_names(self.sites[site])})")
        if len(parts) == 4 and parts[0] == "sewerwatch" and parts[3] == "status":
            return Match(None, DEVICE_STATUS, parts[1], parts[2])
        if unknown:
            return unknown
        forms = [f"{i.topic}/<message type>/<edge node>[/<device>] (Sparkplug B)" if i.format == "sparkplug"
                 else f"{i.topic} (expected {expected_form(i.topic)})" for i in self.inputs]
        return "topic does not match " + (forms[0] if len(forms) == 1 else "any of: " + "; ".join(forms))

    def _unknown_site(self, site: str) -> str:
        return f"unknown site {site!r} (sites with MQTT sensors: {_names(self.sites)})"


def topic_map(cfg, refs, patterns=None) -> TopicMap:
    """The collector's topic map for the config ``cfg`` and the MQTT sensors ``refs`` (their
    full scales from the config; ``patterns`` default to the config's inputs)."""
    scale = {s.key: s.full_scale_canonical for s in cfg.sensors if s.full_scale is not None}
    explicit = {s.topic: s.key for s in cfg.sensors if s.source == "mqtt" and s.topic}
    return TopicMap([replace(r, full_scale=scale.get(r.key)) for r in refs], explicit,
                    patterns or cfg.mqtt_inputs)
