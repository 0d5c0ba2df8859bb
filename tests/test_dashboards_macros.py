"""dashboards.macros against the examples in Grafana's own macro tests.

The cases come from grafana ``pkg/tsdb/grafana-postgresql-datasource/macros_test.go``
(time range 2018-04-12 18:00 to 18:05 UTC, and the 1960/1965/1980 ranges) and from the
SQL data source's variable interpolation (``SqlDatasource.interpolateVariable``).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dashboards.macros import (
    MacroError, Variable, expand, format_go_float, format_interval, interpolate_macros,
    interpolate_variables, parse_go_duration, parse_interval, rfc3339nano,
)

UTC = timezone.utc
FROM = datetime(2018, 4, 12, 18, 0, 0, tzinfo=UTC)
TO = FROM + timedelta(minutes=5)


def plain(sql, tf=FROM, tt=TO):
    return interpolate_macros(sql, tf, tt, timescaledb=False).sql


def ts(sql, tf=FROM, tt=TO):
    return interpolate_macros(sql, tf, tt, timescaledb=True).sql


def test_time_and_time_epoch():
    assert plain("select $__time(time_column)") == 'select time_column AS "time"'
    assert plain("select min($__time(time_column))") == 'select min(time_column AS "time")'
    assert plain("select $__timeEpoch(t)") == 'select extract(epoch from t) as "time"'


def test_time_filter_from_to():
    assert plain("WHERE $__timeFilter(time_column)") == \
        "WHERE time_column BETWEEN '2018-04-12T18:00:00Z' AND '2018-04-12T18:05:00Z'"
    assert plain("select $__timeFrom()") == "select '2018-04-12T18:00:00Z'"
    assert plain("select $__timeTo()") == "select '2018-04-12T18:05:00Z'"


def test_time_group_pre_5_3_compatibility_adds_alias_before_a_comma():
    assert plain("SELECT $__timeGroup(time_column,'5m'), value") == \
        'SELECT floor(extract(epoch from time_column)/300)*300 AS "time", value'
    assert plain("SELECT $__timeGroup(time_column,'5m') as time, value") == \
        "SELECT floor(extract(epoch from time_column)/300)*300 as time, value"


def test_time_group_and_alias():
    sql = plain("SELECT $__timeGroup(time_column,'5m')")
    assert sql == "SELECT floor(extract(epoch from time_column)/300)*300"
    assert plain("SELECT $__timeGroupAlias(time_column,'5m')") == sql + ' AS "time"'
    spaced = plain("$__timeGroup(time_column , '5m')")
    assert spaced == "floor(extract(epoch from time_column)/300)*300"
    assert plain("$__timeGroupAlias(time_column , '5m')") == spaced + ' AS "time"'


def test_time_group_timescaledb():
    assert ts("GROUP BY $__timeGroup(time_column,'5m')") == "GROUP BY time_bucket('300.000s',time_column)"
    assert ts("GROUP BY $__timeGroup(time_column , '5m')") == "GROUP BY time_bucket('300.000s',time_column)"
    assert ts("GROUP BY $__timeGroup(time_column , '12d')") == "GROUP BY time_bucket('1036800.000s',time_column)"
    assert ts("GROUP BY $__timeGroup(time_column , '20ms')") == "GROUP BY time_bucket('0.020s',time_column)"
    assert ts("SELECT $__timeGroupAlias(time, '1h')") == "SELECT time_bucket('3600.000s',time) AS \"time\""


def test_unix_epoch_macros():
    assert plain("select $__unixEpochFilter(time)") == \
        f"select time >= {int(FROM.timestamp())} AND time <= {int(TO.timestamp())}"
    assert plain("select $__unixEpochNanoFilter(time)") == \
        f"select time >= {int(FROM.timestamp()) * 10**9} AND time <= {int(TO.timestamp()) * 10**9}"
    assert plain("select $__unixEpochNanoFrom()") == f"select {int(FROM.timestamp()) * 10**9}"
    assert plain("select $__unixEpochNanoTo()") == f"select {int(TO.timestamp()) * 10**9}"
    sql = plain("SELECT $__unixEpochGroup(time_column+time_adjustment,'5m')")
    assert sql == "SELECT floor((time_column+time_adjustment)/300)*300"
    assert plain("SELECT $__unixEpochGroupAlias(time_column+time_adjustment,'5m')") == sql + ' AS "time"'


@pytest.mark.parametrize("tf,tt", [
    (datetime(1960, 2, 1, 7, tzinfo=UTC), datetime(1965, 2, 3, 8, tzinfo=UTC)),
    (datetime(1960, 2, 1, 7, tzinfo=UTC), datetime(1980, 2, 3, 8, tzinfo=UTC)),
])
def test_ranges_before_1970(tf, tt):
    assert plain("WHERE $__timeFilter(time_column)", tf, tt) == \
        f"WHERE time_column BETWEEN '{tf:%Y-%m-%dT%H:%M:%SZ}' AND '{tt:%Y-%m-%dT%H:%M:%SZ}'"
    assert plain("select $__unixEpochFilter(time)", tf, tt) == \
        f"select time >= {int(tf.timestamp())} AND time <= {int(tt.timestamp())}"
    assert plain("select $__unixEpochNanoFilter(time)", tf, tt) == \
        f"select time >= {int(tf.timestamp()) * 10**9} AND time <= {int(tt.timestamp()) * 10**9}"


def test_half_second_fraction_is_trimmed():
    tf = datetime(1960, 2, 1, 7, 0, 0, 500000, tzinfo=UTC)
    tt = datetime(1980, 2, 3, 8, 0, 0, 500000, tzinfo=UTC)
    assert rfc3339nano(tf) == "1960-02-01T07:00:00.5Z"
    assert rfc3339nano(tt) == "1980-02-03T08:00:00.5Z"
    assert plain("WHERE $__timeFilter(c)", tf, tt) == \
        "WHERE c BETWEEN '1960-02-01T07:00:00.5Z' AND '1980-02-03T08:00:00.5Z'"
    # before 1970 the nanosecond epoch floors the seconds, as Go's Time.UnixNano does
    assert plain("select $__unixEpochNanoFrom()", tf, tt) == \
        f"select {int((tf - timedelta(microseconds=500000)).timestamp()) * 10**9 + 500_000_000}"


def test_rfc3339_converts_to_utc():
    t = datetime(2026, 3, 1, 6, 30, 0, 120000, tzinfo=timezone(timedelta(hours=-6)))
    assert rfc3339nano(t) == "2026-03-01T12:30:00.12Z"


def test_fill_modes():
    assert interpolate_macros("$__timeGroup(t,'5m',NULL)", FROM, TO).fill.mode == "null"
    prev = interpolate_macros("$__timeGroup(t,'1h', previous)", FROM, TO).fill
    assert (prev.mode, prev.interval_s) == ("previous", 3600.0)
    val = interpolate_macros("$__timeGroupAlias(t,'5m', 1.5)", FROM, TO).fill
    assert (val.mode, val.value) == ("value", 1.5)
    with pytest.raises(MacroError, match="error parsing fill value zero"):
        interpolate_macros("$__timeGroup(t,'5m',zero)", FROM, TO)


def test_errors_are_grafanas():
    with pytest.raises(MacroError, match='unknown macro "__nope"'):
        plain("select $__nope(x)")
    with pytest.raises(MacroError, match="macro __timeGroup needs time column and interval"):
        plain("select $__timeGroup(x)")
    with pytest.raises(MacroError, match="error parsing interval '5parsecs'"):
        plain("select $__timeGroup(x,'5parsecs')")


def test_go_float_formatting():
    assert format_go_float(300.0) == "300"
    assert format_go_float(0.02) == "0.02"
    assert format_go_float(999999.0) == "999999"
    assert format_go_float(1036800.0) == "1.0368e+06"
    assert format_go_float(1234567.0) == "1.234567e+06"
    assert format_go_float(0.0001) == "0.0001"
    assert format_go_float(0.00001) == "1e-05"
    assert plain("$__timeGroup(t,'12d')") == "floor(extract(epoch from t)/1.0368e+06)*1.0368e+06"


def test_go_durations_and_intervals():
    assert parse_go_duration("1h30m") == 5400 * 10**9
    assert parse_go_duration("1.5h") == 5400 * 10**9
    assert parse_go_duration("20ms") == 20 * 10**6
    assert parse_go_duration("-2s") == -2 * 10**9
    assert parse_go_duration("0") == 0
    with pytest.raises(MacroError):
        parse_go_duration("5")
    now = datetime(2026, 1, 31, 12, tzinfo=UTC)
    assert parse_interval("1d", now) == 86400 * 10**9
    assert parse_interval("2w", now) == 14 * 86400 * 10**9
    # Go AddDate: Jan 31 + 1 month normalises to Mar 3 (2026 is not a leap year)
    assert parse_interval("1M", now) == 31 * 86400 * 10**9
    assert parse_interval("1y", now) == 365 * 86400 * 10**9
    assert format_interval(300 * 10**9) == "5m"
    assert format_interval(90 * 10**9) == "1m"
    assert format_interval(10**6) == "1ms"
    assert format_interval(1) == "1ms"


def test_variables_single_value_doubles_quotes_only():
    assert interpolate_variables("WHERE key = '$site'", {"site": "o'brien"}) == "WHERE key = 'o''brien'"
    assert interpolate_variables("WHERE key = '${site}'", {"site": "acme"}) == "WHERE key = 'acme'"
    assert interpolate_variables("WHERE key = '[[site]]'", {"site": "acme"}) == "WHERE key = 'acme'"
    # unknown variables and macros stay untouched for the later steps
    assert interpolate_variables("$other $__timeFilter(t)", {"site": "x"}) == "$other $__timeFilter(t)"
    # \w+ is greedy: $site_id is another variable
    assert interpolate_variables("$site_id", {"site": "x"}) == "$site_id"
    assert interpolate_variables("id = $n", {"n": 5}) == "id = 5"


def test_variables_multi_and_all():
    multi = Variable(["acme", "o'brien"], multi=True)
    assert interpolate_variables("key IN ($site)", {"site": multi}) == "key IN ('acme','o''brien')"
    one_of_multi = Variable("acme", multi=True)
    assert interpolate_variables("key IN ($site)", {"site": one_of_multi}) == "key IN ('acme')"
    all_ = Variable("$__all", multi=True, include_all=True, options=("a", "b"))
    assert interpolate_variables("key IN ($site)", {"site": all_}) == "key IN ('a','b')"
    custom = Variable("$__all", include_all=True, all_value="%")
    assert interpolate_variables("key LIKE '$site'", {"site": custom}) == "key LIKE '%'"
    assert interpolate_variables("${site:csv}", {"site": multi}) == "acme,o'brien"
    assert interpolate_variables("${site:sqlstring}", {"site": multi}) == "'acme','o''brien'"
    with pytest.raises(MacroError, match="format 'glob' is not supported"):
        interpolate_variables("${site:glob}", {"site": multi})


def test_expand_runs_the_three_steps_in_grafanas_order():
    out = expand(
        "SELECT $__timeGroupAlias(time, $__interval), avg(value) FROM r "
        "WHERE $__timeFilter(time) AND site IN ($site) AND $__interval_ms > 0 "
        "AND extract(epoch from time) >= $__unixEpochFrom()",
        FROM, TO, variables={"site": Variable(["a"], multi=True)}, interval="30s")
    assert out.sql == (
        "SELECT time_bucket('30.000s',time) AS \"time\", avg(value) FROM r "
        "WHERE time BETWEEN '2018-04-12T18:00:00Z' AND '2018-04-12T18:05:00Z' AND site IN ('a') "
        f"AND 30000 > 0 AND extract(epoch from time) >= {int(FROM.timestamp())}")


def test_builtin_from_and_to_are_epoch_milliseconds():
    tf = FROM.replace(microsecond=250000)
    out = expand("WHERE t >= to_timestamp($__from / 1000.0) AND t <= to_timestamp(${__to} / 1000.0)", tf, TO)
    assert out.sql == (f"WHERE t >= to_timestamp({int(FROM.timestamp()) * 1000 + 250} / 1000.0) "
                       f"AND t <= to_timestamp({int(TO.timestamp()) * 1000} / 1000.0)")
    # $__timeFrom() is a macro, not the $__from variable
    assert expand("$__timeFrom()", FROM, TO).sql == "'2018-04-12T18:00:00Z'"
