"""New processes on an up-to-date index: ``vaultmem search`` and ``vaultmem brief`` (with
and without a bytecode cache), Python's own start, and a cold brief's steps one by one."""

from __future__ import annotations

import json
from pathlib import Path

from timing import median
from vaults import BRIEF_TASKS, QUERIES

from vaultmem import Vault

from .common import PY, brief_args, run, run_ok


def cold_brief(root: Path, runs: int = 5) -> list[float]:
    """Seconds of ``runs`` cold ``vaultmem brief`` processes, the brief tasks in turn."""
    times = []
    for i in range(runs):
        role, task = BRIEF_TASKS[i % len(BRIEF_TASKS)]
        times.append(run_ok([PY, *brief_args(root, role, task)], "brief")[0])
    return times


STEPS_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import vaultmem.adapters.cli
t1 = time.perf_counter()
from vaultmem import Vault
v = Vault.open(sys.argv[1])
t2 = time.perf_counter()
out = {"import_cli": t1 - t0, "open": t2 - t1}
role, task = sys.argv[2], sys.argv[3]
if sys.argv[4] == "whole":  # as the CLI does it
    b = v.brief(role, task)
    t3 = time.perf_counter()
    v.brief(role, task)
    out.update(brief_first=t3 - t2, brief_warm=time.perf_counter() - t3, tokens=b.tokens, items=len(b.items),
               index_lines=b.index_lines)
    for line in open("/proc/self/status"):  # this process's peak RSS (VmHWM, kB)
        if line.startswith("VmHWM:"):
            out["rss_peak_kb"] = int(line.split()[1])
else:  # the first brief's parts, one by one
    from vaultmem.index import Filters
    from vaultmem.retrieve import search
    from vaultmem.vault import BRIEF_KINDS
    v.index.refresh(wait=0)
    t3 = time.perf_counter()
    v.index.engine()
    t4 = time.perf_counter()
    search(v.index, task, Filters(agent=role, kinds=BRIEF_KINDS), limit=30)
    t5 = time.perf_counter()
    out.update(fresh_check=t3 - t2, engine_open=t4 - t3, first_search=t5 - t4)
print(json.dumps(out))
"""


def bench_cold(root: Path, runs: int = 7) -> dict:
    """Seconds of cold searches and briefs (``runs`` each), of briefs without a bytecode
    cache, of Python's start and ``vaultmem --help``; a cold brief's steps (medians)."""
    Vault.open(root).refresh_index()  # the index is up to date
    run([PY, *brief_args(root, *BRIEF_TASKS[0])])  # untimed: fills the bytecode cache
    out: dict = {"search": [], "brief": []}
    for q in QUERIES[::4][:runs]:
        out["search"].append(run_ok([PY, "-m", "vaultmem", "--vault", str(root), "search", q], "search")[0])
    out["brief"] = cold_brief(root, runs)
    out["brief_nocache"] = [run([PY, *brief_args(root, role, task)], bytecode_cache=False)[0]
                            for role, task in BRIEF_TASKS[:3]]
    out["python"] = median([run([PY, "-c", "pass"])[0] for _ in range(5)])
    out["help"] = median([run([PY, "-m", "vaultmem", "--help"])[0] for _ in range(3)])
    steps: dict[str, list[float]] = {}
    for mode in ("whole", "parts"):
        for role, task in BRIEF_TASKS[:3]:
            _w, cp = run_ok([PY, "-c", STEPS_CHILD, str(root), role, task, mode], "steps")
            for k, val in json.loads(cp.stdout.strip().splitlines()[-1]).items():
                steps.setdefault(k, []).append(val)
    out["steps"] = {k: median(v) for k, v in steps.items()}
    return out
