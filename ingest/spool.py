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

A full or broken spool is loud, never fatal: an append that would take the
file over its cap (``[ingest] spool_max_bytes``), or that the disk refuses (full,
read-only, gone), raises :class:`SpoolUnwritable` with the reason and leaves the file as
it was (a partly written record is cut again). The bookkeeping cannot wedge it either:
``spool.offset`` is one small record rewritten in place (no new file, no rename, so a full
disk can still take it), and when even that fails the offset is kept in memory; a crash
then replays records the database already has, and their duplicates are dropped by the
unique index.
"""

from __future__ import annotations

import base64
import errno
import json
import logging
import os
import shutil
import struct
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

from ingest.batch import Readings
from ingest.sink import Chunk, DeadLetter

log = logging.getLogger("sewerwatch.spool")

MAGIC = b"SWSP"
#: What :meth:`Spool.probe` writes [bytes]: a few records of a typical batch.
PROBE_BYTES = 64 * 1024
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


class SpoolUnwritable(Exception):
    """The spool could not take a chunk; ``str(exc)`` says why (``reason``: ``cap``, ``full``,
    ``read-only`` or ``error``)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class Spool:
    """An append-only spool file in ``directory``.

    Parameters
    ----------
    directory : path-like
        Created if missing. Holds ``spool.bin`` and ``spool.offset`` (how far a replay
        has been committed, so an interrupted replay resumes rather than repeats).
    max_bytes : int
        The cap on ``spool.bin`` [bytes].
    """

    def __init__(self, directory, max_bytes: int = 1 << 30):
        self.dir = Path(directory)
        self.max_bytes = int(max_bytes)
        self.path = self.dir / "spool.bin"
        self.offset_path = self.dir / "spool.offset"
        self.torn_tails = 0
        self.error: str | None = None          # why the last append failed; None: it worked
        self.why: str | None = None            # the same, short: "no space left on device", "over its cap"
        self.probe_error: str | None = None    # why the last probe (a write while the database is up) failed
        self._mem_offset: int | None = None    # the committed offset, when newer than the file's
        self._dirty = False                    # a failed append may have left a partial record
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.error = f"cannot create the spool folder {self.dir}: {exc.strerror or exc}"
            self.why = f"cannot create its folder: {(exc.strerror or str(exc)).lower()}"

    def recover(self) -> int:
        """Cut a torn or corrupt tail left by a crash, so appends follow whole records.

        Returns
        -------
        int
            Bytes cut (0 for a clean file).

        Raises
        ------
        OSError
            When the file cannot be read or cut.
        """
        if not self.path.exists():
            self._dirty = False
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
        self._dirty = False
        return size - good

    def size(self) -> int:
        """Bytes in ``spool.bin``."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def __len__(self) -> int:
        """Bytes waiting to be replayed."""
        return max(0, self.size() - self._committed_offset())

    def empty(self) -> bool:
        return len(self) == 0

    def status(self) -> dict:
        """For ``sewerwatch status``: size, cap, free space, whether it can be written and why not."""
        try:
            free = shutil.disk_usage(self.dir).free
        except OSError:
            free = None
        return {"path": str(self.path), "bytes": self.size(), "pending_bytes": len(self), "max_bytes": self.max_bytes,
                "free_bytes": free, "writable": self.error is None and self.probe_error is None,
                "error": self.error or self.probe_error}

    def free_bytes(self) -> int | None:
        """Free space where the spool lives [bytes], or None when it cannot be told."""
        try:
            return shutil.disk_usage(self.dir).free
        except OSError:
            return None

    def problem(self) -> str | None:
        """``spool cannot be written: <why> (free N bytes)`` when the last append or probe
        failed, else None."""
        if self.error is None and self.probe_error is None:
            return None
        free = self.free_bytes()
        return (f"spool cannot be written: {self.why or self.probe_error} "
                f"(free {'unknown' if free is None else f'{free:,} bytes'}; {self.dir})")

    def probe(self, size: int = PROBE_BYTES) -> bool:
        """Write, fsync and remove ``size`` bytes beside the spool: whether an outage could
        be spooled now (the writer probes while the database is up, so a spool that cannot
        be written is said before it is needed). Sets :attr:`probe_error`."""
        probe = self.dir / "spool.probe"
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, b"\0" * size)
                os.fsync(fd)
            finally:
                os.close(fd)
            self.probe_error = None
            return True
        except OSError as exc:
            self.probe_error = exc.strerror or str(exc)
            return False
        finally:
            try:
                probe.unlink()
            except OSError:
                pass

    def append(self, chunk: Chunk) -> None:
        """Append ``chunk`` and fsync: when this returns, the chunk survives a crash.

        Raises
        ------
        SpoolUnwritable
            Over the cap, disk full, read-only or another write error; the file is left as
            it was before.
        """
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
        try:
            if self._dirty:
                self.recover()
            if self.empty() and self.size():
                self.clear()                   # all replayed: start the file again
            before = self.size()
            if before + len(blob) > self.max_bytes:
                raise SpoolUnwritable("cap", f"the spool would exceed its cap of {self.max_bytes:,} bytes "
                                             f"([ingest] spool_max_bytes; {before:,} bytes held)")
            self._write(blob, before)
        except SpoolUnwritable as exc:
            self.error = str(exc)
            self.why = f"over its cap of {self.max_bytes:,} bytes ([ingest] spool_max_bytes)"
            raise
        except OSError as exc:
            reason = {errno.ENOSPC: "full", errno.EDQUOT: "full", errno.EROFS: "read-only"}.get(exc.errno, "error")
            self.error = f"cannot write the spool {self.path}: {exc.strerror or exc}"
            self.why = exc.strerror or str(exc)
            raise SpoolUnwritable(reason, self.error) from None
        self.error = self.why = None
        self.probe_error = None

    def _write(self, blob: bytes, before: int) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(blob)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except OSError:
            # cut the partial record again, or remember to do it before the next append
            try:
                os.ftruncate(fd, before)
            except OSError:
                self._dirty = True
            raise
        finally:
            os.close(fd)

    def _committed_offset(self) -> int:
        if self._mem_offset is not None:
            return self._mem_offset
        try:
            off = int(self.offset_path.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0
        return off if 0 <= off <= self.size() else 0

    def _write_offset(self, offset: int) -> bool:
        """Rewrite ``spool.offset`` in place (20 digits); False when the disk refuses."""
        try:
            fd = os.open(self.offset_path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, f"{offset:>20d}\n".encode(), 0)
            finally:
                os.close(fd)
            return True
        except OSError as exc:
            log.warning("spool: could not record the replay offset in %s (%s); kept in memory (a restart "
                        "replays records already stored, and the database drops their duplicates)",
                        self.offset_path, exc.strerror or exc)
            return False

    def commit(self, offset: int) -> None:
        """Record that everything before ``offset`` is in the database."""
        self._mem_offset = offset
        if self._write_offset(offset):
            self._mem_offset = None

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

    def _drop_offset(self) -> bool:
        """Remove the offset file (no offset is offset 0): where a full disk cannot take even
        the offset's rewrite, removing it frees space instead of needing any, and the spool
        can be emptied."""
        try:
            self.offset_path.unlink(missing_ok=True)
            return True
        except OSError:
            return False

    def clear(self) -> None:
        """Empty the spool once every record is replayed.

        The offset goes back to 0 first: a crash between the two steps replays records the
        database already has (harmless), never skips new ones. When the offset cannot be
        written the records stay, marked replayed in memory.
        """
        if self.why is not None and self.why.startswith("over its cap"):
            self.error = self.why = None        # emptied: under its cap again
        if self._write_offset(0) or self._drop_offset():
            self._mem_offset = None
            try:
                os.truncate(self.path, 0)
            except FileNotFoundError:
                pass
            except OSError as exc:
                self._mem_offset = self.size()
                log.warning("spool: could not empty %s (%s); a restart replays its records again "
                            "(the database drops the duplicates)", self.path, exc.strerror or exc)
        else:
            self._mem_offset = self.size()
