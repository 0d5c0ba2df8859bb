"""Any municipality's ordinance, from data files alone.

The City of Examplehaven, Minnesota is a FICTIONAL test fixture (tests/data/example-city/: its
made-up ordinance, its rule pack, a config, a rates file, lab results and readings), with
numbers unlike any shipped pack's: a pH range of 5.5 to 10.5 that must be left "for more than
one hour" (Sec. 22-41(b)), arsenic, barium and mercury limits (Sec. 22-42), an analyte of its
own (PFOS, Sec. 22-42(d)) and no surcharge formula. Nothing in the code names it; every
expectation below is worked out by hand from its ordinance's words.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from lab.documents.pdf import pdf_text
from limits import core
from limits.evaluator import SensorMeta, evaluate
from limits.packs import load_pack
from limits.streaming import StreamingEvaluator

ROOT = Path(__file__).resolve().parent.parent
CITY = ROOT / "tests" / "data" / "example-city"
PACK_FILE = CITY / "examplehaven-mn.toml"
CODE = "Examplehaven City Code"
#: the real villages' names and seed files: none may show up in the city's documents
BORROWED = ("Village", "village", "Palmyra", "Webster", "Westfield", "Superior", "003_44f871d49a02d8f5")


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\f", " ")).strip()


def _main(tmp_path: Path, db, *args) -> tuple[int, str, str]:
    """``sewerwatch --config city.toml ARGS`` in this process, in ``tmp_path``."""
    from sewerwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update({k: v for k, v in saved_env.items() if not k.startswith("SEWERWATCH_")},
                      SEWERWATCH_DB_URL=db.url)
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(tmp_path / "city.toml"), *args])
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return code, out.getvalue(), err.getvalue()


# --- live: the duration qualifier ------------------------------------------------------------

def _readings():
    import csv
    rows = list(csv.DictReader((CITY / "readings.csv").open()))
    t = np.array([int(datetime.fromisoformat(r["time"].replace("Z", "+00:00")).timestamp()) * core.US for r in rows])
    v = np.array([float(r["value"]) for r in rows])
    return t, v


def test_the_ph_range_must_be_left_for_more_than_an_hour_batch_and_live():
    pack = load_pack(str(PACK_FILE))
    t, v = _readings()
    meta = {0: SensorMeta("ph", 60.0)}
    # Sec. 22-41(b) "lower than 5.5 or higher than 10.5 for more than one hour": 50 minutes at
    # pH 5.0 from 13:00Z is no violation; 75 minutes at 11.0 from 14:30Z is one, from its first reading
    eps = evaluate(pack, np.zeros(len(t), dtype=np.int64), t, v, meta=meta)
    rules = pack.continuous_rules()
    got = [(rules[e["rule"]].id, int(e["start"]), int(e["last"]), float(e["peak"])) for e in eps]
    start = int(datetime(2026, 3, 3, 14, 30, tzinfo=timezone.utc).timestamp()) * core.US
    assert got == [("ph-max", start, start + 74 * core.MINUTE_US, 11.0)]

    # live: pushed in batches of 7 readings, the episode is open (alerted) only once past the
    # hour, and its start stays the first reading over
    ev = StreamingEvaluator(pack, meta)
    seen_open, closed = [], []
    for i in range(0, len(t), 7):
        closed += list(ev.push(np.zeros(len(t[i:i + 7]), dtype=np.int64), t[i:i + 7], v[i:i + 7]))
        for e in ev.open_episodes():
            seen_open.append((int(t[min(i + 6, len(t) - 1)]), int(e["start"])))
    closed += list(ev.flush())
    assert [(rules[e["rule"]].id, int(e["start"]), int(e["last"])) for e in closed] == \
        [("ph-max", start, start + 74 * core.MINUTE_US)]
    assert seen_open and all(s == start for _, s in seen_open)
    # first seen open in the batch whose last reading is the first more than 60 minutes after 14:30
    assert min(at for at, _ in seen_open) - start > 60 * core.MINUTE_US
    assert min(at for at, _ in seen_open) - start <= 67 * core.MINUTE_US


def test_check_cli_on_the_city_pack_file():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "check", "--pack", str(PACK_FILE), "--readings",
                        str(CITY / "readings.csv"), "--json"], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       env={k: v for k, v in os.environ.items() if not k.startswith("SEWERWATCH_")})
    assert r.returncode == 0, r.stderr
    [v] = json.loads(r.stdout)
    assert (v["rule"], v["start"], v["peak"], v["citation"]) == \
        ("ph-max", "2026-03-03T14:30:00Z", 11.0, f"{CODE} Sec. 22-41(b)")


# --- lab: violations, a notice, a bill -------------------------------------------------------

@pytest.fixture
def city(tmp_path, db):
    for f in ("city.toml", "examplehaven-mn.toml", "rates.toml", "lab.csv"):
        shutil.copy(CITY / f, tmp_path / f)
    code, _, err = _main(tmp_path, db, "db", "migrate")
    assert code == 0, err
    code, out, err = _main(tmp_path, db, "lab", "import", "lab.csv", "--actor", "lab", "--json")
    assert code == 0, err
    assert json.loads(out)["stored"] == 8
    return tmp_path


@pytest.mark.services
def test_lab_violations_a_notice_and_a_bill_that_say_city(city, db):
    code, out, err = _main(city, db, "lab", "check", "--since", "2026-01-01", "--until", "2026-04-01", "--store",
                           "--json")
    assert code == 0, err
    found = {(v["site"], v["rule"]): v for v in json.loads(out)["violations"]}
    # Sec. 22-42(a): arsenic 0.14 > 0.10 mg/l, mercury 3.5 ug/l > 2 ug/l, barium 2.6 > 2.0 mg/l;
    # (b): January's arsenic average (0.14 + 0.04) / 2 = 0.09 > 0.05 mg/l; (d), the city's own
    # analyte: PFOS 95 ng/l > 70 ng/l
    assert set(found) == {("anodizer", "arsenic-max"), ("anodizer", "mercury-max"), ("glassworks", "barium-max"),
                          ("anodizer", "arsenic-monthly"), ("anodizer", "pfos-max")}
    assert found[("anodizer", "mercury-max")]["limit"] == pytest.approx(0.002)      # 2 ug/l, stored in mg/l
    assert found[("anodizer", "pfos-max")]["limit"] == pytest.approx(70e-6)
    assert found[("anodizer", "arsenic-max")]["citation"] == f"{CODE} Sec. 22-42(a)"

    code, out, err = _main(city, db, "findings", "list", "--site", "anodizer", "--since", "2026-01-01", "--json")
    assert code == 0, err
    [v] = [x for x in json.loads(out)["violations"] if x["rule"] == "arsenic-max"]
    code, out, err = _main(city, db, "notice", "draft", "--violation", str(v["id"]), "--on", "2026-02-20",
                           "--out", "out")
    assert code == 0, err
    text = flat(pdf_text(city / "out" / "NOV-2026-001-draft.pdf", layout=False))
    assert "The City finds the industrial user named below" in text
    assert f"{CODE} Sec. 22-42(a)" in text and "more than 0.10 mg/l of arsenic" in text
    assert "Prohibited: a result more than 0.1 mg/l in any sample." in text
    assert f"{CODE} Sec. 22-70" in text and "$250" in text and "$2,000" in text
    assert not [w for w in BORROWED if w in text], [w for w in BORROWED if w in text]
    assert "the pack" not in text and "responses[" not in text and ".toml" not in text

    # no surcharge formula: the bill has the one charge the ordinance provides (Sec. 22-60),
    # and the rates file is asked for nothing else
    code, out, err = _main(city, db, "bill", "--quarter", "2026Q1", "--rates", "rates.toml", "--out", "bills", "--json")
    assert code == 0, err
    bills = {b["site"]: b for b in json.loads(out)}
    # 0.9 MG = 900,000 gal / 1,000 x $4.25 = $3,825.00; 0.2 MG: 200 x $4.25 = $850.00
    assert [(c["charge"], c["dollars"], c["citation"]) for c in bills["anodizer"]["charges"]] == \
        [("sewer service charge", 3825.0, f"{CODE} Sec. 22-60")]
    assert bills["glassworks"]["total_dollars"] == 850.0
    assert bills["anodizer"]["payment"]["citation"] == f"{CODE} Sec. 22-61"
    page = flat(pdf_text(city / "bills" / "bill-2026Q1-anodizer.pdf", layout=False))
    assert "City of Examplehaven Public Works" in page and f"{CODE} Sec. 22-60" in page and "$3,825.00" in page
    assert not [w for w in BORROWED if w in page], [w for w in BORROWED if w in page]
    assert "rates.toml" not in page and "bill.volume_mg" not in page and "the pack" not in page


@pytest.mark.services
def test_lab_import_exit_status_tells_of_dead_letters(city, db):
    (city / "more.csv").write_text("sample_id,site,collected,analyte,value,unit,qualifier\n"
                                   "A-03,anodizer,2026-02-03,as,0.05,mg/l,\n"
                                   "A-03,anodizer,2026-02-03,arsenik,0.05,mg/l,\n"
                                   "A-03,anodizer,2026-02-03,ba,1.1,g/l,\n")
    code, out, err = _main(city, db, "lab", "import", "more.csv", "--actor", "lab")
    assert code == 4, err
    assert "1 stored, 0 corrected, 0 unchanged, 2 bad" in out
    assert err.strip() == ("sewerwatch: more.csv: 2 of 3 rows became dead letters (not imported): line 3: unknown "
                           "analyte 'arsenik' (closest known: as; 156 are known, see limits/analytes.csv); line 4: "
                           "unknown unit 'g/l' for ba (known: mg/l, ug/l, ng/l, ppm)")
    code, out, err = _main(city, db, "lab", "import", "more.csv", "--actor", "lab", "--json")
    assert code == 4 and json.loads(out)["unchanged"] == 1 and json.loads(out)["bad"] == 2
    with db.connect() as conn:
        n = conn.execute("SELECT count(*) FROM dead_letters WHERE topic LIKE %s", ("%more.csv%",)).fetchone()[0]
    assert n == 4          # each bad row once per import: in = out
    (city / "good.csv").write_text("sample_id,site,collected,analyte,value,unit,qualifier\n"
                                   "A-04,anodizer,2026-02-17,as,0.02,mg/l,\n")
    code, out, err = _main(city, db, "lab", "import", "good.csv", "--actor", "lab")
    assert (code, err) == (0, "")


def test_every_unit_the_catalogue_accepts_converts():
    """Each unit an analyte of limits/analytes.csv accepts has its conversion (a lab's pH in
    'SU' once failed the whole import with a KeyError)."""
    from foundation import units
    from limits import analytes
    missing = [(k, u) for k, a in analytes.catalogue().items() for u in a.units
               if u not in units.CONVERSIONS.get(a.parameter, {})]
    assert missing == []
    assert analytes.unit_factor(analytes.catalogue()["ph"], "SU") == 1.0


def test_a_pack_folder_that_holds_the_config_lists_only_packs(tmp_path):
    """``pack_dirs = ["."]`` beside ``city.toml``: the config is no pack (the dashboards, which
    build a panel row for every pack on the search path, once failed on it), a broken pack is
    still listed so that loading it names its error."""
    from dashboards.definitions import build_all
    from foundation import config

    for f in ("city.toml", "examplehaven-mn.toml", "rates.toml"):
        shutil.copy(CITY / f, tmp_path / f)
    assert "examplehaven-mn" in config.known_packs([tmp_path])
    assert "city" not in config.known_packs([tmp_path]) and "rates" not in config.known_packs([tmp_path])
    config.use_pack_dirs([tmp_path])
    titles = json.dumps([d.to_json() for d in build_all()])
    assert "examplehaven-mn" in titles
    (tmp_path / "broken.toml").write_text("id = \n")
    assert "broken" in config.known_packs([tmp_path])
