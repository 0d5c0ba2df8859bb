"""``[[mqtt.inputs]]`` and ``[mqtt]``: the MQTT inputs a collector subscribes to (topic patterns,
payload formats, Telegraf's and Sparkplug's metrics), and ``[modbus]`` kept as data.

Tables of the config apart from :mod:`foundation.config` so that it stays readable;
``Config.mqtt`` holds them."""

from __future__ import annotations

from typing import Annotated, NamedTuple

from pydantic import AfterValidator, BeforeValidator, ValidationInfo, model_validator

from foundation.schema import Bool, OneOf, Table, Tables, Text, TextList, TopicLevel, duplicates, fail, show, table

#: The documented topic scheme (DESIGN.md): ``sewerwatch/<site>/<sensor>``.
DEFAULT_TOPIC_PATTERN = "sewerwatch/{site}/{sensor}"
#: Payload formats an ``[[mqtt.inputs]]`` entry may name (ingest/mqtt/README.md).
MQTT_FORMATS = ("sewerwatch", "telegraf", "number", "sparkplug")
#: The Sparkplug B topic namespace: ``spBv1.0/<group>/<type>/<edge node>[/<device>]``.
SPARKPLUG_NAMESPACE = "spBv1.0"
#: sewerwatch's Sparkplug host id by default (``spBv1.0/STATE/sewerwatch``).
DEFAULT_SPARKPLUG_HOST_ID = "sewerwatch"
#: Placeholders of a topic pattern: the site, the sensor, and any one level not used
#: (Telegraf's default topic ``telegraf/<host>/<measurement>``).
TOPIC_PLACEHOLDERS = ("{site}", "{sensor}", "{measurement}")
#: Telegraf's ``json_timestamp_units`` -> microseconds per unit.
TELEGRAF_TIME_UNITS = {"1ns": 0.001, "1us": 1, "1ms": 1000, "1s": 1_000_000}


class Metric(NamedTuple):
    """``[[mqtt.inputs.metrics]]``: a Sparkplug B metric (``node``, ``device``: empty for the
    node's own, ``metric``: its name) and the ``sensor`` it feeds (``<site>/<name>``)."""

    node: Text
    device: str
    metric: Text
    sensor: Text


def _metrics(v):
    if isinstance(v, tuple):
        return v
    if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
        raise fail((), f"expected an array of tables ([[mqtt.inputs.metrics]]), got {show(v)}")
    return [{"device": "", **x} for x in v]


@table
class MqttInput(Table):
    """``[[mqtt.inputs]]``: a topic pattern and the format of its payloads."""

    topic: Text
    """Pattern with ``{site}`` and ``{sensor}`` levels (``telegraf`` may leave out ``{sensor}``, and
    ``{site}`` when a tag names it; ``sparkplug``: ``spBv1.0/<group id>``)."""
    format: Text = "sewerwatch"
    """One of sewerwatch (the documented JSON), telegraf (Telegraf's JSON output), number (a bare
    number, stamped on receipt, in the sensor's unit), sparkplug (Sparkplug B)."""
    site_from: str = ""
    """telegraf: ``topic`` (the ``{site}`` level) or ``tag:<name>``."""
    sensor_from: str = ""
    """telegraf: ``topic``, ``field`` (each field a sensor), ``name`` (the metric's) or ``tag:<name>``."""
    timestamp_units: OneOf(*TELEGRAF_TIME_UNITS) = "1s"
    """telegraf: the ``json_timestamp_units`` Telegraf was configured with."""
    metrics: Annotated[tuple[Metric, ...], BeforeValidator(_metrics)] = ()
    """sparkplug: the metrics mapped to sensors (each edge node's to one site's sensors: it
    publishes with that plant's broker account)."""
    ignore_unmapped_fields: Bool = False
    """telegraf: a field of a known site that names no sensor is passed over quietly (Telegraf
    sends every field its inputs gather; its ``fieldinclude`` is the better filter), instead of
    a dead letter for each message."""

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo):
        levels = self.topic.split("/")
        if info.context is not None:
            _check_input(self, levels)
        if not self.site_from:
            object.__setattr__(self, "site_from", "topic" if "{site}" in levels else "tag:site")
        if not self.sensor_from:
            object.__setattr__(self, "sensor_from", "topic" if "{sensor}" in levels else "field")
        if info.context is not None and self.format == "telegraf":
            _check_telegraf(self, levels)
        return self


#: keys of an input only some formats have -> those formats, and the problem in another
_ONLY = {"metrics": (("sparkplug",), "only a sparkplug input maps metrics"),
         "ignore_unmapped_fields": (("telegraf",), "only a telegraf input has fields to ignore"),
         "site_from": (("telegraf",), "only a telegraf input says where site and sensor come from"),
         "sensor_from": (("telegraf",), "only a telegraf input says where site and sensor come from")}


def _check_input(m: MqttInput, levels: list[str]) -> None:
    if m.format not in MQTT_FORMATS:         # a file's (the collectors make inputs of their own formats)
        raise fail(("format",), f"expected one of {', '.join(MQTT_FORMATS)}, got {show(m.format)}")
    for k, (formats, why) in _ONLY.items():
        if getattr(m, k) and m.format not in formats:
            raise fail((k,), why)
    if m.format == "sparkplug":
        if len(levels) != 2 or levels[0] != SPARKPLUG_NAMESPACE or not levels[1] or "{" in levels[1]:
            raise fail(("topic",), f"a sparkplug input's topic is {SPARKPLUG_NAMESPACE}/<group id>, got {m.topic!r}")
        if not m.metrics:
            raise fail(("metrics",), "missing: [[mqtt.inputs.metrics]] map the edge nodes' metrics to sensors "
                       "(node, device, metric, sensor)")
        for j, x, first in duplicates(m.metrics, lambda x: x[:3]):
            raise fail(("metrics", j), f"duplicate metric {x!r} (first at [{first}])")
        owner: dict = {}
        for j, x in enumerate(m.metrics):
            site = x.sensor.split("/", 1)[0]
            if owner.setdefault(x.node, (site, j))[0] != site:
                raise fail(("metrics", j, "sensor"), f"edge node {x.node!r} maps a sensor of site {site!r} and one "
                           f"of site {owner[x.node][0]!r} (metrics[{owner[x.node][1]}]): an edge node publishes "
                           "with one plant's broker account, so it belongs to one site")
        return
    if any(lvl.startswith("{") and lvl.endswith("}") and lvl not in TOPIC_PLACEHOLDERS for lvl in levels):
        raise fail(("topic",), f"pattern {m.topic!r}: the placeholders are {{site}}, {{sensor}} and {{measurement}} "
                   "(any one level, not used)")
    if "+" in m.topic or "#" in m.topic:
        raise fail(("topic",), f"pattern {m.topic!r}: write {{site}}/{{sensor}} instead of MQTT wildcards")
    if levels.count("{site}") > 1 or levels.count("{sensor}") > 1:
        raise fail(("topic",), f"pattern {m.topic!r} has {{site}} or {{sensor}} twice")
    if m.format != "telegraf" and (levels.count("{site}") != 1 or levels.count("{sensor}") != 1):
        raise fail(("topic",), f"pattern {m.topic!r} needs exactly one {{site}} and one {{sensor}} level "
                   f"for format {m.format!r}")


def _check_telegraf(m: MqttInput, levels) -> None:
    for k, choices, level in (("site_from", ("topic",), "{site}"),
                              ("sensor_from", ("topic", "field", "name"), "{sensor}")):
        v = getattr(m, k)
        if not (v in choices or v.startswith("tag:") and len(v) > 4):
            raise fail((k,), f"expected {', '.join(map(repr, choices))} or 'tag:<name>', got {v!r}")
        if v == "topic" and level not in levels:
            raise fail((k,), f"'topic' needs a {level} level in the topic pattern")


def _topic_pattern(p: str) -> str:
    levels = p.split("/")
    if levels.count("{site}") != 1 or levels.count("{sensor}") != 1 or "+" in p or "#" in p:
        raise fail((), f"pattern {p!r} needs exactly one {{site}} and one {{sensor}} level, and no + or #")
    return p


@table
class Mqtt(Table):
    """``[mqtt]``: the topic schemes the collectors subscribe to."""

    topics: Annotated[TextList, AfterValidator(lambda v: tuple(map(_topic_pattern, v)))] = (DEFAULT_TOPIC_PATTERN,)
    """Topic patterns with one ``{site}`` and one ``{sensor}`` level, carrying the sewerwatch JSON format."""
    inputs: Tables(MqttInput) = ()
    """More inputs: each a topic pattern and the format of its payloads."""
    share_group: TopicLevel("the group of $share/<group>/...") | None = None
    """The ``collect`` processes share the readings through the broker's shared subscriptions of this
    group (``$share/<group>/...``), each message to one of them (``run`` takes all)."""
    sparkplug_host_id: TopicLevel("the host id of spBv1.0/STATE/<host id>") = DEFAULT_SPARKPLUG_HOST_ID
    """With sparkplug inputs, ``run`` is the Sparkplug 3.0 primary host of this id: its STATE on
    ``spBv1.0/STATE/<host id>``, the id edge nodes are configured with."""

    @model_validator(mode="after")
    def _distinct(self):
        for i, topic, first in duplicates(self.inputs, lambda m: m.topic):
            raise fail(("inputs", i), f"duplicate topic pattern {topic!r} (first at mqtt.inputs[{first}])")
        for i, m in enumerate(self.inputs):
            if m.topic in self.topics:
                raise fail(("inputs", i, "topic"), f"pattern {m.topic!r} is also in [mqtt] topics")
        return self
