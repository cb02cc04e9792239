"""The Claude Code hooks end to end: SessionStart at 10,000 notes, and SessionEnd's return time.

    python benchmarks/bench_hooks.py [--notes 10000] [--runs 15] [--load 4] [--out docs/benchmarks.md]
    python benchmarks/bench_hooks.py --warm [--notes 10000] [--runs 11] [--load 2] [--out FILE.md]

It writes the synthetic vault of ``vaults.py`` (``--notes`` notes of mixed Chinese and
English facts, 20 role pages of 50 entries, a MEMORY.md listing every note), builds its
index once (a user's vault has one), and a transcript of a 400-turn session. Then, each
time from process start to exit, as Claude Code runs them (the payload on stdin,
``$CLAUDE_PROJECT_DIR`` naming the project):

1. ``vaultmem hook claude SessionStart`` (``source: startup``): median, p95 and worst of
   ``--runs`` (goal: ≤ 0.5 s);
2. ``vaultmem hook claude SessionEnd``: the hook's return time (goal: ≤ 1.5 s, Claude
   Code's budget for SessionEnd hooks), and how long the detached filer took to file the
   session's facts in the inbox after it.

Both are measured on an idle machine and again with the machine loaded: ``--load`` CPU
burners plus one process that writes and fsyncs 1 MB at a time on the vault's disk (the
slow, busy disk of a laptop syncing). Markdown goes to stdout, and with ``--out`` into
the file between its two markers (text outside them is kept).

Children run with bytecode caches (``PYTHONPYCACHEPREFIX``), as an installed vaultmem
has them, whatever ``PYTHONDONTWRITEBYTECODE`` says.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the harness, and this checkout's vaultmem

from report import markers, table, write_json, write_section  # noqa: E402
import timing  # noqa: E402
from timing import child_env, fmt_ms, log, summary  # noqa: E402
from vaults import make_vault  # noqa: E402

from vaultmem import Vault  # noqa: E402

WARM_EVENTS = ("SessionStart", "SubagentStart", "Stop")


def transcript(path: Path, turns: int = 400) -> Path:
    """A session of ``turns`` user and assistant turns, as Claude Code writes it, at ``path``."""
    lines = []
    for n in range(turns):
        said = f"Look at step {n} of the deployment." + (" I prefer small commits." if n == 3 else "")
        lines.append({"type": "user", "sessionId": "bench", "uuid": f"u{n}", "message": {"role": "user", "content": said}})
        reply = f"Step {n} is done." + ("\nConclusion: the deployment works with two replicas." if n == turns - 1 else "")
        lines.append({"type": "assistant", "sessionId": "bench", "uuid": f"a{n}",
                      "message": {"role": "assistant", "content": [{"type": "text", "text": reply}]}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def prepared(tmp: Path, notes: int) -> tuple[Path, Path]:
    """The benchmark's vault of ``notes`` notes, indexed, and a session's transcript where
    Claude Code keeps it; children get their bytecode caches under ``tmp``."""
    timing.PYCACHE = tmp / "pycache"
    root = tmp / "vault"
    made = make_vault(root, notes)
    log(f"vault: {made['notes']} notes in {made['seconds']:.1f} s")
    Vault(root).rebuild_index()
    (tmp / "claude" / "projects" / "-bench").mkdir(parents=True)
    return root, transcript(tmp / "claude" / "projects" / "-bench" / "session.jsonl")


def env_for(root: Path) -> dict:
    """The environment of a hook run by Claude Code in the project ``root``."""
    env = child_env(keep=())
    env["CLAUDE_PROJECT_DIR"] = str(root)
    env["CLAUDE_CONFIG_DIR"] = str(root.parent / "claude")  # a hook reads only transcripts in its projects/
    return env


def run_vaultmem(root: Path, args: list[str], data: dict | None = None, extra_env: dict | None = None
                 ) -> tuple[float, subprocess.CompletedProcess]:
    """``python -m vaultmem ARGS`` in the project ``root``, ``data`` as JSON on stdin: its
    wall seconds from start to exit, and what it did."""
    started = time.perf_counter()
    cp = subprocess.run([sys.executable, "-m", "vaultmem", *args], input=None if data is None else json.dumps(data),
                        capture_output=True, text=True, env={**env_for(root), **(extra_env or {})}, cwd=str(root),
                        timeout=120)
    return time.perf_counter() - started, cp


def hook(root: Path, event: str, data: dict, extra_env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """``vaultmem hook claude EVENT`` with the payload ``data``: its seconds, and what it did."""
    return run_vaultmem(root, ["hook", "claude", event], data, extra_env)


def measure(root: Path, tr: Path, runs: int, tag: str) -> dict:
    """SessionStart ``runs`` times, the plain CLI brief and SessionEnd (with the filer
    behind it) a third as often: each summarised, and the load around them."""
    load_before = os.getloadavg()[0]
    start = {"session_id": "bench", "cwd": str(root), "hook_event_name": "SessionStart", "source": "startup",
             "transcript_path": str(tr)}
    hook(root, "SessionStart", start)  # bytecode caches and the index's first open, as after an install
    starts = []
    for _ in range(runs):
        took, cp = hook(root, "SessionStart", start)
        out = json.loads(cp.stdout)["hookSpecificOutput"]["additionalContext"]
        assert cp.returncode == 0 and not cp.stderr and len(out) <= 10_000, cp.stderr
        starts.append(took)
    briefs = []  # the same brief by the plain CLI, for scale: what the machine's load does to any command
    for _ in range(max(3, runs // 3)):
        took, cp = run_vaultmem(root, ["brief", "lee", "--task", f"Claude Code session in {root.name}"])
        assert cp.returncode == 0, cp.stderr
        briefs.append(took)
    ends, filed = [], []
    for n in range(max(3, runs // 3)):
        before = len(Vault(root).inbox.items())
        with tr.open("a", encoding="utf-8") as f:  # facts the inbox does not hold yet: a repeat is not filed again
            for who, said in (("user", f"I prefer release trains of {n + 2} days ({tag})."),
                              ("assistant", f"Noted.\nConclusion: trains of {n + 2} days work ({tag}).")):
                content = said if who == "user" else [{"type": "text", "text": said}]
                f.write(json.dumps({"type": who, "sessionId": "bench", "uuid": f"end-{tag}-{n}-{who}",
                                    "message": {"role": who, "content": content}}) + "\n")
        end = {"session_id": f"bench-{tag}-{n}", "cwd": str(root), "hook_event_name": "SessionEnd", "reason": "other",
               "transcript_path": str(tr)}
        took, cp = hook(root, "SessionEnd", end)
        assert cp.returncode == 0 and not cp.stderr, cp.stderr
        ends.append(took)
        t0 = time.perf_counter()
        spool = root / ".vaultmem/local/claude/spool"
        while any(spool.glob("*.json")) or len(Vault(root).inbox.items()) < before + 2:
            if time.perf_counter() - t0 > 120:
                raise SystemExit("the background filer did not file the session within 120 s")
            time.sleep(0.02)
        filed.append(took + time.perf_counter() - t0)
    return {"session_start": summary(starts), "session_end": summary(ends), "filed_after": summary(filed),
            "cli_brief": summary(briefs), "load": (load_before + os.getloadavg()[0]) / 2}


def warm_vs_cold(root: Path, tr: Path, runs: int) -> dict:
    """SessionStart, SubagentStart and Stop with ``vaultmem mcp`` up for the vault: each
    run once cold (``VAULTMEM_WARM=off``) and once warm, alternated, so that both see
    the same machine. Stop files two new turns each time (as on every turn of a
    session); SubagentStart starts a new sub-agent (a delegation and its commit)."""
    server = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp"], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_for(root), cwd=str(root))
    try:
        started = time.perf_counter()
        while not any((root / ".vaultmem/local/warm").glob("*.sock")):
            if server.poll() is not None or time.perf_counter() - started > 120:
                raise SystemExit("vaultmem mcp did not start listening for hooks")
            time.sleep(0.02)
        out: dict = {f"{e} {mode}": [] for e in WARM_EVENTS for mode in ("cold", "warm")}
        n = 0
        for run in range(runs + 1):  # the first round warms caches: not counted
            for mode in ("cold", "warm"):
                for event in WARM_EVENTS:
                    n += 1
                    data = {"session_id": "bench", "cwd": str(root), "hook_event_name": event,
                            "transcript_path": str(tr)}
                    if event == "SessionStart":
                        data["source"] = "startup"
                    elif event == "SubagentStart":
                        data.update(agent_id=f"a{n}", agent_type=f"role-{n % 3}")
                    else:
                        with tr.open("a", encoding="utf-8") as f:
                            for who, said in (("user", f"Check item {n} of the list."), ("assistant", f"Item {n} is fine.")):
                                f.write(json.dumps({"type": who, "sessionId": "bench", "uuid": f"x{n}{who}",
                                                    "message": {"role": who, "content": said}}) + "\n")
                        data.update(stop_hook_active=False, last_assistant_message=f"Item {n} is fine.")
                    took, cp = hook(root, event, data, {"VAULTMEM_WARM": "off"} if mode == "cold" else None)
                    assert cp.returncode == 0 and not cp.stderr, cp.stderr
                    if run:
                        out[f"{event} {mode}"].append(took)
        return {k: summary(v) for k, v in out.items()}
    finally:
        server.stdin.close()
        server.wait(timeout=120)


@contextlib.contextmanager
def loaded(burners: int, disk: Path | None = None):
    """The machine loaded while the block runs: ``burners`` CPU burners and, given ``disk``,
    a process writing and fsyncing 1 MB at a time into a file in that folder."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)]
    if disk is not None:
        writer = ("import os\nblock=os.urandom(1<<20)\n"
                  f"path={str(disk / 'disk-load.bin')!r}\n"
                  "while True:\n fd=os.open(path,os.O_WRONLY|os.O_CREAT|os.O_TRUNC)\n"
                  " [os.write(fd,block) for _ in range(8)]\n os.fsync(fd)\n os.close(fd)\n")
        procs.append(subprocess.Popen([sys.executable, "-c", writer]))
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def hooks_section(results: dict, args) -> str:
    """The Markdown of SessionStart and SessionEnd, idle and loaded."""
    rows = [[tag, f"{r['load']:.1f}", fmt_ms(r["session_start"]["median"]), fmt_ms(r["session_start"]["p95"]),
             fmt_ms(r["session_start"]["max"]), fmt_ms(r["cli_brief"]["median"]),
             f"{fmt_ms(r['session_end']['median'])} / {fmt_ms(r['session_end']['max'])}",
             fmt_ms(r["filed_after"]["median"])] for tag, r in results.items()]
    return "\n".join([
        "",
        "## Claude Code hooks: SessionStart and SessionEnd end to end",
        "",
        f"`vaultmem hook claude …` as Claude Code runs it, from process start to exit, on a vault of "
        f"{args.notes:,} notes (index built), {args.runs} SessionStart runs per row; {os.cpu_count()} cores; "
        f"loaded = {args.load} CPU burners and a process writing and fsyncing 1 MB at a time on the vault's disk "
        "(the load average column is the 1-minute average around each row: the machine is shared, so 'idle' "
        "is only as idle as the others left it). "
        "Goals: SessionStart ≤ 0.5 s at 10,000 notes; SessionEnd returns within Claude Code's 1.5 s budget "
        "(it writes a spool file and starts a detached filer; the last column is when that filer had the "
        "session's facts in the inbox). `vaultmem brief` is the same brief through the plain CLI in the same "
        "minutes, for scale.",
        "",
        table(["machine", "load average", "SessionStart median", "p95", "worst", "`vaultmem brief` (median)",
               "SessionEnd returns (median / worst)", "facts filed after (median)"], rows),
        f"Reproduce: `python benchmarks/bench_hooks.py --notes {args.notes} --runs {args.runs} --load {args.load} "
        "--out docs/benchmarks.md`.",
        ""])


def warm_section(results: dict, args) -> str:
    """The Markdown of the hooks cold and warm, idle and beside the burners."""
    rows = []
    for machine, r in results.items():
        for event in WARM_EVENTS:
            c, w = r[f"{event} cold"], r[f"{event} warm"]
            rows.append([machine, event, f"{fmt_ms(c['median'])} / {fmt_ms(c['p95'])}",
                         f"{fmt_ms(w['median'])} / {fmt_ms(w['p95'])}", f"×{w['median'] / c['median']:.2f}"])
    return "\n".join([
        "# Hooks on the warm path (benchmarks/bench_hooks.py --warm)", "",
        f"Each hook as Claude Code runs it (a new process, payload on stdin), on a vault of {args.notes:,} notes with "
        f"`vaultmem mcp` up for it: cold (`VAULTMEM_WARM=off`) and warm alternated, {args.runs} runs each; "
        f"{os.cpu_count()} cores. Goal: ≤ 0.3 s p50 warm, ≤ 0.5 s cold.", "",
        table(["machine", "hook", "cold p50 / p95", "warm p50 / p95", "warm / cold"], rows),
        f"Reproduce: `python benchmarks/bench_hooks.py --warm --notes {args.notes} --runs {args.runs} --load {args.load}"
        + (f" --out {args.out}`." if args.out else "`."), ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--load", type=int, default=4)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--warm", action="store_true", help="instead: SessionStart, SubagentStart and Stop cold and "
                    "warm (vaultmem mcp up), idle and beside --load CPU burners; Markdown and JSON to --out")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        root, tr = prepared(Path(tmp), args.notes)
        if args.warm:
            results = {"idle": warm_vs_cold(root, tr, args.runs)}
            with loaded(args.load):
                results[f"{args.load} CPU hogs"] = warm_vs_cold(root, tr, args.runs)
        else:
            results = {"idle": measure(root, tr, args.runs, "idle")}
            with loaded(args.load, disk=Path(tmp)):
                results["loaded"] = measure(root, tr, args.runs, "loaded")
    if args.warm:
        text = warm_section(results, args)
        print(text)
        if args.out:
            args.out.write_text(text, encoding="utf-8")
            write_json(args.out.with_suffix(".json"), results)
    else:
        text = hooks_section(results, args)
        print(text)
        print(json.dumps(results, indent=2), file=sys.stderr)
        if args.out:
            write_section(args.out, text, *markers("bench_hooks"))


if __name__ == "__main__":
    main()
