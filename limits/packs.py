"""Rule packs: one TOML file per jurisdiction, shipped in ``limits/packs/`` (more folders:
``$SEWERWATCH_PACK_PATH`` and the config's ``[utility] pack_dirs``, searched first).

A pack names the village, the title people cite its ordinance by (``code``: "Village of
Palmyra Code"; documents cite ``<code> <section>``, :func:`cite`), its IANA time zone
(calendar days of violation are counted in it) and the seed file of its ordinance (kept as
each rule's ``provenance``), and lists ``[[rules]]``, each of a ``kind`` (``range``, ``slug``,
``lab-limit``, ``loading-limit``, ``normal-strength``, ``permit-threshold``,
``permit-characteristics`` (a permit required where the discharge shows a prohibited
characteristic: palmyra-wi §13.54(1)(f)), ``flow-threshold``, ``default-strength``,
``definition`` (with a ``reading`` where its words read two ways, :data:`READINGS`),
``narrative``) with its ``id``, the
``section`` of the seed it comes from and the ordinance's ``words``. Besides its rules, a pack
says which charge formulas the village adopted (``[[charges]]``, ``[late_charge]``,
``[residential_equivalents]``; the formulas are code in ``lab/formulas/``, named by a formula
kind of ``lab.charges``; ``formula_from = "rates"`` where the ordinance sets none: the rates
file must state the one adopted, nothing is borrowed by default), the sampling it requires
(``[[monitoring]]``) and the discharger's duty to report (``[report_duty]``). Where a
village's seed gives no such provision but sewerwatch applies another village's as a model,
the entry is ``model = "<pack id>"``: the model pack's entry applies, cited as that pack's.

Each table and key is a field of the file's model below (:class:`PackFile`), with its
description; ``docs/reference/pack.md`` and the JSON Schema ``docs/reference/pack.schema.json``
are generated from them. Any unknown key, kind, unit, parameter, analyte or comparison is an
:class:`InputError` naming the file, the rule and the key, never a guess. Adding a village is
adding a TOML file.

This module finds, loads and checks packs (:func:`load_pack`, :func:`parse_pack`); what the
evaluators read of one is :mod:`limits.pack_model`, the file's tables :mod:`limits.pack_file`
(both read from here as well).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path



from foundation import config, tomlfile, units
from foundation.errors import InputError
from foundation.schema import item_label, validate
from limits import analytes
from limits.pack_rates import RATE_KEY, RateKey  # noqa: F401 - part of this module's API
# the model and the file's tables, part of this module's face (callers read them from here)
from limits.pack_model import (ANALYTES, BASES, BASIS_WORDS, COMPARISONS, READINGS, REPORT_FILLS, Cited,  # noqa: F401
                               Municipality, Pack, Provision, ReportDuty, Rule, cite)
from limits.pack_file import DutyModel, ModelEntry, PackFile  # noqa: F401

PACKS_DIR = Path(__file__).resolve().parent / "packs"


# --- the checked file -> the pack the evaluators read -------------------------------------------

def _fail(path, where: str, problem: str):
    raise InputError(f"{path}: {where}: {problem}")


def _rule(e, seed: str, code: str, table_: dict) -> Rule:
    """A checked rule as the evaluators read it: its keys, the operator of its comparison, its
    limit in the canonical unit (a loading's in lb/d; a definition's value as its ``limit``)."""
    f = {k: getattr(e, k) for k in e.__pydantic_fields__ if k in Rule.__dataclass_fields__}
    f.update(seed=seed, code=code, quantity=table_[e.analyte].parameter if getattr(e, "analyte", None) else None)
    if e.kind == "definition":
        return Rule(**f, limit=e.value)
    limit, param = getattr(e, "limit", None), getattr(e, "parameter", None) or f["quantity"]
    canonical = limit if limit is None or e.kind == "loading-limit" else float(units.to_canonical(param, e.unit, limit))
    return Rule(**f, op=COMPARISONS.get(getattr(e, "comparison", None)), limit_canonical=canonical)


def _model_pack(path, where: str, model_id: str, own_id: str) -> "Pack":
    """The pack a model entry names, parsed without following its own model references
    (a model's entries must be its own, so references never chain or loop)."""
    found = config.find_pack(model_id) if model_id != own_id else None
    if found is None:
        _fail(path, where, f"unknown rule pack {model_id!r}, or this one "
              f"(known: {', '.join(p for p in available_packs() if p != own_id)})")
    return _load_cached(str(found.resolve()), found.stat().st_mtime_ns, False)


def _provision(path, where: str, e, pack: Pack, rules: dict, resolve: bool, section_key: str) -> Provision:
    """One ``[[charges]]`` entry, ``[late_charge]`` or ``[residential_equivalents]``."""
    cid = getattr(e, "id", None)
    if isinstance(e, ModelEntry):
        if not resolve:  # the pack is read as a model: its model entries cannot serve
            return Provision(where=where, path=str(path), id=cid, model=e.model)
        model = _model_pack(path, f"{where}.model", e.model, pack.id)
        src = next((c for c in model.charges if c.id == cid), None) if cid else getattr(model, section_key)
        if src is None:
            _fail(path, f"{where}.model", f"pack {model.id!r} has no {f'charge {cid!r}' if cid else section_key} to apply here")
        if src.model is not None:
            _fail(path, f"{where}.model", f"{model.id}'s {src.where} is itself a model entry")
        return replace(src, note=e.note, model=model.id)
    params = {k: (Cited(float(rules[v['rule']].limit), rules[v['rule']].unit, rules[v['rule']])
                  if isinstance(v, dict) and "rule" in v else v) for k, v in (getattr(e, "params", None) or {}).items()}
    own = {k: getattr(e, k) for k in ("id", "name", "formula", "formula_from", "note", "words") if hasattr(e, k)}
    rates = {k: replace(r, citation=cite(pack.code, r.section)) if r.section else r
             for k, r in (getattr(e, "rates", None) or {}).items()}
    return Provision(**own, where=where, path=str(path), section=e.section, citation=cite(pack.code, e.section),
                     provenance=f"{pack.seed} {e.section}", params=params, rates=rates)


def _report_duty(path, e, pack: Pack, resolve: bool) -> ReportDuty:
    where = "report_duty"
    if isinstance(e, DutyModel):
        if not resolve:
            return ReportDuty("", "", (), (), "", model=e.model)
        model = _model_pack(path, f"{where}.model", e.model, pack.id)
        if model.report_duty is None or model.report_duty.model is not None:
            _fail(path, f"{where}.model", f"pack {model.id!r} has no report duty of its own to apply here")
        return replace(model.report_duty, rules=e.rules, note=e.note, model=model.id)
    citation = cite(pack.code, e.section)
    if e.contents is not None:
        contents, contents_citation = e.contents, citation
    elif not resolve:
        contents, contents_citation = (), ""
    else:
        model = _model_pack(path, f"{where}.contents_from", e.contents_from, pack.id)
        if model.report_duty is None or not model.report_duty.contents or model.report_duty.model:
            _fail(path, f"{where}.contents_from", f"pack {model.id!r} lists no report contents of its own")
        contents, contents_citation = model.report_duty.contents, model.report_duty.contents_citation
    return ReportDuty(citation, e.words, e.rules, contents, contents_citation, note=e.note)


def not_a_pack(data, path) -> None:
    """Refuse a config file given as a pack, in one line."""
    if isinstance(data, dict) and "rules" not in data and {"utility", "sites", "sensors", "services"} & set(data):
        raise InputError(f"{path}: a sewerwatch config, not a rule pack (a pack has id, name, code, timezone, seed "
                         "and [[rules]]; the config's [utility] pack names the utility's pack)")


def parse_pack(data: dict, path: str = "<pack>", expected_id: str | None = None, resolve: bool = True) -> Pack:
    """Validate an already-parsed pack (see :func:`load_pack`).

    ``resolve=False`` reads it as another pack's model: its own model references are kept
    unresolved (a model entry names its model pack's own entry, never a chain).
    """
    not_a_pack(data, path)
    f = validate(PackFile, data, str(path), lambda p, k, m: InputError(f"{p}: {k}: {m}" if k else f"{p}: {m}"),
                 context={"expected_id": expected_id}, label=item_label(("rules",), data))
    own = tuple(a.analyte() for a in f.analytes)
    rules = tuple(_rule(r, f.seed, f.code, analytes.known(own)) for r in f.rules)
    pack = Pack(id=f.id, name=f.name, timezone=f.timezone, seed=f.seed, rules=rules, path=str(path), code=f.code,
                municipality=f.municipality or Municipality.of(f.name), analytes=own)
    by_id = {r.id: r for r in rules}
    extra = {"charges": tuple(_provision(path, f"charges[{i}]", c, pack, by_id, resolve, "charges")
                              for i, c in enumerate(f.charges)),
             "monitoring": tuple(replace(m, citation=cite(f.code, m.section)) for m in f.monitoring),
             "checklist": tuple(replace(c, citation=cite(f.code, c.section)) for c in f.checklist)}
    for key in ("late_charge", "residential_equivalents"):
        if getattr(f, key) is not None:
            extra[key] = _provision(path, key, getattr(f, key), pack, by_id, resolve, key)
    if f.report_duty is not None:
        extra["report_duty"] = _report_duty(path, f.report_duty, pack, resolve)
    return replace(pack, **extra)


def _limits_what(r: Rule):
    """What a rule limits, and how: two rules with the same key overlap (None: nothing to compare)."""
    direction = "from below" if r.op in ("<", "<=") else "from above"
    if r.kind == "range":
        return (r.kind, r.parameter, direction, r.longer_than_min), f"{r.parameter} {direction}" + (
            f" for more than {r.longer_than_min:g} min" if r.longer_than_min else "")
    if r.kind in ("lab-limit", "loading-limit"):
        typed = f", {r.sample_type} samples" if r.sample_type else ""
        return (r.kind, r.analyte, r.basis, r.sample_type), f"{r.analyte} ({r.kind}, basis {r.basis}{typed})"
    if r.kind in ("normal-strength", "permit-threshold"):   # flow thresholds set different duties
        return (r.kind, r.analyte or r.parameter), f"the {r.kind} of {r.analyte or r.parameter}"
    return None, ""


def overlaps(pack: Pack) -> list[tuple[str, str]]:
    """Rules of ``pack`` that limit the same thing the same way (a parameter in one direction
    and duration, an analyte on one basis): ``[(key, problem), ...]``, the later rule blamed."""
    first: dict = {}
    out = []
    for i, r in enumerate(pack.rules):
        key, said = _limits_what(r)
        if key is None:
            continue
        if key in first:
            j, q = first[key]
            out.append((f"rules[{i}] ({r.id})", f"overlaps rules[{j}] ({q.id}): both limit {said} ({r.section} and "
                        f"{q.section}); an ordinance states one limit for it (a stricter one for a user belongs in "
                        "the user's permit)"))
        else:
            first[key] = (i, r)
    return out


def pack_path(name_or_path: str) -> Path:
    """The TOML file of a pack given by id (``palmyra-wi``) or by path.

    An id is looked up on the pack search path (:func:`foundation.config.pack_dirs`:
    ``$SEWERWATCH_PACK_PATH``, the config's ``[utility] pack_dirs``, then ``limits/packs/``).
    """
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.parent != Path("."):
        if not p.is_file():
            raise InputError(f"{p}: no such rule pack file")
        return p
    found = config.find_pack(name_or_path)
    if found is None:
        problem = config.pack_dirs_problem()
        raise InputError(f"unknown rule pack {name_or_path!r} (known: {', '.join(available_packs())}; "
                         f"searched {', '.join(map(str, config.pack_dirs()))}"
                         + (f"; the config's pack_dirs were not read: {problem}" if problem else "") + ")")
    return found


def available_packs() -> list[str]:
    """Ids of the packs on the pack search path (those shipped in ``limits/packs/`` and any
    in the folders of ``$SEWERWATCH_PACK_PATH`` or the config's ``[utility] pack_dirs``)."""
    return config.known_packs()


def load_pack(name_or_path: str) -> Pack:
    """Load and validate a rule pack.

    Parameters
    ----------
    name_or_path : str
        A pack id (``palmyra-wi``, found on the pack search path, see :func:`pack_path`) or
        a path to a TOML file.

    Raises
    ------
    InputError
        Naming the file, the rule and the key for anything unknown or malformed.
    """
    path = pack_path(name_or_path)
    return _load_cached(str(path.resolve()), path.stat().st_mtime_ns, True)


@lru_cache(maxsize=64)
def _load_cached(path: str, _mtime: int, resolve: bool) -> Pack:
    return parse_pack(tomlfile.read(path, "rule pack"), path, expected_id=Path(path).stem, resolve=resolve)
