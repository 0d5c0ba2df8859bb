"""The annual report counts the grease program (``sewerwatch report annual``: its data and its
PDF read back with pdftotext), against the real database.

The year is tests/fog_support.py's, loaded through the command line (300 establishments, 306
devices, its pump-outs and Kitchen 123's by hand: ``pumpout_csv()[1] + 1``), with:

- two grease inspections in 2026 (``fog inspect add``): Cafe 1 on 11-02 (4 + 3 in) and Cafe 2
  on 11-03 (8 + 5 = 13 in of 48, 27 %: an inspection reading, not a finding of the counts);
- Cafe 10's interceptor GI-1 recorded missing on 11-04 (``fog missing add``): 1 "missing
  device", Cafe 10's first finding, a warning letter;
- every notice due issued, dated the day the findings are judged on (fe.as_of(), in 2026):
  fog_enforcement_support's 12 warning letters, 3 notices of violation and 2 forfeitures
  (no blockage this time) and Cafe 10's warning letter: 13 + 3 + 2 = 18;
- Cafe 10's letter answered today and escalated with a note: a notice of violation, today.
  Counted in 2026 when today is in 2026 (19 notices, 4 of violation, 1 escalated).

Findings (fog_support.EXPECTED and the missing device): overdue 13, too late 3, over capacity
1, unregistered hauler 1, missing device 1.
"""

from __future__ import annotations

import json

import fog_enforcement_support as fe
import fog_support as fs
from test_fog_cli import db, load_year, ok, village  # noqa: F401 - the fixtures


def test_the_annual_report_counts_the_grease_program(db, village):  # noqa: F811
    from lab.documents.pdf import pdf_text

    load_year(village, db)
    for licence, day, fog, solids in (("F0001", "2026-11-02", "4", "3"), ("F0002", "2026-11-03", "8", "5")):
        ok(village, db, "fog", "inspect", "add", licence, "--date", day, "--baffles", "in place", "--cover", "sound",
           "--fog-depth", fog, "--solids-depth", solids, "--scraping", "yes", "--strainers", "yes", "--training", "yes")
    ok(village, db, "fog", "missing", "add", "F0010", "--device", "GI-1", "--date", "2026-11-04")
    as_of = fe.as_of().isoformat()
    out = ok(village, db, "fog", "notices", "issue", "--all", "--as-of", as_of, "--issued", as_of)
    assert "18 notices issued" in out
    letter = next(n["number"] for n in json.loads(ok(village, db, "fog", "notices", "list", "--establishment", "F0010",
                                                      "--json")))
    ok(village, db, "fog", "notices", "respond", letter, "--received", fe.today().isoformat(), "--note", "none")
    ok(village, db, "fog", "notices", "escalate", letter, "--note", "no manifest was sent")
    this_year = fe.today().year == 2026
    rep = json.loads(ok(village, db, "report", "annual", "--year", "2026", "--out", "annual", "--json"))
    g = rep["grease"]
    n = fs.pumpout_csv()[1] + 1
    assert (g["establishments"], g["devices"], g["pumpouts"], g["inspections"]) == (300, 306, n, 2)
    assert g["findings"] == {**fs.EXPECTED, "missing device": 1}
    assert g["actions"] == {fe.WL: 13, fe.NOV: 4 if this_year else 3, fe.FN: 2}
    assert (g["notices"], g["escalated"]) == ((19, 1) if this_year else (18, 0))
    text = " ".join(pdf_text((village / "annual" / "annual-report-2026.pdf").read_bytes(), layout=False).split())
    for words in ("The grease program", "300 establishments with 306 grease removal devices on record",
                  f"{n} pump-outs reported and 2 grease inspections in 2026", "overdue for pumping 13",
                  "pumped too late (the 25 % rule) 3", "a grease removal device missing 1", "Warning letter 13",
                  f"Notices issued: {g['notices']}; escalated to the next step for want of an adequate response: "
                  f"{g['escalated']}."):
        assert words in text, words
    for word in ("missing device", "unregistered hauler", "fog_", "{"):
        assert word not in text, word
