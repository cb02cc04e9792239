"""The write transaction beyond kills of the CLI: threads of one process, a dead writer
whose files a human edited before the next command, and a failure after git committed."""

import subprocess
import sys
import threading

from conftest import git

from vaultmem import gitstore, transaction
from vaultmem.vault import Vault

# A writer that dies at a chosen moment of its change: after its commit, or just before it.
DIES = """
import os, sys
from vaultmem import transaction
from vaultmem.vault import Vault
real = transaction.gitstore.commit
def commit(*args, **kwargs):
    if sys.argv[3] == "after":
        real(*args, **kwargs)
    os._exit(9)
transaction.gitstore.commit = commit
vault = Vault.open(sys.argv[1])
vault.notes.remember(sys.argv[2], vault.actor(), "fact")
"""


def _dies(vault, text: str, when: str) -> None:
    r = subprocess.run([sys.executable, "-c", DIES, str(vault.root), text, when], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 9, r.stderr
    assert (vault.root / ".vaultmem" / "local" / "txn.json").exists()  # it died mid-change


def test_threads_of_one_process_take_turns(vault):
    errors = []

    def remember(n):
        try:
            vault.notes.remember(f"service {n} listens on port 80{n}", vault.actor(), "fact")
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(repr(exc))

    threads = [threading.Thread(target=remember, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    index = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert all(f"service {n} listens" in index.lower() for n in range(6)), index
    assert git(vault.root, "status", "--porcelain") == ""
    assert len(git(vault.root, "log", "--format=%s", "--grep", "^remember:").splitlines()) == 6
    with vault.writer.locked():  # the lock is still taken after them: not left "held" by a thread
        pass


def test_a_dead_writers_committed_change_stays_though_a_human_edited_it(vault):
    _dies(vault, "redis runs on 6379", "after")
    note = vault.root / "memories" / "redis-runs-on-6379.md"
    with note.open("a", encoding="utf-8") as f:
        f.write("- a human's line, saved by Obsidian\n")
    Vault.open(vault.root).search("redis")  # any command settles the journal
    assert note.read_text(encoding="utf-8").endswith("- a human's line, saved by Obsidian\n")
    assert "redis-runs-on-6379" in (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert git(vault.root, "status", "--porcelain").split() == ["M", "memories/redis-runs-on-6379.md"]
    assert not (vault.root / ".vaultmem" / "local" / "txn.json").exists()


def test_a_dead_writers_uncommitted_change_is_undone_but_a_humans_edit_is_left(vault):
    index_before = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    _dies(vault, "kafka runs on 9092", "before")
    note = vault.root / "memories" / "kafka-runs-on-9092.md"
    with note.open("a", encoding="utf-8") as f:  # the human edits the half-made note
        f.write("- a human's line\n")
    reopened = Vault.open(vault.root)
    assert (vault.root / "MEMORY.md").read_text(encoding="utf-8") == index_before  # untouched: undone
    assert note.read_text(encoding="utf-8").endswith("- a human's line\n")  # edited: left for the human
    assert reopened.writer.settled[-1].left == ["memories/kafka-runs-on-9092.md"]
    assert git(vault.root, "diff", "--cached", "--name-only") == ""


def test_a_failure_after_git_committed_keeps_the_change(vault, monkeypatch):
    real = gitstore.commit

    def commits_then_fails(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt  # e.g. Ctrl-C in the instant after the commit

    monkeypatch.setattr(transaction.gitstore, "commit", commits_then_fails)
    try:
        vault.notes.remember("mysql runs on 3306", vault.actor(), "fact")
    except KeyboardInterrupt:
        pass
    assert (vault.root / "memories" / "mysql-runs-on-3306.md").exists()
    assert git(vault.root, "status", "--porcelain") == ""  # files as HEAD holds them, nothing undone
    assert not (vault.root / ".vaultmem" / "local" / "txn.json").exists()
