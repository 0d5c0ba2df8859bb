"""Grafana's PostgreSQL query expansion, ported so panel SQL can be run without Grafana.

A panel's ``rawSql`` goes through three steps before PostgreSQL sees it, and
:func:`expand` does the same three, in the same order:

1. the browser replaces template variables (``$site``, ``${site}``, ``[[site]]``, and the
   built-in ``$__from``/``$__to`` in epoch milliseconds) with
   the PostgreSQL data source's ``interpolateVariable``: a single-valued variable
   without *All* has its single quotes doubled and nothing else; a multi-valued (or
   *include All*) variable becomes ``'a','b'`` with each value's single quotes
   doubled (grafana ``packages/grafana-sql/src/datasource/SqlDatasource.ts``,
   ``PostgresQueryModel.quoteLiteral``);
2. the server's global SQL substitutions: ``$__interval_ms``, ``$__interval``,
   ``$__unixEpochFrom()``, ``$__unixEpochTo()`` (grafana
   ``pkg/tsdb/grafana-postgresql-datasource/sqleng/sql_engine.go``, ``Interpolate``);
3. the PostgreSQL macro engine (grafana
   ``pkg/tsdb/grafana-postgresql-datasource/macros.go``): ``$__time``,
   ``$__timeEpoch``, ``$__timeFilter``, ``$__timeFrom``, ``$__timeTo``,
   ``$__timeGroup`` / ``$__timeGroupAlias`` (``time_bucket('300.000s',c)`` with
   TimescaleDB, else ``floor(extract(epoch from c)/300)*300``; an optional third
   argument ``NULL``, ``previous`` or a number sets the fill mode),
   ``$__unixEpochFilter``, ``$__unixEpochNanoFilter``, ``$__unixEpochNanoFrom``,
   ``$__unixEpochNanoTo``, ``$__unixEpochGroup`` / ``$__unixEpochGroupAlias``.

Times are written as Go's ``time.RFC3339Nano`` in UTC: ``2018-04-12T18:00:00Z``, the
fraction trimmed of trailing zeros (``...:00.5Z``). Intervals are parsed like Go's
``gtime.ParseInterval`` (Go durations such as ``5m``, ``1h30m``, ``20ms``, plus ``d``,
``w``, ``M``, ``y`` measured from *now* in UTC), and numbers printed as Go's ``%v`` and
``%.3f`` print them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Mapping, Sequence

from foundation.errors import InputError

__all__ = [
    "Expanded", "FillMode", "Variable", "expand", "format_go_float", "format_interval",
    "interpolate_macros", "interpolate_variables", "parse_go_duration", "parse_interval",
    "rfc3339nano",
]

NS_PER_S = 1_000_000_000

# macros.go: rsIdentifier = `([_a-zA-Z0-9]+)`, sExpr = `\$` + rsIdentifier + `\(([^\)]*)\)`
_MACRO = re.compile(r"\$([_a-zA-Z0-9]+)\(([^)]*)\)")

# grafana public/app/features/variables/utils.ts: variableRegex
_VARIABLE = re.compile(
    r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^}]+))?(?::([^}]+))?\}"
)


class MacroError(InputError):
    """A macro Grafana would also refuse (its message is Grafana's)."""


@dataclass(frozen=True)
class FillMode:
    """What ``$__timeGroup(c, interval, fill)`` asks Grafana to fill gaps with.

    Attributes
    ----------
    mode : str
        ``"null"``, ``"previous"`` or ``"value"`` (sqleng ``SetupFillmode``).
    interval_s : float
        The group interval [s].
    value : float or None
        The fill value for ``mode == "value"``.
    """

    mode: str
    interval_s: float
    value: float | None = None


@dataclass(frozen=True)
class Variable:
    """A dashboard template variable's current value, as the browser holds it.

    Parameters
    ----------
    value : str, int, float or sequence of str
        The current value; a list for a multi-value selection; ``"$__all"`` for *All*.
    multi : bool
        The variable allows several values (``multi`` in the dashboard JSON).
    include_all : bool
        The variable offers *All* (``includeAll``).
    all_value : str or None
        The custom *All* value (``allValue``), inserted as is.
    options : sequence of str
        Every value the variable offers, used for *All* without a custom value.
    """

    value: object
    multi: bool = False
    include_all: bool = False
    all_value: str | None = None
    options: Sequence[str] = ()


@dataclass(frozen=True)
class Expanded:
    """The SQL PostgreSQL receives and the fill mode the query asked for."""

    sql: str
    fill: FillMode | None = None


# --- Go formatting -------------------------------------------------------------------


def rfc3339nano(t: datetime) -> str:
    """Format ``t`` in UTC as Go's ``time.RFC3339Nano`` (fraction trimmed, ``Z``).

    Parameters
    ----------
    t : datetime.datetime
        An aware time (a naive one is taken to be UTC).
    """
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    t = t.astimezone(timezone.utc)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        text += "." + f"{t.microsecond:06d}".rstrip("0")
    return text + "Z"


def format_go_float(x: float) -> str:
    """Format ``x`` as Go's ``fmt.Sprintf("%v", x)`` does for a float64.

    Shortest round-trip digits; exponent form when the decimal exponent is below -4
    or at least 6 (``strconv/ftoa.go``: "if precision was the shortest possible, use
    precision 6 for this decision"), with at least two exponent digits.
    """
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if str(x).startswith("-") else "0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    nd = len(ds)
    dp = nd + exponent          # position of the decimal point after the first digit run
    exp = dp - 1
    neg = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        return f"{neg}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{ds}"
    if dp >= nd:
        return f"{neg}{ds}{'0' * (dp - nd)}"
    return f"{neg}{ds[:dp]}.{ds[dp:]}"


def format_interval(ns: int) -> str:
    """Go ``gtime.FormatInterval``: a duration [ns] as ``1y``, ``2d``, ``5m``, ``20ms``."""
    for unit, size in (("y", 365 * 86400 * NS_PER_S), ("d", 86400 * NS_PER_S),
                       ("h", 3600 * NS_PER_S), ("m", 60 * NS_PER_S), ("s", NS_PER_S),
                       ("ms", 1_000_000)):
        if ns >= size:
            return f"{ns // size}{unit}"
    return "1ms"


# --- Go duration parsing -------------------------------------------------------------

_GO_UNITS = {
    "ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
    "s": NS_PER_S, "m": 60 * NS_PER_S, "h": 3600 * NS_PER_S,
}
_GO_TERM = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]+)")
_DATE_UNIT = re.compile(r"^(\d+)([dwMy])$")


def parse_go_duration(text: str) -> int:
    """Parse a Go duration string (``time.ParseDuration``) into nanoseconds.

    Raises
    ------
    MacroError
        With Go's words, ``time: invalid duration "x"`` or ``time: unknown unit``.
    """
    s = text
    neg = False
    if s[:1] in ("-", "+"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise MacroError(f'time: invalid duration "{text}"')
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        m = _GO_TERM.match(s, pos)
        if not m or (not m.group(1) and not m.group(2)):
            raise MacroError(f'time: invalid duration "{text}"')
        unit = m.group(3)
        # Go's unit is the run of non-digit, non-dot characters
        if unit not in _GO_UNITS:
            raise MacroError(f'time: unknown unit "{unit}" in duration "{text}"')
        whole = int(m.group(1) or "0")
        frac = m.group(2) or ""
        value = Fraction(whole) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
        total += value * _GO_UNITS[unit]
        pos = m.end()
    ns = int(total)  # Go truncates the fractional nanoseconds
    if ns > 2**63 - 1:
        raise MacroError(f'time: invalid duration "{text}"')
    return -ns if neg else ns


def _add_date(t: datetime, years: int = 0, months: int = 0, days: int = 0) -> datetime:
    """Go ``time.AddDate``: overflowing days roll into the next month (Jan 31 + 1M = Mar 3)."""
    y, mo = t.year + years, t.month + months
    y += (mo - 1) // 12
    mo = (mo - 1) % 12 + 1
    first = t.replace(year=y, month=mo, day=1)
    return first + timedelta(days=t.day - 1 + days)


def parse_interval(text: str, now: datetime | None = None) -> int:
    """Go ``gtime.ParseInterval``: an interval such as ``5m`` or ``1d`` in nanoseconds.

    ``d``, ``w``, ``M`` and ``y`` are measured from ``now`` (UTC; default the current
    time), so ``1M`` is the length of the month that starts now.
    """
    m = _DATE_UNIT.match(text)
    if not m:
        return parse_go_duration(text)
    num, period = int(m.group(1)), m.group(2)
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    later = {
        "d": lambda: _add_date(now, days=num),
        "w": lambda: _add_date(now, days=num * 7),
        "M": lambda: _add_date(now, months=num),
        "y": lambda: _add_date(now, years=num),
    }[period]()
    delta = later - now
    return (delta.days * 86400 + delta.seconds) * NS_PER_S + delta.microseconds * 1000


# --- step 1: template variables (browser) ---------------------------------------------


def _quote_literal(v: str) -> str:
    return "'" + str(v).replace("'", "''") + "'"


def _sql_interpolate(value, var: Variable) -> str:
    """SqlDatasource.interpolateVariable."""
    if isinstance(value, str):
        if var.multi or var.include_all:
            return _quote_literal(value)
        return value.replace("'", "''")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_go_float(value) if isinstance(value, float) else str(value)
    if isinstance(value, (list, tuple)):
        return ",".join(_quote_literal(v) for v in value)
    return str(value)


def _format(value, fmt: str, name: str) -> str:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if fmt == "raw":
        return ",".join(map(str, values))
    if fmt == "csv":
        return ",".join(map(str, values))
    if fmt == "singlequote":
        return ",".join("'" + str(v).replace("'", "\\'") + "'" for v in values)
    if fmt == "doublequote":
        return ",".join('"' + str(v).replace('"', '\\"') + '"' for v in values)
    if fmt == "sqlstring":
        return ",".join(_quote_literal(v) for v in values)
    if fmt == "pipe":
        return "|".join(map(str, values))
    raise MacroError(f"template variable ${{{name}:{fmt}}}: format {fmt!r} is not supported here "
                     "(supported: raw, csv, singlequote, doublequote, sqlstring, pipe)")


def interpolate_variables(sql: str, variables: Mapping[str, Variable | object]) -> str:
    """Replace template variables as Grafana's browser does for a PostgreSQL query.

    Parameters
    ----------
    sql : str
        The panel's ``rawSql``.
    variables : mapping
        Variable name -> :class:`Variable` (or a bare value: a single-valued variable).
        Names not in the mapping stay as they are, as in Grafana.
    """
    vars_ = {k: (v if isinstance(v, Variable) else Variable(v)) for k, v in variables.items()}

    def repl(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(4)
        fmt = m.group(3) or m.group(6)
        var = vars_.get(name)
        if var is None:
            return m.group(0)
        value = var.value
        if value == "$__all" or value == ["$__all"]:
            if var.all_value is not None:
                return var.all_value
            value = list(var.options)
        if fmt:
            return _format(value, fmt, name)
        return _sql_interpolate(value, var)

    return _VARIABLE.sub(repl, sql)


# --- step 2: global substitutions (server) --------------------------------------------


def _epoch_s(t: datetime) -> int:
    return int(t.astimezone(timezone.utc).timestamp() // 1)


def _epoch_ns(t: datetime) -> int:
    t = t.astimezone(timezone.utc)
    whole = int(t.replace(microsecond=0).timestamp())
    return whole * NS_PER_S + t.microsecond * 1000


def interpolate_global(sql: str, time_from: datetime, time_to: datetime, interval_ns: int) -> str:
    """sqleng ``Interpolate``: ``$__interval_ms``, ``$__interval``, ``$__unixEpochFrom/To()``."""
    sql = sql.replace("$__interval_ms", str(interval_ns // 1_000_000))
    sql = sql.replace("$__interval", format_interval(interval_ns))
    sql = sql.replace("$__unixEpochFrom()", str(_epoch_s(time_from)))
    sql = sql.replace("$__unixEpochTo()", str(_epoch_s(time_to)))
    return sql


# --- step 3: the PostgreSQL macro engine (server) --------------------------------------


def _fill(interval_ns: int, fill: str) -> FillMode:
    """sqleng ``SetupFillmode``."""
    secs = interval_ns / NS_PER_S
    if fill == "NULL":
        return FillMode("null", secs)
    if fill == "previous":
        return FillMode("previous", secs)
    try:
        return FillMode("value", secs, float(fill))
    except ValueError:
        raise MacroError(f"error parsing fill value {fill}") from None


def interpolate_macros(sql: str, time_from: datetime, time_to: datetime, *,
                       timescaledb: bool = True, now: datetime | None = None) -> Expanded:
    """The PostgreSQL macro engine (``postgresMacroEngine.Interpolate``).

    Raises
    ------
    MacroError
        For the first macro Grafana would refuse, with Grafana's message.
    """
    fill: list[FillMode] = []
    errors: list[str] = []
    out: list[str] = []
    last = 0
    for m in _MACRO.finditer(sql):
        name, argtext = m.group(1), m.group(2)
        # pre-5.3 compatibility: "$__timeGroup(...)," means the alias form; Go looks up
        # the FIRST occurrence of the same macro text in the whole query.
        if name == "__timeGroup":
            index = sql.find(m.group(0))
            if index >= 0:
                index += len(m.group(0))
                if len(sql) > index and sql[index] == ",":
                    name = "__timeGroupAlias"
        args = [a.strip(" ") for a in argtext.split(",")]
        try:
            res = _evaluate(name, args, time_from, time_to, timescaledb, now, fill)
        except MacroError as exc:
            if not errors:
                errors.append(str(exc))
            res = "macro_error()"
        out.append(sql[last:m.start()] + res)
        last = m.end()
    if errors:
        raise MacroError(errors[0])
    return Expanded("".join(out) + sql[last:], fill[-1] if fill else None)


def _evaluate(name: str, args: list[str], tf: datetime, tt: datetime, timescaledb: bool,
              now: datetime | None, fill: list[FillMode]) -> str:
    # Go's strings.Split("", ",") gives [""], so "no argument" is one empty argument;
    # the Go code only checks len(args), and so does this port.
    if name == "__time":
        return f'{args[0]} AS "time"'
    if name == "__timeEpoch":
        return f'extract(epoch from {args[0]}) as "time"'
    if name == "__timeFilter":
        return f"{args[0]} BETWEEN '{rfc3339nano(tf)}' AND '{rfc3339nano(tt)}'"
    if name == "__timeFrom":
        return f"'{rfc3339nano(tf)}'"
    if name == "__timeTo":
        return f"'{rfc3339nano(tt)}'"
    if name in ("__timeGroup", "__unixEpochGroup"):
        if len(args) < 2:
            raise MacroError(f"macro {name} needs time column and interval and optional fill value")
        try:
            interval = parse_interval(args[1].strip("'"), now)
        except MacroError:
            raise MacroError(f"error parsing interval {args[1]}") from None
        if len(args) == 3:
            fill.append(_fill(interval, args[2]))
        secs = interval / NS_PER_S
        if name == "__unixEpochGroup":
            return f"floor(({args[0]})/{format_go_float(secs)})*{format_go_float(secs)}"
        if timescaledb:
            return f"time_bucket('{secs:.3f}s',{args[0]})"
        return f"floor(extract(epoch from {args[0]})/{format_go_float(secs)})*{format_go_float(secs)}"
    if name == "__timeGroupAlias":
        return _evaluate("__timeGroup", args, tf, tt, timescaledb, now, fill) + ' AS "time"'
    if name == "__unixEpochGroupAlias":
        return _evaluate("__unixEpochGroup", args, tf, tt, timescaledb, now, fill) + ' AS "time"'
    if name == "__unixEpochFilter":
        return f"{args[0]} >= {_epoch_s(tf)} AND {args[0]} <= {_epoch_s(tt)}"
    if name == "__unixEpochNanoFilter":
        return f"{args[0]} >= {_epoch_ns(tf)} AND {args[0]} <= {_epoch_ns(tt)}"
    if name == "__unixEpochNanoFrom":
        return str(_epoch_ns(tf))
    if name == "__unixEpochNanoTo":
        return str(_epoch_ns(tt))
    raise MacroError(f'unknown macro "{name}"')


# --- all three ------------------------------------------------------------------------


def expand(sql: str, time_from: datetime, time_to: datetime, *,
           variables: Mapping[str, Variable | object] | None = None,
           interval: str | int = "1m", timescaledb: bool = True,
           now: datetime | None = None) -> Expanded:
    """Expand a panel's SQL exactly as Grafana does before sending it to PostgreSQL.

    Parameters
    ----------
    sql : str
        The panel target's ``rawSql``.
    time_from, time_to : datetime.datetime
        The dashboard's time range (aware; naive means UTC).
    variables : mapping, optional
        Template variables (see :func:`interpolate_variables`).
    interval : str or int
        The query interval Grafana computed (``$__interval``): a Go duration string or
        nanoseconds.
    timescaledb : bool
        The data source's ``jsonData.timescaledb``.
    now : datetime.datetime, optional
        The wall time for ``d``/``w``/``M``/``y`` intervals.

    Returns
    -------
    Expanded
        The SQL and the fill mode a ``$__timeGroup`` third argument asked for.
    """
    tf = time_from if time_from.tzinfo else time_from.replace(tzinfo=timezone.utc)
    tt = time_to if time_to.tzinfo else time_to.replace(tzinfo=timezone.utc)
    interval_ns = interval if isinstance(interval, int) else parse_interval(interval, now)
    # the browser's built-ins: $__from and $__to are the range in epoch milliseconds
    builtins = {"__from": _epoch_ns(tf) // 1_000_000, "__to": _epoch_ns(tt) // 1_000_000}
    sql = interpolate_variables(sql, {**builtins, **(variables or {})})
    sql = interpolate_global(sql, tf, tt, interval_ns)
    return interpolate_macros(sql, tf, tt, timescaledb=timescaledb, now=now)

