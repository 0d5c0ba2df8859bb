"""Backups into an S3-compatible store: ``[backup.s3]``, the access key id and secret set with
``sewerwatch backup secrets`` into ``secrets.json``, and real pgBackRest backing up and
restoring the real embedded cluster through the store's HTTPS API.

The S3 server is an emulator, moto's ``moto_server`` (the dev extra), started by the test on
127.0.0.1, behind a small TLS proxy of the test's with a self-signed certificate the test
makes (pgBackRest reaches S3 over HTTPS only): no S3 service can run here. pgBackRest checks
the certificate against that CA file (``ca_file``), as it would a store's own CA.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from foundation import config as sw_config
from foundation.errors import ConfigError
from sewerwatch import backup, services
from sewerwatch.backup.pgbackrest import Repo
from sewerwatch.db import migrate, sync
from sewerwatch.services.scratch import free_port, state_dir
from tests.support import sensors_toml, wait_until

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "village-backups"
KEY_ID, SECRET = "AKIAVILLAGEDRILL0001", "s3cr3t-never-shown-Zq81xWk"


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for ``localhost`` (its own CA) and its key, made with ``cryptography``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    crt, pem = folder / "s3.crt", folder / "s3.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption()))
    os.chmod(crt, 0o644)                  # pgBackRest may run as the cluster's user (postgres, when root)
    os.chmod(folder, 0o755)
    return crt, pem


class TlsProxy:
    """HTTPS on 127.0.0.1 in front of a plain HTTP server: each connection's bytes passed on as
    they are, and a proper TLS close (close_notify) when the server ends the connection.

    Why not moto_server's own ``--ssl-cert``: its server (werkzeug's) drops the TCP connection
    without closing TLS, which OpenSSL 3 reports to pgBackRest 2.45 as an error
    (``unexpected eof while reading``) that it does not retry."""

    def __init__(self, cert: Path, key: Path, upstream_port: int):
        import asyncio
        import ssl
        import threading

        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(cert, key)
        self.upstream_port, self.port = upstream_port, free_port()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        assert self.ready.wait(10), "the TLS proxy did not start"

    def _serve(self):
        import asyncio

        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", self.port, ssl=self.ctx))
        self.ready.set()
        self.loop.run_forever()

    async def _connection(self, c_reader, c_writer):
        import asyncio

        try:
            u_reader, u_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            c_writer.close()
            return

        async def pump(reader, writer, half_close):
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                if half_close and writer.can_write_eof():
                    writer.write_eof()
                else:
                    writer.close()          # TLS: close_notify, then the socket

        await asyncio.gather(pump(c_reader, u_writer, True), pump(u_reader, c_writer, False))
        u_writer.close()

    def close(self):
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def s3_store():
    """moto's S3 emulator on 127.0.0.1 behind HTTPS, with an empty bucket: ``(endpoint, ca_file, client)``."""
    import boto3
    from botocore.config import Config as BotoConfig

    d = state_dir("sewerwatch-s3-")
    crt, pem = self_signed(d)
    port = free_port()
    moto = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = TlsProxy(crt, pem, port)
    client = boto3.client("s3", endpoint_url=f"https://localhost:{proxy.port}", verify=str(crt),
                          region_name="us-east-1", aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                          config=BotoConfig(s3={"addressing_style": "path"}))
    try:
        def up():
            try:
                client.list_buckets()
                return True
            except Exception:
                return proc.poll() is not None
        wait_until(up, timeout=30)
        assert proc.poll() is None, "moto_server did not start"
        client.create_bucket(Bucket=BUCKET)
        yield f"localhost:{proxy.port}", crt, client
    finally:
        proxy.close()
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def program(monkeypatch, s3_store):
    """A program whose ``[backup]`` names the S3 store; its config, the store's client, its own folder."""
    for k in ("SEWERWATCH_PG_PORT", "SEWERWATCH_MQTT_PORT", "SEWERWATCH_STATE_DIR", "SEWERWATCH_DB_URL"):
        monkeypatch.delenv(k, raising=False)
    endpoint, crt, client = s3_store
    d = state_dir("sewerwatch-s3drill-")
    toml = d / "sewerwatch.toml"
    toml.write_text(f'[services]\nstate_dir = "{d / "state"}"\npg_port = {free_port()}\nmqtt_port = {free_port()}\n'
                    f'mqtt_sites_port = {free_port()}\n'
                    f'[backup]\n[backup.s3]\nendpoint = "{endpoint}"\nbucket = "{BUCKET}"\npath = "/palmyra"\n'
                    f'uri_style = "path"\nca_file = "{crt}"\n'
                    '[alerts]\nconsole = false\nmqtt = false\ndigest_at = false\n'
                    '[[sites]]\nid = "acme"\nname = "Acme Plating"\n'
                    + sensors_toml("acme", {"ph": ("ph", "pH")}))
    cfg = sw_config.load(toml)
    try:
        yield cfg, client, d
    finally:
        services.down(cfg)
        shutil.rmtree(d, ignore_errors=True)


def sw(cfg, *args, stdin: str | None = None, timeout: float = 300):
    """``sewerwatch --config CFG ARGS`` as the administrator types it (a subprocess)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")}
    return subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg.path), *args], env=env,
                          input=stdin, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def readings(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM readings").fetchone()[0]


def write(url: str, n: int) -> None:
    with psycopg.connect(url) as conn:
        sid = conn.execute("SELECT id FROM sensors").fetchone()[0]
        conn.execute("INSERT INTO readings (time, sensor_id, value) SELECT now() - g * interval '1 ms', %s, 7.0 "
                     "FROM generate_series(1, %s) g", (sid, n))


@pytest.mark.services
@pytest.mark.slow
def test_backup_into_an_s3_store_and_restore_the_latest_from_it(program, capsys):
    """The commands as an administrator types them against an S3 store (an emulator, moto,
    behind TLS: no S3 service can run here): refused in one line until the keys are set, then
    check, a full backup, rows written after it, the list, the data folder deleted, restore
    --latest, every row back; the objects are in the bucket, encrypted, and the secret is
    shown nowhere."""
    cfg, client, folder = program
    state = cfg.services.state_dir
    started = time.monotonic()

    refused = sw(cfg, "backup", "check")            # no access key yet: one line naming secrets.json and the key
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "secrets.json: backup_s3.access_key_id: not set" in refused.stderr
    assert "sewerwatch backup secrets" in refused.stderr

    kept = sw(cfg, "backup", "secrets", "--stdin", stdin=f"{KEY_ID}\n{SECRET}\n")
    assert kept.returncode == 0, kept.stderr
    assert SECRET not in kept.stdout + kept.stderr and KEY_ID not in kept.stdout + kept.stderr
    stored = json.loads((state / "secrets.json").read_text())
    assert stored["backup_s3"] == {"access_key_id": KEY_ID, "secret_access_key": SECRET}
    assert stored["keys"]["backup_cipher"]                    # the other secrets kept
    assert oct((state / "secrets.json").stat().st_mode & 0o777) == "0o600"
    assert SECRET not in Path(cfg.path).read_text()

    ep = services.up(cfg, mqtt=False)
    url = ep.db("owner")
    migrate.migrate(url)
    with psycopg.connect(url) as conn:
        sync.sync(conn, cfg)
        conn.commit()
    conf = (state / "backup" / "pgbackrest.conf").read_text()
    for line in ("repo1-type=s3", "repo1-path=/palmyra", f"repo1-s3-bucket={BUCKET}", "repo1-s3-endpoint=localhost",
                 "repo1-s3-uri-style=path", "repo1-storage-verify-tls=y", "repo1-cipher-type=aes-256-cbc"):
        assert line in conf.splitlines(), line

    checked = sw(cfg, "backup", "check")
    assert checked.returncode == 0, checked.stderr
    assert f"a WAL segment reached s3://{BUCKET}/palmyra at localhost:" in checked.stdout
    write(url, 300)
    took = sw(cfg, "backup", "now", "--full")
    assert took.returncode == 0 and ": full," in took.stdout, took.stderr
    write(url, 200)                                  # after the backup: only the WAL in the store has them
    expected = readings(url)
    assert expected == 500
    listed = sw(cfg, "backup", "list")
    assert listed.returncode == 0, listed.stderr
    assert f"repository: s3://{BUCKET}/palmyra at localhost:" in listed.stdout
    assert sum(" full " in line for line in listed.stdout.splitlines()) == 1, listed.stdout

    keys = [o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
            for o in page.get("Contents", [])]
    assert any(k.startswith("palmyra/backup/sewerwatch/") for k in keys), keys[:5]
    assert any(k.startswith("palmyra/archive/sewerwatch/") for k in keys), keys[:5]
    assert not (state / "backup" / "repo").exists()          # nothing went to a local folder
    copy = client.get_object(Bucket=BUCKET, Key="palmyra/backup/sewerwatch/backup.info")["Body"].read()
    assert b"[backup:current]" not in copy and b"[backrest]" not in copy      # encrypted in the store

    pg = services.embedded(cfg)[0]
    backup.archiving.repo(cfg).run("check", timeout=120)      # the last segment reaches the store
    services.down(cfg)
    shutil.rmtree(pg.data_dir)
    restored = sw(cfg, "backup", "restore", "--latest")
    assert restored.returncode == 0, restored.stderr
    assert readings(url) == expected

    said = "".join(p.read_text(errors="replace") for p in (state / "backup" / "log").glob("*"))
    for out in (checked, took, listed, restored):
        said += out.stdout + out.stderr
    assert SECRET not in said                          # neither sewerwatch nor pgBackRest's log shows it
    seconds = time.monotonic() - started
    with capsys.disabled():
        print(f"\nS3 drill (emulator): {seconds:.1f} s")


@pytest.mark.parametrize("text, key, problem", [
    ('[backup.s3]\nbucket = "b"\n', "backup.s3.endpoint", "missing (required)"),
    ('[backup.s3]\nendpoint = "s3.example.org"\n', "backup.s3.bucket", "missing (required)"),
    ('[backup.s3]\nendpoint = "https://s3.example.org"\nbucket = "b"\n', "backup.s3.endpoint", "host or host:port"),
    ('[backup.s3]\nendpoint = "s3.example.org:99999"\nbucket = "b"\n', "backup.s3.endpoint", "host or host:port"),
    ('[backup.s3]\nendpoint = "s3.example.org"\nbucket = "b"\nuri_style = "virtual"\n', "backup.s3.uri_style",
     "one of host, path"),
    ('[backup.s3]\nendpoint = "s3.example.org"\nbucket = "b"\nca_file = "/nonexistent/ca.pem"\n',
     "backup.s3.ca_file", "no such file"),
    ('[backup]\nrepo = "/srv/repo"\n[backup.s3]\nendpoint = "s3.example.org"\nbucket = "b"\n', "backup.repo",
     "not both"),
])
def test_s3_config_errors_name_file_key_and_problem(tmp_path, text, key, problem):
    path = tmp_path / "village.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        sw_config.load(path)
    assert err.value.key == key and problem in err.value.problem
    assert str(err.value).startswith(f"{path}: {key}: ") and "\n" not in str(err.value)


def test_pgbackrest_options_of_an_s3_store(tmp_path):
    """The options as pgBackRest 2.x names them: the port apart from the host, no TLS check when
    told so, the folder inside the bucket; a folder repository has none of them."""
    path = tmp_path / "village.toml"
    path.write_text('[backup]\nkeep_full = 3\n[backup.s3]\nendpoint = "minio.example.org:9000"\nbucket = "b1"\n'
                    'region = "eu-west-1"\nverify_tls = false\n')
    cfg = sw_config.load(path)
    s3 = cfg.backup.s3
    assert (s3.host, s3.port, s3.path, s3.uri_style) == ("minio.example.org", 9000, "/sewerwatch", "host")
    r = Repo(state_dir=tmp_path, repo=Path(s3.path), data_dir=tmp_path / "d", port=5432, socket_dir=tmp_path,
             cipher="c", admin_password="p", user=None, policy=cfg.backup, s3=s3, s3_keys=("id1", "sec1"))
    lines = r.conf_text().splitlines()
    for line in ("repo1-type=s3", "repo1-path=/sewerwatch", "repo1-s3-endpoint=minio.example.org",
                 "repo1-storage-port=9000", "repo1-s3-bucket=b1", "repo1-s3-region=eu-west-1",
                 "repo1-s3-uri-style=host", "repo1-s3-key=id1", "repo1-s3-key-secret=sec1",
                 "repo1-storage-verify-tls=n", "repo1-bundle=y", "repo1-retention-full=3"):
        assert line in lines, line
    assert not any(x.startswith("repo1-storage-ca-file") for x in lines)
    assert r.where == "s3://b1/sewerwatch at minio.example.org:9000"
    existed = Path(s3.path).exists()
    r.write_conf()                                   # no folder made for a repository in a bucket
    assert Path(s3.path).exists() == existed and oct(r.conf.stat().st_mode & 0o777) == "0o600"
    folder = Repo(state_dir=tmp_path, repo=tmp_path / "repo", data_dir=tmp_path / "d", port=5432, socket_dir=tmp_path,
                  cipher="c", admin_password="p", user=None, policy=cfg.backup)
    assert not any("s3" in x or "repo1-type" in x or "bundle" in x for x in folder.conf_text().splitlines())
