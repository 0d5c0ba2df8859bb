"""Every panel's SQL against the real TimescaleDB, filled from the simulators.

The database is the test's own (``db`` fixture). Readings come from
``simulators.generate`` (the acid-dump scenario, three devices, two days at one-minute
steps) and are written with COPY; violations are the episodes of those readings beyond
each site's pack limits (found here with numpy); alerts, lab results and dead letters are
added so every panel has something to show. Each query is expanded by
``dashboards.macros`` exactly as Grafana expands it (TimescaleDB on) and run as the
read-only ``sewerwatch_grafana`` role.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest
from psycopg import sql

from dashboards import queries as dq
from dashboards.definitions import LB_PER_MG_MGL, SLUG_LINE, build_all
from dashboards.packs import load_packs
from limits.packs import load_pack
from sewerwatch.db import bootstrap, migrate
from simulators import generate

pytestmark = pytest.mark.services

UTC = timezone.utc
PACKS = {"site-001": "palmyra-wi", "site-002": "webster-wi", "site-003": "superior-wi"}
STEP_S = 60.0
DAYS = 2
LAB = {"bod5": (150.0, 450.0), "tss": (100.0, 400.0), "tkn": (20.0, 80.0), "tp": (3.0, 15.0)}


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of True."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))


def _ts(epoch: float) -> datetime:
    return datetime.fromtimestamp(float(epoch), UTC)


@pytest.fixture
def filled(db):
    """Fill the test database; return what was written, for the checks."""
    facts = fill(db.connect)
    facts["db"] = db
    return facts


def fill(connect) -> dict:
    """Write simulated readings, violations, alerts, lab results and dead letters."""
    series = generate("acid-dump", duration_s=DAYS * 86400, step_s=STEP_S, devices=3)
    packs = load_packs()
    times = series.times
    rng = np.random.default_rng(7)
    facts = {"series": series, "sensor": {}, "site_id": {}, "quality": {}, "lab": [],
             "violations": [], "from": _ts(times[0]) + timedelta(hours=6), "to": _ts(times[-1])}
    with connect() as conn:
        for i, key in enumerate(series.sites):
            sid = conn.execute("INSERT INTO sites (key, name, pack, sic, permit) VALUES (%s, %s, %s, '2011', %s) "
                               "RETURNING id", (key, f"Industrial user {i + 1}", PACKS[key], f"P-{i + 1}")).fetchone()[0]
            facts["site_id"][key] = sid
            for p in ("flow", "ph", "temperature"):
                facts["sensor"][key, p] = conn.execute(
                    "INSERT INTO sensors (site_id, name, parameter, unit, source, address, interval_s) "
                    "VALUES (%s, %s, %s, %s, 'modbus', %s, %s) RETURNING id",
                    (sid, p, p, series.units[p], f"modbus:dev{i}/{p}", STEP_S)).fetchone()[0]
        # readings: NaN (dropout) is a device fault; a few impossible pH values at site-003
        with conn.cursor() as cur, cur.copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
            for i, key in enumerate(series.sites):
                for p in ("flow", "ph", "temperature"):
                    v = series.values[p][i].copy()
                    q = np.where(np.isnan(v), 2, 0).astype(np.int16)
                    if key == "site-003" and p == "ph":
                        bad = rng.choice(len(v), 5, replace=False)
                        v[bad], q[bad] = 15.0, 1
                    facts["quality"][key, p] = q
                    sensor = facts["sensor"][key, p]
                    for t, x, qq in zip(times.tolist(), v.tolist(), q.tolist()):
                        cp.write_row((_ts(t), sensor, None if x != x else x, qq))
        # violations: each site's pack range limits over its readings
        ranges = [r for r in packs.range_limits]
        for i, key in enumerate(series.sites):
            for r in ranges:
                if r.pack != PACKS[key]:
                    continue
                v = series.values[r.parameter][i]
                mask = (v < r.value) if r.bound == "min" else (v > r.value)
                for a, b in _runs(mask & ~np.isnan(v)):
                    seg = v[a:b + 1]
                    end = None if b == len(v) - 1 else _ts(times[b])
                    peak = float(seg.min() if r.bound == "min" else seg.max())
                    days = len({_ts(t).date() for t in times[a:b + 1:60]} | {_ts(times[b]).date()})
                    vid = conn.execute(
                        "INSERT INTO violations (site_id, sensor_id, parameter, rule, pack, citation, words, "
                        "start_time, end_time, peak, limit_value, unit, days_of_violation, evidence, source) "
                        "VALUES (%s,%s,%s,%s,%s,%s,'',%s,%s,%s,%s,%s,%s,%s,'batch') RETURNING id",
                        (facts["site_id"][key], facts["sensor"][key, r.parameter], r.parameter, r.rule, r.pack,
                         r.citation, _ts(times[a]), end, peak, r.value, r.unit, days,
                         json.dumps({"readings": int(b - a + 1)}))).fetchone()[0]
                    facts["violations"].append((key, r.rule, end is None, vid))
        for key, rule, is_open, vid in facts["violations"]:
            conn.execute("INSERT INTO alerts (kind, violation_id, site_id, rule, state, summary, opened_at) "
                         "VALUES ('violation', %s, %s, %s, %s, %s, %s)",
                         (vid, facts["site_id"][key], rule, "open" if is_open else "resolved",
                          f"{key} {rule}", facts["from"]))
        conn.execute("INSERT INTO alerts (kind, site_id, sensor_id, rule, state, summary, acknowledged_by) "
                     "VALUES ('sensor-health', %s, %s, 'stale', 'acknowledged', 'site-003 pH silent', 'operator')",
                     (facts["site_id"]["site-003"], facts["sensor"]["site-003", "ph"]))
        # lab: a 24-hour composite each day per site; a non-detect; a corrected result
        for key in series.sites:
            for d in range(DAYS):
                collected = _ts(times[0]) + timedelta(days=d, hours=23)
                sample = conn.execute(
                    "INSERT INTO lab_samples (sample_key, site_id, collected, sample_type, window_start, window_end) "
                    "VALUES (%s, %s, %s, 'composite', %s, %s) RETURNING id",
                    (f"{key}-{d}", facts["site_id"][key], collected, collected - timedelta(hours=24), collected)
                ).fetchone()[0]
                for analyte, (lo, hi) in LAB.items():
                    value = float(rng.uniform(lo, hi))
                    qualifier = "<" if (key == "site-002" and analyte == "tp" and d == 0) else ""
                    conn.execute("INSERT INTO lab_results (sample_id, analyte, value_mg_l, qualifier) "
                                 "VALUES (%s, %s, %s, %s)", (sample, analyte, value, qualifier))
                    if key == "site-001" and analyte == "bod5" and d == 1:
                        value = value * 1.1   # a correction: version 2 is the one that counts
                        conn.execute("INSERT INTO lab_results (sample_id, analyte, version, value_mg_l, reason) "
                                     "VALUES (%s, %s, 2, %s, 'transcription error')", (sample, analyte, value))
                    facts["lab"].append((key, analyte, 0.0 if qualifier else value, d))
        # a bill per site for the month, with its surcharge among the charges (lab/bill.py)
        for i, key in enumerate(series.sites):
            surcharge = round(10.0 * (i + 1) + 0.25, 2)
            detail = {"charges": [{"charge": "surcharge", "dollars": surcharge},
                                  {"charge": "use", "dollars": 100.0}]}
            month = _ts(times[0]).replace(day=1, hour=0, minute=0, second=0)
            conn.execute("INSERT INTO bills (site_id, period, period_start, period_end, total_dollars, detail) "
                         "VALUES (%s, %s, %s, %s, %s, %s)",
                         (facts["site_id"][key], f"{month:%Y-%m}", month, month + timedelta(days=30),
                          surcharge + 100.0, json.dumps(detail)))
            facts.setdefault("surcharges", {})[key] = surcharge
        for k in range(3):
            conn.execute("INSERT INTO dead_letters (received_at, source, topic, payload, reason) "
                         "VALUES (%s, 'mqtt', 'sewerwatch/site-001/ph', %s, 'not JSON')",
                         (facts["from"] + timedelta(hours=k), b"\xff\xfe"))
        conn.commit()
    facts["packs"] = packs
    return facts


def _dashboards():
    return {d.uid: d.to_json() for d in build_all()}


CHOICES = {
    "sewerwatch-overview": [{}],
    "sewerwatch-site": [{"site": "site-001"}, {"site": "site-002"}],
    "sewerwatch-lab": [{}, {"site": ["site-001", "site-002"]}],
    "sewerwatch-sensor-health": [{}, {"site": ["site-003"]}],
}


def test_every_panel_query_returns_rows_as_grafana_would_run_it(filled):
    tf, tt = filled["from"], filled["to"]
    dashboards = _dashboards()
    assert set(dashboards) == set(CHOICES)
    ran = 0
    with filled["db"].connect("grafana") as conn:
        for uid, dash in dashboards.items():
            for choice in CHOICES[uid]:
                for res in dq.run_dashboard(conn, dash, tf, tt, choice, interval="5m"):
                    where = f"{uid} / {res.query.panel} / {res.query.ref_id} {choice}"
                    assert "$" not in res.sql.replace("$$", ""), f"{where}: unexpanded: {res.sql}"
                    assert res.rows, f"{where}: no rows from\n{res.sql}"
                    if res.query.format == "time_series":
                        assert "time" in res.columns, f"{where}: no time column: {res.columns}"
                        col = res.columns.index("time")
                        times = [r[col] for r in res.rows]
                        assert times == sorted(times), f"{where}: not sorted by time"
                        # a bucket starts at or before the range start: a month, a day, 5 minutes
                        lo = tf - timedelta(days=31 if uid == "sewerwatch-lab" else 1)
                        assert lo <= times[0] and times[-1] <= tt, f"{where}: times outside the range"
                    ran += 1
    assert ran >= 30


def test_macros_in_the_panels_expand_to_timescaledb_buckets_and_rfc3339_times(filled):
    site = _dashboards()["sewerwatch-site"]
    with filled["db"].connect("grafana") as conn:
        res = dq.run_dashboard(conn, site, filled["from"], filled["to"], {"site": "site-001"}, interval="5m")
    ph = next(r for r in res if r.query.panel == "pH" and r.query.ref_id == "A")
    assert "time_bucket('300.000s',time) AS \"time\"" in ph.sql
    assert f"BETWEEN '{filled['from']:%Y-%m-%dT%H:%M:%S}Z' AND '{filled['to']:%Y-%m-%dT%H:%M:%S}Z'" in ph.sql
    assert "site = 'site-001'" in ph.sql
    # 5-minute averages of the pH the simulator produced
    series = filled["series"]
    i = series.sites.index("site-001")
    t, v = series.times, series.values["ph"][i]
    buckets = np.floor(t / 300) * 300
    inside = (t >= filled["from"].timestamp()) & (t <= filled["to"].timestamp())
    got = {row[0].timestamp(): row[2] for row in ph.rows}
    for b in np.unique(buckets[inside])[::37]:
        sel = inside & (buckets == b) & ~np.isnan(v)
        assert got[b] == pytest.approx(v[sel].mean(), rel=1e-9)


def test_site_thresholds_are_the_sites_own_pack_limits(filled):
    site = _dashboards()["sewerwatch-site"]
    with filled["db"].connect("grafana") as conn:
        for key, pack in PACKS.items():
            res = dq.run_dashboard(conn, site, filled["from"], filled["to"], {"site": key}, interval="5m")
            for panel, parameter, label in (("pH", "ph", "pH"), ("Temperature", "temperature", "temperature")):
                b = next(r for r in res if r.query.panel == panel and r.query.ref_id == "B")
                row = dict(zip(b.columns, b.rows[0]))
                # straight from the pack loader, not from the dashboards' own reading of it
                want = {("min" if r.op == "<" else "max"): r.limit_canonical
                        for r in load_pack(pack).rules_for(parameter) if r.kind == "range"}
                assert row[f"{label} min"] == want.get("min"), (key, panel)
                assert row[f"{label} max"] == want.get("max"), (key, panel)
    # and the transformation turns those columns into the panel's threshold steps
    ph_panel = next(p for p in site["panels"] if p["title"] == "pH")
    mapping = ph_panel["transformations"][0]
    assert mapping["id"] == "configFromData" and mapping["options"]["configRefId"] == "B"
    assert {m["fieldName"] for m in mapping["options"]["mappings"] if m["handlerKey"] == "threshold1"} == {"pH min", "pH max"}
    assert ph_panel["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] == "dashed"


def test_slug_line_is_five_times_the_trailing_24_hour_average(filled):
    site = _dashboards()["sewerwatch-site"]
    tf = filled["from"] + timedelta(hours=20)      # so the 24 hours before reach back to the data start
    tt = filled["to"]
    with filled["db"].connect("grafana") as conn:
        res = dq.run_dashboard(conn, site, tf, tt, {"site": "site-002"}, interval="5m")
    slug = next(r for r in res if r.query.ref_id == "C")
    assert slug.columns == ["time", SLUG_LINE]
    series = filled["series"]
    i = series.sites.index("site-002")
    t, v = series.times, series.values["flow"][i]
    # the query reads from 24 hours before the range start
    ok = (~np.isnan(v) & (filled["quality"]["site-002", "flow"] == 0)
          & (t >= tf.timestamp() - 86400) & (t <= tt.timestamp()))
    buckets = np.floor(t[ok] / 300) * 300
    ub, inv = np.unique(buckets, return_inverse=True)
    means = np.bincount(inv, weights=v[ok]) / np.bincount(inv)
    got = {row[0].timestamp(): row[1] for row in slug.rows}
    assert min(got) >= tf.timestamp() and len(got) > 100
    for b in list(got)[::25]:
        window = (ub >= b - 86400) & (ub <= b)
        assert got[b] == pytest.approx(5 * means[window].mean(), rel=1e-9)


def test_monthly_pounds_against_normal_strength(filled):
    lab = _dashboards()["sewerwatch-lab"]
    series = filled["series"]
    with filled["db"].connect("grafana") as conn:
        res = dq.run_dashboard(conn, lab, filled["from"], filled["to"], {}, interval="1d")
    bod = next(r for r in res if r.query.panel.startswith("Monthly pounds of BOD"))
    got = {row[1]: row[2] for row in bod.rows}
    normals = {n.pack: n.mg_l for n in filled["packs"].normal_strengths if n.analyte == "bod5"}
    for i, key in enumerate(series.sites):
        flow = series.values["flow"][i]
        good = ~np.isnan(flow) & (filled["quality"][key, "flow"] == 0)
        volume_mg = flow[good].sum() * STEP_S / 60.0 / 1e6
        # the current version of each result (the corrected one for site-001, day 1)
        conc = np.mean([v for k, a, v, d in filled["lab"] if k == key and a == "bod5"])
        assert got[f"{key} discharged"] == pytest.approx(conc * volume_mg * LB_PER_MG_MGL, rel=1e-9)
        if PACKS[key] in normals:
            assert got[f"{key} at normal strength"] == pytest.approx(
                normals[PACKS[key]] * volume_mg * LB_PER_MG_MGL, rel=1e-9)
        else:
            assert f"{key} at normal strength" not in got
    billed = next(r for r in res if r.query.panel == "Surcharges billed")
    got_bills = {dict(zip(billed.columns, r))["site"]: dict(zip(billed.columns, r)) for r in billed.rows}
    assert set(got_bills) == set(PACKS)
    for key, rec in got_bills.items():
        assert float(rec["surcharge [USD]"]) == pytest.approx(filled["surcharges"][key])
        assert float(rec["bill total [USD]"]) == pytest.approx(filled["surcharges"][key] + 100.0)
    surcharge = next(r for r in res if r.query.panel.startswith("Surcharge basis"))
    for row in surcharge.rows:
        rec = dict(zip(surcharge.columns, row))
        assert rec["excess mg/l"] == pytest.approx(max(rec["average mg/l"] - rec["normal mg/l"], 0))
        assert rec["surcharge pounds"] == pytest.approx(rec["excess mg/l"] * rec["volume MG"] * LB_PER_MG_MGL)


def test_overview_status_open_alerts_and_last_reading_age(filled):
    over = _dashboards()["sewerwatch-overview"]
    with filled["db"].connect("grafana") as conn:
        res = dq.run_dashboard(conn, over, filled["from"], filled["to"], {}, interval="1h")
    users = next(r for r in res if r.query.panel == "Industrial users: compliance")
    rows = {dict(zip(users.columns, r))["site"]: dict(zip(users.columns, r)) for r in users.rows}
    assert set(rows) == set(PACKS)
    open_by_site = {k: sum(1 for s, _, o, _ in filled["violations"] if s == k and o) for k in PACKS}
    for key, rec in rows.items():
        assert rec["open violations"] == open_by_site[key]
        assert rec["open alerts"] == open_by_site[key] + (1 if key == "site-003" else 0)
        if open_by_site[key]:
            assert rec["status"] == "in violation"
    stat = next(r for r in res if r.query.panel == "Open alerts")
    assert stat.rows[0][0] == sum(open_by_site.values()) + 1
    ages = next(r for r in res if r.query.panel == "Age of the last reading per sensor")
    now = datetime.now(UTC)
    for row in ages.rows:
        rec = dict(zip(ages.columns, row))
        assert float(rec["age [s]"]) == pytest.approx((now - rec["last reading"]).total_seconds(), abs=120)


def test_the_grafana_role_reads_but_cannot_write(filled):
    with filled["db"].connect("grafana") as conn:
        assert conn.execute("SELECT count(*) FROM dash_site_status").fetchone()[0] == 3
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO sites (key, name, pack) VALUES ('x', 'x', 'palmyra-wi')")


def test_preview_renders_every_dashboard_from_the_same_sql(filled, tmp_path):
    import matplotlib.image as mpimg

    from dashboards.preview import render_all

    files = render_all(tmp_path, filled["db"].urls["grafana"], filled["from"], filled["to"],
                       {"site": ["site-001"]})
    assert sorted(f.name for f in files) == sorted(f"{uid}.png" for uid in CHOICES)
    for f in files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    site = mpimg.imread(tmp_path / "sewerwatch-site.png")
    red = (site[..., 0] > 0.8) & (site[..., 1] < 0.2) & (site[..., 2] < 0.2)
    # the pack's pH limits, the slug line: drawn in red
    assert red.sum() > 500
    blank = mpimg.imread(tmp_path / "sewerwatch-overview.png")
    assert (blank[..., :3] < 0.5).any(axis=-1).mean() > 0.01     # text and lines, not an empty page


def test_the_same_panels_on_plain_postgresql_bucket_with_date_bin_to_the_same_rows(services, filled):
    """The migrations work without TimescaleDB; the dashboards built for such a database
    (``timescaledb=False``: ``date_bin`` from time_bucket's origin, data source
    ``timescaledb: false``) return, panel by panel, the rows the TimescaleDB ones return
    on the same data: the slug line's 24-hour window included."""
    name = f"swt_plain_{os.getpid()}"
    with services.admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        bootstrap.ensure_database(conn, name)
    urls = {r: u.rsplit("/", 1)[0] + "/" + name for r, u in services.db_urls.items()}
    try:
        migrate.migrate(urls["owner"])

        def connect(role="owner"):
            return psycopg.connect(urls[role])

        facts = fill(connect)
        assert (facts["from"], facts["to"]) == (filled["from"], filled["to"])
        plain = {d.uid: d.to_json() for d in build_all(timescaledb=False)}
        ts = _dashboards()
        ran = 0
        with connect("grafana") as conn, filled["db"].connect("grafana") as ts_conn:
            assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'timescaledb'").fetchone()[0] == 0
            for uid, dash in plain.items():
                for choice in CHOICES[uid]:
                    got = dq.run_dashboard(conn, dash, facts["from"], facts["to"], choice, "5m", timescaledb=False)
                    want = dq.run_dashboard(ts_conn, ts[uid], facts["from"], facts["to"], choice, "5m")
                    for g, w in zip(got, want, strict=True):
                        where = f"{uid} / {g.query.panel} / {g.query.ref_id} {choice}"
                        assert "time_bucket" not in g.sql and "$__" not in g.sql, where
                        assert g.rows, f"{where}: no rows on plain PostgreSQL"
                        if g.query.format == "time_series":   # (tables hold now()-relative ages, ids)
                            assert g.columns == w.columns and len(g.rows) == len(w.rows), where
                            for gr, wr in zip(g.rows, w.rows):
                                assert [x if isinstance(x, float) else x for x in gr] == \
                                    [pytest.approx(x, rel=1e-9) if isinstance(x, float) else x for x in wr], where
                            ran += 1
            assert ran >= 10
    finally:
        with services.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_previews_say_units_variables_and_durations_in_words():
    """Not Grafana's unit ids (flowgpm), not $__all, not 8.64e+04 for a day."""
    from dashboards.preview import describe_variables, duration, number, unit_words
    from dashboards.macros import Variable

    assert unit_words("flowgpm") == "gallons per minute" and unit_words("masslb") == "pounds"
    assert unit_words("short") is None
    assert describe_variables({"site": Variable("$__all", multi=True, include_all=True)}) == "site: all"
    assert describe_variables({"site": Variable(["site-001", "site-002"], multi=True)}) == "site: site-001, site-002"
    assert duration(86400) == "24 h" and duration(180 * 86400) == "180 d" and duration(45) == "45 s"
    assert number(86400.0) == "86,400" and number(7.21) == "7.21"


def test_preview_x_axis_is_the_dashboards_range(filled, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    from dashboards import preview

    site = _dashboards()["sewerwatch-site"]
    panel = next(p for p in site["panels"] if p["title"] == "pH")
    tf, tt = filled["from"], filled["to"]
    with filled["db"].connect("grafana") as conn:
        res = dq.run_dashboard(conn, site, tf + timedelta(hours=20), tt, {"site": "site-001"}, interval="5m")
    mine = [r for r in res if r.query.panel == "pH"]
    fig, ax = plt.subplots()
    # the readings cover a day less than the range asked for: the axis still shows the range
    preview._draw_timeseries(ax, panel, mine, tf, tt)
    lo, hi = (mdates.num2date(x) for x in ax.get_xlim())
    assert abs((lo - tf).total_seconds()) < 1 and abs((hi - tt).total_seconds()) < 1
    assert ax.get_ylabel() == ""       # pH: a plain number, no unit id
    plt.close(fig)


def test_preview_cli(filled, tmp_path, capsys):
    from sewerwatch.cli import main

    url = filled["db"].urls["grafana"]
    args = ["dashboards", "preview", str(tmp_path), "--db-url", url, "--site", "site-002",
            "--from", filled["from"].isoformat(), "--to", filled["to"].isoformat()]
    assert main(args) == 0
    printed = capsys.readouterr().out.split()
    assert sorted(printed) == sorted(str(tmp_path / f"{uid}.png") for uid in CHOICES)
    assert main(["dashboards", "preview", str(tmp_path), "--db-url", url, "--from", "yesterday"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--from" in err[0] and "ISO-8601" in err[0]
    assert main(["dashboards", "preview", str(tmp_path), "--db-url", url,
                 "--from", filled["to"].isoformat(), "--to", filled["from"].isoformat()]) == 2
    assert "before --to" in capsys.readouterr().err


def test_long_ranges_read_the_one_minute_aggregates_and_the_raw_readings_after_them(filled):
    """A panel over more than two days reads readings_1m where the aggregates reach
    (the raw readings there may be gone by the retention policy) and raw readings after; a
    short range reads raw readings, and the minutes where retention removed them."""
    from dashboards.definitions import RAW_RANGE_MAX
    from sewerwatch.db.maintain import _set_state, refresh_aggregates

    assert RAW_RANGE_MAX == "2 days"
    tf, tt = filled["from"], filled["to"]
    cut = tf + timedelta(days=1)
    series = filled["series"]
    i = series.sites.index("site-001")
    t, v = series.times, series.values["ph"][i]
    q = filled["quality"]["site-001", "ph"]
    with filled["db"].connect() as conn:
        refresh_aggregates(conn, tf - timedelta(days=2), cut)     # from before the first reading, as maintain does
        _set_state(conn, "aggregates", cut)
        # the first day's raw pH readings removed, as retention would (its minutes stay)
        conn.execute("DELETE FROM readings r USING sensors s, sites t WHERE s.id = r.sensor_id AND t.id = s.site_id "
                     "AND t.key = 'site-001' AND s.parameter = 'ph' AND r.time < %s", (cut,))
        conn.commit()
    site = _dashboards()["sewerwatch-site"]
    ok = ~np.isnan(v) & (q == 0)

    def hourly(rows):
        return {r[0].timestamp(): r[2] for r in rows}

    def want(lo, hi):
        sel = ok & (t >= lo.timestamp()) & (t <= hi.timestamp())
        b = np.floor(t[sel] / 3600) * 3600
        ub, inv = np.unique(b, return_inverse=True)
        return dict(zip(ub.tolist(), (np.bincount(inv, weights=v[sel]) / np.bincount(inv)).tolist()))

    with filled["db"].connect("grafana") as conn:
        # three days (longer than two): the first day from the minutes, the second from raw readings
        res = dq.run_dashboard(conn, site, tf - timedelta(days=1), tt, {"site": "site-001"}, interval="1h")
        got = hourly(next(r for r in res if r.query.panel == "pH" and r.query.ref_id == "A").rows)
        exp = want(tf - timedelta(days=1), tt)
        assert set(got) == set(exp) and min(got) < cut.timestamp() < max(got)
        for k in exp:       # one reading a minute: each minute's mean is its reading
            assert got[k] == pytest.approx(exp[k], rel=1e-9)
    with filled["db"].connect() as conn:
        _set_state(conn, "raw-retention", cut)      # what retention records with its removal
        conn.commit()
    with filled["db"].connect("grafana") as conn:
        # a short range over the removed day: its minutes; nothing is lost to the zoom
        res = dq.run_dashboard(conn, site, tf, cut, {"site": "site-001"}, interval="1h")
        short = hourly(next(r for r in res if r.query.panel == "pH" and r.query.ref_id == "A").rows)
        whole = [k for k in short if k < cut.timestamp()]     # (the hour at the range's end holds one reading)
        assert len(whole) == 24 and all(short[k] == pytest.approx(got[k], rel=1e-9) for k in whole)
        # a short range after it: raw readings (the raw branch alone: no minutes exist there)
        res = dq.run_dashboard(conn, site, cut, tt, {"site": "site-001"}, interval="1h")
        later = hourly(next(r for r in res if r.query.panel == "pH" and r.query.ref_id == "A").rows)
        exp = want(cut, tt)
        assert set(later) == set(exp) and all(later[k] == pytest.approx(exp[k], rel=1e-9) for k in exp)
