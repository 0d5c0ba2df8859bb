"""The project's own files, as the checks of the tree read them.

Setup installs third-party code inside the checkout (the interop tests' Node packages and
virtual environments under ``tests/interop``, the ``.venv``, a wheel's ``build/``); the
checks of module size and of the words in the tree are about the project's files, so they
read what git tracks. Where there is no git (an unpacked archive), the folders setup fills
are left out instead.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

#: Folders of installed, third-party files (left out when git cannot say what is tracked).
INSTALLED = {"node_modules", "venvs", ".venv", "build", "dist", "__pycache__", ".hypothesis"}


@lru_cache(maxsize=None)
def _tracked(root: Path) -> frozenset[Path] | None:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(root / p for p in out.decode("utf-8", "replace").split("\0") if p)


def project_files(root: Path, top: str, pattern: str = "*") -> list[Path]:
    """The project's files under ``root / top`` matching ``pattern``, sorted."""
    base = root / top
    if base.is_file():
        return [base]
    if not base.is_dir():
        return []
    tracked = _tracked(root)
    found = sorted(p for p in base.rglob(pattern) if p.is_file())
    if tracked is not None:
        # tracked, or new and not yet added (a module being written is checked too): not ignored
        return [p for p in found if p in tracked or not (set(p.relative_to(root).parts) & INSTALLED)
                and not _ignored(root, p)]
    return [p for p in found if not set(p.relative_to(root).parts) & INSTALLED]


def _ignored(root: Path, path: Path) -> bool:
    r = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=root, capture_output=True, timeout=60)
    return r.returncode == 0
