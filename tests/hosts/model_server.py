#!/usr/bin/env python3
"""A scripted model service for driving the real agent hosts in tests (tests/real_hosts.rs).

It speaks the two streamed APIs the hosts call: the Anthropic Messages API (Claude Code,
`POST /v1/messages`) and the OpenAI Responses API (Codex, `POST /v1/responses`), as server-sent
events. It is no model: it plays a script. The script is a JSON list of tool calls,
`[{"name": "Bash", "input": {"command": "..."}}, ...]`. Each request of the host's conversation
gets the next call of the script (the count of tool results the conversation already carries says
which); after the last one, a text answer, "done". A request that offers no tools (Claude Code's
title and quota requests) gets the text answer at once.

Every request is appended to the log, one JSON line: {"path", "body"}. The tests read what the
host sent back (a tool result: the refusal's reason reaching the model) and which tools it offered.

Usage: model_server.py SCRIPT.json LOG.jsonl PORT_FILE  (binds 127.0.0.1 on a free port, writes it
to PORT_FILE, serves until killed). Standard library only: http.server does the HTTP.
"""
import http.server
import json
import os
import sys
import threading
import uuid

SCRIPT_PATH, LOG_PATH, PORT_FILE = sys.argv[1:4]
LOCK = threading.Lock()


def script():
    with open(SCRIPT_PATH, encoding="utf-8") as f:
        return json.load(f)


def sse(events):
    """Server-sent events: (event name, data object) pairs."""
    out = []
    for name, data in events:
        out.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def anthropic_results(body):
    n = 0
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def anthropic(body):
    calls = script()
    n = anthropic_results(body)
    model = body.get("model", "scripted")
    mid = "msg_" + uuid.uuid4().hex[:20]
    start = {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1}}}
    events = [("message_start", start)]
    if body.get("tools") and n < len(calls):
        call = calls[n]
        tid = "toolu_" + uuid.uuid4().hex[:20]
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": tid, "name": call["name"], "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(call["input"])}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {
                "stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 1}}),
        ]
    else:
        events += [
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "text_delta", "text": "done"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {
                "stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}}),
        ]
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


def responses_results(body):
    items = body.get("input", [])
    if not isinstance(items, list):
        return 0
    return sum(1 for i in items if isinstance(i, dict)
               and i.get("type") in ("function_call_output", "custom_tool_call_output"))


def responses(body):
    calls = script()
    n = responses_results(body)
    rid = "resp_" + uuid.uuid4().hex[:20]
    model = body.get("model", "scripted")
    base = {"id": rid, "object": "response", "model": model, "status": "in_progress", "output": []}
    events = [("response.created", {"type": "response.created", "response": base})]
    if body.get("tools") and n < len(calls):
        call = calls[n]
        cid = "call_" + uuid.uuid4().hex[:20]
        if call.get("custom"):
            item = {"type": "custom_tool_call", "id": "ctc_" + cid, "call_id": cid,
                    "name": call["name"], "input": call["input"], "status": "completed"}
        else:
            item = {"type": "function_call", "id": "fc_" + cid, "call_id": cid,
                    "name": call["name"], "arguments": json.dumps(call["input"]),
                    "status": "completed"}
    else:
        item = {"type": "message", "id": "msg_" + uuid.uuid4().hex[:20], "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "done", "annotations": []}]}
    events += [
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                       "item": item}),
        ("response.completed", {"type": "response.completed", "response": dict(
            base, status="completed", output=[item],
            usage={"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
                   "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                   "total_tokens": 2})}),
    ]
    return sse(events)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, ctype, payload):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        with LOCK, open(LOG_PATH, "a", encoding="utf-8") as log:
            log.write(json.dumps({"path": self.path, "body": None}) + "\n")
        if self.path.split("?")[0].endswith("/models"):
            self.reply(200, "application/json", json.dumps({"data": [], "models": []}).encode())
        else:
            self.reply(404, "application/json", b"{}")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        with LOCK, open(LOG_PATH, "a", encoding="utf-8") as log:
            log.write(json.dumps({"path": self.path, "body": body}) + "\n")
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self.reply(200, "application/json", b'{"input_tokens": 1}')
        elif path.endswith("/messages"):
            self.reply(200, "text/event-stream", anthropic(body))
        elif path.endswith("/responses"):
            self.reply(200, "text/event-stream", responses(body))
        else:
            self.reply(404, "application/json", b"{}")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w", encoding="utf-8") as f:
    f.write(str(server.server_address[1]))
os.replace(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
