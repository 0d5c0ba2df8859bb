"""The error tree of sewerwatch, drawn in one place.

Every error a user can cause or meet is one of these; the CLI prints it as a single line
``sewerwatch: error: <message>`` and exits with the class's ``exit_code``.

::

    SewerwatchError                 exit 1
    ├── InputError                  exit 2   bad file, row, unit, parameter or argument
    │   ├── ConfigError             exit 2   the utility's TOML config (names file and key)
    │   ├── Conflict                exit 2   someone changed the object since it was read to edit or issue
    │   └── SchemaMissing           exit 2   the database lacks the schema: run `db migrate`
    ├── ServiceError                exit 1   embedded or configured TimescaleDB/Mosquitto
    │   └── DatabaseError           exit 1   migrations, roles, connections
    └── NotBuiltYet                 exit 3   a subcommand whose issue is still open
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone


class SewerwatchError(Exception):
    """Base of every error sewerwatch reports to a user."""

    exit_code = 1


class InputError(SewerwatchError):
    """Bad input: a file, a row in it, a unit, a parameter or a command-line argument.

    The message names what is wrong and where (file and line, or key).
    """

    exit_code = 2


class ConfigError(InputError):
    """The utility's configuration file is invalid.

    Parameters
    ----------
    path : str
        The config file.
    key : str
        Dotted key inside it, e.g. ``sites[2].sic``; empty for the whole file.
    problem : str
        What is wrong, in words.
    """

    def __init__(self, path: str, key: str, problem: str):
        self.path, self.key, self.problem = str(path), key, problem
        where = f"{self.path}: {key}" if key else self.path
        super().__init__(f"{where}: {problem}")


class Conflict(InputError):
    """The object was changed by someone else since the edit began, or since the person
    read the document they issue (optimistic concurrency: the edit or the issue names the
    version it was made from, and that is no longer the current one).

    Parameters
    ----------
    what : str
        The object, e.g. ``permit PAL-IU-2026-02``.
    expected : int
        The version the edit was made from.
    current : int
        The version stored now.
    by : str
        Who stored the current version.
    at : datetime or str
        When: an aware datetime (the message writes it in UTC, a page of the office in the
        village's time: :func:`web.forms.conflict_lines`), or text where it is not known.
    doing : str
        What was refused: ``"edit"`` (an edit made from an older version: nothing saved) or
        ``"issue"`` (a document issued as the person read it: nothing issued).
    """

    #: doing -> the message, from the attributes
    WORDS = {"edit": "{what}: the edit was made from version {expected}, but {by} saved version {current} at {at} "
                     "meanwhile: nothing was saved; start again from version {current}",
             "issue": "{what}: version {expected} was read to be issued, but {by} saved version {current} "
                      "at {at} meanwhile: nothing was issued; read version {current}, then issue it"}

    def __init__(self, what: str, expected: int, current: int, by: str, at, *, doing: str = "edit"):
        if doing not in self.WORDS:
            raise ValueError(f"Conflict: doing is one of {', '.join(self.WORDS)}, not {doing!r}")
        self.what, self.expected, self.current, self.by, self.at, self.doing = what, expected, current, by, at, doing
        when = at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if isinstance(at, datetime) else at
        super().__init__(self.WORDS[doing].format(what=what, expected=expected, current=current, by=by, at=when))


class SchemaMissing(InputError):
    """The database has no sewerwatch schema, or an older one: ``sewerwatch db migrate``.

    An input error (exit 2): the database the user pointed at is not ready, and one
    command (named in the message) makes it so.
    """


class ServiceError(SewerwatchError):
    """A service (TimescaleDB, Mosquitto) could not be started, stopped or reached."""


class DatabaseError(ServiceError):
    """A migration, role or connection problem with the database."""


class NotBuiltYet(SewerwatchError):
    """A subcommand that exists in the CLI but whose capability is not built yet."""

    exit_code = 3


def report(exc: SewerwatchError) -> int:
    """Print ``exc`` as the one line every sewerwatch command uses; return its exit code.

    ``sewerwatch: error: <message>`` on standard error, for the CLI and for every module
    that also runs alone (``python -m simulators.modbus_server``, ...).
    """

    print(f"sewerwatch: error: {exc}", file=sys.stderr)
    return exc.exit_code
