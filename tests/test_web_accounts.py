"""``sewerwatch users ...``: the command line calls the office's account
functions with the operating-system user as the actor; a password is never an argument."""

from __future__ import annotations

import getpass
import io
import json

import psycopg
import pytest

from identity import accounts
from sewerwatch import cli
from web_support import cheap_hashes


@pytest.fixture(autouse=True)
def _cheap_hashes():
    with cheap_hashes():
        yield


@pytest.fixture
def village(db, tmp_path):
    cfg = tmp_path / "village.toml"
    cfg.write_text(f'[utility]\nname = "Village of Palmyra"\n[services]\ndb_url = "{db.url}"\n'
                   f'state_dir = "{tmp_path / "state"}"\n')
    return cfg


def users(cfg, *args, stdin: str | None = None, monkeypatch=None, capsys=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = cli.main(["--config", str(cfg), "users", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_users_commands_and_the_audit_trail(db, village, monkeypatch, capsys):
    run = lambda *a, stdin=None: users(village, *a, stdin=stdin, monkeypatch=monkeypatch, capsys=capsys)  # noqa: E731
    code, out, _ = run("add", "pat", "--name", "Pat Jones", "--role", "coordinator", "--password-stdin",
                       stdin="a long password\n")
    assert code == 0 and "account pat (Pat Jones) added as coordinator" in out
    # no terminal and no --password-stdin: one line saying what to do, nothing made
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, _, err = users(village, "add", "kim", "--name", "Kim", "--role", "viewer", capsys=capsys)
    assert code == 2 and "no terminal to ask the password on" in err and "--password-stdin" in err
    code, _, err = run("add", "kim", "--name", "Kim", "--role", "viewer", "--password-stdin", stdin="short\n")
    assert code == 2 and "at least 10 characters" in err
    code, _, err = run("add", "pat", "--name", "Pat", "--role", "viewer", "--password-stdin", stdin="another password\n")
    assert code == 2 and "exists already" in err
    code, _, err = run("disable", "nobody")
    assert code == 2 and "no account 'nobody' (accounts: pat)" in err
    assert run("role", "pat", "inspector")[0] == 0
    code, out, err = run("totp", "pat", "--on")
    assert code == 2 and "roles that can issue notices" in err and "otpauth" not in out   # an inspector: refused
    assert run("role", "pat", "superintendent")[0] == 0
    code, out, _ = run("totp", "pat", "--on")
    assert code == 0 and "otpauth://totp/sewerwatch:pat?secret=" in out
    assert run("reset-password", "pat", "--password-stdin", stdin="a new long password\n")[0] == 0
    assert run("disable", "pat")[0] == 0
    code, out, _ = run("list", "--json")
    listed = json.loads(out)
    assert [(a["username"], a["role"], a["state"], a["totp"]) for a in listed] == [("pat", "superintendent",
                                                                                   "disabled", True)]
    assert "a long password" not in out and "password_hash" not in out
    with psycopg.connect(db.url) as conn:
        rows = conn.execute("SELECT actor, action, detail->>'via' FROM audit_log WHERE object = 'account:pat' "
                            "ORDER BY id").fetchall()
        acc = accounts.get(conn, "pat")
        stored = conn.execute("SELECT password_hash FROM web_accounts").fetchone()[0]
    me = getpass.getuser()
    assert rows == [(me, "account-added", "cli"), (me, "account-role", "cli"), (me, "account-role", "cli"),
                    (me, "account-totp-on", "cli"), (me, "account-password-reset", "cli"),
                    (me, "account-disabled", "cli")]
    assert acc.session_epoch == 6 and stored.startswith("$argon2id$v=19$") and "new long" not in stored
