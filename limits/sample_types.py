"""Lab limits qualified by the type of sample they apply to.

A local-limits table may give one pollutant a limit for each way it is sampled: "Grab
Sample", "Composite Daily Maximum", "30 Day Average" (of composites). A pack's ``lab-limit``
rule and a permit's ``[[limits]]`` entry may therefore name a ``sample_type``: ``grab`` (one
sample taken at one time) or ``composite`` (24 hours of flow- or time-proportional samples);
one that names none applies to any sample. One analyte may carry one limit per sample type
and statistic (``pack check`` refuses two for the same type and statistic).

Which limits judge a result (:func:`judged_by`): those naming its sample type; a result of a
type that no limit of its analyte names is judged by the analyte's limits that name none.
So with a grab limit, a composite limit and a 30-day average of composites for copper, a
grab is judged against the grab limit only and is never part of the composites' average.
A pack whose limits name no sample type judges every result by every limit, as before.

The lab CSV's ``sample_type`` column (``grab`` or ``composite``; the store's default
``grab``) and the portal's self-monitoring form say what a result is; a permit's monitoring
types (``composite-24h-flow``, ``composite-24h-time``) read as ``composite``
(:func:`of_result`).
"""

from __future__ import annotations

import numpy as np

#: the sample types a limit may name
SAMPLE_TYPES = ("grab", "composite")

#: a sample type -> the words for one sample of it ("in a grab sample")
ONE = {"grab": "a grab sample", "composite": "a composite sample"}
#: a sample type -> the words for several ("an average of composite samples")
MANY = {"grab": "grab samples", "composite": "composite samples"}


def of_result(kind: str | None) -> str:
    """The sample type of a stored or typed result as a limit names it: ``grab`` or
    ``composite`` (``composite-24h-flow`` and ``composite-24h-time`` are composites); the
    store's default, ``grab``, where none is given."""
    k = (kind or "").strip().lower()
    if k.startswith("composite"):
        return "composite"
    return k or "grab"


def named(limits, analyte: str) -> frozenset[str]:
    """The sample types the limits of ``analyte`` among ``limits`` name (anything with
    ``analyte`` and ``sample_type`` attributes)."""
    return frozenset(x.sample_type for x in limits if x.analyte == analyte and getattr(x, "sample_type", None))


def judged_by(types: np.ndarray, limit_type: str | None, types_named: frozenset[str]) -> np.ndarray:
    """Which results (their sample types, :func:`of_result`) a limit judges.

    Parameters
    ----------
    types : numpy.ndarray of str
        Each result's sample type.
    limit_type : str or None
        The type the limit names (None: it names none).
    types_named : frozenset of str
        The types the analyte's limits name (:func:`named`).

    Returns
    -------
    numpy.ndarray of bool
        A limit naming a type judges the results of that type; one naming none those of the
        types no limit of the analyte names.
    """
    t = np.asarray([of_result(x) for x in types], dtype=object)
    if limit_type is not None:
        return t == limit_type
    if not types_named:
        return np.ones(len(t), dtype=bool)
    return ~np.isin(t, list(types_named))


def applies_to(limit_type: str | None, result_type: str | None, types_named: frozenset[str]) -> bool:
    """Whether a limit naming ``limit_type`` judges one result of ``result_type``."""
    return bool(judged_by(np.asarray([result_type or ""], dtype=object), limit_type, types_named)[0])


def in_words(sample_type: str | None, statistic: str | None) -> str:
    """What a limit applies to, for a limit naming a sample type: ``in a grab sample`` (each
    result), ``as a monthly average of composite samples``; ``""`` for one naming none (the
    statistic's own words serve, :data:`limits.statements.FORMS`)."""
    if not sample_type:
        return ""
    if statistic in (None, "each", "reading"):
        return f"in {ONE[sample_type]}"
    form = {"daily-maximum": "as a daily maximum", "monthly-average": "as a monthly average",
            "period-average": "as an average over the period", "rolling-30-day": "as a rolling 30-day average",
            "weekly-average": "as a weekly average"}.get(statistic, "as an average")
    return f"{form} of {MANY[sample_type]}"
