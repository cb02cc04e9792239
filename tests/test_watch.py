"""The watcher with a real watchdog observer: every kind of save is picked up.

Nothing here depends on how fast events travel: a test waits until the watcher has
heard what it needs (its pending changes, its watches, its heartbeat, its report), and
the in-process watcher indexes only when the test calls ``step``."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import SAFETY_NET, Lines, wait_until

from vaultmem.index import Filters
from vaultmem.index.store import IndexStore
from vaultmem.retrieve import search
from vaultmem.adapters.watch import Watcher

pytestmark = pytest.mark.usefixtures("both_engines")  # every test on Whoosh and on tantivy


def found(vault, word):
    return [h.doc.id for h in search(vault.index, word, Filters(), limit=10)]


def sync_until(watcher, vault, word, expect=True, timeout=SAFETY_NET):
    """Let the watcher work until ``word`` is (or is no longer) found; ``expect`` may
    also be the exact list of ids expected. (``timeout``: a safety net only.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        watcher.step(timeout=0.2)
        got = found(vault, word)
        if (got == expect) if isinstance(expect, list) else (bool(got) == expect):
            return True
    return False


def heard(watcher, *rels):
    """Wait until the watcher has heard of changes to all of ``rels`` (they wait in its
    pending set: only ``step`` indexes them)."""

    def pending():
        with watcher._cond:
            return set(rels) <= watcher._pending

    wait_until(pending, what=f"the watcher to hear of {rels}")
    with watcher._cond:
        return set(watcher._pending)


def save_whole(path, text):
    """Save as editors that write a temp file and rename it do: one event, whole content."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.fixture
def watcher(vault):
    reports = []
    w = Watcher(vault, debounce=0.1, max_delay=0.5, on_sync=reports.append)
    w.reports = reports
    w.start()
    yield w
    w.stop()


NOTE = "---\nname: {w}\ntype: fact\n---\n{w} is a fact\n"


def test_in_place_save_is_picked_up(vault, watcher):
    path = vault.root / "memories" / "a.md"
    path.write_text(NOTE.format(w="alphaword"))
    assert sync_until(watcher, vault, "alphaword")
    with open(path, "w") as fh:  # truncate and rewrite in place
        fh.write(NOTE.format(w="betaword"))
    assert sync_until(watcher, vault, "betaword") and not found(vault, "alphaword")


def test_temp_file_and_replace_save_is_picked_up(vault, watcher):
    tmp = vault.root / "memories" / ".a.md.tmp123"
    tmp.write_text(NOTE.format(w="gammaword"))
    os.replace(tmp, vault.root / "memories" / "a.md")
    assert sync_until(watcher, vault, "gammaword")


def test_vim_style_rename_save_is_picked_up(vault, watcher):
    path = vault.root / "memories" / "v.md"
    path.write_text(NOTE.format(w="deltaword"))
    assert sync_until(watcher, vault, "deltaword")
    backup = vault.root / "memories" / "v.md~"
    os.rename(path, backup)  # vim: move the original away, write a new file, drop the backup
    path.write_text(NOTE.format(w="epsilonword"))
    backup.unlink()
    assert sync_until(watcher, vault, "epsilonword") and not found(vault, "deltaword")


def test_deleted_and_moved_files(vault, watcher):
    (vault.root / "memories" / "m.md").write_text(NOTE.format(w="zetaword"))
    assert sync_until(watcher, vault, "zetaword")
    os.rename(vault.root / "memories" / "m.md", vault.root / "wiki" / "m.md")
    assert sync_until(watcher, vault, "zetaword", expect=["wiki/m.md"])
    (vault.root / "wiki" / "m.md").unlink()
    assert sync_until(watcher, vault, "zetaword", expect=False)


def test_a_burst_is_debounced_into_few_syncs(vault, watcher):
    before = watcher.syncs
    names = [f"memories/b{n}.md" for n in range(30)]
    for n, rel in enumerate(names):
        save_whole(vault.root / rel, NOTE.format(w=f"burst{n}"))  # one event per file
    # every event of the burst has arrived before the watcher may index (only step does):
    # however slowly the observer thread runs, the burst is one batch
    heard(watcher, *names)
    assert sync_until(watcher, vault, "burst29")
    assert 1 <= watcher.syncs - before <= 4
    assert all(found(vault, f"burst{n}") for n in range(30))
    with watcher._cond:
        assert not watcher._pending and not watcher._full  # nothing left over for more syncs


def test_git_and_vaultmem_folders_are_ignored(vault, watcher):
    assert not {".git", ".vaultmem"} & set(watcher._watched)  # no watches at all there
    before = watcher.syncs
    (vault.root / ".git" / "x.md").write_text("ignored")
    (vault.root / ".vaultmem" / "x.md").write_text("ignored")
    (vault.root / "memories" / ".hidden.md").write_text("ignored")
    # a file that is not ignored, saved after them in the same folder: once the watcher
    # has heard of it, it has heard of the hidden file too (one watch delivers events in order)
    (vault.root / "memories" / "seen.md").write_text(NOTE.format(w="seenword"))
    assert heard(watcher, "memories/seen.md") == {"memories/seen.md"}
    assert sync_until(watcher, vault, "seenword")
    assert watcher.syncs - before >= 1
    assert all(r.new + r.modified in (["memories/seen.md"], []) for r in watcher.reports[-(watcher.syncs - before):])
    assert not found(vault, "ignored")


def test_queue_overflow_triggers_a_full_reconcile(vault, watcher):
    # Events lost in an overflow never arrive: a file changes without an event we see...
    watcher._observer.stop()
    watcher._observer.join()
    (vault.root / "memories" / "lost.md").write_text(NOTE.format(w="lostword"))
    # ...and watchdog reports the overflow the only way it does: a warning in its log.
    logging.getLogger("watchdog.observers.inotify_c").warning("Inotify queue overflowed; events were lost")
    assert watcher.step(timeout=0.0)  # a reconcile is due: step waits for it whatever the timeout
    assert found(vault, "lostword") == ["memories/lost.md"]
    assert watcher.reports[-1].new == ["memories/lost.md"]


def monitored_vault(tmp_path):
    """A vault's folders as the change monitor needs them: (the root, its .vaultmem/local)."""
    root = tmp_path / "vault"
    (root / "memories").mkdir(parents=True)
    local = root / ".vaultmem" / "local"
    local.mkdir(parents=True)
    return root, local


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the change monitor follows inotify")
def test_events_lost_make_the_change_monitor_walk_and_renew_its_markers(tmp_path):
    """watchdog says events were lost (its EventsLostEvent, once it has made its watches
    again after a kernel queue overflow): a marker's may be among them. The question
    waiting for one walks at once (it would otherwise wait out its whole wait), the
    markers are made again under new names, and the next questions are answered from
    events again."""
    from watchdog.events import EventsLostEvent

    from vaultmem.adapters.watch import ChangeMonitor

    root, local = monitored_vault(tmp_path)
    monitor = ChangeMonitor(root, wait=600)
    assert monitor.start()
    try:
        assert monitor.changed() is None and monitor.changed() == []
        before = sorted(p.name for p in local.iterdir())
        answers = []
        # a question whose write's event will never count: lost (the markers are renewed)
        with monitor._cond:  # (held: its event cannot be counted before the loss is reported)
            question = monitor.ask()
            waiting = threading.Thread(target=lambda: answers.append(monitor.changed(question)))
            waiting.start()
            monitor._on_event(EventsLostEvent(str(root), is_directory=True))  # as watchdog's dispatcher hands it
        waiting.join(timeout=120)
        assert not waiting.is_alive() and answers == [None]
        after = sorted(p.name for p in local.iterdir())
        assert len(after) == 2 and not set(after) & set(before)
        (root / "memories" / "a.md").write_text("x\n", encoding="utf-8")  # (that answer was the walk)
        assert monitor.changed() == ["memories/a.md"]
        assert monitor.changed() == []
    finally:
        monitor.stop()
    assert list(local.iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the change monitor follows inotify")
def test_a_marker_whose_event_does_not_come_is_made_again(tmp_path):
    """The folder of the markers moved aside and made again (or a marker renamed): the
    writes raise events under another path, which count for nothing. Each marker's next
    question waits out its wait and walks, and the marker is made again where it belongs:
    the questions after it are answered from events, not each one after a wait."""
    from vaultmem.adapters.watch import ChangeMonitor

    root, local = monitored_vault(tmp_path)
    monitor = ChangeMonitor(root, wait=60)  # (a busy machine's event comes late, never a minute late)
    assert monitor.start()
    try:
        assert monitor.changed() is None and monitor.changed() == []
        os.rename(local, root / ".vaultmem" / "local.old")
        local.mkdir()
        monitor.wait = 0.3  # these two events never come: each question waits its wait out
        assert [monitor.changed(), monitor.changed()] == [None, None]  # each marker's question: a walk
        monitor.wait = 60
        assert len(list(local.iterdir())) == 2  # both made again, in the folder
        for n in range(6):
            (root / "memories" / f"n{n}.md").write_text("x\n", encoding="utf-8")
            assert monitor.changed() == [f"memories/n{n}.md"]
    finally:
        monitor.stop()
    assert list(local.iterdir()) == []


def test_heartbeat_lets_other_commands_trust_the_watcher(vault, watcher):
    assert vault.watcher_alive()
    watcher.stop()
    assert not vault.watcher_alive()


def test_the_heartbeat_says_pending_while_a_change_waits_whoever_writes_it(vault, watcher):
    save_whole(vault.root / "memories" / "h.md", NOTE.format(w="heartword"))
    heard(watcher, "memories/h.md")
    watcher._beat()  # the main thread's periodic beat, while the change waits to be indexed
    assert vault.watcher_alive() and not vault.watcher_alive(idle=True)
    assert sync_until(watcher, vault, "heartword")
    assert vault.watcher_alive(idle=True)


def test_both_threads_may_write_the_heartbeat_at_once(vault, watcher):
    # the observer thread beats when a change comes, the main thread after a sync
    errors = []

    def beat():
        try:
            for _ in range(200):
                watcher._beat()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=beat) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and vault.watcher_alive(idle=True)


def _ignore_sigint() -> None:  # as a non-interactive shell starts a background job (`vaultmem watch &`)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def watch_command(vault, *args, **popen):
    proc = subprocess.Popen([sys.executable, *args, "--vault", str(vault.root), "watch", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    return proc, Lines(proc.stdout), Lines(proc.stderr)


def wait_for_heartbeat(vault, proc, err):
    wait_until(lambda: vault.watcher_alive() or proc.poll() is not None, what="the watcher's heartbeat")
    assert vault.watcher_alive(), err.text()


def ended(proc, out, err):
    """(reports, stderr) once the process has ended."""
    try:
        proc.wait(timeout=SAFETY_NET)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    return [json.loads(line) for line in out.text().splitlines() if line.strip()], err.text()  # JSON lines


@pytest.mark.parametrize("sig, started_ignoring_sigint", [(signal.SIGINT, False), (signal.SIGTERM, False),
                                                         (signal.SIGINT, True)],
                         ids=["sigint", "sigterm", "sigint-ignored-at-start"])
def test_ctrl_c_stops_the_watch_command_cleanly(vault, sig, started_ignoring_sigint):
    proc, out, err = watch_command(vault, "-m", "vaultmem",
                                   preexec_fn=_ignore_sigint if started_ignoring_sigint else None)
    try:
        wait_for_heartbeat(vault, proc, err)
        save_whole(vault.root / "memories" / "w.md", NOTE.format(w="watchedword"))
        # The watcher's own report says it indexed the file. This process waits for that
        # line and never searches meanwhile: the index is the watcher's alone to update.
        out.wait_for(lambda line: "memories/w.md" in line)
    except AssertionError as exc:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{exc}\nexit status {proc.returncode}; stderr: {err.text()}") from None
    finally:
        proc.send_signal(sig)
    reports, errors = ended(proc, out, err)
    assert proc.returncode == 0, errors
    assert "Traceback" not in errors
    assert any(r["new"] == ["memories/w.md"] for r in reports)
    assert found(vault, "watchedword") == ["memories/w.md"]
    assert not vault.watcher_alive()


SLOW_SYNC = r"""
import sys, time
from pathlib import Path
from vaultmem.vault import Vault
syncing, go = Path(sys.argv[1]), Path(sys.argv[2])
real = Vault.refresh_index
def refresh_index(self, paths=None, **kw):
    if paths:  # a change the watcher heard, not its first reconcile
        syncing.write_text("")
        while not go.exists():  # the stop signal comes now, in the middle of the sync
            time.sleep(0.01)
    return real(self, paths=paths, **kw)
Vault.refresh_index = refresh_index
sys.argv = ["vaultmem", *sys.argv[3:]]
from vaultmem.__main__ import main
main()
"""


def _ignores(pid: int, sig: int) -> bool:
    """Whether the process ignores ``sig`` now (/proc/PID/status: SigIgn, a hex bit mask)."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
        mask = next(line.split()[1] for line in fh if line.startswith("SigIgn:"))
    return bool(int(mask, 16) >> (sig - 1) & 1)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_a_stop_signal_in_the_middle_of_a_sync_lets_the_sync_finish(vault, tmp_path):
    """A sync cut short after the engine's commit but before the manifest records it
    would index the file twice at the next refresh; so a stop waits for the sync."""
    syncing, go = tmp_path / "syncing", tmp_path / "go"
    proc, out, err = watch_command(vault, "-c", SLOW_SYNC, syncing, go)
    try:
        wait_for_heartbeat(vault, proc, err)
        save_whole(vault.root / "memories" / "w.md", NOTE.format(w="watchedword"))
        wait_until(lambda: syncing.exists() or proc.poll() is not None, what="the watcher to begin indexing w.md")
        assert proc.poll() is None, "the watcher ended"
        proc.send_signal(signal.SIGTERM)
        # the stop handler has run (it ignores further signals) while the sync is under way
        wait_until(lambda: _ignores(proc.pid, signal.SIGTERM), what="the signal to be handled")
        go.write_text("")
    except AssertionError as exc:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{exc}\nexit status {proc.returncode}; stderr: {err.text()}; out: {out.text()}") from None
    finally:
        if proc.poll() is None and not go.exists():
            proc.kill()
    reports, errors = ended(proc, out, err)
    assert proc.returncode == 0 and "Traceback" not in errors, errors
    assert any(r["new"] == ["memories/w.md"] for r in reports)  # the sync finished, and said so
    store = IndexStore(vault.root)
    assert not store.refresh().changed  # the manifest knows what the engine holds
    assert [h.doc.id for h in search(store, "watchedword", Filters(), 10)] == ["memories/w.md"]  # once
    store.close()
    assert not vault.watcher_alive()


def test_a_new_top_level_folder_is_watched_too(vault, watcher):
    (vault.root / "projects").mkdir()
    wait_until(lambda: "projects" in watcher._watched, what="a watch on the new folder")
    (vault.root / "projects" / "p.md").write_text(NOTE.format(w="projectword"))
    heard(watcher, "projects/p.md")  # through the new watch: not only by the reconcile the folder asked for
    assert sync_until(watcher, vault, "projectword")


def test_the_watcher_and_the_change_monitor_name_an_event_s_path_alike(tmp_path):
    """One reading of an event's path for both (the watcher, the MCP server's
    ChangeMonitor): vault-relative with '/', bytes as str; None for a path outside the
    vault, inside a hidden or ignored folder, or no path at all."""
    from vaultmem.adapters.watch import vault_relative

    root = tmp_path / "vault"
    assert vault_relative(root, str(root / "memories" / "a.md")) == "memories/a.md"
    assert vault_relative(str(root), os.fsencode(root / "agents" / "ella.md")) == "agents/ella.md"
    assert vault_relative(root, str(tmp_path / "elsewhere.md")) is None
    for hidden in (".git/HEAD", ".vaultmem/local/txn.json", ".obsidian/app.json", "memories/.draft.md",
                   "node_modules/x/README.md"):
        assert vault_relative(root, str(root / hidden)) is None, hidden
    assert vault_relative(root, "") is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the change monitor follows inotify")
def test_the_change_monitor_asks_the_kernel_for_changes_only_and_misses_none(tmp_path):
    """The MCP server's monitor (and the watcher) ask inotify for the events that change
    a file, not for every open and close: each kind of change is still reported — an
    append, a truncation, an attribute change (a chmod can make a note unreadable; a
    touch), a hard link, a move, a delete, a file in a folder made since — and a read is
    not."""
    from vaultmem.adapters.watch import ChangeMonitor

    root = tmp_path / "vault"
    (root / "memories").mkdir(parents=True)
    (root / ".vaultmem" / "local").mkdir(parents=True)
    note = root / "memories" / "a.md"
    note.write_text("hello\n", encoding="utf-8")
    monitor = ChangeMonitor(root)
    assert monitor.start()
    try:
        assert monitor.changed() is None  # the first question: walk
        seen = {}
        note.read_text(encoding="utf-8")
        seen["read"] = monitor.changed()
        with open(note, "a", encoding="utf-8") as fh:
            fh.write("more\n")
        seen["append"] = monitor.changed()
        open(note, "w").close()
        seen["truncate"] = monitor.changed()
        os.chmod(note, 0o600)
        seen["chmod"] = monitor.changed()
        os.utime(note, (1, 1))
        seen["touch"] = monitor.changed()
        os.link(note, root / "memories" / "b.md")
        seen["link"] = monitor.changed()
        os.replace(root / "memories" / "b.md", root / "memories" / "c.md")
        seen["move"] = monitor.changed()
        (root / "memories" / "c.md").unlink()
        seen["delete"] = monitor.changed()
        (root / "wiki").mkdir()
        seen["folder"] = monitor.changed()  # a folder came: walk
        (root / "wiki" / "d.md").write_text("x\n", encoding="utf-8")
        seen["in the new folder"] = monitor.changed()
    finally:
        monitor.stop()
    a = ["memories/a.md"]
    assert seen == {"read": [], "append": a, "truncate": a, "chmod": a, "touch": a, "link": ["memories/b.md"],
                    "move": ["memories/b.md", "memories/c.md"], "delete": ["memories/c.md"], "folder": None,
                    "in the new folder": ["wiki/d.md"]}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the change monitor follows inotify")
def test_the_change_monitor_writes_to_two_markers_in_turn_and_removes_a_killed_one_s_at_start(tmp_path):
    """Each question writes a byte to one of the monitor's two marker files, in turn (the
    kernel merges an unread event into the same one before it, and watchdog drops a
    repeat): what changed is reported throughout, and no more marker files are made. A
    marker removed between two questions is made again under a new name, and that
    question is still answered. A monitor starting removes the markers of processes no
    longer running (a killed server's, in this version's names and the last one's) and of
    this process's id that no running monitor made; it keeps a running process's and
    another monitor's of this process; stopping, it removes its own. Names that only look
    like markers — a number too long for a process id, digits that are not ASCII, under
    the monitor's own prefix too — are left alone, and neither stop the monitor nor answer
    a question; nor does a write to another of the folder's files."""
    import re
    import subprocess

    from vaultmem.adapters.watch import ChangeMonitor

    root, local = monitored_vault(tmp_path)
    note = root / "memories" / "a.md"
    note.write_text("hello\n", encoding="utf-8")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    me, parent = os.getpid(), os.getppid()
    stale = [f"mcp-{gone}-1", f"mcp-{gone}-deadbeef-2", f"mcp-{me}-1", f"mcp-{me}-0badc0de-3"]
    kept = [f"mcp-{parent}-7", f"mcp-{parent}-feedface-8", "mcp-99999999999999999999-1", "mcp-²-1", "keep.json"]
    for name in stale + kept:
        (local / name).write_text("", encoding="utf-8")
    other = ChangeMonitor(root)  # another monitor of this process, on the same vault
    assert other.start()
    monitor = ChangeMonitor(root)
    assert monitor.start()

    def markers(of: str) -> list[str]:
        """The markers made under the random part ``of``, oldest first."""
        own = [(int(m.group(1)), p.name) for p in local.iterdir()
               if (m := re.fullmatch(rf"mcp-{me}-{of}-([0-9]+)", p.name))]
        return [name for _n, name in sorted(own)]

    try:
        assert other.changed() is None and monitor.changed() is None  # the first question: walk
        names = {p.name for p in local.iterdir()}
        assert not names & set(stale) and set(kept) <= names
        parts = {re.fullmatch(rf"mcp-{me}-([0-9a-f]{{8}})-[12]", n).group(1) for n in names - set(kept)}
        assert len(parts) == 2 and all(len(markers(p)) == 2 for p in parts)  # two markers each, made at start
        assert monitor.changed() == []  # its second question: a byte in its second marker
        own = next(p for p in parts if (local / f"mcp-{me}-{p}-2").stat().st_size == 1)
        assert [(local / f"mcp-{me}-{p}-2").stat().st_size for p in parts - {own}] == [0]
        prefix = f"mcp-{me}-{own}-"
        for odd in ("stray", "²", "１２"):  # "１２" would read as marker 12 with int()
            (local / f"{prefix}{odd}").write_text("", encoding="utf-8")
        first = markers(own)
        for n in range(60):
            if n % 17 == 0:
                note.write_text(f"changed {n}\n", encoding="utf-8")
                assert monitor.changed() == ["memories/a.md"]
            else:
                if n % 5 == 0:
                    (local / "keep.json").write_text(str(n), encoding="utf-8")  # another file of the folder
                assert monitor.changed() == []
        assert markers(own) == first  # written to, never made again
        assert all((local / m).stat().st_size == 1 for m in first)
        (local / first[0]).unlink()  # someone cleans up between two questions
        note.write_text("again\n", encoding="utf-8")
        assert monitor.changed() == ["memories/a.md"]
        note.write_text("and again\n", encoding="utf-8")
        assert monitor.changed() == ["memories/a.md"]
        assert len(markers(own)) == 2 and markers(own)[0] == first[1] and first[0] not in markers(own)
        assert other.changed() is not None  # the other monitor was never stopped by the odd names
    finally:
        monitor.stop()
        other.stop()
    left = {p.name for p in local.iterdir()}
    assert markers(own) == [] and {f"{prefix}stray", f"{prefix}²", f"{prefix}１２"} <= left
    assert set(kept) <= {p.name for p in local.iterdir()}
