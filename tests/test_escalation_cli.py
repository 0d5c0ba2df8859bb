"""Escalation only on purpose, on the command line, against the real database: a violation
answered by a notice refuses a second ``notice draft`` naming the notice (one line, exit 2;
before, the second draft counted the first notice as a recurrence and drafted an
administrative order for the same copper result); the guide's next action is drafted only
by ``notice escalate``, after the deadline passed without a response (refused before it),
with the guide's reason printed; escalating twice is refused naming the order.

The village is a copy of the session's seeded round village (tests/web_round.py): the
plater's copper result 1.6 mg/l of 2026-02-04 over its permit's 1.0 mg/l daily maximum.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import psycopg
import pytest

import web_round
from enforcement_support import run
from support import refused


@pytest.fixture
def db(services, round_village):
    yield from web_round.clone(services, round_village[0])


@pytest.fixture
def village(db, tmp_path):
    (tmp_path / "village.toml").write_text(web_round.CONFIG, encoding="utf-8")
    return tmp_path


def _notices(db) -> list[tuple]:
    with psycopg.connect(db.url) as conn:
        return conn.execute("SELECT number, state FROM notices ORDER BY id").fetchall()


def test_a_second_draft_from_a_violation_a_notice_answers_is_refused_naming_it(db, village):
    vid = web_round.copper_violation(db)
    r = run(village, db, "notice", "draft", "--violation", str(vid), "--on", "2026-02-20", "--out", "n", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["number"] == "NOV-2026-001"
    # drafted, not issued: a second draft is refused already
    r = run(village, db, "notice", "draft", "--violation", str(vid), "--on", "2026-02-21", "--out", "n")
    line = refused(r, f"violation {vid} has a notice already", "NOV-2026-001", "drafted 2026-02-20")
    assert "escalating NOV-2026-001" in line
    r = run(village, db, "notice", "issue", "NOV-2026-001", "--on", "2026-03-02", "--out", "n")
    assert r.returncode == 0, r.stderr
    # issued: still refused, with its deadline; no administrative order for the same result
    r = run(village, db, "notice", "draft", "--violation", str(vid), "--on", "2026-04-10", "--out", "n")
    refused(r, "NOV-2026-001 (issued 2026-03-02, response due 2026-04-01)")
    assert _notices(db) == [("NOV-2026-001", "issued")]
    assert not list((village / "n").glob("AO-*"))


def test_escalation_waits_for_the_deadline_then_drafts_the_order_once(db, village):
    vid = web_round.copper_violation(db)
    assert run(village, db, "notice", "draft", "--violation", str(vid), "--on", "2026-02-20", "--out", "n").returncode == 0
    assert run(village, db, "notice", "issue", "NOV-2026-001", "--on", "2026-03-02", "--out", "n").returncode == 0
    # the response is due 2026-04-01: not escalated on its last day
    r = run(village, db, "notice", "escalate", "NOV-2026-001", "--on", "2026-04-01", "--out", "n")
    refused(r, "NOV-2026-001: its response is due 2026-04-01", "once that day has passed")
    assert _notices(db) == [("NOV-2026-001", "issued")]
    # nor dated ahead to pass it: the day of an escalation is today or before
    tomorrow = datetime.now(ZoneInfo("America/Chicago")).date() + timedelta(days=1)
    r = run(village, db, "notice", "escalate", "NOV-2026-001", "--on", tomorrow.isoformat(), "--out", "n")
    refused(r, f"escalated on: {tomorrow} is in the future")
    # the day after: the guide's next action, with its reason
    r = run(village, db, "notice", "escalate", "NOV-2026-001", "--on", "2026-04-02", "--out", "n")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "NOV-2026-001, issued 2026-03-02, had no response recorded by its deadline, 2026-04-01."
    assert out[1].startswith("NOV-2026-001 escalated: AO-2026-001 drafted (Administrative order, respond within 15 days")
    assert _notices(db) == [("NOV-2026-001", "escalated"), ("AO-2026-001", "drafted")]
    # twice: refused naming the order that exists
    r = run(village, db, "notice", "escalate", "NOV-2026-001", "--on", "2026-04-03", "--out", "n")
    refused(r, "NOV-2026-001 was escalated already", "administrative order AO-2026-001 (drafted 2026-04-02")
    # and the violation names the order now: a draft from it is refused naming AO-2026-001
    r = run(village, db, "notice", "draft", "--violation", str(vid), "--on", "2026-04-03", "--out", "n")
    refused(r, f"violation {vid} has a notice already: administrative order AO-2026-001")
    assert _notices(db) == [("NOV-2026-001", "escalated"), ("AO-2026-001", "drafted")]
    with psycopg.connect(db.url) as conn:
        [(detail,)] = conn.execute("SELECT detail FROM notice_events WHERE event = 'escalated'").fetchall()
    assert detail["to"] == "AO-2026-001" and detail["unanswered"] is True


def test_an_answered_notice_is_escalated_only_with_a_note_saying_why(db, village):
    vid = web_round.copper_violation(db)
    assert run(village, db, "notice", "draft", "--violation", str(vid), "--on", "2026-02-20", "--out", "n").returncode == 0
    assert run(village, db, "notice", "issue", "NOV-2026-001", "--on", "2026-03-02", "--out", "n").returncode == 0
    r = run(village, db, "notice", "response", "NOV-2026-001", "--on", "2026-03-20", "--note", "fixed")
    assert r.returncode == 0, r.stderr
    r = run(village, db, "notice", "escalate", "NOV-2026-001", "--on", "2026-03-25", "--out", "n")
    refused(r, "has a response recorded (2026-03-20)", "a note saying why the response is inadequate")
    r = run(village, db, "notice", "escalate", "NOV-2026-001", "--on", "2026-03-25", "--out", "n",
            "--note", "no resample results")
    assert r.returncode == 0, r.stderr
    assert "was answered on 2026-03-20, and the response is found inadequate" in r.stdout
    assert _notices(db) == [("NOV-2026-001", "escalated"), ("AO-2026-001", "drafted")]
