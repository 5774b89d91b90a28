#!/usr/bin/env python3
"""A stand-in for Airlock's socket that answers the agent's model calls
with streams of many tiny pieces (Python 3 standard library).

  fragment-gateway.py SOCKET --pieces N [--calls K] [--text M]
                      [--log FILE]

The first chat/completions answer calls K tools (name "nope-<i>"), the
arguments of each, '{"x":"aaa...a"}' of N bytes, sent one byte per
event (the calls' events interleaved), as a hostile or broken provider
may; every later answer is the text "ddd...d" in --text one-character
pieces.
Each request is logged to --log as one line: its number.
"""

import argparse
import json
import os
import socket
import socketserver


args = None
count = [0]


def event(obj):
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() \
           + b"\n\n"


def chunk(delta, finish=None):
    return event({"id": "c", "object": "chat.completion.chunk",
                  "choices": [{"index": 0, "delta": delta,
                               "finish_reason": finish}]})


def tool_stream(n, k):
    out = []
    for i in range(k):
        out.append(chunk({"tool_calls": [{
            "index": i, "id": "call_%d" % i, "type": "function",
            "function": {"name": "nope-%d" % i, "arguments": ""}}]}))

    text = '{"x":"' + "a" * (n - 8) + '"}'
    for c in text:
        for i in range(k):
            out.append(b'data: {"choices":[{"index":0,"delta":{'
                       b'"tool_calls":[{"index":%d,"function":'
                       b'{"arguments":%s}}]},"finish_reason":null}]}\n\n'
                       % (i, json.dumps(c).encode()))

    out.append(chunk({}, "tool_calls"))
    return out


def text_stream(n):
    out = [chunk({"role": "assistant", "content": ""})]
    piece = b'data: {"choices":[{"index":0,"delta":{"content":"d"},' \
            b'"finish_reason":null}]}\n\n'
    out.extend([piece] * n)
    out.append(chunk({}, "stop"))
    return out


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        length = 0
        if not self.rfile.readline():
            return                          # a look, no request
        while True:
            line = self.rfile.readline()
            if not line or line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        self.rfile.read(length)

        count[0] += 1
        if args.log:
            with open(args.log, "a") as f:
                f.write("%d\n" % count[0])

        if count[0] == 1:
            events = tool_stream(args.pieces, args.calls)
        else:
            events = text_stream(args.text)
        events.append(b"data: [DONE]\n\n")

        self.wfile.write(b"HTTP/1.1 200 OK\r\n"
                         b"Content-Type: text/event-stream\r\n"
                         b"Connection: close\r\n\r\n")
        body = b"".join(events)
        for i in range(0, len(body), 1 << 16):
            self.wfile.write(body[i:i + (1 << 16)])


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("socket")
    p.add_argument("--pieces", type=int, required=True)
    p.add_argument("--calls", type=int, default=1)
    p.add_argument("--text", type=int, default=1)
    p.add_argument("--log")
    args = p.parse_args()

    if os.path.exists(args.socket):
        os.unlink(args.socket)
    srv = Server(args.socket, Handler)
    os.chmod(args.socket, 0o666)
    srv.serve_forever()


if __name__ == "__main__":
    main()
