"""One size: the vault generated, the peers (FTS5, scan) measured once on it, then each
engine on its own copy — its build, searches, updates, cold processes, watchers and
profiles (:func:`bench_engine`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from report import code_version
from timing import log
from vaults import make_vault

from vaultmem.index.store import INDEX_DIR

from .build import bench_build, bench_incremental
from .cold import bench_cold
from .common import BUILD_TIMEOUT, using_engine
from .peers import Fts5, bench_scan
from .profiles import profile_build, profile_cold_brief
from .warm import bench_fts5_warm, bench_warm
from .watch import bench_watch_process, bench_watch_thread


def bench_engine(name: str, root: Path, workdir: Path, fts: Fts5 | None, probe: bool, profile_brief: bool,
                 profile_build_here: bool, commit: str | None = None) -> dict:
    """vaultmem's own measurements on one engine; the caller has set it (``using_engine``)
    and made ``root`` a fresh copy of the vault with no index yet. ``commit`` labels the
    measured code (else its git commit: :func:`report.code_version`)."""

    def say(msg: str) -> None:
        log(f"{root.name}: {msg}")

    e: dict = {"engine": name, "code": code_version(commit), "load_avg_start": os.getloadavg()}
    say("full build in a new process")
    try:
        e["build"] = bench_build(root, name)
    except subprocess.TimeoutExpired:
        e["build"] = {"cut": f"the build took more than {BUILD_TIMEOUT:.0f} s and was stopped"}
        say("build cut")
        return e
    say(f"build {e['build']['build_s']:.1f}s, {e['build']['docs']} docs; warm search")
    e["warm"] = bench_warm(root, fts)
    if not probe:
        say("incremental updates")
        e["incremental"] = bench_incremental(root)
    say("cold processes")
    e["cold"] = bench_cold(root)
    if not probe:
        if profile_brief:
            say("profiling the cold brief")
            e["brief_profile"] = profile_cold_brief(root, workdir)
        say("watcher (process)")
        e["watch_process"] = bench_watch_process(root, workdir)
        say("watcher (thread)")
        e["watch_thread"] = bench_watch_thread(root)
        if profile_build_here:
            say("profiling the build")
            e["build_profile"] = profile_build(root, workdir)
    e["load_avg"] = os.getloadavg()
    say("done")
    return e


def bench_size(res: dict, workdir: Path, engines: list[str], probe: bool = False, profile_brief: bool = False,
               profile_build_here: bool = False, keep: bool = False, checkpoint=lambda: None,
               commit: str | None = None) -> dict:
    """Fill ``res`` (``{"n": N}``) with the measurements at N notes: the baselines once
    (not for a probe size), then each engine on its own copy of the vault; ``checkpoint``
    is called after each step so a cut run keeps what it measured."""
    n = res["n"]
    pristine = workdir / f"vault-{n}"
    if pristine.exists():
        shutil.rmtree(pristine)
    res.update(probe=probe, load_avg_start=os.getloadavg(), engines={})
    log(f"{n}: generating the vault")
    res["vault"] = make_vault(pristine, n)
    fts = None
    if not probe:
        log(f"{n}: {res['vault']['seconds']:.1f}s; FTS5 build and warm search")
        fts = Fts5(pristine)
        res["fts5"] = {"build_s": fts.build_s, "parse_s": fts.parse_s, "insert_s": fts.insert_s, "docs": fts.docs,
                       "bytes": fts.bytes, **bench_fts5_warm(fts)}
        log(f"{n}: FTS5 {fts.build_s:.1f}s; brute-force scan")
        res["scan"] = bench_scan(pristine)
        checkpoint()
    index_dir = pristine / INDEX_DIR
    for name in engines:
        root = workdir / f"vault-{n}-{name}"
        if root.exists():
            shutil.rmtree(root)
        # a copy of the vault as generated, without any index: each engine builds its own
        shutil.copytree(pristine, root, symlinks=True,
                        ignore=lambda d, names: [index_dir.name] if Path(d) == index_dir.parent else [])
        with using_engine(name):
            res["engines"][name] = bench_engine(name, root, workdir, fts, probe, profile_brief, profile_build_here,
                                                commit)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
        checkpoint()
    if fts is not None:
        fts.db.close()
    if not keep:
        shutil.rmtree(pristine, ignore_errors=True)
    res["load_avg"] = os.getloadavg()
    return res
