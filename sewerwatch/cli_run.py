"""CLI: ``sewerwatch run`` and ``sewerwatch status``."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from foundation.errors import InputError, SchemaMissing, SewerwatchError
from foundation.paths import RUN_STATUS_FILE as STATUS_FILE
from sewerwatch import services


def register(sub) -> None:
    p = sub.add_parser("run", help="run the live pipeline: collectors, writer, evaluator, alerts")
    p.add_argument("--client-id", default="sewerwatch-run", help="MQTT client id (fixed: the broker keeps its session)")
    p.add_argument("--no-mqtt", action="store_true", help="do not subscribe to the broker")
    p.add_argument("--spool-dir", help="the writer's spool folder (default: <state dir>/spool)")
    p.add_argument("--quiet", action="store_true", help="no console alert channel output")
    p.add_argument("--hold-off", type=float, metavar="S", help="override [alerts] hold_off_s (drills, demos)")
    p.add_argument("--escalate-after", type=float, metavar="MIN",
                   help="override [alerts] escalate_after_min (drills, demos)")
    p.set_defaults(func=_run)
    p = sub.add_parser("status", help="services, collectors, device health and open alerts")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_status)


def _run(args, ctx) -> int:
    logging.basicConfig(level=logging.INFO, format="sewerwatch: %(name)s: %(message)s", stream=sys.stderr)
    # lazy: the pipeline pulls in the collectors, the evaluator and the channels, which
    # `sewerwatch --help` and `sewerwatch status` do not need
    from sewerwatch.pipeline import Pipeline, run_until_signalled

    cfg = ctx.config
    if args.quiet:
        cfg = replace(cfg, alert_options=replace(cfg.alert_options, console=False))
    for opt, name, value in (("--hold-off", "hold_off_s", args.hold_off),
                             ("--escalate-after", "escalate_after_min", args.escalate_after)):
        if value is not None:
            if not value > 0:
                raise InputError(f"run: {opt} must be positive, got {value}")
            cfg = replace(cfg, **{name: value})
    ep = ctx.endpoints(start=True)
    state = cfg.services.state_dir
    state.mkdir(parents=True, exist_ok=True)
    spool = Path(args.spool_dir) if args.spool_dir else state / "spool"
    p = Pipeline(cfg, owner_url=ep.db("owner"), ingest_url=ep.db("ingest"),
                 mqtt_url=None if args.no_mqtt else ep.mqtt("collector"), notifier_url=ep.mqtt("notifier"),
                 spool_dir=spool, status_path=state / STATUS_FILE, client_id=args.client_id)
    print("run: collectors, writer, evaluator and alerts running; SIGTERM or Ctrl-C stops after "
          "writing everything", file=sys.stderr, flush=True)
    run_until_signalled(p)
    st = p.status()
    print(f"run: stopped; {st['readings']['accepted']} readings accepted, {st['readings']['inserted']} inserted, "
          f"{st['readings']['spooled']} spooled; alerts opened {st['alerts']['opened']}, "
          f"notifications sent {st['alerts']['sent']}, failed attempts {st['alerts']['failed']}",
          file=sys.stderr, flush=True)
    return 0


def gather_status(ctx) -> dict:
    """Services, the running pipeline (its status file), device health and open alerts."""
    cfg = ctx.config
    out: dict = {"services": services.status(cfg)}
    out["services"].pop("db_urls", None)
    out["services"].pop("mqtt_urls", None)
    path = cfg.services.state_dir / STATUS_FILE
    run = None
    if path.is_file():
        try:
            run = json.loads(path.read_text())
        except ValueError:
            run = None
    if run is not None:
        alive = run.get("running") and _pid_alive(run.get("pid")) and time.time() - run.get("updated", 0) < 30
        run["running"] = bool(alive)
    out["run"] = run or {"running": False}
    try:
        with ctx.connect("owner") as conn:
            out["devices"] = [dict(zip(("device", "site", "state", "last_good_at", "last_error", "polls",
                                        "transport_errors"), r)) for r in conn.execute(
                "SELECT device, site_key, state, last_good_at, last_error, polls, transport_errors "
                "FROM device_health ORDER BY device").fetchall()]
            out["open_alerts"] = [dict(zip(("id", "kind", "state", "opened_at", "summary"), r)) for r in conn.execute(
                "SELECT id, kind, state, opened_at, summary FROM alerts WHERE state <> 'resolved' "
                "ORDER BY opened_at").fetchall()]
    except SchemaMissing:
        raise   # not a health state: one line, exit 2, naming 'sewerwatch db migrate'
    except SewerwatchError as exc:
        out["database_error"] = str(exc)
    return out


def _pid_alive(pid) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError):
        return False


def _status(args, ctx) -> int:
    st = gather_status(ctx)
    if args.json:
        print(json.dumps(st, default=str))
        return 0
    s = st["services"]
    print(f"services: timescaledb {_svc(s['timescaledb'])}, mosquitto {_svc(s['mosquitto'])}")
    r = st["run"]
    if r.get("running"):
        c, rd, al = r["collectors"], r["readings"], r["alerts"]
        print(f"run: running (pid {r['pid']}); collectors: mqtt {'connected' if c.get('mqtt_connected') else 'off' if not c.get('mqtt') else 'DISCONNECTED'}, "
              f"modbus {'on' if c.get('modbus') else 'off'}; readings accepted {rd['accepted']}, evaluated "
              f"{rd['evaluated']}, inserted {rd['inserted']}, spooled {rd['spooled']}; database {r['database']}; "
              f"alerts sent {al.get('sent', 0)}, failed attempts {al.get('failed', 0)}, undelivered {al.get('lost', 0)}")
    else:
        print("run: not running (start it with 'sewerwatch run')")
    if "database_error" in st:
        print(f"database: {st['database_error']}")
        return 0
    print(f"devices: {len(st['devices'])}" + ("" if st["devices"] else " (no Modbus health recorded)"))
    for d in st["devices"]:
        print(f"  {d['device']:<20} {d['state']:<5} last good {d['last_good_at']}  polls {d['polls']}, "
              f"transport errors {d['transport_errors']}" + (f"  ({d['last_error']})" if d["state"] == "down" else ""))
    print(f"open alerts: {len(st['open_alerts'])}")
    for a in st["open_alerts"]:
        print(f"  #{a['id']:<5} {a['state']:<12} {a['kind']:<13} {a['summary']}")
    return 0


def _svc(s: dict) -> str:
    if not s.get("embedded"):
        return "configured"
    return "running" if s.get("running") else "stopped"
