"""Checking the project's TOML files (config, rule packs, permits) with pydantic models.

A TOML table is a frozen pydantic dataclass deriving :class:`Table`: each key is one field,
with its type (one of the annotated types below, whose errors are the project's words), its
default and a docstring under it, from which the reference pages and the JSON Schemas
(``docs/reference/``) are generated. Adding a key is adding that one line.

Every problem becomes one line naming the file, the table and the key, e.g.
``village.toml: sites[2].sic: expected a 4-digit SIC code as a string, got '20x1'``:
:func:`validate` raises the first, :func:`problems` lists them all (``sewerwatch pack
check``). A check that needs several keys (a reference to another table, a unit for a
parameter) raises :func:`fail` with the key it blames, relative to the table it runs in.

pydantic (pinned in ``pyproject.toml``) does the walking, the collecting of every problem
and the schema; what is written here is only the wording of problems, kept as precise as
the hand-written checks it replaced.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
import typing
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic.dataclasses import dataclass as _pydantic_dataclass
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import ArgsKwargs, InitErrorDetails, PydanticCustomError

from foundation.units import CONVERSIONS

#: How every table is checked: unknown keys refused, values frozen, docstrings as descriptions.
MODEL_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True,
                          arbitrary_types_allowed=True, revalidate_instances="never")

_INTERNAL = "sewerwatch-internal"
#: A field set by the loader, not a key of the file (not accepted, not in the schema).
Internal = Annotated[Any, SkipJsonSchema(), _INTERNAL]


#: every table class by name (a JSON Schema's ``$defs`` are named so)
_TABLES: dict[str, type] = {}


def table(cls=None, /, **kwargs):
    """Decorator: ``cls`` as a frozen pydantic dataclass checked as a TOML table."""
    def wrap(c):
        out = _pydantic_dataclass(c, config=MODEL_CONFIG, frozen=True, **kwargs)
        _TABLES[out.__name__] = out
        return out
    return wrap(cls) if cls is not None else wrap


def _inherited_description(cls, name: str) -> str | None:
    """A key's docstring in the base table that defines it (pydantic reads a class's own)."""
    for b in cls.__mro__:
        f = getattr(b, "__pydantic_fields__", {}).get(name)
        if f is not None and f.description:
            return f.description
    return None


def keys(cls) -> tuple[str, ...]:
    """The keys a table accepts (its fields or their aliases, less the :data:`Internal` ones)."""
    return tuple(f.alias or n for n, f in cls.__pydantic_fields__.items() if _INTERNAL not in f.metadata)


@table
class Table:
    """Base of every table: a value that is not a table, or a key it does not know, is the
    first problem named."""

    @model_validator(mode="wrap")
    @classmethod
    def _known_keys(cls, data, handler):
        if isinstance(data, ArgsKwargs) or dataclasses.is_dataclass(data):
            return handler(data)
        if not isinstance(data, dict):
            raise fail((), f"expected a table, got {show(data)}")
        allowed = keys(cls)
        unknown = sorted(k for k in data if k not in allowed)
        if not unknown:
            return handler(data)
        # the unknown keys, and every problem of the keys it knows (pack check lists them all)
        said = f"unknown key{cls._unknown_key_words()} (expected one of: {', '.join(allowed)})"
        errors = [InitErrorDetails(type=fail((k,), said), loc=(), input=data[k]) for k in unknown]
        try:
            handler({k: v for k, v in data.items() if k not in unknown})
        except ValidationError as exc:          # re-raised in the project's words (an array's need its whole key)
            errors += [InitErrorDetails(type=fail(*_problem(e)), loc=(), input=None) if e["type"] != "sewerwatch_tables"
                       else InitErrorDetails(type=PydanticCustomError(e["type"], "{got}", e["ctx"]), loc=e["loc"],
                                             input=None) for e in exc.errors(include_url=False)]
        raise ValidationError.from_exception_data(cls.__name__, errors)

    @classmethod
    def _unknown_key_words(cls) -> str:
        return ""


def fail(at: tuple, problem: str) -> PydanticCustomError:
    """The error to raise from a check: ``problem`` at key ``at`` (relative to the table the
    check runs in: ``("sensors", 3, "device")``)."""
    return PydanticCustomError("sewerwatch", "{problem}", {"problem": problem, "at": tuple(at)})


def known_unit(unit: str, parameter: str, at: tuple = ("unit",), what: str = "") -> None:
    """Raise :func:`fail` at ``at`` unless ``unit`` is one of ``parameter``'s (:mod:`foundation.units`);
    ``what`` names the parameter in the problem (default: its id)."""
    if unit not in CONVERSIONS[parameter]:
        raise fail(at, f"unknown unit {unit!r} for {what or parameter} (known: {', '.join(CONVERSIONS[parameter])})")


def fail_all(cls, found: list[tuple[tuple, str]]) -> ValidationError:
    """The error to raise from a check that found several problems: ``[(at, problem), ...]``."""
    return ValidationError.from_exception_data(cls.__name__, [InitErrorDetails(type=fail(at, p), loc=(), input=None)
                                                              for at, p in found])


def duplicates(items, key: Callable) -> list[tuple[int, Any, int]]:
    """``(i, k, j)`` for each item ``i`` whose ``key`` ``k`` an earlier item ``j`` has (the first
    of them); an item whose key is None has none."""
    first: dict = {}
    return [(i, k, first[k]) for i, k in enumerate(map(key, items)) if k is not None and first.setdefault(k, i) != i]


def beside(name: str, info, folder: bool = False) -> Path:
    """The file (or folder) ``name`` relative to the folder of the file being checked (the
    check's ``info.context["base"]``; else the working folder), or the problem that there is none."""
    p = (Path((info.context or {}).get("base") or Path.cwd()) / name).resolve()
    if not (p.is_dir() if folder else p.is_file()):
        raise fail((), f"no such {'folder' if folder else 'file'} {name!r} (looked for {p})")
    return p


def show(value: Any) -> str:
    """A value as a problem quotes it: a string in quotes, anything else with its type."""
    return repr(value) if isinstance(value, str) else f"{type(value).__name__} {value!r}"


# --- the annotated types: each refuses in the project's words ------------------------------

def refusing(test: Callable[[Any], bool], expected: str, convert: Callable = lambda v: v, got: Callable = show):
    """A check: ``convert(value)``, or the problem ``expected ..., got ...`` (the value as ``got``
    writes it) unless ``test(value)``."""
    def run(v):
        if not test(v):
            raise fail((), f"expected {expected}, got {got(v)}")
        return convert(v)
    return run


def check(test: Callable[[Any], bool], expected: str, convert: Callable = lambda v: v, got: Callable = show):
    """A ``BeforeValidator`` of :func:`refusing`."""
    return BeforeValidator(refusing(test, expected, convert, got))


def then(test: Callable[[Any], bool], problem: Callable[[Any], str]):
    """An ``AfterValidator`` (it runs after the type's own check): ``problem(value)`` unless ``test(value)``."""
    def run(v):
        if not test(v):
            raise fail((), problem(v))
        return v
    return AfterValidator(run)


def is_number(v) -> bool:
    """An int or float, not a bool, not NaN."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def is_int(v) -> bool:
    """An int, not a bool."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_text(v) -> bool:
    """A string that is not blank."""
    return isinstance(v, str) and bool(v.strip())


def _zone(v) -> bool:
    try:
        ZoneInfo(v)
        return True
    except (ZoneInfoNotFoundError, ValueError):
        return False


Text = Annotated[str, check(is_text, "a non-empty string")]
Bool = Annotated[bool, check(lambda v: isinstance(v, bool), "true or false")]
Number = Annotated[float, check(is_number, "a number", float)]
Positive = Annotated[float, check(lambda v: is_number(v) and v > 0, "a positive number", float), Field(gt=0)]
SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
Slug = Annotated[str, check(lambda v: is_text(v) and bool(SLUG.match(v)),
                            "a short lowercase id (letters, digits, - and _)"), Field(pattern=SLUG.pattern)]
TextList = Annotated[tuple[str, ...], check(lambda v: isinstance(v, (list, tuple)) and bool(v) and
                                            all(isinstance(x, str) and x for x in v),
                                            "a non-empty list of strings", tuple)]
TimeZone = Annotated[Text, then(_zone, lambda v: f"unknown time zone {v!r} (expected an IANA name such as "
                                "'America/Chicago')")]


def Strings(of: str, each: Callable[[str], Any] = lambda x: x):
    """A non-empty list of strings (``expected a non-empty list of <of>``), each checked by ``each``."""
    return Annotated[tuple[str, ...], check(lambda v: isinstance(v, (list, tuple)) and bool(v) and
                                            all(isinstance(x, str) for x in v),
                                            f"a non-empty list of {of}", lambda v: tuple(map(each, v)))]


def TopicLevel(what: str):
    """One MQTT topic level (no ``/``, ``+``, ``#``, no leading ``$``); ``what`` says which."""
    return Annotated[Text, then(lambda v: not any(ch in v for ch in "/+#") and not v.startswith("$"),
                                lambda v: f"expected one topic level without /, + or # ({what}), got {v!r}")]


def IntRange(lo: int, hi: int, expected: str | None = None):
    """An integer from ``lo`` to ``hi``."""
    return Annotated[int, check(lambda v: is_int(v) and lo <= v <= hi,
                                expected or f"an integer from {lo} to {hi}"), Field(ge=lo, le=hi)]


def one_of(choices, what: str = "") -> Callable:
    """A check: the value if it is one of ``choices``, else the problem ``unknown <what> 'x'
    (known: ...)`` (without ``what``: ``expected one of ...``)."""
    def run(v):
        if v not in choices:
            if what:
                raise fail((), f"unknown {what} {show(v)} (known: {', '.join(choices)})")
            raise fail((), f"expected one of {', '.join(choices)}, got {show(v)}")
        return v
    return run


def OneOf(*choices: str, what: str = ""):
    """One of ``choices`` (:func:`one_of`)."""
    return Annotated[typing.Literal[choices], BeforeValidator(one_of(choices, what))]


def Url(*schemes: str):
    """A URL with one of ``schemes``."""
    return Annotated[str, check(lambda v: is_text(v) and "://" in v and v.split("://", 1)[0] in schemes,
                                f"a URL starting with {' or '.join(s + '://' for s in schemes)}")]


def _ip(v) -> bool:
    try:
        ipaddress.ip_address(v)
        return True
    except ValueError:
        return False


Address = Annotated[str, check(lambda v: is_text(v) and _ip(v),
                               "an IP address to listen on (e.g. 127.0.0.1 or 0.0.0.0)")]


def _networks(v):
    if not isinstance(v, (list, tuple)):
        raise fail((), f"expected a list of IP addresses or networks, got {show(v)}")
    for x in v:
        try:
            ipaddress.ip_network(x, strict=False)
        except (TypeError, ValueError):
            raise fail((), f"not an IP address or network: {show(x)}") from None
    return tuple(v)


Networks = Annotated[tuple[str, ...], BeforeValidator(_networks)]


def _date(v):
    if isinstance(v, date):
        return v
    if isinstance(v, str):
        try:
            return date.fromisoformat(v)
        except ValueError:
            pass
    raise fail((), f"expected a date such as 2026-02-01, got {show(v)}")


Date = Annotated[date, BeforeValidator(_date)]


def _tables(v):
    if isinstance(v, tuple):        # already checked (a table re-made by dataclasses.replace)
        return v
    if not isinstance(v, list) or not all(isinstance(x, dict) or dataclasses.is_dataclass(x) for x in v):
        raise PydanticCustomError("sewerwatch_tables", "{got}", {"got": show(v)})
    return v


def Tables(item):
    """An array of tables ``[[key]]`` of ``item``."""
    return Annotated[tuple[item, ...], BeforeValidator(_tables)]


# --- validating, and the problems as one line each -----------------------------------------

def validate(cls, data, path: str, error: Callable[[str, str, str], Exception], *, context: dict | None = None,
             label: Callable[[tuple], str] | None = None):
    """``data`` checked as ``cls``; the first problem raised as ``error(path, key, problem)``.

    Parameters
    ----------
    cls : type
        The :func:`table` class of the file.
    data : dict
        The parsed TOML.
    path : str
        The file, for messages.
    error : callable
        ``(path, key, problem) -> Exception`` (:class:`foundation.errors.ConfigError`, ...).
    context : dict, optional
        Passed to the checks (``info.context``), e.g. the folder relative paths start from.
    label : callable, optional
        ``loc -> str``: how a key is written (default :func:`dotted`).
    """
    try:
        return _adapter(cls).validate_python(data, context=context)
    except ValidationError as exc:
        key, problem = _lines(exc, data, label)[0]
        raise error(path, key, problem) from None


def problems(cls, data, *, context: dict | None = None, label: Callable | None = None) -> list[tuple[str, str]]:
    """Every problem of ``data`` as ``cls``: ``[(key, problem), ...]``, empty when it is valid
    (checks spanning several tables run only once each of them is valid)."""
    try:
        _adapter(cls).validate_python(data, context=context)
    except ValidationError as exc:
        return _lines(exc, data, label)
    return []


@functools.lru_cache(maxsize=None)
def _adapter(cls) -> TypeAdapter:
    return TypeAdapter(cls)


def dotted(loc: tuple) -> str:
    """``("sites", 2, "sic")`` -> ``sites[2].sic``."""
    out = ""
    for x in loc:
        out += f"[{x}]" if isinstance(x, int) else (f".{x}" if out else str(x))
    return out


#: The tags of discriminated unions (a rule's ``kind``), dropped from keys (never a key themselves).
UNION_TAGS: set[str] = set()


def _problem(e) -> tuple[tuple, str]:
    """A pydantic error as ``(loc, problem)``, the problem in the project's words."""
    loc = tuple(x for x in e["loc"] if x not in UNION_TAGS and x != "[key]")     # a table's key: its key
    ctx, kind = e.get("ctx") or {}, e["type"]
    if kind == "sewerwatch":
        return loc + tuple(ctx.get("at", ())), ctx["problem"]
    if kind == "sewerwatch_tables":
        return loc, f"expected an array of tables ([[{dotted(loc)}]]), got {ctx['got']}"
    if kind == "missing":
        return loc, "missing (required)"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tag = ctx["discriminator"].strip("'")
        return loc + (tag,), "missing (required)" if kind == "union_tag_not_found" else \
            f"unknown {tag} {ctx['tag']!r} (known: {ctx['expected_tags'].replace(chr(39), '')})"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        return loc, "unknown key"
    return loc, f"{e['msg'][:1].lower()}{e['msg'][1:]}, got {show(e['input'])}"


def _lines(exc: ValidationError, data, label) -> list[tuple[str, str]]:
    out = []
    for loc, problem in map(_problem, exc.errors(include_url=False)):
        line = ((label or dotted)(loc) if loc else "", problem)
        if line not in out:
            out.append(line)
    return out


def item_label(arrays: tuple[str, ...], data) -> Callable[[tuple], str]:
    """A :func:`dotted` that names the ``id`` of each table of the given arrays of tables:
    ``rules[3] (ph-min).limit``."""
    def label(loc):
        out = dotted(loc[:1])
        node = data.get(loc[0]) if isinstance(data, dict) and loc else None
        for prev, x in zip(loc, loc[1:]):
            if isinstance(x, int):
                out += f"[{x}]"
                item = node[x] if isinstance(node, list) and 0 <= x < len(node) else None
                if prev in arrays and isinstance(item, dict) and isinstance(item.get("id"), str):
                    out += f" ({item['id']})"
                node = item
            else:
                out += f".{x}"
                node = node.get(x) if isinstance(node, dict) else None
        return out
    return label


def json_schema(cls, title: str) -> dict:
    """The JSON Schema of a file of ``cls`` tables, for editors (``$schema`` draft 2020-12)."""
    schema = TypeAdapter(cls).json_schema()
    for name, node in [(cls.__name__, schema), *schema.get("$defs", {}).items()]:
        owner = _TABLES.get(name)
        for key, prop in node.get("properties", {}).items():
            if owner is not None and not prop.get("description"):
                desc = _inherited_description(owner, key)
                if desc:
                    prop["description"] = desc
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, **schema}
