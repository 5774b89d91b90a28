#!/usr/bin/env python3
"""Fixture webhook receiver for the alertd tests (Python 3 standard library).

Listens on 127.0.0.1:PORT, checks Standard Webhooks signatures with the
given secret, and appends one JSON line per request to --log:

  n           request number, from 1
  id          webhook-id header (null when absent)
  timestamp   webhook-timestamp header (null when absent)
  signature   webhook-signature header (null when absent)
  verified    true when one v1 signature matches HMAC-SHA256 of
              "id.timestamp.body" under the key
  timestamp_ok  true when the timestamp is within --tolerance seconds
  status      the status answered, or "closed" when the connection was
              closed without an answer
  unended     true when the answer's body was left unended (--no-end)
  path, content_type, user_agent
  body        the raw body, as text
  json        the body parsed, or null
  arrival     time.time() when the request was read

The key: a secret "whsec_<base64>" is the base64-decoded rest, any other
secret its own bytes (Standard Webhooks).  The line is written after the
answer, so a test that sees it knows what the sender was told.

Failing on purpose:
  --fail N            the first N requests fail
  --fail-until FILE   requests fail until FILE exists
  --fail-mode MODE    how: an HTTP status ("500", "400", "429") or "close"
                      (drop the connection without an answer); default 500
  --delay SECONDS     wait before answering (a slow receiver)
  --retry-after VALUE a failing answer carries "Retry-After: VALUE"
  --refuse REGEX      a request whose body matches REGEX is refused (422),
                      every time: an alert this receiver will never take
  --fail-match REGEX  a request whose body matches REGEX fails as
                      --fail-mode says, every time: an alert this
                      receiver crashes on
  --refuse-unverified a request without a v1 signature that matches under
                      the key is refused (401), as a receiver that checks
                      signatures does; without it, it is answered as any
                      other and recorded "verified": false

Answering otherwise:
  --redirect URL      every request is answered 307 with "Location: URL"
                      (recorded with status 307): a sender must not follow
                      it, the signed alert would go to another host
  --tls-cert FILE, --tls-key FILE
                      serve HTTPS with this certificate and key (PEM); a
                      sender that refuses the certificate is not recorded

Accepting without finishing the answer:
  --no-end N          the first N requests that do not fail are answered
                      200 with no Content-Length and the start of a body
                      that never ends: the connection is held until the
                      sender closes it (the line is written once the
                      status and headers are sent)

It exits on SIGTERM or SIGINT, and when its parent process goes away.
With --port 0 it picks a free port and writes it to --port-file.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import re
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


BODY_MAX = 1 << 20


def signing_key(secret):
    if secret.startswith(b"whsec_"):
        return base64.b64decode(secret[6:])
    return secret


def verify(key, msg_id, timestamp, signature, body):
    if msg_id is None or timestamp is None or signature is None:
        return False
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(
        hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for part in signature.split(" "):
        version, _, value = part.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


class State:
    def __init__(self, args, key):
        self.args = args
        self.key = key
        self.lock = threading.Lock()
        self.count = 0
        self.unended_left = args.no_end
        self.refuse = (re.compile(args.refuse.encode())
                       if args.refuse is not None else None)
        self.fail_match = (re.compile(args.fail_match.encode())
                           if args.fail_match is not None else None)
        self.log = open(args.log, "a", encoding="utf-8")

    def next_number(self):
        with self.lock:
            self.count += 1
            return self.count

    def unended(self):
        with self.lock:
            if self.unended_left > 0:
                self.unended_left -= 1
                return True
            return False

    def failing(self, n, body):
        if n <= self.args.fail:
            return True
        if self.args.fail_until and not os.path.exists(self.args.fail_until):
            return True
        if self.fail_match is not None and self.fail_match.search(body):
            return True
        return False

    def record(self, entry):
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self.lock:
            self.log.write(line)
            self.log.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "webhook-receiver/1"

    def log_message(self, fmt, *args):
        if self.server.state.args.verbose:
            sys.stderr.write("webhook-receiver: " + (fmt % args) + "\n")

    def do_GET(self):
        self.answer(200, b"webhook-receiver\n")

    def do_POST(self):
        state = self.server.state
        n = state.next_number()
        arrival = time.time()

        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > BODY_MAX:
            self.answer(400, b"bad length\n")
            return
        body = self.rfile.read(length)

        msg_id = self.headers.get("webhook-id")
        ts = self.headers.get("webhook-timestamp")
        sig = self.headers.get("webhook-signature")

        ok = verify(state.key, msg_id, ts, sig, body)
        try:
            ts_ok = abs(time.time() - int(ts)) <= state.args.tolerance
        except (TypeError, ValueError):
            ts_ok = False

        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None

        if state.args.delay > 0:
            time.sleep(state.args.delay)

        status = 200
        unended = False
        if state.args.redirect is not None:
            status = 307
        elif state.failing(n, body):
            status = state.args.fail_mode
        elif state.args.refuse_unverified and not ok:
            status = 401
        elif state.refuse is not None and state.refuse.search(body):
            status = 422
        elif state.unended():
            unended = True

        if unended:
            self.close_connection = True
            try:
                self.answer_unended()
            except OSError:
                status = "unsent"
        elif status == "close":
            self.close_connection = True
            status = "closed"
        else:
            try:
                self.answer(status,
                            b"ok\n" if status == 200 else b"failing\n")
            except OSError:
                status = "unsent"

        state.record({
            "n": n,
            "id": msg_id,
            "timestamp": ts,
            "signature": sig,
            "verified": ok,
            "timestamp_ok": ts_ok,
            "status": status,
            "unended": unended,
            "path": self.path,
            "content_type": self.headers.get("Content-Type"),
            "user_agent": self.headers.get("User-Agent"),
            "body": body.decode("utf-8", "replace"),
            "json": parsed,
            "arrival": arrival,
        })

        if unended and status == 200:
            self.hold()

    def answer_unended(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"ok, and more to come\n")
        self.wfile.flush()

    def hold(self):
        # until the sender closes the connection (or an hour passes)
        self.connection.settimeout(3600)
        try:
            while self.connection.recv(4096):
                pass
        except OSError:
            pass

    def answer(self, status, payload):
        self.send_response(status)
        after = self.server.state.args.retry_after
        if status != 200 and after is not None:
            self.send_header("Retry-After", after)
        if status == 307:
            self.send_header("Location", self.server.state.args.redirect)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def watch_parent(server, parent):
    while True:
        time.sleep(0.2)
        if os.getppid() != parent:
            server.shutdown()
            return


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--port-file")
    p.add_argument("--secret")
    p.add_argument("--secret-file")
    p.add_argument("--log", required=True)
    p.add_argument("--fail", type=int, default=0)
    p.add_argument("--fail-until")
    p.add_argument("--fail-mode", default="500")
    p.add_argument("--delay", type=float, default=0)
    p.add_argument("--retry-after")
    p.add_argument("--no-end", type=int, default=0)
    p.add_argument("--refuse")
    p.add_argument("--fail-match")
    p.add_argument("--refuse-unverified", action="store_true")
    p.add_argument("--tolerance", type=int, default=300)
    p.add_argument("--redirect")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()

    if args.fail_mode != "close":
        try:
            args.fail_mode = int(args.fail_mode)
        except ValueError:
            p.error("--fail-mode is an HTTP status or \"close\"")

    if args.secret_file:
        with open(args.secret_file, "rb") as f:
            secret = f.read()
        if secret.endswith(b"\n"):
            secret = secret[:-1]
    elif args.secret is not None:
        secret = args.secret.encode()
    else:
        p.error("--secret or --secret-file is required")

    parent = os.getppid()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.state = State(args, signing_key(secret))

    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    threading.Thread(target=watch_parent, args=(server, parent),
                     daemon=True).start()

    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % server.server_address[1])
        os.rename(tmp, args.port_file)

    server.serve_forever(poll_interval=0.1)
    server.server_close()


if __name__ == "__main__":
    main()
