"""The annual report's figures as EPA's ICIS-NPDES XML: a PretreatmentPerformanceSummary
submission (schema 5.8; 40 CFR Part 127, the NPDES electronic reporting rule).

sewerwatch writes the document itself (:func:`document_xml`, the standard library's
``xml.etree``): a ``Document`` with its ``Header`` and one ``Payload`` of operation
``PretreatmentPerformanceSummarySubmission`` holding ``PretreatmentPerformanceSummaryData``:
the ``TransactionHeader`` and the ``PretreatmentPerformanceSummary``, whose elements come in the
order of the schema's ``PretreatmentPerformanceSummaryDataGroup`` (:data:`ELEMENTS`, checked
against the schema file by the tests). The figures are those of the annual report
(:func:`enforcement.program.performance_summary`); nothing is computed here.

:func:`validate` checks a document against EPA's schema files (``icis_xsd/``: their origin
and terms in its README) with the maintained ``xmlschema`` library; :func:`write` refuses
to write a document that does not validate.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from foundation.errors import InputError

NS = "http://www.exchangenetwork.net/schema/icis/5"
VERSION = "5.8"
OPERATION = "PretreatmentPerformanceSummarySubmission"
SCHEMA = Path(__file__).resolve().parent / "icis_xsd" / "ICIS_PretreatmentPerformanceSummaryDocument.xsd"

#: The PretreatmentPerformanceSummaryDataGroup of ICIS_Pretreatment_v5.8.xsd, in its order.
ELEMENTS = (
    "SUOReference", "SUODate", "AcceptanceHazardousWaste", "AcceptanceNonHazardousIndustrialWaste",
    "AcceptanceHauledDomesticWastes", "AnnualPretreatmentBudgetPPS", "InadequacySamplingInspectionIndicator",
    "AdequacyPretreatmentResources", "DeficienciesIdentifiedDuringIUFileReview", "ControlMechanismDeficiencies",
    "LegalAuthorityDeficiencies", "DeficienciesInterpretationApplicationPretreatmentStandards",
    "DeficienciesDataManagementPublicParticipation", "ViolationIUScheduleRemedialMeasures",
    "FormalResponseViolationIUScheduleRemedialMeasures", "AnnualFrequencyInfluentToxicantSampling",
    "AnnualFrequencyEffluentToxicantSampling", "AnnualFrequencySludgeToxicantSampling", "NumberSIUs",
    "SIUsWithoutControlMechanism", "SIUsNotInspected", "SIUsNotSampled", "SIUsOnSchedule",
    "SIUsSNCWithPretreatmentStandards", "SIUsSNCWithReportingRequirements", "SIUsSNCWithPretreatmentSchedule",
    "SIUsSNCPublishedNewspaper", "ViolationNoticesIssuedSIUs", "AdministrativeOrdersIssuedSIUs",
    "CivilSuitsFiledAgainstSIUs", "CriminalSuitsFiledAgainstSIUs", "DollarAmountPenaltiesCollectedPPS",
    "IUsWhichPenaltiesHaveBeenCollectedPPS", "NumberCIUs", "CIUsInSNC", "PassThroughInterferenceIndicator",
)


def _q(name: str) -> str:
    return f"{{{NS}}}{name}"


def _sub(parent, name: str, text=None):
    el = ET.SubElement(parent, _q(name))
    if text is not None:
        el.text = str(text)
    return el


def document_xml(rep: dict, submitter, *, created: datetime | None = None, transaction: str = "N",
                 draft: str | None = None) -> bytes:
    """The submission of one year's performance summary (UTF-8 bytes).

    Parameters
    ----------
    rep : dict
        The annual report with its ``performance_summary`` (:func:`enforcement.annual.annual_report`
        given the program's facts).
    submitter : enforcement.state_report.Submitter
        The header's ``Id`` (the submitter's CDX account), ``Organization`` and ``Author`` (the
        person), from :func:`enforcement.state_report.submitter`.
    created : datetime, optional
        The header's ``CreationTime`` and the transaction's timestamp (default: now).
    transaction : str
        ``N`` (new) or ``R`` (replace one sent before).
    draft : str, optional
        For a year not over: why it is a draft, in words (:func:`enforcement.state_report.draft_note`).
        It goes into an XML comment at the top, the header's ``Title`` and ``Comment``.
    """
    ps = rep.get("performance_summary")
    if ps is None:
        raise InputError("the annual report has no performance summary: give the program's facts "
                         "([enforcement.program] of the config)")
    if not ps.get("permit"):
        raise InputError("[enforcement.program] npdes_permit is not set: the state's report is keyed by the POTW's "
                         "NPDES permit (9 characters, e.g. WI0020231)")
    if transaction not in ("N", "R"):
        raise InputError(f"transaction: expected N (new) or R (replace), got {transaction!r}")
    created = (created or datetime.now(timezone.utc)).replace(microsecond=0)
    ET.register_namespace("", NS)
    for what, v in (("submitter_id", submitter.id), ("submitter_organization", submitter.organization),
                    ("the author", submitter.author)):
        if not v:
            raise InputError(f"the header's {what} is missing: a submission names its submitter and a person")
    doc = ET.Element(_q("Document"))
    if draft:
        doc.append(ET.Comment(f" DRAFT: {draft} "))
    head = _sub(doc, "Header")
    _sub(head, "Id", submitter.id)
    _sub(head, "Author", submitter.author)
    _sub(head, "Organization", submitter.organization)
    _sub(head, "Title", f"Pretreatment performance summary {rep['year']}" + (" (DRAFT)" if draft else ""))
    _sub(head, "CreationTime", created.isoformat())
    _sub(head, "Comment", (f"DRAFT, not for submission: {draft}. " if draft else "")
         + f"Prepared by sewerwatch from the annual pretreatment report {rep['year']}")
    payload = _sub(doc, "Payload")
    payload.set("Operation", OPERATION)
    data = _sub(payload, "PretreatmentPerformanceSummaryData")
    th = _sub(data, "TransactionHeader")
    _sub(th, "TransactionType", transaction)
    _sub(th, "TransactionTimestamp", created.isoformat())
    pps = _sub(data, "PretreatmentPerformanceSummary")
    _sub(pps, "PermitIdentifier", ps["permit"])
    _sub(pps, "PretreatmentPerformanceSummaryEndDate", ps["end"])
    _sub(pps, "PretreatmentPerformanceSummaryStartDate", ps["start"])
    values = {e["element"]: e["value"] for e in ps["elements"]}
    unknown = sorted(set(values) - set(ELEMENTS))
    if unknown:
        raise InputError(f"performance summary: {unknown[0]} is no element of the schema's data group")
    for name in ELEMENTS:
        if name in values:
            _sub(pps, name, values[name])
    ll = ps.get("local_limits")
    if ll:
        el = _sub(pps, "LocalLimits")
        if ll.get("evaluated"):
            _sub(el, "MostRecentDateTechnicalEvaluationLocalLimits", ll["evaluated"])
        if ll.get("adopted"):
            _sub(el, "MostRecentDateAdoptionTechnicallyBasedLocalLimits", ll["adopted"])
        for code in ll.get("pollutants", []):
            _sub(el, "LocalLimitsPollutantCode", code)
    ET.indent(doc)
    return ET.tostring(doc, encoding="utf-8", xml_declaration=True)


@lru_cache(maxsize=1)
def schema():
    """EPA's schema (the vendored files), loaded once."""
    import xmlschema

    return xmlschema.XMLSchema(str(SCHEMA))


def validate(xml: bytes) -> list[str]:
    """The schema's complaints about a document, one line each (empty: it validates)."""
    return [f"{e.path}: {e.reason}" for e in schema().iter_errors(xml.decode("utf-8"))]


def checked_xml(rep: dict, submitter, **kwargs) -> bytes:
    """:func:`document_xml`, refused (an :class:`InputError`) unless it validates against the schema."""
    xml = document_xml(rep, submitter, **kwargs)
    problems = validate(xml)
    if problems:
        raise InputError(f"the ICIS-NPDES document does not validate against schema {VERSION}: {problems[0]}")
    return xml


def write(rep: dict, submitter, out_dir: str | Path, **kwargs) -> Path:
    """Write ``icis-pretreatment-<year>.xml`` (``-draft`` before ``.xml`` for a draft) after
    checking it against the schema; nothing is written when it does not validate."""
    xml = checked_xml(rep, submitter, **kwargs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / file_name(rep["year"], draft=bool(kwargs.get("draft")))
    path.write_bytes(xml)
    return path


def file_name(year: int, *, draft: bool = False) -> str:
    """``icis-pretreatment-2026.xml``; a draft's ``icis-pretreatment-2026-draft.xml``."""
    return f"icis-pretreatment-{year}{'-draft' if draft else ''}.xml"
