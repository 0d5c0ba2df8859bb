"""The rates the bills use, in the database: every version with the day it takes effect
(table ``rate_versions``, migration ``0183_rates.sql``).

A version holds the numbers of the rates file (:mod:`lab.readers.rates`: the surcharge
rates per pound of palmyra-wi 003_44f871d49a02d8f5.txt §13.45(4), the sewer use charge per
1,000 gallons of §13.45(2)(a), webster-ny 001_344667c7b04e812e.txt §113-75's unit rent,
westfield-wi 004_736876c28764ff16.txt's residential equivalents, the formula a village adopted,
a site's volume where its meter gives none) as TOML, in effect from its ``effective`` day.
Versions are append-only: saving never changes an earlier one. A quarter's bills use the
version in effect on the quarter's first day (:func:`in_effect`): the latest ``effective`` on
or before it, and of two with the same day the later version.

Ways in, one function: :func:`save_version` (``sewerwatch rates import FILE``, the office's
Rates page and its form through :func:`from_form`, a rates file given with a quarter's draft).
A version is checked as the biller reads it before it is stored: every number and table of
the file, and each site's charges (:func:`lab.charges.rates_given`).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from foundation.actor import Actor
from foundation.errors import InputError

COLS = ("version", "effective", "rates_text", "rates", "source", "note", "saved_by", "saved_at")
#: The table a stored version's file carries when a bill is drawn from it (its number and
#: day), so the bill names the version it used.
VERSION_KEY = "version"
#: Largest rates text taken [characters].
TEXT_MAX = 256 * 1024


def _audit(conn, actor: Actor, action: str, obj: str, detail: dict) -> None:
    conn.execute("INSERT INTO audit_log (actor, action, object, detail) VALUES (%s, %s, %s, %s)",
                 (actor.audit_name, action, obj, json.dumps({**detail, "via": actor.via}, default=str)))


def label(v: dict) -> str:
    """How a version is named on bills and pages: ``rates version 3, in effect from 2026-01-01``."""
    return f"rates version {v['version']}, in effect from {_day(v['effective'])}"


def _day(d) -> str:
    return d.isoformat() if isinstance(d, date) else str(d)[:10]


@contextlib.contextmanager
def _as_file(text: str, name: str):
    """``text`` as a file named ``name`` (the readers take a path and name it in messages)."""
    with tempfile.TemporaryDirectory(prefix="sewerwatch-rates-") as tmp:
        path = Path(tmp) / (Path(name).name or "rates.toml")
        path.write_text(text, encoding="utf-8")
        yield path


def check_text(conn, text: str, name: str) -> dict:
    """The rates of ``text`` (TOML) parsed and checked as the biller reads them; one-line
    :class:`InputError` naming ``name`` and the key otherwise. Checks each site's charges
    (``conn``: the sites and their packs) where the rates give their numbers."""
    from lab.charges import charges, rates_given, surcharged
    from lab.readers.rates import read_non_detect_policy, read_rates, read_rates_file

    if len(text) > TEXT_MAX:
        raise InputError(f"{name}: larger than {TEXT_MAX // 1024} kB: not a rates file")
    if "\x00" in text:
        raise InputError(f"{name}: not text (a NUL byte): a rates file is TOML")
    sites = conn.execute("SELECT key, pack FROM sites ORDER BY key").fetchall() if conn is not None else []
    with _as_file(text, name) as path:
        try:
            doc = read_rates_file(path)
            read_rates(path, required=any(surcharged(p) for _, p in sites))
            read_non_detect_policy(path)
        except InputError as exc:     # the readers name the copy's path: name what was sent
            raise InputError(str(exc).replace(str(path), name)) from None
    if VERSION_KEY in doc:
        raise InputError(f"{name}: {VERSION_KEY}: a stored version is numbered when it is saved; leave it out")
    for key, pack in sites:
        for p, _kind, _terms in charges(pack, doc, name):
            rates_given(p, doc, key, name)
    return doc


def save_version(conn, text: str, effective: date, *, source: str, actor: Actor, note: str | None = None,
                 same_ok: bool = False) -> dict:
    """Store ``text`` (the rates as TOML) as the next version, in effect from ``effective``.

    ``source``: where it came from, in words (the file's name, "the office's form").
    The same rates again with the same day as a stored version are refused naming it (or,
    with ``same_ok``, that version is returned with ``status`` ``unchanged``).

    Returns
    -------
    dict
        The version (:data:`COLS`) with ``status`` ``saved`` or ``unchanged``.
    """
    if not isinstance(effective, date):
        raise InputError(f"in effect from: expected a date such as 2027-01-01, got {effective!r}")
    doc = check_text(conn, text, source)
    with conn.transaction():
        conn.execute("LOCK TABLE rate_versions IN SHARE ROW EXCLUSIVE MODE")
        same = conn.execute("SELECT version FROM rate_versions WHERE effective = %s AND rates = %s::jsonb "
                            "ORDER BY version DESC LIMIT 1", (effective, json.dumps(doc, default=str))).fetchone()
        latest_same_day = conn.execute("SELECT max(version) FROM rate_versions WHERE effective = %s",
                                       (effective,)).fetchone()[0]
        if same is not None and same[0] == latest_same_day:
            if same_ok:
                return {**version(conn, same[0]), "status": "unchanged"}
            raise InputError(f"{source}: the same rates as {label(version(conn, same[0]))}: nothing was saved")
        n = conn.execute("SELECT coalesce(max(version), 0) + 1 FROM rate_versions").fetchone()[0]
        conn.execute("INSERT INTO rate_versions (version, effective, rates_text, rates, source, note, saved_by) "
                     "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                     (n, effective, text, json.dumps(doc, default=str), source[:200], note, actor.audit_name))
        _audit(conn, actor, "rates.saved", f"rates:{n}", {"version": n, "effective": effective.isoformat(),
                                                           "source": source, "note": note})
    return {**version(conn, n), "status": "saved"}


def _row(r) -> dict:
    return dict(zip(COLS, r))


def versions(conn) -> list[dict]:
    """Every version, newest first."""
    return [_row(r) for r in conn.execute(f"SELECT {', '.join(COLS)} FROM rate_versions ORDER BY version DESC")]


def version(conn, n: int) -> dict:
    """Version ``n``; :class:`InputError` when there is none."""
    r = conn.execute(f"SELECT {', '.join(COLS)} FROM rate_versions WHERE version = %s", (n,)).fetchone()
    if r is None:
        raise InputError(f"no rates version {n} (sewerwatch rates list shows them)")
    return _row(r)


def in_effect(conn, on: date) -> dict | None:
    """The version in effect on ``on`` (the latest day on or before it, then the later
    version), or None."""
    r = conn.execute(f"SELECT {', '.join(COLS)} FROM rate_versions WHERE effective <= %s "
                     "ORDER BY effective DESC, version DESC LIMIT 1", (on,)).fetchone()
    return None if r is None else _row(r)


def quarter_start(quarter: str) -> date:
    """The first day of ``2026Q1`` (its local calendar day)."""
    m = re.fullmatch(r"(\d{4})Q([1-4])", quarter.strip().upper())
    if m is None:
        raise InputError(f"quarter: expected a quarter such as 2026Q1, got {quarter!r}")
    return date(int(m.group(1)), 3 * int(m.group(2)) - 2, 1)


def for_quarter(conn, quarter: str) -> dict:
    """The version in effect on the quarter's first day; :class:`InputError` saying how to
    store one when there is none."""
    start = quarter_start(quarter)
    v = in_effect(conn, start)
    if v is None:
        raise InputError(f"no rates in effect on {start} (the first day of {quarter.strip().upper()}): save them on "
                         f"the Rates page, or: sewerwatch rates import FILE.toml --effective {start}")
    return v


def file_text(v: dict) -> str:
    """The version as a rates file for the biller: its text with its number and day (the
    ``[version]`` table the bill names)."""
    return (v["rates_text"].rstrip("\n") + f"\n\n[{VERSION_KEY}]\nnumber = {int(v['version'])}\n"
            f"effective = {_day(v['effective'])}\n")


@contextlib.contextmanager
def quarter_file(conn, quarter: str, rates_path: str | Path | None = None, *, name: str | None = None,
                 actor: Actor | None = None):
    """The rates a quarter's draft reads, as ``(path, name)``: the version in effect on the
    quarter's first day. A rates file given (``rates_path``, ``name`` its name as it was
    sent) is first saved as the version in effect from that day (unless it is that version
    already)."""
    if rates_path is not None:
        try:
            text = Path(rates_path).read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise InputError(f"{rates_path}: no such file") from None
        except UnicodeDecodeError:
            raise InputError(f"{name or rates_path}: not UTF-8 text: a rates file is TOML") from None
        save_version(conn, text, quarter_start(quarter), source=Path(name or str(rates_path)).name, actor=actor,
                     note=f"given with the draft of {quarter.strip().upper()}", same_ok=True)
    v = for_quarter(conn, quarter)
    with _as_file(file_text(v), "rates.toml") as path:
        yield path, label(v)


def stated(doc: dict | None) -> str | None:
    """The words a bill gives for the rates version its rates file carries (None: a file
    given for that bill alone)."""
    v = (doc or {}).get(VERSION_KEY)
    if not isinstance(v, dict) or "number" not in v:
        return None
    return label({"version": v["number"], "effective": v.get("effective", "")})


# --- the office's form: the rates file's fields, in words --------------------------------

@dataclass(frozen=True)
class Field:
    """One number or choice of the rates, as the form shows it.

    Attributes
    ----------
    key : str
        Its dotted key in the rates file (``bill.palmyra-wi.use_per_1000_gal``).
    label : str
        The words the form shows.
    unit : str
        Its unit in words (``$ per pound``), or "".
    kind : str
        ``number``, ``choice`` or ``text``.
    choices : tuple of (value, words)
        For a choice.
    section : str
        The heading it stands under.
    """

    key: str
    label: str
    unit: str = ""
    kind: str = "number"
    choices: tuple = ()
    section: str = ""

    @property
    def name(self) -> str:
        """The form field's name."""
        return "r:" + self.key


#: What each rate a formula takes is, and its unit (lab.charges.FORMULAS' ``rates``).
RATE_WORDS = {"per_1000_gal": ("unit cost", "$ per 1,000 gallons"),
              "unit_rent": ("rent per unit", "$ per unit"),
              "re": ("residential equivalents of {site}", "RE"),
              "annual_debt_budget": ("annual debt service", "$ a year"),
              "total_re": ("residential equivalents of the whole system", "RE")}
#: The per-pound surcharge rates (lab.readers.rates.RATE_KEYS) and the analyte each prices.
PER_POUND = (("bod", "bod5"), ("tss", "tss"), ("tkn", "tkn"), ("tp", "tp"))
NON_DETECT_WORDS = (("zero", "zero"), ("half", "half its detection limit"), ("dl", "its detection limit"))


def form_fields(conn) -> list[Field]:
    """The fields of the rates form for this utility's sites and their packs' charges."""
    from lab.charges import FORMULA_NAMES, FORMULAS, surcharged
    from limits import analytes
    from limits.packs import load_pack

    sites = conn.execute("SELECT key, name, pack FROM sites ORDER BY key").fetchall()
    names = {k: n for k, n, _ in sites}
    packs = sorted({p for _, _, p in sites})
    cat = analytes.catalogue()
    out: list[Field] = []
    if any(surcharged(p) for p in packs):
        for key, a in PER_POUND:
            out.append(Field(key, f"Surcharge rate, {cat[a].name if a in cat else a}",
                             "$ per pound above normal strength", section="Surcharge"))
    out.append(Field("non_detect", "A result below detection counts on the bill as", kind="choice",
                     choices=NON_DETECT_WORDS, section="Surcharge"))
    adoptable = tuple((k, FORMULA_NAMES.get(k, k)) for k, f in FORMULAS.items() if f.section == "charges" and not any(
        not v.optional for v in f.params.values())) + (("none", "none adopted"),)
    for pack in packs:
        pk = load_pack(pack)
        for p in pk.charges:
            name = (p.name or p.id or "")[:1].upper() + (p.name or p.id or "")[1:]
            head = f"{name} ({p.citation})"
            if p.formula_from:
                out.append(Field(f"adopted.{p.id}.formula", f"{name}: the formula the village adopted", kind="choice",
                                 choices=(("", "—"),) + adoptable, section=head))
                out.append(Field(f"adopted.{p.id}.by", f"{name}: adopted by (the resolution)", kind="text",
                                 section=head))
            for rate, rk in p.rates.items():
                words, unit = RATE_WORDS.get(rate, (rate.replace("_", " "), ""))
                keys = ([(rk.key.replace("{site}", k), names[k]) for k, _, sp in sites if sp == pack]
                        if "{site}" in rk.key else [(rk.key, "")])
                for key, site_name in keys:
                    out.append(Field(key, f"{name}: {words.format(site=site_name)}", unit, section=head))
    for k, n, _ in sites:
        out.append(Field(f"bill.volume_mg.{k}", f"Volume of {n} where its meter does not give the quarter's",
                         "million gallons", section="Volumes"))
    return out


def _get(doc: dict, key: str):
    v = doc
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v


def values(fields: list[Field], doc: dict | None) -> dict[str, str]:
    """The form's values from a version's rates (field name -> text)."""
    out = {}
    for f in fields:
        v = _get(doc or {}, f.key)
        out[f.name] = "" if v is None or isinstance(v, dict) else (f"{v:g}" if isinstance(v, float) else str(v))
    return out


def from_form(fields: list[Field], data: dict, base: dict | None = None) -> str:
    """The rates file (TOML) the form's fields make: ``base`` (the version the form was
    drawn from) with each field put in (a blank field leaves its key out). One-line
    :class:`InputError` naming the field for a value that is not a number >= 0."""
    doc = json.loads(json.dumps(base or {}, default=str))
    doc.pop(VERSION_KEY, None)
    for f in fields:
        text = str(data.get(f.name, "")).strip()
        parts = f.key.split(".")
        parent = doc
        for p in parts[:-1]:
            nxt = parent.get(p)
            if not isinstance(nxt, dict):
                nxt = parent[p] = {}
            parent = nxt
        if not text:
            parent.pop(parts[-1], None)
            continue
        if f.kind == "number":
            try:
                v = float(text.replace(",", "").replace("$", ""))
            except ValueError:
                v = math.nan
            if not math.isfinite(v) or v < 0:
                raise InputError(f"{f.label}: expected a number 0 or more{' [' + f.unit + ']' if f.unit else ''}, "
                                 f"got {text!r}")
            parent[parts[-1]] = v
        elif f.kind == "choice" and text not in {c for c, _ in f.choices}:
            raise InputError(f"{f.label}: {text!r} is not one of the choices")
        else:
            parent[parts[-1]] = text
    return to_toml(_pruned(doc))


def _pruned(doc: dict) -> dict:
    out = {}
    for k, v in doc.items():
        if isinstance(v, dict):
            v = _pruned(v)
            if not v:
                continue
        out[k] = v
    return out


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v), ensure_ascii=False)


def to_toml(doc: dict, prefix: str = "") -> str:
    """``doc`` (numbers, text, nested tables) as TOML that reads back as ``doc``."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    text = "\n".join(lines) + ("\n" if lines else "")
    for k, v in doc.items():
        if isinstance(v, dict):
            name = f"{prefix}.{_key(k)}" if prefix else _key(k)
            scalars = {a: b for a, b in v.items() if not isinstance(b, dict)}
            if scalars or not v:
                text += f"\n[{name}]\n" + to_toml(scalars)
            text += to_toml({a: b for a, b in v.items() if isinstance(b, dict)}, name)
    return text
