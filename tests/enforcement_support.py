"""A small Palmyra-style village in a test database, for the enforcement tests.

Two users: the candy maker (pH, flow and temperature sensors; an acid dump of 30 readings at
pH 3.5 from 10:30 CDT on 2026-06-09, stored as readings and judged by ``check --store``'s
history evaluator) and the plater (lab results only).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from limits.history import check_history

ROOT = Path(__file__).resolve().parent.parent
#: The ordinances (the specification; kept beside the repository, not in it): the folder
#: $SEWERWATCH_SEEDS names, else ../shared/seeds next to the checkout.
SEEDS = Path(os.environ.get("SEWERWATCH_SEEDS") or Path(ROOT.parent, "shared", "seeds"))
SEED_PALMYRA = SEEDS / "003_44f871d49a02d8f5.txt"

#: 2026-06-09 10:30 CDT: the acid dump's first reading
DUMP_START = datetime(2026, 6, 9, 15, 30, tzinfo=timezone.utc)

VILLAGE_TOML = """
[utility]
name = "Village of Palmyra (test)"
pack = "palmyra-wi"
timezone = "America/Chicago"

[documents]
letterhead = ["Department of Public Works, Wastewater Utility", "123 Main Street, Palmyra, WI 53156"]
signed_by = "Pat Example"
signer_title = "Utility Superintendent"

[[sites]]
id = "candy"
name = "Sweet Creek Confections"
sic = "2065"
permit = "PAL-IU-2026-03"

[[sites]]
id = "plating"
name = "Lakeside Plating"
sic = "3471"
permit = "PAL-IU-2026-02"

[[sensors]]
site = "candy"
name = "ph"
parameter = "ph"
unit = "pH"
source = "mqtt"

[[sensors]]
site = "candy"
name = "flow"
parameter = "flow"
unit = "gpm"
source = "mqtt"
"""

LAB_CSV = """sample_id,site,collected,analyte,value,unit,qualifier,method,laboratory
P-01,plating,2026-01-07,cn,20,ug/l,<,SM 4500-CN E,Rock River Environmental Laboratory
P-02,plating,2026-02-04,cn,0.62,mg/l,,SM 4500-CN E,Rock River Environmental Laboratory
P-02,plating,2026-02-04,bod5,400,mg/l,,SM 5210B,Rock River Environmental Laboratory
P-03,plating,2026-03-03,cn,0.41,mg/l,,SM 4500-CN E,Rock River Environmental Laboratory
"""


def env(db, **extra) -> dict:
    e = dict(os.environ)
    e.pop("SEWERWATCH_CONFIG", None)
    e["SEWERWATCH_DB_URL"] = db.url
    e.update(extra)
    return e


RATES_TOML = """bod = 0.20
tss = 0.15
tkn = 0.90
tp = 2.50
[bill.palmyra-wi]
use_per_1000_gal = 6.37
[bill.volume_mg]
plating = 0.12
"""


def write_village(tmp_path: Path) -> Path:
    cfg = tmp_path / "village.toml"
    cfg.write_text(VILLAGE_TOML, encoding="utf-8")
    (tmp_path / "lab.csv").write_text(LAB_CSV, encoding="utf-8")
    (tmp_path / "rates.toml").write_text(RATES_TOML, encoding="utf-8")
    return cfg


def sw(tmp_path: Path, db, *args, timeout: float = 180) -> subprocess.CompletedProcess:
    """``sewerwatch --config village.toml ARGS`` as the user types it, in ``tmp_path``."""
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(tmp_path / "village.toml"), *args],
                          capture_output=True, text=True, env=env(db), cwd=tmp_path, timeout=timeout)


def run(tmp_path: Path, db, *args, os_user: str | None = None) -> subprocess.CompletedProcess:
    """``sewerwatch --config village.toml ARGS`` in this process (the same ``main`` the
    console script calls; a second faster than a subprocess), in ``tmp_path``; ``os_user``:
    as that operating-system user (the login's ``LOGNAME`` and ``USER``)."""
    from sewerwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env(db, **({"LOGNAME": os_user, "USER": os_user} if os_user else {})))
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(tmp_path / "village.toml"), *args])
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def acid_dump(conn) -> None:
    """A day of pH readings at the candy maker, one a minute: 7.2, and 3.5 for 30 minutes."""
    sid = conn.execute("SELECT se.id FROM sensors se JOIN sites s ON s.id = se.site_id "
                       "WHERE s.key = 'candy' AND se.name = 'ph'").fetchone()[0]
    t0 = DUMP_START - timedelta(hours=10, minutes=30)
    times = [t0 + timedelta(minutes=i) for i in range(24 * 60)]
    k0 = int((DUMP_START - t0).total_seconds() // 60)
    values = np.full(len(times), 7.2)
    values[k0:k0 + 30] = 3.5
    with conn.cursor().copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
        for t, v in zip(times, values):
            cp.write_row((t, sid, float(v), 0))


def village(tmp_path: Path, db, *, lab: bool = True, dump: bool = True) -> None:
    """Migrate, write the sites, import the lab results, store the acid dump's violation."""
    write_village(tmp_path)
    r = run(tmp_path, db, "db", "migrate")
    assert r.returncode == 0, r.stderr
    if lab:
        r = run(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab")
        assert r.returncode == 0, r.stderr
        r = run(tmp_path, db, "lab", "check", "--since", "2026-01-01", "--until", "2026-07-01", "--store")
        assert r.returncode == 0, r.stderr
    if dump:
        with db.connect() as conn:
            acid_dump(conn)
            conn.commit()
            check_history("2026-06-09T00:00:00Z", "2026-06-10T12:00:00Z", conn, store=True, progress=False)
            conn.commit()
