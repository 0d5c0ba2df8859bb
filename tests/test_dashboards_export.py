"""``sewerwatch dashboards export DIR``: dashboard JSON and Grafana provisioning files."""

from __future__ import annotations

import json
import stat

import pytest
import yaml

from dashboards.definitions import build_all
from dashboards.export import PASSWORD_ENV, DbTarget
from sewerwatch.cli import main
from foundation.errors import InputError

URL = "postgresql://sewerwatch_grafana:p%40ss@db.example:5433/village?sslmode=require"


def test_db_target_from_url():
    t = DbTarget.from_url(URL)
    assert (t.host, t.port, t.user, t.password, t.database, t.sslmode) == \
        ("db.example", 5433, "sewerwatch_grafana", "p@ss", "village", "require")
    assert DbTarget.from_url("postgres://u@h/d").port == 5432
    for bad, words in (("mysql://u:p@h/d", "postgresql://"), ("postgresql://h/d", "user"),
                       ("postgresql://u:p@h", "database")):
        with pytest.raises(InputError, match=words):
            DbTarget.from_url(bad)


def test_export_writes_dashboards_and_provisioning(tmp_path):
    out = tmp_path / "grafana"
    assert main(["dashboards", "export", str(out), "--db-url", URL, "--timescaledb"]) == 0
    generated = {d.uid: d.to_json() for d in build_all()}
    files = sorted(p.name for p in (out / "dashboards").iterdir())
    assert files == sorted(f"{uid}.json" for uid in generated)
    for uid, dash in generated.items():
        assert json.loads((out / "dashboards" / f"{uid}.json").read_text()) == dash

    ds_doc = yaml.safe_load((out / "provisioning" / "datasources" / "sewerwatch.yaml").read_text())
    assert ds_doc["apiVersion"] == 1
    [ds] = ds_doc["datasources"]
    assert ds["type"] == "grafana-postgresql-datasource" and ds["uid"] == "sewerwatch-timescaledb"
    assert ds["url"] == "db.example:5433" and ds["user"] == "sewerwatch_grafana"
    assert ds["jsonData"]["timescaledb"] is True
    assert ds["jsonData"]["database"] == "village" and ds["jsonData"]["sslmode"] == "require"
    # the password stays out of the YAML: Grafana expands the variable from its environment
    assert ds["secureJsonData"] == {"password": "${" + PASSWORD_ENV + "}"}
    assert "p@ss" not in (out / "provisioning" / "datasources" / "sewerwatch.yaml").read_text()
    env = out / "grafana.env"
    assert env.read_text() == f"{PASSWORD_ENV}=p@ss\n"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    # every panel refers to the provisioned data source
    for dash in generated.values():
        for p in dash["panels"]:
            assert p["datasource"]["uid"] == ds["uid"] and p["datasource"]["type"] == ds["type"]

    prov = yaml.safe_load((out / "provisioning" / "dashboards" / "sewerwatch.yaml").read_text())
    [provider] = prov["providers"]
    assert provider["type"] == "file" and provider["folderUid"] == "sewerwatch"
    assert provider["options"]["path"] == str((out / "dashboards").resolve())


def test_export_dashboards_path_and_errors(tmp_path, capsys):
    assert main(["dashboards", "export", str(tmp_path / "a"), "--db-url", URL, "--timescaledb",
                 "--dashboards-path", "/var/lib/grafana/dashboards/sewerwatch"]) == 0
    prov = yaml.safe_load((tmp_path / "a" / "provisioning" / "dashboards" / "sewerwatch.yaml").read_text())
    assert prov["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards/sewerwatch"
    capsys.readouterr()
    assert main(["dashboards", "export", str(tmp_path / "b"), "--db-url", "http://nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sewerwatch: error: --db-url")
    (tmp_path / "file").write_text("x")
    assert main(["dashboards", "export", str(tmp_path / "file"), "--db-url", URL, "--timescaledb"]) == 2
    assert "not a folder" in capsys.readouterr().err
