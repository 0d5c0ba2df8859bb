"""Write the config's sites and sensors into the ``sites`` and ``sensors`` tables.

Idempotent: rows are matched by site key and (site, sensor name) and updated in place (a
sensor's ``interval_s`` learned by ``sewerwatch run`` is kept unless the config gives one);
sites or sensors removed from the config stay in the database (their readings are
evidence) and are reported.
"""

from __future__ import annotations

import psycopg

from foundation.config import Config


def sync(conn: psycopg.Connection, cfg: Config) -> dict:
    """Upsert ``cfg``'s sites and sensors.

    Returns
    -------
    dict
        ``{"sites": n, "sensors": n, "stale_sites": [...], "stale_sensors": [...]}``.
    """
    with conn.transaction():
        for s in cfg.sites:
            conn.execute(
                """INSERT INTO sites (key, name, pack, sic, permit) VALUES (%s, %s, %s, %s, %s)
                   ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name, pack = EXCLUDED.pack,
                   sic = EXCLUDED.sic, permit = EXCLUDED.permit""",
                (s.id, s.name, s.pack, s.sic, s.permit))
        for s in cfg.sensors:
            conn.execute(
                """INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s)
                   SELECT id, %s, %s, %s, %s, %s, %s FROM sites WHERE key = %s
                   ON CONFLICT (site_id, name) DO UPDATE SET parameter = EXCLUDED.parameter,
                   unit = EXCLUDED.unit, source = EXCLUDED.source, address = EXCLUDED.address,
                   interval_s = COALESCE(EXCLUDED.interval_s, sensors.interval_s)""",
                (s.name, s.parameter, s.unit, s.source, s.address, s.interval_s, s.site))
        site_keys = {s.id for s in cfg.sites}
        sensor_keys = {s.key for s in cfg.sensors}
        stale_sites = [k for (k,) in conn.execute("SELECT key FROM sites ORDER BY key") if k not in site_keys]
        stale_sensors = [k for (k,) in conn.execute(
            "SELECT si.key || '/' || se.name FROM sensors se JOIN sites si ON si.id = se.site_id ORDER BY 1")
            if k not in sensor_keys]
    return {"sites": len(cfg.sites), "sensors": len(cfg.sensors),
            "stale_sites": stale_sites, "stale_sensors": stale_sensors}
