"""Backup and restore times: a program of the benchmark's own (scratch state folder, its own
port, removed afterwards) with ``[backup]``, ``SENSORS`` sensors at 1 Hz for ``HOURS`` hours of
readings, a full backup, the data folder deleted, ``backup restore --latest``.

The peer, in the same run: the plainest cold copy an administrator could make by hand, the
stopped cluster's data folder through ``tar`` and ``zstd`` (no encryption, no WAL, no point in
time), restored by extracting it and starting the cluster.

Prints one JSON line: ``value`` = the restore's seconds (restore and recovery until the
database takes writes), ``peer_value`` the cold copy's (extract and start), ``ratio`` = peer /
value; with the readings, the database's size [bytes], the backup's seconds and the
repository's size [bytes]; ``per_gb_s`` = restore seconds per GB of database, from which a
year of 200 sensors at 1 Hz (6.3 billion readings) is estimated (``year_estimate_h``).
``BENCH_SENSORS`` (default 200) and ``BENCH_HOURS`` (default 6) set the size.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import psycopg

from foundation import config as sw_config
from sewerwatch import backup, services
from sewerwatch.db import migrate
from sewerwatch.services.scratch import free_port, state_dir

SENSORS = int(os.environ.get("BENCH_SENSORS", "200"))
HOURS = float(os.environ.get("BENCH_HOURS", "6"))
YEAR_READINGS = 200 * 86400 * 365


def main() -> None:
    for k in ("SEWERWATCH_PG_PORT", "SEWERWATCH_MQTT_PORT", "SEWERWATCH_STATE_DIR", "SEWERWATCH_DB_URL"):
        os.environ.pop(k, None)
    d = state_dir("sewerwatch-bench-backup-")
    toml = d / "sewerwatch.toml"
    toml.write_text(f'[services]\nstate_dir = "{d / "state"}"\npg_port = {free_port()}\nmqtt_port = {free_port()}\n'
                    f'[backup]\nrepo = "{d / "repo"}"\n')
    cfg = sw_config.load(toml)
    try:
        url = services.up(cfg, mqtt=False).db("owner")
        migrate.migrate(url)
        seconds = int(HOURS * 3600)
        with psycopg.connect(url) as conn:
            site = conn.execute("INSERT INTO sites (key, name, pack) VALUES ('bench', 'bench', 'palmyra-wi') "
                                "RETURNING id").fetchone()[0]
            for i in range(SENSORS):
                sid = conn.execute("INSERT INTO sensors (site_id, name, parameter, unit, source, address) VALUES "
                                   "(%s, %s, 'ph', 'pH', 'mqtt', %s) RETURNING id", (site, f"s{i}", f"m:{i}")).fetchone()[0]
                conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT now() - g * interval '1 s', %s, "
                             "7 + random() FROM generate_series(1, %s) g", (sid, seconds))
                conn.commit()
            size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        readings = SENSORS * seconds
        t0 = time.time()
        backup.take(cfg, full=True)
        backup_s = time.time() - t0
        repo_bytes = int(subprocess.run(["du", "-sb", str(d / "repo")], capture_output=True, text=True
                                        ).stdout.split()[0])
        services.down(cfg)
        data, cold = d / "state" / "pg" / "data", d / "cold.tar.zst"
        t0 = time.time()
        subprocess.run(f"tar -C {data.parent} -cf - data | zstd -q -T0 -o {cold}", shell=True, check=True)
        cold_s = time.time() - t0
        shutil.rmtree(data)
        out = backup.restore(cfg, latest=True)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == readings
        services.down(cfg)                                   # the peer: the cold copy put back
        shutil.rmtree(data)
        t0 = time.time()
        subprocess.run(f"zstd -q -d -c {cold} | tar -C {data.parent} -xf -", shell=True, check=True)
        services.up(cfg, mqtt=False)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM readings").fetchone()[0] == readings
        peer_s = time.time() - t0
        per_gb = out["seconds"] / (size / 1e9)
        year_bytes = size / readings * YEAR_READINGS
        print(json.dumps({"benchmark": "backup_restore", "value": out["seconds"],
                          "unit": "s, restore --latest until the database takes writes",
                          "peer": "a cold tar+zstd copy of the data folder, extracted and started",
                          "peer_value": round(peer_s, 1), "ratio": round(peer_s / out["seconds"], 2),
                          "cold_copy_s": round(cold_s, 1), "cold_copy_bytes": cold.stat().st_size,
                          "readings": readings, "db_bytes": size, "backup_s": round(backup_s, 1), "repo_bytes": repo_bytes,
                          "per_gb_s": round(per_gb, 1), "year_db_bytes_estimate": int(year_bytes),
                          "year_estimate_h": round(per_gb * year_bytes / 1e9 / 3600, 1)}))
    finally:
        services.down(cfg)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
