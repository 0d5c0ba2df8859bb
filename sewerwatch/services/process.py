"""Small helpers for running the embedded services' processes."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from pathlib import Path

from foundation.errors import ServiceError


def is_root() -> bool:
    return os.geteuid() == 0


def system_user(name: str) -> pwd.struct_passwd | None:
    """The passwd entry of ``name``, or None where there is no such user."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def chown_tree(path: Path, user: str) -> None:
    """Give ``path`` and everything under it to ``user`` (only when running as root)."""
    entry = system_user(user)
    if not is_root() or entry is None:
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for name in dirs + files:
            os.lchown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)


def run(cmd: list[str], *, as_user: str | None = None, check: bool = True,
        timeout: float = 120, what: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd``, as ``as_user`` when we are root, capturing its output; ``env``: variables
    added to the environment (``runuser`` passes them on).

    Raises
    ------
    ServiceError
        When the command fails and ``check`` is set, with its last lines of output.
    """
    if as_user and is_root():
        cmd = ["runuser", "-u", as_user, "--", *cmd]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env={**os.environ, **env} if env else None)
    except FileNotFoundError:
        raise ServiceError(f"{cmd[0]} not found: run 'scripts/setup' to install what sewerwatch needs") from None
    except subprocess.TimeoutExpired:
        raise ServiceError(f"{what or cmd[0]} did not finish within {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise ServiceError(f"{what or ' '.join(cmd)} failed (exit {proc.returncode}): {tail}")
    return proc


def find_binary(name: str, *extra_dirs: str) -> str:
    """Locate an executable on PATH or in ``extra_dirs``."""
    for d in extra_dirs:
        candidate = Path(d) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin")
    if not found:
        raise ServiceError(f"{name} not found: run 'scripts/setup' to install what sewerwatch needs")
    return found


def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); read its state where /proc exists.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except OSError:
        return True


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
