"""How soon a freshly started ``vaultmem mcp`` can list its tools: spawn → ``tools/list`` reply.

    python benchmarks/bench_mcp_handshake.py [--notes 1000] [--runs 15] [--hogs 2]
        [--baseline-path DIR [--baseline-label NAME]] [--vaults DIR] [--out benchmarks/results/mcp-handshake.md]

An agent runtime does not wait for its MCP servers: Claude Code sends its first request
with the tools of the servers that have answered by then. This measures what it waits
for. On a synthetic vault of ``--notes`` notes (``vaults.make_vault``, indexed once
with ``vaultmem index``), each run starts ``python -m vaultmem mcp --claude --vault V``
as the plugin does, speaks JSON-RPC over its stdin and stdout — ``initialize``, the
``notifications/initialized`` notification, ``tools/list`` — and records the time from the
spawn to the ``initialize`` reply and to the ``tools/list`` reply; then one
``tools/call`` of ``get_stats`` (the first call, which opens the vault), and stdin is
closed: the time until the process exits and its exit code. Medians of ``--runs`` runs,
first idle, then with ``--hogs`` busy processes (``yes > /dev/null``) on the machine's cores.

``--baseline-path DIR``: the same runs for another checkout of vaultmem (``PYTHONPATH=DIR``,
e.g. ``git worktree add /tmp/mcp-old HEAD``), interleaved with this one's, so both see
the same load. The report goes to ``--out``. Goal: ``tools/list`` ≤ 0.3 s idle, ≤ 1 s
with two hogs.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import RESULTS, machine, table  # noqa: E402
from timing import PROJECT, fmt_ms, log, summary  # noqa: E402
from vaults import make_vault  # noqa: E402

PY = sys.executable
GOAL_IDLE, GOAL_HOGS = 0.3, 1.0
TIMEOUT = 60.0
TIMES = ("initialize", "tools_list", "first_call", "exit_after_eof")  # the seconds each run records


def env_for(path: str) -> dict:
    """The environment of a server child importing the vaultmem of checkout ``path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["PYTHONPATH"] = path
    return env


def vault_for(n: int, folder: Path) -> Path:
    """The synthetic vault of ``n`` notes in ``folder``, indexed (made once, then reused)."""
    root = folder / f"vault-{n}"
    done = root / ".vaultmem" / "bench-handshake-ready"
    if done.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    log(f"writing a vault of {n:,} notes")
    make_vault(root, n)
    log("indexing it (vaultmem index)")
    subprocess.run([PY, "-m", "vaultmem", "--vault", str(root), "index"], check=True, capture_output=True,
                   env=env_for(str(PROJECT)), timeout=900)
    done.write_text("ready\n")
    return root


class Lines:
    """Lines of a child's stdout, read with a deadline."""

    def __init__(self, stream) -> None:
        self.fd = stream.fileno()
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)

    def next(self, deadline: float) -> dict:
        while b"\n" not in self.buf:
            left = deadline - time.perf_counter()
            if left <= 0 or not self.sel.select(left):
                raise TimeoutError("no answer in time")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError("the server closed its stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def reply(self, rid: int, deadline: float) -> dict:
        while True:
            msg = self.next(deadline)
            if msg.get("id") == rid:
                return msg


def send(proc, msg: dict) -> None:
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def one_run(root: Path, path: str) -> dict:
    """One server of checkout ``path`` from spawn to exit: the seconds of each step (TIMES)
    and what it answered."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([PY, "-m", "vaultmem", "mcp", "--claude", "--vault", str(root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env_for(path), cwd=str(root))
    deadline = t0 + TIMEOUT
    out = Lines(proc.stdout)
    try:
        send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "1"}}})
        init = out.reply(1, deadline)
        t_init = time.perf_counter() - t0
        send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = out.reply(2, deadline)
        t_list = time.perf_counter() - t0
        send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_stats", "arguments": {}}})
        stats = out.reply(3, deadline)
        t_call = time.perf_counter() - t0
        proc.stdin.close()
        t_close = time.perf_counter()
        code = proc.wait(timeout=TIMEOUT)
        t_exit = time.perf_counter() - t_close
        stderr = proc.stderr.read().decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {"initialize": t_init, "tools_list": t_list, "first_call": t_call, "exit_after_eof": t_exit,
            "exit_code": code, "tools": len(tools["result"]["tools"]),
            "version": init["result"]["serverInfo"].get("version"),
            "call_ok": not stats["result"].get("isError"), "stderr_lines": len(stderr.splitlines())}


def measure(root: Path, variants: dict[str, str], runs: int) -> dict[str, dict]:
    """Each variant (name → checkout) ``runs`` times after one untimed run, interleaved:
    each step's seconds summarised, and what the runs answered."""
    got: dict[str, list[dict]] = {name: [] for name in variants}
    for name, path in variants.items():  # one untimed run each: bytecode caches written
        one_run(root, path)
    for _ in range(runs):
        for name, path in variants.items():
            got[name].append(one_run(root, path))
    return {name: {**{k: summary([r[k] for r in rs]) for k in TIMES},
                   "exit_codes": sorted({r["exit_code"] for r in rs}), "tools": rs[-1]["tools"],
                   "version": rs[-1]["version"], "calls_ok": all(r["call_ok"] for r in rs),
                   "stderr_lines": max(r["stderr_lines"] for r in rs)}
            for name, rs in got.items()}


def report(results: dict, meta: dict) -> str:
    m = meta["machine"]
    rows = [[load, name, fmt_ms(s["initialize"]["median"]),
             f"{fmt_ms(s['tools_list']['median'])} ({fmt_ms(s['tools_list']['max'])})",
             fmt_ms(s["first_call"]["median"]), fmt_ms(s["exit_after_eof"]["median"]),
             ", ".join(map(str, s["exit_codes"])), repr(s["version"]), s["stderr_lines"]]
            for load, by in results.items() for name, s in by.items()]
    return "\n".join([
        "# `vaultmem mcp`: spawn → `tools/list`", "",
        f"Generated by `benchmarks/bench_mcp_handshake.py` on {m['date']} ({m['cpu']}, {m['cpus']} cores, "
        f"Python {m['python']}); a vault of {meta['notes']:,} notes, indexed; medians of {meta['runs']} runs per "
        "row, the variants interleaved. Each run spawns `python -m vaultmem mcp --claude --vault V`, sends "
        "`initialize`, `notifications/initialized`, `tools/list`, one `tools/call` of `get_stats`, then closes stdin.",
        "",
        f"Goal: `tools/list` answered ≤ {GOAL_IDLE * 1000:.0f} ms after the spawn idle, "
        f"≤ {GOAL_HOGS * 1000:.0f} ms with two CPU hogs (`yes > /dev/null`).", "",
        table(["load", "server", "initialize", "tools/list (max)", "first get_stats", "exit after stdin EOF",
               "exit code", "serverInfo.version", "stderr lines"], rows)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--baseline-path")
    ap.add_argument("--baseline-label", default="before")
    ap.add_argument("--label", default="after")
    ap.add_argument("--vaults")
    ap.add_argument("--out", default=str(RESULTS / "mcp-handshake.md"))
    args = ap.parse_args(argv)

    variants = {args.baseline_label: args.baseline_path} if args.baseline_path else {}
    variants[args.label] = str(PROJECT)
    meta = {"machine": machine(), "notes": args.notes, "runs": args.runs}
    tmp = None
    folder = Path(args.vaults) if args.vaults else Path(tmp := tempfile.mkdtemp(prefix="bench-handshake-"))
    try:
        root = vault_for(args.notes, folder)
        log(f"idle: {args.runs} runs × {len(variants)}")
        results = {"idle": measure(root, variants, args.runs)}
        hogs = [subprocess.Popen("exec yes > /dev/null", shell=True) for _ in range(args.hogs)]
        try:
            log(f"{args.hogs} hogs: {args.runs} runs × {len(variants)}")
            results[f"{args.hogs} CPU hogs"] = measure(root, variants, args.runs)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    text = report(results, meta)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    worst = {load: by[args.label]["tools_list"]["median"] for load, by in results.items()}
    return 0 if all(v <= (GOAL_IDLE if load == "idle" else GOAL_HOGS) for load, v in worst.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
