"""One tool of a running ``vaultmem mcp``, called over and over: its p50, p95, p99 and slowest call.

    python benchmarks/mcp_tail.py VAULT [--tool search_memory|brief|get_stats] [--seconds 10]
        [--varied] [--baseline OTHER_PYTHON] [--against CHECKOUT [--against-vault COPY] [--rounds 3]]

A server is started on VAULT (indexed) and driven by bare JSON-RPC lines on its pipes (the
standard library only, as ``bench_mcp.py``'s bare client): one fixed query or task, ten
untimed calls, then as many timed calls as ``--seconds`` holds, each from writing its line
to reading its answer, and the server's CPU per call (every thread's, from
``/proc``: what the wall clock holds besides waiting). Hundreds of calls show the tail a few dozen cannot: a garbage
collector's full pass, a merge. ``--baseline`` runs the same with another installation's
interpreter (its own vaultmem) right after, twice in turn, so that both meet the same load.
``--against`` another checkout of vaultmem (a ``git worktree`` of an older commit): both
servers run at once and are called in turn, call by call, so that both meet the same load
on a machine whose speed moves within minutes; each round prints both p50s and their ratio
(this checkout's over the other's); which server is called first in a pair alternates
from round to round. ``--against-vault``: a copy of VAULT for the other
server (each then watches only its own markers' events); the rounds swap the two copies
in turn, since two copies of one vault need not read alike fast.
``--varied`` (``search_memory``): each call asks another query, one to three words of the
benchmark vaults' vocabulary (seeded: both servers ask the same ones), and each line ends
with the server's resident memory after the last call (Linux): what a server that keeps
what it has read holds after many different questions.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jsonrpc import LineClient

ARGS = {"search_memory": {"query": "kafka retry"}, "brief": {"agent": "前端审查", "task": "react 组件 缓存"},
        "get_stats": {}}
# what --varied draws its queries from: words the benchmark vaults' notes are made of
WORDS = ("kafka redis postgres nginx react docker webpack celery timeout retry cache migration rollback "
         "deployment index schema queue worker 缓存 端口 数据库 索引 部署 日志 监控 超时 重试 限流 队列 迁移 回滚 配置").split()


def rss_mib(pid: int) -> int | None:
    """The resident memory of process ``pid`` in MiB (Linux), else None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration, ValueError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """The CPU time process ``pid`` has used so far, every thread's (Linux), else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def tail(python: str, vault: Path, tool: str, seconds: float, own: bool, varied: bool = False) -> dict:
    """The figures of one server (``own``: this checkout's vaultmem, else ``python``'s)."""
    rng = random.Random(7)

    def args_of() -> dict:
        if not varied:
            return ARGS[tool]
        return {"query": " ".join(rng.sample(WORDS, rng.randint(1, 3))), "limit": 10}

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
            client.call(tool, args_of())
        cpu = cpu_seconds(proc.pid)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            asked = args_of()
            t = time.perf_counter()
            client.call(tool, asked)
            times.append(time.perf_counter() - t)
        rss = rss_mib(proc.pid)
        cpu_after = cpu_seconds(proc.pid)
    finally:
        client.close()
    times.sort()

    def at(q: float) -> float:
        return round(times[min(len(times) - 1, int(len(times) * q))] * 1000, 2)

    return {"calls": len(times), "p50_ms": at(0.5), "p95_ms": at(0.95), "p99_ms": at(0.99),
            "max_ms": round(times[-1] * 1000, 1), "rss_mib": rss,
            "cpu_ms": None if cpu is None or cpu_after is None else round((cpu_after - cpu) / len(times) * 1000, 2)}


def start(vault: Path, checkout: Path | None) -> LineClient:
    """``vaultmem mcp`` on ``vault``: this checkout's, or ``checkout``'s (its folder as the
    only PYTHONPATH, started from it), the handshake made."""
    here = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(checkout or here))
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=str(checkout or here))
    return LineClient(proc, "mcp_tail")


def against(vault: Path, other: Path, other_vault: Path, tool: str, seconds: float, rounds: int) -> list[float]:
    """Rounds of this checkout's server and ``other``'s called in turn (see the module doc);
    returns each round's ratio of p50s (this checkout's over the other's)."""
    ratios = []
    for n in range(rounds):
        vaults = (vault, other_vault) if n % 2 == 0 else (other_vault, vault)
        clients: list[LineClient] = []
        try:
            clients.append(start(vaults[0], None))
            clients.append(start(vaults[1], other))
            for client in clients:
                for _ in range(10):
                    client.call(tool, ARGS[tool])
            times: list[list[float]] = [[], []]
            order = (0, 1) if n % 2 == 0 else (1, 0)  # which is called first in a pair, in turn too
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for i in order:
                    t = time.perf_counter()
                    clients[i].call(tool, ARGS[tool])
                    times[i].append(time.perf_counter() - t)
        finally:
            for client in clients:
                client.close()
        p50s = [sorted(kept)[len(kept) // 2] * 1000 for kept in times]
        ratios.append(p50s[0] / p50s[1])
        print(f"round {n + 1}: {tool} p50 this checkout {p50s[0]:.2f} ms ({vaults[0].name}), "
              f"{other.name} {p50s[1]:.2f} ms ({vaults[1].name}): ×{ratios[-1]:.3f} ({len(times[0])} calls each)",
              flush=True)
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--tool", choices=sorted(ARGS), default="search_memory")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--varied", action="store_true", help="search_memory: a different query at each call")
    ap.add_argument("--baseline", help="another installation's python, run in turn with this checkout's")
    ap.add_argument("--against", type=Path,
                    help="another checkout of vaultmem, its server called in turn with this one's")
    ap.add_argument("--against-vault", type=Path, help="with --against: a copy of VAULT for the other server")
    ap.add_argument("--rounds", type=int, default=3, help="with --against: how many rounds (default 3)")
    args = ap.parse_args()
    if args.varied and args.tool != "search_memory":
        ap.error("--varied varies search_memory's query: use it with --tool search_memory")
    if args.against_vault is not None and args.against is None:
        ap.error("--against-vault is the other checkout's copy of VAULT: give --against CHECKOUT too")
    if args.against is not None:
        if not (args.against / "vaultmem" / "__init__.py").is_file():
            ap.error(f"--against {args.against}: no vaultmem package in it (give a checkout or a git worktree)")
        if args.varied or args.baseline:
            ap.error("--against compares one query or task: without --varied or --baseline")
        ratios = against(args.vault, args.against.resolve(), args.against_vault or args.vault, args.tool,
                         args.seconds, max(1, args.rounds))
        print(f"{args.tool}: this checkout over {args.against.name}, p50: "
              f"×{min(ratios):.3f}–{max(ratios):.3f} (mean ×{sum(ratios) / len(ratios):.3f})")
        return
    rounds = [("this checkout", sys.executable, True)]
    if args.baseline:
        rounds = [*rounds, ("baseline", args.baseline, False)] * 2
    for name, python, own in rounds:
        figures = tail(python, args.vault, args.tool, args.seconds, own, args.varied)
        cpu = f", server CPU {figures['cpu_ms']} ms a call" if figures["cpu_ms"] is not None else ""
        rss = f", server {figures['rss_mib']} MiB" if args.varied and figures["rss_mib"] is not None else ""
        print(f"{name:14s} {args.tool}: p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']}, p99 {figures['p99_ms']}, "
              f"max {figures['max_ms']} ms ({figures['calls']} calls{cpu}){rss}", flush=True)


if __name__ == "__main__":
    main()
