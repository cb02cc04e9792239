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
import subprocess
import sys
import tempfile
from pathlib import Path

from report import table
from timing import fmt_s, log, run_once

ROOT = Path(__file__).resolve().parents[1]
ROLE = "kafka"
TOPICS = ["consumer lag", "rebalance storm", "broker disk", "offset reset", "acks=all", "ISR shrink"]
ENV = {**{k: v for k, v in os.environ.items() if k not in ("VAULTMEM_VAULT", "VAULTMEM_AGENT")},
       "PYTHONPATH": str(ROOT), "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@x"}  # the vaultmem beside this script, no vault or agent from the caller


def page_text(n: int) -> str:
    """The body lines of working memory: N dated entries, each with its block id."""
    return "".join(f"- 2026-12-01 | kafka entry {i}: {TOPICS[i % len(TOPICS)]} on topic t{i % 97} "
                   f"^m-{i:06x}\n" for i in range(n))


def vm(*args: str) -> list[str]:
    """The command line of ``python -m vaultmem ARGS``."""
    return [sys.executable, "-m", "vaultmem", *args]


def big_page_vault(root: Path, n: int) -> Path:
    """A fresh vault with one role page of N working-memory entries, committed (local, not
    vaults.make_vault: its pages hold a few dozen entries, this one up to 150,000)."""
    for args in (("init", str(root), "--lang", "en"), ("--vault", str(root), "page", "ensure", ROLE)):
        if run_once(vm(*args), env=ENV)[2]:
            raise SystemExit(f"vaultmem {' '.join(args)} failed")
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


def measure(n: int, timeout: float) -> dict[str, float | None]:
    """The page's MB, and each command's wall and CPU seconds (None past ``timeout``)."""
    out: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "v"
        out["MB"] = big_page_vault(root, n).stat().st_size / 1e6
        for name, args in COMMANDS.items():
            try:
                wall, cpu, code = run_once(vm("--vault", str(root), *args), env=ENV, timeout=timeout)
            except subprocess.TimeoutExpired:
                out[name] = out[f"{name} cpu"] = None
                log(f"N={n:,} {name}: past {timeout:.0f} s")
                continue
            if code:
                raise SystemExit(f"{name} failed ({code})")
            out[name], out[f"{name} cpu"] = wall, cpu
            log(f"N={n:,} {name}: {fmt_s(wall)} ({fmt_s(cpu)} CPU)")
    return out


def cells(n: int, r: dict, timeout: float) -> list[str]:
    """A row: entries, page MB, and per command wall (CPU) seconds and CPU µs per entry."""
    row = [f"{n:,}", f"{r['MB']:.1f}"]
    for c in COMMANDS:
        if r[c] is None:
            row += [f">{timeout:.0f}", f">{timeout / n * 1e6:.0f}"]
        else:
            row += [f"{r[c]:.2f} ({r[c + ' cpu']:.2f})", f"{r[c + ' cpu'] / n * 1e6:.0f}"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[15000, 50000, 150000])
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds each command may take")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args()
    text = table(["entries", "page MB", *(h for c in COMMANDS for h in (f"{c}: s (CPU s)", "µs/entry"))],
                 [cells(n, measure(n, args.timeout), args.timeout) for n in args.sizes])
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
