"""Loopback servers and a scraper for the actions tests (tests/actions/*_test.cc).

Each server prints "PORT <n>" once it listens on 127.0.0.1, then one JSON line per request or
message it receives, and runs until killed.

  webhook [--fail-first N] [--status CODE]
      HTTP server that records every request: {"method", "path", "headers", "body", "answered"}.
      The first N requests get 500; the others get CODE (default 200).
  smtp [--tempfail-first N] [--reject ADDR] [--auth USER:PASSWORD]
      SMTP sink (aiosmtpd). Per accepted message: {"mail_from", "rcpt_tos", "from", "to",
      "subject", "content_type", "body", "raw"}, the headers and body decoded by Python's email
      package. The first N messages get "451 try again"; RCPT TO ADDR gets 550; with --auth, a
      login is required (without TLS).
  scrape URL
      Fetches URL and prints one JSON object: {"content_type", "families": {name: {"type",
      "samples": [{"name", "labels", "value"}]}}}, parsed by
      prometheus_client.parser.text_string_to_metric_families. Non-finite values as strings.
"""
import argparse
import asyncio
import email
import email.policy
import json
import math
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def run_webhook(args):
    lock = threading.Lock()
    state = {"seen": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length).decode("utf-8", "replace")
            with lock:
                state["seen"] += 1
                code = 500 if state["seen"] <= args.fail_first else args.status
            emit({"method": "POST", "path": self.path, "headers": dict(self.headers.items()),
                  "body": body, "answered": code})
            reply = b"ok" if code < 300 else b"try later"
            self.send_response(code)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


def run_smtp(args):
    from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

    class Handler:
        def __init__(self):
            self.tempfail = args.tempfail_first

        async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
            if address in args.reject:
                return "550 5.1.1 no such mailbox"
            envelope.rcpt_tos.append(address)
            return "250 OK"

        async def handle_DATA(self, server, session, envelope):
            raw = envelope.content
            if isinstance(raw, str):
                raw = raw.encode("utf-8")
            if self.tempfail > 0:
                self.tempfail -= 1
                emit({"tempfailed": True})
                return "451 4.3.0 try again later"
            msg = email.message_from_bytes(raw, policy=email.policy.default)
            body = msg.get_body(preferencelist=("plain",))
            emit({"mail_from": envelope.mail_from, "rcpt_tos": list(envelope.rcpt_tos),
                  "from": str(msg["from"]), "to": str(msg["to"]), "subject": str(msg["subject"]),
                  "content_type": msg.get_content_type(),
                  "body": (body.get_content() if body is not None else "").replace("\r\n", "\n"),
                  "raw": raw.decode("utf-8", "replace")})
            return "250 Message accepted for delivery"

    kwargs = {}
    if args.auth:
        user, password = args.auth.split(":", 1)

        def authenticator(server, session, envelope, mechanism, auth_data):
            ok = (isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user
                  and auth_data.password.decode() == password)
            return AuthResult(success=ok, handled=False)  # False: aiosmtpd answers 535

        kwargs = dict(authenticator=authenticator, auth_required=True, auth_require_tls=False)

    handler = Handler()  # one for all connections, so --tempfail-first counts across retries

    async def main():
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: SMTP(handler, hostname="sink.test", **kwargs), "127.0.0.1", 0)
        print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
        await server.serve_forever()

    asyncio.run(main())


def run_scrape(args):
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(args.url, timeout=10) as resp:
        content_type = resp.headers.get("Content-Type")
        text = resp.read().decode("utf-8")

    def value(v):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "+Inf" if v > 0 else "-Inf"
        return v

    families = {}
    for fam in text_string_to_metric_families(text):
        families[fam.name] = {
            "type": fam.type,
            "help": fam.documentation,
            "samples": [{"name": s.name, "labels": dict(s.labels), "value": value(s.value)}
                        for s in fam.samples],
        }
    emit({"content_type": content_type, "families": families})


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("webhook")
    w.add_argument("--fail-first", type=int, default=0)
    w.add_argument("--status", type=int, default=200)
    s = sub.add_parser("smtp")
    s.add_argument("--tempfail-first", type=int, default=0)
    s.add_argument("--reject", action="append", default=[])
    s.add_argument("--auth", default="")
    c = sub.add_parser("scrape")
    c.add_argument("url")
    args = p.parse_args()
    {"webhook": run_webhook, "smtp": run_smtp, "scrape": run_scrape}[args.cmd](args)


if __name__ == "__main__":
    main()
