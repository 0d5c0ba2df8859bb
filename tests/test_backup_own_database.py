"""A database of one's own (``db_url``): sewerwatch does not back it up, and ``backup check``
reads what its server reports of archiving."""

from __future__ import annotations

import pytest

from foundation import config as sw_config
from foundation.errors import InputError, ServiceError
from sewerwatch import backup

pytestmark = pytest.mark.services


def test_an_own_database_without_archiving_is_named_and_not_backed_up(services, monkeypatch):
    monkeypatch.delenv("SEWERWATCH_DB_URL", raising=False)
    cfg = sw_config.from_dict({"services": {"db_url": services.db_urls["admin"]}, "backup": {}})
    with services.admin() as conn:
        assert conn.execute("SHOW archive_mode").fetchone()[0] == "off"     # the test cluster does not archive
    with pytest.raises(ServiceError, match="does not archive its WAL .*no point-in-time restore"):
        backup.check(cfg)
    with pytest.raises(InputError, match="the database is your own"):
        backup.take(cfg)
    with pytest.raises(InputError, match="the database is your own"):
        backup.restore(cfg, latest=True)
    assert backup.health(cfg)["configured"] is False
    assert backup.archive_command(cfg, {}) is None
