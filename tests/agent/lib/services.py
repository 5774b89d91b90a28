#!/usr/bin/env python3
"""Upstream services for the agent tests (Python 3 standard library).

  services.py PORT --log FILE --prom-auth 'Basic ...' --logs-auth
              'Bearer ...' --load 3.14 --logs-file FILE

  GET /api/v1/query?query=...         a Prometheus instant-query answer
                                      (one node_load1 sample, value
                                      --load), only with the Authorization
                                      header --prom-auth, else 401
  GET /api/v1/services/NAME/logs      the bytes of --logs-file, read on
                                      every request, only with the
                                      Authorization header --logs-auth;
                                      a file that begins "STATUS nnn\n"
                                      answers that status with the rest
                                      (application/json), after its
                                      lines "HEADER Name: value\n" (each
                                      a response header); a file that
                                      begins "WAIT PATH\n" answers the
                                      rest only once PATH exists (at
                                      most 60 s)

HEAD is answered as GET, without the body.  POST to any path is
answered 200 "posted", its body logged too ("body").

Every request is appended to --log as one JSON line: method, path,
headers (lower-case names), status.  Exits with its parent.
"""

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = None
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def answer(self, status, ctype, body, headers=()):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        auth = self.headers.get("Authorization")
        status = 404
        if path == "/api/v1/query":
            status = 200 if auth == args.prom_auth else 401
        elif path.startswith("/api/v1/services/") and path.endswith("/logs"):
            status = 200 if auth == args.logs_auth else 401

        with lock:
            with open(args.log, "a") as f:
                f.write(json.dumps({
                    "method": self.command, "path": self.path,
                    "status": status,
                    "headers": {k.lower(): v
                                for k, v in self.headers.items()}}) + "\n")

        if status == 401:
            self.answer(401, "application/json",
                        '{"status":"error","error":"unauthorized"}')
        elif status == 404:
            self.answer(404, "text/plain", "not found\n")
        elif path == "/api/v1/query":
            self.answer(200, "application/json", json.dumps({
                "status": "success", "data": {
                    "resultType": "vector", "result": [{
                        "metric": {"__name__": "node_load1",
                                   "instance": "prod-vm-04:9100"},
                        "value": [1764590000.0, args.load]}]}}))
        else:
            try:
                with open(args.logs_file, "rb") as f:
                    data = f.read()
            except OSError:
                data = b""
            if data.startswith(b"WAIT "):
                line, _, data = data.partition(b"\n")
                for _ in range(3000):
                    if os.path.exists(line[5:].decode()):
                        break
                    time.sleep(0.02)
            if data.startswith(b"STATUS "):
                line, _, rest = data.partition(b"\n")
                headers = []
                while rest.startswith(b"HEADER "):
                    h, _, rest = rest.partition(b"\n")
                    name, _, value = h[7:].decode().partition(":")
                    headers.append((name.strip(), value.strip()))
                self.answer(int(line[7:]), "application/json", rest,
                            headers)
            else:
                self.answer(200, "text/plain; charset=utf-8", data)

    do_HEAD = do_GET

    def do_POST(self):
        # logged with its body and answered 200, whatever the path
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n > 0 else b""
        with lock:
            with open(args.log, "a") as f:
                f.write(json.dumps({
                    "method": self.command, "path": self.path,
                    "status": 200,
                    "headers": {k.lower(): v
                                for k, v in self.headers.items()},
                    "body": body.decode("utf-8", "replace")}) + "\n")
        self.answer(200, "text/plain", "posted\n")


def watch_parent():
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--log", required=True)
    ap.add_argument("--prom-auth", required=True)
    ap.add_argument("--logs-auth", required=True)
    ap.add_argument("--load", default="3.14")
    ap.add_argument("--logs-file", required=True)
    args = ap.parse_args()
    threading.Thread(target=watch_parent, daemon=True).start()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
