"""The collector's broker connection read in large pieces (ingest/mqtt/readahead.py): paho's
small reads served in order from one large read, ``pending()`` saying what is held, a
closed connection still seen as closed, and the collector's client using it."""

from __future__ import annotations

import socket

import paho.mqtt.client as mqtt
import pytest

from ingest.mqtt.readahead import ReadAhead, ReadAheadClient


def test_small_reads_come_in_order_from_one_large_read():
    """Two 5-byte "packets" written at once (10 bytes): reads of 1, 1 and 3 bytes give the
    first packet, then 5 the second; pending() is 10 - 1 = 9 after the first read, then
    8, 5 and 0. With nothing held and nothing sent the socket's BlockingIOError comes
    through; a closed peer gives b"" as a socket does."""
    a, b = socket.socketpair()
    a.setblocking(False)
    r = ReadAhead(a)
    b.sendall(b"\x30\x03abc\x30\x03xyz")
    assert r.recv(1) == b"\x30" and r.pending() == 9
    assert r.recv(1) == b"\x03" and r.pending() == 8
    assert r.recv(3) == b"abc" and r.pending() == 5
    assert r.recv(5) == b"\x30\x03xyz" and r.pending() == 0
    with pytest.raises(BlockingIOError):
        r.recv(1)
    assert r.fileno() == a.fileno()          # select() and the rest are the socket's own
    b.close()
    assert r.recv(1) == b""
    a.close()


def test_a_read_asking_for_more_than_is_held_gets_what_is_held():
    """paho asks for the rest of a packet; held are 4 of its 6 bytes: it gets the 4 and
    asks again for the other 2, which a second read of the socket brings."""
    a, b = socket.socketpair()
    a.setblocking(False)
    r = ReadAhead(a)
    b.sendall(b"\x30\x06abcd")
    assert r.recv(2) == b"\x30\x06"
    assert r.recv(6) == b"abcd"
    b.sendall(b"ef")
    assert r.recv(2) == b"ef" and r.pending() == 0
    a.close()
    b.close()


def test_collector_client_reads_plain_tcp_ahead(services):
    """A client of the collector's class connected to the test broker reads through
    ReadAhead, and a message published to it arrives whole."""
    import threading
    from urllib.parse import urlsplit

    u = urlsplit(services.mqtt_urls["collector"])
    got = threading.Event()
    seen = []
    c = ReadAheadClient(mqtt.CallbackAPIVersion.VERSION2, client_id="readahead-test", protocol=mqtt.MQTTv311)
    c.username_pw_set(u.username, u.password)
    c.on_connect = lambda client, *a: client.subscribe("sewerwatch/+/+", qos=1)
    c.on_subscribe = lambda *a: got.set()
    c.on_message = lambda client, userdata, msg: (seen.append(msg.payload), got.set())
    c.connect(u.hostname, u.port)
    c.loop_start()
    try:
        assert got.wait(10)
        assert isinstance(c.socket(), ReadAhead)
        got.clear()
        pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv311)
        d = urlsplit(services.mqtt_urls["device"])
        pub.username_pw_set(d.username, d.password)
        pub.connect(d.hostname, d.port)
        pub.loop_start()
        body = b'{"t": 1772366400000, "v": 7.1, "u": "pH"}' * 100     # 4,100 bytes
        pub.publish("sewerwatch/candy/ph", body, qos=1).wait_for_publish(10)
        assert got.wait(10) and seen == [body]
        pub.disconnect()
        pub.loop_stop()
    finally:
        c.disconnect()
        c.loop_stop()


def _broker_side_nodelay(client_port: int, broker_port: int) -> int:
    """TCP_NODELAY of the broker's end of the connection from ``client_port``: its socket
    found in /proc (the row of /proc/net/tcp, then the broker's descriptor of that inode)
    and borrowed with pidfd_getfd to ask the kernel."""
    import ctypes
    import os

    inode = None
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if int(f[1].split(":")[1], 16) == broker_port and int(f[2].split(":")[1], 16) == client_port:
            inode = f[9]
    assert inode is not None, "the broker's end of the connection is not in /proc/net/tcp"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != f"socket:[{inode}]":
                    continue
            except OSError:
                continue
            pidfd = os.pidfd_open(int(pid))
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                got = libc.syscall(438, pidfd, int(fd), 0)          # pidfd_getfd (Linux 5.6)
                assert got >= 0, f"pidfd_getfd: {os.strerror(ctypes.get_errno())}"
            finally:
                os.close(pidfd)
            with socket.socket(fileno=got) as s:                  # our copy of the descriptor
                return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    raise AssertionError("no process holds the broker's end of the connection")


def test_small_messages_are_not_held_back_at_either_end(services):
    """Nagle's algorithm off on both ends of the collector's connection: on the broker's
    (``set_tcp_nodelay``), which writes an alert's reading behind the load's messages, and
    on the collector's, which writes the acknowledgements. With it on, a small write waits
    for the answer to the one before, up to 40 ms on this kernel."""
    import os
    import threading
    from urllib.parse import urlsplit

    if os.geteuid() != 0:
        pytest.skip("borrowing the broker's socket from /proc needs root")
    u = urlsplit(services.mqtt_urls["collector"])
    ok = threading.Event()
    c = ReadAheadClient(mqtt.CallbackAPIVersion.VERSION2, client_id="nodelay-test", protocol=mqtt.MQTTv311)
    c.username_pw_set(u.username, u.password)
    c.on_connect = lambda *a: ok.set()
    c.connect(u.hostname, u.port)
    c.loop_start()
    try:
        assert ok.wait(10)
        sock = c.socket()
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert _broker_side_nodelay(sock.getsockname()[1], u.port) != 0
    finally:
        c.disconnect()
        c.loop_stop()
