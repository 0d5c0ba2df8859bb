"""Surcharges on high-strength waste, EPA Model No. 2 (formula kind ``epa-model-2``).

Surcharge = [Bc·B + Sc·S + Pc·P + Nc·N]·Vu, with B, S, P, N the user's concentrations of
BOD, suspended solids, phosphorus and nitrogen above the base (normal sewage), Bc ... the
cost per pound, Vu the user's volume. Pounds of an excess = volume [MG] × excess [mg/l] ×
8.34 [lb per MG per mg/l]. The period's average concentration is compared with the base;
a non-detect counts as zero unless another policy is chosen.

The bases and the citation come from the pack that adopts the formula (``[[charges]]``
with ``formula = "epa-model-2"``, its ``normal-strength`` rules); see :mod:`lab.charges`.

References
----------
palmyra-wi, 003_44f871d49a02d8f5.txt §13.45(4)(a) (Model No. 2, Federal Register vol. 39
no. 29, 11 February 1974, p. 5270); §13.43 NORMAL SEWAGE (its bases).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from foundation.errors import InputError
from lab.formulas.money import cents
from lab.formulas.nondetect import DEFAULT_BILLING, substitute

#: pounds in one million US gallons of water at 1 mg/l (8.34 lb/gal × 1e6 gal × 1e-6)
LB_PER_MG_MGL = 8.34


def excess_pounds(volume_mg, average_mg_l, base_mg_l):
    """Pounds of an analyte above the base.

    Parameters
    ----------
    volume_mg : array_like
        Volume discharged [million gallons].
    average_mg_l : array_like
        Average concentration over the period [mg/l].
    base_mg_l : array_like
        Normal-sewage concentration [mg/l].

    Returns
    -------
    numpy.ndarray
        volume × max(average − base, 0) × 8.34 [lb].
    """
    excess = np.maximum(np.asarray(average_mg_l, dtype=np.float64) - np.asarray(base_mg_l, dtype=np.float64), 0.0)
    return np.asarray(volume_mg, dtype=np.float64) * excess * LB_PER_MG_MGL


@dataclass(frozen=True)
class AnalyteCharge:
    analyte: str
    average_mg_l: float
    base_mg_l: float
    pounds: float
    rate: float
    dollars: float
    n: int
    n_non_detect: int
    citation: str

    def as_json(self) -> dict:
        # pounds and averages to 1e-6 / 1e-9 so float noise (625.5000000000001) does not show
        return {"average_mg_l": round(self.average_mg_l, 9), "base_mg_l": self.base_mg_l,
                "pounds": round(self.pounds, 6), "dollars": self.dollars, "rate_per_lb": self.rate,
                "results": self.n, "non_detects": self.n_non_detect, "base_citation": self.citation}


@dataclass(frozen=True)
class SiteSurcharge:
    site: str
    volume_mg: float
    analytes: dict[str, AnalyteCharge] = field(default_factory=dict)
    citation: str = ""

    @property
    def total_dollars(self) -> float:
        return cents(sum(a.dollars for a in self.analytes.values()))

    def as_json(self) -> dict:
        return {"site": self.site, "volume_mg": self.volume_mg,
                "analytes": {k: a.as_json() for k, a in self.analytes.items()},
                "total_dollars": self.total_dollars, "citation": self.citation}


def model_2_surcharge(site: str, volume_mg: float, results: dict[str, tuple[np.ndarray, np.ndarray]],
                      rates: dict[str, float], bases: dict[str, tuple[float, str]], citation: str,
                      non_detect: str = DEFAULT_BILLING, rates_source: str = "rates") -> SiteSurcharge:
    """The surcharge of one site for one billing period: [Bc·B + Sc·S + Pc·P + Nc·N]·Vu.

    Parameters
    ----------
    site : str
        Site id.
    volume_mg : float
        The period's volume Vu [million gallons].
    results : dict
        analyte -> (values [mg/l], non-detect flags); analytes without a base (FOG,
        cyanide) are ignored.
    rates : dict
        analyte -> cost per pound Bc, Sc, Pc, Nc [$/lb].
    bases : dict
        analyte -> (normal strength [mg/l], its citation), in the order charged.
    citation : str
        Where the ordinance adopts the formula.
    non_detect : str
        Non-detect policy (:mod:`lab.formulas.nondetect`), default ``zero``.
    rates_source : str
        Name of the rates file, for messages.

    Returns
    -------
    SiteSurcharge
        Per analyte the period's average, its base, the excess pounds and the dollars
        (rounded to the cent); the total is the sum of the rounded analytes.

    Raises
    ------
    InputError
        When a surchargeable analyte has results but no rate.
    """
    charges: dict[str, AnalyteCharge] = {}
    for analyte, (base, base_citation) in bases.items():
        if analyte not in results or len(results[analyte][0]) == 0:
            continue
        if analyte not in rates:
            raise InputError(f"{rates_source}: no rate for {analyte} (site '{site}' has {analyte} results)")
        values, nd = results[analyte]
        billed = substitute(values, nd, non_detect)
        avg = float(billed.mean())
        lb = float(excess_pounds(volume_mg, avg, base))
        charges[analyte] = AnalyteCharge(analyte, avg, base, lb, rates[analyte],
                                         cents(lb * rates[analyte]), int(len(billed)),
                                         int(np.count_nonzero(nd)), base_citation)
    return SiteSurcharge(site, float(volume_mg), charges, citation)


def group_results(rows) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Group lab rows (:class:`lab.readers.labcsv.LabRow`) as site -> analyte -> (values [mg/l], non-detect flags)."""
    acc: dict[str, dict[str, tuple[list, list]]] = {}
    for r in rows:
        v, nd = acc.setdefault(r.site, {}).setdefault(r.analyte, ([], []))
        v.append(r.value_mg_l)
        nd.append(r.non_detect)
    return {s: {a: (np.asarray(v, dtype=np.float64), np.asarray(nd, dtype=bool)) for a, (v, nd) in d.items()}
            for s, d in acc.items()}
