"""Reading the project's TOML files (config, rule packs, profiles, scenarios, rates) with
one-line errors that name the file."""

from __future__ import annotations

import tomllib
from pathlib import Path

from foundation.errors import InputError


def read(path, what: str = "file") -> dict:
    """Parse the TOML file ``path``.

    Parameters
    ----------
    path : path-like
        The file.
    what : str
        What the file is, for the error when it is missing (``"profile file"``, ...).

    Raises
    ------
    InputError
        ``<path>: no such <what>``, ``<path>: not UTF-8 text`` or
        ``<path>: not valid TOML: <reason> (at line L, column C)``.
    """
    p = Path(path)
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: no such {what}") from None
    except UnicodeDecodeError:
        raise InputError(f"{p}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{p}: not valid TOML: {exc}") from None


def loads(data: bytes, name: str) -> dict:
    """Parse TOML ``data`` (an uploaded file's bytes) named ``name`` in the errors, as :func:`read`."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{name}: not valid TOML: {exc}") from None
