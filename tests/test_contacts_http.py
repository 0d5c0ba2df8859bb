"""Who may change the address book, in process (Litestar's test client) against the real
database: a viewer reads a contact's page and is refused a change sent with the page's own
token (nothing saved); a clerk may change it (the billing contacts are the clerk's); the audit
trail names the account; a portal account of another user is refused the page."""

from __future__ import annotations

import re

import psycopg
import pytest

from foundation.actor import Actor
from identity import accounts, contacts
from support import add_site_and_sensors
from web_support import PASSWORD, add_people, cheap_hashes, csrf_of, office_client, sign_in


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


def _form(html: str, form_id: str, **fields) -> dict:
    form = html[html.index(f'id="{form_id}"'):]
    key = re.search(r'name="_form_key" value="([^"]+)"', form).group(1)
    version = re.search(r'name="_base_version" value="(\d+)"', form).group(1)
    return {"_csrf_token": csrf_of(html), "_form_key": key, "_base_version": version, **fields}


def test_a_viewer_reads_a_clerk_changes_a_portal_account_is_refused(db, tmp_path):
    add_people(db.url)
    add_site_and_sensors(db.url, "plant", {})
    with psycopg.connect(db.url, autocommit=True) as conn:
        c = contacts.add_contact(conn, "plant", {"full_name": "Bo Banks", "roles": "billing",
                                                 "email": "ap@plant.example"}, actor=Actor("pat", "cli"))
        accounts.add(conn, "plantuser", "Pat Plant", None, PASSWORD, actor=Actor("pat", "cli"),
                     kind="industrial-user", site_key="plant",
                     portal={"email": "p@plant.example", "signatory": False, "title": None,
                             "subscriber_agreement_on": None, "totp_secret": None})
    with office_client(db, tmp_path) as client:
        # the clerk's page has the form; the viewer's has none, and a change sent anyway is refused
        sign_in(client, "clerk")
        page = client.get(f"/contacts/{c['id']}")
        assert page.status_code == 200 and 'id="edit-contact"' in page.text
        form = _form(page.text, "edit-contact", full_name="Bo Banks", roles="billing", title="Controller",
                     phone="", email="ap@plant.example", note="promoted")
        client.cookies.clear()
        sign_in(client, "viewer")
        page = client.get(f"/contacts/{c['id']}")
        assert page.status_code == 200 and "Bo Banks" in page.text and 'id="edit-contact"' not in page.text
        r = client.post(f"/contacts/{c['id']}/edit", data={**form, "_csrf_token": csrf_of(page.text)})
        assert r.status_code == 403
        with psycopg.connect(db.url) as conn:
            assert contacts.contact(conn, c["id"])["version"] == 1
        # the clerk's change is saved, the audit trail names the account and the office
        client.cookies.clear()
        sign_in(client, "clerk")
        page = client.get(f"/contacts/{c['id']}")
        r = client.post(f"/contacts/{c['id']}/edit", data=_form(page.text, "edit-contact", full_name="Bo Banks",
                                                           roles="billing", title="Controller", phone="",
                                                           email="ap@plant.example", note="promoted"))
        assert r.status_code == 200 and "Saved as version 2" in r.text
        with psycopg.connect(db.url) as conn:
            assert contacts.contact(conn, c["id"])["title"] == "Controller"
            actor, detail = conn.execute("SELECT actor, detail FROM audit_log WHERE action = 'contact.edit'").fetchone()
        assert actor == "clerk" and detail["via"] == "web" and detail["was"] == {"title": None}
        # the documents' form with a choice the page never offers: refused, nothing recorded
        page = client.get(f"/contacts/{c['id']}")
        form = page.text[page.text.index('id="documents-form"'):]
        key = re.search(r'name="_form_key" value="([^"]+)"', form).group(1)
        r = client.post(f"/contacts/{c['id']}/documents",
                        data={"_csrf_token": csrf_of(page.text), "_form_key": key, "by": "pigeon"})
        assert r.status_code == 400 and "choose on paper or by e-mail" in r.text
        with psycopg.connect(db.url) as conn:
            assert conn.execute("SELECT count(*) FROM contact_mail_preferences").fetchone()[0] == 0
        # a portal account: neither the user's Contacts page nor the contact's
        client.cookies.clear()
        sign_in(client, "plantuser")
        for path in ("/sites/plant/contacts", f"/contacts/{c['id']}"):
            r = client.get(path)
            assert r.status_code == 403 and "Bo Banks" not in r.text, path
