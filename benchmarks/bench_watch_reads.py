"""What other programs' reads of the vault cost a running ``vaultmem mcp`` (watch mode).

    python benchmarks/bench_watch_reads.py [--notes 10000] [--rounds 5] [--vaults DIR]
        [--baseline-path DIR [--baseline-label NAME]]

The server follows the vault's file events to know what changed. Obsidian opening the
vault, ``git status``, ``grep -r``, a hook's cold brief: each reads files, and each read
is an open and a close event unless the server asks the kernel for changes only. On a
synthetic vault of ``--notes`` notes (``vaults.make_vault``, indexed once), each round
starts ``python -m vaultmem mcp --vault V``, makes one ``get_stats`` call (the first:
it walks the vault), reads every Markdown file of the vault once from this process, and
makes a second ``get_stats`` call — which waits for the marker it drops, so every event
of the reads has been handled by then. Reported: the server's CPU time (user + system,
from ``/proc/PID/stat``) from the first call's answer to the second's, and the second
call's time. Linux only (inotify, ``/proc``).

``--baseline-path DIR``: the same rounds for another checkout (``PYTHONPATH=DIR``, e.g.
``git worktree add /tmp/old HEAD~1``), alternated with this one's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jsonrpc import LineClient  # noqa: E402
from timing import PROJECT, log  # noqa: E402
from vaults import make_vault  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def vault_for(n: int, folder: Path) -> Path:
    root = folder / f"vault-{n}"
    done = root / ".vaultmem" / "bench-reads-ready"
    if done.is_file():
        return root
    if root.exists():
        import shutil
        shutil.rmtree(root)
    log(f"making a vault of {n:,} notes in {root}")
    make_vault(root, n)
    subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), "index"], check=True,
                   stdout=subprocess.DEVNULL, cwd=str(PROJECT))
    done.write_text("ok\n")
    return root


def one_round(root: Path, path: str | None, files: list[Path]) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    if path:
        env["PYTHONPATH"] = path
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    client = LineClient(proc, "bench")
    try:
        client.call("get_stats", {})
        before = cpu_seconds(proc.pid)
        for f in files:
            with open(f, "rb") as fh:
                fh.read()
        t = time.perf_counter()
        client.call("get_stats", {})
        call = time.perf_counter() - t
        return {"cpu": cpu_seconds(proc.pid) - before, "call": call}
    finally:
        client.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--vaults", type=Path, default=Path(tempfile.gettempdir()) / "vaultmem-bench-reads")
    ap.add_argument("--baseline-path")
    ap.add_argument("--baseline-label", default="baseline")
    args = ap.parse_args()
    if not sys.platform.startswith("linux"):
        raise SystemExit("Linux only: inotify and /proc")
    root = vault_for(args.notes, args.vaults)
    files = sorted(root.rglob("*.md"))
    runs = {"this": [], args.baseline_label: []} if args.baseline_path else {"this": []}
    for r in range(args.rounds):
        for label in runs:
            got = one_round(root, args.baseline_path if label != "this" else None, files)
            runs[label].append(got)
            log(f"round {r + 1} {label}: server CPU {got['cpu']:.2f} s for {len(files):,} files read; "
                f"the call after them {got['call'] * 1000:.1f} ms")
    print(f"\n{len(files):,} Markdown files read once each, median of {args.rounds} rounds:\n")
    print("| server | CPU of the server while they are read | the next call |")
    print("|---|---|---|")
    for label, got in runs.items():
        cpu = sorted(g["cpu"] for g in got)[len(got) // 2]
        call = sorted(g["call"] for g in got)[len(got) // 2]
        print(f"| {label} | {cpu:.2f} s | {call * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
