"""Files written whole: whoever reads one meanwhile sees the old file or the new one, never
half of one, and a crash leaves one of the two.

Written here rather than taken from a library: atomicwrites, the library made for this, is
archived by its author, and what is needed is a few lines of the standard library (a
temporary file in the same folder, its mode and owner set before it holds anything, fsync,
``os.replace``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_whole(path: Path | str, data: str | bytes, mode: int = 0o600, owner: tuple[int, int] | None = None,
                fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` at once.

    Parameters
    ----------
    path : Path or str
        The file; its folder must exist.
    data : str or bytes
        The whole content (text is written as UTF-8, line ends as given).
    mode : int
        The file's permission bits [octal]; set on the temporary file before any byte is
        written, so a secret is never readable by others, not even for a moment.
    owner : (int, int), optional
        User and group ids to give the file (a service's own user), else the writer's.
    fsync : bool
        Flush the content to the disk before the file takes the old one's place.

    Raises
    ------
    OSError
        The folder cannot take the file (missing, full, read-only); the old file is left
        as it was and no temporary file is left behind.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            if owner is not None:
                os.fchown(f.fileno(), *owner)
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
