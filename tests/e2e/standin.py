"""A stand-in for the Anthropic Messages API, for driving a real Claude Code offline.

It listens on 127.0.0.1 (port 0: the system picks a free one), answers ``POST
/v1/messages`` as the real API does — a streamed reply (server-sent events: message_start,
content_block_start / content_block_delta / content_block_stop per block, with text_delta
for text and input_json_delta for a tool_use, message_delta with the stop_reason,
message_stop), or one JSON message when the request does not ask to stream — and answers
``/v1/messages/count_tokens`` and any other GET/HEAD/POST probe with a small JSON reply.

What it replies is decided by reading each request, never by counting requests (Claude
Code sends side requests of its own — titles, quota probes, compaction — whose number and
order vary between versions):

1. the request asks for a summary of the conversation (Claude Code's compaction prompt):
   a ``<summary>`` naming the facts of the conversation;
2. the conversation's first user turn holds ``SUBTASK_MARK`` (a sub-agent started by the
   tool_use of rule 3): a report ending in the lines Task:, Conclusion:, Output:, Decision:;
3. a user turn holds ``DELEGATE_MARK`` and no tool_result has come back yet: a tool_use of
   the sub-agent tool (``Agent``, or ``Task`` in older versions — whichever the request's
   ``tools`` list offers) with ``subagent_type`` ``reviewer`` and a prompt holding
   ``SUBTASK_MARK``;
4. a user turn holds ``DISPATCH_MARK`` and no tool_result has come back yet: a tool_use of
   vaultmem's MCP ``dispatch`` tool (the name the request's ``tools`` list gives it) for
   the role ``reviewer``;
5. a user turn holds ``SEARCH_MARK`` and no tool_result has come back yet: a tool_use of
   vaultmem's MCP ``search_memory`` tool for ``SEARCH_QUERY``;
6. a tool_result has come back: a closing text;
7. anything else: a short acknowledging text.

Every request (method, path, parsed body) is recorded in ``requests``, in arrival order.
Run it on its own with ``python tests/e2e/standin.py [PORT]`` to try Claude Code by hand.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELEGATE_MARK = "E2E-DELEGATE"
DISPATCH_MARK = "E2E-DISPATCH"
DISPATCH_TASK = "check the staging database settings before the release"
SEARCH_MARK = "E2E-SEARCH"
SEARCH_QUERY = "staging database settings"
SUBTASK_MARK = "E2E-SUBTASK"
ROLE = "reviewer"
REPORT = ("Review finished.\n\n"
          "Task: review the deploy notes\n"
          "Conclusion: the deploy notes are consistent; the staging database is on port 6543\n"
          "Output: none (read only)\n"
          "Decision: keep the staging port at 6543")
SUMMARY = ("<analysis>The user asked for a review and stated a fact.</analysis>\n"
           "<summary>\n1. Primary Request: the user noted the staging database port (6543) "
           "and asked for a review of the deploy notes.\n</summary>")
CLOSING = "The reviewer finished its review."
ACK = "Noted."
SUB_AGENT_TOOLS = ("Agent", "Task")


def texts(content) -> list[str]:
    """The text of a message's content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(block.get("text", ""))
    return out


def user_texts(body: dict) -> list[str]:
    return ["\n".join(texts(m.get("content"))) for m in body.get("messages") or []
            if m.get("role") == "user"]


def system_text(body: dict) -> str:
    sysp = body.get("system")
    if isinstance(sysp, str):
        return sysp
    return "\n".join(b.get("text", "") for b in sysp or [] if isinstance(b, dict))


def all_text(body: dict) -> str:
    """Every text of the request: system prompt and messages of any role (Claude Code puts
    hook context in messages of role 'system' or in user turns)."""
    parts = [system_text(body)]
    for m in body.get("messages") or []:
        parts.extend(texts(m.get("content")))
    return "\n".join(parts)


def tool_names(body: dict) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]


def tool_results(body: dict) -> list[dict]:
    """The tool_result blocks of a request's messages."""
    return [b for m in body.get("messages") or [] if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def has_tool_result(body: dict) -> bool:
    return bool(tool_results(body))


def tool_result_text(block: dict) -> str:
    """What a tool_result gives the model: its content (a string, or a list of blocks), as text."""
    content = block.get("content")
    return content if isinstance(content, str) else "\n".join(texts(content))


def vault_tool(body: dict, name: str) -> str | None:
    """The name under which the request offers vaultmem's MCP tool ``name``, if it does."""
    return next((t for t in tool_names(body) if t.startswith("mcp__") and "vaultmem" in t
                 and t.endswith(f"__{name}")), None)


def dispatch_tool(body: dict) -> str | None:
    """The name under which the request offers vaultmem's MCP ``dispatch`` tool, if it does."""
    return vault_tool(body, "dispatch")


def is_compaction(body: dict) -> bool:
    users = user_texts(body)
    last = users[-1].lower() if users else ""
    return "summary of the conversation" in last and "<summary>" in last


def is_subagent(body: dict) -> bool:
    users = user_texts(body)
    return bool(users) and SUBTASK_MARK in users[0]


def decide(body: dict) -> dict:
    """The reply to one request: ``{"text": ...}`` or ``{"tool": name, "input": {...}}``."""
    if is_compaction(body):
        return {"text": SUMMARY}
    if is_subagent(body):
        return {"text": REPORT}
    if any(DISPATCH_MARK in u for u in user_texts(body)):
        if has_tool_result(body):
            return {"text": CLOSING}
        tool = dispatch_tool(body)
        if tool:
            return {"tool": tool, "input": {"role": ROLE, "task": DISPATCH_TASK}}
    if any(SEARCH_MARK in u for u in user_texts(body)):
        if has_tool_result(body):
            return {"text": CLOSING}
        tool = vault_tool(body, "search_memory")
        if tool:
            return {"tool": tool, "input": {"query": SEARCH_QUERY}}
    if any(DELEGATE_MARK in u for u in user_texts(body)):
        if has_tool_result(body):
            return {"text": CLOSING}
        tool = next((t for t in SUB_AGENT_TOOLS if t in tool_names(body)), None)
        if tool:
            return {"tool": tool, "input": {
                "description": "Review the deploy notes", "subagent_type": ROLE,
                "prompt": f"{SUBTASK_MARK}: review the deploy notes and end with the lines "
                          "Task:, Conclusion:, Output: and Decision:."}}
    return {"text": ACK}


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(reply: dict, msg_id: str, model: str) -> list[bytes]:
    """The server-sent events of one streamed reply, as the Messages API sends them."""
    usage = {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    if "tool" in reply:
        start = {"type": "tool_use", "id": "toolu_" + msg_id[4:], "name": reply["tool"], "input": {}}
        payload = json.dumps(reply["input"])
        # the real API streams a tool's input as JSON fragments: send it in two
        half = len(payload) // 2
        deltas = [{"type": "input_json_delta", "partial_json": payload[:half]},
                  {"type": "input_json_delta", "partial_json": payload[half:]}]
        stop = "tool_use"
    else:
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": reply["text"]}]
        stop = "end_turn"
    out.append(_sse("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": start}))
    out.append(_sse("ping", {"type": "ping"}))
    for delta in deltas:
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(_sse("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 20}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def whole_message(reply: dict, msg_id: str, model: str) -> dict:
    if "tool" in reply:
        content = [{"type": "tool_use", "id": "toolu_" + msg_id[4:], "name": reply["tool"],
                    "input": reply["input"]}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": reply["text"]}]
        stop = "end_turn"
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20}}


class StandIn:
    """The server, on a thread of its own; ``requests`` records every request."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _json(self, status: int, obj) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _record(self, body) -> int:
                with standin._lock:
                    standin.requests.append({"method": self.command, "path": self.path, "body": body})
                    return len(standin.requests)

            def do_HEAD(self) -> None:
                self._record(None)
                self._json(200, {})

            def do_GET(self) -> None:
                self._record(None)
                self._json(200, {})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                n = self._record(body)
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                    return
                if not path.endswith("/v1/messages"):
                    self._json(200, {})
                    return
                reply = decide(body)
                with standin._lock:
                    standin.requests[n - 1]["reply"] = reply
                msg_id = f"msg_e2e{n:05d}"
                model = body.get("model") or "claude-sonnet-4-5"
                if not body.get("stream"):
                    self._json(200, whole_message(reply, msg_id, model))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in stream_events(reply, msg_id, model):
                    self.wfile.write(event)
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "StandIn":
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def mark(self) -> int:
        """A position in ``requests``: ``since(mark)`` gives the requests after it."""
        with self._lock:
            return len(self.requests)

    def since(self, mark: int) -> list[dict]:
        with self._lock:
            return list(self.requests[mark:])


if __name__ == "__main__":
    s = StandIn(int(sys.argv[1]) if len(sys.argv) > 1 else 0).start()
    print(s.url, flush=True)
    try:
        s._thread.join()
    except KeyboardInterrupt:
        s.close()
