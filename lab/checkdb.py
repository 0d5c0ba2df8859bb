"""``sewerwatch lab check``: stored lab results against each site's pack."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from foundation.errors import InputError


def _date(text: str, what: str) -> datetime:
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{what}: expected an ISO date such as 2026-01-01, got {text!r}") from None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def check_db(conn, start: datetime, end: datetime, store: bool = False, non_detect: str = "dl") -> dict:
    """Violations, permit needs and SNC of every site's results in ``[start, end)``."""
    from lab.compliance import check_lab
    from lab.flowdb import period_volume, store_violations
    from lab.permit import permit_required
    from lab.snc import pack_limits, snc
    from lab.store import load_results

    out = {"violations": [], "permits": [], "snc": [], "stored": 0}
    for key, pack in conn.execute("SELECT key, pack FROM sites ORDER BY key").fetchall():
        table = load_results(conn, start, end, [key])
        out["violations"] += check_lab(table, pack, non_detect)
        daily = list(period_volume(conn, key, start, end)["daily_gal"].values())
        out["permits"].append(permit_required(table, key, pack, daily_volumes_gal=daily, non_detect=non_detect))
        out["snc"] += snc(table, pack_limits(pack), non_detect)
    if store:
        with conn.transaction():
            out["stored"] = store_violations(conn, out["violations"])
    return out


def check_cli(args, ctx) -> int:
    start, end = _date(args.since, "--since"), _date(args.until, "--until")
    if end <= start:
        raise InputError("--until must be after --since")
    with ctx.connect("owner") as conn:
        res = check_db(conn, start, end, store=args.store, non_detect=args.non_detect)
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


def list_cli(args, ctx) -> int:
    """``sewerwatch lab list``: the current version of each stored result."""
    start, end = _date(args.since, "--since"), _date(args.until, "--until")
    with ctx.connect("owner") as conn:
        q = ("SELECT t.key, s.sample_key, s.collected, s.sample_type, r.analyte, r.qualifier, r.value_mg_l, "
             "r.version, r.entered_by, r.entered_at FROM lab_results_current r "
             "JOIN lab_samples s ON s.id = r.sample_id JOIN sites t ON t.id = s.site_id "
             "WHERE s.collected >= %s AND s.collected < %s")
        params: list = [start, end]
        if args.site:
            q += " AND t.key = ANY(%s)"
            params.append(args.site)
        rows = conn.execute(q + " ORDER BY t.key, s.collected, s.sample_key, r.analyte", params).fetchall()
    keys = ("site", "sample", "collected", "sample_type", "analyte", "qualifier", "mg_l", "version",
            "entered_by", "entered_at")
    if args.json:
        print(json.dumps([dict(zip(keys, r)) for r in rows], indent=2, default=lambda x: x.isoformat()))
    else:
        for r in rows:
            ver = f"  (version {r[7]} by {r[8]})" if r[7] > 1 else ""
            print(f"{r[0]:<16} {r[1]:<12} {r[2].astimezone(timezone.utc):%Y-%m-%d %H:%M}Z {r[4]:<5} "
                  f"{r[5]}{r[6]:g} mg/l{ver}")
    return 0


def composites(conn, start: datetime, end: datetime, relink: bool = False) -> list[dict]:
    """Composite samples collected in ``[start, end)`` with their window's volume and loadings.

    With ``relink`` each window's volume is computed again from the readings stored now
    (readings that arrived after the lab import count).
    """
    from lab.flowdb import composite_loadings, link_composite

    rows = conn.execute(
        "SELECT s.id, t.key, s.sample_key, s.window_start, s.window_end FROM lab_samples s "
        "JOIN sites t ON t.id = s.site_id WHERE s.sample_type = 'composite' AND s.collected >= %s "
        "AND s.collected < %s ORDER BY t.key, s.collected", (start, end)).fetchall()
    out = []
    with conn.transaction():
        for sid, site, key, ws, we in rows:
            linked = conn.execute("SELECT 1 FROM lab_composite_flows WHERE sample_id = %s", (sid,)).fetchone()
            if relink or linked is None:
                link_composite(conn, sid)
            item = {"site": site, "sample": key, "window_start": ws.isoformat(), "window_end": we.isoformat()}
            try:
                item.update(composite_loadings(conn, sid))
            except LookupError:
                item["note"] = "no single flow meter at the site: not linked"
            out.append(item)
    return out


def composites_cli(args, ctx) -> int:
    start, end = _date(args.since, "--since"), _date(args.until, "--until")
    with ctx.connect("owner") as conn:
        res = composites(conn, start, end, relink=args.relink)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for c in res:
            if "note" in c:
                print(f"{c['site']:<16} {c['sample']:<12} {c['note']}")
                continue
            loads = ", ".join(f"{a} {x['mg_l']:g} mg/l = {x['pounds']:.1f} lb" for a, x in c["analytes"].items())
            print(f"{c['site']:<16} {c['sample']:<12} {c['volume_gal']:,.0f} gal "
                  f"({c['coverage'] * 100:.0f} % covered): {loads}")
    return 0
