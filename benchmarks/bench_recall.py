"""Recall at scale: how vaultmem's index, search, brief and watcher hold up at 1k–50k notes, on each index engine.

    python benchmarks/bench_recall.py --sizes 1000 10000 50000 [--engines whoosh tantivy]
        [--probe-sizes 2000 5000] [--out docs/benchmarks.md] [--quick]

For each size N it writes a synthetic vault (deterministic, fixed seed): N memory notes
of mixed Chinese and English engineering facts built from word lists, 20 role pages of
50 entries each and a ``MEMORY.md`` that lists every note (as ``remember`` keeps it).
The engine-independent baselines are measured once on it:

- the same queries answered by SQLite FTS5 built on the same documents, pre-tokenised by
  ``vaultmem.analysis.tokens``, and by a brute-force scan of the files.

Then, for each index engine (``--engines``, default whoosh and tantivy), on a fresh copy
of the vault and with ``VAULTMEM_INDEX_ENGINE`` set to that engine (in this process, for
every IndexStore and Vault made after, and in every child process):

1. the full index build (``rebuild_index``) in a new process: time, peak RSS, index size;
2. a one-file update: ``refresh_index(paths=[rel])`` and a full-walk ``refresh_index()``
   (median of 10), and the no-change ``refresh_index()`` that every search and brief
   runs first when no watcher is alive;
3. watcher freshness: ``vaultmem watch`` as a process and a ``Watcher`` in a thread;
   time from a save (in place, and temp file + ``os.replace``) until a search straight
   on the index finds it, also for a save after 11 s of quiet (when the watcher does
   its idle maintenance), and until the public ``vault.search`` finds it;
4. search latency: warm (in-process, one IndexStore, 30 queries, median and p95) and
   cold (a new ``python -m vaultmem search`` process), and a cold ``vaultmem brief``
   (time and peak RSS).

``--probe-sizes`` adds sizes where only the build, warm search and cold processes are
measured (to find where an engine stops meeting the latency goals). It also profiles
the cold brief (``-X importtime`` and cProfile) and the one-file update at the goal size
(10,000 notes, else the largest), and the build at the smallest size, and writes
Markdown tables (stdout, and ``--out``) and the raw figures as JSON (``--json``, default
benchmarks/results/recall.json; ``--report-from`` rewrites the tables from such a file
without measuring). Every phase is bounded: subprocesses have timeouts, polling loops
have deadlines and the brute-force scan has a time budget. Vaults are made under a
temporary folder and removed unless ``--keep``. Needs only the standard library and
vaultmem's own dependencies (tantivy for its engine).

It measures the vaultmem beside it (``../vaultmem``, in-process and in every child). To
measure a fixed state while the work tree changes, copy the script, its scenarios
(``recall/``) and the harness into an export: ``git archive HEAD | tar -x -C /tmp/snap &&
cp -r benchmarks/bench_recall.py benchmarks/recall benchmarks/timing.py benchmarks/report.py
benchmarks/vaults.py /tmp/snap/benchmarks/ && python /tmp/snap/benchmarks/bench_recall.py
--commit <sha> ...``. The scenarios are the modules of
``benchmarks/recall/`` (one per concern); this script is their command line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the harness and recall/; the vaultmem beside them

import timing  # noqa: E402
from recall.document import render  # noqa: E402
from recall.sizes import bench_size  # noqa: E402
from recall.tables import ok  # noqa: E402
from report import RESULTS, machine, markers, write_json, write_section  # noqa: E402

from vaultmem.index.store import ENGINES  # noqa: E402


def write_out(path: Path, body: str) -> None:
    """``body`` as the bench_recall section of the Markdown file ``path``."""
    write_section(path, body, *markers("bench_recall"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000], help="numbers of notes")
    ap.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES),
                    help="index engines to measure vaultmem on (default: all)")
    ap.add_argument("--probe-sizes", type=int, nargs="*", default=[],
                    help="also these numbers of notes, with only the build, warm search and cold processes")
    ap.add_argument("--out", type=Path, help="write the report into this Markdown file (between markers)")
    ap.add_argument("--json", type=Path, default=RESULTS / "recall.json",
                    help="save the raw measurements as JSON here (default: benchmarks/results/recall.json)")
    ap.add_argument("--report-from", type=Path, help="measure nothing: write the report from this JSON")
    ap.add_argument("--quick", action="store_true", help="1000 notes only: a smoke check")
    ap.add_argument("--workdir", type=Path, help="where to make the vaults (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the vaults afterwards")
    ap.add_argument("--commit", help="label of the measured code when it is not a git work tree (a snapshot)")
    args = ap.parse_args(argv)
    if args.report_from:
        saved = json.loads(args.report_from.read_text(encoding="utf-8"))
        text = render(saved["results"], saved["meta"])
        if args.out:
            write_out(args.out, text)
        print(text)
        return 0
    sizes = [1000] if args.quick else args.sizes
    engines = [x for x in ENGINES if x in args.engines]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="vaultmem-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    timing.PYCACHE = workdir / "pycache"
    seen = machine(workdir) | {"sqlite": sqlite3.sqlite_version}  # FTS5's SQLite too
    meta = {"argv": argv, "machine": seen, "fs": seen["fs"]}
    results: list[dict] = []

    def checkpoint() -> None:  # after every step, so a cut run keeps what it measured
        write_json(args.json, {"meta": meta, "results": results})
        if args.out and any(ok(e) for r in results for e in r["engines"].values()):
            write_out(args.out, render(results, meta))

    plan = sorted([(n, False) for n in sizes] + [(n, True) for n in args.probe_sizes if n not in sizes])
    try:
        for n, probe in plan:
            results.append({"n": n, "engines": {}})
            bench_size(results[-1], workdir, engines, probe=probe, profile_brief=(n == (
                10000 if 10000 in sizes else max(sizes))), profile_build_here=(n == min(sizes)), keep=args.keep,
                checkpoint=checkpoint, commit=args.commit)
            checkpoint()
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(render(results, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
