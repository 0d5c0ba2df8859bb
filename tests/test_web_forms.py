"""One submission, one action; two editors, one clear conflict: web/forms.py
against the real database, and the optimistic concurrency of permits (limits.permit_store).

Two submissions of one form key at the same moment (a double click) run the action once and
both get its outcome; an action that fails leaves no key, so sending again acts; a key is one
account's and one form's; an edit made from an old version of a permit is refused, naming who
saved which version when, on the web and on the command line.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import types

import psycopg
import pytest

from foundation.errors import Conflict, InputError
from identity import accounts
from web import forms
from web_support import (ADMIN, PERMITS, ROOT, add_people, cheap_hashes, demo_users, office_client)


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def _request(office, account):
    """What forms.once reads of a request: the office and the signed-in account."""
    return types.SimpleNamespace(app=types.SimpleNamespace(state=types.SimpleNamespace(office=office)),
                                 state=types.SimpleNamespace(account=account))


def _audits(url: str, action: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM audit_log WHERE action = %s", (action,)).fetchone()[0]


def test_a_double_submission_acts_once_a_failed_one_leaves_no_key(db, tmp_path):
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        office = c.office
        coord = office.read(lambda conn: accounts.get(conn, "coord"))
        req = _request(office, coord)
        key = forms.new_key()
        started, release = threading.Event(), threading.Event()
        runs = []

        def work(conn, actor):
            runs.append(actor.name)
            conn.execute("INSERT INTO audit_log (actor, action, object) VALUES (%s, 'test.once', 'x')", (actor.name,))
            started.set()
            assert release.wait(20)
            return {"location": "/done/7", "n": 7}

        results = {}
        first = threading.Thread(target=lambda: results.__setitem__("first", forms.once(req, {forms.FIELD: key},
                                                                                          "test.once", work)))
        first.start()
        assert started.wait(20)
        second = threading.Thread(target=lambda: results.__setitem__("second", forms.once(req, {forms.FIELD: key},
                                                                                            "test.once", work)))
        second.start()
        second.join(1.0)
        assert second.is_alive()                  # the second click waits for the first ...
        release.set()
        first.join(20), second.join(20)
        assert runs == ["coord"]                  # ... and does not act again
        assert results["first"].again is False and results["second"].again is True
        assert results["first"].outcome == results["second"].outcome == {"location": "/done/7", "n": 7}
        assert forms.redirect(req, results["second"]).url == "/done/7?again=1"
        assert _audits(db.url, "test.once") == 1
        # a third, later (the back button to a page the browser kept): still the same outcome
        again = forms.once(req, {forms.FIELD: key}, "test.once", work)
        assert again.again and runs == ["coord"]

        # a failed action leaves no key, so sending again acts
        key = forms.new_key()

        def failing(conn, actor):
            conn.execute("INSERT INTO audit_log (actor, action, object) VALUES (%s, 'test.fail', 'x')", (actor.name,))
            raise InputError("line 3: value 'x' is not a number")

        with pytest.raises(InputError):
            forms.once(req, {forms.FIELD: key}, "test.fail", failing)
        assert _audits(db.url, "test.fail") == 0      # what it did before failing was rolled back, its key too
        done = forms.once(req, {forms.FIELD: key}, "test.fail", lambda conn, actor: {"location": "/ok"})
        assert done.again is False and done.outcome == {"location": "/ok"}
        # the key is one account's and one form's
        clerk = office.read(lambda conn: accounts.get(conn, "clerk"))
        from litestar.exceptions import ClientException, HTTPException
        with pytest.raises(HTTPException) as e:
            forms.once(_request(office, clerk), {forms.FIELD: key}, "test.fail", lambda conn, actor: {"location": "/"})
        assert e.value.status_code == 409
        with pytest.raises(HTTPException) as e:
            forms.once(req, {forms.FIELD: key}, "another.form", lambda conn, actor: {"location": "/"})
        assert e.value.status_code == 409
        with pytest.raises(ClientException) as e:         # no key: refused, nothing done
            forms.once(req, {}, "test.fail", lambda conn, actor: {"location": "/"})
        assert e.value.status_code == 400 and "no submission key" in e.value.detail
        with psycopg.connect(db.url) as conn:
            assert forms.purge(conn, days=0) == 2       # both keys: the 30 days' bound at 0


class _Refused(Exception):
    """A refusal that stays on record (as signing with a wrong password does)."""


def test_a_refusal_named_in_keep_commits_what_it_recorded_and_releases_the_key(db, tmp_path):
    """``forms.once(..., keep=(Refused,))``: the failure the work recorded before refusing is
    committed (a signing attempt counted towards the lockout), the key is released, so the same
    form sent again acts; any other exception still rolls everything back."""
    add_people(db.url)
    with office_client(db, tmp_path) as c:
        office = c.office
        req = _request(office, office.read(lambda conn: accounts.get(conn, "coord")))
        key = forms.new_key()
        tries = []

        def work(conn, actor):
            tries.append(1)
            conn.execute("INSERT INTO audit_log (actor, action, object) VALUES (%s, 'test.refused', 'x')", (actor.name,))
            if len(tries) == 1:
                raise _Refused("the password is not right")
            return {"location": "/signed/1"}

        with pytest.raises(_Refused, match="not right"):
            forms.once(req, {forms.FIELD: key}, "test.keep", work, keep=(_Refused,))
        assert _audits(db.url, "test.refused") == 1               # the refusal is on record
        with psycopg.connect(db.url) as conn:
            assert conn.execute("SELECT count(*) FROM web_form_submissions WHERE key = %s", (key,)).fetchone()[0] == 0
        done = forms.once(req, {forms.FIELD: key}, "test.keep", work, keep=(_Refused,))   # the same form again: acts
        assert done.again is False and done.outcome == {"location": "/signed/1"} and len(tries) == 2
        assert forms.once(req, {forms.FIELD: key}, "test.keep", work, keep=(_Refused,)).again and len(tries) == 2
        assert _audits(db.url, "test.refused") == 2

        def failing(conn, actor):
            conn.execute("INSERT INTO audit_log (actor, action, object) VALUES (%s, 'test.kept-not', 'x')",
                         (actor.name,))
            raise InputError("not a refusal of keep")
        with pytest.raises(InputError):
            forms.once(req, {forms.FIELD: forms.new_key()}, "test.keep", failing, keep=(_Refused,))
        assert _audits(db.url, "test.kept-not") == 0              # rolled back as before


def test_an_edit_from_an_old_permit_version_is_a_conflict_naming_who_saved_what(db, tmp_path):
    from foundation.actor import Actor
    from limits.packs import load_pack
    from limits.permit_store import import_permit, versions
    from limits.permits import parse_permit

    demo_users(db.url)
    pack = load_pack("palmyra-wi")
    with psycopg.connect(db.url) as conn:
        doc = versions(conn, "PAL-IU-2026-02")[-1]["document"]
        # two people open version 1; Cora saves first
        cora = {**doc, "limits": [{**lim, "daily_maximum": 0.9} if lim.get("analyte") == "cu" else lim
                                  for lim in doc["limits"]]}
        done = import_permit(conn, parse_permit(cora, "the office's permit form", pack),
                             actor=Actor.account("coord", "Cora Coordinator"), expected_version=1)
        assert done["version"] == 2 and done["changes"] == [{"key": "limits[3(a)].daily_maximum", "old": 1.0,
                                                            "new": 0.9}]
        sam = {**doc, "expires": "2027-03-31"}
        with pytest.raises(Conflict) as e:
            import_permit(conn, parse_permit(sam, "the office's permit form", pack),
                          actor=Actor.account("super", "Sam Super"), expected_version=1)
        assert (e.value.expected, e.value.current, e.value.by) == (1, 2, "coord")
        assert "nothing was saved" in str(e.value)
        assert [v["version"] for v in versions(conn, "PAL-IU-2026-02")] == [1, 2]      # not overwritten
        first = forms.conflict_lines(e.value, "America/Chicago")[0]
        assert first.startswith("coord saved version 2 of permit PAL-IU-2026-02")
        assert re.search(r" at \d{4}-\d\d-\d\d \d\d:\d\d C[SD]T, after you began editing version 1", first), first
        assert re.search(r" at \d{4}-\d\d-\d\d \d\d:\d\d UTC meanwhile", str(e.value)), str(e.value)
        audit = conn.execute("SELECT actor, detail->>'via' FROM audit_log WHERE action = 'permit.change'").fetchall()
        assert audit == [("coord", "web")]
    # the command line: permit import --expect-version
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[services]\ndb_url = "{db.url}"\nstate_dir = "{tmp_path}"\n')
    r = subprocess.run([sys.executable, "-m", "sewerwatch", "--config", str(cfg), "permit", "import",
                        str(PERMITS / "plating.toml"), "--expect-version", "1"], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "the edit was made from version 1, but coord saved version 2" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
