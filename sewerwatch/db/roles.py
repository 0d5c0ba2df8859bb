"""The database roles sewerwatch uses (DESIGN.md, Storage).

- owner: owns the schema and runs migrations; the running service uses it for its own
  tables (violations, alerts). Never a superuser.
- ingest: the collectors' writer: inserts readings and dead letters, reads the sensor
  map; cannot read lab tables, delete readings or alter the schema.
- grafana: read-only, for dashboards.
"""

from foundation.endpoints import DATABASE, DB_ROLES

OWNER = DB_ROLES["owner"]
INGEST = DB_ROLES["ingest"]
GRAFANA = DB_ROLES["grafana"]

#: account name in ``secrets.json`` -> role name (the embedded superuser aside)
ROLE_NAMES = {"owner": OWNER, "ingest": INGEST, "grafana": GRAFANA}

__all__ = ["DATABASE", "GRAFANA", "INGEST", "OWNER", "ROLE_NAMES"]
