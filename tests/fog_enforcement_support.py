"""The grease program's enforcement for the tests: the hand-counted year of
tests/fog_support.py (its EXPECTED unchanged), with the sewer crew's blockages, the segments
the establishments drain to, and the notices the grease guide
(enforcement/guides/grease-erp.toml) proposes for the findings, worked out by hand.

The findings are judged as of ``AS_OF`` = the earlier of today and 2026-12-31: any day from
2026-12-02 on gives the same findings (the last pump-outs are of 12-01; the next ones fall
due 2027-01-15 at the earliest), the never-pumped devices' findings dated that day.

**Segments.** ``F0042`` (Kitchen 42) and ``F0043`` (Cafe 43) are given the segment
``MH-14 to MH-15`` with ``fog segment``; ``F0300`` (Cafe 300, one interceptor, taken on
2026-12-01 so nothing is due yet) comes from a licence list with a ``segment`` column.

**Blockages** (``BLOCKAGES``): three at ``MH-14 to MH-15`` (2026-07-20, 2026-09-14 not
traced; 2026-11-09 traced to F0042) and one at ``MH-3`` (2026-05-05). Hot spots of 2026:
MH-14 to MH-15 with 3 (the last 11-09; traced to Kitchen 42; upstream Cafe 300, Cafe 43,
Kitchen 42 by name), then MH-3 with 1.

**Notices.** The guide: an establishment's 1st finding (overdue, too late, missing device,
unregistered hauler) in 365 days takes a warning letter, the 2nd a notice of violation, the
3rd and after a notice of forfeiture ($250); a blockage traced to it a notice of cost
recovery ($475). Over capacity has no step. Findings oldest first, the same day by device:

- LATE 5, 17, 42: one overdue each (10-20): 3 warning letters.
- OVER25 8, 60: too late 06-10 (warning letter), overdue 09-05 (notice of violation),
  overdue 12-01 (forfeiture): 2 of each.
- EXACT25 99: too late 12-01: a warning letter. UNREG 200: unregistered hauler 06-10: a
  warning letter. OVERCAP 123: over capacity: no notice.
- NEVER 250..254: overdue as of AS_OF: 5 warning letters; 250's trap HT-1, overdue the same
  day and after its GI-1 by label, its second: a notice of violation.
- F0042's blockage of 11-09: a notice of cost recovery (blockages count apart).

Warning letters 3 + 2 + 1 + 1 + 5 = 12, notices of violation 2 + 1 = 3, forfeitures 2, cost
recovery 1: 18 notices, $250 x 2 + $475 = $975 charged.
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import fog_support as fs

SEGMENT = "MH-14 to MH-15"
#: (date, location, what was found, by whom, the licence it was traced to or "")
BLOCKAGES = (("2026-07-20", SEGMENT, "grease and rags across the invert", "J. Rivera", ""),
             ("2026-09-14", SEGMENT, "grease mat 3 in thick", "J. Rivera", ""),
             ("2026-11-09", SEGMENT, "grease mat 4 in thick, traced by camera to the lateral", "J. Rivera", "F0042"),
             ("2026-05-05", "MH-3", "roots and grease", "K. Olson", ""))
#: A licence list with the segment column: one establishment taken on 2026-12-01.
EXTRA_CSV = (fs.HEADER + ",segment\n"
             f"F0300,Cafe 300,400 Oak St,Owner 300,restaurant,GI-1,interceptor,1000,48,rear yard,2020-06-01,90,"
             f"{SEGMENT}\n")


def today() -> date:
    """The village's day (America/Chicago, the test village's zone)."""
    return datetime.now(ZoneInfo("America/Chicago")).date()


def as_of() -> date:
    """The day the findings are judged on (see the module docstring)."""
    return min(today(), date(2026, 12, 31))


WL, NOV, FN, CR = "Warning letter", "Notice of violation", "Notice of forfeiture", "Notice of cost recovery"

#: The notices worked out by hand: licence -> [(step, kind of finding)], oldest finding first.
EXPECTED_NOTICES = {
    **{f"F{i:04d}": [(WL, "overdue")] for i in (5, 17)},
    "F0042": [(WL, "overdue"), (CR, "blockage")],
    **{f"F{i:04d}": [(WL, "too late"), (NOV, "overdue"), (FN, "overdue")] for i in fs.OVER25},
    "F0099": [(WL, "too late")], "F0200": [(WL, "unregistered hauler")],
    "F0250": [(WL, "overdue"), (NOV, "overdue")],
    **{f"F{i:04d}": [(WL, "overdue")] for i in (251, 252, 253, 254)},
}
EXPECTED_ACTIONS = {CR: 1, FN: 2, NOV: 3, WL: 12}


def load_enforcement(ok, village, db) -> None:
    """The segments and the blockages, through the command line (``ok(village, db, *args)``)."""
    (village / "extra.csv").write_text(EXTRA_CSV, encoding="utf-8")
    ok(village, db, "fog", "import", "extra.csv", "--registered", "2026-12-01", "--commit")
    for licence in ("F0042", "F0043"):
        ok(village, db, "fog", "segment", licence, SEGMENT)
    for day, where, found, by, traced in BLOCKAGES:
        ok(village, db, "fog", "blockage", "add", "--date", day, "--location", where, "--found", found, "--by", by,
           *(("--establishment", traced) if traced else ()))
