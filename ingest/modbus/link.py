"""One Modbus TCP connection for the collector's hot path: read requests and their replies.

The collector asks each device for a few registers a second; what it needs from the wire
is small: send a read (function 03 or 04), wait for the reply with the same transaction
id, hand back the registers or the exception code. :class:`ModbusLink` does that on an
asyncio protocol with one request in flight per connection, the frames packed and parsed
with ``struct`` and one re-armed timer per connection for timeouts, instead of pymodbus's
client (transaction manager, lock, PDU objects, a timer and a debug string per request:
about three times the CPU per poll, which decided how many devices one collector polls;
``benchmarks/modbus.py``).

Frames: the MBAP header (MODBUS Messaging on TCP/IP Implementation Guide V1.0b §3.1.3:
transaction id, protocol id 0, length of what follows, unit id), then the PDU (MODBUS
Application Protocol V1.1b3 §6.3 Read Holding Registers, §6.4 Read Input Registers:
function, starting address, quantity; the reply: function, byte count, registers
big-endian; §7: an exception reply has the function code + 0x80 and one exception code).

Errors raise pymodbus's exception classes, as its client did: a timeout or a malformed
reply ``ModbusIOException``, a closed connection ``ConnectionException``; refused or
failed connects the ``OSError`` of the socket.
"""

from __future__ import annotations

import asyncio
import struct

from pymodbus.exceptions import ConnectionException, ModbusIOException

_REQUEST = struct.Struct(">HHHBBHH")   # tid, protocol 0, length 6, unit, function, address, quantity
_MBAP = struct.Struct(">HHHBB")        # tid, protocol, length, unit, function


def split_frames(buf: bytes) -> tuple[list[bytes], bytes]:
    """The whole MBAP frames at the start of a TCP byte stream, and the bytes left over (the
    start of a frame still arriving). The header's length field counts what follows it."""
    frames = []
    while len(buf) >= 8:
        total = 6 + ((buf[4] << 8) | buf[5])
        if len(buf) < total:
            break
        frames.append(buf[:total] if len(buf) > total else buf)
        buf = buf[total:]
    return frames, bytes(buf)


class ModbusLink(asyncio.Protocol):
    """A Modbus TCP client connection that reads registers (see the module doc).

    Open with :meth:`open`; :meth:`read` one request at a time; :meth:`close`.
    """

    def __init__(self, timeout_s: float):
        self.timeout_s = float(timeout_s)
        self.transport = None
        self._buf = b""
        self._tid = 0
        self._waiter: asyncio.Future | None = None
        self._expect = (0, 0, 0)             # tid, unit, function of the request in flight
        self._deadline = 0.0
        self._timer = None
        self._lost: Exception | None = None
        self._loop = asyncio.get_running_loop()

    @classmethod
    async def open(cls, host: str, port: int, timeout_s: float) -> "ModbusLink":
        """Connect (within ``timeout_s``); raises ``OSError`` or ``asyncio.TimeoutError``."""
        loop = asyncio.get_running_loop()
        _, link = await asyncio.wait_for(loop.create_connection(lambda: cls(timeout_s), host, port), timeout_s)
        return link

    @property
    def connected(self) -> bool:
        return self.transport is not None and self._lost is None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._fail(ConnectionException("connection closed"))

    async def read(self, function: int, address: int, count: int, unit: int):
        """Read ``count`` registers at ``address`` with function 3 or 4 from ``unit``.

        Returns
        -------
        (int, tuple of int)
            ``(0, registers)`` for data, ``(exception code, ())`` for an exception reply.
        """
        if not self.connected:
            raise ConnectionException("not connected")
        self._tid = tid = (self._tid + 1) & 0xFFFF
        self._expect = (tid, unit, function)
        self._waiter = fut = self._loop.create_future()
        self._deadline = self._loop.time() + self.timeout_s
        if self._timer is None:
            self._timer = self._loop.call_at(self._deadline, self._check_deadline)
        self.transport.write(_REQUEST.pack(tid, 0, 6, unit, function, address, count))
        try:
            return await fut
        finally:
            self._waiter = None

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self._fail(ConnectionException(f"connection closed by the device{f' ({exc})' if exc else ''}"))

    def data_received(self, data: bytes) -> None:
        frames, self._buf = split_frames(self._buf + data if self._buf else data)
        for f in frames:
            self._frame(f)

    # --- internals -------------------------------------------------------------------------

    def _frame(self, frame: bytes) -> None:
        fut = self._waiter
        if fut is None or fut.done():
            return                                   # a reply to a request already given up
        tid, proto, length, unit, fc = _MBAP.unpack_from(frame)
        want_tid, want_unit, want_fc = self._expect
        if tid != want_tid:
            return                                   # not this request's reply
        if proto != 0 or unit != want_unit or (fc & 0x7F) != want_fc or length < 3:
            fut.set_exception(ModbusIOException(
                f"unexpected reply: protocol {proto}, unit {unit}, function {fc} to a request for "
                f"unit {want_unit}, function {want_fc}"))
        elif fc & 0x80:
            fut.set_result((frame[8], ()))
        else:
            n = frame[8] // 2
            if len(frame) < 9 + 2 * n:
                fut.set_exception(ModbusIOException("reply shorter than its byte count"))
            else:
                fut.set_result((0, struct.unpack_from(f">{n}H", frame, 9)))

    def _check_deadline(self) -> None:
        """The connection's one timer: a request past its deadline fails; one still within
        it re-arms the timer; none in flight lets it lapse."""
        self._timer = None
        fut = self._waiter
        if fut is None or fut.done() or self._lost is not None:
            return
        if self._loop.time() >= self._deadline:
            fut.set_exception(ModbusIOException(
                f"no answer from unit {self._expect[1]} within {self.timeout_s:g} s"))
        else:
            self._timer = self._loop.call_at(self._deadline, self._check_deadline)

    def _fail(self, exc: Exception) -> None:
        if self._lost is None:
            self._lost = exc
        fut = self._waiter
        if fut is not None and not fut.done():
            fut.set_exception(exc)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
