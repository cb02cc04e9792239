"""``vaultmem watch``: a watchdog observer that keeps the index fresh.

An adapter at the edge: it only groups file events and calls the facade's
``refresh_index`` with the paths that changed. Saves in place, by rename (vim) and by
temp-file-and-replace (which watchdog reports only as the destination of a move) all
name a Markdown path, so each is picked up; bursts are debounced; ``.git/``,
``.vaultmem/`` and hidden files are ignored. Folder events (a ``git checkout`` or a
moved folder) and a kernel event-queue overflow (watchdog recovers its watches and
logs it, but the lost events are gone) trigger a full reconcile, as does a slow
periodic check. While it runs it keeps a heartbeat in ``.vaultmem/local/watch.json``
so that other commands skip their own freshness check. Ctrl-C and SIGTERM stop it
between syncs, never in the middle of one (see :meth:`Watcher.run`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .. import files
from ..errors import VaultmemError
from ..vault import Vault
from ..walk import IGNORED_DIRS, WATCH_HEARTBEAT

HEARTBEAT_EVERY = 5.0


def vault_relative(root: str | os.PathLike, path: str | bytes) -> str | None:
    """An event's path relative to the vault ``root``, with ``/``; None for a path outside
    it, inside a hidden or ignored folder (``.git``, ``.vaultmem``, ``.obsidian`` …), a
    hidden file, or no path at all: what neither the watcher nor the change monitor reads."""
    try:
        rel = os.path.relpath(os.fsdecode(path), root).replace(os.sep, "/")
    except ValueError:  # no path, or (on Windows) another drive
        return None
    parts = rel.split("/")
    if rel.startswith("..") or any(p in IGNORED_DIRS or p.startswith(".") for p in parts):
        return None
    return rel


class _OverflowSpy(logging.Handler):
    """watchdog logs a queue overflow and carries on; we turn that into a reconcile."""

    def __init__(self, callback: Callable[[], None]) -> None:
        super().__init__(level=logging.WARNING)
        self.callback = callback

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.callback()


def changes_only(lost: bool = False) -> list:
    """The watchdog events that say a file or folder changed — made, deleted, moved,
    written to (and closed after writing), its attributes changed (a ``chmod`` can make a
    note unreadable); with ``lost``, also watchdog's word that events were lost (after a
    kernel queue overflow, once it has made its watches again: watchdog 5+). Given
    to ``schedule`` as its filter, the kernel is not asked for the rest: every file read
    in the vault (a search's, a brief's, git's, an editor's) would otherwise come as an
    open and a close event, each handled in Python in the watching process."""
    from watchdog import events

    kinds = [events.FileCreatedEvent, events.DirCreatedEvent, events.FileDeletedEvent, events.DirDeletedEvent,
             events.FileMovedEvent, events.DirMovedEvent, events.FileModifiedEvent]
    if hasattr(events, "FileAttribEvent"):  # watchdog 5+; before, an attribute change is a FileModifiedEvent
        kinds.append(events.FileAttribEvent)
    if hasattr(events, "FileClosedNoWriteEvent"):  # then FileClosedEvent is a close after writing only
        kinds.append(events.FileClosedEvent)  # (a file written through mmap says so only then)
    if lost and hasattr(events, "EventsLostEvent"):
        kinds.append(events.EventsLostEvent)
    return kinds


class Watcher:
    def __init__(self, vault: Vault, debounce: float = 0.2, max_delay: float = 1.0,
                 on_sync: Callable | None = None, reconcile_every: float = 600.0,
                 idle_maintenance: float = 10.0, on_error: Callable | None = None) -> None:
        self.vault = vault
        self.root = vault.root
        self.debounce = debounce
        self.max_delay = max_delay
        self.on_sync = on_sync
        self.reconcile_every = reconcile_every
        self.idle_maintenance = idle_maintenance
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._full = False
        self._syncing = False  # a batch taken by step() is being indexed
        self._beat_lock = threading.Lock()  # both threads write the heartbeat: one at a time
        self._first = self._last = 0.0
        self._stop = threading.Event()
        self._waiting = False  # the main thread is only waiting for changes: a stop signal may cut in
        self._observer = None
        self._spy = _OverflowSpy(self.request_full)
        self.syncs = 0
        self.failures = 0
        self.on_error = on_error

    # -- events --------------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if event.event_type in ("opened", "closed", "closed_no_write"):
            return
        if event.is_directory:
            inside = vault_relative(self.root, event.src_path) is not None
            if event.event_type in ("created", "deleted", "moved") and inside:
                for p in (event.src_path, getattr(event, "dest_path", None)):
                    if p and Path(os.fsdecode(p)).parent == self.root:
                        self._watch_folder(Path(os.fsdecode(p)))  # a top-level folder came or went
                self.request_full()
            return
        paths = [vault_relative(self.root, event.src_path)]
        if getattr(event, "dest_path", None):
            paths.append(vault_relative(self.root, event.dest_path))
        paths = [p for p in paths if p and p.endswith(".md")]
        if paths:
            with self._cond:
                now = time.monotonic()
                first = not self._pending and not self._full
                if first:
                    self._first = now
                self._pending.update(paths)
                self._last = now
                self._cond.notify()
            if first:
                self._beat()  # pending: other commands index for themselves until we catch up

    def request_full(self) -> None:
        with self._cond:
            now = time.monotonic()
            first = not self._pending and not self._full
            if first:
                self._first = now
            self._full = True
            self._last = now
            self._cond.notify()
        if first and self._observer is not None:
            self._beat()

    # -- running -------------------------------------------------------------------------
    def start(self) -> None:
        """Index what changed while nobody watched, then watch. The root folder is
        watched on its own and each top-level folder recursively, so ``.git/`` (with its
        many object folders) and ``.vaultmem/`` get no watches at all."""
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        self._handler = FileSystemEventHandler()
        self._handler.on_any_event = self._on_event
        logging.getLogger("watchdog").addHandler(self._spy)
        self._observer = Observer()
        self._observer.schedule(self._handler, str(self.root), recursive=False, event_filter=changes_only())
        self._watched: dict[str, object] = {}
        for child in sorted(self.root.iterdir()):
            self._watch_folder(child)
        self._observer.start()
        self._sync(None)
        self._beat()

    def _watch_folder(self, folder: Path) -> None:
        name = folder.name
        if name in IGNORED_DIRS or name.startswith("."):
            return
        old = self._watched.pop(name, None)
        if old is not None:  # deleted and made again, or replaced: watch the new folder
            try:
                self._observer.unschedule(old)
            except (KeyError, OSError):
                pass
        if folder.is_dir() and not folder.is_symlink():
            self._watched[name] = self._observer.schedule(self._handler, str(folder), recursive=True,
                                                          event_filter=changes_only())

    def step(self, timeout: float = 1.0) -> bool:
        """Wait up to ``timeout`` for changes; once a burst has been quiet for
        ``debounce`` seconds (or began ``max_delay`` ago), index it. True if it synced."""
        end = time.monotonic() + timeout
        with self._cond:
            try:
                self._waiting = True
                while True:
                    now = time.monotonic()
                    if self._stop.is_set():
                        return False
                    if self._pending or self._full:
                        ready_at = min(self._last + self.debounce, self._first + self.max_delay)
                        if now >= ready_at:
                            break
                        self._cond.wait(ready_at - now)
                    elif now >= end:
                        return False
                    else:
                        self._cond.wait(end - now)
            finally:
                self._waiting = False
            paths, full = self._pending, self._full
            self._pending, self._full, self._syncing = set(), False, True
        self._sync(None if full else sorted(paths))
        return True

    def _sync(self, paths: list[str] | None) -> None:
        """Index the changes; on failure (another process holds the index for long, a
        damaged index) report it, keep the changes for a full reconcile and go on."""
        try:
            report = self.vault.refresh_index(paths=paths)
        except Exception as exc:  # noqa: BLE001 - the watcher must outlive any one failure
            self.failures += 1
            if self.on_error:
                self.on_error(exc)
            time.sleep(min(5.0, 0.5 * self.failures))
            self.request_full()
            return
        finally:
            with self._cond:
                self._syncing = False
        self.failures = 0
        self.syncs += 1
        with self._cond:
            idle = not self._pending and not self._full
        if idle and self._observer is not None:
            self._beat()
        if idle:
            try:  # after the commit, so no save waits for it: keeps commands' start cheap
                self.vault.index.save_summary()
            except Exception as exc:  # noqa: BLE001
                if self.on_error:
                    self.on_error(exc)
            if report.changed:
                # vectors made before (the semantic channel has opened) are kept up to date
                # here, where the model stays loaded, so that a command whose search opens
                # the channel embeds nothing itself
                try:
                    semantic = self.vault.index.semantic_status()
                    if semantic["on"] and (semantic["vectors"] or semantic["mode"] in ("always", "only")):
                        self.vault.sync_vectors(wait=0)
                except Exception as exc:  # noqa: BLE001
                    if self.on_error:
                        self.on_error(exc)
        if self.on_sync:
            self.on_sync(report)

    def run(self) -> None:
        """Watch until :meth:`stop`, Ctrl-C or SIGTERM.

        In the main thread a stop signal ends the watch between syncs, never inside
        one: a sync cut after the engine's commit but before the manifest records it
        would make the next refresh index those files a second time. A signal that
        comes while the watcher only waits for changes stops it at once; one that comes
        during a sync (or the first reconcile, or a merge) once that is done. Then run
        returns, and both signals stay ignored (as the command's own handler leaves them):
        a second one must not break the clean stop."""
        with self._stopped_by_signals():
            self._run()

    @contextlib.contextmanager
    def _stopped_by_signals(self):
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(_signum, _frame):
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)  # a second signal must not break the clean stop
            self._stop.set()
            if self._waiting:
                raise KeyboardInterrupt  # only a wait is cut short: no change is half made

        # SIGINT too when the shell started us ignoring it (`vaultmem watch &`)
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        except KeyboardInterrupt:
            if not self._stop.is_set():
                raise
        finally:
            if not self._stop.is_set():
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def _run(self) -> None:
        self.start()
        last_beat = last_full = last_activity = time.monotonic()
        maintained = True
        while not self._stop.is_set():
            if self.step(timeout=1.0):
                last_activity, maintained = time.monotonic(), False
                last_beat = time.monotonic()
            now = time.monotonic()
            if now - last_beat >= HEARTBEAT_EVERY:
                self._beat()
                last_beat = now
            if now - last_full >= self.reconcile_every:
                self.request_full()
                last_full = now
            if not maintained and now - last_activity >= self.idle_maintenance:
                try:
                    self.vault.index.maintain()
                except Exception as exc:  # noqa: BLE001
                    if self.on_error:
                        self.on_error(exc)
                maintained = True

    def _beat(self) -> None:
        """Write the heartbeat, pending while changes wait or are being indexed. The
        observer thread writes it when a change comes, the main thread after a sync and
        every few seconds: one at a time, each with the state as it is when it writes, so
        a late "idle" never hides a change that came meanwhile."""
        path = self.root / WATCH_HEARTBEAT
        with self._beat_lock:
            with self._cond:
                pending = bool(self._pending or self._full or self._syncing)
            path.parent.mkdir(parents=True, exist_ok=True)
            ignore = path.parent / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# per-machine state (watcher heartbeat, read cursors): never committed\n*\n")
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"pid": os.getpid(), "beat": time.time(), "pending": pending}), encoding="utf-8")
            os.replace(tmp, path)

    def stop(self) -> None:
        self._stop.set()
        logging.getLogger("watchdog").removeHandler(self._spy)
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        try:
            beat = json.loads(files.read_bytes(self.root, WATCH_HEARTBEAT))
            if beat.get("pid") == os.getpid():
                Path(self.root / WATCH_HEARTBEAT).unlink()
        except (OSError, ValueError, VaultmemError):
            pass


_NOW = object()  # ChangeMonitor.changed: the question asked at the call


# A marker's name: the process's id, the monitor's own random part (two monitors of one
# process, or of two containers sharing the vault as pid 1, never share names), and the
# question's number. Markers of earlier versions have no random part.
_MARK = re.compile(r"mcp-([0-9]{1,10})-(?:([0-9a-f]{8})-)?([0-9]{1,18})")
_live_marks: set[str] = set()  # the random parts of this process's running monitors


def _remove_stale_marks(local: str) -> None:
    """Remove the markers monitors left behind when their process was killed: those of a
    process no longer running, and those of this process's id that no running monitor of
    it made (an earlier process had the id)."""
    try:
        names = os.listdir(local)
    except OSError:
        return
    for name in names:
        m = _MARK.fullmatch(name)
        if m is None:
            continue
        pid = int(m.group(1))
        if pid == os.getpid():
            if m.group(2) in _live_marks:
                continue
        else:
            try:
                os.kill(pid, 0)
                continue  # another running server's
            except ProcessLookupError:
                pass
            except (OSError, OverflowError):
                continue  # running, as another user; or no process id at all
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(local, name))


class ChangeMonitor:
    """What changed in a vault since the last question, for a long-lived process (the
    MCP server) that answers from one open index: with it a search or brief re-reads the
    files that changed instead of walking the whole vault first (the walk is about 0.1 s
    at 10,000 notes). Given to :meth:`Vault.follow_changes`.

    One inotify watch on the vault's root, recursive (one kernel queue, so events come in
    the order they happened). A question (:meth:`ask`) writes a byte to one of the
    monitor's two marker files in ``.vaultmem/local/``; its answer (:meth:`changed`) waits
    until that write's own event comes back: every change made before the question was
    asked has then been seen. The
    caller answers from the index in between, and again only when what changed before the
    question changed the index (:meth:`IndexStore.ready_to_answer`). It cannot vouch —
    and says None, so the vault is walked as without it — at the first question, after a
    folder event (a ``git checkout``, a moved folder), a queue overflow, when the marker
    does not come back within ``wait`` seconds, when the observer stopped, and
    ``reconcile_every`` seconds after the last walk. Linux (inotify) only: elsewhere
    :meth:`start` returns False."""

    def __init__(self, root: Path, wait: float = 1.0, reconcile_every: float = 300.0) -> None:
        self.root = Path(root)
        self.wait = wait
        self.reconcile_every = reconcile_every
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._sure = False  # False: the next question walks the vault
        self._walked = 0.0
        self._next = 0  # the questions asked
        self._marks = ["", ""]  # the two marker files' paths (written to in turn)
        self._fds: list[int | None] = [None, None]  # … open for writing
        self._written = [0, 0]  # how many times each marker was written to
        self._heard = [0, 0]  # … and how many of those writes' events arrived
        self._made = 0  # the markers made: each one's number in its name
        self._observer = None
        self._prefix = self._own = ""
        self._spy = _OverflowSpy(self.unsure)

    def start(self) -> bool:
        """Start watching; False (and nothing started) where inotify is not available."""
        import sys

        if not sys.platform.startswith("linux"):
            return False
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers.inotify import InotifyObserver

            from ..layout import LOCAL_DIR

            self._local = os.path.join(str(self.root), *LOCAL_DIR.split("/"))
            files.own_folder(self.root, LOCAL_DIR).mkdir(parents=True, exist_ok=True)  # the markers' folder
            self._own = secrets.token_hex(4)
            self._prefix = f"mcp-{os.getpid()}-{self._own}-"
            _live_marks.add(self._own)
            _remove_stale_marks(self._local)
            for n in (0, 1):
                self._new_mark(n)
            handler = FileSystemEventHandler()
            handler.on_any_event = self._on_event
            logging.getLogger("watchdog").addHandler(self._spy)
            observer = InotifyObserver()
            observer.schedule(handler, str(self.root), recursive=True, event_filter=changes_only(lost=True))
            observer.start()
        except Exception:  # noqa: BLE001 - no inotify, too many watches: walk as before
            logging.getLogger("watchdog").removeHandler(self._spy)
            self._close_marks()
            _live_marks.discard(self._own)
            return False
        self._observer = observer
        return True

    def _new_mark(self, n: int) -> None:
        """Marker ``n`` made afresh, under a name not used before (the events of the one it
        replaces, still on their way, then count for nothing), open for writing."""
        self._drop_mark(n)
        self._written[n] = self._heard[n] = 0
        self._made += 1
        mark = os.path.join(self._local, f"{self._prefix}{self._made}")
        self._fds[n] = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self._marks[n] = mark

    def _drop_mark(self, n: int) -> None:
        """Marker ``n`` closed and removed (its slot empty)."""
        fd, mark = self._fds[n], self._marks[n]
        self._fds[n], self._marks[n] = None, ""
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        if mark:
            with contextlib.suppress(OSError):
                os.unlink(mark)

    def _close_marks(self) -> None:
        for n in (0, 1):
            self._drop_mark(n)

    def _lost(self) -> None:
        """watchdog recovered from a kernel queue overflow (its ``EventsLostEvent``, queued
        in order once every watch is back): events were lost, the markers' among them. The
        next question walks — again, if one walked while the watches were being made anew:
        what changed meanwhile raised no event — and both markers are made again, so that
        no write's event is awaited that will never come (a question waiting on one walks
        now)."""
        with self._cond:
            self._sure = False
            for n in (0, 1):
                if self._fds[n] is not None:
                    with contextlib.suppress(OSError):
                        self._new_mark(n)
            self._cond.notify_all()

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        with self._cond:
            self._close_marks()
        _live_marks.discard(self._own)
        logging.getLogger("watchdog").removeHandler(self._spy)

    def _on_event(self, event) -> None:
        if event.event_type in ("opened", "closed", "closed_no_write"):
            return
        if event.event_type == "events_lost":
            self._lost()
            return
        src = os.fsdecode(event.src_path)
        if os.path.dirname(src) == self._local and os.path.basename(src).startswith("mcp-"):
            if event.event_type == "modified" and src in self._marks:
                with self._cond:
                    if src in self._marks:  # (not one made again meanwhile)
                        self._heard[self._marks.index(src)] += 1
                        self._cond.notify_all()
            return
        rels = [vault_relative(self.root, p) for p in (event.src_path, getattr(event, "dest_path", None)) if p]
        rels = [r for r in rels if r is not None]
        if not rels:
            return
        with self._cond:
            if event.is_directory:
                if event.event_type in ("created", "deleted", "moved"):
                    self._sure = False  # a folder came, went or moved: its files with it
            else:
                self._paths.update(r for r in rels if r.endswith(".md"))

    def unsure(self) -> None:
        """The next question walks the vault (what was handed out was not indexed)."""
        with self._cond:
            self._sure = False

    def ask(self) -> tuple[int, str, int] | None:
        """Ask what changed until now: a byte written to a marker file, whose event
        :meth:`changed` waits for — every change made before it has then been seen. The
        caller may work between the two (the wait runs beside it). None: the question could
        not be asked (the observer stopped, the marker could not be written): :meth:`changed`
        says walk. The questions write to two markers in turn: the kernel merges an event
        into the same one before it while that is unread, and watchdog drops a repeat of the
        last. (A write is one event, and two cheap system calls with the check that the
        marker is still there; a marker file made for each question cost a creation — ~0.3 ms
        on this project's test machine's file system — and the removals' events.)"""
        if self._observer is None or not self._observer.is_alive():
            return None
        with self._cond:
            if self._observer is None:  # stopped meanwhile
                return None
            n = self._next % 2
            try:
                if self._fds[n] is None or os.fstat(self._fds[n]).st_nlink == 0:  # removed: its writes unheard
                    self._new_mark(n)
                os.pwrite(self._fds[n], b"\n", 0)
            except OSError:
                return None
            self._next += 1
            self._written[n] += 1
            return n, self._marks[n], self._written[n]

    def _caught_up(self, question: tuple[int, str, int] | None) -> bool:
        """Wait for the event of ``question``'s write (:meth:`ask`: which marker, its name
        then, how many writes it had): every earlier event has then arrived. A marker made
        again since cannot vouch: its events were lost."""
        if question is None or self._observer is None:
            return False
        n, mark, count = question
        with self._cond:
            if self._cond.wait_for(lambda: self._marks[n] != mark or self._heard[n] >= count, timeout=self.wait):
                return self._marks[n] == mark
            if self._marks[n] == mark and self._fds[n] is not None:
                # its event did not come: lost (an overflow before watchdog said so), or raised
                # under another path (the marker or its folder moved). Counting on would make
                # every later question of this marker wait as long: it is made again.
                with contextlib.suppress(OSError):
                    self._new_mark(n)
            return False

    def changed(self, question: tuple[int, str, int] | None | object = _NOW) -> list[str] | None:
        """The Markdown files changed since the last call (sorted) — at least all those
        changed before ``question`` was asked (:meth:`ask`; by default, now) — or None: walk."""
        if question is _NOW:
            question = self.ask()
        caught_up = self._caught_up(question)
        now = time.monotonic()
        with self._cond:
            paths, self._paths = sorted(self._paths), set()
            if not caught_up or not self._sure or now - self._walked > self.reconcile_every:
                self._sure, self._walked = True, now
                return None
            return paths
