"""The small input files of a surcharge run: the rates TOML and the volumes CSV."""

from __future__ import annotations

import csv
import io
import math
import tomllib
from pathlib import Path

from foundation import tomlfile
from foundation.errors import InputError
from lab.formulas.nondetect import POLICIES
from lab.readers.labcsv import parse_amount, read_lab_csv

#: keys of the rates TOML (dollars per pound) -> analyte id; aliases accepted
RATE_KEYS: dict[str, str] = {
    "bod": "bod5", "bod5": "bod5", "tss": "tss", "ss": "tss", "tkn": "tkn", "n": "tkn",
    "tp": "tp", "p": "tp",
}


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _rates_toml(path: str) -> tuple[dict, dict]:
    """The rates TOML and the table its rates are in (its ``[rates]``, or the file's top level)."""
    try:
        data = tomllib.loads(_read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    return data, data["rates"] if isinstance(data.get("rates"), dict) else data


def read_rates(path: str | Path, required: bool = True) -> dict[str, float]:
    """Surcharge rates per analyte [$/lb] from a TOML file with keys ``bod``, ``tss``, ``tkn``, ``tp``.

    The keys may sit at the top level or in a ``[rates]`` table.

    Returns
    -------
    dict
        analyte id -> rate [$/lb].

    Raises
    ------
    InputError
        Naming the file and key: not TOML, unknown key, not a number >= 0, given twice; no
        rate at all when ``required`` (a surcharge is in force).
    """
    path = str(path)
    data, table = _rates_toml(path)
    where = "rates." if table is not data else ""
    rates: dict[str, float] = {}
    for key, value in table.items():
        analyte = RATE_KEYS.get(key.lower())
        if key == "non_detect" or analyte is None and isinstance(value, dict):
            continue  # the billing non-detect policy (read_non_detect_policy); other tables (a description)
        if analyte is None:
            raise InputError(f"{path}: {where}{key}: unknown rate (expected bod, tss, tkn, tp in $/lb)")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise InputError(f"{path}: {where}{key}: expected a number of dollars per pound >= 0, got {value!r}")
        if analyte in rates:
            raise InputError(f"{path}: {where}{key}: a rate for {analyte} is given twice")
        rates[analyte] = float(value)
    if not rates and required:
        raise InputError(f"{path}: no rates (expected keys bod, tss, tkn, tp in $/lb)")
    return rates


def read_rates_file(path: str) -> dict:
    """The whole rates file: the rates per pound, the ``[bill]`` tables, the formulas the
    village adopted (``[adopted]``, :func:`lab.charges.adopted`) and every key a pack may name."""
    doc = tomlfile.read(path, "rates file")
    for key in ("bill", "adopted"):
        if not isinstance(doc.get(key, {}), dict):
            raise InputError(f"{path}: {key}: expected a table")
    return doc


def read_volumes(path: str | Path) -> dict[str, float]:
    """Billing-period volume per site [MG] from a CSV with header ``site,volume_mg``.

    Extra columns are ignored. Raises :class:`InputError` naming file and line for a bad
    volume, an empty site or a site given twice.
    """
    path = str(path)
    reader = csv.reader(io.StringIO(_read_text(path)))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise InputError(f"{path}: empty file (expected header site,volume_mg)") from None
    if "site" not in header or "volume_mg" not in header:
        raise InputError(f"{path}: line 1: expected columns site,volume_mg, got {','.join(header)}")
    i_site, i_vol = header.index("site"), header.index("volume_mg")
    volumes: dict[str, float] = {}
    first: dict[str, int] = {}
    prev = reader.line_num
    for rec in reader:
        line, prev = prev + 1, reader.line_num
        if not rec or all(not f.strip() for f in rec):
            continue
        if len(rec) <= max(i_site, i_vol):
            raise InputError(f"{path}: line {line}: expected at least {max(i_site, i_vol) + 1} fields, got {len(rec)}")
        site, vtext = rec[i_site].strip(), rec[i_vol].strip()
        if not site:
            raise InputError(f"{path}: line {line}: empty site")
        try:
            v = parse_amount(vtext, "volume_mg", "a volume >= 0 [million gallons]")
        except ValueError as exc:
            raise InputError(f"{path}: line {line}: {exc}") from None
        if site in volumes:
            raise InputError(f"{path}: line {line}: site '{site}' given twice (first on line {first[site]})")
        volumes[site], first[site] = v, line
    if not volumes:
        raise InputError(f"{path}: no volumes (expected rows site,volume_mg)")
    return volumes


def read_lab_file_strict(path: str | Path):
    """The good rows of a lab CSV, or :class:`InputError` at the first bad row (file and line).

    For file-only commands (``sewerwatch surcharge``) where a partial result would mislead.
    """
    lab = read_lab_csv(path)
    err = lab.first_error()
    if err is not None:
        raise err
    if not lab.rows:
        raise InputError(f"{path}: no results")
    return lab.rows


def read_non_detect_policy(path: str | Path) -> str | None:
    """The optional ``non_detect`` key of the rates TOML (``zero``, ``half`` or ``dl``), or None."""
    path = str(path)
    data, table = _rates_toml(path)
    value = table.get("non_detect", data.get("non_detect"))
    if value is not None and value not in POLICIES:
        raise InputError(f"{path}: non_detect: expected one of {', '.join(POLICIES)}, got {value!r}")
    return value
