"""Where the time goes: a cold brief under cProfile and ``-X importtime``, a one-file
update's profile (summarised here), and the full build under cProfile."""

from __future__ import annotations

import os
import pstats
import re
from pathlib import Path

from vaults import BRIEF_TASKS

from .common import BUILD_TIMEOUT, PY, brief_args, run, run_ok

ENGINE_FILES = ("vaultmem/index/whoosh_engine.py", "vaultmem/index/tantivy_engine.py")
# Functions whose cumulative time explains a cold brief (file suffix(es), function name).
KEY_FUNCS = [
    ("vaultmem/vault.py", "open", "Vault.open (config, temp-file sweep)"),
    ("vaultmem/config.py", "load_config", "  config (cached: load_config)"),
    ("vaultmem/vault.py", "tidy", "  temp-file sweep (tidy)"),
    ("vaultmem/vault.py", "brief", "Vault.brief (all of it)"),
    ("vaultmem/index/store.py", "ready_to_answer", "  freshness check (ready_to_answer → refresh)"),
    ("vaultmem/index/store.py", "_unchanged", "    no-change check without the lock (_unchanged)"),
    ("vaultmem/index/store.py", "_summary", "    summary.bin load (all calls)"),
    ("vaultmem/index/store.py", "_manifest", "    manifest.json load + validate (all calls)"),
    ("vaultmem/walk.py", "take_ahead", "    waiting for the walk started ahead (take_ahead)"),
    ("vaultmem/walk.py", "scan", "    walk + stat of every file in the process (scan)"),
    ("vaultmem/walk.py", "stat_digest", "    digest of the stats in the process (stat_digest)"),
    ("vaultmem/index/store.py", "_save_manifest", "    manifest.json rewrite + fsync"),
    ("vaultmem/index/store.py", "_update_locked", "    compare + re-index (_update_locked)"),
    (ENGINE_FILES, "write", "    engine add + commit (write)"),
    ("vaultmem/index/store.py", "engine", "  open the index (engine)"),
    ("vaultmem/retrieve.py", "search", "  search + snippets (retrieve.search)"),
    (ENGINE_FILES, "search", "    engine query (engine.search)"),
    ("vaultmem/parse/note.py", "index_block_lines", "  MEMORY.md parse (index_block_lines)"),
    ("vaultmem/brief.py", "build_brief", "  assemble within budget (build_brief)"),
]


# The build's parts (file suffix(es), function name, label).
BUILD_PARTS = [
    ("vaultmem/parse/records.py", "records", "parse files (records)"),
    ("vaultmem/index/fields.py", "fields_of", "tokenise fields (fields_of)"),
    (ENGINE_FILES, "write", "engine add + commit (write)"),
    ("vaultmem/index/store.py", "_save_manifest", "manifest write"),
]


def _label(key: tuple) -> str:
    """A profiled function as ``package/…/file.py:line(name)``."""
    file, line, func = key
    if file == "~":
        return func
    parts = Path(file).parts
    for anchor in ("vaultmem", "whoosh", "tantivy", "json", "ruamel", "git", "typer", "click", "rich"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            return "/".join(parts[i:]) + f":{line}({func})"
    return f"{Path(file).name}:{line}({func})"


def _cumulative(raw: dict, suffix: str | tuple[str, ...], func: str) -> float:
    """The cumulative seconds of every profiled function ``func`` of a file ending in ``suffix``."""
    return sum(v[3] for k, v in raw.items() if k[0].replace(os.sep, "/").endswith(suffix) and k[2] == func)


def profile_summary(stats: pstats.Stats, runs: int = 1, top: int = 8) -> dict:
    """A profile of ``runs`` calls, per call: the total, the KEY_FUNCS that ran (cumulative)
    and the ``top`` functions by self time."""
    raw = stats.stats  # type: ignore[attr-defined]
    total = max((ct for (_cc, _nc, _tt, ct, _callers) in raw.values()), default=0.0)
    keyed = []
    for suffix, func, label in KEY_FUNCS:
        cum = _cumulative(raw, suffix, func)
        if cum:
            keyed.append((label, cum / runs))
    selfs = sorted(((v[2], k) for k, v in raw.items()), reverse=True)[:top]
    return {"total": total / runs, "key": keyed,
            "self": [(_label(k), tt / runs) for tt, k in selfs]}


def profile_cold_brief(root: Path, workdir: Path) -> dict:
    """A cold ``vaultmem brief`` (the first task) under cProfile (:func:`profile_summary`),
    with its imports under ``-X importtime`` (``imports``)."""
    args = brief_args(root, *BRIEF_TASKS[0])
    prof = workdir / f"brief-{root.name}.prof"
    run_ok([PY, "-m", "cProfile", "-o", str(prof), *args], "profiled brief")
    summary = profile_summary(pstats.Stats(str(prof)))
    _w, cp = run([PY, "-X", "importtime", *args])
    summary["imports"] = importtime_summary(cp.stderr)
    return summary


def importtime_summary(stderr: str, top: int = 10) -> dict:
    """Total import time and the costliest outermost imports (each with everything it
    pulled in): the outermost lines of ``-X importtime`` add up to the total."""
    outer = []
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)", line)
        if m and not m.group(3):
            outer.append((m.group(4), int(m.group(2)) / 1e6))
    total = sum(s for _n, s in outer)
    return {"total": total, "top": sorted(outer, key=lambda x: -x[1])[:top]}


def profile_build(root: Path, workdir: Path) -> dict:
    """``vaultmem index --rebuild`` under cProfile: :func:`profile_summary` with the
    cumulative time of each of BUILD_PARTS as its ``key``."""
    prof = workdir / f"build-{root.name}.prof"
    run_ok([PY, "-m", "cProfile", "-o", str(prof), "-m", "vaultmem", "--vault", str(root), "index", "--rebuild"],
           "profiled build", timeout=BUILD_TIMEOUT)
    stats = pstats.Stats(str(prof))
    summary = profile_summary(stats, top=10)
    raw = stats.stats  # type: ignore[attr-defined]
    summary["key"] = [(label, _cumulative(raw, suffix, func)) for suffix, func, label in BUILD_PARTS]
    return summary
