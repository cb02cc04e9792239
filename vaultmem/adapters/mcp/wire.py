"""The wire the SDK server reads and writes: each line a client sends read once, a line
that is no JSON-RPC message answered with an error instead of dropped."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from contextlib import asynccontextmanager

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import (INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCNotification,
                       JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter)
from pydantic import ValidationError

log = logging.getLogger("vaultmem.mcp")


# -- the lines a client sends ----------------------------------------------------------------
# The SDK's stdio transport drops a line it cannot read (not JSON, nested deeper than its
# parser goes, not a JSON-RPC message) without a word, and its client waits forever for
# the answer. Here a line that would be dropped is answered with a JSON-RPC error instead
# — never quoting the line — and the server reads on.


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


def message_of(line: str):
    """The JSON-RPC message ``line`` holds, read as the SDK's stdio transport reads it
    (one validation, the SDK's own adapter); a :class:`JSONRPCError` (:func:`rejection`)
    for a line that transport would drop."""
    try:
        return jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return rejection(line)


@asynccontextmanager
async def front_streams(front, close_wait: float):
    """The SDK server's read and write streams on the front's wire: what the SDK's
    ``stdio_server`` gives, without its two thread hops per message.

    - The front's reader thread hands each line to the event loop as it arrives
      (``call_soon_threadsafe``): the line is read once (:func:`message_of`) and a
      message is handed on; a line the SDK would drop is answered here with a JSON-RPC
      error, never quoting it; blank lines are skipped. The end of stdin (or a signal:
      :meth:`Front.end`) ends the read stream.
    - Each answer is written on the wire from the event loop. The front's reader keeps
      draining stdin meanwhile, so a client that writes while it waits for an answer
      never blocks on it. The answer to the replayed ``initialize`` (the front answered
      the client's own) is dropped. A client that closed its end of the wire stops the
      server as the end of stdin does, with one warning line (not a traceback).
    - At the end of stdin the read stream ends once every request read has its answer
      written (or was cancelled), or after ``close_wait`` seconds: the SDK server cancels
      what is still running when its input ends, and a client that wrote its last
      requests and closed stdin would not get their answers.
    """
    from ..mcp_front import REPLAY_ID

    loop = asyncio.get_running_loop()
    gone: list[OSError] = []  # the client closed its end of the wire
    pending: set = set()  # the ids of the requests read and not yet answered
    ending: list[bool] = []  # stdin has ended: the read stream ends once nothing is pending
    ended: list[bool] = []  # the streams are closed: nothing more to say
    read_in, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    write_stream, write_out = anyio.create_memory_object_stream[SessionMessage](0)

    def send(message) -> None:
        if gone:
            return
        try:
            front.write(message.model_dump_json(by_alias=True, exclude_unset=True))
        except (BrokenPipeError, ConnectionResetError) as exc:
            # nobody reads the answers any more: stop as at the end of stdin
            gone.append(exc)
            log.warning("the client closed its end of the wire (%s): stopping", exc.strerror or exc)
            front.end()

    def stopping() -> str:  # what a server that was asked to stop says (on any thread)
        waiting = len(pending) - (REPLAY_ID in pending)  # the client's initialize was answered by the front
        if waiting <= 0 or gone or ended:
            return ""
        return (f"stopping once the {waiting} calls read are answered (up to {close_wait:g} s; "
                "SIGINT or SIGTERM twice stops it at once)")

    def take(line: str) -> None:  # on the event loop, one line at a time, in order
        if not line:
            ending.append(True)
            if pending and not gone:
                front.say_stopping()
                loop.call_later(close_wait, read_in.close)
            else:
                read_in.close()
            return
        if not line.strip() or ending:  # (after a signal the reader may still pass lines on: not read)
            return
        message = message_of(line)
        if isinstance(message, JSONRPCError):
            log.warning("answered a line that is no JSON-RPC message the server reads (%d characters): %s %s",
                        len(line), message.error.code, message.error.message)
            send(message)
            return
        if isinstance(message, JSONRPCRequest):
            pending.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            pending.discard((message.params or {}).get("requestId"))  # a cancelled request has no answer
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            read_in.send_nowait(SessionMessage(message))

    def arrived(line: str) -> None:  # on the front's reader thread (or a signal handler)
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody reads any more
            loop.call_soon_threadsafe(take, line)

    async def writer() -> None:
        async with write_out:
            async for session_message in write_out:
                message = session_message.message
                if getattr(message, "id", None) != REPLAY_ID:
                    send(message)
                if isinstance(message, (JSONRPCResponse, JSONRPCError)) and message.id in pending:
                    pending.discard(message.id)
                    if ending and not pending:
                        read_in.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        front.hand_over(arrived, stopping)
        try:
            yield read_stream, write_stream
        finally:
            ended.append(True)
            write_stream.close()
