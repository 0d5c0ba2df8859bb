"""Sampling events against the real database: a month planned from the schedule, the chain of
custody read back from its PDF, the laboratory's file matched (missing, extra, unknown sample
id, held too long) and a sample held too long left due.
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from enforcement import schedules
from enforcement.sampling_plan import plan_month
from enforcement_support import run, write_village
from foundation.errors import InputError
from lab.documents.pdf import Letterhead, page_count, pdf_text
from lab.sampling import custody, events
from lab.store.results import import_lab_file

pytestmark = pytest.mark.services

CHI = ZoneInfo("America/Chicago")
HEAD = Letterhead("Village of Palmyra (test)", ("123 Main Street",), "Pat Example", "Superintendent")
#: the present of the tests: 2026-04-20 noon in Palmyra
NOW = datetime(2026, 4, 20, 12, tzinfo=CHI)


def village(conn) -> None:
    """Three users: the sausage maker's permit owes two 24-hour composites a month of BOD, TSS,
    TKN, P and FOG; the plater's one composite a month of cyanide and copper; the dairy, in
    Webster, owes the ordinance's quarterly BOD and TSS (§240-8), sampled by the village."""
    from limits.packs import load_pack
    from limits.permit_store import import_permit
    from limits.permits import parse_permit

    for key, name, pack in (("sausage", "Kettle Moraine Sausage", "palmyra-wi"),
                            ("plating", "Lakeside Plating", "palmyra-wi"), ("dairy", "Webster Dairy", "webster-wi")):
        conn.execute("INSERT INTO sites (key, name, pack) VALUES (%s, %s, %s)", (key, name, pack))
    for site, number, params, times in (("sausage", "PAL-IU-2026-05", ["bod5", "tss", "tkn", "tp", "fog"], 2),
                                        ("plating", "PAL-IU-2026-02", ["cn", "cu"], 1)):
        permit = parse_permit({"number": number, "site": site, "pack": "palmyra-wi", "issued": date(2026, 1, 15),
                               "effective": date(2026, 2, 1), "expires": date(2030, 1, 31),
                               "monitoring": [{"condition": "4", "parameters": params,
                                               "sample_type": "composite-24h-flow",
                                               "frequency": {"times": times, "per": "month"}}]},
                              f"{site}.toml", load_pack("palmyra-wi"))
        import_permit(conn, permit, actor="supt")


def test_a_month_planned_from_the_schedule_once(db):
    """May 2026 from April 20: the sausage maker owes 2 events (each of its 5 parameters), the
    plater 1 (cyanide, copper), the dairy 1 for the second quarter (BOD, TSS): 4 events.
    May's 21 working days (Friday 1 ... Friday 29) spread them: 2 events at indices
    int(0.5 × 21 / 2) = 5 and int(1.5 × 21 / 2) = 15, May 8 and May 22; 1 event at
    int(0.5 × 21) = 10, May 15; each at 09:00 CDT."""
    with db.connect() as conn:
        village(conn)
        plan = plan_month(conn, "2026-05", NOW, actor="coordinator")
        got = sorted((e.site, e.planned_at.astimezone(CHI).strftime("%m-%d %H:%M"), tuple(e.parameters),
                      e.sample_type, e.sampler) for e in plan.created)
        assert got == [("dairy", "05-15 09:00", ("bod5", "tss"), "grab", "utility"),
                       ("plating", "05-15 09:00", ("cn", "cu"), "composite", "user"),
                       ("sausage", "05-08 09:00", ("bod5", "tss", "tkn", "tp", "fog"), "composite", "user"),
                       ("sausage", "05-22 09:00", ("bod5", "tss", "tkn", "tp", "fog"), "composite", "user")]
        keys = [e.sample_key for e in plan.created]
        assert len(set(keys)) == 4 and all(k.startswith("SW-2605-") for k in keys)
        assert {e.point for e in plan.created} == {"control manhole"}
        # planned twice: refused, naming the events planned before
        with pytest.raises(InputError) as exc:
            plan_month(conn, "2026-05", NOW, actor="coordinator")
        assert "planned already" in str(exc.value) and all(k in str(exc.value) for k in keys)
        assert conn.execute("SELECT count(*) FROM sampling_events").fetchone()[0] == 4
        # one by one: a bad analyte is a one-line error naming it
        with pytest.raises(InputError, match="unknown analyte 'bodd'"):
            events.create(conn, "dairy", NOW, ["bodd"])


def test_the_chain_of_custody_reads_back(db):
    with db.connect() as conn:
        village(conn)
        plan = plan_month(conn, "2026-05", NOW, actor="coordinator")
        ev = next(e for e in plan.created if e.site == "sausage")
        pdf = custody.render_pdf(ev, HEAD, date(2026, 4, 20))
        text = " ".join(pdf_text(pdf, layout=False).split())
    assert page_count(pdf) == 1                    # five parameters and the hand-offs on one sheet
    assert f"Sample id: {ev.sample_key}" in text
    assert "Kettle Moraine Sausage" in text and "control manhole" in text and "24-hour composite" in text
    assert "2026-05-08 09:00 CDT" in text
    assert "Biochemical oxygen demand, 5-day 20 °C 1 L plastic or glass cool to 6 °C or below 48 hours" in text
    assert "Total Kjeldahl nitrogen 500 mL plastic or glass sulfuric acid (H2SO4) to pH below 2; cool to 6 °C or " \
           "below 28 days" in text
    assert "hydrochloric (HCl) or sulfuric acid (H2SO4) to pH below 2" in text      # FOG
    assert "40 CFR 136.3(e), Table II" in text
    assert "relinquished by (signature) date and time received by (signature) date and time" in text
    for word in ("bod5", "tkn", "PAL-IU-2026-05:4", "sampling_events", ".py", ".toml", "None"):
        assert word not in text, word


def _lab_file(tmp_path, sausage: str, dairy: str):
    """The sausage maker's May 8 composite (collected May 9 09:00 CDT) comes back without FOG and
    with cyanide nobody asked for; the dairy's grab of May 15 09:00 CDT with BOD analysed May 17
    11:00 CDT, 50 hours later (the limit is 48), and TSS the next day (24 h of 168); the plater's
    results under a sample id no event has; one row analysed before it was collected."""
    rows = [f"{sausage},sausage,2026-05-09T09:00:00-05:00,{a},{v},mg/l,composite,2026-05-09T15:00:00-05:00"
            for a, v in (("bod5", 310), ("tss", 280), ("tkn", 45), ("tp", 6.5), ("cn", 0.02))]
    rows += [f"{dairy},dairy,2026-05-15T09:00:00-05:00,bod5,190,mg/l,grab,2026-05-17T11:00:00-05:00",
             f"{dairy},dairy,2026-05-15T09:00:00-05:00,tss,150,mg/l,grab,2026-05-16T09:00:00-05:00",
             "LP-0515,plating,2026-05-15T09:00:00-05:00,cu,0.4,mg/l,composite,2026-05-20T09:00:00-05:00",
             "LP-0516,plating,2026-05-16T09:00:00-05:00,cu,0.4,mg/l,composite,2026-05-15T09:00:00-05:00"]
    f = tmp_path / "may.csv"
    f.write_text("sample_id,site,collected,analyte,value,unit,sample_type,analysed_at\n" + "\n".join(rows) + "\n")
    return f


def test_results_matched_missing_extra_and_held_too_long(db, tmp_path):
    """Schedule of the dairy's second quarter after the import: BOD returned but held 50 h > 48 h,
    so not taken (0 of 1); TSS held 24 h ≤ 168 h, taken (1 of 1): the quarter is still due.
    Without the hold rule it would be taken."""
    with db.connect() as conn:
        village(conn)
        plan = plan_month(conn, "2026-05", NOW, actor="coordinator")
        sausage = next(e for e in plan.created if e.site == "sausage").sample_key
        dairy = next(e for e in plan.created if e.site == "dairy").sample_key
        conn.commit()
        report = import_lab_file(conn, _lab_file(tmp_path, sausage, dairy), actor="lab",
                                 now=datetime(2026, 5, 21, 12, tzinfo=CHI))
        assert report.stored == 8 and [(b.line, b.reason.split(":")[0]) for b in report.bad] == [(10, "analysed_at")]
        assert "is before the sample was collected" in report.bad[0].reason
        m = report.sampling
        assert sorted((e["sample"], e["missing"], e["extra"], e["over_hold"]) for e in m["events"]) == sorted(
            [(sausage, ["fog"], ["cn"], []), (dairy, [], [], ["bod5"])])
        assert m["unknown"] == ["LP-0515"]
        assert [(h["sample"], h["analyte"], h["held_hours"]) for h in m["over_hold"]] == [(dairy, "bod5", 50.0)]
        ev = events.show(conn, dairy)
        assert ev.state == "returned" and ev.sampled_at == datetime(2026, 5, 15, 9, tzinfo=CHI)
        bod = next(r for r in ev.results if r["analyte"] == "bod5")
        assert (bod["value"], bod["over_hold"], bod["held_hours"]) == (190, True, 50.0)   # kept, flagged
        st = {s.requirement.id: s for s in schedules.schedule(conn, datetime(2026, 5, 21, 12, tzinfo=CHI),
                                                              site_key="dairy")}
        q2 = st["webster-wi:§240-8"]
        assert (q2.period.name, q2.state, q2.counts) == ("2026Q2", "due", {"bod5": 0, "tss": 1})
        assert conn.execute("SELECT count(*) FROM dead_letters WHERE source = 'lab-import'").fetchone()[0] == 1
        # the calendar: each event on its planned day; the dairy's held too long, the sausage
        # maker's missing FOG, the two not returned still due
        from enforcement import calendar
        got = sorted((e.day.isoformat(), e.site, e.state) for e in calendar.entries(
            conn, date(2026, 5, 1), date(2026, 6, 1), datetime(2026, 5, 21, 12, tzinfo=CHI)) if e.kind == "sampling-event")
        assert got == [("2026-05-08", "sausage", "missing"), ("2026-05-15", "dairy", "missing"),
                       ("2026-05-15", "plating", "due"), ("2026-05-22", "sausage", "due")]


def test_the_command_line_lists_shows_and_prints(db, tmp_path):
    """The same events through ``sewerwatch sampling``: list, show with what is missing, custody."""
    write_village(tmp_path)
    assert run(tmp_path, db, "db", "migrate").returncode == 0
    with db.connect() as conn:
        conn.execute("INSERT INTO sites (key, name, pack) VALUES ('dairy', 'Webster Dairy', 'webster-wi') "
                     "ON CONFLICT (key) DO NOTHING")
    r = run(tmp_path, db, "sampling", "add", "--site", "dairy", "--at", "2026-05-15T09:00", "--parameters", "bod5,tss",
            "--by", "utility")
    assert r.returncode == 0, r.stderr
    key = r.stdout.split()[3]
    r = run(tmp_path, db, "sampling", "add", "--site", "dairy", "--at", "2026-05-16", "--parameters", "bod5,xyz")
    assert r.returncode == 2 and "parameters: unknown analyte 'xyz'" in r.stderr
    with db.connect() as conn:
        ev = events.show(conn, key)
        assert (ev.planned_at, ev.sampler, ev.parameters) == (datetime(2026, 5, 15, 9, tzinfo=CHI), "utility",
                                                              ["bod5", "tss"])
        import_lab_file(conn, _lab_file(tmp_path, "NONE-1", ev.sample_key), actor="lab",
                        now=datetime(2026, 5, 21, 12, tzinfo=CHI))
    r = run(tmp_path, db, "sampling", "list", "--month", "2026-05")
    assert r.returncode == 0, r.stderr
    assert f"{ev.sample_key}  2026-05-15 09:00 CDT  Webster Dairy: bod5, tss" in r.stdout
    assert "held too long bod5" in r.stdout
    r = run(tmp_path, db, "sampling", "show", ev.sample_key)
    assert r.returncode == 0, r.stderr
    assert "HELD TOO LONG" in r.stdout and "missing: none" in r.stdout
    r = run(tmp_path, db, "sampling", "custody", ev.sample_key, "--out", "coc.pdf")
    assert r.returncode == 0, r.stderr
    assert ev.sample_key in pdf_text(tmp_path / "coc.pdf")
    r = run(tmp_path, db, "sampling", "cancel", ev.sample_key)
    assert r.returncode == 2 and "results returned already: it cannot be cancelled" in r.stderr
    r = run(tmp_path, db, "sampling", "show", "SW-0000-0000")
    assert r.returncode == 2 and "no event has the sample id 'SW-0000-0000'" in r.stderr
