"""Where rule packs are found: ``$SEWERWATCH_PACK_PATH``, the config's ``[utility] pack_dirs``
(set by :func:`foundation.config.load`, or looked up when a pack is first asked for), then the
shipped ones; a pack id found in two files is named with both.

Apart from :mod:`foundation.config` because it is state of the process (the folders of the
config in force), not a table of the file; the config's functions read it from here."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path


from foundation.errors import InputError
from foundation.paths import PACKS_DIR


#: Environment variable: folders of rule packs (``os.pathsep``-separated), searched first.
PACK_PATH_ENV = "SEWERWATCH_PACK_PATH"

#: The ``[utility] pack_dirs`` of the config this process runs with (set by :func:`load`).
_config_pack_dirs: tuple[Path, ...] = ()


def use_pack_dirs(folders) -> None:
    """Make ``folders`` the config's pack folders for this process (:func:`load` calls it
    with the loaded config's ``[utility] pack_dirs``; a config without them clears them)."""
    global _config_pack_dirs, _deferred
    _config_pack_dirs = tuple(Path(f) for f in folders)
    _deferred = None


#: ``() -> None`` loading the config in force when a pack is first looked up (the shell's
#: :func:`defer_pack_dirs`), so a command on files alone that takes ``--pack`` searches the
#: config's ``pack_dirs`` too without loading the config before it needs to.
_deferred = None


def defer_pack_dirs(loader) -> None:
    """Have the first look-up of a pack call ``loader`` (which loads the config in force and
    so sets its ``pack_dirs``, :func:`use_pack_dirs`); None: no more."""
    global _deferred, _problem
    _deferred, _problem = loader, None


#: why the config in force gave no pack folders (it could not be read), for the message of a
#: pack not found (:func:`pack_dirs_problem`)
_problem: str | None = None


def pack_dirs_problem(problem: str | None = None) -> str | None:
    """Record (with ``problem``) or read why the config in force gave no pack folders."""
    global _problem
    if problem is not None:
        _problem = problem
    return _problem


def pack_dirs(extra=()) -> tuple[Path, ...]:
    """The folders searched for a rule pack ``<id>.toml``, in order.

    ``extra`` (e.g. the ``pack_dirs`` of a config being validated), then
    ``$SEWERWATCH_PACK_PATH``, then the ``[utility] pack_dirs`` of the config in force in
    this process, then the packs shipped in ``limits/packs/``.
    """
    global _deferred
    if _deferred is not None:
        load_now, _deferred = _deferred, None
        load_now()
    return tuple(folder for folder, _ in pack_sources(extra))


def pack_sources(extra=()) -> tuple[tuple[Path, str], ...]:
    """The pack folders of :func:`pack_dirs`, each with where it comes from in words: "the
    config being checked", "$SEWERWATCH_PACK_PATH", "the config's pack_dirs", "shipped"."""
    env = tuple(Path(p) for p in os.environ.get(PACK_PATH_ENV, "").split(os.pathsep) if p)
    return (*((Path(e), "the config being checked") for e in extra), *((e, f"${PACK_PATH_ENV}") for e in env),
            *((c, "the config's pack_dirs") for c in _config_pack_dirs), (PACKS_DIR, "shipped"))


def pack_files(pack_id: str, extra=()) -> list[tuple[Path, str]]:
    """Every file of rule pack ``pack_id`` on the search path, each once (a folder on the path
    twice counts once), with where its folder comes from (:func:`pack_sources`)."""
    pack_dirs(extra)                      # the config in force, if not yet loaded
    seen: dict[Path, tuple[Path, str]] = {}
    for folder, origin in pack_sources(extra):
        p = folder / f"{pack_id}.toml"
        if p.is_file():
            seen.setdefault(p.resolve(), (p, origin))
    return list(seen.values())


def find_pack(pack_id: str, extra=()) -> Path | None:
    """The file of rule pack ``pack_id`` on the search path (:func:`pack_dirs`), or None.

    Raises
    ------
    InputError
        When two files on the path have that id (naming both): which one the utility means
        is not for the program to guess.
    """
    found = pack_files(pack_id, extra)
    if len(found) > 1:
        (a, wa), (b, wb) = found[:2]
        raise InputError(f"rule pack {pack_id!r} is found twice: {a} ({wa}) and {b} ({wb}); "
                         "rename or remove one (a pack's id is its file's name)")
    return found[0][0] if found else None


def known_packs(extra=()) -> list[str]:
    """The ids of every rule pack on the search path, sorted.

    A pack folder may also hold other TOML files (``pack_dirs = ["."]`` beside ``city.toml``
    and ``rates.toml``): a file that parses and has neither ``id`` nor ``[[rules]]`` is no
    pack and is not listed. A file that does not parse is listed, so that loading it names its
    error.
    """
    return sorted({p.stem for folder in pack_dirs(extra) if folder.is_dir()
                   for p in folder.glob("*.toml") if _may_be_pack(p)})


def _may_be_pack(path: Path) -> bool:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    return "id" in data or "rules" in data



def config_pack_dirs() -> tuple[Path, ...]:
    """The pack folders of the config in force in this process (:func:`use_pack_dirs`)."""
    return _config_pack_dirs
