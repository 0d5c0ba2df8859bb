"""The database schema: migrations (``migrate.py``), roles (``roles.py``), the embedded
cluster's bootstrap (``bootstrap.py``) and the config's sites and sensors (``sync.py``).

Connections are opened with :func:`foundation.db.connect` (or handed to a command by the
shell's context).
"""
