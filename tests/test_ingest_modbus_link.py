"""The collector's Modbus TCP link against a raw TCP server that answers as told: replies in
pieces, a stale reply first, exception replies, silence, a closed connection, a wrong unit."""

from __future__ import annotations

import asyncio
import struct

import pytest
from pymodbus.exceptions import ConnectionException, ModbusIOException

from ingest.modbus.link import ModbusLink


async def _serve(behaviour):
    """A server whose connection handler gets each request frame and the writer."""

    async def handle(reader, writer):
        try:
            while True:
                frame = await reader.readexactly(12)
                tid, _, _, unit, fc, addr, count = struct.unpack(">HHHBBHH", frame)
                if await behaviour(writer, tid, unit, fc, addr, count) == "close":
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _reply(tid, unit, fc, regs):
    body = bytes((fc, 2 * len(regs))) + struct.pack(f">{len(regs)}H", *regs)
    return struct.pack(">HHHB", tid, 0, 1 + len(body), unit) + body


def test_replies_in_pieces_stale_replies_and_exceptions():
    async def behaviour(w, tid, unit, fc, addr, count):
        regs = list(range(addr, addr + count))
        if addr == 1:                                    # a stale reply first, then ours, one byte at a time
            w.write(_reply((tid - 1) & 0xFFFF, unit, fc, [9]))
            for b in _reply(tid, unit, fc, regs):
                w.write(bytes((b,)))
                await w.drain()
                await asyncio.sleep(0)
        elif addr == 2:                                  # an exception reply (06 device busy)
            w.write(struct.pack(">HHHBBB", tid, 0, 3, unit, fc | 0x80, 6))
        elif addr == 3:                                  # two replies' worth in one write: ours, then junk
            w.write(_reply(tid, unit, fc, regs) + b"\x00\x00")
        else:
            w.write(_reply(tid, unit, fc, regs))

    async def go():
        server, port = await _serve(behaviour)
        link = await ModbusLink.open("127.0.0.1", port, 1.0)
        assert await link.read(3, 0, 3, 7) == (0, (0, 1, 2))
        assert await link.read(4, 1, 2, 7) == (0, (1, 2))
        assert await link.read(3, 2, 2, 7) == (6, ())
        assert await link.read(3, 3, 1, 7) == (0, (3,))
        link.close()
        server.close()
    asyncio.run(go())


def test_silence_times_out_and_a_closed_connection_fails():
    async def behaviour(w, tid, unit, fc, addr, count):
        if addr == 5:
            return None                                  # never answers
        if addr == 6:
            return "close"
        if addr == 7:
            w.write(_reply(tid, unit + 1, fc, [1]))      # another unit's reply
            return None
        w.write(_reply(tid, unit, fc, [addr]))

    async def go():
        server, port = await _serve(behaviour)
        link = await ModbusLink.open("127.0.0.1", port, 0.3)
        assert await link.read(3, 1, 1, 1) == (0, (1,))
        t0 = asyncio.get_running_loop().time()
        with pytest.raises(ModbusIOException, match="no answer from unit 1 within 0.3 s"):
            await link.read(3, 5, 1, 1)
        assert 0.25 < asyncio.get_running_loop().time() - t0 < 1.5
        link.close()
        link = await ModbusLink.open("127.0.0.1", port, 0.3)
        with pytest.raises(ModbusIOException, match="unexpected reply"):
            await link.read(3, 7, 1, 1)
        link.close()
        link = await ModbusLink.open("127.0.0.1", port, 0.3)
        with pytest.raises(ConnectionException):
            await link.read(3, 6, 1, 1)
        assert not link.connected
        with pytest.raises(ConnectionException):
            await link.read(3, 1, 1, 1)
        server.close()
        with pytest.raises(OSError):
            await ModbusLink.open("127.0.0.1", port, 0.3)   # nobody listens any more
    asyncio.run(go())


def test_a_device_that_refuses_is_said_in_words():
    """A refused connection to a real closed port, as the Today page and status show it."""
    import asyncio

    from ingest.modbus.faults import transport_words
    from ingest.modbus.link import ModbusLink
    from sewerwatch.services.scratch import free_port

    port = free_port()                         # nothing listens there

    async def attempt():
        try:
            await ModbusLink.open("127.0.0.1", port, 1.0)
        except OSError as exc:
            try:
                raise ConnectionException(f"cannot connect to 127.0.0.1:{port}") from exc
            except ConnectionException as wrapped:
                return wrapped
        raise AssertionError("the closed port accepted a connection")

    exc = asyncio.run(attempt())
    text = transport_words(exc, "127.0.0.1", port, 1.0)
    assert text == f"no answer from the device at 127.0.0.1:{port} (connection refused)"
    assert transport_words(asyncio.TimeoutError(), "10.0.4.12", 502, 1.5) == \
        "no answer from the device at 10.0.4.12:502 within 1.5 s"
