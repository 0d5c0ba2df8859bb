"""The webhook catcher run alone (``python -m alerts.catchers webhook``; the latency
benchmark runs it so): it says its port, and writes each POST it receives as one JSON line
with its path, body and time of arrival."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_each_post_becomes_a_json_line():
    proc = subprocess.Popen([sys.executable, "-m", "alerts.catchers", "webhook", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        said = proc.stderr.readline()
        assert said.startswith("webhook catcher listening on 127.0.0.1:"), said
        port = int(said.rsplit(":", 1)[1])
        before = time.time()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/hook", data=b'{"title": "VIOLATION probe1"}',
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
        line = json.loads(proc.stdout.readline())
        assert line["path"] == "/hook" and line["body"] == {"title": "VIOLATION probe1"}
        assert before <= line["at"] <= time.time()
    finally:
        proc.kill()
        proc.wait()
