"""CLI: ``sewerwatch run`` and ``sewerwatch status``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from foundation.display import local_time, localise
from foundation.statusfile import read_status
from foundation.errors import InputError, SchemaMissing, SewerwatchError
from ingest.cli import add_sharing_arguments
from foundation.paths import COLLECT_STATUS_FILE
from foundation.paths import RUN_STATUS_FILE as STATUS_FILE
from sewerwatch import services


def register(sub) -> None:
    p = sub.add_parser("run", help="run the live pipeline: collectors, writer, evaluator, alerts")
    p.add_argument("--client-id", default="sewerwatch-run", help="MQTT client id (fixed: the broker keeps its session)")
    p.add_argument("--no-mqtt", action="store_true", help="do not subscribe to the broker")
    p.add_argument("--spool-dir", help="the writer's spool folder (default: <state dir>/spool)")
    p.add_argument("--quiet", action="store_true", help="no console alert channel output")
    p.add_argument("--hold-off", type=float, metavar="S", help="override the configured wait before an alert is sent [s] (drills, demos)")
    p.add_argument("--escalate-after", type=float, metavar="MIN",
                   help="override the configured minutes before an unacknowledged alert is escalated (drills, demos)")
    p.add_argument("--standby", action="store_true",
                   help="take part in leader election: lead when no other run leads this database, else stand by "
                   "(collect, judge and alert nothing) and take over within seconds when the leader dies")
    add_sharing_arguments(p, group=False)
    p.set_defaults(func=_run)
    p = sub.add_parser("status", help="services, collectors, device health and open alerts; exit 0 ok, 1 degraded, "
                       "2 not running or not responding (the monitoring-plugin convention)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--show-secrets", action="store_true",
                   help="include the services' URLs with their passwords (for integrators; never needed otherwise)")
    p.set_defaults(func=_status)


def _run(args, ctx) -> int:
    logging.basicConfig(level=logging.INFO, format="sewerwatch: %(name)s: %(message)s", stream=sys.stderr)
    # lazy: the pipeline pulls in the collectors, the evaluator and the channels, which
    # `sewerwatch --help` and `sewerwatch status` do not need
    import psycopg

    from ingest.service import modbus_devices, write_status
    from sewerwatch.leader import WARM_UP_S, LeaderLease, Leadership, StepDown, acquire_or_wait, lead_or_stand_by
    from sewerwatch.liveness import STATUS_FRESH_S, Liveness
    from sewerwatch.pipeline import Pipeline

    cfg = ctx.config
    modbus_devices(cfg, None if args.no_modbus else args.shard)     # a bad --shard: one line, exit 2
    if args.quiet:
        cfg = replace(cfg, alerts=replace(cfg.alerts, console=False))
    for opt, name, value in (("--hold-off", "hold_off_s", args.hold_off),
                             ("--escalate-after", "escalate_after_min", args.escalate_after)):
        if value is not None:
            if not value > 0:
                raise InputError(f"run: {opt} must be positive, got {value}")
            cfg = replace(cfg, alerts=replace(cfg.alerts, **{name: value}))
    ep = ctx.endpoints(start=True)
    state = cfg.services.state_dir
    state.mkdir(parents=True, exist_ok=True)
    spool = Path(args.spool_dir) if args.spool_dir else state / "spool"
    lease = LeaderLease(ep.db("owner"), lease_s=cfg.run.lease_s)
    leadership: Leadership | None = Leadership(lease, standby=args.standby)
    current: dict = {"pipeline": None}

    def status_fresh() -> bool:
        p = current["pipeline"]
        comp = p.supervisor.components.get("status") if p is not None else None
        return comp is None or time.monotonic() - comp.last_beat < STATUS_FRESH_S

    def describe() -> str:
        p = current["pipeline"]
        if leadership is not None and leadership.role == "standby":
            return "standing by"
        if p is None or not p.ready.is_set():
            return "starting"
        probs = p.problems()
        return "degraded: " + "; ".join(f"{k}: {v}" for k, v in probs.items())[:200] if probs else "ok"

    live = Liveness(cfg.run.deadman_url, cfg.run.deadman_every_s,
                    leading=lambda: leadership is None or leadership.role == "leader",
                    status_fresh=status_fresh, describe=describe)

    def make() -> Pipeline:
        # a restart (or a takeover) mid-episode judges the recent readings again first, so it
        # continues the open row rather than starting another
        p = Pipeline(cfg, owner_url=ep.db("owner"), ingest_url=ep.db("ingest"),
                     mqtt_url=None if args.no_mqtt else ep.mqtt("collector"), notifier_url=ep.mqtt("notifier"),
                     spool_dir=spool, status_path=state / STATUS_FILE, client_id=args.client_id, state_dir=state,
                     warm_up_s=WARM_UP_S, leadership=leadership, shards=args.shard,
                     modbus=not args.no_modbus, liveness=live)
        current["pipeline"] = p
        return p

    if not args.standby:
        try:
            if not acquire_or_wait(lease, cfg.run.lease_s + 1.0):
                holder = lease.holder() or {}
                lease.close()
                raise SewerwatchError(f"run: another run leads this database ({holder.get('name', 'unknown')}); "
                                      "start this one with --standby to take over when it stops")
            leadership.acquired()
        except psycopg.OperationalError as exc:
            logging.getLogger("sewerwatch.leader").warning(
                "database unreachable at start (%s): running without the lease", str(exc).strip()[:200])
            leadership = None
    print("run: " + ("standing by: leads when no other run leads this database; " if args.standby else
                     "collectors, writer, evaluator and alerts running; ")
          + "SIGTERM or Ctrl-C stops after writing everything", file=sys.stderr, flush=True)
    started = time.time()

    def standby_status() -> None:
        write_status(state / STATUS_FILE, {"pid": os.getpid(), "started": started, "updated": time.time(),
                                           "running": True, "state": "standby", "problems": {},
                                           "leadership": leadership.status(), **live.status()})

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        live_stop = asyncio.Event()
        pinger = loop.create_task(live.run(live_stop), name="liveness")
        try:
            if leadership is None:
                p = make()
                await p.run(stop)
                return p
            return await lead_or_stand_by(leadership, make, stop, standby_status)
        finally:
            live_stop.set()
            await pinger
    try:
        p = asyncio.run(main())
    except StepDown as exc:
        raise SewerwatchError(f"run: {exc}") from None
    if p is None:
        write_status(state / STATUS_FILE, {"pid": os.getpid(), "started": started, "updated": time.time(),
                                           "running": False, "state": "standby", "problems": {},
                                           "leadership": leadership.status()})
        print("run: stopped (was standing by)", file=sys.stderr, flush=True)
        return 0
    st = p.status()
    print(f"run: stopped; {st['readings']['accepted']} readings accepted, {st['readings']['inserted']} inserted, "
          f"{st['readings']['spooled']} spooled; alerts opened {st['alerts']['opened']}, "
          f"notifications sent {st['alerts']['sent']}, failed attempts {st['alerts']['failed']}",
          file=sys.stderr, flush=True)
    return 0


#: A status file older than this [s] means the process is stuck (or gone).
STALE_AFTER_S = 10.0


def _read_status(path: Path) -> dict | None:
    """A status file, judged: ``running`` only when its process lives and it is fresh; a
    live process with a stale file is ``unresponsive`` (and nothing in it is healthy)."""
    st = read_status(path)
    if st is None:
        return None
    age = time.time() - st.get("updated", 0)
    alive = bool(st.get("running")) and _pid_alive(st.get("pid"))
    st["running"] = alive and age < STALE_AFTER_S
    if alive and age >= STALE_AFTER_S:
        st["state"] = "unresponsive"
        st["problems"] = {"status": f"the process (pid {st.get('pid')}) has not updated its status for {age:.0f} s"}
        for c in st.get("components", {}).values():
            c["healthy"] = False
            c["problem"] = "unknown: the process is not updating its status"
    return st


def gather_status(ctx, show_secrets: bool = False) -> dict:
    """Services, the running pipeline (its status file), ``collect`` if it runs, device
    health and open alerts. Passwords only with ``show_secrets``."""
    cfg = ctx.config
    out: dict = {"services": services.status(cfg, show_secrets=show_secrets)}
    out["services"].pop("db_urls", None)
    out["services"].pop("mqtt_urls", None)
    out["run"] = _read_status(cfg.services.state_dir / STATUS_FILE) or {"running": False}
    out["mqtt_access"] = _mqtt_access(cfg, out["run"])
    from sewerwatch import backup     # lazy, as every command's work

    out["backup"] = backup.health(cfg)
    # one status file per collector: collect-status.json, collect-status-<client id>.json
    for path in sorted(cfg.services.state_dir.glob(COLLECT_STATUS_FILE.replace(".json", "*.json"))):
        collect = _read_status(path)
        if collect is not None and (collect["running"] or collect.get("state") == "unresponsive"):
            key = "collect" if path.name == COLLECT_STATUS_FILE else f"collect {path.stem[len('collect-status-'):]}"
            out[key] = collect
    # lazy: the dead letters' module pulls in the MQTT collector, which --help does not need
    from ingest import deadletters

    try:
        with ctx.connect("owner") as conn:
            out["devices"] = [dict(zip(("device", "site", "state", "last_good_at", "last_error", "polls",
                                        "transport_errors"), r)) for r in conn.execute(
                "SELECT device, site_key, state, last_good_at, last_error, polls, transport_errors "
                "FROM device_health ORDER BY device").fetchall()]
            out["open_alerts"] = [dict(zip(("id", "kind", "state", "opened_at", "summary"), r)) for r in conn.execute(
                "SELECT id, kind, state, opened_at, summary FROM alerts WHERE state <> 'resolved' "
                "ORDER BY opened_at").fetchall()]
            out["dead_letters"] = deadletters.summary(conn)
    except SchemaMissing:
        raise   # not a health state: one line, exit 2, naming 'sewerwatch db migrate'
    except SewerwatchError as exc:
        out["database_error"] = str(exc)
    return out


def _mqtt_access(cfg, run: dict) -> dict:
    """:func:`sewerwatch.services.mqtt_access` for the subscriptions the running collector
    reports (the broker's answers), else the configured ones."""
    granted = None
    if run.get("running"):
        granted = ((run.get("components") or {}).get("mqtt-network") or {}).get("subscriptions") or None
    return services.mqtt_access(cfg, granted)


def _pid_alive(pid) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError):
        return False


#: ``sewerwatch status`` exit codes (the monitoring-plugin convention, as Nagios and Icinga read them).
OK, DEGRADED, NOT_RUNNING = 0, 1, 2


def status_code(st: dict) -> int:
    """The exit code of :func:`gather_status`'s answer: :data:`NOT_RUNNING` when ``run`` is not
    running or not responding (a collector not responding too), :data:`DEGRADED` when anything
    it or a collector reports is not healthy, the database cannot be read or the backups (when
    configured) failed or are too old, else :data:`OK`
    (a standby that sees a leader is OK)."""
    r = st.get("run") or {}
    procs = [r] + [v for k, v in st.items() if k == "collect" or k.startswith("collect ")]
    if not r.get("running") or any(p.get("state") == "unresponsive" for p in procs):
        return NOT_RUNNING
    if not (st.get("backup") or {}).get("ok", True):
        return DEGRADED          # backups configured, and the last one failed or is too old
    if "database_error" in st or any((p.get("problems") or {}) or p.get("state") not in (None, "ok", "standby")
                                     for p in procs) or (st.get("mqtt_access") or {}).get("problems"):
        return DEGRADED
    if r.get("state") == "standby" and not (r.get("leadership") or {}).get("leader"):
        return DEGRADED          # standing by, and nobody leads
    return OK


def _status(args, ctx) -> int:
    st = gather_status(ctx, show_secrets=args.show_secrets)
    code = status_code(st)
    if args.json:
        print(json.dumps({**st, "exit_code": code}, default=str))
        return code
    tz = _village_tz(ctx.config)
    s = st["services"]
    print(f"services: timescaledb {_svc(s['timescaledb'])}, mosquitto {_svc(s['mosquitto'])}")
    r = st["run"]
    if r.get("running") or r.get("state") == "unresponsive":
        _print_process("run", r, tz)
    else:
        print("run: not running (start it with 'sewerwatch run')")
    for key in sorted(k for k in st if k == "collect" or k.startswith("collect ")):
        _print_process(key, st[key], tz)
    acc = st["mqtt_access"]
    print(f"mqtt subscriptions: {len(acc['subscriptions'])} ({', '.join(acc['subscriptions'])})"
          + ("" if acc["problems"] else ", each site's topics covered" + (
              ", readable under the broker's ACL" if acc["collector_reads"] is not None else "")))
    for p in acc["problems"]:
        print(f"  ! mqtt: {p}")
    b = st.get("backup") or {}
    if b.get("configured"):
        print(f"backup: last {b['summary']}" if b.get("at") and b.get("ok") else f"backup: {b['summary']}")
        if b.get("problem"):
            print(f"  ! backup: {b['problem']}")
    if "database_error" in st:
        print(f"database: {st['database_error']}")
        return code
    print(f"devices: {len(st['devices'])}" + ("" if st["devices"] else " (no Modbus health recorded)"))
    for d in st["devices"]:
        print(f"  {d['device']:<20} {d['state']:<5} last good {d['last_good_at']}  polls {d['polls']}, "
              f"transport errors {d['transport_errors']}" + (f"  ({d['last_error']})" if d["state"] == "down" else ""))
    print(f"open alerts: {len(st['open_alerts'])}")
    for a in st["open_alerts"]:
        print(f"  #{a['id']:<5} {a['state']:<12} {a['kind']:<13} {localise(a['summary'], tz)}")
    _print_dead_letters(st["dead_letters"], tz)
    return code


def _village_tz(cfg) -> str:
    """The village's time zone (the config's, else its pack's)."""
    if cfg.timezone:
        return cfg.timezone
    from limits.packs import load_pack  # lazy: packs pull in numpy

    return load_pack(cfg.pack).timezone


def _print_dead_letters(dl: dict, tz: str) -> None:
    """The stored dead letters not replayed: counts by source in the last hour and in all,
    the latest reasons, and where to look further."""
    hours = dl["window_s"] / 3600
    print(f"dead letters not replayed: {dl['last_window']} in the last {hours:g} h, {dl['all']} in all"
          + ("" if not dl["by_source"] else " (" + ", ".join(
              f"{s} {c['last_window']}/{c['all']}" for s, c in dl["by_source"].items()) + ")"))
    for d in dl["latest"]:
        print(f"  #{d['id']:<7} {local_time(d['received_at'], tz)} {d['source']:<10} {d['topic'] or '-'}: "
              f"{d['reason'][:140]}")
    if dl["all"]:
        print("  ('sewerwatch deadletters list' shows them" + replay_hint(dl) + ")")


def replay_hint(dl: dict) -> str:
    """What can be done with the dead letters not replayed: ``replay`` is
    offered only for those it can decode again (MQTT, not Sparkplug B); the others say what
    brings their data back."""
    out = []
    if dl.get("replayable"):
        out.append(f"'deadletters replay' stores the {dl['replayable']} MQTT one"
                   f"{'s' * (dl['replayable'] != 1)} after the config is fixed")
    if dl.get("sparkplug"):
        out.append(f"{dl['sparkplug']} Sparkplug B: not replayable, the edge node's rebirth sends its values again")
    lab = (dl.get("by_source") or {}).get("lab-import", {}).get("all", 0)
    if lab:
        out.append(f"{lab} lab-import: import the corrected file")
    return "; " + "; ".join(out) if out else ""


def _age(x) -> str:
    return "never" if x is None else f"{x:.1f} s ago"


def _print_process(name: str, r: dict, tz: str) -> None:
    """One process's status: its state and problems, every component, queues, dead letters."""
    lead = r.get("leadership") or {}
    if r.get("state") == "standby" and r.get("running"):
        leader = lead.get("leader")
        print(f"{name}: STANDBY (pid {r.get('pid')}): collects, judges and alerts nothing; takes over when the "
              "leader's lease expires; leader: " + (
                  f"{leader['name']} (term {leader['term']}, since {local_time(leader['since'], tz)}, lease "
                  + ("EXPIRED" if leader.get("expired") else f"until {local_time(leader['expires'], tz)}") + ")"
                  if leader else "none seen" + (f" (database: {lead['database_error']})"
                                                if lead.get("database_error") else "")))
        return
    state = (r.get("state") or "ok").upper()
    print(f"{name}: {'running' if r.get('running') else 'NOT RESPONDING'} (pid {r.get('pid')}), "
          f"{'all components healthy' if state == 'OK' else state}")
    if lead.get("role") == "leader":
        print(f"  leader (term {lead.get('terms')}, since {local_time(lead['since'], tz)}"
              f"; lease {lead.get('lease') or lead.get('lock')}); judged {r.get('warmed_up', 0)} stored readings again "
              "at the start")
    for comp, problem in (r.get("problems") or {}).items():
        print(f"  ! {comp}: {problem}")
    for cname, c in (r.get("components") or {}).items():
        extra = []
        if "connected" in c:
            extra.append(f"{'connected' if c['connected'] else 'DISCONNECTED'}, last message "
                         f"{_age(c.get('last_message_age_s'))}, last reading {_age(c.get('last_reading_age_s'))}")
        if "buffered_readings" in c and cname == "mqtt-flusher":
            extra.append(f"buffered {c['buffered_readings']}")
        if "devices" in c:
            extra.append(f"{c['devices']} devices, {len(c.get('devices_down', []))} down, last reading "
                         f"{_age(c.get('last_reading_age_s'))}")
        if "spool" in c:
            sp = c["spool"]
            free = sp.get("free_bytes")
            extra.append(f"database {c.get('database') or ('up' if c.get('db_up') else 'DOWN')}, "
                         f"sink {c.get('sink_pending_readings', 0)}, "
                         f"held {c.get('held_readings', 0)}, spool {sp['bytes']:,} of {sp['max_bytes']:,} bytes "
                         f"(free {'?' if free is None else f'{free:,}'})"
                         + ("" if sp.get("writable") else f", UNWRITABLE: {sp.get('error')}"))
        if "queue_batches" in c:
            extra.append(f"queue {c['queue_batches']} batches, last judged {_age(c.get('last_evaluated_age_s'))}")
        if "public_url" in c:
            extra.append(f"listening on {c.get('listening') or 'nothing yet'}, links to {c['public_url']}/ack/...; "
                         f"{c.get('acknowledged', 0)} acknowledged, {c.get('refused', 0)} links refused, "
                         f"{c.get('expired', 0)} expired, {c.get('rate_limited', 0)} rate limited")
        if "office" in c:
            o = c["office"]
            extra.append(f"office: {o.get('requests', 0)} requests, {o.get('signed_in', 0)} sign-ins, "
                         f"{o.get('refused_sign_ins', 0)} refused, {o.get('forbidden', 0)} forbidden, "
                         f"{o.get('errors', 0)} errors")
        if "outbox" in c:
            extra.append(f"alert writes waiting {c['outbox'].get('pending_ops', 0)}")
        health = "healthy" if c.get("healthy") else f"PROBLEM: {c.get('problem')}"
        print(f"  {cname:<13} {'alive' if c.get('alive') else 'DEAD':<5} restarts {c.get('restarts', 0):<3} {health}"
              + (f"; {'; '.join(extra)}" if extra else ""))
    rd = r.get("readings") or {}
    if rd:
        print(f"  readings: accepted {rd.get('accepted')}, evaluated {rd.get('evaluated', '-')}, inserted "
              f"{rd.get('inserted')}, spooled {rd.get('spooled')}; last reading {_age(rd.get('last_reading_age_s'))}"
              + (f"; database {r['database']}" if r.get("database") else ""))
    q = r.get("queues") or {}
    if q:
        print("  queues: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in q.items()))
    dl = r.get("dead_letters") or {}
    if dl:
        print(f"  dead letters in the last hour: {dl.get('count', 0)}")
        for d in dl.get("latest", []):
            print(f"    {local_time(d['at'], tz)}  {d['reason'][:160]}")
    for a in r.get("arrivals") or []:
        print(f"  {a['site']}/{a['sensor']}: {arrival_words(a)}")
    for nb in r.get("slug_without_baseline") or []:
        print(f"  {nb['site']}/{nb['sensor']}: {nb['note']}")
    al = r.get("alerts")
    if al:
        print(f"  alerts: active {al.get('active', 0)}, sent {al.get('sent', 0)}, failed attempts "
              f"{al.get('failed', 0)}, undelivered {al.get('lost', 0)}")


def arrival_words(a: dict) -> str:
    """One sensor's stamps against the receive clock, in words (``status``)."""
    parts = []
    if a.get("late"):
        parts.append(f"{a['late']} late readings (up to {a.get('most_behind_s', 0):.0f} s older than its newest), "
                     "judged again from the stored readings")
    if a.get("reordered"):
        parts.append(f"{a['reordered']} reordered")
    if a.get("duplicate"):
        parts.append(f"{a['duplicate']} repeated stamps (the first stays)")
    if a.get("ahead"):
        parts.append(f"{a['ahead']} stamped ahead of the clock, held until it" +
                     (f" ({a['held_now']} now)" if a.get("held_now") else ""))
    if a.get("skew_s") is not None:
        parts.append(f"CLOCK SKEW: stamps {abs(a['skew_s']):.0f} s {'ahead of' if a['skew_s'] > 0 else 'behind'} the "
                     "collector's clock")
    elif abs(a.get("offset_s") or 0) >= 1:
        parts.append(f"clock offset {a['offset_s']:+.1f} s")
    if a.get("waiting_to_be_judged"):
        parts.append(f"{a['waiting_to_be_judged']} late readings waiting to be judged (until stored)")
    return "; ".join(parts) or "in order"


def _svc(s: dict) -> str:
    if not s.get("embedded"):
        return "configured"
    return "running" if s.get("running") else "stopped"
