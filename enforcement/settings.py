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
    submitter_id = "PALMYRAWWTP"       # the submitter's EPA CDX account (the header's Id, 3 to 30)
    submitter_organization = "Village of Palmyra Wastewater Utility"   # the header's Organization
                                       # (default: [utility] name)
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

from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo, model_validator

from foundation.errors import ConfigError
from foundation.schema import Internal, OneOf, Table, beside, check, dotted, fail, is_int, is_number, table, validate
from limits.readings import Readings, readings

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


Day = Annotated[date, check(lambda v: isinstance(v, date) and not hasattr(v, "hour"), "a date such as 2019-06-03",
                            got=repr)]
SiteIds = Annotated[tuple[str, ...], check(lambda v: isinstance(v, (list, tuple)) and
                                           all(isinstance(x, str) and x for x in v),
                                           "a list of site ids", lambda v: tuple(dict.fromkeys(v)), repr)]


@table
class Program(Table):
    """The pretreatment program's facts the state's electronic report needs, that no
    measurement gives (``[enforcement.program]``; see the module docstring)."""

    npdes_permit: Annotated[str, check(lambda v: isinstance(v, str) and len(v) == 9 and "*" not in v,
                                       "the 9 characters of an NPDES permit such as WI0020231", got=repr)] | None = None
    """The POTW's NPDES permit (PermitIdentifier)."""
    submitter_id: Annotated[str, check(lambda v: isinstance(v, str) and 3 <= len(v.strip()) == len(v) <= 30,
                                       "the user id of the submitter's EPA CDX account, 3 to 30 characters "
                                       "without spaces around it", got=repr)] | None = None
    """The user id of the EPA Central Data Exchange (CDX) account the summary is submitted under
    (the submission header's ``Id``); a file is not written without it."""
    submitter_organization: Annotated[str, check(lambda v: isinstance(v, str) and 1 <= len(v.strip()) <= 200,
                                                 "the organisation's name (1 to 200 characters)",
                                                 got=repr)] | None = None
    """The organisation the submitter works for (the header's ``Organization``); None: the
    utility's name (``[utility] name``)."""
    ordinance: Annotated[str, check(lambda v: isinstance(v, str) and 1 <= len(v) <= 15,
                                    "the ordinance's reference in 1 to 15 characters (e.g. 'Ch. 13')",
                                    got=repr)] | None = None
    """The sewer use ordinance (SUOReference)."""
    ordinance_adopted: Day | None = None
    """SUODate."""
    significant_users: SiteIds | None = None
    """The significant industrial users (40 CFR 403.3(v)); None: every user with a discharge permit
    on record (a permit under the ordinance's thresholds, e.g. palmyra-wi §13.54(1), is the control
    mechanism 40 CFR 403.8(f)(1)(iii) requires of significant users)."""
    categorical_users: SiteIds | None = None
    """Those subject to categorical standards (NumberCIUs); None: not known (NumberCIUs and
    CIUsInSNC are left out)."""
    local_limits_evaluated: Day | None = None
    """When the local limits were last evaluated."""
    local_limits_adopted: Day | None = None
    """When they were adopted."""
    local_limits_pollutants: Annotated[tuple[int, ...], check(
        lambda v: isinstance(v, (list, tuple)) and all(is_int(x) and 0 <= x < 10 ** 10 for x in v),
        "a list of ICIS pollutant codes (whole numbers)", tuple, repr)] = ()
    """ICIS pollutant codes of the local limits."""

    @model_validator(mode="after")
    def _categorical_are_significant(self):
        cats, sius = self.categorical_users, self.significant_users
        if cats is not None and sius is not None and set(cats) - set(sius):
            raise fail(("categorical_users",), f"{sorted(set(cats) - set(sius))[0]!r} is not among the "
                       "significant_users (a categorical user is a significant one, 40 CFR 403.3(v)(1)(i))")
        return self


def _guide(v, info: ValidationInfo):
    if isinstance(v, Path):
        return v
    if not isinstance(v, str) or not v:
        raise fail((), f"expected the path of a guide file, got {v!r}")
    return beside(v, info)


def _month_day(v):
    if isinstance(v, tuple):
        return v
    try:
        m, d = (int(x) for x in str(v).split("-"))
        date(2024, m, d)                      # a leap year: 02-29 is a date
    except ValueError:
        raise fail((), f"expected a month and day such as \"03-31\", got {v!r}") from None
    return m, d


def _program(v):
    if not isinstance(v, (dict, Program)):
        raise fail((), "expected a table ([enforcement.program])")
    return v


@table(kw_only=True)
class Settings(Table):
    """The enforcement settings of a utility (the ``[enforcement]`` table; see the module docstring)."""

    guide: Annotated[Path, BeforeValidator(_guide)] = DEFAULT_GUIDE
    """The enforcement response guide (a TOML file, :mod:`enforcement.guide`)."""
    accidental_report_hours: Annotated[float, check(lambda v: is_number(v) and 0 < v <= 24 * 30,
                                                    "hours, more than 0 and at most 720", float, repr)] = \
        DEFAULT_ACCIDENTAL_REPORT_HOURS
    """Hours after an alert that an accidental-discharge report is due [h]."""
    snc_periods: OneOf(*SNC_PERIODS) = "halves"
    """``halves`` (January-June, July-December) or ``rolling-quarters`` (the six months ending with
    each calendar quarter)."""
    late_report_period: OneOf(*LATE_REPORT_PERIODS) = "late"
    """``late`` or ``due`` (:data:`LATE_REPORT_PERIODS`)."""
    annual_report_due: Annotated[tuple[int, int], BeforeValidator(_month_day)] = (3, 31)
    """Month and day the annual pretreatment report for the year before is due (40 CFR 403.12(i):
    "at least once a year"; the Approval Authority sets the date)."""
    program: Annotated[Program, BeforeValidator(_program)] = Program()
    """The program's facts for the state's electronic report (``[enforcement.program]``)."""
    daily_maximum: Any = None
    """How a daily maximum is judged (checked by :func:`limits.readings.readings`)."""
    average_days: Any = None
    """Which days an average's violation has (checked by :func:`limits.readings.readings`)."""
    readings: Internal = Readings()
    """How a daily maximum is judged and which days an average's violation has."""


def settings(cfg) -> Settings:
    """The validated ``[enforcement]`` settings of a config (defaults where it has none)."""
    path = getattr(cfg, "path", "<config>")
    base = Path(path).resolve().parent if Path(path).is_file() else Path.cwd()
    st = validate(Settings, getattr(cfg, "enforcement", {}) or {}, path, ConfigError, context={"base": base},
                  label=lambda loc: f"enforcement.{dotted(loc)}")
    return replace(st, readings=readings(cfg))
