"""A long-lived process (the MCP server) answers as soon as a write's commit is done.

tantivy may merge segments after a commit, and the writer waits for that merge before it
is released: at 10,000 notes about every eighth one-file update waited ~0.2 s for it.
With ``Vault.stays_open()`` the merge finishes in a thread that holds the index lock
until it ends. These tests hold the merge open themselves (the engine's real merge step
runs after a gate the test opens) and look at what a user would see: the write's answer
and the search after it come at once; another process that wants to write the index is
told it is busy (as while any process updates it) and writes once the merge has ended;
a server killed in the middle of its merge leaves an index the next process writes and
searches. Real tantivy indexes, real processes; nothing waits a fixed time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from conftest import SAFETY_NET

from vaultmem import Vault
from vaultmem.index import Filters
from vaultmem.index.tantivy_engine import TantivyEngine
from vaultmem.retrieve import search

NOTE = "---\nname: {w}\ntype: fact\nscope: global\n---\nThe {w} note says {w}.\n"


@pytest.fixture
def tantivy_vault(tmp_path, monkeypatch) -> Vault:
    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", "tantivy")
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    note(v, "alder")
    v.refresh_index()
    return v


def note(v: Vault, word: str) -> str:
    rel = f"memories/{word}.md"
    (v.root / rel).write_text(NOTE.format(w=word), encoding="utf-8")
    return rel


def found(v: Vault, word: str) -> list[str]:
    return [h.doc.id for h in search(v.index, word, Filters(), 5)]


def other_process_refresh(v: Vault, rel: str) -> dict:
    """Another process's index update of ``rel`` that does not wait for the lock."""
    code = ("import json, sys; from vaultmem.index.store import IndexStore; "
            "r = IndexStore(sys.argv[1]).refresh(paths=[sys.argv[2]], wait=0); "
            "print(json.dumps({'skipped': r.skipped, 'new': r.new}))")
    env = {k: x for k, x in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_INDEX_ENGINE"] = "tantivy"
    out = subprocess.run([sys.executable, "-c", code, str(v.root), rel], capture_output=True, text=True,
                         env=env, timeout=SAFETY_NET)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def held_merges(monkeypatch):
    """(gate, merging): a write's merge step, when left to its caller, starts (``merging``
    is set) and runs only once the test sets ``gate``."""
    gate, merging = threading.Event(), threading.Event()
    write = TantivyEngine.write

    def held_merge(self, add, delete_paths, prepared=None, later=None):
        write(self, add, delete_paths, prepared, later)
        if later is not None:  # the real merge step runs once the test opens the gate
            later.insert(0, lambda: (merging.set(), gate.wait(SAFETY_NET)))

    monkeypatch.setattr(TantivyEngine, "write", held_merge)
    yield gate, merging
    gate.set()


def test_a_write_answers_before_its_merge_ends_and_the_index_stays_locked_until_it_does(tantivy_vault,
                                                                                        held_merges):
    v = tantivy_vault
    gate, merging = held_merges
    v.stays_open()
    try:
        birch = note(v, "birch")
        report = v.index.refresh(paths=[birch])  # returns while the merge is held open
        assert report.new == [birch] and merging.wait(SAFETY_NET) and not gate.is_set()
        assert found(v, "birch") == [birch]  # the commit is searchable at once
        again = v.index.refresh(paths=[birch], wait=0)  # nothing to do: answered without the lock
        assert again.skipped is None and again.unchanged == 1 and not again.changed

        cedar = note(v, "cedar")
        assert other_process_refresh(v, cedar) == {"skipped": "another process is updating the index", "new": []}
        gate.set()
        v.index.merged()
        assert other_process_refresh(v, cedar) == {"skipped": None, "new": [cedar]}
        assert found(v, "cedar") == [cedar] and found(v, "birch") == [birch] and found(v, "alder")
    finally:
        gate.set()
        v.close()


def test_the_journal_s_index_in_a_long_lived_process_merges_after_answering_too(tantivy_vault, held_merges,
                                                                                 tmp_path):
    v = tantivy_vault
    gate, merging = held_merges
    v.stays_open()
    v.journal_index  # noqa: B018 - built (an empty journal)
    said = {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": "2026-12-01T09:00:00Z",
            "message": {"role": "user", "content": "The juniper hedge needs water every Friday."}}
    (tmp_path / "s1.jsonl").write_text(json.dumps(said) + "\n", encoding="utf-8")
    v.journal.add(tmp_path / "s1.jsonl", v.actor(None))
    try:
        store = v.journal_index  # indexes the new turn, answering while its merge is held
        assert merging.wait(SAFETY_NET) and not gate.is_set()
        assert [h.doc.kind for h in search(store, "juniper", Filters(kinds=("journal",)), 5)] == ["journal"]
    finally:
        gate.set()
        v.close()


def test_a_merge_that_fails_after_answering_is_logged_and_the_index_lock_is_released(tantivy_vault, monkeypatch,
                                                                                     caplog):
    """The commit stands; the failure is a warning in the log, the lock is let go and the
    next write — another process's — goes through."""
    v = tantivy_vault
    write = TantivyEngine.write

    def failing_merge(self, add, delete_paths, prepared=None, later=None):
        write(self, add, delete_paths, prepared, later)
        if later is not None:
            later.insert(0, lambda: (_ for _ in ()).throw(OSError("no space left for the merged segment")))

    monkeypatch.setattr(TantivyEngine, "write", failing_merge)
    v.stays_open()
    try:
        with caplog.at_level("WARNING", logger="vaultmem.index"):
            birch = note(v, "birch")
            assert v.index.refresh(paths=[birch]).new == [birch]
            v.index.merged()
        assert "merging the index's segments failed: no space left for the merged segment" in caplog.text
        cedar = note(v, "cedar")
        assert other_process_refresh(v, cedar) == {"skipped": None, "new": [cedar]}
        assert found(v, "birch") == [birch] and found(v, "cedar") == [cedar]
    finally:
        v.close()


def test_without_stays_open_a_write_waits_for_its_merge(tantivy_vault, monkeypatch):
    """A short-lived process (the CLI, a cold hook) keeps waiting: it would otherwise end
    in the middle of the merge."""
    v = tantivy_vault
    steps = []
    write = TantivyEngine.write

    def recorded(self, add, delete_paths, prepared=None, later=None):
        steps.append(later)
        write(self, add, delete_paths, prepared, later)

    monkeypatch.setattr(TantivyEngine, "write", recorded)
    v.index.refresh(paths=[note(v, "birch")])
    assert steps == [None]
    assert other_process_refresh(v, note(v, "cedar"))["skipped"] is None


CHILD = textwrap.dedent("""
    import sys, threading
    from vaultmem import Vault
    from vaultmem.index.tantivy_engine import TantivyEngine

    write = TantivyEngine.write
    def held(self, add, delete_paths, prepared=None, later=None):
        write(self, add, delete_paths, prepared, later)
        if later is not None:
            later.insert(0, threading.Event().wait)  # a merge that never ends

    TantivyEngine.write = held
    v = Vault(sys.argv[1])
    v.stays_open()
    v.index.refresh(paths=[sys.argv[2]])
    print("committed", flush=True)
    sys.stdin.read()
""")


def test_a_server_killed_in_the_middle_of_its_merge_leaves_an_index_the_next_process_writes(tantivy_vault):
    v = tantivy_vault
    birch = note(v, "birch")
    v.index.close()
    env = {k: x for k, x in os.environ.items() if not k.startswith("VAULTMEM_")}
    env["VAULTMEM_INDEX_ENGINE"] = "tantivy"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(v.root), birch], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "committed"
        cedar = note(v, "cedar")
        assert other_process_refresh(v, cedar)["skipped"]  # its merge holds the lock
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(SAFETY_NET)
    assert other_process_refresh(v, cedar) == {"skipped": None, "new": [cedar]}
    fresh = Vault(v.root)
    try:
        assert [found(fresh, w) for w in ("alder", "birch", "cedar")] == [
            ["memories/alder.md"], [birch], [cedar]]
        assert not fresh.index.refresh().changed  # the manifest holds what the engine holds
    finally:
        fresh.index.close()
