"""The record beyond the database, kept with each backup.

Before each backup the state folder's files that are part of the program's record are put
in one tar in the cluster's data folder (``sewerwatch-record/record.tar``), which pgBackRest
copies, compresses and encrypts with the rest of the data folder; a restore brings it back
with the database as it was at that backup. It holds:

- ``secrets.json`` (the database and broker passwords the restored database expects, the
  signing keys of the links people were sent);
- the writer's spool of readings not yet stored (``spool*/``), the alert manager's memory
  and outbox (``alerts-state.json``, ``alerts-outbox.jsonl``);
- the office's sessions (``web-sessions/``) and the portal's uploads waiting to be imported
  (``portal-imports/``);
- the config file and the rule packs it names, as they were, with the SHA-256 of each in
  ``manifest.json`` (also the backup's annotation, shown by ``sewerwatch backup list``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import time
from pathlib import Path

from foundation.config import find_pack
from foundation.paths import file_sha256

#: The folder in the data folder holding the record.
RECORD_DIR = "sewerwatch-record"
#: Files and folders of the state folder that are the record (globs).
STATE_PARTS = ("secrets.json", "spool*", "alerts-state.json", "alerts-outbox.jsonl", "web-sessions",
               "portal-imports")


def packs_of(cfg) -> dict[str, Path]:
    """The rule packs the config names (the utility's and each site's) -> their files."""
    names = {cfg.utility.pack, *(s.pack for s in cfg.sites if s.pack)}
    found = {n: find_pack(n, cfg.utility.pack_dirs) for n in sorted(names)}
    return {n: p for n, p in found.items() if p is not None}


def hashes(cfg) -> dict:
    """``{"config": sha256 or None, "packs": {id: sha256}}`` of the config and packs in use."""
    path = Path(cfg.path)
    return {"config": file_sha256(path) if path.is_file() else None,
            "packs": {n: file_sha256(p) for n, p in packs_of(cfg).items()}}


def write(cfg, data_dir: Path, user: str | None) -> dict:
    """Put the record in ``data_dir/sewerwatch-record`` (replacing the last one).

    Returns
    -------
    dict
        The manifest: when, the config's and packs' hashes, each file's size [bytes] and SHA-256.
    """
    state = cfg.services.state_dir
    folder = data_dir / RECORD_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    tar_path = folder / "record.tar"
    tmp = folder / "record.tar.tmp"
    files: dict[str, dict] = {}
    with tarfile.open(tmp, "w") as tar:
        for pattern in STATE_PARTS:
            for p in sorted(state.glob(pattern)):
                for f in ([p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file())):
                    name = "state/" + str(f.relative_to(state))
                    try:
                        tar.add(f, arcname=name, recursive=False)
                    except (FileNotFoundError, PermissionError):
                        continue        # a spool file the writer removed meanwhile
                    files[name] = {"bytes": f.stat().st_size if f.exists() else 0}
        cfg_path = Path(cfg.path)
        if cfg_path.is_file():
            tar.add(cfg_path, arcname=f"config/{cfg_path.name}")
        for n, p in packs_of(cfg).items():
            tar.add(p, arcname=f"packs/{n}.toml")
        h = hashes(cfg)
        manifest = {"written_at": time.time(), "state_dir": str(state), "config_path": str(cfg_path),
                    "config_sha256": h["config"], "packs_sha256": h["packs"], "files": files}
        blob = json.dumps(manifest, indent=2).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size, info.mtime = len(blob), int(time.time())
        tar.addfile(info, io.BytesIO(blob))
    os.chmod(tmp, 0o600)
    os.replace(tmp, tar_path)
    (folder / "manifest.json").write_bytes(blob)
    if user:
        from sewerwatch.backup.pgbackrest import chown
        for p in (folder, tar_path, folder / "manifest.json"):
            chown(p, user)
    return manifest


def read_manifest(data_dir: Path) -> dict | None:
    """The manifest of the record a (restored) data folder holds, or None."""
    p = data_dir / RECORD_DIR / "manifest.json"
    return json.loads(p.read_text()) if p.is_file() else None


def unpack(data_dir: Path, state: Path, log=lambda msg: None) -> list[str]:
    """Put a restored data folder's record back into the state folder ``state``.

    Each file or folder it replaces is kept beside it as ``<name>.before-restore``; the
    config and packs are written to ``state/restored-config/`` for the administrator to
    compare (they are not put in place: the config file is the administrator's).

    Returns
    -------
    list of str
        The state folder's parts restored.
    """
    tar_path = data_dir / RECORD_DIR / "record.tar"
    if not tar_path.is_file():
        log("the backup holds no record of the state folder (taken before sewerwatch kept one)")
        return []
    restored = []
    with tarfile.open(tar_path) as tar:
        members = tar.getmembers()
        tops = sorted({m.name.split("/")[1] for m in members if m.name.startswith("state/")})
        for top in tops:
            target = state / top
            if target.exists():
                aside = state / f"{top}.before-restore"
                if aside.is_dir():
                    shutil.rmtree(aside)
                elif aside.exists():
                    aside.unlink()
                target.rename(aside)
            restored.append(top)
        for m in members:
            if m.name.startswith("state/"):
                m.name = m.name[len("state/"):]
                tar.extract(m, state, filter="data")
            elif m.name.startswith(("config/", "packs/")):
                tar.extract(m, state / "restored-config", filter="data")
    if (state / "secrets.json").is_file():
        os.chmod(state / "secrets.json", 0o600)
    return restored
