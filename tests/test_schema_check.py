"""The context's schema check: a database without the schema, or with an
older one, is one line naming ``sewerwatch db migrate``; a table missing later is too."""

from __future__ import annotations

import psycopg
import pytest

from foundation import config
from foundation.context import Context
from foundation.errors import SchemaMissing
from sewerwatch import cli

pytestmark = pytest.mark.services


def _ctx() -> Context:
    return Context(config=config.from_dict({}, "<tests>"), schema_version=cli.newest_migration)


def test_an_older_schema_is_named_with_its_version(db):
    ctx = _ctx()
    with ctx.connect(db_url=db.url) as conn:      # migrated: fine
        assert conn.execute("SELECT 1").fetchone() == (1,)
    newest = cli.newest_migration()
    with db.connect() as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = %s", (newest,))
        conn.commit()
    with pytest.raises(SchemaMissing, match=rf"older sewerwatch schema \(migration \d{{4}}, this version needs "
                                            rf"{newest:04d}\): run 'sewerwatch db migrate' first"):
        _ctx().connect(db_url=db.url)
    # the ingest role may not read schema_migrations: its check is the schema's presence
    with _ctx().connect("ingest", db_url=db.urls["ingest"]) as conn:
        assert conn.execute("SELECT count(*) FROM sensors").fetchone() == (0,)
    # the commands that create or inspect the schema skip the check
    _ctx().connect(db_url=db.url, schema=False).close()


def test_a_missing_table_later_is_the_same_one_line(db):
    with db.connect() as conn:
        with pytest.raises(psycopg.errors.UndefinedTable) as err:
            conn.execute("SELECT * FROM no_such_table")
    mapped = cli.database_error(err.value)
    assert isinstance(mapped, SchemaMissing) and mapped.exit_code == 2
    assert str(mapped) == ('the database lacks part of the sewerwatch schema (relation "no_such_table" does not '
                           "exist): run 'sewerwatch db migrate' first")
    assert cli.database_error(ValueError("x")) is None
