"""Local receivers for the notification channels: a mail catcher (SMTP, aiosmtpd) and a
webhook catcher (HTTP). Used by the tests, the latency benchmark and the demo; they listen
on the loopback interface only.

Run alone (the demo does)::

    python -m alerts.catchers mail --port 8025 --out mail.log
    python -m alerts.catchers webhook --port 0      # each POST a JSON line: path, body, at

A webhook catcher run alone is a process of its own, as a real receiver is (the latency
benchmark's: in the measured process its thread would wait for that process's turns at the
interpreter's lock before it could take the time of arrival).
"""

from __future__ import annotations

import argparse
import email
import email.policy
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class MailCatcher:
    """An SMTP server on 127.0.0.1 keeping every message it receives.

    ``messages`` holds dicts ``{"from", "to", "subject", "body", "at", "raw"}`` (body: the
    text/plain part; raw: the message's bytes as received). A recipient in ``refuse`` is
    refused at once (``550``), as a mail server refuses an unknown mailbox.
    """

    def __init__(self, port: int = 0, on_message=None, refuse=()):
        from aiosmtpd.controller import Controller   # lazy: aiosmtpd is a dev dependency (tests, demo)

        self.messages: list[dict] = []
        self._lock = threading.Lock()
        self.on_message = on_message
        self.refuse = {a.lower() for a in refuse}
        catcher = self

        class Handler:
            async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
                if address.lower() in catcher.refuse:
                    return "550 5.1.1 mailbox unavailable"
                envelope.rcpt_tos.append(address)
                return "250 OK"

            async def handle_DATA(self, server, session, envelope):
                catcher._add(envelope)
                return "250 OK"

        if port == 0:

            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        self.port = port
        self._controller = Controller(Handler(), hostname="127.0.0.1", port=port)

    def _add(self, envelope) -> None:
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        part = msg.get_body(preferencelist=("plain", "html"))
        rec = {"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "subject": str(msg["subject"] or ""),
               "body": part.get_content() if part is not None else "", "at": time.time(),
               "raw": envelope.content}
        with self._lock:
            self.messages.append(rec)
        if self.on_message:
            self.on_message(rec)

    def url(self, to: str, sender: str = "sewerwatch@localhost") -> str:
        """The apprise URL that sends to this catcher (plain SMTP, no login, no TLS)."""
        return f"mailto://127.0.0.1:{self.port}?from={sender}&to={to}"

    def to(self, address: str) -> list[dict]:
        with self._lock:
            return [m for m in self.messages if address in m["to"]]

    def start(self) -> "MailCatcher":
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()


class WebhookCatcher:
    """An HTTP server on 127.0.0.1 recording every POSTed JSON body with its arrival time.

    ``fail_first`` answers 500 to the first N requests of each path (to test retries).
    """

    def __init__(self, port: int = 0, fail_first: int = 0, on_post=None):
        self.posts: list[dict] = []
        self.fail_first = fail_first
        self.on_post = on_post
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        catcher = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                at = time.time()
                with catcher._lock:
                    k = catcher._counts.get(self.path, 0) + 1
                    catcher._counts[self.path] = k
                    fail = k <= catcher.fail_first
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = {"raw": raw.decode("utf-8", "replace")}
                    catcher.posts.append({"path": self.path, "body": body, "at": at, "status": 500 if fail else 200})
                if catcher.on_post and not fail:
                    catcher.on_post(self.path, body, at)
                self.send_response(500 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        """The apprise URL of a JSON webhook on this catcher."""
        return f"json://127.0.0.1:{self.port}{path}"

    def received(self, path: str | None = None) -> list[dict]:
        with self._lock:
            return [p for p in self.posts if p["status"] == 200 and (path is None or p["path"] == path)]

    def start(self) -> "WebhookCatcher":
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m alerts.catchers", description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["mail", "webhook"])
    ap.add_argument("--port", type=int, default=8025, help="0: any free port (said on standard error)")
    ap.add_argument("--out", help="append each message here (default: standard output)")
    args = ap.parse_args(argv)

    def write(text):
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()

    if args.kind == "webhook":
        c = WebhookCatcher(args.port, on_post=lambda path, body, at: write(
            json.dumps({"path": path, "body": body, "at": at}) + "\n")).start()
    else:
        c = MailCatcher(args.port, on_message=lambda m: write(
            f"\n--- mail to {', '.join(m['to'])}: {m['subject']}\n{m['body']}\n")).start()
    print(f"{args.kind} catcher listening on 127.0.0.1:{c.port}", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
