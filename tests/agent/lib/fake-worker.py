#!/usr/bin/env python3
"""The worker's side of the job contract, played by the agent tests
(Python 3 standard library, a minimal RESP client).

  fake-worker.py --redis PATH --log FILE [--proxy HOST:PORT --token T]
                 [--result JSON] [--user NAME --password-file FILE]

Joins group airlock-workers on stream airlock:jobs, and for each job:
appends the envelope to --log (one JSON line), fetches each blueprint
input through the proxy as client "worker" (token over TCP) into
data.json, runs the script with python3 in a temporary directory (this
is a test double: no sandbox), then does what the contract says a worker
does: SET result:<job> NX EX, PUBLISH response:<job> with the stored
value, XACK.  It is Redis user --user (airlock-worker) when one is
given, with the password in --password-file.  --result replaces the run with a fixed result object; a
script whose first line is "# result: JSON" is not run either, its
result is that JSON as it is (a compromised worker's, for the tests).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request


class Redis:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def cmd(self, *a):
        out = b"*%d\r\n" % len(a)
        for x in a:
            x = x if isinstance(x, bytes) else str(x).encode()
            out += b"$%d\r\n%s\r\n" % (len(x), x)
        self.s.sendall(out)
        return self.reply()

    def reply(self):
        line = self.f.readline()
        if not line:
            raise EOFError
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data
        if t == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self.reply() for _ in range(n)]
        raise ValueError(line)


def fetch(args, inp):
    q = urllib.parse.urlencode(inp.get("query") or {})
    # the route's path comes from the policy; the tests use these two
    if inp["route"] == "prometheus-query":
        path = "/prometheus/query"
    else:
        path = "/logs/" + urllib.parse.quote(
            (inp.get("params") or {}).get("service", ""), safe="")
    url = "http://%s%s%s" % (args.proxy, path, "?" + q if q else "")
    req = urllib.request.Request(url, headers={
        "Proxy-Authorization": "Bearer " + args.token})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, body = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read().decode()
    try:
        body = json.loads(body)
    except ValueError:
        pass
    return {"status": status, "body": body}


def run(args, job):
    if args.result:
        return json.loads(args.result)
    # a compromised worker, played: a script whose first line is
    # "# result: JSON" is not run; that JSON is its result, as it is
    head = job["script"].split("\n", 1)[0]
    if head.startswith("# result: "):
        return json.loads(head[len("# result: "):])
    t0 = time.time()
    data = {}
    for inp in job.get("blueprint", {}).get("inputs", []):
        data[inp["name"]] = fetch(args, inp)
    t1 = time.time()
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "data.json"), "w") as f:
            json.dump(data, f)
        with open(os.path.join(d, "script.py"), "w") as f:
            f.write(job["script"].replace("/app/data/", d + "/"))
        p = subprocess.run([sys.executable, os.path.join(d, "script.py")],
                           capture_output=True, timeout=30)
    t2 = time.time()
    return {"status": "ok" if p.returncode == 0 else "error",
            "exit_code": p.returncode,
            "stdout": p.stdout.decode(errors="replace"),
            "stderr": p.stderr.decode(errors="replace"),
            "stdout_truncated": False, "stderr_truncated": False,
            "backend": "none",
            "timing_ms": {"fetch": int((t1 - t0) * 1000), "prepare": 0,
                          "start": 0, "run": int((t2 - t1) * 1000),
                          "teardown": 0, "total": int((t2 - t0) * 1000)}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--proxy")
    ap.add_argument("--token")
    ap.add_argument("--result")
    ap.add_argument("--user")
    ap.add_argument("--password-file")
    args = ap.parse_args()

    r = Redis(args.redis)
    if args.user:
        with open(args.password_file) as f:
            ok = r.cmd("AUTH", args.user, f.readline().strip())
        if ok != "OK":
            sys.exit("fake-worker: AUTH as %s: %s" % (args.user, ok))
    r.cmd("XGROUP", "CREATE", "airlock:jobs", "airlock-workers", "0",
          "MKSTREAM")
    parent = os.getppid()

    while os.getppid() == parent:
        got = r.cmd("XREADGROUP", "GROUP", "airlock-workers", "fake",
                    "COUNT", "1", "BLOCK", "500", "STREAMS",
                    "airlock:jobs", ">")
        if not got:
            continue
        for _, entries in got:
            for eid, fields in entries:
                kv = dict(zip(fields[::2], fields[1::2]))
                raw = kv.get(b"job", b"")
                with open(args.log, "a") as f:
                    f.write(json.dumps({"id": eid.decode(),
                                        "fields": sorted(
                                            k.decode() for k in kv),
                                        "job": raw.decode()}) + "\n")
                job = json.loads(raw)
                res = run(args, job)
                res.update(job_id=job["job_id"],
                           session_id=job["session_id"])
                text = json.dumps(res)
                key = "result:" + job["job_id"]
                r.cmd("SET", key, text, "NX", "EX", "600")
                stored = r.cmd("GET", key)
                r.cmd("PUBLISH", "response:" + job["job_id"], stored)
                r.cmd("XACK", "airlock:jobs", "airlock-workers", eid)


if __name__ == "__main__":
    main()
