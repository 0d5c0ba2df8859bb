"""The database roles sewerwatch uses (DESIGN.md, Storage).

- owner: owns the schema and runs migrations; the running service uses it for its own
  tables (violations, alerts). Never a superuser.
- ingest: the collectors' writer: inserts readings and dead letters, reads the sensor
  map; cannot read lab tables, delete readings or alter the schema.
- grafana: read-only, for dashboards.
"""

OWNER = "sewerwatch_owner"
INGEST = "sewerwatch_ingest"
GRAFANA = "sewerwatch_grafana"

#: account name in ``secrets.json`` -> role name
ROLE_NAMES = {"owner": OWNER, "ingest": INGEST, "grafana": GRAFANA}

#: the database the embedded cluster serves
DATABASE = "sewerwatch"
