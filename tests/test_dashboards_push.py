"""``sewerwatch dashboards push`` against a stub of Grafana's HTTP API.

Grafana cannot be installed here (no Grafana server package on the registries this
project may use), so this is the one fake the test suite has: a real HTTP server on
127.0.0.1, in a thread, that records every request and answers the handful of endpoints
the push uses the way Grafana's HTTP API does (folders, data sources by uid, dashboards
by uid, ``POST /api/dashboards/db`` with version checks and 412 on a version mismatch,
401 for a wrong token). The push itself runs for real through grafana-client.
"""

from __future__ import annotations

import copy
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dashboards.definitions import build_all
from dashboards.export import DbTarget
from dashboards.push import GrafanaConflict, push
from sewerwatch.cli import main
from foundation.errors import InputError, ServiceError

TOKEN = "glsa_test_token"
DB = DbTarget("127.0.0.1", 55432, "sewerwatch_grafana", "s3cret", "sewerwatch")


class GrafanaStub:
    """Records requests; keeps folders, data sources and dashboards in memory."""

    def __init__(self):
        self.requests: list[dict] = []
        self.folders: dict = {}
        self.datasources: dict = {}
        self.dashboards: dict = {}     # uid -> (dashboard, folderUid)
        self.race: set = set()         # uids whose stored version moves on right after a GET
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def writes(self) -> list[dict]:
        return [r for r in self.requests if r["method"] != "GET"]

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _serve(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with stub.lock:
                    stub.requests.append({"method": method, "path": self.path,
                                          "auth": self.headers.get("Authorization"), "body": body})
                    if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                        return self._reply(401, {"message": "invalid API key",
                                                 "messageId": "api-keys.invalid-key", "statusCode": 401})
                    return self._route(method, self.path, body)

            def _route(self, method, path, body):
                parts = path.split("?")[0].strip("/").split("/")
                if parts[:2] == ["api", "folders"]:
                    if method == "GET" and len(parts) == 3:
                        f = stub.folders.get(parts[2])
                        return self._reply(200, f) if f else self._reply(404, {"message": "folder not found"})
                    if method == "POST" and len(parts) == 2:
                        f = {"id": len(stub.folders) + 1, "uid": body["uid"], "title": body["title"], "version": 1}
                        stub.folders[body["uid"]] = f
                        return self._reply(200, f)
                    if method == "PUT" and len(parts) == 3:
                        f = stub.folders[parts[2]]
                        f.update(title=body["title"], version=f["version"] + 1)
                        return self._reply(200, f)
                if parts[:3] == ["api", "datasources", "uid"] and len(parts) == 4:
                    ds = stub.datasources.get(parts[3])
                    if method == "GET":
                        return self._reply(200, ds) if ds else self._reply(404, {"message": "Data source not found"})
                    if method == "PUT" and ds:
                        stub.datasources[parts[3]] = self._store_ds(body, ds["id"])
                        return self._reply(200, {"message": "Datasource updated", "id": ds["id"]})
                if parts == ["api", "datasources"] and method == "POST":
                    if any(d["name"] == body["name"] for d in stub.datasources.values()):
                        return self._reply(409, {"message": "data source with the same name already exists"})
                    ds = self._store_ds(body, len(stub.datasources) + 1)
                    stub.datasources[body["uid"]] = ds
                    return self._reply(200, {"datasource": ds, "id": ds["id"], "message": "Datasource added"})
                if parts[:3] == ["api", "dashboards", "uid"] and method == "GET":
                    have = stub.dashboards.get(parts[3])
                    if not have:
                        return self._reply(404, {"message": "Dashboard not found"})
                    dash, folder = have
                    self._reply(200, {"dashboard": dash, "meta": {"folderUid": folder, "version": dash["version"]}})
                    if parts[3] in stub.race:      # someone saves it in the Grafana UI meanwhile
                        dash["version"] += 1
                    return None
                if parts == ["api", "dashboards", "db"] and method == "POST":
                    dash = copy.deepcopy(body["dashboard"])
                    have = stub.dashboards.get(dash["uid"])
                    if have and not body.get("overwrite") and dash.get("version") != have[0]["version"]:
                        return self._reply(412, {"message": "The dashboard has been changed by someone else",
                                                 "status": "version-mismatch"})
                    dash["id"] = have[0]["id"] if have else len(stub.dashboards) + 1
                    dash["version"] = have[0]["version"] + 1 if have else 1
                    stub.dashboards[dash["uid"]] = (dash, body.get("folderUid"))
                    return self._reply(200, {"id": dash["id"], "uid": dash["uid"], "status": "success",
                                             "version": dash["version"], "url": f"/d/{dash['uid']}"})
                return self._reply(404, {"message": "Not found"})

            @staticmethod
            def _store_ds(body, ident):
                ds = {k: v for k, v in body.items() if k != "secureJsonData"}
                ds["id"] = ident
                ds["secureJsonFields"] = {k: True for k in (body.get("secureJsonData") or {})}
                return ds

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_PUT(self):
                self._serve("PUT")

        return Handler


@pytest.fixture
def grafana():
    stub = GrafanaStub()
    stub.thread.start()
    yield stub
    stub.server.shutdown()
    stub.server.server_close()


@pytest.fixture(scope="module")
def dashboards():
    return [d.to_json() for d in build_all()]


def test_first_push_creates_folder_datasource_and_dashboards(grafana, dashboards):
    changes = push(grafana.url, TOKEN, dashboards, DB)
    assert [(c.kind, c.action) for c in changes] == [("folder", "created"), ("datasource", "created")] + \
        [("dashboard", "created")] * len(dashboards)
    assert {r["auth"] for r in grafana.requests} == {f"Bearer {TOKEN}"}
    writes = grafana.writes()
    assert [(w["method"], w["path"]) for w in writes] == [
        ("POST", "/api/folders"), ("POST", "/api/datasources")] + [("POST", "/api/dashboards/db")] * len(dashboards)
    assert writes[0]["body"] == {"uid": "sewerwatch", "title": "sewerwatch"}
    ds = writes[1]["body"]
    assert ds["type"] == "grafana-postgresql-datasource" and ds["uid"] == "sewerwatch-timescaledb"
    assert ds["url"] == "127.0.0.1:55432" and ds["user"] == "sewerwatch_grafana"
    assert ds["jsonData"]["timescaledb"] is True and ds["jsonData"]["database"] == "sewerwatch"
    assert ds["secureJsonData"] == {"password": "s3cret"}
    for w, dash in zip(writes[2:], dashboards):
        assert w["body"]["folderUid"] == "sewerwatch" and w["body"]["overwrite"] is False
        assert w["body"]["dashboard"]["uid"] == dash["uid"]
        assert "id" not in w["body"]["dashboard"] and "version" not in w["body"]["dashboard"]
        assert w["body"]["dashboard"]["panels"] == dash["panels"]
    # each object was looked up before it was written
    gets = [r["path"] for r in grafana.requests if r["method"] == "GET"]
    assert gets[:2] == ["/api/folders/sewerwatch", "/api/datasources/uid/sewerwatch-timescaledb"]
    assert gets[2:] == [f"/api/dashboards/uid/{d['uid']}" for d in dashboards]


def test_second_push_changes_nothing(grafana, dashboards):
    push(grafana.url, TOKEN, dashboards, DB)
    before = len(grafana.requests)
    stored = copy.deepcopy(grafana.dashboards)
    changes = push(grafana.url, TOKEN, dashboards, DB)
    assert {c.action for c in changes} == {"unchanged"}
    second = grafana.requests[before:]
    assert second and all(r["method"] == "GET" for r in second)
    assert grafana.dashboards == stored


def test_an_edit_in_grafana_is_replaced_with_the_stored_version(grafana, dashboards):
    push(grafana.url, TOKEN, dashboards, DB)
    uid = dashboards[1]["uid"]
    dash, folder = grafana.dashboards[uid]
    dash["title"] = "edited by hand"
    dash["version"] += 1
    before = len(grafana.requests)
    changes = push(grafana.url, TOKEN, dashboards, DB)
    assert [c.action for c in changes if c.kind == "dashboard"] == ["unchanged", "updated", "unchanged", "unchanged"]
    [write] = [r for r in grafana.requests[before:] if r["method"] != "GET"]
    assert write["path"] == "/api/dashboards/db"
    assert write["body"]["dashboard"]["version"] == 2 and write["body"]["overwrite"] is False
    assert grafana.dashboards[uid][0]["title"] == dashboards[1]["title"]
    assert {c.action for c in push(grafana.url, TOKEN, dashboards, DB)} == {"unchanged"}


def test_a_changed_database_updates_the_datasource(grafana, dashboards):
    push(grafana.url, TOKEN, dashboards, DB)
    moved = DbTarget("10.0.0.5", 5432, "sewerwatch_grafana", "s3cret", "sewerwatch")
    changes = push(grafana.url, TOKEN, dashboards, moved)
    assert [c.action for c in changes if c.kind == "datasource"] == ["updated"]
    [write] = [r for r in grafana.writes() if r["method"] == "PUT"]
    assert write["path"] == "/api/datasources/uid/sewerwatch-timescaledb"
    assert write["body"]["url"] == "10.0.0.5:5432"
    assert grafana.datasources["sewerwatch-timescaledb"]["url"] == "10.0.0.5:5432"


def test_401_says_the_token_was_refused(grafana, dashboards):
    with pytest.raises(InputError) as exc:
        push(grafana.url, "wrong", dashboards, DB)
    msg = str(exc.value)
    assert "401 Unauthorized" in msg and "token" in msg and grafana.url in msg
    assert grafana.writes() == []


def test_412_says_someone_changed_the_dashboard(grafana, dashboards):
    push(grafana.url, TOKEN, dashboards, DB)
    uid = dashboards[0]["uid"]
    grafana.dashboards[uid][0]["title"] = "edited"
    grafana.race.add(uid)
    with pytest.raises(GrafanaConflict) as exc:
        push(grafana.url, TOKEN, dashboards, DB)
    msg = str(exc.value)
    assert "412 Precondition Failed" in msg and "version-mismatch" in msg and uid in msg
    assert "run the push again" in msg
    grafana.race.clear()
    changes = push(grafana.url, TOKEN, dashboards, DB)       # the advice works
    assert [c.action for c in changes if c.kind == "dashboard"][0] == "updated"


def test_cli_push_prints_changes_and_one_line_errors(grafana, capsys, monkeypatch):
    url = "postgresql://sewerwatch_grafana:pw@127.0.0.1:55432/sewerwatch"
    assert main(["dashboards", "push", "--url", grafana.url, "--token", TOKEN, "--db-url", url, "--timescaledb"]) == 0
    out = capsys.readouterr().out
    assert "dashboard sewerwatch: Site: created" in out and "datasource sewerwatch TimescaleDB: created" in out
    assert main(["dashboards", "push", "--url", grafana.url, "--token", TOKEN, "--db-url", url, "--timescaledb"]) == 0
    assert "created" not in capsys.readouterr().out
    assert main(["dashboards", "push", "--url", grafana.url, "--token", "nope", "--db-url", url, "--timescaledb"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sewerwatch: error: ") and "401 Unauthorized" in err[0]
    assert main(["dashboards", "push", "--url", "ftp://x", "--token", TOKEN, "--db-url", url, "--timescaledb"]) == 2
    assert "--url" in capsys.readouterr().err


def test_unreachable_grafana_is_a_service_error(dashboards):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServiceError, match="cannot reach Grafana"):
        push(f"http://127.0.0.1:{port}", TOKEN, dashboards, DB, timeout=2)


def test_a_renamed_folder_is_renamed_back_and_no_datasource_leaves_it_alone(grafana, dashboards):
    grafana.folders["sewerwatch"] = {"id": 1, "uid": "sewerwatch", "title": "old name", "version": 4}
    changes = push(grafana.url, TOKEN, dashboards, None)
    assert [(c.kind, c.action) for c in changes][:1] == [("folder", "updated")]
    assert all(c.kind != "datasource" for c in changes)
    [put] = [r for r in grafana.writes() if r["method"] == "PUT"]
    assert put["path"] == "/api/folders/sewerwatch"
    assert put["body"]["title"] == "sewerwatch" and put["body"]["version"] == 4
    assert not any("/datasources" in r["path"] for r in grafana.requests)


def test_the_token_from_the_environment_or_a_file(grafana, capsys, monkeypatch, tmp_path):
    url = "postgresql://sewerwatch_grafana:pw@127.0.0.1:55432/sewerwatch"
    base = ["dashboards", "push", "--url", grafana.url, "--db-url", url, "--timescaledb"]
    monkeypatch.delenv("SEWERWATCH_GRAFANA_TOKEN", raising=False)
    assert main(base) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "$SEWERWATCH_GRAFANA_TOKEN" in err[0] and "--token-file" in err[0]
    monkeypatch.setenv("SEWERWATCH_GRAFANA_TOKEN", TOKEN)
    assert main(base) == 0 and "created" in capsys.readouterr().out
    monkeypatch.setenv("SEWERWATCH_GRAFANA_TOKEN", "wrong")
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    assert main(base + ["--token-file", str(secret)]) == 0     # the file wins over the environment
    assert main(base + ["--token-file", str(tmp_path / "none")]) == 2
    assert "--token-file: cannot read" in capsys.readouterr().err
    auth = {r["auth"] for r in grafana.requests}
    assert auth == {f"Bearer {TOKEN}"}
