"""A village's finished year for the state's report (tests/test_state_report*.py): three
significant users in 2025, none with a permit, each judged by the ordinance's cyanide limit
(palmyra-wi §13.48(2)(l): 0.5 mg/l in any sample):

- Lakeside Plating (categorical): cyanide 2.0 mg/l on 2025-03-10, sampled by the village;
  a notice of violation issued on 2025-03-21 (and a penalty written down without the day it
  was collected);
- Sweet Creek Confections: cyanide 1.5 mg/l on 2025-04-02 in its own self-monitoring (no
  ``sampled_by``: the user's); no enforcement action;
- Palmyra Sausage Co.: cyanide 0.05 mg/l on 2025-05-05 by its own contractor and 0.04 mg/l on
  2025-09-01 by the village's contractor; inspected on 2025-06-10.

Seeded through the command line's functions (in process), not through the pages.
"""

from __future__ import annotations

from pathlib import Path

from enforcement_support import run

CONFIG = """
[utility]
name = "Village of Palmyra"
pack = "palmyra-wi"
timezone = "America/Chicago"

[documents]
letterhead = ["Department of Public Works, Wastewater Utility", "123 Main Street, Palmyra, WI 53156"]
signed_by = "Pat Example"
signer_title = "Utility Superintendent"

[enforcement.program]
npdes_permit = "WI0020231"
submitter_id = "PALMYRA-WWTP"
submitter_organization = "Village of Palmyra Wastewater Utility"
ordinance = "Ch. 13"
significant_users = ["plating", "candy", "sausage"]
categorical_users = ["plating"]

[[sites]]
id = "plating"
name = "Lakeside Plating"
sic = "3471"

[[sites]]
id = "candy"
name = "Sweet Creek Confections"
sic = "2065"

[[sites]]
id = "sausage"
name = "Palmyra Sausage Co."
sic = "2013"
"""

LAB = """sample_id,site,collected,analyte,value,unit,qualifier,laboratory,sampled_by
V-01,plating,2025-03-10 09:00,cn,2.0,mg/l,,Rock River Environmental Laboratory,village
U-01,candy,2025-04-02 10:00,cn,1.5,mg/l,,Rock River Environmental Laboratory,
C-01,sausage,2025-05-05 11:00,cn,0.05,mg/l,,Rock River Environmental Laboratory,user-contractor
C-02,sausage,2025-09-01 11:00,cn,0.04,mg/l,,Rock River Environmental Laboratory,village-contractor
"""


def seed(tmp: Path, db) -> Path:
    """Write the config, migrate, import and judge the year's results, issue the plater's
    notice, inspect the sausage maker; the staff accounts of ``web_support.add_people``."""
    from web_support import add_people, cheap_hashes

    cfg = tmp / "village.toml"
    cfg.write_text(CONFIG, encoding="utf-8")
    (tmp / "lab.csv").write_text(LAB, encoding="utf-8")
    for args in (("db", "migrate"), ("lab", "import", "lab.csv", "--actor", "lab"),
                 ("lab", "check", "--since", "2025-01-01", "--until", "2026-01-01", "--store"),
                 ("inspections", "record", "--site", "sausage", "--at", "2025-06-10T10:00:00-05:00",
                  "--inspector", "Ines Inspector", "--representative", "J. Nowak")):
        r = run(tmp, db, *args)
        assert r.returncode in (0, 4), (args, r.stdout, r.stderr)
    with db.connect() as conn:
        vid = conn.execute("SELECT v.id FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = 'plating' "
                           "AND v.parameter = 'cn'").fetchone()[0]
    r = run(tmp, db, "notice", "draft", "--violation", str(vid), "--on", "2025-03-20", "--out", "n", "--json")
    assert r.returncode == 0, r.stderr
    number = __import__("json").loads(r.stdout)["number"]
    r = run(tmp, db, "notice", "issue", number, "--on", "2025-03-21", "--out", "n")
    assert r.returncode == 0, r.stderr
    with db.connect() as conn:       # a penalty written down, the day it was collected not
        conn.execute("UPDATE notices SET penalty_dollars = 500 WHERE number = %s", (number,))
    with cheap_hashes():
        add_people(db.url)
    return cfg


def page_pdf(text: str) -> bytes:
    """A printed page as a PDF (WeasyPrint, as the documents are made)."""
    from datetime import date

    from lab.documents.pdf import write_pdf

    return write_pdf(f"<html><body><h1>Public notice</h1><p>{text}</p></body></html>", issued=date(2026, 1, 15))
