"""The status files ``run`` and ``collect`` write and ``sewerwatch status`` reads.

A status file is rewritten every two seconds; a reader tells a process that stopped
answering by its age. on a full disk the file must still be written, or
the process would look "not responding" when its problem is the disk: each file keeps
:data:`STATUS_RESERVE` bytes of room (trailing blanks JSON ignores), and when a new file
cannot be made it is rewritten in place, over room it already has.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

log = logging.getLogger("sewerwatch.status")


#: A status file keeps at least this much room (trailing blanks), so that on a full disk it
#: can still be rewritten in place [bytes] (a full disk is a full disk in
#: ``status``, not a process "not responding").
STATUS_RESERVE = 256 * 1024
_status_warned: set = set()


def write_status(path: Path, status: dict) -> None:
    """Write ``status`` to ``path``: atomically (a new file renamed over the old one), padded
    with blanks to :data:`STATUS_RESERVE`; where the disk is full, in place over the old
    file's room (no new block needed). A reader that catches it mid-write reads again
    (:func:`read_status`)."""
    data = json.dumps(status, indent=1, default=str).encode()
    padded = data + b" " * max(0, STATUS_RESERVE - len(data) - 1) + b"\n"
    try:
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(padded)
        tmp.replace(path)
        _status_warned.discard(path)
        return
    except OSError as exc:
        first = exc
        try:
            path.with_suffix(".tmp").unlink()
        except OSError:
            pass
    try:
        with open(path, "r+b") as f:
            room = os.fstat(f.fileno()).st_size
            if room < len(data) + 1:
                raise OSError(f"no room in place ({room:,} bytes for {len(data):,})")
            f.write(data + b" " * (room - len(data) - 1) + b"\n")
        return
    except OSError as exc:
        if path not in _status_warned:
            _status_warned.add(path)
            log.warning("could not write the status file %s: %s (in place: %s)", path, first.strerror or first, exc)


def read_status(path: Path, tries: int = 3) -> dict | None:
    """A status file's JSON, or None (none, or unreadable three times over)."""
    for attempt in range(tries):
        try:
            return json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            if attempt < tries - 1:
                time.sleep(0.05)        # caught mid-write (in place, on a full disk): read again
    return None


