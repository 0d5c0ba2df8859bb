"""Where sewerwatch keeps things: the checkout, the state folder of the embedded services."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: The checkout (or installed tree) holding the top-level packages.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def default_state_dir() -> Path:
    """The state folder of the embedded services.

    ``$SEWERWATCH_STATE_DIR`` if set. Otherwise a folder under ``/var/tmp`` keyed to this
    checkout, so two checkouts never share a cluster, and reachable by the ``postgres``
    user even when the checkout sits under a 0700 home such as ``/root``; with
    ``$SEWERWATCH_WORKER`` (a parallel test worker, ``gw0``) that folder's name ends with it,
    so each worker has services of its own while a config's own ``state_dir`` still wins.
    """
    env = os.environ.get("SEWERWATCH_STATE_DIR")
    if env:
        return Path(env).resolve()
    key = hashlib.sha256(str(PROJECT_ROOT).encode()).hexdigest()[:10]
    worker = os.environ.get("SEWERWATCH_WORKER", "")
    return Path("/var/tmp") / (f"sewerwatch-{os.getuid()}-{key}" + (f"-{worker}" if worker else ""))

#: The rule packs, one TOML per jurisdiction (read by ``limits.packs``; named in configs).
PACKS_DIR = PROJECT_ROOT / "limits" / "packs"
#: The schema's SQL migrations, one file a version (applied by ``sewerwatch.db.migrate``; their
#: column comments are the year's export's README, ``enforcement.export``).
MIGRATIONS_DIR = PROJECT_ROOT / "sewerwatch" / "db" / "migrations"
#: The Modbus device profiles (read by ``ingest.profiles``; named in configs).
PROFILES_DIR = PROJECT_ROOT / "ingest" / "profiles"
#: The running pipeline's status in the state folder, rewritten every few seconds by
#: ``sewerwatch run`` and read by ``sewerwatch status``.
RUN_STATUS_FILE = "run-status.json"
#: ``sewerwatch collect``'s status in the state folder, rewritten every two seconds.
COLLECT_STATUS_FILE = "collect-status.json"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex (read a mebibyte at a time)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
