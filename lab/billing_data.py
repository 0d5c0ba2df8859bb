"""The billing numbers of ``lab/data/billing.toml`` (each cited there) and the §13.61 SIC table."""

from __future__ import annotations

import csv
import tomllib
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


@lru_cache(maxsize=1)
def billing() -> dict:
    """The parsed ``billing.toml``."""
    return tomllib.loads((DATA / "billing.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def sic_table() -> tuple[tuple[int, int, str, float], ...]:
    """Palmyra §13.61(2) as (first SIC, last SIC, description, gallons per employee-hour).

    Range rows of the ordinance (``5942-9``, ``6022-59``) cover every code from the first to
    the last, the suffix replacing the first code's last digits (5942-5949, 6022-6059).
    """
    rows = []
    with open(DATA / "palmyra_rec_sic.csv", newline="", encoding="utf-8") as f:
        lines = (line for line in f if not line.startswith("#"))
        for rec in csv.DictReader(lines):
            code = rec["sic"]
            if "-" in code:
                first, suffix = code.split("-")
                last = first[: len(first) - len(suffix)] + suffix
            else:
                first = last = code
            rows.append((int(first), int(last), rec["description"], float(rec["gal_per_employee_hour"])))
    return tuple(rows)
