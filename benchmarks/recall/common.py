"""What the recall scenarios share: child processes that must succeed (run and timed by
the harness's :func:`timing.run_kept`), the index engine in use, and notes picked
reproducibly."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
from pathlib import Path

from timing import run_kept as run

from vaultmem.index.store import ENV_ENGINE, IndexStore

PY = sys.executable
ENGINE_LABEL = {"whoosh": "Whoosh", "tantivy": "tantivy"}

# Bounds (seconds) so that a run cannot hang.
BUILD_TIMEOUT = 900.0  # the 50k build: cut beyond 15 minutes
FRESH_TIMEOUT = 10.0  # one save → searchable
WATCH_READY_TIMEOUT = 120.0
IDLE_WAIT = 11.0  # the watcher's idle_maintenance is 10 s
IDLE_TIMEOUT = 300.0
SCAN_BUDGET = 60.0  # brute-force scan: stop adding queries after this much time

def run_ok(cmd: list[str], what: str, **kw) -> tuple[float, subprocess.CompletedProcess]:
    """:func:`run`, for a command that must succeed: one that fails raises RuntimeError
    with ``what`` and the end of its stderr."""
    wall, cp = run(cmd, **kw)
    if cp.returncode != 0:
        raise RuntimeError(f"{what} failed: {cp.stderr[-2000:]}")
    return wall, cp


def brief_args(root: Path, role: str, task: str) -> list[str]:
    """The arguments of Python that brief ``role`` on ``task`` in ``root``."""
    return ["-m", "vaultmem", "--vault", str(root), "brief", role, "--task", task]


@contextlib.contextmanager
def using_engine(name: str):
    """Within: every IndexStore (so every Vault's index) made in this process, and every
    child process (``child_env`` passes the variable on), uses the engine ``name``."""
    old = os.environ.get(ENV_ENGINE)
    os.environ[ENV_ENGINE] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV_ENGINE, None)
        else:
            os.environ[ENV_ENGINE] = old


def segment_count(root: Path) -> int:
    """The segments of ``root``'s index."""
    store = IndexStore(root)
    try:
        return store.engine().segment_count()
    finally:
        store.close()


def note_rels(root: Path, k: int, salt: int, active: bool = False) -> list[str]:
    """``k`` notes picked at random (reproducibly); with ``active``, only notes that a
    default search may return (not superseded)."""
    names = sorted(x for x in os.listdir(root / "memories") if x.endswith(".md"))
    r = random.Random(salt)
    out: list[str] = []
    for x in r.sample(names, min(len(names), k * 3 if active else k)):
        if active and "\nstatus: active\n" not in (root / "memories" / x).read_text(encoding="utf-8"):
            continue
        out.append(f"memories/{x}")
    return out[:k]
