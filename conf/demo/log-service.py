#!/usr/bin/env python3
"""The demo's log service (a stand-in: there is no log service here).

  log-service.py PORT --token TOKEN --logs DIR --log FILE

GET /api/v1/services/NAME/logs answers the lines of DIR/NAME.log (or a
quiet default) as text, only to a request that carries "Authorization:
Bearer TOKEN", which only the proxy has; anything else is 401.  Every
request is appended to FILE as one JSON line (method, target, headers as
[name, value] pairs), so the demo can show what reached the service.
"""

import argparse
import json
import os
import re
import time
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def do_GET(self):
        with open(args.log, "a") as f:
            f.write(json.dumps({"method": "GET", "target": self.path,
                                "headers": list(self.headers.items())})
                    + "\n")

        m = re.match(r"^/api/v1/services/([a-z0-9-]+)/logs(\?.*)?$",
                     self.path)
        if self.headers.get("Authorization") != "Bearer " + args.token:
            status, body = 401, "unauthorized\n"
        elif not m:
            status, body = 404, "no such service\n"
        else:
            status = 200
            try:
                with open(os.path.join(args.logs, m.group(1) + ".log")) as f:
                    body = f.read()
            except OSError:
                body = "%s INFO %s nothing to report\n" % (
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    m.group(1))

        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--token", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
