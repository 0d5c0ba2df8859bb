"""Push the folder, the data source and the dashboards to a Grafana server (grafana-client).

Idempotent by comparison: each object is read first and written only when it differs
from what sewerwatch generates, so a second push sends no write at all. A dashboard is
updated with the version Grafana reported (``overwrite: false``), so an edit made in
Grafana between the read and the write is refused by Grafana (412) rather than lost
silently; run the push again to replace it.

Endpoints (Grafana HTTP API): ``GET/POST /api/folders``, ``GET /api/datasources/uid/:uid``,
``POST /api/datasources``, ``PUT /api/datasources/uid/:uid``, ``GET
/api/dashboards/uid/:uid``, ``POST /api/dashboards/db``; the token goes in
``Authorization: Bearer``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from grafana_client import GrafanaApi
from grafana_client.client import GrafanaClientError, GrafanaException, GrafanaServerError
from niquests.exceptions import RequestException

from dashboards import model as m
from dashboards.export import FOLDER_TITLE, FOLDER_UID, DbTarget, datasource
from foundation.errors import InputError, ServiceError, SewerwatchError

PUSH_MESSAGE = "sewerwatch dashboards push"


class GrafanaConflict(SewerwatchError):
    """Grafana refused a save with 412 Precondition Failed."""


@dataclass(frozen=True)
class Change:
    """What the push did to one object: ``created``, ``updated`` or ``unchanged``."""

    kind: str
    name: str
    action: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}: {self.action}"


def _strip(dash: dict) -> dict:
    return {k: v for k, v in dash.items() if k not in ("id", "version")}


def _explain(exc, url: str, what: str) -> SewerwatchError:
    """Turn a grafana-client error into one clear line."""

    status = getattr(exc, "status_code", 0)
    body = getattr(exc, "response", None)
    detail = body.get("message") if isinstance(body, dict) else None
    if status == 401:
        return InputError(f"Grafana at {url} answered 401 Unauthorized while {what}: the token was "
                          "refused; give --token a valid service account token (Administration > "
                          "Service accounts) with the Editor or Admin role")
    if status == 403:
        return InputError(f"Grafana at {url} answered 403 Forbidden while {what}: the token's "
                          f"service account lacks the permission ({detail or 'no detail'}); "
                          "give it the Editor or Admin role")
    if status == 412:
        reason = body.get("status") if isinstance(body, dict) else None
        return GrafanaConflict(f"Grafana at {url} answered 412 Precondition Failed while {what}: "
                               f"{detail or 'the save was refused'}"
                               f"{f' ({reason})' if reason else ''}; someone changed it in Grafana "
                               "since sewerwatch read it; run the push again to replace it")
    if isinstance(exc, GrafanaServerError):
        return ServiceError(f"Grafana at {url} failed while {what}: {status} {detail or ''}".strip())
    if isinstance(exc, GrafanaClientError):
        return InputError(f"Grafana at {url} refused {what}: {status} {detail or ''}".strip())
    if isinstance(exc, GrafanaException):
        return ServiceError(f"cannot reach Grafana at {url} while {what}: {exc.message}")
    return ServiceError(f"Grafana at {url}: {what}: {exc}")


def check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"--url: expected Grafana's base URL such as http://127.0.0.1:3000, got {url!r}")


def push(url: str, token: str, dashboards: list[dict], db: DbTarget | None = None,
         timeout: float = 10.0) -> list[Change]:
    """Create or update the folder, the data source and the dashboards on a Grafana server.

    Parameters
    ----------
    url : str
        Grafana's base URL, e.g. ``http://127.0.0.1:3000``.
    token : str
        A service account token (sent as ``Authorization: Bearer``).
    dashboards : list of dict
        Dashboard JSON (see :func:`dashboards.definitions.build_all`).
    db : DbTarget, optional
        The database for the data source (read-only grafana role); without it the data
        source is left alone.
    timeout : float
        Per-request timeout [s].

    Returns
    -------
    list of Change

    Raises
    ------
    InputError
        401 (token refused), 403, other 4xx, a bad URL.
    GrafanaConflict
        412 on a dashboard save.
    ServiceError
        Grafana unreachable or failing (5xx).
    """

    check_url(url)
    if not token:
        raise InputError("--token: empty; give a Grafana service account token")
    api = GrafanaApi.from_url(url, credential=token, timeout=timeout)
    changes: list[Change] = []

    def call(what, fn, *args, missing_ok=False):
        try:
            return fn(*args)
        except GrafanaClientError as exc:
            if missing_ok and exc.status_code == 404:
                return None
            raise _explain(exc, url, what) from None
        except GrafanaException as exc:
            raise _explain(exc, url, what) from None
        except RequestException as exc:   # grafana-client lets connection errors through
            reason = str(getattr(exc, "args", [exc])[0]).split("Caused by ")[-1][:200]
            raise ServiceError(f"cannot reach Grafana at {url} while {what}: {reason}") from None

    # folder
    folder = call("reading the folder", api.folder.get_folder, FOLDER_UID, missing_ok=True)
    if folder is None:
        call("creating the folder", api.folder.create_folder, FOLDER_TITLE, FOLDER_UID)
        changes.append(Change("folder", FOLDER_TITLE, "created"))
    elif folder.get("title") != FOLDER_TITLE:
        call("renaming the folder", lambda: api.folder.update_folder(
            FOLDER_UID, title=FOLDER_TITLE, version=folder.get("version"), overwrite=False))
        changes.append(Change("folder", FOLDER_TITLE, "updated"))
    else:
        changes.append(Change("folder", FOLDER_TITLE, "unchanged"))

    # data source
    if db is not None:
        want = datasource(db)
        have = call("reading the data source", api.datasource.get_datasource_by_uid,
                    m.DATASOURCE_UID, missing_ok=True)
        if have is None:
            body = datasource(db, db.password)
            call("creating the data source", api.datasource.create_datasource, body)
            changes.append(Change("datasource", m.DATASOURCE_NAME, "created"))
        else:
            same = all(have.get(k) == want[k] for k in ("name", "type", "access", "url", "user"))
            same = same and all((have.get("jsonData") or {}).get(k) == v for k, v in want["jsonData"].items())
            has_password = bool((have.get("secureJsonFields") or {}).get("password"))
            if same and (has_password or not db.password):
                changes.append(Change("datasource", m.DATASOURCE_NAME, "unchanged"))
            else:
                body = datasource(db, db.password if db.password else None)
                call("updating the data source", api.datasource.update_datasource_by_uid,
                     m.DATASOURCE_UID, body)
                changes.append(Change("datasource", m.DATASOURCE_NAME, "updated"))

    # dashboards
    for dash in dashboards:
        uid, title = dash["uid"], dash["title"]
        ours = _strip(dash)
        have = call(f"reading dashboard {uid}", api.dashboard.get_dashboard, uid, missing_ok=True)
        if have is None:
            body = {"dashboard": ours, "folderUid": FOLDER_UID, "overwrite": False, "message": PUSH_MESSAGE}
            call(f"creating dashboard {uid}", api.dashboard.update_dashboard, body)
            changes.append(Change("dashboard", title, "created"))
            continue
        stored, meta = have.get("dashboard", {}), have.get("meta", {})
        if _strip(stored) == ours and meta.get("folderUid") == FOLDER_UID:
            changes.append(Change("dashboard", title, "unchanged"))
            continue
        body = {"dashboard": {**ours, "id": stored.get("id"), "version": stored.get("version")},
                "folderUid": FOLDER_UID, "overwrite": False, "message": PUSH_MESSAGE}
        call(f"updating dashboard {uid}", api.dashboard.update_dashboard, body)
        changes.append(Change("dashboard", title, "updated"))
    return changes
