"""``sewerwatch lab check``: stored lab results against each site's pack."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from sewerwatch.errors import InputError


def _date(text: str, what: str) -> datetime:
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected an ISO date such as 2026-01-01, got {text!r}") from None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def check_db(conn, start: datetime, end: datetime, store: bool = False) -> dict:
    """Violations, permit needs and SNC of every site's results in ``[start, end)``."""
    from lab.compliance import check_lab
    from lab.flowdb import period_volume, store_violations
    from lab.permit import permit_required
    from lab.snc import pack_limits, snc
    from lab.store import load_results

    out = {"violations": [], "permits": [], "snc": [], "stored": 0}
    for key, pack in conn.execute("SELECT key, pack FROM sites ORDER BY key").fetchall():
        table = load_results(conn, start, end, [key])
        out["violations"] += check_lab(table, pack)
        daily = list(period_volume(conn, key, start, end)["daily_gal"].values())
        out["permits"].append(permit_required(table, key, pack, daily_volumes_gal=daily))
        out["snc"] += snc(table, pack_limits(pack))
    if store:
        with conn.transaction():
            out["stored"] = store_violations(conn, out["violations"])
    return out


def check_cli(args) -> int:
    from sewerwatch import config as sw_config
    from sewerwatch import db

    start, end = _date(args.since, "--since"), _date(args.until, "--until")
    if end <= start:
        raise InputError("--until must be after --since")
    cfg = sw_config.load(getattr(args, "config", None))
    with db.connect("owner", cfg) as conn:
        res = check_db(conn, start, end, store=args.store)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for v in res["violations"]:
            print(f"{v['site']:<16} {v['rule']:<14} {v['start'][:10]} peak {v['peak']:g} {v['unit']} "
                  f"> {v['limit']:g}  ({v['citation']})")
        for p in res["permits"]:
            if p["required"]:
                print(f"{p['site']:<16} discharge permit required: "
                      + "; ".join(f"{r['criterion']} {r['value']:g} {r['unit']} ({r['citation']})" for r in p["reasons"]))
        for s in res["snc"]:
            if s["snc"]:
                kind = "chronic" if s["chronic"] else "technical review criteria"
                print(f"{s['site']:<16} significant noncompliance ({kind}) {s['parameter']} "
                      f"{s['window_start'][:10]}..{s['window_end'][:10]}")
        if not any(p["required"] for p in res["permits"]) and not res["violations"] and not any(s["snc"] for s in res["snc"]):
            print("no lab violations, permit needs or significant noncompliance")
    return 0
