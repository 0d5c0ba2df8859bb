"""The four sewerwatch dashboards: Overview, Site, Lab and loadings, Sensor health.

Every panel query reads the database as the read-only ``sewerwatch_grafana`` role, through
the views of migration ``0050_dashboard_views.sql`` where they keep the SQL short. Time
series bucket with Grafana's ``$__timeGroupAlias`` (TimescaleDB ``time_bucket``, the data
source is provisioned with ``timescaledb: true``); for a database without the extension
the dashboards are built with ``timescaledb=False`` and bucket with PostgreSQL's own
``date_bin`` (PostgreSQL 14 and later) from time_bucket's origin, so the buckets are the
same and stay timestamps (Grafana's non-TimescaleDB ``$__timeGroup`` gives epoch numbers,
which the slug line's 24-hour window cannot use). The pack figures (pH and temperature
limits, normal strengths) are written into the SQL from ``limits/packs`` and joined on the
site's pack, so each site is drawn against its own ordinance.
"""

from __future__ import annotations

from dashboards import model as m
from dashboards.packs import Packs, load_packs, normal_strength_values, range_limits_values

#: pounds per (million gallons x mg/l): palmyra-wi, 003_44f871d49a02d8f5.txt §13.45(4)
#: (EPA Model No. 2: pounds = volume [MG] x concentration [mg/l] x 8.34).
LB_PER_MG_MGL = 8.34

#: analytes with a normal strength, in the order the Lab dashboard shows them
LOADING_ANALYTES = (("bod5", "BOD"), ("tss", "TSS"), ("tkn", "TKN"), ("tp", "P"))

SITE_VAR_SQL = "SELECT key AS __value, name AS __text FROM sites ORDER BY name"

#: time_bucket's default origin (a Monday), so date_bin buckets equal TimescaleDB's
PLAIN_ORIGIN = "TIMESTAMPTZ '2000-01-03 00:00:00+00'"
#: fixed bucket widths the panels use, as Grafana writes them and as a PostgreSQL interval
_WIDTHS = {"'1d'": "interval '1 day'", "$__interval": "$__interval_ms * interval '1 millisecond'"}


def time_group(column: str, width: str, timescaledb: bool = True, alias: bool = False) -> str:
    """A bucket expression: ``$__timeGroup`` for TimescaleDB, else ``date_bin``.

    Parameters
    ----------
    column : str
        The timestamp column.
    width : str
        ``$__interval`` (Grafana's query interval) or ``'1d'``.
    timescaledb : bool
        The database has the extension (the data source's ``jsonData.timescaledb``).
    alias : bool
        Name the bucket ``"time"`` (``$__timeGroupAlias``).
    """
    if timescaledb:
        return f"$__timeGroup{'Alias' if alias else ''}({column}, {width})"
    return f"date_bin({_WIDTHS[width]}, {column}, {PLAIN_ORIGIN})" + (' AS "time"' if alias else "")


def _site_single() -> m.QueryVariable:
    return m.QueryVariable("site", "Site", SITE_VAR_SQL)


def _site_multi() -> m.QueryVariable:
    return m.QueryVariable("site", "Site", SITE_VAR_SQL, multi=True, include_all=True)


# --- Overview --------------------------------------------------------------------------


def overview(timescaledb: bool = True) -> m.Dashboard:
    status_mappings = [{"type": "value", "options": {
        "in violation": {"color": "red", "index": 0},
        "violation in last 30 days": {"color": "orange", "index": 1},
        "stale sensors": {"color": "yellow", "index": 2},
        "no data": {"color": "purple", "index": 3},
        "in compliance": {"color": "green", "index": 4},
    }}]
    status_colors = m.override_by_names(["status"], custom__cellOptions={"type": "color-background"})
    panels = [
        m.stat("Open alerts", [m.Target("A", """
SELECT count(*) AS "open alerts" FROM alerts WHERE state <> 'resolved'
""", "table")], (0, 0, 6, 4), steps=m.thresholds((None, "green"), (1, "red"))),
        m.stat("Sites in violation", [m.Target("A", """
SELECT count(*) FILTER (WHERE status = 'in violation') AS "sites in violation" FROM dash_site_status
""", "table")], (6, 0, 6, 4), steps=m.thresholds((None, "green"), (1, "red"))),
        m.stat("Stale or silent sensors", [m.Target("A", """
SELECT coalesce(sum(stale_sensors + silent_sensors), 0) AS "stale sensors" FROM dash_site_status
""", "table")], (12, 0, 6, 4), steps=m.thresholds((None, "green"), (1, "orange"))),
        m.stat("Violations in range", [m.Target("A", """
SELECT count(*) AS violations FROM violations WHERE $__timeFilter(start_time)
""", "table")], (18, 0, 6, 4), steps=m.thresholds((None, "green"), (1, "red"))),
        m.table("Industrial users: compliance", [m.Target("A", """
SELECT site_name AS "industrial user", site, pack, permit, status,
       open_violations AS "open violations", violations_30d AS "violations (30 d)",
       last_violation AS "last violation", open_alerts AS "open alerts",
       sensors, round(oldest_reading_age_s) AS "oldest last reading [s]"
FROM dash_site_status
ORDER BY open_violations DESC, violations_30d DESC, site_name
""", "table")], (0, 4, 24, 8), description="Every industrial user, its compliance status, "
            "open alerts and the age of its oldest last reading.",
            overrides=[status_colors], mappings=status_mappings),
        m.table("Age of the last reading per sensor", [m.Target("A", """
SELECT site, sensor, parameter, source, last_time AS "last reading", last_value AS "value",
       round(age_s) AS "age [s]"
FROM dash_sensor_last_reading
ORDER BY age_s DESC NULLS FIRST, site, sensor
""", "table")], (0, 12, 12, 9), overrides=[m.override_by_names(
            ["age [s]"], thresholds=m.thresholds((None, "green"), (300, "orange"), (3600, "red")),
            custom__cellOptions={"type": "color-text"})]),
        m.table("Open alerts", [m.Target("A", """
SELECT a.opened_at AS opened, t.key AS site, a.kind, a.rule, a.state, a.summary,
       a.acknowledged_by AS "acknowledged by"
FROM alerts a LEFT JOIN sites t ON t.id = a.site_id
WHERE a.state <> 'resolved'
ORDER BY a.opened_at DESC
""", "table")], (12, 12, 12, 9)),
        m.timeseries("Violations started per day", [m.Target("A", f"""
SELECT {time_group("v.start_time", "'1d'", timescaledb, alias=True)}, t.key AS metric, count(*) AS violations
FROM violations v JOIN sites t ON t.id = v.site_id
WHERE $__timeFilter(v.start_time)
GROUP BY 1, 2
ORDER BY 1
""")], (0, 21, 24, 8), draw="bars", interval="1d"),
    ]
    return m.Dashboard("sewerwatch-overview", "sewerwatch: Overview",
                       "Every industrial user: compliance, open alerts, freshness of data.",
                       panels, [], time_from="now-7d")


# --- Site ------------------------------------------------------------------------------


#: A panel over a longer range than this reads the one-minute aggregates (a month
#: of 1-Hz readings is 2.6 M rows a sensor, its minutes 43,200; raw readings older than
#: ``[retention] raw_days`` are gone, their minutes kept for the records period).
RAW_RANGE_MAX = "2 days"
#: Where the aggregates end: ``sewerwatch db maintain`` (and ``run``) advance it; after it,
#: raw readings.
_AGGREGATED_TO = ("coalesce((SELECT done_to FROM maintenance_state WHERE job = 'aggregates'), "
                  "'-infinity'::timestamptz)")
#: Before it the raw readings were removed by the retention policy: there, any range reads
#: the aggregates.
_RAW_FROM = ("coalesce((SELECT done_to FROM maintenance_state WHERE job = 'raw-retention'), "
             "'-infinity'::timestamptz)")


def readings_from(cond: str) -> str:
    """The usable readings of a panel as ``(time, sensor_id, sensor, value)``: raw readings
    (quality 0) for ranges up to :data:`RAW_RANGE_MAX`; beyond it, each minute's mean from
    ``dash_readings_1m`` where the aggregates reach and the raw readings after them. Where
    the retention policy removed the raw readings, any range reads the minutes.

    Parameters
    ----------
    cond : str
        SQL condition on both views (site, parameter, time filter).
    """
    long = f"($__timeTo()::timestamptz - $__timeFrom()::timestamptz) > interval '{RAW_RANGE_MAX}'"
    return f"""(
    SELECT time, sensor_id, sensor, value FROM dash_readings
    WHERE {cond} AND quality = 0 AND (NOT {long} OR time >= {_AGGREGATED_TO})
    UNION ALL
    SELECT time, sensor_id, sensor, mean FROM dash_readings_1m
    WHERE {cond} AND time < {_AGGREGATED_TO} AND ({long} OR time < {_RAW_FROM})
)"""


def _readings_sql(parameter: str, timescaledb: bool = True) -> str:
    return f"""
SELECT {time_group("time", "$__interval", timescaledb, alias=True)}, sensor AS metric, avg(value) AS value
FROM {readings_from(f"site = '$site' AND parameter = '{parameter}' AND $__timeFilter(time)")} r
GROUP BY 1, 2
ORDER BY 1
"""


def _limits_sql(packs: Packs, parameter: str, label: str) -> str:
    return f"""
WITH pack_limits(pack, bound, value, citation) AS (VALUES
    {range_limits_values(packs, parameter)}
)
SELECT max(l.value) FILTER (WHERE l.bound = 'min') AS "{label} min",
       max(l.value) FILTER (WHERE l.bound = 'max') AS "{label} max",
       string_agg(DISTINCT l.citation, '; ') AS citation
FROM sites t LEFT JOIN pack_limits l ON l.pack = t.pack
WHERE t.key = '$site'
"""


def _limits_from_query(label: str) -> list[dict]:
    """configFromData: the B query's limits become the panel's threshold steps."""
    return [{"id": "configFromData", "options": {
        "configRefId": "B",
        "mappings": [
            {"fieldName": f"{label} min", "handlerKey": "threshold1", "reducerId": "lastNotNull"},
            {"fieldName": f"{label} max", "handlerKey": "threshold1", "reducerId": "lastNotNull"},
            {"fieldName": "citation", "handlerKey": "__ignore"},
        ],
        "applyTo": {"id": "byType", "options": "number"},
    }}]


SLUG_LINE = "slug line (5 x 24-h average)"

#: the site's total flow: per bucket, the sum over its flow meters of each meter's average
_SITE_FLOW = """
    SELECT bucket, sum(flow) AS flow FROM (
        SELECT {bucket} AS bucket, sensor_id, avg(value) AS flow
        FROM {source} r
        GROUP BY 1, 2
    ) per_meter GROUP BY bucket
"""


def _site_flow(start: str, timescaledb: bool) -> str:
    source = readings_from(f"site = '$site' AND parameter = 'flow' AND time BETWEEN {start} AND $__timeTo()::timestamptz")
    return _SITE_FLOW.format(source=source, bucket=time_group("time", "$__interval", timescaledb))


def flow_sql(timescaledb: bool = True) -> str:
    """The site's total flow [gpm] per bucket."""
    return f"""
SELECT bucket AS "time", flow
FROM ({_site_flow("$__timeFrom()::timestamptz", timescaledb)}) f
ORDER BY 1
"""


def slug_sql(timescaledb: bool = True) -> str:
    """The slug line: 5 x the trailing 24-hour average of the site's flow.

    palmyra-wi, 003_44f871d49a02d8f5.txt §13.43 SLUG: "more than 5 times the average
    24-hour concentration or flows"; westfield-wi, 004_736876c28764ff16.txt, SLUG. The
    average is taken over the equal-length buckets of the 24 hours up to each bucket
    (readings from the 24 hours before the range count), so with regular sampling it is
    the time-weighted average.
    """
    return f"""
WITH b AS ({_site_flow("$__timeFrom()::timestamptz - interval '24 hours'", timescaledb)}),
w AS (
    SELECT bucket, 5 * avg(flow) OVER (ORDER BY bucket
                   RANGE BETWEEN interval '24 hours' PRECEDING AND CURRENT ROW) AS slug_line
    FROM b
)
SELECT bucket AS "time", slug_line AS "{SLUG_LINE}"
FROM w
WHERE bucket >= $__timeFrom()::timestamptz
ORDER BY 1
"""


def site(packs: Packs, timescaledb: bool = True) -> m.Dashboard:
    red_dashed = {"custom__lineStyle": {"fill": "dash", "dash": [10, 10]},
                  "color": {"mode": "fixed", "fixedColor": "red"}}
    panels = [
        m.timeseries("pH", [m.Target("A", _readings_sql("ph", timescaledb)),
                            m.Target("B", _limits_sql(packs, "ph", "pH"), "table")],
                     (0, 0, 12, 9), unit="none", threshold_style="dashed",
                     description="pH at the control manhole; dashed lines: the site's pack limits.",
                     transformations=_limits_from_query("pH")),
        m.timeseries("Temperature", [m.Target("A", _readings_sql("temperature", timescaledb)),
                                     m.Target("B", _limits_sql(packs, "temperature", "temperature"), "table")],
                     (12, 0, 12, 9), unit="fahrenheit", threshold_style="dashed",
                     description="Temperature [degF]; dashed line: the site's pack limit.",
                     transformations=_limits_from_query("temperature")),
        m.timeseries("Flow and slug line", [m.Target("A", flow_sql(timescaledb)),
                                            m.Target("C", slug_sql(timescaledb))],
                     (0, 9, 24, 9), unit="flowgpm",
                     description="The site's flow [gpm] and the slug line at 5 x the trailing 24-hour average "
                                 "(palmyra-wi §13.43, westfield-wi SLUG).",
                     overrides=[m.override_by_names([SLUG_LINE], **red_dashed)]),
        m.stat("Open alerts at this site", [m.Target("A", """
SELECT count(*) AS "open alerts"
FROM alerts a JOIN sites t ON t.id = a.site_id
WHERE t.key = '$site' AND a.state <> 'resolved'
""", "table")], (0, 18, 6, 8), steps=m.thresholds((None, "green"), (1, "red"))),
        m.table("Violations", [m.Target("A", """
SELECT v.start_time AS "start", v.end_time AS "end", v.rule, v.parameter, v.peak,
       v.limit_value AS "limit", v.unit, v.days_of_violation AS "days", v.source, v.citation
FROM violations v JOIN sites t ON t.id = v.site_id
WHERE t.key = '$site'
  AND v.start_time <= $__timeTo()::timestamptz
  AND coalesce(v.end_time, now()) >= $__timeFrom()::timestamptz
ORDER BY v.start_time DESC
""", "table")], (6, 18, 18, 8), description="Violation episodes overlapping the time range."),
    ]
    return m.Dashboard("sewerwatch-site", "sewerwatch: Site",
                       "One industrial user live: pH, temperature and flow against its pack's "
                       "limits, the slug line, its violations.",
                       panels, [_site_single()], time_from="now-24h", refresh="30s")


# --- Lab and loadings ------------------------------------------------------------------


def _loading_sql(packs: Packs, analyte: str) -> str:
    return f"""
WITH normal(pack, analyte, mg_l, citation) AS (VALUES
    {normal_strength_values(packs)}
), monthly AS (
    SELECT l.month, l.site, l.avg_mg_l, v.volume_mg, n.mg_l AS normal_mg_l
    FROM dash_monthly_lab l
    JOIN dash_monthly_volume v ON v.site_id = l.site_id AND v.month = l.month
    JOIN sites t ON t.id = l.site_id
    LEFT JOIN normal n ON n.pack = t.pack AND n.analyte = l.analyte
    WHERE l.analyte = '{analyte}' AND l.site IN ($site)
      AND l.month BETWEEN date_trunc('month', $__timeFrom()::timestamptz) AND $__timeTo()::timestamptz
)
SELECT month AS "time", site || ' discharged' AS metric, avg_mg_l * volume_mg * {LB_PER_MG_MGL} AS pounds
FROM monthly
UNION ALL
SELECT month AS "time", site || ' at normal strength' AS metric, normal_mg_l * volume_mg * {LB_PER_MG_MGL}
FROM monthly WHERE normal_mg_l IS NOT NULL
ORDER BY 1
"""


def surcharge_sql(packs: Packs) -> str:
    """Pounds above normal strength per site, month and analyte: the surcharge basis.

    palmyra-wi, 003_44f871d49a02d8f5.txt §13.45(4): surcharge = [Bc·B + Sc·S + Pc·P +
    Nc·N]·Vu with B, S, P, N the concentrations above normal sewage (§13.43); pounds =
    volume [MG] x excess [mg/l] x 8.34.
    """
    return f"""
WITH normal(pack, analyte, mg_l, citation) AS (VALUES
    {normal_strength_values(packs)}
)
SELECT l.month, l.site, upper(l.analyte) AS analyte, l.avg_mg_l AS "average mg/l",
       n.mg_l AS "normal mg/l", greatest(l.avg_mg_l - n.mg_l, 0) AS "excess mg/l",
       v.volume_mg AS "volume MG",
       greatest(l.avg_mg_l - n.mg_l, 0) * v.volume_mg * {LB_PER_MG_MGL} AS "surcharge pounds",
       n.citation
FROM dash_monthly_lab l
JOIN dash_monthly_volume v ON v.site_id = l.site_id AND v.month = l.month
JOIN sites t ON t.id = l.site_id
JOIN normal n ON n.pack = t.pack AND n.analyte = l.analyte
WHERE l.site IN ($site)
  AND l.month BETWEEN date_trunc('month', $__timeFrom()::timestamptz) AND $__timeTo()::timestamptz
ORDER BY l.month DESC, l.site, l.analyte
"""


def lab(packs: Packs) -> m.Dashboard:
    panels = []
    for i, (analyte, label) in enumerate(LOADING_ANALYTES):
        panels.append(m.timeseries(
            f"Monthly pounds of {label} against normal strength",
            [m.Target("A", _loading_sql(packs, analyte))],
            ((i % 2) * 12, (i // 2) * 8, 12, 8), unit="masslb", draw="bars", interval="1M",
            description=f"Pounds of {label} discharged each month (monthly average lab "
                        "concentration x monthly volume from the flow meter x 8.34) beside the "
                        "pounds at the pack's normal strength."))
    panels.append(m.table("Surcharge basis: pounds above normal strength", [
        m.Target("A", surcharge_sql(packs), "table")], (0, 16, 24, 8),
        description="Per site, month and analyte: the excess over normal strength and its pounds, "
                    "which the surcharge prices (palmyra-wi §13.45(4))."))
    panels.append(m.table("Surcharges billed", [m.Target("A", """
SELECT b.period, t.key AS site, b.period_start AS "from", b.period_end AS "to",
       (SELECT sum((c ->> 'dollars')::numeric)
        FROM jsonb_array_elements(b.detail -> 'charges') c
        WHERE c ->> 'charge' = 'surcharge') AS "surcharge [USD]",
       b.total_dollars AS "bill total [USD]", b.issued_at AS issued
FROM bills b JOIN sites t ON t.id = b.site_id
WHERE t.key IN ($site) AND b.superseded_by IS NULL
  AND b.period_end >= $__timeFrom()::timestamptz AND b.period_start <= $__timeTo()::timestamptz
ORDER BY b.period_start DESC, t.key
""", "table")], (0, 24, 24, 6), description="Bills issued by 'sewerwatch bill' for periods in the "
        "range: the surcharge on high-strength waste (palmyra-wi §13.45(4)) and the bill's total."))
    panels.append(m.table("Lab results", [m.Target("A", """
SELECT ls.collected, t.key AS site, ls.sample_key AS sample, ls.sample_type AS "type",
       lr.analyte, lr.qualifier, lr.value_mg_l AS "mg/l", lr.version, lr.entered_by AS "entered by"
FROM lab_results_current lr
JOIN lab_samples ls ON ls.id = lr.sample_id
JOIN sites t ON t.id = ls.site_id
WHERE t.key IN ($site) AND $__timeFilter(ls.collected)
ORDER BY ls.collected DESC, t.key, lr.analyte
""", "table")], (0, 30, 24, 8)))
    return m.Dashboard("sewerwatch-lab", "sewerwatch: Lab and loadings",
                       "Monthly pounds of BOD, TSS, TKN and P against normal strength; "
                       "the surcharge basis and the surcharges billed; lab results.",
                       panels, [_site_multi()], time_from="now-1y", refresh="")


# --- Sensor health ---------------------------------------------------------------------


def sensor_health(timescaledb: bool = True) -> m.Dashboard:
    panels = [
        m.table("Sensors: freshness and completeness", [m.Target("A", """
SELECT l.site, l.sensor, l.parameter, l.last_time AS "last reading", round(l.age_s) AS "age [s]",
       c.n AS readings, c.expected,
       round(least(100.0, 100.0 * c.n / nullif(c.expected, 0))::numeric, 1) AS "completeness %",
       c.out_of_range AS "out of range", c.faults
FROM dash_sensor_last_reading l
LEFT JOIN LATERAL (
    SELECT count(*) AS n,
           count(*) FILTER (WHERE r.quality = 1) AS out_of_range,
           count(*) FILTER (WHERE r.quality = 2) AS faults,
           floor(extract(epoch FROM $__timeTo()::timestamptz - $__timeFrom()::timestamptz)
                 / coalesce(l.interval_s, 60)) AS expected
    FROM readings r
    WHERE r.sensor_id = l.sensor_id AND $__timeFilter(r.time)
) c ON true
WHERE l.site IN ($site)
ORDER BY l.site, l.sensor
""", "table")], (0, 0, 24, 9), description="Completeness: readings received in the range over "
            "the readings the sensor's interval promises. Out of range: quality 1; faults: quality 2."),
        m.timeseries("Readings received", [m.Target("A", f"""
SELECT {time_group("time", "$__interval", timescaledb, alias=True)}, site || '/' || sensor AS metric, count(*) AS readings
FROM dash_readings
WHERE site IN ($site) AND $__timeFilter(time)
GROUP BY 1, 2
ORDER BY 1
""")], (0, 9, 12, 8)),
        m.timeseries("Flagged readings (out of range or fault)", [m.Target("A", f"""
SELECT {time_group("time", "$__interval", timescaledb, alias=True)}, site || '/' || sensor AS metric, count(*) AS flagged
FROM dash_readings
WHERE site IN ($site) AND quality > 0 AND $__timeFilter(time)
GROUP BY 1, 2
ORDER BY 1
""")], (12, 9, 12, 8), draw="bars"),
        m.table("Dead letters", [m.Target("A", """
SELECT source, reason, count(*) AS payloads, max(received_at) AS "last"
FROM dead_letters
WHERE $__timeFilter(received_at)
GROUP BY source, reason
ORDER BY payloads DESC
""", "table")], (0, 17, 24, 7), description="Payloads and rows that could not be used."),
    ]
    return m.Dashboard("sewerwatch-sensor-health", "sewerwatch: Sensor health",
                       "Is every sensor reporting, on time and sane?", panels, [_site_multi()],
                       time_from="now-24h")


def build_all(packs: Packs | None = None, timescaledb: bool = True) -> list[m.Dashboard]:
    """The four dashboards, drawn against the rule packs in ``limits/packs``.

    ``timescaledb``: the database has the extension; without it the time series bucket
    with ``date_bin`` (:func:`time_group`).
    """
    packs = packs or load_packs()
    return [overview(timescaledb), site(packs, timescaledb), lab(packs), sensor_health(timescaledb)]
