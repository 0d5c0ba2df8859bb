"""What something outside ``run`` watches, and the broker's bounds.

* The dead man's switch: a local HTTP server (a healthchecks-style service's stand-in: it
  only counts GETs) gets a ping every ``deadman_every_s`` while ``run`` leads, none from a
  standby.
* systemd's notify protocol: a real AF_UNIX datagram socket as ``$NOTIFY_SOCKET`` (what
  systemd gives a ``Type=notify`` service) receives ``READY=1``, ``WATCHDOG=1`` every half
  ``WatchdogSec`` while the status thread is alive (none once it is stuck) and ``STOPPING=1``.
* ``sewerwatch status`` exit codes: 0 ok, 1 degraded, 2 not running or not responding.
* The broker: an offline persistent session's queue is capped (``max_queued_messages``),
  and sessions expire (``persistent_client_expiration``, Mosquitto's smallest unit is an
  hour, so the config line and the broker's acceptance of it are what is tested here).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sewerwatch.cli_run import DEGRADED, NOT_RUNNING, OK, status_code
from sewerwatch.liveness import Liveness, notify
from sewerwatch.services.mosquitto import EmbeddedMosquitto
from support import close_all, free_port, mqtt_client, publish_all, state_dir, wait_until


class _Pings(BaseHTTPRequestHandler):
    got: list = []

    def do_GET(self):
        _Pings.got.append((self.path, time.monotonic()))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, *a):
        pass


def test_the_dead_mans_switch_is_pinged_by_the_leader_and_systemd_hears_ready_and_the_watchdog(tmp_path, monkeypatch):
    _Pings.got = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sock_path = str(tmp_path / "notify.sock")
    sd = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sd.bind(sock_path)
    sd.settimeout(0.1)
    monkeypatch.setenv("NOTIFY_SOCKET", sock_path)
    monkeypatch.setenv("WATCHDOG_USEC", "400000")                   # WatchdogSec=0.4: a ping every 0.2 s
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    leading = {"now": True}
    fresh = {"now": True}
    live = Liveness(f"http://127.0.0.1:{server.server_address[1]}/ping/abc", 0.5, leading=lambda: leading["now"],
                    status_fresh=lambda: fresh["now"], describe=lambda: "ok")
    messages: list[str] = []

    def listen(stop):
        while not stop.is_set():
            try:
                messages.append(sd.recv(4096).decode())
            except socket.timeout:
                pass

    async def scenario():
        stop = asyncio.Event()
        task = asyncio.get_running_loop().create_task(live.run(stop))
        await asyncio.sleep(2.2)              # leading: about five pings
        leading["now"] = False                # a standby: no pings
        n_leading = len(_Pings.got)
        await asyncio.sleep(1.5)
        fresh["now"] = False                  # the status thread is stuck: no watchdog pings
        wd_before = live.watchdog_pings
        await asyncio.sleep(1.0)
        wd_after = live.watchdog_pings
        stop.set()
        await task
        return n_leading, wd_before, wd_after

    done = threading.Event()
    listener = threading.Thread(target=listen, args=(done,), daemon=True)
    listener.start()
    try:
        n_leading, wd_before, wd_after = asyncio.run(scenario())
        time.sleep(0.2)
    finally:
        done.set()
        listener.join(2)
        server.shutdown()
        sd.close()
    assert 3 <= n_leading <= 6, _Pings.got
    assert len(_Pings.got) == n_leading                    # none while standing by
    assert all(p == "/ping/abc" for p, _ in _Pings.got)
    assert messages[0] == "READY=1" and messages[-1] == "STOPPING=1", messages
    assert "STATUS=ok" in messages
    assert wd_before >= 10 and wd_after == wd_before, (wd_before, wd_after)   # ~0.2 s apart, then none
    assert messages.count("WATCHDOG=1") == wd_after
    assert live.status()["deadman"]["host"] == "127.0.0.1" and "abc" not in str(live.status())


def test_notify_without_systemd_does_nothing(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert notify("READY=1") is False


def test_status_exit_codes_follow_the_monitoring_plugin_convention():
    ok = {"run": {"running": True, "state": "ok", "problems": {}}}
    assert status_code(ok) == OK == 0
    assert status_code({"run": {"running": False}}) == NOT_RUNNING == 2
    assert status_code({"run": {"running": False, "state": "unresponsive", "problems": {"status": "x"}}}) == 2
    assert status_code({"run": {"running": True, "state": "degraded", "problems": {"writer": "x"}}}) == DEGRADED == 1
    assert status_code({**ok, "database_error": "unreachable"}) == 1
    assert status_code({**ok, "collect c1": {"running": False, "state": "unresponsive"}}) == 2
    standby = {"run": {"running": True, "state": "standby", "problems": {}, "leadership": {"leader": {"name": "x"}}}}
    assert status_code(standby) == 0
    assert status_code({"run": {**standby["run"], "leadership": {"leader": None}}}) == 1   # nobody leads


def test_the_brokers_queues_are_capped_and_sessions_expire():
    d = state_dir("sewerwatch-bounds-")
    pw = {a: f"pw-{a}" for a in ("admin", "collector", "device", "notifier")}
    mq = EmbeddedMosquitto(d, free_port(), pw, sites_port=free_port(), session_expiry="2h",
                           max_queued_messages=100, max_queued_bytes=1 << 20)
    mq.start()
    sub = pub = None
    try:
        conf = (mq.base / "mosquitto.conf").read_text()
        assert "persistent_client_expiration 2h" in conf and "max_queued_messages 100" in conf
        assert "max_queued_bytes 1048576" in conf and "use_username_as_clientid true" in conf
        got: list[bytes] = []
        sub = mqtt_client(mq.url("collector"), "abandoned", clean_session=False)
        sub.subscribe("sewerwatch/#", qos=1)
        time.sleep(0.3)
        close_all(sub)                                          # gone: its session stays, and queues
        pub = mqtt_client(mq.url("device"), "flood")
        publish_all(pub, [("sewerwatch/junk/ph", b"%d" % k) for k in range(1000)])
        time.sleep(0.5)
        from sewerwatch.services.scratch import mqtt_client as raw_client
        sub = raw_client(mq.url("collector"), "abandoned", clean_session=False,
                         on_message=lambda c, u, m: got.append(m.payload))
        assert wait_until(lambda: len(got) >= 100, 10)
        time.sleep(1.0)
    finally:
        close_all(sub, pub)
        mq.stop()
    assert 100 <= len(got) <= 120, len(got)        # the cap (and what was in flight), not the flood's 1,000
