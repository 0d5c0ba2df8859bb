"""A grease notice answered and escalated, on the command line against the real database, as
an industrial user's notice is (tests/test_escalation_cli.py): ``sewerwatch fog notices
respond|escalate``.

The village: tests/hauler_support.py's small grease program, dated from today T (the village's
day, America/Chicago): Corner Cafe ``H0001`` and Dockside Diner ``H0002`` each with an
interceptor taken on at T-200 and never pumped (every 90 days: due T-110, overdue), Hilltop
Bakery ``H0003`` pumped T-100 (due T-10). Each overdue device is the establishment's first
finding in 365 days: a warning letter (respond within 30 days), then a notice of violation
(15 days), then a notice of forfeiture ($250) (enforcement/guides/grease-erp.toml).

- Corner Cafe's warning letter, dated T-40 for its finding as of T-40: the response is due
  T-10, none came; escalated today (T > T-10) to a notice of violation for the same finding,
  dated T, due T+15; escalating again is refused naming it; the notice of violation cannot be
  escalated before T+15.
- Dockside Diner's warning letter, dated T-5: due T+25, so escalating it is refused; a response
  received T-2 is recorded (once: again refused naming its day; one before the notice or after
  today refused); escalating it then needs a note saying why the response is inadequate; with
  one, a notice of violation whose PDF gives the reason.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

import fog_enforcement_support as fe
import web_round
from enforcement_support import run
from hauler_support import grease_village


@pytest.fixture
def village(services, round_village, tmp_path):
    for db in web_round.clone(services, round_village[0]):
        (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
        grease_village(db.url, fe.today())
        yield tmp_path, db


def ok(village, db, *args) -> str:
    r = run(village, db, *args)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def refused(village, db, *args) -> str:
    r = run(village, db, *args)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and r.stdout == "", (args, r.stdout, r.stderr)
    return r.stderr


def _issue(tmp, db, licence: str, day) -> str:
    d = day.isoformat()
    out = ok(tmp, db, "fog", "notices", "issue", licence, "--kind", "overdue", "--on", d, "--as-of", d, "--issued", d)
    return out.split("issued warning letter ")[1].split()[0]


def test_an_unanswered_warning_letter_is_escalated_once_after_its_deadline(village):
    tmp, db = village
    t = fe.today()
    wl = _issue(tmp, db, "H0001", t - timedelta(days=40))
    assert f"{wl:<14} {t - timedelta(days=40)} Warning letter to Corner Cafe (H0001)" in ok(
        tmp, db, "fog", "notices", "list")
    assert f"response due {t - timedelta(days=10)}" in ok(tmp, db, "fog", "notices", "list")
    out = ok(tmp, db, "fog", "notices", "escalate", wl, "--out", str(tmp))
    nov = out.split("issued notice of violation ")[1].split()[0]
    assert nov.startswith(f"GNOV-{t.year}-") and f"to Corner Cafe (H0001) on {t}" in out
    assert f"warning letter {wl} was escalated already: notice of violation {nov} (issued {t}) carries it on" in \
        refused(tmp, db, "fog", "notices", "escalate", wl)
    assert f"{nov}: its response is due {t + timedelta(days=15)}" in refused(tmp, db, "fog", "notices", "escalate",
                                                                             nov)
    listed = ok(tmp, db, "fog", "notices", "list", "--establishment", "H0001")
    assert f"{wl}" in listed and f"escalated on {t}" in listed and f"response due {t + timedelta(days=15)}" in listed
    from lab.documents.pdf import pdf_text

    text = " ".join(pdf_text((tmp / f"{nov}.pdf").read_bytes(), layout=False).split())
    assert f"The Village issued the warning letter {wl} on {t - timedelta(days=40)} for the finding below." in text
    assert f"No response was received by its deadline, {t - timedelta(days=10)}." in text
    assert "this notice of violation" in text and "Corner Cafe" in text
    # the finding is answered: no notice is due for it
    due = [n["licence"] for n in json.loads(ok(tmp, db, "fog", "notices", "due", "--json"))]
    assert "H0001" not in due and "H0002" in due


def test_an_answered_warning_letter_is_escalated_only_with_a_note(village):
    from lab.documents.pdf import pdf_text

    tmp, db = village
    t = fe.today()
    wl = _issue(tmp, db, "H0002", t - timedelta(days=5))
    assert f"{wl}: its response is due {t + timedelta(days=25)}" in refused(tmp, db, "fog", "notices", "escalate", wl)
    assert f"received on: {t - timedelta(days=6)} is before the notice was issued ({t - timedelta(days=5)})" in \
        refused(tmp, db, "fog", "notices", "respond", wl, "--received", (t - timedelta(days=6)).isoformat())
    assert f"received on: {t + timedelta(days=1)} is after today ({t})" in \
        refused(tmp, db, "fog", "notices", "respond", wl, "--received", (t + timedelta(days=1)).isoformat())
    out = ok(tmp, db, "fog", "notices", "respond", wl, "--received", (t - timedelta(days=2)).isoformat(), "--note",
             "says it was pumped", "--actor", "coord")
    assert out.strip() == f"recorded the response to warning letter {wl}, received {t - timedelta(days=2)}"
    assert f"warning letter {wl} was answered on {t - timedelta(days=2)} already (recorded by coord)" in \
        refused(tmp, db, "fog", "notices", "respond", wl, "--received", (t - timedelta(days=1)).isoformat())
    assert "escalating it needs a note saying why the response is inadequate" in \
        refused(tmp, db, "fog", "notices", "escalate", wl)
    assert f"answered on {t - timedelta(days=2)}" in ok(tmp, db, "fog", "notices", "list", "--establishment", "H0002")
    out = ok(tmp, db, "fog", "notices", "escalate", wl, "--note", "no manifest was sent", "--out", str(tmp))
    nov = out.split("issued notice of violation ")[1].split()[0]
    text = " ".join(pdf_text((tmp / f"{nov}.pdf").read_bytes(), layout=False).split())
    assert (f"It was answered on {t - timedelta(days=2)}, and the response is found inadequate: no manifest was "
            "sent.") in text
    assert "Dockside Diner" in text and "GWL-" in text
    assert "no grease notice 'GWL-1999-001'" in refused(tmp, db, "fog", "notices", "respond", "GWL-1999-001",
                                                        "--received", t.isoformat())
