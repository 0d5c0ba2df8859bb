"""The grease program's CSV imports: the utility's business-licence list (establishments and
their grease removal devices, one row a device) and a hauler's pump-out reports.

Each import is read whole and checked first; without ``commit`` it is a preview (nothing
stored). With ``commit`` the good rows are stored and every rejected row goes to the dead
letters (``source`` ``fog-import`` or ``fog-pumpout-import``, topic ``<file>:<line>``, the
row's text, a one-line reason), in one transaction.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from datetime import date

from foundation.errors import InputError
from fog import store
from fog.rules import Rules

EST_SOURCE = "fog-import"
PUMP_SOURCE = "fog-pumpout-import"

#: The columns of the business-licence list (one row per device; an establishment with two
#: devices has two rows with the same licence). ``contact``, ``location``, ``installed`` and
#: ``interval_days`` may be empty; ``segment`` (the sewer segment or manhole the establishment
#: drains to, :mod:`fog.blockages`) may be empty or absent.
EST_COLUMNS = ("licence", "name", "address", "contact", "category", "device", "kind", "capacity_gal",
               "liquid_depth_in", "location", "installed", "interval_days", "segment")
EST_REQUIRED = ("licence", "name", "address", "category", "device", "kind", "capacity_gal", "liquid_depth_in")
#: The columns of a hauler's pump-out CSV (``device`` may be empty for a one-device establishment).
PUMP_COLUMNS = ("establishment", "device", "date", "hauler", "gallons", "fog_depth_in", "solids_depth_in",
                "receiving_facility", "manifest")


@dataclass
class Report:
    """What an import found: ``good`` rows (checked, ready to store), ``rejected``
    ``(line, reason, row text)`` and, after a commit, ``committed``."""

    filename: str
    good: list = field(default_factory=list)
    rejected: list = field(default_factory=list)
    committed: bool = False

    def summary(self) -> str:
        verb = "stored" if self.committed else "would store (a preview: nothing stored; --commit stores)"
        return f"{self.filename}: {len(self.good)} rows {verb}; {len(self.rejected)} rejected"


def _rows(text: str, filename: str, columns: tuple, required: tuple):
    """``(line, row dict, row text)`` of a CSV whose header holds ``required``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(f"{filename}: the header lacks {', '.join(missing)} (expected columns: {', '.join(columns)})")
    reader.fieldnames = header
    for row in reader:
        line = reader.line_num
        raw = lines[line - 1] if 0 < line <= len(lines) else ""
        if not any((v or "").strip() for k, v in row.items() if k is not None):
            continue
        if row.get(None):
            yield line, None, raw
            continue
        yield line, {k: (row.get(k) or "").strip() for k in columns}, raw


def _dead(conn, source: str, report: Report, actor) -> None:
    if report.rejected:
        conn.cursor().executemany(
            "INSERT INTO dead_letters (source, topic, payload, reason, detail) VALUES (%s, %s, %s, %s, %s)",
            [(source, f"{report.filename}:{line}", raw.encode("utf-8"), reason,
              json.dumps({"file": report.filename, "line": line, "actor": store.actor_name(actor)}))
             for line, reason, raw in report.rejected])


def _positive(row: dict, key: str, unit: str) -> float:
    try:
        v = float(row[key])
    except ValueError:
        raise InputError(f"{key}: expected a number of {unit}, got {row[key]!r}") from None
    if not 0 < v < float("inf"):
        raise InputError(f"{key}: expected a number of {unit} above 0, got {row[key]!r}")
    return v


#: The device's columns: a row with none of them is an establishment without a device (one the
#: ordinance requires a device of is then a finding, :mod:`fog.missing_devices`).
DEVICE_COLUMNS = ("device", "kind", "capacity_gal", "liquid_depth_in")


def _device_row(row: dict, rules: Rules, registered_on: date) -> dict:
    bare = not any(row[k] for k in DEVICE_COLUMNS)
    for key in EST_REQUIRED:
        if not row[key] and not (bare and key in DEVICE_COLUMNS):
            raise InputError(f"{key}: missing")
    cat = row["category"].lower()
    if cat not in store.CATEGORIES:
        raise InputError(f"category: {row['category']!r} is none of {', '.join(store.CATEGORIES)}")
    if len(row["segment"]) > 60:
        raise InputError(f"segment: at most 60 characters, got {len(row['segment'])}")
    if bare:
        return {"licence": row["licence"], "name": row["name"], "address": row["address"], "contact": row["contact"],
                "category": cat, "segment": row["segment"], "label": None}
    kind = row["kind"].lower()
    if kind not in store.DEVICE_KINDS:
        raise InputError(f"kind: {row['kind']!r} is none of {', '.join(store.DEVICE_KINDS)}")
    installed = None
    if row["installed"]:
        try:
            installed = date.fromisoformat(row["installed"])
        except ValueError:
            raise InputError(f"installed: expected a date such as 2019-05-01, got {row['installed']!r}") from None
        if installed > registered_on:
            raise InputError(f"installed: {installed} is after the day the program takes it on ({registered_on})")
    interval = rules.interval_days
    if row["interval_days"]:
        if not row["interval_days"].isdigit() or not 1 <= int(row["interval_days"]) <= 3650:
            raise InputError(f"interval_days: expected a whole number of days from 1 to 3650, "
                             f"got {row['interval_days']!r}")
        interval = int(row["interval_days"])
    return {"licence": row["licence"], "name": row["name"], "address": row["address"], "contact": row["contact"],
            "category": cat, "segment": row["segment"], "label": row["device"], "kind": kind,
            "capacity_gal": _positive(row, "capacity_gal", "gallons"),
            "liquid_depth_in": _positive(row, "liquid_depth_in", "inches"), "location": row["location"],
            "installed_on": installed, "interval_days": interval, "registered_on": registered_on}


def import_establishments(conn, text: str, filename: str, rules: Rules, actor, *, commit: bool = False,
                          registered_on: date) -> Report:
    """Import the business-licence list (:data:`EST_COLUMNS`).

    A row is rejected, with its reason, for a field missing or out of its list, a number or
    date that is not one, a device the establishment has on record already or earlier in the
    file, or a licence whose name differs from its earlier row or its record. A row with none
    of :data:`DEVICE_COLUMNS` is an establishment without a device (its licence not on record).

    Parameters
    ----------
    text, filename : str
        The CSV and its name (for the report and the dead letters).
    rules : Rules
        The program's default interval for a row without ``interval_days`` [days].
    commit : bool
        Store the good rows and the rejected ones' dead letters (else a preview).
    registered_on : date
        The day the program takes the devices on (no pump-out is due before it).
    """
    report = Report(filename)
    known = {r[0]: r[1] for r in conn.execute("SELECT licence, name FROM fog_establishments").fetchall()}
    have = {(r[0], r[1].lower()) for r in conn.execute(
        "SELECT e.licence, d.label FROM fog_devices d JOIN fog_establishments e ON e.id = d.establishment_id")}
    seen: dict[str, tuple[str, int]] = {}
    seen_dev: dict[tuple, int] = {}
    for line, row, raw in _rows(text, filename, EST_COLUMNS, EST_REQUIRED):
        try:
            if row is None:
                raise InputError("more fields than the header has columns")
            d = _device_row(row, rules, registered_on)
            name_was = known.get(d["licence"])
            if name_was is not None and name_was != d["name"]:
                raise InputError(f"licence {d['licence']} is {name_was} on record, not {d['name']}")
            if d["licence"] in seen and seen[d["licence"]][0] != d["name"]:
                raise InputError(f"licence {d['licence']} is {seen[d['licence']][0]} on line {seen[d['licence']][1]}")
            k = (d["licence"], (d["label"] or "").lower())
            if d["label"] is None and d["licence"] in known:
                raise InputError(f"{d['name']} is on record already")
            if k in have:
                raise InputError(f"{d['name']} has device {d['label']} on record already")
            if k in seen_dev:
                what = f"device {d['label']}" if d["label"] else "without a device"
                raise InputError(f"{d['name']} {what} is on line {seen_dev[k]} already")
        except InputError as exc:
            report.rejected.append((line, str(exc), raw))
            continue
        seen.setdefault(d["licence"], (d["name"], line))
        seen_dev[k] = line
        report.good.append(d)
    if commit:
        ids = dict(conn.execute("SELECT licence, id FROM fog_establishments").fetchall())
        who = store.actor_name(actor)
        for d in report.good:
            if d["licence"] not in ids:
                ids[d["licence"]] = conn.execute(
                    "INSERT INTO fog_establishments (licence, name, address, contact, category, segment, recorded_by) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (d["licence"], d["name"], d["address"], d["contact"], d["category"], d["segment"],
                     who)).fetchone()[0]
        conn.cursor().executemany(
            "INSERT INTO fog_devices (establishment_id, label, kind, capacity_gal, liquid_depth_in, location, "
            "installed_on, interval_days, registered_on) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(ids[d["licence"]], d["label"], d["kind"], d["capacity_gal"], d["liquid_depth_in"], d["location"],
              d["installed_on"], d["interval_days"], d["registered_on"]) for d in report.good if d["label"]])
        _dead(conn, EST_SOURCE, report, actor)
        store._audit(conn, actor, "fog.import", filename, {"devices": sum(1 for d in report.good if d["label"]),
                                                           "rejected": len(report.rejected)})
        report.committed = True
    return report


def import_pumpouts(conn, text: str, filename: str, actor, *, today: date, commit: bool = False) -> Report:
    """Import a hauler's pump-out reports (:data:`PUMP_COLUMNS`), each checked as
    :func:`fog.store.check_pumpout` checks one entered by hand (a date after ``today``, the
    village's day, refused); a manifest number twice in the file is rejected the second time,
    naming the line of the first."""
    report = Report(filename)
    manifests: dict[str, int] = {}
    for line, row, raw in _rows(text, filename, PUMP_COLUMNS, tuple(c for c in PUMP_COLUMNS if c != "device")):
        try:
            if row is None:
                raise InputError(f"more fields than the header's {len(PUMP_COLUMNS)} columns")
            if row["manifest"] in manifests:
                raise InputError(f"manifest {row['manifest']} is on line {manifests[row['manifest']]} already")
            p = store.check_pumpout(conn, row, today)
        except InputError as exc:
            report.rejected.append((line, str(exc), raw))
            continue
        manifests[p["manifest"]] = line
        report.good.append(row)
    if commit:
        for row in report.good:
            store.add_pumpout(conn, row, actor, source=f"import {filename}", today=today)
        _dead(conn, PUMP_SOURCE, report, actor)
        report.committed = True
    return report
