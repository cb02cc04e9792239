"""The MCP server's speed: a brief through a running ``vaultmem mcp`` beside the cold CLI brief.

    python benchmarks/bench_mcp.py [--sizes 10000 50000] [--calls 100] [--warmup 10] [--cold 7]
        [--modes watch no-watch] [--baseline OTHER/bin/python [--baseline-label NAME]] [--profile]
        [--vaults DIR] [--out docs/benchmarks.md] [--json FILE]

For each size N it writes the synthetic vault of ``vaults.py`` (``make_vault``: N
notes, 20 role pages of 50 entries, a ``MEMORY.md`` that lists every note; the same
bytes for the same N) and indexes it with ``vaultmem index`` in a new process, on the
engine ``auto`` picks for it. Then, in one run:

1. for each server mode (``--modes``: ``watch``, the default of ``vaultmem mcp``, follows
   file events so a call re-reads only what changed; ``no-watch`` walks the vault before
   each search and brief, as a CLI command does), one ``python -m vaultmem mcp`` process
   started by the SDK's real stdio client, one long-lived session (after one untimed
   start, so that every server finds the bytecode caches warm): the time from the
   start to the first answer (``get_stats``), then ``--warmup`` untimed rounds and
   ``--calls`` timed rounds of ``brief`` (20 role × task pairs in turn), ``search_memory``
   (30 queries in turn) and ``get_stats``, each timed at the client (JSON-RPC over the
   pipes included): median and p95;
   The same rounds again over bare JSON-RPC lines on the server's pipes (standard library
   only): the server and the transport without the SDK client's own work (it checks each
   result against the tool's output schema with jsonschema);
2. the cold CLI brief: ``python -m vaultmem brief ROLE --task TASK`` as a new process
   each time, ``--cold`` runs over the same pairs (bytecode cache warm, as a user has it),
   median and p95;
3. what the SDK would cost a command that does not use it: ``python -X importtime -m
   vaultmem brief …`` must import no ``mcp`` module (nor pydantic, anyio, starlette), and
   the import time of ``mcp.server`` in a new interpreter, for scale.

``--baseline PYTHON`` adds a server of another installation (the main branch's venv, say)
on the same vault in the same run, so a change to the server is measured before and
after under the same load. ``--profile`` adds a cProfile of 20 briefs through the server's code path (in process,
the SDK's in-memory ``Client``, the profiler around each tool call on its worker
thread) at the first size: where a warm brief's time goes. ``--vaults DIR`` keeps the
vaults (indexed) in DIR and reuses them on the next run. The Markdown between this
script's two markers in ``--out`` is rewritten (the section is added at the end if the
markers are not there yet); the raw figures go to ``--json``. Goal: a warm brief p50
≤ 20 ms and p95 ≤ 50 ms at 10,000 and 50,000 notes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jsonrpc import LineClient  # noqa: E402
from report import RESULTS, code_version, machine, markers, table, write_json, write_section  # noqa: E402
import timing  # noqa: E402
from timing import PROJECT, child_env, fmt_ms, fmt_s, log, median, summary  # noqa: E402
from timing import run_kept as run  # noqa: E402
from vaults import BRIEF_TASKS, QUERIES, make_vault  # noqa: E402


PY = sys.executable
GOAL_P50, GOAL_P95 = 0.020, 0.050
ROLES = [role for role, _ in BRIEF_TASKS][:4]
PAIRS = [(role, task) for _, task in BRIEF_TASKS for role in ROLES]  # 20 role × task pairs
SDK_MODULES = ("mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "starlette", "httpx", "uvicorn")
BUILD_TIMEOUT = 900.0  # the index of the largest vault: cut beyond 15 minutes


def figures(xs: list[float], extreme: str = "max") -> dict:
    """``{"p50", "p95", extreme, "n"}`` of the seconds ``xs`` (``extreme``: ``max`` or
    ``min``), the keys of this script's JSON, from :func:`timing.summary`."""
    s = summary(xs)
    return {"p50": s["median"], "p95": s["p95"], extreme: s[extreme], "n": s["runs"]}


# -- the vault ---------------------------------------------------------------------------


def vault_for(n: int, folder: Path) -> tuple[Path, dict]:
    """The indexed synthetic vault of ``n`` notes in ``folder`` (made once, then reused)."""
    root = folder / f"vault-{n}"
    done = root / ".vaultmem" / "bench-mcp-ready"
    if done.is_file():
        return root, json.loads(done.read_text())
    shutil.rmtree(root, ignore_errors=True)
    log(f"{n:,} notes: writing the vault")
    made = make_vault(root, n)
    log(f"{n:,} notes: indexing (vaultmem index, a new process)")
    wall, cp = run([PY, "-m", "vaultmem", "--vault", str(root), "index"], timeout=BUILD_TIMEOUT)
    if cp.returncode != 0:
        raise SystemExit(f"index failed: {cp.stderr[-2000:]}")
    made["index_s"] = wall
    done.write_text(json.dumps(made))
    return root, made


# -- the server over stdio ---------------------------------------------------------------


def tool_args(i: int) -> dict[str, dict]:
    role, task = PAIRS[i % len(PAIRS)]
    return {"brief": {"agent": role, "task": task}, "search_memory": {"query": QUERIES[i % len(QUERIES)]},
            "get_stats": {}}


def bench_server(root: Path, mode: str, calls: int, warmup: int, python: str | None = None) -> dict:
    """One `vaultmem mcp` process over the SDK's stdio client, one session. ``python``:
    another installation's interpreter (the baseline), run with its own vaultmem."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = ["-m", "vaultmem", "mcp", "--vault", str(root)] + (["--no-watch"] if mode == "no-watch" else [])
    if python is None:
        params = StdioServerParameters(command=PY, args=args, env=child_env(), cwd=str(PROJECT))
    else:  # its own vaultmem: no PYTHONPATH to this checkout, started outside it
        env = {k: v for k, v in child_env().items() if k != "PYTHONPATH"}
        params = StdioServerParameters(command=python, args=args, env=env, cwd=tempfile.gettempdir())
    times: dict[str, list[float]] = {"brief": [], "search_memory": [], "get_stats": []}
    out: dict = {"mode": mode}

    async def warm_start() -> None:
        """One untimed start first: the bytecode caches (under ``timing.PYCACHE``) are then
        warm for this server as for the one measured before it — the first server started
        in a run would otherwise compile the SDK's modules, and its start time with them."""
        with anyio.fail_after(900):
            async with Client(stdio_client(params, errlog=open(os.devnull, "w"))) as c:
                await c.list_tools()

    async def main() -> None:
        await warm_start()
        with tempfile.TemporaryFile("w+") as errlog, anyio.fail_after(900):
            started = time.perf_counter()
            async with Client(stdio_client(params, errlog=errlog)) as c:
                first = await c.call_tool("get_stats", {})
                out["start_to_first_answer_s"] = time.perf_counter() - started
                if first.is_error:
                    raise SystemExit(f"get_stats failed: {first.content[0].text}")
                out["stats"] = first.structured_content
                for i in range(warmup + calls):
                    for tool, a in tool_args(i).items():
                        t = time.perf_counter()
                        r = await c.call_tool(tool, a)
                        wall = time.perf_counter() - t
                        if r.is_error:
                            raise SystemExit(f"{tool}({a}) failed: {r.content[0].text}")
                        if i >= warmup:
                            times[tool].append(wall)
                        if tool == "brief" and i == warmup:
                            out["brief_tokens"] = r.structured_content["tokens"]
                            sc = r.structured_content  # a baseline before `cites` gives `items`
                            cited = sc["items"] if "items" in sc else [i for c in sc["cites"].values() for i in c]
                            out["brief_items"] = len(cited)
            errlog.seek(0)
            out["stderr_lines"] = len(errlog.read().splitlines())

    anyio.run(main)
    out["calls"] = calls
    out["tools"] = {k: figures(v) for k, v in times.items()}
    return out


def bench_raw(root: Path, calls: int, warmup: int, python: str | None = None) -> dict:
    """The same rounds over bare JSON-RPC lines on the server's pipes (standard library
    only): each call timed from writing its line to reading and parsing its answer. What
    the server and the transport cost, without the SDK client's own work (it checks every
    result against the tool's output schema with jsonschema, which a client in another
    language does its own way, or not at all). ``python``: the baseline's interpreter, as
    for :func:`bench_server`."""
    env, cwd = child_env(), str(PROJECT)
    if python is not None:  # its own vaultmem: no PYTHONPATH to this checkout, started outside it
        env, cwd = {k: v for k, v in env.items() if k != "PYTHONPATH"}, tempfile.gettempdir()
    proc = subprocess.Popen([python or PY, "-m", "vaultmem", "mcp", "--vault", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    times: dict[str, list[float]] = {"brief": [], "search_memory": [], "get_stats": []}
    client = LineClient(proc, "bench")
    try:
        for i in range(warmup + calls):
            for tool, a in tool_args(i).items():
                t = time.perf_counter()
                client.call(tool, a)
                if i >= warmup:
                    times[tool].append(time.perf_counter() - t)
    finally:
        client.close()
    return {k: figures(v) for k, v in times.items()}


# -- the cold CLI ------------------------------------------------------------------------


def bench_cold(root: Path, runs: int) -> dict:
    """``runs`` cold CLI briefs, each a new process, after one untimed: their seconds."""
    def brief(i: int) -> float:
        role, task = PAIRS[i % len(PAIRS)]
        wall, cp = run([PY, "-m", "vaultmem", "--vault", str(root), "brief", role, "--task", task])
        if cp.returncode != 0:
            raise SystemExit(f"brief failed: {cp.stderr[-1000:]}")
        return wall

    brief(0)  # untimed: fills the bytecode cache
    return figures([brief(i) for i in range(runs)], "min")


def sdk_imports(root: Path) -> dict:
    """Which SDK modules a cold `vaultmem brief` imports (none, if all is well), and what
    importing the SDK costs a new interpreter."""
    role, task = PAIRS[0]
    _wall, cp = run([PY, "-X", "importtime", "-m", "vaultmem", "--vault", str(root), "brief", role, "--task", task])
    if cp.returncode != 0:
        raise SystemExit(f"brief failed: {cp.stderr[-1000:]}")
    names = [m.group(1).strip() for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(.+)$", cp.stderr, re.M)]
    sdk = sorted({n for n in names if n.split(".")[0] in SDK_MODULES})
    total_us = sum(int(m.group(1)) for m in re.finditer(r"^import time:\s+(\d+) \|", cp.stderr, re.M))
    costs = []
    for _ in range(3):
        _w, c = run([PY, "-X", "importtime", "-c", "import mcp.server"])
        costs.append(sum(int(m.group(1)) for m in re.finditer(r"^import time:\s+(\d+) \|", c.stderr, re.M)))
    return {"modules_imported": len(names), "sdk_modules": sdk, "brief_imports_s": total_us / 1e6,
            "mcp_server_import_s": median(costs) / 1e6}


# -- the profile -------------------------------------------------------------------------


def profile_briefs(root: Path, n: int = 20, top: int = 14) -> list[str]:
    """cProfile of ``n`` briefs through the server's code path, in process: the SDK's
    in-memory Client, the profiler around each tool's call on its worker thread."""
    import cProfile
    import io
    import pstats

    import anyio
    from mcp import Client

    from vaultmem import Vault
    from vaultmem.adapters.mcp import VaultServer
    from vaultmem.vault import without_secrets

    without_secrets("ghp_" + "x1" * 18)  # the detector's plugins, loaded at start as `vaultmem mcp` does

    prof = cProfile.Profile()
    on = [False]
    original = VaultServer.run_call

    def run_call(self, fn):
        return prof.runcall(original, self, fn) if on[0] else original(self, fn)

    VaultServer.run_call = run_call
    try:
        server = VaultServer(Vault(root), watch=True)

        async def main() -> None:
            async with Client(server) as c:
                for i in range(5):
                    await c.call_tool("brief", tool_args(i)["brief"])
                on[0] = True
                for i in range(n):
                    await c.call_tool("brief", tool_args(i)["brief"])

        try:
            anyio.run(main)
        finally:
            server.close()
    finally:
        VaultServer.run_call = original
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top + 10)
    rows = []
    for line in buf.getvalue().splitlines():
        m = re.match(r"\s*(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+\s+(.+)$", line)
        if m and m.group(1)[0].isdigit() and "vaultmem" in m.group(3):
            where = m.group(3).split("wt-mcp-bench/")[-1].split("site-packages/")[-1]
            where = re.sub(r"^.*?(vaultmem/)", r"\1", where)
            rows.append(f"| `{where}` | {float(m.group(2)) / n * 1000:.2f} ms |")
    return rows[:top]


# -- the report --------------------------------------------------------------------------


def verdict(value: float, goal: float) -> str:
    return f"**{'met' if value <= goal else 'not met'}**"


def report(results: list[dict], meta: dict) -> str:
    def pairs(t: dict) -> list[str]:
        """Each tool's p50 / p95."""
        return [f"{fmt_ms(t[k]['p50'])} / {fmt_ms(t[k]['p95'])}" for k in ("brief", "search_memory", "get_stats")]

    rows = []
    for r in results:
        for s in r["servers"]:
            rows.append([f"{r['notes']:,}", s["stats"]["index"]["engine"], s["mode"], *pairs(s["tools"]),
                         fmt_s(s["start_to_first_answer_s"]), f"{fmt_s(r['cold']['p50'])} / {fmt_s(r['cold']['p95'])}"])
        if r.get("raw"):
            rows.append([f"{r['notes']:,}", "", "watch, bare JSON-RPC client", *pairs(r["raw"]), "", ""])
        if r.get("raw_baseline"):
            rows.append([f"{r['notes']:,}", "", f"{meta['baseline_label']}, bare JSON-RPC client",
                         *pairs(r["raw_baseline"]), "", ""])
    goals = []
    for label, key, goal in (("warm brief p50 ≤ 20 ms", "p50", GOAL_P50), ("warm brief p95 ≤ 50 ms", "p95", GOAL_P95)):
        cells = []
        for r in results:
            s = next((s for s in r["servers"] if s["mode"] == "watch"), r["servers"][0])
            v = s["tools"]["brief"][key]
            cells.append(f"{verdict(v, goal)}: {fmt_ms(v)} ({s['mode']})")
        goals.append([label, *cells])
    w = ["## The MCP server: a warm brief beside the cold CLI brief\n",
         f"Measured {meta['date']}, vaultmem {meta['version']}, on {meta['cpus']} CPUs, Python {meta['python']}; "
         f"load average (1 min) at the start of each size: "
         + ", ".join(f"{r['notes']:,}: {r['load']}" for r in results)
         + " — other work shares these CPUs, so single figures move by ±20 % or more.\n",
         "```bash\n" + meta["command"] + "\n```\n",
         f"Each server is one `python -m vaultmem mcp` process, driven by the SDK's stdio client in one session; "
         f"every call is timed at the client (JSON-RPC over the pipes included), {meta['calls']} timed rounds "
         f"of `brief` (20 role × task pairs in turn), `search_memory` (30 queries) and `get_stats` after "
         f"{meta['warmup']} untimed ones. `watch` is how `vaultmem mcp` runs by default (it follows file events "
         f"and re-reads only what changed); `no-watch` (`--no-watch`) walks the vault before each search and "
         f"brief, as every CLI command does. The cold brief is `vaultmem brief ROLE --task TASK` as a new "
         f"process, {meta['cold']} runs."
         + (f" `{meta['baseline_label']}` is `vaultmem mcp` of another installation ({meta['baseline']}), on the "
            f"same vault in the same run." if meta.get("baseline") else "") + "\n",
         table(["notes", "engine", "server", "brief p50 / p95", "search_memory p50 / p95", "get_stats p50 / p95",
                "start → first answer", "cold CLI brief p50 / p95"], rows),
         "The bare JSON-RPC client writes each request line to the server's stdin and reads its answer "
         "line: the server and the transport, without the SDK client's own check of every result against "
         "the tool's output schema (jsonschema, in Python), which is the rest of the SDK client's figure.\n",
         table(["goal", *(f"{r['notes']:,} notes" for r in results)], goals)]
    for r in results:
        imp = r["imports"]
        sdk = ", ".join(imp["sdk_modules"]) or "none"
        w.append(f"- {r['notes']:,} notes: a cold `vaultmem brief` (`python -X importtime -m vaultmem brief …`) "
                 f"imports {imp['modules_imported']} modules, of the SDK's: {sdk}; importing `mcp.server` in a new "
                 f"interpreter takes {fmt_s(imp['mcp_server_import_s'])} (import time as `-X importtime` "
                 f"counts it), which only `vaultmem mcp` pays, once.")
    if results and results[0].get("profile"):
        w.append("")
        w.append(f"Where a warm brief's time goes at {results[0]['notes']:,} notes (cProfile of 20 briefs through "
                 "the server's code path in process, the SDK's in-memory `Client`; per brief, cumulative, under "
                 "the profiler's overhead):\n")
        w.append("| function | per brief |")
        w.append("|---|---|")
        w.extend(results[0]["profile"])  # rows already in Markdown, as the JSON keeps them
    return "\n".join(w) + "\n"


def baseline_version(python: str) -> str:
    """Which vaultmem ``python`` imports, and its commit when it is a checkout."""
    cp = subprocess.run([python, "-c", "import vaultmem, os; print(os.path.dirname(os.path.dirname(vaultmem.__file__)))"],
                        capture_output=True, text=True, timeout=60, cwd=tempfile.gettempdir())
    where = cp.stdout.strip() or "?"
    version = code_version(source=Path(where))
    return where if version == "?" else f"{where} at {version}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    ap.add_argument("--calls", type=int, default=100, help="timed rounds per server (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed rounds first (default 10)")
    ap.add_argument("--cold", type=int, default=7, help="cold CLI briefs per size (default 7)")
    ap.add_argument("--modes", nargs="+", choices=["watch", "no-watch"], default=["watch", "no-watch"])
    ap.add_argument("--baseline", metavar="PYTHON", help="also serve from this installation's python (e.g. the "
                    "main branch's venv), in the same run: the before of a before/after")
    ap.add_argument("--baseline-label", default="baseline", help="its name in the tables")
    ap.add_argument("--profile", action="store_true", help="profile 20 warm briefs at the first size")
    ap.add_argument("--vaults", type=Path, help="keep the indexed vaults here and reuse them")
    ap.add_argument("--out", type=Path, help="write the section into this Markdown file (between the markers)")
    ap.add_argument("--json", type=Path, default=RESULTS / "mcp.json")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="vaultmem-bench-mcp-"))
    timing.PYCACHE = tmp / "pycache"  # children use a warm bytecode cache, outside the source tree
    folder = args.vaults or tmp
    folder.mkdir(parents=True, exist_ok=True)
    meta = {**machine(folder), "version": code_version(), "calls": args.calls, "warmup": args.warmup,
            "cold": args.cold, "baseline": args.baseline and baseline_version(args.baseline),
            "baseline_label": args.baseline_label,
            "command": "python benchmarks/bench_mcp.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    results = []
    try:
        for n in args.sizes:
            root, made = vault_for(n, folder)
            r = {"notes": n, "vault": made, "load": machine()["load1"], "servers": []}
            for mode in args.modes:
                log(f"{n:,} notes: vaultmem mcp ({mode}), {args.calls} rounds")
                r["servers"].append(bench_server(root, mode, args.calls, args.warmup))
            if args.baseline:
                log(f"{n:,} notes: vaultmem mcp of {args.baseline_label}, {args.calls} rounds")
                r["servers"].append({**bench_server(root, "watch", args.calls, args.warmup, python=args.baseline),
                                     "mode": args.baseline_label})
            log(f"{n:,} notes: vaultmem mcp (watch) over bare JSON-RPC lines, {args.calls} rounds")
            r["raw"] = bench_raw(root, args.calls, args.warmup)
            if args.baseline:
                log(f"{n:,} notes: vaultmem mcp of {args.baseline_label} over bare JSON-RPC lines")
                r["raw_baseline"] = bench_raw(root, args.calls, args.warmup, python=args.baseline)
            log(f"{n:,} notes: cold CLI brief × {args.cold}")
            r["cold"] = bench_cold(root, args.cold)
            r["imports"] = sdk_imports(root)
            if args.profile and not results:
                log(f"{n:,} notes: profiling 20 briefs in process")
                r["profile"] = profile_briefs(root)
            results.append(r)
            for s in r["servers"]:
                t = s["tools"]
                log(f"{n:,} {s['mode']}: brief p50 {fmt_ms(t['brief']['p50'])} p95 {fmt_ms(t['brief']['p95'])}; "
                    f"search {fmt_ms(t['search_memory']['p50'])}; stats {fmt_ms(t['get_stats']['p50'])}; "
                    f"cold {fmt_s(r['cold']['p50'])}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    body = report(results, meta)
    print(body)
    if args.json:
        write_json(args.json, {"meta": meta, "results": results})
    if args.out:
        write_section(args.out, body, *markers("bench_mcp"))
    bad = [r["notes"] for r in results if r["imports"]["sdk_modules"]]
    if bad:
        log(f"a cold brief imported the SDK at {bad}: it must not")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
