#!/usr/bin/env python3
"""Scripted LLM provider for the gateway tests (Python 3 standard library).

Speaks enough of two APIs, under any base path ("/v1/..." or "/...", and
Azure's "/openai/deployments/{d}/..." or "/openai/..."):

  OpenAI     POST chat/completions, completions, embeddings, responses;
             GET models, models/{id}
  Anthropic  POST messages; GET models (the same handler answers both
             kinds; "messages" is Anthropic's)

as JSON, or as text/event-stream when the body has "stream": true, sent
chunked, one event per chunk, flushed:

  chat/completions, completions
      a role chunk, one chunk per piece of text, a finish chunk, and when
      stream_options.include_usage is true the usage-only chunk
      ("choices": [], "usage": {...}; the other chunks then carry
      "usage": null, as OpenAI does), then "data: [DONE]"
  responses
      response.created, response.output_item.added and .done of each
      scripted output item, response.output_text.delta per piece,
      response.completed with response.usage
  messages
      message_start (input usage), content_block_start, ping, one
      content_block_delta per piece, content_block_stop, message_delta
      (cumulative output_tokens), message_stop

Usage is fixed unless scripted: prompt 11 (Anthropic: input 11), one
completion token per piece of text (3 pieces: "Hello", " from",
" fixture"), cached 0.

Scripting.  A script is a JSON object; it comes from the request header
X-Fixture (a gateway drops client headers, so that is for direct calls or
proxy_set_header), else from the control file (--control): a JSON list is
a queue, each request takes the first element (the file is rewritten);
an object applies to every request; a missing or empty file means {}.
Keys:

  status        answer with this status and an error body in the API's
                format (the error "message" echoes the Authorization and
                x-api-key the request carried when "echo_auth" is true,
                and so does an X-Echo-Auth response header)
  echo_auth     also on a 200: the X-Echo-Auth header, and the key in the
                JSON body's "echo_auth"
  echo_b64      with echo_auth: the key in base64 as well
  echo          the JSON answer gets "echo": {method, path, headers,
                body} of the request as received
  pieces        the text pieces (list of strings)
  usage         {"prompt": n, "completion": n, "cached": n,
                 "cache_write": n, "cache_write_1h": n} instead of the
                defaults; with "cache_write_1h", Anthropic's usage has
                its cache_creation object (that many of the cache_write
                tokens written for an hour, the rest for 5 minutes)
  no_usage      leave usage out (JSON and streams)
  delay_first_ms  wait before the response headers
  delay_ms      wait between stream events
  pause_after, pause_ms
                wait pause_ms after the first pause_after events only
  gate          with pause_after: instead of pause_ms, wait until this
                file exists (at most 60 s): the test opens the gate once
                it has what it must see before the rest is sent
  head_gate     streams: after the response headers, create the file
                "<head_gate>.head" and wait (at most 60 s) until the file
                head_gate exists before the first event: the provider
                has answered and not sent a byte of the body yet
  cut_after     close the connection after this many stream events,
                without the last chunk
  cut_mid       with cut_after: first send half of the next event
  end_after     end the answer after this many stream events, cleanly
                (the last chunk sent): a stream cut short on the way,
                with no finish chunk and no [DONE]
  split         send every event in pieces of this many bytes, each its
                own chunk, split_delay_ms apart
  split_delay_ms
  sse_on_error  with status: answer the error as an event stream
  error_usage   with status: the error body carries a "usage" in the
                API's format (the scripted numbers, else the defaults),
                as a router that bills a call and then fails it does
  tool_calls    chat: the answer calls these tools, [{"name": ...,
                "arguments": object (sent as JSON) or string (sent as
                is, so it may be broken JSON), "id": optional}]; streamed
                as OpenAI does (name first, the arguments in two pieces),
                finish_reason "tool_calls"; pieces default to none
  quote         a regular expression searched in the last "tool" message
                of the request; "{{1}}" in pieces becomes its first group
                (or "(no match)"): an answer that quotes real tool data
  obey_max_tokens
                chat: answer as a model held to the output cap the
                request names (the least of max_completion_tokens and
                max_tokens): past it, the completion count is the cap,
                the pieces the first that many, no tool calls, and
                finish_reason "length"
  body_gate     JSON answers: write the header and the first half of
                the body, create the file "<body_gate>.half", then wait
                (at most 60 s) until the file body_gate exists before
                the rest: an answer that comes in parts, its "usage" (at
                its end) in the second
  wait_file     before answering, wait (up to 60 s) until this file exists
  sent_file     once the whole answer is written, append a line to this
                file: "sent PORT BYTES", the gateway's port of the
                connection and the bytes of the answer, so that a test
                waits for the answers to be in the gateway's sockets
                (their receive queues), not for a time
  request_id    send this as the answer's x-request-id, as OpenAI does
  response_id   responses: the response's id (default "resp_1"), in the
                JSON answer and in the stream's response.created and
                response.completed
  output        responses: more output items, a list of objects sent as
                they are before the message of the text pieces (say
                [{"type": "reasoning", "id": "rs_1", "summary": []}]);
                streamed as response.output_item.added and .done each
  message_id    responses: the id of that message item (default none);
                a stream then has its response.output_item.added and
                .done too, and its deltas name it
  echo_headers  send this many more headers, X-Echo-Auth-0, -1, ..., each
                with what X-Echo-Auth has
  headers       more response headers, {"Name": "value", ...}, on every
                answer (an error's, a stream's)
  gzip          gzip the body, JSON answers and streams (each event
                flushed in its chunk); no Content-Encoding says so unless
                content_encoding or headers does
  zlib          the same in zlib's format (78 9c), as "Content-Encoding:
                deflate" is
  content_encoding
                JSON answers: a Content-Encoding header for each value of
                this list, in order
  transfer_encoding
                JSON answers: send the body in one chunk, with
                "Transfer-Encoding: this" (not only "chunked")
  raw           instead of an answer, these strings, each a write of its
                Latin-1 bytes (status line, headers and body as the test
                wrote them), then the connection is closed
  reset         with raw: the connection is reset (RST), not closed
  raw_gate      with raw: before the last string, wait (at most 60 s)
                until this file exists: the test opens the gate once the
                client has what the strings before it made

Every request is appended to --log as one JSON line: n, method, path,
headers (lower-case names), body (parsed JSON, or the text), script,
status.  It exits on SIGTERM or SIGINT, and when its parent goes away.
"""

import argparse
import base64
import gzip
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


BODY_MAX = 32 << 20
PIECES = ["Hello", " from", " fixture"]
PROMPT = 11

lock = threading.Lock()
counter = [0]
args = None


def load_script(header):
    if header:
        return json.loads(header)

    if not args.control:
        return {}

    with lock:
        try:
            with open(args.control) as f:
                text = f.read()
        except OSError:
            return {}

        if not text.strip():
            return {}

        data = json.loads(text)

        if isinstance(data, list):
            if not data:
                return {}
            script = data.pop(0)
            with open(args.control + ".tmp", "w") as f:
                json.dump(data, f)
            os.rename(args.control + ".tmp", args.control)
            return script

        return data


def log_request(entry):
    if not args.log:
        return
    with lock:
        with open(args.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def usage_numbers(script, pieces):
    u = script.get("usage") or {}
    return (u.get("prompt", PROMPT), u.get("completion", len(pieces)),
            u.get("cached", 0), u.get("cache_write", 0))


class CountingWriter:
    """The connection's writes, and how many bytes they have written."""

    def __init__(self, w):
        self.w = w
        self.n = 0

    def write(self, b):
        self.n += len(b)
        return self.w.write(b)

    def __getattr__(self, name):
        return getattr(self.w, name)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llm-provider/1"

    def setup(self):
        super().setup()
        self.wfile = CountingWriter(self.wfile)

    def log_message(self, fmt, *a):
        pass

    # ---- request ---------------------------------------------------------

    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def handle_any(self):
        written = self.wfile.n
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, BODY_MAX)) if length else b""

        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")

        try:
            script = load_script(self.headers.get("X-Fixture"))
        except ValueError:
            script = {}

        with lock:
            counter[0] += 1
            n = counter[0]

        self.req = {
            "n": n,
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
            "script": script,
        }
        self.script = script
        self.body = body if isinstance(body, dict) else {}

        path = self.path.split("?", 1)[0]
        if path.startswith("/v1/"):
            path = path[3:]
        # Azure OpenAI: /openai/deployments/{d}/..., /openai/responses
        parts = path.split("/")
        if len(parts) > 4 and parts[1:3] == ["openai", "deployments"]:
            path = "/" + "/".join(parts[4:])
        elif len(parts) > 2 and parts[1] == "openai":
            path = "/" + "/".join(parts[2:])

        status = script.get("status")
        self.req["status"] = status or 200
        log_request(self.req)

        if script.get("delay_first_ms"):
            time.sleep(script["delay_first_ms"] / 1000.0)

        try:
            if script.get("raw"):
                self.raw(script["raw"])
            elif status:
                self.error(status, path)
            elif self.command == "GET" and path == "/models":
                self.models()
            elif self.command == "GET" and path.startswith("/models/"):
                self.send_json(200, {"id": path[8:], "object": "model",
                                "type": "model", "owned_by": "fixture"})
            elif self.command != "POST":
                self.error(404, path)
            elif path == "/chat/completions":
                self.openai("chat")
            elif path == "/completions":
                self.openai("completions")
            elif path == "/embeddings":
                self.embeddings()
            elif path == "/responses":
                self.responses_api()
            elif path == "/messages":
                self.anthropic()
            else:
                self.error(404, path)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return

        if script.get("sent_file"):
            self.wfile.flush()
            with lock:
                with open(script["sent_file"], "a") as f:
                    f.write("sent %d %d\n" % (self.client_address[1],
                                               self.wfile.n - written))

    # ---- answers -----------------------------------------------------------

    def auth_seen(self):
        auth = self.headers.get("Authorization")
        key = self.headers.get("x-api-key") or self.headers.get("api-key")
        seen = "authorization=%s x-api-key=%s" % (auth, key)
        if self.script.get("echo_b64"):
            raw = key or (auth or "").replace("Bearer ", "", 1)
            seen += " b64=%s" % base64.b64encode(raw.encode()).decode()
        return seen

    def extra_headers(self):
        h = {}
        if self.script.get("echo_auth"):
            h["X-Echo-Auth"] = self.auth_seen()
        if self.script.get("request_id"):
            h["x-request-id"] = self.script["request_id"]
        # a provider's own limits; the gateway replaces them
        h["x-ratelimit-remaining-tokens"] = "999999"
        h["anthropic-ratelimit-tokens-remaining"] = "999999"
        # the account the key belongs to; the gateway removes them
        h["openai-organization"] = "org-fixture-account"
        h["OpenAI-Project"] = "proj_fixture_account"
        h["anthropic-organization-id"] = "fixture-account-org-id"
        # last: right before the headers the gateway adds
        for i in range(self.script.get("echo_headers", 0)):
            h["X-Echo-Auth-%d" % i] = self.auth_seen()
        h.update(self.script.get("headers", {}))
        return h

    def raw(self, parts):
        gate = self.script.get("raw_gate")
        for i, part in enumerate(parts):
            if gate and i and i == len(parts) - 1:
                until = time.time() + 60
                while not os.path.exists(gate) and time.time() < until:
                    time.sleep(0.01)
            self.wfile.write(part.encode("latin-1"))
            self.wfile.flush()
            time.sleep(0.02)
        self.close_connection = True
        if self.script.get("reset"):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()

    def send_json(self, status, obj):
        if self.script.get("echo"):
            obj["echo"] = {k: self.req[k]
                           for k in ("method", "path", "headers", "body")}
        if self.script.get("echo_auth"):
            obj["echo_auth"] = self.auth_seen()

        data = json.dumps(obj).encode()
        if self.script.get("gzip"):
            data = gzip.compress(data)
        elif self.script.get("zlib"):
            data = zlib.compress(data)
        te = self.script.get("transfer_encoding")

        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for v in self.script.get("content_encoding", []):
            self.send_header("Content-Encoding", v)
        if te:
            self.send_header("Transfer-Encoding", te)
            data = b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
        else:
            self.send_header("Content-Length", str(len(data)))
        for k, v in self.extra_headers().items():
            self.send_header(k, v)
        self.end_headers()
        gate = self.script.get("body_gate")
        if gate:
            half = len(data) // 2
            self.wfile.write(data[:half])
            self.wfile.flush()
            open(gate + ".half", "w").close()
            data = data[half:]
            until = time.time() + 60
            while not os.path.exists(gate) and time.time() < until:
                time.sleep(0.01)
        self.wfile.write(data)
        self.wfile.flush()

    def error(self, status, path):
        msg = "fixture error %d" % status
        if self.script.get("echo_auth"):
            msg += " (you sent %s)" % self.auth_seen()

        if path == "/messages":
            obj = {"type": "error",
                   "error": {"type": "api_error", "message": msg}}
        else:
            obj = {"error": {"message": msg, "type": "server_error",
                             "param": None, "code": None}}

        if self.script.get("error_usage"):
            p, c, _, _ = usage_numbers(self.script, PIECES)
            obj["usage"] = ({"input_tokens": p, "output_tokens": c}
                            if path == "/messages" else
                            {"prompt_tokens": p, "completion_tokens": c,
                             "total_tokens": p + c})

        if self.script.get("sse_on_error"):
            self.start_stream(status)
            self.event(None, json.dumps(obj))
            self.end_stream()
            return

        self.send_json(status, obj)

    def models(self):
        # as an account lists them: its fine-tuned models too, named
        # after its organization, and models no policy entry grants
        self.send_json(200, {"object": "list", "has_more": False, "data": [
            {"id": "gpt-4o-mini", "object": "model", "type": "model",
             "owned_by": "system"},
            {"id": "claude-3-5-haiku", "object": "model", "type": "model",
             "owned_by": "system"},
            {"id": "ft:gpt-4o-mini:org-FAKE-acme:custom:FAKE01",
             "object": "model", "type": "model",
             "owned_by": "org-FAKE-acme"},
            {"id": "o1-pro", "object": "model", "type": "model",
             "owned_by": "system"},
        ]})

    def embeddings(self):
        p, _, _, _ = usage_numbers(self.script, [])
        vec = [0.1, 0.2, 0.3]
        if self.body.get("encoding_format") == "base64":
            # what the SDKs ask for by default: little-endian float32
            vec = base64.b64encode(struct.pack("<3f", *vec)).decode()
        obj = {"object": "list", "model": self.body.get("model"),
               "data": [{"object": "embedding", "index": 0,
                         "embedding": vec}]}
        if not self.script.get("no_usage"):
            obj["usage"] = {"prompt_tokens": p, "total_tokens": p}
        self.send_json(200, obj)

    def tool_call_list(self):
        calls = []
        for i, c in enumerate(self.script.get("tool_calls") or []):
            args = c.get("arguments", {})
            if not isinstance(args, str):
                args = json.dumps(args)
            calls.append({"index": i, "id": c.get("id", "call_%d_%d"
                                                   % (self.req["n"], i)),
                          "type": "function",
                          "function": {"name": c.get("name", ""),
                                       "arguments": args}})
        return calls

    def quoted_pieces(self, pieces):
        rx = self.script.get("quote")
        if not rx:
            return pieces
        import re
        text = ""
        for m in self.body.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "tool":
                text = str(m.get("content"))
        found = re.search(rx, text)
        value = found.group(1) if found else "(no match)"
        return [p.replace("{{1}}", value) for p in pieces]

    def wait_file(self):
        if self.script.get("wait_file"):
            for _ in range(6000):
                if os.path.exists(self.script["wait_file"]):
                    break
                time.sleep(0.01)

    def openai(self, kind):
        self.wait_file()
        calls = self.tool_call_list() if kind == "chat" else []
        pieces = self.script.get("pieces", [] if calls else PIECES)
        pieces = self.quoted_pieces(pieces)
        p, c, cached, _ = usage_numbers(self.script, pieces)
        finish = "tool_calls" if calls else "stop"
        if self.script.get("obey_max_tokens") and kind == "chat":
            caps = [self.body.get(k) for k in ("max_completion_tokens",
                                               "max_tokens")]
            caps = [v for v in caps if isinstance(v, int)]
            if caps and c > min(caps):
                c = min(caps)
                pieces = pieces[:c]
                calls = []
                finish = "length"
        model = self.body.get("model", "unknown")
        usage = {"prompt_tokens": p, "completion_tokens": c,
                 "total_tokens": p + c,
                 "prompt_tokens_details": {"cached_tokens": cached}}

        if not self.body.get("stream"):
            if kind == "chat":
                obj = {"id": "chatcmpl-1", "object": "chat.completion",
                       "created": 1, "model": model, "choices": [
                           {"index": 0, "finish_reason": finish,
                            "message": {"role": "assistant",
                                        "content": "".join(pieces)}}]}
                if calls:
                    c0 = obj["choices"][0]
                    c0["message"]["tool_calls"] = [
                        {k: v for k, v in c.items() if k != "index"}
                        for c in calls]
                    if not pieces:
                        c0["message"]["content"] = None
            else:
                obj = {"id": "cmpl-1", "object": "text_completion",
                       "created": 1, "model": model, "choices": [
                           {"index": 0, "finish_reason": "stop",
                            "text": "".join(pieces)}]}
            if not self.script.get("no_usage"):
                obj["usage"] = usage
            self.send_json(200, obj)
            return

        opts = self.body.get("stream_options") or {}
        include = bool(opts.get("include_usage"))

        def chunk(choice, extra=None):
            if kind == "chat":
                obj = {"id": "chatcmpl-1", "object": "chat.completion.chunk",
                       "created": 1, "model": model, "choices": choice}
            else:
                obj = {"id": "cmpl-1", "object": "text_completion",
                       "created": 1, "model": model, "choices": choice}
            if include:
                obj["usage"] = None
            if extra:
                obj.update(extra)
            return json.dumps(obj)

        events = []
        if kind == "chat":
            events.append(chunk([{"index": 0, "finish_reason": None,
                                  "delta": {"role": "assistant",
                                            "content": ""}}]))
            for t in pieces:
                events.append(chunk([{"index": 0, "finish_reason": None,
                                      "delta": {"content": t}}]))
            for c in calls:
                args = c["function"]["arguments"]
                half = len(args) // 2
                head = dict(c, function={"name": c["function"]["name"],
                                         "arguments": ""})
                events.append(chunk([{"index": 0, "finish_reason": None,
                                      "delta": {"tool_calls": [head]}}]))
                for part in (args[:half], args[half:]):
                    events.append(chunk([{"index": 0, "finish_reason": None,
                                          "delta": {"tool_calls": [
                                              {"index": c["index"],
                                               "function": {
                                                   "arguments": part}}]}}]))
            events.append(chunk([{"index": 0, "finish_reason": finish,
                                  "delta": {}}]))
        else:
            for t in pieces:
                events.append(chunk([{"index": 0, "finish_reason": None,
                                      "text": t}]))
            events.append(chunk([{"index": 0, "finish_reason": "stop",
                                  "text": ""}]))

        if include and not self.script.get("no_usage"):
            events.append(chunk([], {"usage": usage}))

        events.append("[DONE]")

        self.stream([(None, e) for e in events])

    def responses_api(self):
        pieces = self.script.get("pieces", PIECES)
        p, c, cached, _ = usage_numbers(self.script, pieces)
        model = self.body.get("model", "unknown")
        usage = {"input_tokens": p, "output_tokens": c, "total_tokens": p + c,
                 "input_tokens_details": {"cached_tokens": cached}}
        rid = self.script.get("response_id", "resp_1")
        mid = self.script.get("message_id")
        items = list(self.script.get("output", []))
        message = {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "".join(pieces)}]}
        if mid is not None:
            message["id"] = mid
        resp = {"id": rid, "object": "response", "model": model,
                "status": "completed", "output": items + [message]}
        if not self.script.get("no_usage"):
            resp["usage"] = usage

        if not self.body.get("stream"):
            self.send_json(200, resp)
            return

        def item_event(kind, index, item):
            return ("response.output_item." + kind, json.dumps(
                {"type": "response.output_item." + kind,
                 "output_index": index, "item": item}))

        events = [("response.created", json.dumps(
            {"type": "response.created",
             "response": {"id": rid, "object": "response",
                          "model": model, "status": "in_progress"}}))]
        for i, item in enumerate(items):
            events.append(item_event("added", i, item))
            events.append(item_event("done", i, item))
        if mid is not None:
            events.append(item_event("added", len(items),
                                     dict(message, content=[])))
        for t in pieces:
            events.append(("response.output_text.delta", json.dumps(
                {"type": "response.output_text.delta",
                 "item_id": mid if mid is not None else "msg_1",
                 "output_index": len(items), "content_index": 0,
                 "delta": t})))
        if mid is not None:
            events.append(item_event("done", len(items), message))
        events.append(("response.completed", json.dumps(
            {"type": "response.completed", "response": resp})))

        self.stream(events)

    def anthropic(self):
        self.wait_file()
        pieces = self.script.get("pieces", PIECES)
        p, c, cached, cache_write = usage_numbers(self.script, pieces)
        model = self.body.get("model", "unknown")
        usage = {"input_tokens": p - cached - cache_write, "output_tokens": c,
                 "cache_read_input_tokens": cached,
                 "cache_creation_input_tokens": cache_write}
        w1h = (self.script.get("usage") or {}).get("cache_write_1h")
        if w1h is not None:
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": cache_write - w1h,
                "ephemeral_1h_input_tokens": w1h}

        if not self.body.get("stream"):
            obj = {"id": "msg_1", "type": "message", "role": "assistant",
                   "model": model, "stop_reason": "end_turn",
                   "stop_sequence": None,
                   "content": [{"type": "text", "text": "".join(pieces)}]}
            if not self.script.get("no_usage"):
                obj["usage"] = usage
            self.send_json(200, obj)
            return

        start_usage = dict(usage, output_tokens=1)
        message = {"id": "msg_1", "type": "message", "role": "assistant",
                   "model": model, "content": [], "stop_reason": None,
                   "stop_sequence": None}
        if not self.script.get("no_usage"):
            message["usage"] = start_usage

        events = [
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start",
                                     "index": 0,
                                     "content_block": {"type": "text",
                                                       "text": ""}}),
            ("ping", {"type": "ping"}),
        ]
        for t in pieces:
            events.append(("content_block_delta", {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": t}}))
        events.append(("content_block_stop", {"type": "content_block_stop",
                                              "index": 0}))
        delta = {"type": "message_delta",
                 "delta": {"stop_reason": "end_turn",
                           "stop_sequence": None}}
        if not self.script.get("no_usage"):
            delta["usage"] = {"output_tokens": c}
        events.append(("message_delta", delta))
        events.append(("message_stop", {"type": "message_stop"}))

        self.stream([(n, json.dumps(e)) for n, e in events])

    # ---- event streams -------------------------------------------------------

    def start_stream(self, status=200):
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in self.extra_headers().items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        if self.script.get("gzip") or self.script.get("zlib"):
            self.z = zlib.compressobj(wbits=31 if self.script.get("gzip")
                                      else 15)

    def chunk(self, data):
        z = getattr(self, "z", None)
        if z is not None:
            data = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, name, data):
        text = ""
        if name:
            text += "event: %s\n" % name
        text += "data: %s\n\n" % data
        raw = text.encode()

        split = self.script.get("split")
        if not split:
            self.chunk(raw)
            return

        for i in range(0, len(raw), split):
            if i:
                time.sleep(self.script.get("split_delay_ms", 0) / 1000.0)
            self.chunk(raw[i:i + split])

    def end_stream(self):
        z = getattr(self, "z", None)
        if z is not None:
            data = z.flush()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def stream(self, events):
        self.start_stream()

        gate = self.script.get("head_gate")
        if gate:
            open(gate + ".head", "w").close()
            until = time.time() + 60
            while not os.path.exists(gate) and time.time() < until:
                time.sleep(0.01)

        cut = self.script.get("cut_after")
        end = self.script.get("end_after")
        delay = self.script.get("delay_ms", 0) / 1000.0

        for i, (name, data) in enumerate(events):
            if end is not None and i >= end:
                break
            if cut is not None and i >= cut:
                if self.script.get("cut_mid"):
                    raw = ("data: %s\n\n" % data).encode()
                    self.chunk(raw[:len(raw) // 2])
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if i and delay:
                time.sleep(delay)
            if i and i == self.script.get("pause_after"):
                gate = self.script.get("gate")
                if gate:
                    until = time.time() + 60
                    while not os.path.exists(gate) and time.time() < until:
                        time.sleep(0.01)
                else:
                    time.sleep(self.script.get("pause_ms", 1000) / 1000.0)
            self.event(name, data)

        self.end_stream()


def watch_parent():
    parent = os.getppid()
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def main():
    global args

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("port", type=int)
    ap.add_argument("--log")
    ap.add_argument("--control")
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    signal.signal(signal.SIGINT, lambda *a: os._exit(0))

    threading.Thread(target=watch_parent, daemon=True).start()

    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
