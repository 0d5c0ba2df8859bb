"""Passwords of the embedded services, generated once and kept in the state folder (0600).

``secrets.json`` holds ``db`` (database roles), ``mqtt`` (the broker's fixed accounts) and
``mqtt_sites``: one broker account per site of the config ("Device identity"),
created the first time the site is seen and kept (a site's devices keep their password).
``keys`` holds signing keys: ``ack_links`` signs the acknowledgement links of alerts
(``alerts.links``); ``web_csrf`` keys the web application's CSRF tokens
(``web.app``); ``calendar_feeds`` signs the calendar feeds' addresses (``web.feeds``); ``backup_cipher``
encrypts the backup repository (``sewerwatch.backup``). ``backup_s3`` holds the access key id
and secret of an S3-compatible backup repository (``[backup.s3]``): given by the store's
administrator, set with ``sewerwatch backup secrets`` (:func:`put`), never generated.
Never in the config file, never logged.
"""

from __future__ import annotations

import json
import secrets as _random
from pathlib import Path

from foundation.files import write_whole

#: Database roles (see ``sewerwatch/db/roles.py``) and broker accounts with a password.
DB_ACCOUNTS = ("admin", "owner", "ingest", "grafana")
MQTT_ACCOUNTS = ("admin", "collector", "device", "notifier")
#: Signing keys (256 bits each).
KEYS = ("ack_links", "web_csrf", "calendar_feeds", "portal_invites", "backup_cipher")


def load_or_create(state_dir: Path, sites=()) -> dict:
    """Read ``secrets.json`` in ``state_dir``, creating any missing password.

    Parameters
    ----------
    sites : iterable of str
        Site ids that need a broker account of their own.

    Returns
    -------
    dict
        ``{"db": {account: password}, "mqtt": {account: password}, "mqtt_sites": {site: password},
        "keys": {name: key}}``.
    """
    path = state_dir / "secrets.json"
    data = {"db": {}, "mqtt": {}, "mqtt_sites": {}, "keys": {}}
    if path.exists():
        data.update(json.loads(path.read_text()))
    changed = False
    for section, accounts, size in (("db", DB_ACCOUNTS, 18), ("mqtt", MQTT_ACCOUNTS, 18),
                                    ("mqtt_sites", tuple(sites), 18), ("keys", KEYS, 32)):
        for account in accounts:
            if account not in data[section]:
                data[section][account] = _random.token_urlsafe(size)
                changed = True
    if changed or not path.exists():
        _write(path, data)
    return data


#: ``secrets.json``'s section of the S3-compatible backup repository's credentials, and its keys.
S3_SECTION = "backup_s3"
S3_KEYS = ("access_key_id", "secret_access_key")


def put(state_dir: Path, section: str, values: dict) -> Path:
    """Set ``values`` in ``section`` of ``secrets.json`` (the rest kept, missing passwords
    created); return the file's path."""
    data = load_or_create(state_dir)
    data.setdefault(section, {}).update(values)
    path = state_dir / "secrets.json"
    _write(path, data)
    return path


def _write(path: Path, data: dict) -> None:
    """Write ``secrets.json`` whole (0600), replacing the old one at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(data, indent=2), mode=0o600)
