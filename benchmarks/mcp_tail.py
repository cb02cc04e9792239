"""One tool of a running ``vaultmem mcp``, called over and over: its p50, p95, p99 and slowest call.

    python benchmarks/mcp_tail.py VAULT [--tool search_memory|brief|get_stats] [--seconds 10]
        [--baseline OTHER_PYTHON]

A server is started on VAULT (indexed) and driven by bare JSON-RPC lines on its pipes (the
standard library only, as ``bench_mcp.py``'s bare client): one fixed query or task, ten
untimed calls, then as many timed calls as ``--seconds`` holds, each from writing its line
to reading its answer. Hundreds of calls show the tail a few dozen cannot: a garbage
collector's full pass, a merge. ``--baseline`` runs the same with another installation's
interpreter (its own vaultmem) right after, twice in turn, so that both meet the same load.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jsonrpc import LineClient

ARGS = {"search_memory": {"query": "kafka retry"}, "brief": {"agent": "前端审查", "task": "react 组件 缓存"},
        "get_stats": {}}


def tail(python: str, vault: Path, tool: str, seconds: float, own: bool) -> dict:
    """The figures of one server (``own``: this checkout's vaultmem, else ``python``'s)."""
    env = dict(os.environ)
    if not own:
        env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([python, "-m", "vaultmem", "mcp", "--vault", str(vault)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            cwd=str(Path(__file__).resolve().parent.parent) if own else tempfile.gettempdir())
    times: list[float] = []
    client = LineClient(proc, "mcp_tail")
    try:
        for _ in range(10):
            client.call(tool, ARGS[tool])
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t = time.perf_counter()
            client.call(tool, ARGS[tool])
            times.append(time.perf_counter() - t)
    finally:
        client.close()
    times.sort()

    def at(q: float) -> float:
        return round(times[min(len(times) - 1, int(len(times) * q))] * 1000, 2)

    return {"calls": len(times), "p50_ms": at(0.5), "p95_ms": at(0.95), "p99_ms": at(0.99),
            "max_ms": round(times[-1] * 1000, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--tool", choices=sorted(ARGS), default="search_memory")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--baseline", help="another installation's python, run in turn with this checkout's")
    args = ap.parse_args()
    rounds = [("this checkout", sys.executable, True)]
    if args.baseline:
        rounds = [*rounds, ("baseline", args.baseline, False)] * 2
    for name, python, own in rounds:
        figures = tail(python, args.vault, args.tool, args.seconds, own)
        print(f"{name:14s} {args.tool}: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']}, p99 {figures['p99_ms']}, "
              f"max {figures['max_ms']} ms ({figures['calls']} calls)", flush=True)


if __name__ == "__main__":
    main()
