"""``sewerwatch portal`` on the command line, against the real database and a real SMTP server:
the same functions as the coordinator's pages, the operating-system user as the actor, checked
with the portal's own pages in process where a user's person drafts and signs. The command
line imports nothing of the office (``tests/test_layers.py``)."""

from __future__ import annotations

import hashlib
import json
import re

import psycopg
import pytest

from portal_support import LAB_PDF, lab_csv, person, two_users
from web_support import csrf_of, office_client

pytest.importorskip("aiosmtpd")
from portal_http import _cheap_hashes, mail, wait_mail, signin, new_draft, upload, sign  # noqa: F401 (fixtures)


def test_the_command_line_invites_lists_shows_and_reviews_through_the_same_functions(db, tmp_path, mail, capsys):
    """``sewerwatch portal ...``: the same functions as the coordinator's pages, the
    operating-system user as the actor: invitations made and withdrawn, accounts revoked,
    ``show`` checking the stored bytes against the hash, reject and accept with the signatory
    told by mail (accepted results stored and the copper result judged), an accepted
    application's permit file printed and made a permit version."""
    import getpass

    from sewerwatch import cli
    two_users(db.url, permit_days_left=30)                # the renewal is open (§13.54(4))
    cfg = tmp_path / "village.toml"
    cfg.write_text(f'[utility]\nname = "Village of Palmyra"\n[services]\ndb_url = "{db.url}"\n'
                   f'state_dir = "{tmp_path / "state"}"\n[web]\nmail_url = "{mail.url("x@example.com")}"\n')

    def sw(*args):
        code_ = cli.main(["--config", str(cfg), "portal", *args])
        out = capsys.readouterr()
        return code_, out.out + out.err

    rc, out = sw("invite", "candy", "--email", "pat@sweet.example", "--name", "Pat Doe", "--signatory",
                 "--title", "Owner")
    assert rc == 2 and "subscriber agreement" in out and "40 CFR 3.2000(b)(5)(v)" in out
    rc, out = sw("invite", "candy", "--email", "pat@sweet.example", "--name", "Pat Doe")
    assert rc == 0 and "mailed to pat@sweet.example" in out and wait_mail(mail, "pat@sweet.example")
    lost = int(re.search(r"invitation (\d+) mailed", out).group(1))
    rc, out = sw("invite", "candy", "--email", "pat@sweet.example", "--name", "Pat Doe")   # the mail was lost
    invitation = int(re.search(r"invitation (\d+) mailed", out).group(1))
    assert rc == 0 and invitation != lost and re.search(rf"invitation {lost} of .* to pat@sweet.example no "
                                                         rf"longer works: invitation {invitation} replaces it", out)
    assert len(wait_mail(mail, "pat@sweet.example", 2)) == 2
    rc, out = sw("people")
    assert rc == 0 and "Pat Doe" in out and "open" in out
    rc, out = sw("people", "--site", "nosuch")
    assert rc == 2 and "unknown site 'nosuch'" in out and len(out.strip().splitlines()) == 1
    rc, out = sw("revoke", "--invitation", str(invitation))
    assert rc == 0 and "withdrawn" in out
    rc, out = sw("revoke", "--invitation", str(invitation))
    assert rc == 2 and "revoked already" in out
    rc, out = sw("people", "--json")
    assert rc == 0 and [i["state"] for i in json.loads(out)["invitations"]] == ["revoked", "revoked"]
    rc, out = sw("revoke")
    assert rc == 2 and "one of them" in out

    secret = person(db.url, "plater", "rosa", "Rosa Alvarez", signatory=True)
    secret_p = person(db.url, "plater", "paco", "Paco Ruiz", signatory=True)
    with office_client(db, tmp_path / "web", mail_url=mail.url("x@example.com")) as c:
        signin(c, "rosa", secret, db.url)
        d = new_draft(c, "self-monitoring")
        upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=1.8))
        assert sign(c, db.url, "rosa", secret, d).status_code == 303
        rc, out = sw("submissions")
        assert rc == 0 and "SMR-" in out and "Rosa Alvarez" in out
        first = re.search(r"SMR-\d{4}-\d{3}", out).group(0)
        rc, out = sw("show", first)
        assert rc == 0 and "the stored document matches it" in out and "Rosa Alvarez" in out and "results.csv" in out
        sha = re.search(r"SHA-256 ([0-9a-f]{64})", out).group(1)
        code_ = cli.main(["--config", str(cfg), "portal", "show", first, "--document"])
        signed = capsys.readouterr().out
        assert code_ == 0 and hashlib.sha256(signed.encode()).hexdigest() == sha        # the exact bytes signed
        rc, out = sw("reject", first, "--reason", "wrong sample point")
        assert rc == 0 and "told by mail (rosa@example.com)" in out
        told = wait_mail(mail, "rosa@example.com", 2)[-1]              # the receipt, then the outcome
        assert "returned" in told["subject"] and "wrong sample point" in told["body"]
        rc, out = sw("accept", first)
        assert rc == 2 and "rejected" in out                                     # only one awaiting review
        d = new_draft(c, "self-monitoring")
        upload(c, d, "lab-csv", "results.csv", lab_csv(spoiled=False, copper=1.8))
        assert sign(c, db.url, "rosa", secret, d).status_code == 303
        rc, out = sw("submissions", "--json")
        second = [s["number"] for s in json.loads(out)]
        assert rc == 0 and len(second) == 1 and second[0] != first
        rc, out = sw("accept", second[0])
        assert rc == 0 and "3 results stored, 1 violation found (cu-daily-max)" in out and "told by mail" in out
        assert "accepted" in wait_mail(mail, "rosa@example.com", 4)[-1]["subject"]
        rc, out = sw("permit", second[0])
        assert rc == 2 and "not a permit application" in out
        # a renewal application, signed by the plater's other signatory
        signin(c, "paco", secret_p, db.url)
        d = new_draft(c, "permit-application", "permit:PAL-IU-2026-02")
        page = c.get(f"/portal/drafts/{d}")
        c.post(f"/portal/drafts/{d}/save", data={
            "_csrf_token": csrf_of(page.text), "applicant_name": "Acme Plating", "address": "1 Mill St, Palmyra",
            "sic": "3471", "average_daily_gpd": "21000", "constituents": "Cu, Ni", "time_duration": "06:00-18:00",
            "average_flow_gpm": "15", "peak_flow_gpm": "45", "activities": "electroplating", "products": "parts",
            "employees": "24", "hours": "two shifts"})
        upload(c, d, "attachment", "floor-plan.pdf", LAB_PDF)
        assert sign(c, db.url, "paco", secret_p, d).status_code == 303
    rc, out = sw("submissions")
    application = re.search(r"PA-\d{4}-\d{3}", out).group(0)
    rc, out = sw("permit", application)
    assert rc == 2 and "accept it first" in out
    rc, out = sw("accept", application)
    assert rc == 0 and "accepted" in out
    rc, out = sw("permit", application)
    assert rc == 0 and "average_daily_gpd = 21000" in out and 'analyte = "cu"' in out
    permit_file = tmp_path / "renewal.toml"
    permit_file.write_text(out)
    rc, out = sw("permit", application, "--file", str(permit_file))
    assert rc == 0 and "permit PAL-IU-2026-02 (plater) from PA-2026-001: version 2" in out, out
    rc, out = sw("revoke", "rosa")
    assert rc == 0 and "revoked" in out
    rc, out = sw("revoke", "coord")
    assert rc == 2 and "no portal account 'coord'" in out                # a staff account is not the portal's
    with psycopg.connect(db.url) as conn:
        me = getpass.getuser()
        assert conn.execute("SELECT actor FROM portal_events WHERE event = 'rejected'").fetchone()[0] == me
        assert conn.execute("SELECT detail->>'superseded_by' FROM audit_log WHERE action = "
                            "'portal-invitation-revoked' AND (detail->>'invitation')::int = %s", (lost,)
                            ).fetchone()[0] == str(invitation)
        assert {a for (a,) in conn.execute("SELECT actor FROM audit_log WHERE action IN ('portal-invited', "
                                           "'portal-invitation-revoked', 'portal-accepted', 'portal-rejected', "
                                           "'portal-account-revoked')")} == {me}
        assert conn.execute("SELECT disabled_at IS NOT NULL FROM web_accounts WHERE username = 'rosa'").fetchone()[0]
        rows = conn.execute("SELECT r.analyte, r.value_mg_l FROM lab_results r JOIN lab_samples s ON s.id = r.sample_id "
                            "JOIN portal_submissions p ON p.id = s.submission_id WHERE p.number = %s ORDER BY 1",
                            (second[0],)).fetchall()
        assert rows == [("cu", 1.8), ("ni", 0.4), ("tss", 120.0)]
        assert conn.execute("SELECT count(*) FROM violations v JOIN sites s ON s.id = v.site_id WHERE s.key = 'plater' "
                            "AND v.peak = 1.8 AND v.limit_value = 1.0").fetchone()[0] == 1   # copper 1.8 > 1.0
        v = conn.execute("SELECT version, reason, (document->'flow'->>'average_daily_gpd')::float FROM permits "
                         "WHERE number = 'PAL-IU-2026-02' ORDER BY version DESC LIMIT 1").fetchone()
        assert v[0] == 2 and application in v[1] and v[2] == 21000.0
