"""The benchmarks' bare JSON-RPC client: request lines written to a ``vaultmem mcp``
process's stdin, answers read from its stdout (the standard library only) — the server
and the transport without any SDK client's own work.

    client = LineClient(proc, "bench")   # the handshake is done
    client.call("search_memory", {"query": "kafka"})
"""

from __future__ import annotations

import json
import subprocess
from itertools import count


class LineClient:
    """One server process started with pipes for stdin and stdout; the MCP handshake made
    as it is created (``name``: the client's name in it)."""

    def __init__(self, proc: subprocess.Popen, name: str) -> None:
        self.proc = proc
        self._ids = count(1)
        try:
            self.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": name, "version": "0"}})
            self.send("notifications/initialized", {}, notify=True)
        except BaseException:
            self.close()
            raise

    def send(self, method: str, params: dict, notify: bool = False) -> dict | None:
        """Write one request (or notification) line; the answer with its id (None for a
        notification). An error, or a tool's error result, ends the benchmark."""
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            msg["id"] = next(self._ids)
        self.proc.stdin.write((json.dumps(msg, ensure_ascii=False) + "\n").encode())
        self.proc.stdin.flush()
        if notify:
            return None
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == msg["id"]:
                if "error" in answer or answer["result"].get("isError"):
                    raise SystemExit(f"{method} {str(params)[:200]} failed: {str(answer)[:500]}")
                return answer

    def call(self, tool: str, arguments: dict) -> dict:
        """A ``tools/call`` of ``tool``: its answer."""
        return self.send("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> None:
        """End the server (its stdin closed) and wait for it."""
        self.proc.stdin.close()
        self.proc.wait(timeout=120)
