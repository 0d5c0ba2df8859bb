"""The banners of the office: what is wrong, named, so no page is quietly stale: the database unreachable, ``run`` not running or degraded (each component and its
problem), devices unreachable, no readings arriving.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

#: A status file older than this [s] means the process is stuck or gone (as ``sewerwatch
#: status`` judges it).
STALE_AFTER_S = 10.0


def read_status_file(path: Path) -> dict | None:
    """``run``'s status file, judged: ``running`` only while its process lives and the file
    is fresh; None when there is none (``run`` never ran with this state folder)."""
    try:
        st = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"running": False, "state": "unknown", "problems": {"status": f"unreadable: {exc}"}}
    age = time.time() - float(st.get("updated", 0))
    alive = bool(st.get("running")) and _alive(st.get("pid"))
    st["running"] = alive and age < STALE_AFTER_S
    if alive and age >= STALE_AFTER_S:
        st["state"] = "unresponsive"
        st["problems"] = {"status": f"the process (pid {st.get('pid')}) has not updated its status for {age:.0f} s"}
    return st


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError, TypeError):
        return False


def banners(*, db_error: str | None, run: dict | None, today: dict | None) -> list[dict]:
    """``[{tone, title, text}]``, the worst first (``bad``, ``warn``, ``info``)."""
    out = []
    if db_error:
        out.append({"tone": "bad", "title": "The database cannot be reached",
                    "text": f"{db_error}. What this page shows cannot be brought up to date until it returns; "
                            "sewerwatch run keeps alerting from memory and spools the readings."})
    if run is None:
        out.append({"tone": "info", "title": "The live pipeline's status is not visible here",
                    "text": "sewerwatch run does not share this machine's state folder; each value shows its age."})
    elif not run.get("running", True) and run.get("state") != "standby":
        out.append({"tone": "bad", "title": "sewerwatch run is not running",
                    "text": "Nothing is collected or judged live and no alert goes out. Start it with "
                            "'sewerwatch run' (or its service)."})
    else:
        for comp, problem in (run.get("problems") or {}).items():
            out.append({"tone": "bad", "title": f"sewerwatch run is degraded: {comp}", "text": str(problem)})
    if today is not None:
        for d in today.get("devices", []):
            if d["state"] == "down":
                out.append({"tone": "warn", "title": f"Device {d['device']} is unreachable",
                            "text": (d["last_error"] or "no answer") + (f" (site {d['site']})" if d["site"] else "")})
        sensors = [s for site in today["sites"] for s in site.sensors]
        if sensors and all(s.stale for s in sensors):
            out.append({"tone": "warn", "title": "No sensor is reporting",
                        "text": "Every sensor's last reading is old (see the ages below): check the collectors "
                                "and the broker."})
    order = {"bad": 0, "warn": 1, "info": 2}
    out.sort(key=lambda b: order[b["tone"]])
    return out
