"""The lines a client sends: each checked before the SDK reads it, a line that is no
JSON-RPC message answered with an error instead of dropped."""

from __future__ import annotations

import logging
import json

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import (INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError,
                       jsonrpc_message_adapter)
from pydantic import ValidationError

log = logging.getLogger("vaultmem.mcp")


# -- the lines a client sends ----------------------------------------------------------------
# The SDK's stdio transport drops a line it cannot read (not JSON, nested deeper than its
# parser goes, not a JSON-RPC message) without a word, and its client waits forever for
# the answer. Each line is checked here first; one that would be dropped is answered with
# a JSON-RPC error instead — never quoting the line — and the server reads on.


def jsonrpc_error(rid, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


def rejection(line: str) -> JSONRPCError | None:
    """None if ``line`` is a JSON-RPC message the SDK reads; else the error that answers
    it: -32700 (parse error, id null) for a line that is not JSON or nests too deep to be
    read at all, -32600 (invalid request) for JSON that is no JSON-RPC message, -32602
    (invalid params) for a request whose params are no object or nest deeper than the
    SDK reads — with the request's id whenever it can be read."""
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError as exc:
        problems = exc.errors(include_url=False, include_input=False, include_context=False)
    unreadable = next((p["msg"] for p in problems if p["type"] == "json_invalid"), None)
    try:
        message = json.loads(line)
    except RecursionError:
        return jsonrpc_error(None, PARSE_ERROR, "Parse error: nested too deeply to be read")
    except ValueError:
        return jsonrpc_error(None, PARSE_ERROR, f"Parse error: {unreadable or 'not JSON'}")
    if not isinstance(message, dict):
        return jsonrpc_error(None, INVALID_REQUEST, "Invalid Request: a message is one JSON object"
                      + (" (batches are not supported)" if isinstance(message, list) else ""))
    rid = message.get("id")
    rid = rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
    if message.get("jsonrpc") != "2.0":
        return jsonrpc_error(rid, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "method" in message:
        if not isinstance(message["method"], str):
            return jsonrpc_error(rid, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            return jsonrpc_error(rid, INVALID_PARAMS, 'Invalid params: "params" must be an object')
        if unreadable:
            return jsonrpc_error(rid, INVALID_PARAMS, f"Invalid params: {unreadable}")
    return jsonrpc_error(rid, INVALID_REQUEST, "Invalid Request: not a JSON-RPC request, notification or response")


class CheckedLines:
    """The lines of stdin, for the SDK's stdio transport: each one it could not read is
    answered here (:func:`rejection`) on the transport's own write stream — given by
    :meth:`answer_on` once the transport is up — and never handed on; blank lines are
    skipped."""

    def __init__(self, source) -> None:
        self.source = source  # an anyio async text file
        self._answers = None
        self._ready = anyio.Event()

    def answer_on(self, write_stream) -> None:
        self._answers = write_stream
        self._ready.set()

    def __aiter__(self) -> "CheckedLines":
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self.source.readline()
            if not line:
                raise StopAsyncIteration
            if not line.strip():
                continue
            error = rejection(line)
            if error is None:
                return line
            log.warning("answered a line that is no JSON-RPC message the server reads (%d characters): %s %s",
                        len(line), error.error.code, error.error.message)
            await self._ready.wait()
            try:
                await self._answers.send(SessionMessage(error))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise StopAsyncIteration from None


class FrontLines:
    """The lines the front kept, as the async text file :class:`CheckedLines` reads."""

    def __init__(self, front) -> None:
        self.front = front

    async def readline(self) -> str:
        return await anyio.to_thread.run_sync(self.front.next_line, abandon_on_cancel=True)


class FrontOut:
    """The SDK's stdout, on the front's wire; the answer to the replayed initialize (the
    front answered the client's own) is dropped."""

    def __init__(self, front) -> None:
        self.front = front

    async def write(self, text: str) -> None:
        from ..mcp_front import REPLAY_ID

        if f'"id":"{REPLAY_ID}"' in text[:200]:
            return
        await anyio.to_thread.run_sync(self.front.write, text)

    async def flush(self) -> None:
        return None
