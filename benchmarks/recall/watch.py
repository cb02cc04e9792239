"""Watcher freshness: ``vaultmem watch`` as a process and a ``Watcher`` in a thread; the
time from a save (in place, and temp file + ``os.replace``) until a search finds it —
straight on the index, after 11 s of quiet, and through the public ``vault.search``."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from timing import PROJECT, child_env

from vaultmem import Vault
from vaultmem.index import Filters
from vaultmem.index.store import IndexStore
from vaultmem.retrieve import search as retrieve_search

from .cold import cold_brief
from .common import (FRESH_TIMEOUT, IDLE_TIMEOUT, IDLE_WAIT, PY, WATCH_READY_TIMEOUT, note_rels,
                     segment_count)


def _save(root: Path, rel: str, word: str, replace: bool) -> None:
    """``word`` added to the note ``rel``: written in place, or (``replace``) to a temp
    file renamed over it."""
    path = root / rel
    text = path.read_text(encoding="utf-8").rstrip("\n") + f"\n新鲜度 {word}\n"
    if replace:  # as many editors save: a temp file beside it, then rename over
        tmp = path.with_name(f".{path.name}.benchtmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def _until_found(vault: Vault, word: str, rel: str, timeout: float = FRESH_TIMEOUT,
                 via_vault: bool = False) -> float | None:
    """Seconds until a search for ``word`` returns ``rel`` (None on timeout); the clock
    starts when called, right after the save. By default the search goes straight to
    the index (``retrieve.search`` on an IndexStore), which never refreshes anything, so
    only the watcher can make the word findable; with ``via_vault`` it is the public
    ``vault.search``, which may index the change itself (read-your-writes)."""
    store = IndexStore(vault.root)
    t = time.perf_counter()
    try:
        while time.perf_counter() - t < timeout:
            hits = (vault.search(word, limit=3) if via_vault else retrieve_search(store, word, Filters(), 3))
            if any(h.doc.path == rel for h in hits):
                return time.perf_counter() - t
            time.sleep(0.005)
        return None
    finally:
        store.close()


def _freshness_runs(root: Path, vault: Vault, tag: str, saves: int, via_vault: bool = False) -> dict:
    """Seconds from each of ``saves`` saves (in place and ``os.replace`` in turn) until
    found (:func:`_until_found`), by kind of save, and the saves never found."""
    results = {"in_place": [], "replace": [], "timeouts": 0}
    rels = note_rels(root, saves, sum(map(ord, tag)) + 10 + 7 * via_vault, active=True)
    nonce = time.time_ns() % 10**9
    for i, rel in enumerate(rels):
        replace = i % 2 == 1
        word = f"fresh{tag}{i}{'v' if via_vault else ''}q{nonce}"
        _save(root, rel, word, replace)
        got = _until_found(vault, word, rel, via_vault=via_vault)
        if got is None:
            results["timeouts"] += 1
        else:
            results["replace" if replace else "in_place"].append(got)
        time.sleep(0.3)  # let the watcher go idle between saves
    return results


def _wait_ready(root: Path, vault: Vault, tag: str) -> float | None:
    """Seconds until a first save is found: the watcher is then indexing (None if never)."""
    rel = note_rels(root, 1, 99, active=True)[0]
    word = f"warmup{tag}q{time.time_ns() % 10**9}"
    _save(root, rel, word, False)
    return _until_found(vault, word, rel, timeout=WATCH_READY_TIMEOUT)


def bench_watch_process(root: Path, workdir: Path, saves: int = 10, brief_runs: int = 7) -> dict:
    """``vaultmem watch`` in its own process (as a user runs it); also times the cold
    brief while it is alive (commands then skip their own freshness check)."""
    logf = open(workdir / f"watch-{root.name}.log", "w")
    proc = subprocess.Popen([PY, "-m", "vaultmem", "--vault", str(root), "watch"], stdout=logf, stderr=logf,
                            cwd=str(PROJECT), env=child_env())
    out: dict = {}
    try:
        vault = Vault.open(root)
        deadline = time.time() + WATCH_READY_TIMEOUT  # it beats after its first full sync
        while not vault.watcher_alive() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        if not vault.watcher_alive():
            raise RuntimeError("vaultmem watch did not start")
        # First, before any save adds a segment: the same index as the no-watcher runs.
        time.sleep(2)  # let the new process settle
        out["brief_alive"] = cold_brief(root, brief_runs)
        out["ready_s"] = _wait_ready(root, vault, "p")
        out.update(_freshness_runs(root, vault, "p", saves))
        # End to end: the public vault.search right after a save, watcher running.
        out["via_vault"] = _freshness_runs(root, vault, "p", 4, via_vault=True)
        # A save after the watcher has been idle for its maintenance delay (10 s): it may
        # be merging segments then, in the loop that should index the save.
        segments = segment_count(root)
        time.sleep(IDLE_WAIT)
        rel = note_rels(root, 1, 7, active=True)[0]
        word = f"idle{time.time_ns() % 10**9}"
        _save(root, rel, word, False)
        out["idle_save"] = _until_found(vault, word, rel, timeout=IDLE_TIMEOUT)
        out["idle_segments_before"] = segments
        out["idle_segments_after"] = segment_count(root)
        vault.index.close()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C: it stops cleanly and removes its heartbeat
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        logf.close()
    return out


def bench_watch_thread(root: Path, saves: int = 10) -> dict:
    """A ``Watcher`` in a thread of this process: until ready, and the freshness of ``saves`` saves."""
    from vaultmem.adapters.watch import Watcher

    watcher = Watcher(Vault.open(root))
    th = threading.Thread(target=watcher.run, name="bench-watcher", daemon=True)
    th.start()
    out: dict = {}
    try:
        vault = Vault.open(root)
        deadline = time.time() + WATCH_READY_TIMEOUT
        while not vault.watcher_alive() and time.time() < deadline:
            time.sleep(0.05)
        out["ready_s"] = _wait_ready(root, vault, "t")
        out.update(_freshness_runs(root, vault, "t", saves))
        vault.index.close()
    finally:
        watcher.stop()
        th.join(timeout=15)
        watcher.vault.index.close()
    return out
