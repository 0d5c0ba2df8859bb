"""Bills that cannot mislead, as the clerk types the commands and reads
the PDFs: a bill whose volume is unknown is not issued (exit 2 naming the site and what is
missing) unless --draft, which marks every page DRAFT and prints the coverage; no bare $0.00
for a bill that could not be computed; the chart draws every lab result the table lists; the
legend covers no data; bills are letter-size PDFs, the same bytes for the same bill."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from enforcement_support import RATES_TOML, run, sw, village
from lab.documents.bill_page import render_html
from lab.documents.loadings_chart import chart_series, loadings_figure
from lab.documents.pdf import page_count, page_size, pdf_text, write_pdf

pytestmark = pytest.mark.services


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\f", " ")).strip()


def one_day_of_flow(db) -> None:
    """The candy maker's meter sent readings for one whole day of 2026Q1 (Feb 10, Chicago): 1/90 of it."""
    with db.connect() as conn:
        sid = conn.execute("SELECT se.id FROM sensors se JOIN sites s ON s.id = se.site_id "
                           "WHERE s.key = 'candy' AND se.name = 'flow'").fetchone()[0]
        t0 = datetime(2026, 2, 10, 6, tzinfo=timezone.utc)
        with conn.cursor().copy("COPY readings (time, sensor_id, value, quality) FROM STDIN") as cp:
            for i in range(24 * 60 + 1):
                cp.write_row((t0 + timedelta(minutes=i), sid, 100.0, 0))


def test_a_bill_without_a_known_volume_is_not_issued_unless_drafted(db, tmp_path):
    village(tmp_path, db, dump=False)
    one_day_of_flow(db)
    r = sw(tmp_path, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", "bills")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("sewerwatch: error: bill 2026Q1: not issued, volume unknown for candy (the flow "
                               "readings cover 1.1 % of the quarter, a bill needs 95 %, and rates.toml gives no "
                               "bill.volume_mg.candy)")
    assert "plating" not in r.stderr and not (tmp_path / "bills").exists()
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM bills").fetchone()[0] == 0

    # without plating's volume too: two drafts, neither a bare $0.00
    (tmp_path / "rates.toml").write_text(RATES_TOML.replace("plating = 0.12\n", ""))
    r = run(tmp_path, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", "drafts", "--draft")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert not [x for x in lines if re.search(r"\$0\.00\s*$", x)], lines
    candy = next(x for x in lines if x.startswith("candy"))
    plating = next(x for x in lines if x.startswith("plating"))
    # candy's use charge on the day metered: 144,000 gal x $6.37 / 1,000 = $917.28, not a bill
    assert candy == ("candy                2026Q1  DRAFT  not a bill: volume unknown (the flow readings cover 1.1 % of "
                     "the quarter, a bill needs 95 %, and rates.toml gives no bill.volume_mg.candy); $917.28 on the "
                     "partial metered volume")
    assert plating == ("plating              2026Q1  DRAFT  not computed: volume unknown (no flow meter, and "
                       "rates.toml gives no bill.volume_mg.plating)")
    assert lines[-1] == "wrote 6 files to drafts (drafts: nothing issued or stored)"
    for site, cover in (("candy", "flow readings cover 1.1 % of the quarter"), ("plating", "no flow meter")):
        pdf = tmp_path / "drafts" / f"bill-2026Q1-{site}-draft.pdf"
        raw = pdf_text(pdf, layout=False)
        n = page_count(pdf)
        assert raw.count("DRAFT: not issued") == n and raw.count(f"DRAFT, {cover}") == n, (site, n)
        assert page_size(pdf) == "612 x 792 pts (letter)"
    # plating's chart: its four results as concentrations (no volume, so no loadings), as the table lists them
    bill = json.loads((tmp_path / "drafts" / "bill-2026Q1-plating-draft.json").read_text())
    what = chart_series(bill)
    assert what["kind"] == "concentrations" and bill["loadings"] == []
    assert sum(len(p) for p in what["series"].values()) == len(bill["results"]) == 4
    text = flat(pdf_text(tmp_path / "drafts" / "bill-2026Q1-plating-draft.pdf", layout=False))
    assert "No charge computed: the quarter's volume is unknown." in text and "no lab results" not in text.lower()
    assert "A loading needs its day's volume: 0 of 4 results have one" in text
    assert "Volume: unknown: no flow meter, and rates.toml gives no bill.volume_mg.plating" in text
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM bills").fetchone()[0] == 0


def test_an_issued_bill_pdf_its_chart_and_legend(db, tmp_path):
    village(tmp_path, db, dump=False)
    (tmp_path / "rates.toml").write_text(RATES_TOML + "candy = 0.4\n")
    r = run(tmp_path, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", "bills")
    assert r.returncode == 0, r.stderr
    assert "plating              2026Q1       $794.42" in r.stdout, r.stdout
    bill = json.loads((tmp_path / "bills" / "bill-2026Q1-plating.json").read_text())
    # BOD 400 over 250: 0.12 MG x 150 x 8.34 = 150.12 lb x $0.20 = $30.02; use: 120,000 gal x 6.37 / 1,000 = $764.40
    assert [(c["charge"], c["dollars"]) for c in bill["charges"]] == [("surcharge", 30.02), ("sewer use charge", 764.4)]
    what = chart_series(bill)
    assert what["kind"] == "loadings" and sum(len(p) for p in what["series"].values()) == len(bill["results"]) == 4
    fig = loadings_figure(bill)
    FigureCanvasAgg(fig).draw()
    [ax] = fig.axes
    legend = ax.get_legend().get_window_extent()
    assert not legend.overlaps(ax.get_window_extent()), "the legend covers the plot"
    pdf = tmp_path / "bills" / "bill-2026Q1-plating.pdf"
    text = flat(pdf_text(pdf, layout=False))
    assert "DRAFT" not in text and "Sewer bill, 2026Q1: Lakeside Plating" in text
    assert "surcharge" in text and "$30.02" in text and "$764.40" in text and "total $794.42" in text
    assert page_size(pdf) == "612 x 792 pts (letter)"
    # the same bill, the same bytes
    assert write_pdf(render_html(bill), issued=datetime.fromisoformat(bill["issued"]).date()) == \
        write_pdf(render_html(bill), issued=datetime.fromisoformat(bill["issued"]).date())
    assert Path(pdf).stat().st_size > 10_000
