"""foundation: what every sewerwatch package needs and that knows no other package.

The error tree, TOML reading, paths, units, the utility's config model, where the
database and broker are, and opening a database connection for a role; the context the
shell hands to command handlers. See README.md beside this file.

The face is the error tree (below) and the modules ``config``, ``context``, ``db``,
``endpoints``, ``errors``, ``paths``, ``secrets``, ``tomlfile`` and ``units``, imported by
name (``from foundation import config``); this file imports nothing heavy so that every
command starts fast.
"""

from foundation.errors import (
    ConfigError,
    DatabaseError,
    InputError,
    NotBuiltYet,
    SchemaMissing,
    ServiceError,
    SewerwatchError,
    report,
)

__all__ = [
    "ConfigError", "DatabaseError", "InputError", "NotBuiltYet", "SchemaMissing", "ServiceError", "SewerwatchError", "report",
]
