"""Which sensor a topic is: explicit topics from the config, or patterns with wildcards.

A pattern names the site and sensor parts of a topic, ``sewerwatch/{site}/{sensor}`` (the
default scheme, DESIGN.md) or e.g. ``plant/{site}/probes/{sensor}/value``; it subscribes
as ``sewerwatch/+/+`` and maps ``sewerwatch/candy/ph`` to the sensor ``candy/ph``. A
sensor's explicit ``topic`` in the config wins over any pattern.
"""

from __future__ import annotations

from dataclasses import dataclass

from foundation.endpoints import topic_matches
from foundation.errors import InputError

DEFAULT_PATTERNS = ("sewerwatch/{site}/{sensor}",)
#: The prefix of an MQTT shared subscription: ``$share/<group>/<filter>`` (MQTT 5, section
#: 4.8.2; Mosquitto also grants it to MQTT 3.1.1 clients, as EMQX and HiveMQ do).
SHARE_PREFIX = "$share"


def shared(topic_filter: str, group: str | None) -> str:
    """``topic_filter`` as a shared subscription of ``group`` (unchanged without a group).

    Each message matching a shared subscription goes to one member of the group, so any
    number of collectors with the same group split the readings between them (issue 15).
    """
    return f"{SHARE_PREFIX}/{group}/{topic_filter}" if group else topic_filter


@dataclass(frozen=True)
class SensorRef:
    """A sensor as the collector needs it."""

    id: int
    key: str        # <site>/<name>
    parameter: str
    full_scale: float | None = None   # the instrument's full scale [canonical unit], if configured


class TopicMap:
    """Resolve topics to sensors.

    Parameters
    ----------
    sensors : iterable of SensorRef
        Every sensor the collector may store readings for.
    explicit : dict
        topic -> sensor key, from the config's MQTT sensors.
    patterns : sequence of str
        Topic patterns with ``{site}`` and ``{sensor}`` placeholders.
    """

    def __init__(self, sensors, explicit: dict | None = None, patterns=DEFAULT_PATTERNS):
        self.by_key = {s.key: s for s in sensors}
        self.patterns = [self._compile(p) for p in patterns]
        self.explicit = {}
        for topic, key in (explicit or {}).items():
            if key in self.by_key:
                self.explicit[topic] = self.by_key[key]
        self._cache: dict[str, SensorRef | None] = {}

    @staticmethod
    def _compile(pattern: str) -> tuple[str, ...]:
        levels = tuple(pattern.split("/"))
        if levels.count("{site}") != 1 or levels.count("{sensor}") != 1:
            raise InputError(f"topic pattern {pattern!r} needs exactly one {{site}} and one {{sensor}} level")
        if any(ch in lvl for lvl in levels for ch in "+#"):
            raise InputError(f"topic pattern {pattern!r}: write {{site}}/{{sensor}} instead of MQTT wildcards")
        return levels

    def subscriptions(self) -> list[str]:
        """MQTT topic filters covering every pattern and explicit topic."""
        subs = ["/".join("+" if lvl in ("{site}", "{sensor}") else lvl for lvl in p) for p in self.patterns]
        for topic in self.explicit:
            if not any(topic_matches(f, topic) for f in subs):
                subs.append(topic)
        return subs

    def resolve(self, topic: str) -> SensorRef | None:
        """The sensor of ``topic``, or None when no sensor is known for it."""
        if topic in self._cache:
            return self._cache[topic]
        ref = self.explicit.get(topic)
        if ref is None:
            parts = topic.split("/")
            for p in self.patterns:
                if len(p) != len(parts):
                    continue
                site = sensor = None
                for lvl, part in zip(p, parts):
                    if lvl == "{site}":
                        site = part
                    elif lvl == "{sensor}":
                        sensor = part
                    elif lvl != part:
                        break
                else:
                    ref = self.by_key.get(f"{site}/{sensor}")
                    if ref is not None:
                        break
        if len(self._cache) < 100_000:
            self._cache[topic] = ref
        return ref
