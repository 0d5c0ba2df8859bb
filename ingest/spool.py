"""The writer's store-and-forward spool: an append-only file of batches, fsynced.

While the database is unreachable the writer appends every chunk here and only then lets
the collectors acknowledge their messages; when the database is back it replays the
records in order and clears the file. A record is framed so a torn tail (a crash in the
middle of an append) is recognised and ignored: what it held was never acknowledged, so
the broker still has it.

Record layout (little-endian)::

    b"SWSP" | kind (1 byte) | payload length (uint32) | crc32 of payload (uint32) | payload

``kind`` ``R`` holds readings: count (uint32), then the arrays time_us int64, sensor_id
int32, value float64, quality int16. ``D`` (dead letter) and ``H`` (health record) hold
JSON.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

from ingest.batch import Readings
from ingest.sink import Chunk, DeadLetter

MAGIC = b"SWSP"
HEADER = struct.Struct("<4scII")


def _readings_payload(r: Readings) -> bytes:
    n = len(r)
    return b"".join((struct.pack("<I", n), r.time_us.astype("<i8").tobytes(), r.sensor_id.astype("<i4").tobytes(),
                     r.value.astype("<f8").tobytes(), r.quality.astype("<i2").tobytes()))


def _readings_from(payload: bytes) -> Readings:
    (n,) = struct.unpack_from("<I", payload)
    off = 4
    arrays = []
    for dtype, size in (("<i8", 8), ("<i4", 4), ("<f8", 8), ("<i2", 2)):
        arrays.append(np.frombuffer(payload, dtype=dtype, count=n, offset=off))
        off += n * size
    return Readings(*arrays)


class Spool:
    """An append-only spool file in ``directory``.

    Parameters
    ----------
    directory : path-like
        Created if missing. Holds ``spool.bin`` and ``spool.offset`` (how far a replay
        has been committed, so an interrupted replay resumes rather than repeats).
    """

    def __init__(self, directory):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "spool.bin"
        self.offset_path = self.dir / "spool.offset"
        self.torn_tails = 0

    def recover(self) -> int:
        """Cut a torn or corrupt tail left by a crash, so appends follow whole records.

        Returns
        -------
        int
            Bytes cut (0 for a clean file).
        """
        if not self.path.exists():
            return 0
        good = 0
        with open(self.path, "r+b") as f:
            size = os.fstat(f.fileno()).st_size
            while True:
                head = f.read(HEADER.size)
                if len(head) < HEADER.size:
                    break
                magic, _, length, crc = HEADER.unpack(head)
                payload = f.read(length)
                if magic != MAGIC or len(payload) < length or zlib.crc32(payload) != crc:
                    break
                good = f.tell()
            if good < size:
                f.truncate(good)
                os.fsync(f.fileno())
                self.torn_tails += 1
        return size - good

    def __len__(self) -> int:
        """Bytes waiting to be replayed."""
        size = self.path.stat().st_size if self.path.exists() else 0
        return max(0, size - self._committed_offset())

    def empty(self) -> bool:
        return len(self) == 0

    def append(self, chunk: Chunk) -> None:
        """Append ``chunk`` and fsync: when this returns, the chunk survives a crash."""
        records = []
        if len(chunk.readings):
            records.append((b"R", _readings_payload(chunk.readings)))
        for d in chunk.dead_letters:
            records.append((b"D", json.dumps({
                "source": d.source, "topic": d.topic, "reason": d.reason, "detail": d.detail,
                "received_at_us": d.received_at_us,
                "payload": None if d.payload is None else base64.b64encode(d.payload).decode()}).encode()))
        for h in chunk.health:
            records.append((b"H", json.dumps(h).encode()))
        if not records:
            return
        blob = b"".join(HEADER.pack(MAGIC, kind, len(p), zlib.crc32(p)) + p for kind, p in records)
        with open(self.path, "ab") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())

    def _committed_offset(self) -> int:
        try:
            return int(self.offset_path.read_text())
        except (OSError, ValueError):
            return 0

    def commit(self, offset: int) -> None:
        """Record that everything before ``offset`` is in the database."""
        tmp = self.offset_path.with_suffix(".tmp")
        tmp.write_text(str(offset))
        os.replace(tmp, self.offset_path)

    def replay(self, max_readings: int = 200_000) -> Iterator[tuple[Chunk, int]]:
        """Yield ``(chunk, end_offset)`` in order from the first uncommitted record.

        Each chunk holds up to about ``max_readings`` readings; commit ``end_offset``
        once the chunk is in the database. A torn or corrupt tail ends the replay.
        """
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self._committed_offset())
            parts, letters, health, n = [], [], [], 0
            while True:
                head = f.read(HEADER.size)
                if len(head) < HEADER.size:
                    if head:
                        self.torn_tails += 1
                    break
                magic, kind, length, crc = HEADER.unpack(head)
                payload = f.read(length)
                if magic != MAGIC or len(payload) < length or zlib.crc32(payload) != crc:
                    self.torn_tails += 1
                    break
                if kind == b"R":
                    r = _readings_from(payload)
                    parts.append(r)
                    n += len(r)
                elif kind == b"D":
                    d = json.loads(payload)
                    raw = None if d["payload"] is None else base64.b64decode(d["payload"])
                    letters.append(DeadLetter(d["source"], d["topic"], raw, d["reason"], d["detail"],
                                              d["received_at_us"]))
                else:
                    health.append(json.loads(payload))
                if n >= max_readings:
                    yield Chunk(Readings.concat(parts), letters, health, []), f.tell()
                    parts, letters, health, n = [], [], [], 0
            if parts or letters or health:
                yield Chunk(Readings.concat(parts), letters, health, []), f.tell()

    def clear(self) -> None:
        """Remove the spool once every record is replayed."""
        self.path.unlink(missing_ok=True)
        self.offset_path.unlink(missing_ok=True)
