"""Helpers of the tests against third-party clients (``tests/test_interop_*.py``).

The clients are installed by ``scripts/setup interop`` into ``tests/interop/``: the npm
packages (Eclipse Tahu's ``sparkplug-client``, Node-RED) in ``node_modules``, and
pysparkplug and mqtt-spb-wrapper each in a small virtual environment of its own under
``venvs/`` (both pin paho-mqtt 1.x, which cannot share sewerwatch's paho-mqtt 2.x, and they
pin different protobufs). Nothing is downloaded at test time: a client that is not
installed skips its test, saying why and what to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import psycopg
import pytest

from ingest.mqtt.sparkplug_schema import Payload

ROOT = Path(__file__).resolve().parent.parent
INTEROP = ROOT / "tests" / "interop"
NODE_MODULES = INTEROP / "node_modules"


def need_npm_package(name: str) -> Path:
    """The folder of npm package ``name``, or skip (node or the package missing)."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed (apt-get install nodejs npm, then scripts/setup interop)")
    d = NODE_MODULES / name
    if not (d / "package.json").is_file():
        pytest.skip(f"npm package {name} is not installed in {NODE_MODULES} (run scripts/setup interop)")
    return d


def need_venv(name: str) -> Path:
    """The python of the interop venv ``name``, or skip."""
    py = INTEROP / "venvs" / name / "bin" / "python"
    if not py.is_file():
        pytest.skip(f"the {name} virtual environment is not installed in {py.parent.parent} (run scripts/setup interop)")
    return py


def clean_env() -> dict:
    """The environment of a sewerwatch subprocess that must use its config alone."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}


def start_run(cfg_path, log_path, client_id: str) -> subprocess.Popen:
    """``sewerwatch run --quiet --no-modbus`` as a subprocess, its log in ``log_path``."""
    err = open(log_path, "a")
    return subprocess.Popen([sys.executable, "-m", "sewerwatch", "--config", str(cfg_path), "run", "--quiet",
                             "--no-modbus", "--client-id", client_id], stdout=subprocess.DEVNULL, stderr=err,
                            cwd=ROOT, env=clean_env())


def stored(db_url: str, site: str) -> dict:
    """``{(sensor name, time ms): value}`` of every reading of ``site``, and the count of rows."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("SELECT s.name, (extract(epoch FROM r.time) * 1000)::bigint, r.value FROM readings r "
                            "JOIN sensors s ON s.id = r.sensor_id JOIN sites t ON t.id = s.site_id WHERE t.key = %s",
                            (site,)).fetchall()
    return {(n, t): v for n, t, v in rows}


def dead_letters(db_url: str, like: str) -> list[tuple[str, str, bytes]]:
    """``(topic, reason, payload)`` of the dead letters whose topic is LIKE ``like``."""
    with psycopg.connect(db_url) as conn:
        return [(t, r, bytes(p or b"")) for t, r, p in conn.execute(
            "SELECT topic, reason, payload FROM dead_letters WHERE topic LIKE %s ORDER BY id", (like,)).fetchall()]


def sparkplug_metrics(raw: bytes):
    """The metrics of a Sparkplug payload (a compressed one opened), for counting what a
    dead letter holds."""
    p = Payload.FromString(raw)
    if p.uuid == "SPBV1.0_COMPRESSED":
        algo = next((m.string_value for m in p.metrics if m.name == "algorithm"), "DEFLATE")
        p = Payload.FromString(zlib.decompress(p.body, 31 if algo == "GZIP" else 15))
    return list(p.metrics)
