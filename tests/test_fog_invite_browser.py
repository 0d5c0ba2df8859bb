"""Inviting a person of a grease establishment from its page in the office, in a real browser
(Debian's Chromium), the invitation mailed through a real SMTP server (aiosmtpd): the
coordinator opens Corner Cafe (tests/hauler_support.py's small grease program) from Grease,
fills the invitation form as served (a name and an address) and sends it; the page says it is
mailed; the mail arrives at the catcher for that address, naming the cafe, with the link to
the portal, which the browser opens (the invitation's page names the cafe). The same form sent
again (the browser's back and resend) mails once. The inspector, who does not manage the
portal's people, sees no invitation form. ``sewerwatch web`` over a copy of the session's
seeded village with the catcher as its mail server."""

from __future__ import annotations

import re

import pytest

import web_round
from hauler_support import served_village
from portal_http import mail, wait_mail  # noqa: F401 (fixture)
from support import wait_until
from test_rates_browser import fill

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture
def office(services, round_village, tmp_path, mail):  # noqa: F811
    web = f'mail_url = "{mail.url("x@example.com", "sewer@palmyra.example")}"'
    for o in served_village(services, round_village, tmp_path, web=web):
        yield {**o, "mail": mail}


def test_the_coordinator_invites_a_person_of_the_establishment_and_the_mail_arrives(office, chromium):
    b, d, base, mail = chromium, chromium.driver, office["base"], office["mail"]  # noqa: F811
    web_round.sign_in(b, base, "coord")
    d.find_element(By.LINK_TEXT, "Grease").click()
    assert wait_until(lambda: d.find_elements(By.ID, "grease-q"), 15)
    d.find_element(By.LINK_TEXT, "Corner Cafe").click()
    assert wait_until(lambda: d.find_elements(By.ID, "invite-form"), 15), b.text()[:500]
    fill(d, "i-name", "Carla Chef")
    fill(d, "i-email", "carla@cafe.example")
    d.find_element(By.ID, "invite-send").click()
    assert wait_until(lambda: d.find_elements(By.ID, "invited"), 30), b.text()[:800]
    assert "The invitation is mailed to Carla Chef at carla@cafe.example." in b.text("invited")
    msg = wait_mail(mail, "carla@cafe.example")[0]
    assert "Corner Cafe" in msg["body"] and "confirm your grease pump-outs" in msg["subject"]
    link = re.search(re.escape(base) + r"(/portal/invite/\S+)", msg["body"]).group(0)
    # the same form again, as the browser resends it: mailed once
    d.back()
    assert wait_until(lambda: d.find_elements(By.ID, "invite-form"), 15)
    d.find_element(By.ID, "invite-send").click()
    assert wait_until(lambda: d.find_elements(By.ID, "invited"), 30), b.text()[:800]
    assert "This form had been sent already" in b.text("invited")
    assert not wait_until(lambda: len(mail.to("carla@cafe.example")) > 1, 2)
    # the link in the mail, as the person opens it
    b.fresh()
    d.get(link)
    assert wait_until(lambda: "Corner Cafe" in b.text(), 15), b.text()[:500]
    assert "to confirm or dispute the pump-outs" in b.text()
    # the inspector does not manage the portal's people: no form
    web_round.sign_in(b, base, "inspector")
    d.get(base + "/grease?q=Corner+Cafe")
    d.find_element(By.LINK_TEXT, "Corner Cafe").click()
    assert wait_until(lambda: d.find_elements(By.ID, "findings"), 15)
    assert not d.find_elements(By.ID, "invite-form")
