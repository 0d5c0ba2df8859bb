"""Inspections with photos and the annual report's field work:
an inspection recorded with a photo (checked by its own bytes, re-encoded without the
camera's metadata), its deficient item a finding; the annual report (JSON, HTML, and the PDF
read back with pdftotext) lists the year's inspections and whether samples were taken
(40 CFR 403.12(i)), the calibrations, and every maintenance window with the readings it kept
from being judged, the one awaiting approval too. Against the real database."""

from __future__ import annotations

import io
import json
import subprocess

from PIL import Image

from enforcement_support import village
from test_field_windows import WINDOW_AT, WINDOW_END, _ok, cli


def _jpeg_with_gps(path):
    im = Image.new("RGB", (640, 480), (90, 120, 60))
    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"                         # Make
    exif[0x8825] = {2: (43.0, 2.0, 30.0), 4: (88.0, 35.0, 10.0)}    # GPS: where the inspector stood
    im.save(path, "JPEG", exif=exif)
    return path


def test_an_inspection_with_a_photo_and_the_years_field_work_in_the_annual_report(tmp_path, db):
    village(tmp_path, db, lab=False)
    r = _ok(cli(tmp_path, db, "inspections", "checklist", "--site", "candy"))
    assert "2. Grease interceptors maintained in continuous, efficient operation (cleaning records) " \
           "(Village of Palmyra Code §13.51)" in r.stdout
    (tmp_path / "notes.jpg").write_text("not a photo at all")
    r = cli(tmp_path, db, "inspections", "record", "--site", "candy", "--photo", str(tmp_path / "notes.jpg"))
    assert r.returncode == 2 and "not a photo: expected a JPEG, PNG or WebP image" in r.stderr
    photo = _jpeg_with_gps(tmp_path / "interceptor.jpg")
    r = _ok(cli(tmp_path, db, "inspections", "record", "--site", "candy", "--item", "1=ok",
                "--item", "2=deficient:no cleaning records since March", "--sampled", "--representative", "Pat Owner",
                "--inspector", "Ines Inspector", "--photo", str(photo), "--at", "2026-07-14T10:00:00-05:00"))
    assert "1 deficient item(s), 1 photo(s); findings" in r.stdout
    with db.connect() as conn:
        [(content, media)] = conn.execute("SELECT content, media_type FROM inspection_photos").fetchall()
        [(summary, citation)] = conn.execute("SELECT summary, citation FROM findings "
                                             "WHERE kind = 'inspection-deficiency'").fetchall()
    stored = Image.open(io.BytesIO(bytes(content)))
    assert media == "image/jpeg" and stored.size == (640, 480) and not stored.getexif()   # the GPS position gone
    assert "no cleaning records since March" in summary and citation == "Village of Palmyra Code §13.51"

    # a calibration, a window in effect over the dump, and one awaiting approval
    _ok(cli(tmp_path, db, "calibrations", "record", "candy/ph", "--buffer", "4.00:4.10:4.02", "--buffer",
            "10.00:9.90:10.01", "--technician", "J. Smith", "--at", "2026-06-09T09:00:00-05:00"))
    r = _ok(cli(tmp_path, db, "maintenance", "start", "candy/ph", "--reason", "calibration", "--person", "J. Smith",
                "--at", WINDOW_AT))
    w1 = int(r.stdout.split("opened maintenance window ")[1].split(":")[0])
    _ok(cli(tmp_path, db, "maintenance", "end", str(w1), "--at", WINDOW_END))
    _ok(cli(tmp_path, db, "maintenance", "approve", str(w1), user="super1"))
    r = _ok(cli(tmp_path, db, "maintenance", "start", "candy/ph", "--reason", "cleaning", "--person", "R. Doe",
                "--at", "2026-06-09T12:00:00-05:00"))
    w2 = int(r.stdout.split("opened maintenance window ")[1].split(":")[0])

    r = _ok(cli(tmp_path, db, "report", "annual", "--year", "2026", "--on", "2027-01-15", "--out", "rep", "--json"))
    rep = json.loads((tmp_path / "rep" / "annual-report-2026.json").read_text())
    candy = next(u for u in rep["users"] if u["site"] == "candy")
    f = candy["field"]
    assert [(w["id"], w["approval"], w["readings_excluded"]) for w in f["windows"]] == [
        (w1, "approved", 40), (w2, "pending", 0)]
    assert [(c["sensor"], c["result"], c["technician"]) for c in f["calibrations"]] == [("ph", "pass", "J. Smith")]
    assert [(i["inspector"], i["sampled"], i["deficient"], i["photos"]) for i in f["inspections"]] == [
        ("Ines Inspector", True, ["Grease interceptors maintained in continuous, efficient operation (cleaning "
                                  "records)"], 1)]
    # the state's electronic report counts the significant users not inspected (ICIS-NPDES SIUsNotInspected)
    from enforcement.program import performance_summary
    from enforcement.settings import Program
    every = tuple(u["site"] for u in rep["users"])                     # each user taken as significant here
    figures = {f["element"]: f for f in performance_summary(rep, Program(significant_users=every))["elements"]}
    siu = figures["NumberSIUs"]["users"]
    assert figures["SIUsNotInspected"]["users"] == [s for s in siu if s != "candy"] and "candy" in siu
    assert figures["SIUsNotInspected"]["value"] == len(siu) - 1
    from enforcement import icis
    summary = performance_summary(rep, Program(npdes_permit="WI0020231", significant_users=every))
    from enforcement.state_report import submitter
    who = submitter(Program(submitter_id="PALMYRA-WWTP"), rep["utility"], "Ines Inspector")
    assert icis.validate(icis.document_xml({**rep, "performance_summary": summary}, who)) == []   # EPA's schema 5.8
    t = rep["totals"]
    assert (t["field_inspections"], t["field_inspections_with_sampling"], t["field_calibrations"], t["field_windows"],
            t["field_windows_pending"], t["field_readings_excluded"]) == (1, 1, 1, 2, 1, 40)
    text = subprocess.run(["pdftotext", str(tmp_path / "rep" / "annual-report-2026.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "Inspections and sampling of the industrial users (40 CFR 403.12(i))" in " ".join(text.split())
    flat = " ".join(text.split())
    for words in ("Maintenance windows", "Calibrations and verifications", "2026-07-14 10:00 CDT", "Ines Inspector",
                  "calibration, J. Smith, cli", "2026-06-09 10:25 CDT to 2026-06-09 11:05 CDT", "cleaning, R. Doe, cli",
                  "since 2026-06-09 12:00 CDT, still open", "pending", "approved (super1)", "inspections (with sampling) 1 (1)"):
        assert words in flat, words
