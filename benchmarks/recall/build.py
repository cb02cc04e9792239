"""The full build (``rebuild_index`` in a new process: time by step, peak RSS, index size)
and one-file updates (``refresh_index`` by path, by a full walk, and with no change)."""

from __future__ import annotations

import cProfile
import json
import pstats
import time
from pathlib import Path

from report import dir_bytes
from timing import PROJECT, samples

from vaultmem import Vault
from vaultmem.index.store import INDEX_DIR

from .common import BUILD_TIMEOUT, PY, note_rels, run_ok, segment_count
from .profiles import profile_summary

BUILD_CHILD = r"""
import json, resource, sys, time
def peak_kb():
    # VmHWM: this process's own peak RSS. (ru_maxrss of a spawned child also counts the
    # parent's RSS that it inherited before exec, so it overstates a small child.)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import importlib
name = sys.argv[2]  # the engine: VAULTMEM_INDEX_ENGINE is set to it too
t0 = time.perf_counter()
from vaultmem import Vault
import vaultmem, vaultmem.index.build as build, vaultmem.index.manifest as manifest, vaultmem.parse.records
mod = importlib.import_module(f"vaultmem.index.{name}_engine")
importlib.import_module({"whoosh": "whoosh.index"}.get(name, name))  # the engine's library
cls = {"whoosh": mod.__dict__.get("WhooshEngine"), "tantivy": mod.__dict__.get("TantivyEngine")}[name]
t1 = time.perf_counter()
rss_import = peak_kb()
T = {}
def timed(owner, name, key):  # wall-clock timers around vaultmem's steps (no profiler overhead)
    orig = getattr(owner, name)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return orig(*a, **k)
        finally:
            T[key] = T.get(key, 0.0) + time.perf_counter() - t
    setattr(owner, name, wrapper)
timed(build, "read_file", "read files + sha1")
timed(build, "parse_file", "parse (records: YAML, pages)")
timed(mod, "fields_of", "tokenise fields (fields_of)")
timed(cls, "write", "engine add + commit (write)")
timed(manifest.Manifests, "save", "manifest write")
r = Vault(sys.argv[1]).rebuild_index()
t2 = time.perf_counter()
T["engine add + commit (write)"] -= T.get("tokenise fields (fields_of)", 0.0)
print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1, "docs": r.docs, "files": len(r.new), "engine": r.engine,
                  "problems": r.problems[:3], "n_problems": len(r.problems), "steps": T,
                  "vaultmem_file": vaultmem.__file__,
                  "rss_import_kb": rss_import, "rss_peak_kb": peak_kb()}))
"""


def bench_build(root: Path, engine: str) -> dict:
    """The full build of ``root`` on ``engine`` in a new process: its times, steps, peak
    RSS, and the index it left (bytes, segments, manifest)."""
    wall, cp = run_ok([PY, "-c", BUILD_CHILD, str(root), engine], "build", timeout=BUILD_TIMEOUT)
    out = json.loads(cp.stdout.strip().splitlines()[-1])
    if not Path(out["vaultmem_file"]).resolve().is_relative_to(PROJECT):
        raise RuntimeError(f"the child imported {out['vaultmem_file']}, not the vaultmem in {PROJECT}")
    if out["engine"] != engine:
        raise RuntimeError(f"asked for a {engine} index, the build made a {out['engine']} one")
    index = root / INDEX_DIR
    generation = (index / "CURRENT").read_text().strip()
    out.update(wall_s=wall, index_bytes=dir_bytes(index), segments=segment_count(root),
               manifest_bytes=(index / generation / "manifest.json").stat().st_size)
    return out


def _edit(root: Path, rel: str, extra: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8").rstrip("\n")
    path.write_text(f"{text}\n{extra}\n", encoding="utf-8")


def _updates(vault: Vault, root: Path, reps: int, salt: int, words: str, by_path: bool) -> list[float]:
    """Seconds of ``reps`` refreshes that each find one note edited just before: told its
    path (``by_path``), or by a full walk."""
    out = []
    for i, rel in enumerate(note_rels(root, reps, salt)):
        _edit(root, rel, f"{words} {i}")
        t = time.perf_counter()
        rep = vault.refresh_index(paths=[rel]) if by_path else vault.refresh_index()
        out.append(time.perf_counter() - t)
        assert rep.modified == [rel], rep.to_dict()
    return out


def bench_incremental(root: Path, reps: int = 10) -> dict:
    """Seconds of a one-file update by path and by a full walk (``reps`` each), of a
    no-change refresh (5), the segments after, and a profile of five updates by path."""
    vault = Vault.open(root)
    vault.refresh_index()  # open everything; nothing should change
    by_path = _updates(vault, root, reps, 1, "增量修改 incremental edit", by_path=True)
    full_walk = _updates(vault, root, reps, 2, "全量检查 full walk edit", by_path=False)

    def unchanged() -> None:
        assert not vault.refresh_index().changed

    noop = samples(unchanged, rounds=5, warm=0)
    segments = vault.index.engine().segment_count()
    # where a one-file update spends its time
    prof = cProfile.Profile()
    rels = note_rels(root, 5, 3)
    for i, rel in enumerate(rels):
        _edit(root, rel, f"profiled edit {i}")
        prof.enable()
        vault.refresh_index(paths=[rel])
        prof.disable()
    vault.index.close()
    return {"by_path": by_path, "full_walk": full_walk, "noop": noop, "segments_after": segments,
            "profile": profile_summary(pstats.Stats(prof), runs=len(rels))}
