"""The collector's broker connection, read in large pieces.

paho-mqtt reads a packet in three or more ``recv`` calls (the command byte, each byte of the
remaining length, the rest), each after a ``select``: with small messages (one reading
each) those system calls, and the GIL handed back and forth around each, were most of the
collector's time (``benchmarks/README.md``, "Where the time goes"). :class:`ReadAhead`
takes what the kernel has, up to :data:`READ_SIZE` bytes, in one ``recv`` and hands paho
its small reads from that. It says how much it holds through ``pending()``, the method paho
asks of a TLS or WebSocket connection, so paho reads on without waiting in ``select`` while
bytes are held.

Nothing changes about what is acknowledged: the bytes are the broker's, in order, and a
message is still acknowledged only when the writer made it durable. When the connection
drops, what the wrapper held goes with it, exactly as unread bytes in the kernel's buffer
would: the broker sends every unacknowledged message again on the next connection.
"""

from __future__ import annotations

import socket

import paho.mqtt.client as mqtt

#: the most read from the socket at once [bytes]
READ_SIZE = 1 << 16


class ReadAhead:
    """A plain TCP socket whose ``recv`` is served from a buffer filled :data:`READ_SIZE`
    bytes at a time; everything else (``send``, ``fileno``, ``close``...) is the socket's own.

    Parameters
    ----------
    sock : socket.socket
        The connected, non-blocking socket.
    """

    def __init__(self, sock, read_size: int = READ_SIZE):
        self._sock = sock
        self._read_size = read_size
        self._buf = b""
        self._pos = 0

    def recv(self, bufsize: int) -> bytes:
        """Up to ``bufsize`` bytes: from the buffer, else one read of the socket (which
        raises ``BlockingIOError`` when nothing is there, and gives ``b""`` when closed)."""
        if self._pos >= len(self._buf):
            data = self._sock.recv(max(bufsize, self._read_size))
            if len(data) <= bufsize:
                return data
            self._buf, self._pos = data, 0
        end = self._pos + bufsize
        out = self._buf[self._pos:end]
        self._pos = min(end, len(self._buf))
        return out

    def pending(self) -> int:
        """Bytes held and not yet read [bytes] (paho does not wait in ``select`` while > 0)."""
        return len(self._buf) - self._pos

    def __getattr__(self, name):
        return getattr(self._sock, name)


class ReadAheadClient(mqtt.Client):
    """paho's client whose plain TCP connections are read through :class:`ReadAhead`
    (TLS and WebSocket connections are left as paho makes them)."""

    def _create_socket(self):
        sock = super()._create_socket()
        if self._transport == "tcp":
            # acknowledgements leave at once: without this the kernel holds a small write
            # back while an earlier one is unanswered (Nagle's algorithm), up to 40 ms here
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._ssl or self._transport != "tcp":
            return sock
        return ReadAhead(sock)
