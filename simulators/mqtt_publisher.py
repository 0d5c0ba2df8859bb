"""MQTT simulator: one paho-mqtt 2.x client per simulated device, all on one asyncio loop.

Wire format (DESIGN.md, "Interfaces the project promises"):

- readings on ``sewerwatch/<site>/<sensor>``: one reading ``{"t": T, "v": 7.21, "u": "pH"}``
  or a batch ``{"u": "gpm", "t": [T, ...], "v": [101.2, ...]}``, ``T`` an ISO-8601 time
  with offset or integer epoch milliseconds (``--time-format``);
- a retained birth message ``{"state": "online", ...}`` on
  ``sewerwatch/<site>/<device>/status`` when a device connects, and the same topic as the
  retained last will ``{"state": "offline"}`` the broker publishes when the link drops
  (four topic levels: the collector passes it over, neither a reading nor a dead letter,
  ``ingest.mqtt.topics.DEVICE_STATUS``).

Scenario faults: ``comms_loss`` drops the device's TCP link without an MQTT DISCONNECT
(the broker then publishes its will) and reconnects when the event ends; ``bad_payload``
sends garbage bytes, ``NaN`` values, a unit of another parameter, or a payload without
``v``.

The asyncio integration follows paho's socket callbacks (``on_socket_open`` etc.): the
loop watches every client's socket, no thread per client.

Run alone::

    python -m simulators.mqtt_publisher --scenario acid-dump --mqtt-url mqtt://u:p@127.0.0.1:1883
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time
from urllib.parse import unquote, urlsplit

import numpy as np
import paho.mqtt.client as mqtt

from foundation.errors import InputError, ServiceError, SewerwatchError, report
from foundation.units import check_unit, from_canonical, to_canonical
from simulators.modbus_server import build_source, run_duration
from simulators.options import add_mqtt_arguments, add_source_arguments
from simulators.scenarios import PAYLOAD_VARIANTS
from simulators.sources import MQTT_SENSORS, SimClock

DEVICE_NAME = "manhole"
#: unit sent by the ``wrong_units`` variant: a unit of another parameter
WRONG_UNIT = {"flow": "degF", "ph": "gpm", "temperature": "pH", "level": "pH"}
_V = {name: code for name, code in PAYLOAD_VARIANTS.items()}


def parse_url(url: str) -> dict:
    """``mqtt://user:pass@host:port`` -> dict(host, port, username, password)."""
    parts = urlsplit(url)
    if parts.scheme != "mqtt":
        raise InputError(f"--mqtt-url: expected mqtt://[user:pass@]host[:port], got {url!r}")
    try:
        port = parts.port or 1883
    except ValueError:
        raise InputError(f"--mqtt-url: bad port in {url!r}") from None
    return {"host": parts.hostname or "127.0.0.1", "port": port,
            "username": unquote(parts.username) if parts.username else None,
            "password": unquote(parts.password) if parts.password else None}


def redact(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    p = urlsplit(url)
    if p.password:
        return url.replace(f":{p.password}@", ":***@", 1)
    return url


def parse_units(units) -> dict:
    """``{"temperature": "degC"}`` or ``["temperature=degC"]`` -> checked ``{sensor: unit}``."""

    if not isinstance(units, dict):
        pairs = {}
        for item in units:
            if "=" not in item:
                raise InputError(f"--mqtt-unit: expected SENSOR=UNIT, got {item!r}")
            k, v = item.split("=", 1)
            pairs[k.strip()] = v.strip()
        units = pairs
    for sensor, unit in units.items():
        if sensor not in MQTT_SENSORS:
            raise InputError(f"--mqtt-unit: unknown sensor {sensor!r} (known: {', '.join(MQTT_SENSORS)})")
        try:
            check_unit(sensor, unit)
        except InputError as exc:
            raise InputError(f"--mqtt-unit: {exc}") from None
    return dict(units)


def reading_topic(site: str, sensor: str) -> str:
    return f"sewerwatch/{site}/{sensor}"


def maintenance_topic(site: str) -> str:
    """Where a device opens and ends maintenance windows (ingest/mqtt/maintenance.py)."""
    return f"sewerwatch/{site}/maintenance"


def status_topic(site: str, device: str = DEVICE_NAME) -> str:
    return f"sewerwatch/{site}/{device}/status"


def format_times(times: np.ndarray, time_format: str) -> list:
    """Epoch seconds -> JSON-ready times: integer epoch ms or ISO-8601 UTC with offset."""
    ms = np.rint(np.asarray(times, dtype=np.float64) * 1000.0).astype(np.int64)
    if time_format == "ms":
        return ms.tolist()
    iso = np.datetime_as_string(ms.astype("datetime64[ms]"), unit="ms")
    return [s + "+00:00" for s in iso.tolist()]


def payloads(sensor: str, unit: str, times, values, variants, mode: str, time_format: str) -> list[bytes]:
    """Encode readings of one sensor into MQTT payloads.

    Parameters
    ----------
    times : numpy.ndarray, shape (n,)
        Epoch times [s].
    values : numpy.ndarray, shape (n,)
        Values [unit].
    variants : numpy.ndarray of uint8, shape (n,)
        Bad payload variant per reading (0: good).
    mode : {'single', 'batch'}
        One message per reading, or one per run of readings with the same variant.

    Returns
    -------
    list of bytes
    """
    ts = format_times(times, time_format)
    vs = np.round(np.asarray(values, dtype=np.float64), 4).tolist()
    var = np.asarray(variants).tolist()
    out: list[bytes] = []
    if mode == "single":
        groups = [(i, i + 1) for i in range(len(ts))]
    else:
        edges = [0] + [i for i in range(1, len(var)) if var[i] != var[i - 1]] + [len(var)]
        groups = list(zip(edges[:-1], edges[1:]))
    for a, b in groups:
        v = var[a]
        u = WRONG_UNIT.get(sensor, "furlong") if v == _V["wrong_units"] else unit
        tv = ts[a] if mode == "single" else ts[a:b]
        vv = vs[a] if mode == "single" else vs[a:b]
        if v == _V["garbage"]:
            out.append(b"\xff\xfe\x00garbage{\"v\":" + bytes([0x80 + (a % 64)]) * 7)
            continue
        if v == _V["nan"]:
            vv = float("nan") if mode == "single" else [float("nan")] * (b - a)
        if mode == "single":
            msg = {"t": tv, "v": vv, "u": u}
        else:
            msg = {"u": u, "t": tv, "v": vv}
        if v == _V["missing_fields"]:
            del msg["v"]
        out.append(json.dumps(msg, separators=(",", ":")).encode())
    return out


class _Device:
    def __init__(self, index: int, site: str, client):
        self.index, self.site, self.client = index, site, client
        self.connected = asyncio.get_running_loop().create_future()
        self.online = False
        self.dropped = False
        self.refused: str | None = None


class MqttPublisher:
    """Publish a source's readings over MQTT, one client per device.

    Parameters
    ----------
    source : ScenarioSource or ReplaySource
    clock : SimClock
    url : str
        ``mqtt://user:pass@host:port``.
    mode : {'single', 'batch'}
    qos : {0, 1}
    interval_s : float, optional
        Simulated seconds between readings of a sensor (scenario sources); default 1 s,
        or ``speed / 10`` in single mode above speed 10 (ten readings per second real).
    time_format : {'ms', 'iso'}
    tick_s : float
        Real seconds between publishing rounds.
    """

    def __init__(self, source, clock: SimClock, url: str, mode: str = "single", qos: int = 0,
                 interval_s: float | None = None, time_format: str = "ms", tick_s: float = 1.0,
                 client_prefix: str = "sewerwatch-sim", sensors=MQTT_SENSORS, units: dict | None = None):
        if mode not in ("single", "batch"):
            raise InputError(f"--mqtt-mode: expected single or batch, got {mode!r}")
        if qos not in (0, 1):
            raise InputError(f"--qos: expected 0 or 1, got {qos!r}")
        if time_format not in ("ms", "iso"):
            raise InputError(f"--time-format: expected ms or iso, got {time_format!r}")
        self.source, self.clock, self.url = source, clock, url
        self.broker = parse_url(url)
        self.mode, self.qos, self.time_format, self.tick_s = mode, qos, time_format, float(tick_s)
        if interval_s is None:
            interval_s = max(1.0, clock.speed / 10.0) if mode == "single" else 1.0
        if not interval_s > 0:
            raise InputError(f"--interval: expected a positive number, got {interval_s}")
        self.interval_s = float(interval_s)
        self.prefix = client_prefix
        self.sensors = tuple(sensors)
        self.units = parse_units(units or {})
        self.devices: list[_Device] = []
        self.messages = 0
        self.readings = 0
        self.maintenance_messages = 0
        self.last_t: float | None = None
        self._misc: asyncio.Task | None = None

    # --- paho <-> asyncio --------------------------------------------------------------
    def _attach(self, client) -> None:
        loop = asyncio.get_running_loop()

        def on_open(c, userdata, sock):
            loop.add_reader(sock, c.loop_read)

        def on_close(c, userdata, sock):
            loop.remove_reader(sock)
            loop.remove_writer(sock)

        def on_register_write(c, userdata, sock):
            loop.add_writer(sock, c.loop_write)

        def on_unregister_write(c, userdata, sock):
            loop.remove_writer(sock)

        client.on_socket_open = on_open
        client.on_socket_close = on_close
        client.on_socket_register_write = on_register_write
        client.on_socket_unregister_write = on_unregister_write

    async def _misc_loop(self) -> None:
        while True:
            for d in self.devices:
                d.client.loop_misc()
            await asyncio.sleep(1.0)

    def _birth(self, d: _Device) -> bytes:
        return json.dumps({"state": "online", "device": DEVICE_NAME, "site": d.site,
                           "sensors": list(self.sensors), "source": "sewerwatch simulator",
                           "t": int(time.time() * 1000)}).encode()

    def _make_client(self, i: int, site: str) -> _Device:

        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"{self.prefix}-{site}-{i}",
                             protocol=mqtt.MQTTv311)
        if self.broker["username"]:
            client.username_pw_set(self.broker["username"], self.broker["password"])
        client.will_set(status_topic(site), json.dumps({"state": "offline"}), qos=1, retain=True)
        client.max_queued_messages_set(0)
        client.max_inflight_messages_set(1000)
        d = _Device(i, site, client)

        def on_connect(c, userdata, flags, reason_code, properties):
            if reason_code.is_failure:
                d.refused = str(reason_code)
                if not d.connected.done():
                    d.connected.set_result(False)
                return
            d.online = True
            c.publish(status_topic(site), self._birth(d), qos=1, retain=True)
            if not d.connected.done():
                d.connected.set_result(True)

        def on_disconnect(c, userdata, flags, reason_code, properties):
            d.online = False
            if not d.connected.done():
                d.refused = str(reason_code)
                d.connected.set_result(False)

        client.on_connect = on_connect
        client.on_disconnect = on_disconnect
        self._attach(client)
        return d

    # --- lifecycle -----------------------------------------------------------------------
    async def start(self, timeout_s: float = 10.0) -> None:
        """Connect every device and wait for the broker to accept them."""
        for i in range(self.source.n_devices):
            d = self._make_client(i, self.source.sites[i])
            try:
                d.client.connect(self.broker["host"], self.broker["port"], keepalive=30)
            except OSError as exc:
                raise ServiceError(f"MQTT broker {redact(self.url)} unreachable: {exc}") from None
            self.devices.append(d)
        self._misc = asyncio.get_running_loop().create_task(self._misc_loop())
        try:
            async with asyncio.timeout(timeout_s):
                ok = await asyncio.gather(*(d.connected for d in self.devices))
        except TimeoutError:
            raise ServiceError(f"MQTT broker {redact(self.url)} did not accept the connections in {timeout_s:g} s") from None
        if not all(ok):
            bad = next(d for d in self.devices if d.refused)
            raise ServiceError(f"MQTT broker {redact(self.url)} refused {bad.site}: {bad.refused}")
        # publish from the run's simulated start on, the reading at that very instant included
        self.last_t = self.clock.start + self.clock.offset_s - 1e-6

    def _drop(self, d: _Device) -> None:
        """Comms loss: cut the TCP link without DISCONNECT, so the broker sends the will."""
        sock = d.client.socket()
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        d.dropped = True
        d.online = False

    def _restore(self, d: _Device) -> None:
        d.dropped = False
        try:
            d.client.reconnect()
        except OSError:
            d.dropped = True  # try again next tick

    def publish_until(self, t: float) -> int:
        """Publish every reading in ``(last, t]`` of simulated time; returns messages sent."""
        t0 = self.last_t if self.last_t is not None else t - self.interval_s
        if t <= t0:
            return 0
        snap_silent = self.source.sample(t).silent
        for d in self.devices:
            if snap_silent[d.index] and not d.dropped:
                self._drop(d)
            elif not snap_silent[d.index] and d.dropped:
                self._restore(d)
        sent = 0
        # a maintenance window's start goes before the readings at and after it, its end
        # before those at and after the end: the interval is cut at each message
        marks = self.source.maintenance(t0, t) if hasattr(self.source, "maintenance") else []
        a = t0
        for at, i, body in marks:
            sent += self._publish_readings(a, at - 1e-6)
            d = self.devices[i]
            if not d.dropped and d.online:
                d.client.publish(maintenance_topic(d.site), json.dumps(body), qos=1)
                sent += 1
                self.maintenance_messages += 1
            a = at - 1e-6
        sent += self._publish_readings(a, t)
        self.last_t = t
        self.messages += sent
        return sent

    def _publish_readings(self, t0: float, t: float) -> int:
        """Publish the readings of ``(t0, t]``; returns the messages sent."""
        sent = 0
        if t <= t0:
            return 0
        for r in self.source.readings(t0, t, self.interval_s, self.sensors):
            d = self.devices[r.device]
            if d.dropped or not d.online:
                continue
            topic = reading_topic(d.site, r.sensor)
            unit, vals = r.unit, r.values
            want = self.units.get(r.sensor)
            if want and want != unit:
                vals = from_canonical(r.sensor, want, to_canonical(r.sensor, unit, vals))
                unit = want
            for body in payloads(r.sensor, unit, r.times, vals, r.payload, self.mode, self.time_format):
                d.client.publish(topic, body, qos=self.qos)
                sent += 1
            self.readings += len(r.times)
        return sent

    async def run(self, duration_s: float | None = None) -> None:
        loop = asyncio.get_running_loop()
        t_start = loop.time()
        while duration_s is None or loop.time() - t_start < duration_s:
            self.publish_until(self.clock.now())
            await asyncio.sleep(self.tick_s if duration_s is None
                                else max(0.0, min(self.tick_s, t_start + duration_s - loop.time())))
        self.publish_until(self.clock.now())

    async def stop(self, clear_retained: bool = False) -> None:
        """Publish the retained offline status (or, with ``clear_retained``, remove the
        retained status) and disconnect cleanly."""
        infos = []
        body = b"" if clear_retained else json.dumps({"state": "offline"}).encode()
        for d in self.devices:
            if d.online and not d.dropped:
                infos.append(d.client.publish(status_topic(d.site), body, qos=1, retain=True))
        deadline = time.monotonic() + 5.0
        while any(not i.is_published() for i in infos) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for d in self.devices:
            d.client.disconnect()
        await asyncio.sleep(0.05)
        if self._misc:
            self._misc.cancel()
        self.devices = []


# --- running alone ---------------------------------------------------------------------


async def serve(args) -> int:
    from simulators.options import check_live_speed

    if not args.replay:
        check_live_speed(args.speed, args.start, mqtt=True)
    source, clock = build_source(args)
    pub = MqttPublisher(source, clock, args.mqtt_url, args.mqtt_mode, args.qos, args.interval, args.time_format,
                        units=args.mqtt_unit or {})
    await pub.start()
    print(f"simulating {source.n_devices} device(s): {source.name}, speed {args.speed:g}x", flush=True)
    print(describe(pub), flush=True)
    try:
        await pub.run(run_duration(args, source))
    finally:
        await pub.stop()
    return 0


def describe(pub: MqttPublisher) -> str:
    return (f"mqtt: {redact(pub.url)} topics sewerwatch/<site>/{{{','.join(pub.sensors)}}} "
            f"({pub.mode}, qos {pub.qos}, every {pub.interval_s:g} s simulated, times {pub.time_format}"
            + "".join(f", {k} in {v}" for k, v in pub.units.items()) + "), "
            f"status sewerwatch/<site>/{DEVICE_NAME}/status, sites {', '.join(pub.source.sites[:3])}"
            + (", ..." if len(pub.source.sites) > 3 else ""))


def main(argv=None) -> int:

    p = argparse.ArgumentParser(prog="python -m simulators.mqtt_publisher",
                                description="Simulated control-manhole devices publishing over MQTT.")
    add_source_arguments(p)
    add_mqtt_arguments(p)
    p.add_argument("--mqtt-url", required=True, help="mqtt://user:pass@host:port")
    args = p.parse_args(argv)
    try:
        return asyncio.run(serve(args))
    except SewerwatchError as exc:
        return report(exc)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
