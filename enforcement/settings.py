"""The ``[enforcement]`` table of the utility's config, validated.

::

    [enforcement]
    guide = "guides/palmyra.toml"      # the enforcement response guide (default: the one shipped,
                                       # enforcement/guides/epa-erp.toml); relative to the config
    accidental_report_hours = 24       # an accidental-discharge report is due this long after the
                                       # alert that calls for it (palmyra-wi §13.49: "immediately")
    snc_periods = "halves"             # or "rolling-quarters": six months ending with each quarter
    late_report_period = "late"        # or "due": which SNC period a report 45 days late counts in
    daily_maximum = "day-mean"         # or "each-sample" (limits.readings)
    average_days = "sampled"           # or "period" (limits.readings)
    annual_report_due = "03-31"        # the annual report for the year before is due (the
                                       # Approval Authority's date; the compliance calendar shows it)

    [enforcement.program]              # what the state's electronic report needs (ICIS-NPDES)
    npdes_permit = "WI0020231"         # the POTW's NPDES permit (PermitIdentifier: 9 characters)
    ordinance = "Ch. 13"               # the sewer use ordinance (SUOReference, at most 15)
    ordinance_adopted = 2019-06-03     # SUODate
    significant_users = ["plating"]    # the significant industrial users (40 CFR 403.3(v));
                                       # default: every user with a discharge permit on record
    categorical_users = ["plating"]    # those subject to categorical standards (NumberCIUs)
    local_limits_evaluated = 2018-10-01
    local_limits_adopted = 2019-06-03
    local_limits_pollutants = [1042]   # ICIS pollutant codes of the local limits

Every error names the file and the key (``village.toml: enforcement.snc_periods: expected
one of halves, rolling-quarters, got 'monthly'``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from foundation.errors import ConfigError
from limits.readings import CHOICES as READING_CHOICES
from limits.readings import Readings, readings

READING_KEYS = tuple(READING_CHOICES)

#: Where the shipped enforcement response guide is.
DEFAULT_GUIDE = Path(__file__).resolve().parent / "guides" / "epa-erp.toml"

#: palmyra-wi, 003_44f871d49a02d8f5.txt §13.49: "shall immediately report such discharge to the
#: Approving Authority". "Immediately" is not a number: the report is due this many hours after
#: the alert that calls for it unless the config says otherwise (the 24 hours of 40 CFR
#: 403.12(g)(2), within which a user who finds a violation must notify the Control Authority).
DEFAULT_ACCIDENTAL_REPORT_HOURS = 24.0

#: How SNC's six-month periods run (40 CFR 403.8(f)(2)(viii)(A), (B): "during a six-month period").
SNC_PERIODS = ("halves", "rolling-quarters")

#: Which SNC period a report more than 45 days late counts in (40 CFR 403.8(f)(2)(viii)(F):
#: "Failure to provide, within 45 days after the due date, required reports"), where the due
#: date lies in one period and day 46 in the next: ``late`` (the default), the period holding
#: day 46, when the failure happened (before it the report was not late); ``due``, the period
#: holding the due date, whose report it was.
LATE_REPORT_PERIODS = ("late", "due")

KEYS = ("guide", "accidental_report_hours", "snc_periods", "late_report_period", "annual_report_due",
        "program", *READING_KEYS)
PROGRAM_KEYS = ("npdes_permit", "ordinance", "ordinance_adopted", "significant_users", "categorical_users",
                "local_limits_evaluated", "local_limits_adopted", "local_limits_pollutants")


@dataclass(frozen=True)
class Program:
    """The pretreatment program's facts the state's electronic report needs, that no
    measurement gives (``[enforcement.program]``; see the module docstring).

    ``significant_users`` None: every user with a discharge permit on record is taken as
    significant (a permit under the ordinance's thresholds, e.g. palmyra-wi §13.54(1), is
    the control mechanism 40 CFR 403.8(f)(1)(iii) requires of significant users).
    ``categorical_users`` None: not known (NumberCIUs and CIUsInSNC are left out).
    """

    npdes_permit: str | None = None
    ordinance: str | None = None
    ordinance_adopted: date | None = None
    significant_users: tuple[str, ...] | None = None
    categorical_users: tuple[str, ...] | None = None
    local_limits_evaluated: date | None = None
    local_limits_adopted: date | None = None
    local_limits_pollutants: tuple[int, ...] = ()


@dataclass(frozen=True)
class Settings:
    """The enforcement settings of a utility.

    Attributes
    ----------
    guide : Path
        The enforcement response guide (a TOML file, :mod:`enforcement.guide`).
    accidental_report_hours : float
        Hours after an alert that an accidental-discharge report is due [h].
    snc_periods : str
        ``halves`` (January-June, July-December) or ``rolling-quarters`` (the six months
        ending with each calendar quarter).
    late_report_period : str
        ``late`` or ``due`` (:data:`LATE_REPORT_PERIODS`).
    readings : limits.readings.Readings
        How a daily maximum is judged and which days an average's violation has.
    annual_report_due : (int, int)
        Month and day the annual pretreatment report for the year before is due (40 CFR
        403.12(i): "at least once a year"; the Approval Authority sets the date).
    program : Program
        The program's facts for the state's electronic report (``[enforcement.program]``).
    """

    guide: Path = DEFAULT_GUIDE
    accidental_report_hours: float = DEFAULT_ACCIDENTAL_REPORT_HOURS
    snc_periods: str = "halves"
    late_report_period: str = "late"
    readings: Readings = field(default_factory=Readings)
    annual_report_due: tuple[int, int] = (3, 31)
    program: Program = field(default_factory=Program)


def _program(path, t) -> Program:
    """``[enforcement.program]``, validated (every error names the file and the key)."""
    if not isinstance(t, dict):
        raise ConfigError(path, "enforcement.program", "expected a table ([enforcement.program])")
    out = {}
    for k, v in t.items():
        where = f"enforcement.program.{k}"
        if k not in PROGRAM_KEYS:
            raise ConfigError(path, where, f"unknown key (expected one of: {', '.join(PROGRAM_KEYS)})")
        if k == "npdes_permit":
            if not isinstance(v, str) or len(v) != 9 or "*" in v:
                raise ConfigError(path, where, f"expected the 9 characters of an NPDES permit such as WI0020231, "
                                  f"got {v!r}")
        elif k == "ordinance":
            if not isinstance(v, str) or not 1 <= len(v) <= 15:
                raise ConfigError(path, where, f"expected the ordinance's reference in 1 to 15 characters (e.g. "
                                  f"'Ch. 13'), got {v!r}")
        elif k in ("ordinance_adopted", "local_limits_evaluated", "local_limits_adopted"):
            if not isinstance(v, date) or hasattr(v, "hour"):
                raise ConfigError(path, where, f"expected a date such as 2019-06-03, got {v!r}")
        elif k in ("significant_users", "categorical_users"):
            if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
                raise ConfigError(path, where, f"expected a list of site ids, got {v!r}")
            v = tuple(dict.fromkeys(v))
        elif k == "local_limits_pollutants":
            if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                                  and 0 <= x < 10 ** 10 for x in v):
                raise ConfigError(path, where, f"expected a list of ICIS pollutant codes (whole numbers), got {v!r}")
            v = tuple(v)
        out[k] = v
    cats, sius = out.get("categorical_users"), out.get("significant_users")
    if cats is not None and sius is not None and set(cats) - set(sius):
        raise ConfigError(path, "enforcement.program.categorical_users",
                          f"{sorted(set(cats) - set(sius))[0]!r} is not among the significant_users (a categorical "
                          "user is a significant one, 40 CFR 403.3(v)(1)(i))")
    return Program(**out)


def settings(cfg) -> Settings:
    """The validated ``[enforcement]`` settings of a config (defaults where it has none)."""
    t = getattr(cfg, "enforcement", {}) or {}
    path = getattr(cfg, "path", "<config>")
    for k in t:
        if k not in KEYS:
            raise ConfigError(path, f"enforcement.{k}", f"unknown key (expected one of: {', '.join(KEYS)})")
    out = {}
    if "guide" in t:
        g = t["guide"]
        if not isinstance(g, str) or not g:
            raise ConfigError(path, "enforcement.guide", f"expected the path of a guide file, got {g!r}")
        base = Path(path).resolve().parent if Path(path).is_file() else Path.cwd()
        p = (base / g).resolve()
        if not p.is_file():
            raise ConfigError(path, "enforcement.guide", f"no such file {g!r} (looked for {p})")
        out["guide"] = p
    if "accidental_report_hours" in t:
        h = t["accidental_report_hours"]
        if isinstance(h, bool) or not isinstance(h, (int, float)) or not 0 < h <= 24 * 30:
            raise ConfigError(path, "enforcement.accidental_report_hours",
                              f"expected hours, more than 0 and at most 720, got {h!r}")
        out["accidental_report_hours"] = float(h)
    if "snc_periods" in t:
        if t["snc_periods"] not in SNC_PERIODS:
            raise ConfigError(path, "enforcement.snc_periods",
                              f"expected one of {', '.join(SNC_PERIODS)}, got {t['snc_periods']!r}")
        out["snc_periods"] = t["snc_periods"]
    if "late_report_period" in t:
        if t["late_report_period"] not in LATE_REPORT_PERIODS:
            raise ConfigError(path, "enforcement.late_report_period",
                              f"expected one of {', '.join(LATE_REPORT_PERIODS)}, got {t['late_report_period']!r}")
        out["late_report_period"] = t["late_report_period"]
    out["readings"] = readings(cfg)
    if "annual_report_due" in t:
        v = t["annual_report_due"]
        try:
            m, d = (int(x) for x in str(v).split("-"))
            date(2024, m, d)                      # a leap year: 02-29 is a date
        except ValueError:
            raise ConfigError(path, "enforcement.annual_report_due",
                              f"expected a month and day such as \"03-31\", got {v!r}") from None
        out["annual_report_due"] = (m, d)
    if "program" in t:
        out["program"] = _program(path, t["program"])
    return Settings(**out)
