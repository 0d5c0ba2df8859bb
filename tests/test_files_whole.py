"""Files written whole (foundation/files.py): the content and mode in place at once, the old
file kept when a write fails, nothing left behind, and readers never seeing half a file while
two writers take turns."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from foundation.files import write_whole


def _mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_the_new_content_and_mode_replace_the_old(tmp_path):
    p = tmp_path / "secrets.json"
    p.write_text("old")
    os.chmod(p, 0o644)
    write_whole(p, '{"a": "é"}')
    assert p.read_text(encoding="utf-8") == '{"a": "é"}' and _mode(p) == 0o600
    write_whole(p, b"\x00\x01", mode=0o644, fsync=False)
    assert p.read_bytes() == b"\x00\x01" and _mode(p) == 0o644
    assert sorted(x.name for x in tmp_path.iterdir()) == ["secrets.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path):
    p = tmp_path / "settings.conf"
    p.write_text("port = 1\n")
    with pytest.raises(TypeError):
        write_whole(p, 12345)                       # not text nor bytes: fails mid-write
    assert p.read_text() == "port = 1\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["settings.conf"]
    with pytest.raises(FileNotFoundError):
        write_whole(tmp_path / "missing" / "f", "x")


def test_the_owner_is_given_before_the_file_is_in_place(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    p = tmp_path / "postgresql.auto.conf"
    write_whole(p, "port = 2\n", owner=(65534, 65534))
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (65534, 65534) and _mode(p) == 0o600


def test_readers_see_one_whole_file_or_the_other(tmp_path):
    p = tmp_path / "state.json"
    a, b = "a" * 200_000, "b" * 300_000
    write_whole(p, a)
    stop = threading.Event()
    torn: list[int] = []

    def write(text):
        for _ in range(150):
            write_whole(p, text, fsync=False)
        stop.set()

    def read():
        while not stop.is_set():
            got = p.read_text()
            if got not in (a, b):
                torn.append(len(got))

    threads = [threading.Thread(target=write, args=(t,)) for t in (a, b)] + [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert torn == []
    assert [x.name for x in tmp_path.iterdir()] == ["state.json"]
