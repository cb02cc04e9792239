"""What one big role page costs: index, search, brief and compact --dry-run at N entries.

The page ``agents/kafka.md`` holds N working-memory lines
``- 2026-12-01 | kafka entry i: … ^m-%06x`` (about 65 bytes each: 150,000 lines are
9.8 MB). Each command runs as its own ``python -m vaultmem`` process on the vaultmem
beside this script (``../vaultmem``), in this order on one vault per N:

- ``index``: the first build of the index (the page is the only big file);
- ``search 'kafka entry 77'``: the index is fresh, so this is the query and its snippets;
- ``brief kafka --task 'tune the kafka consumer lag'``: the page layer of a role's brief;
- ``compact kafka --dry-run``: the plan and the page rewritten in memory (checked by
  re-parsing), nothing written.

It prints a Markdown table: for each N the seconds of each command — wall clock, and in
brackets the CPU time of its process (user and system: steadier on a shared machine) —
and the CPU microseconds per entry (CPU seconds / N × 10⁶); a linear command keeps the
per-entry figure flat as N grows. ``--timeout`` bounds each command (a command past it shows as ``>T``).

    python benchmarks/bench_bigpage.py --sizes 15000 50000 150000 [--out benchmarks/results/bigpage.md]

To measure a fixed state while the work tree changes, copy the script into an export:
``git archive HEAD | tar -x -C /tmp/snap && cp benchmarks/bench_bigpage.py
/tmp/snap/benchmarks/ && python /tmp/snap/benchmarks/bench_bigpage.py ...``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROLE = "kafka"
TOPICS = ["consumer lag", "rebalance storm", "broker disk", "offset reset", "acks=all", "ISR shrink"]


def page_text(n: int) -> str:
    """The body lines of working memory: N dated entries, each with its block id."""
    return "".join(f"- 2026-12-01 | kafka entry {i}: {TOPICS[i % len(TOPICS)]} on topic t{i % 97} "
                   f"^m-{i:06x}\n" for i in range(n))


def vm(root: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), GIT_AUTHOR_NAME="b",
               GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@x")
    env.pop("VAULTMEM_VAULT", None)
    env.pop("VAULTMEM_AGENT", None)
    return subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def make_vault(root: Path, n: int) -> Path:
    """A fresh vault with one role page of N working-memory entries, committed."""
    for args in (("init", str(root), "--lang", "en"), ("page", "ensure", ROLE)):
        r = vm(root, *args) if args[0] != "init" else subprocess.run(
            [sys.executable, "-m", "vaultmem", *args], env=dict(os.environ, PYTHONPATH=str(ROOT)),
            capture_output=True, text=True, check=False)
        if r.returncode:
            raise SystemExit(f"{args}: {r.stderr}")
    path = root / "agents" / f"{ROLE}.md"
    text = path.read_text(encoding="utf-8")
    marker = "while working -->\n"
    assert marker in text, text
    path.write_text(text.replace(marker, marker + page_text(n)), encoding="utf-8")
    git = ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@x"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "big page"], check=True, capture_output=True)
    return path


COMMANDS = {
    "index": ("index",),
    "search": ("search", "kafka entry 77"),
    "brief": ("brief", ROLE, "--task", "tune the kafka consumer lag"),
    "compact --dry-run": ("compact", ROLE, "--dry-run"),
}


def _child_cpu() -> float:
    """CPU seconds (user and system) of the finished child processes so far: on a shared
    machine a steadier measure than the wall clock."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(n: int, timeout: float) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "v"
        path = make_vault(root, n)
        out["MB"] = path.stat().st_size / 1e6
        for name, args in COMMANDS.items():
            t, cpu = time.perf_counter(), _child_cpu()
            try:
                r = vm(root, *args, timeout=timeout)
            except subprocess.TimeoutExpired:
                out[name] = out[f"{name} cpu"] = None
                print(f"  N={n:,} {name}: past {timeout:.0f} s", file=sys.stderr, flush=True)
                continue
            out[name], out[f"{name} cpu"] = time.perf_counter() - t, _child_cpu() - cpu
            if r.returncode:
                raise SystemExit(f"{name} failed ({r.returncode}): {r.stderr[-2000:]}")
            print(f"  N={n:,} {name}: {out[name]:.2f} s ({out[f'{name} cpu']:.2f} s CPU)", file=sys.stderr,
                  flush=True)
    return out


def table(rows: list[tuple[int, dict]], timeout: float) -> str:
    """Per command: wall seconds, CPU seconds, and CPU microseconds per entry."""
    names = list(COMMANDS)
    lines = ["| entries | page MB | " + " | ".join(f"{c}: s (CPU s) | µs/entry" for c in names) + " |",
             "|" + "---|" * (2 + 2 * len(names))]
    for n, r in rows:
        cells = []
        for c in names:
            if r[c] is None:
                cells += [f">{timeout:.0f}", f">{timeout / n * 1e6:.0f}"]
            else:
                cells += [f"{r[c]:.2f} ({r[c + ' cpu']:.2f})", f"{r[c + ' cpu'] / n * 1e6:.0f}"]
        lines.append(f"| {n:,} | {r['MB']:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[15000, 50000, 150000])
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds each command may take")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args()
    rows = [(n, measure(n, args.timeout)) for n in args.sizes]
    text = table(rows, args.timeout)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
