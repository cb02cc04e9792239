"""The write path: every change to a vault is one transaction.

A transaction takes the vault's write lock, checks what it will write (no secret may
reach a file or git history), writes the journal of what it is about to do, writes
every file, commits exactly those paths as the acting agent, and drops the journal.
If anything fails, the files are put back as they were and their staging undone.

What a kill cannot break:

- **Files**: each new content goes to a temp file first (all of them, before any file
  is replaced), so a full disk fails before an original is touched. The old content is
  kept aside under a second name (a hard link: no space needed) until the commit is
  made, so it can always be put back.
- **The journal** (``.vaultmem/local/txn.json``, written before the first file): a
  writer killed at any moment leaves it. The next transaction (or any command, when no
  writer holds the lock) finds it and settles what the dead writer left: if its commit
  was made, only the kept-aside copies go; otherwise every file goes back to what it
  was and its staging is undone. So a later command never sweeps a dead writer's files
  into its own commit, and an inbox approval is either done (note committed, item
  archived) or not done at all (item pending, nothing written).
- **git's own locks**: an ``index.lock`` or ``HEAD.lock`` that no live process can
  own (its git was killed) is removed; one a live git holds is waited for, then
  reported (:mod:`vaultmem.gitstore`).
- **Temp files** of killed writers are swept from every folder vaultmem writes into
  (:data:`vaultmem.layout.WRITABLE`), under the lock, after the journal is settled.

Domain modules (pages, notes, inbox, coordination, lifecycle) plan their writes as
``{path: new text, or None to delete}`` and hand them to :meth:`Writer.apply`. Secrets
are replaced where input enters, by a :class:`Scrubber` made for that one call: its
findings become the call's result's ``warnings``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import config, files, gitstore, layout, leftovers
from .errors import BadInput, Busy, SecretRefused, StorageError, VaultmemError, from_os_error
from .models import Actor

if TYPE_CHECKING:
    from .config import Config
    from .guard import Finding

# in .vaultmem/local/: there while a writer holds the write lock; found by the next one, it
# says the last writer died holding it, and only then are the folders listed for its temp files
WRITING_MARK = "writing"
JOURNAL_VERSION = 1
# who edits outside vaultmem is not known to it: such edits are committed under this name
UNATTRIBUTED = Actor(name="unknown (edited outside vaultmem)", kind="unknown", email="unattributed@vaultmem.invalid")


def redaction_key(root: Path) -> bytes:
    """The key of placeholder hashes: local to this machine's copy (never committed)."""
    path = files.inside(root, layout.REDACT_KEY)
    try:
        return files.read_bytes(root, layout.REDACT_KEY)
    except FileNotFoundError:
        import secrets as _secrets

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            files.atomic_write(path, _secrets.token_hex(32))
        except OSError as exc:
            raise from_os_error(exc, path=layout.REDACT_KEY, writing=True) from None
        return files.read_bytes(root, layout.REDACT_KEY)


def check_size(field_name: str, text: str, limit: int, setting: str) -> None:
    """Refuse a text of more than ``limit`` bytes (UTF-8): a memory is a fact or a short
    account, and a huge one would cost every later reader (indexing, snippets, briefs)."""
    if len(text) * 4 <= limit:  # no encoding needed: even four bytes a character fit
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise BadInput(f"the {field_name} is {_kb(size)}; this vault takes at most {_kb(limit)} ({setting}); "
                       "nothing was written", field=field_name,
                       hint="keep it short and put the long material in a file it links to"
                            + (f", or raise {setting} in {layout.CONFIG_PATH}" if limit < config.SIZE_CAPS.get(setting, 0) else
                               f" ({setting} is at its most)"))


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB ({n:,} bytes)"


@dataclass
class Scrubber:
    """Secrets out of one call's input: text gets typed placeholders (or SecretRefused
    when the vault sets ``safety.secrets: reject``); names and ids, which cannot hold a
    placeholder, are refused. What it replaced is in :attr:`findings`."""

    root: Path
    mode: str = "redact"
    findings: list[Finding] = field(default_factory=list)
    max_bytes: int = 256 * 1024  # the vault's memory.max_note_bytes
    key: bytes | None = field(default=None, repr=False)

    def text(self, field_name: str, text: str | None, max_bytes: int | None = None,
             setting: str = "memory.max_note_bytes") -> str | None:
        """``text`` with its secrets replaced — or refused, when it is larger than
        ``max_bytes`` (the vault's ``setting``): checked first, so a huge text costs no scan."""
        from . import guard  # only when text is written: its detectors cost time to load

        if text:
            check_size(field_name, text, self.max_bytes if max_bytes is None else max_bytes, setting)
        if not text or not guard.might_hold_secret(text):
            return text
        clean, found = guard.scrub(text, field_name, self._key())
        if found and self.mode == "reject":
            kinds = ", ".join(sorted({f.type for f in found}))
            raise SecretRefused(f"the {field_name} holds a secret ({kinds}); nothing was written", field=field_name,
                                hint="remove it (keep secrets in a secret manager and write where it lives), "
                                     "or set safety.secrets: redact to store a placeholder instead")
        self.findings.extend(found)
        return clean

    def _key(self) -> bytes:
        """The redaction key, read once per scrubber (a transcript's thousand turns each ask)."""
        if self.key is None:
            self.key = redaction_key(self.root)
        return self.key

    def refuse(self, field_name: str, value) -> None:
        """Names and ids (tags, keys, projects, channels, refs …): a secret there is
        refused whatever ``safety.secrets`` says."""
        from . import guard

        if not value or not guard.might_hold_secret(str(value)):
            return
        _, found = guard.scrub(str(value), field_name, self._key())
        if found:
            raise SecretRefused(f"the {field_name} holds a secret ({found[0].type}); nothing was written",
                                field=field_name, hint=f"the {field_name} is a name, not a place for a secret: "
                                                       "choose another")

    def warnings(self) -> list[str]:
        return [f"redacted a {f.type} in the {f.field}: stored as {f.placeholder}" for f in self.findings]


@dataclass
class Settled:
    """What settling a dead writer's journal did."""

    message: str
    paths: list[str]
    outcome: str  # "committed" (its commit was made) | "rolled back"
    left: list[str] = field(default_factory=list)  # edited after the writer died: not rolled back


class Writer:
    """The write side of one vault: the lock, the journal, and :meth:`apply`."""

    def __init__(self, root: Path, config: Config, on_write=None) -> None:
        self.root = root
        self.config = config
        self.on_write = on_write  # called with the paths before anything of a change is written
        self.settled: list[Settled] = []  # dead writers' changes this process settled
        # How long locked() waits for the lock: git.lock_timeout, or less where set (a writer
        # that retries on its own, doing other work between tries). git's own index lock is
        # still waited for git.lock_timeout.
        self.lock_wait: float | None = None
        self._held = threading.local()  # this thread's depth of locked() within locked()
        self._threads = threading.RLock()  # threads of one process take turns, then the file lock

    def scrubber(self) -> Scrubber:
        return Scrubber(self.root, self.config.secrets, max_bytes=self.config.max_note_bytes)

    # -- the lock ----------------------------------------------------------------------------
    def _file_lock(self, timeout: float):
        from filelock import FileLock

        lock_path = files.inside(self.root, layout.WRITE_LOCK)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(lock_path), timeout=timeout)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the vault's write lock: settle a dead writer's journal, and sweep the temp
        files of a writer that died holding the lock (:data:`WRITING_MARK` says one did:
        listing every writable folder on every write would cost a write time that grows
        with the vault)."""
        from filelock import Timeout

        depth = getattr(self._held, "depth", 0)
        if depth:  # this thread holds the lock already
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth = depth
            return
        wait = self.config.lock_timeout if self.lock_wait is None else min(self.lock_wait, self.config.lock_timeout)
        busy = Busy(f"another vaultmem process has been writing this vault for {wait:g}s",
                    path=layout.WRITE_LOCK, hint="retry in a moment")
        if not self._threads.acquire(timeout=wait):
            raise busy
        try:
            lock = self._file_lock(wait)
            try:
                lock.acquire()
            except Timeout:
                raise busy from None
            except OSError as exc:
                raise from_os_error(exc, path=layout.WRITE_LOCK, writing=True) from None
            self._held.depth = 1
            mark, marked, settled = self.root / layout.LOCAL_DIR / WRITING_MARK, False, False
            try:
                died = os.path.lexists(mark)
                marked = files.write_local(self.root, WRITING_MARK, f"{os.getpid()}\n")
                self._settle()
                if died or not marked:  # a writer killed holding the lock may have left temp files
                    files.sweep_temp_files(self.root, layout.WRITABLE)
                settled = True
                yield
            finally:
                self._held.depth = 0
                if marked and (settled or not died):  # a sweep that failed is tried again by the next writer
                    try:
                        mark.unlink()
                    except OSError:
                        pass
                lock.release()
        finally:
            self._threads.release()

    def tidy(self) -> int:
        """Without a writer active: settle a dead writer's journal and remove temp files
        left by killed writers; returns how many temp files went.

        Cheap when there is nothing, as nearly always: one ``stat`` for a journal, a
        folder listed only if its mtime moved since it was last found clean
        (``.vaultmem/local/tidy.bin``; a temp file's creation moves it), and the write lock
        taken only when something was found. Writers do all of it under their lock anyway."""
        if leftovers.journal_left(self.root):
            from filelock import Timeout  # only then: the lock library costs ~10 ms to import

            try:
                with self._file_lock(0):
                    self._settle()
            except (Timeout, OSError, VaultmemError):
                pass  # a live writer holds the lock (or the next writer settles it and says what stops it)
        if not leftovers.temp_files_left(self.root):
            return 0
        from filelock import Timeout

        try:
            with self._file_lock(0):
                self._settle()
                return len(files.sweep_temp_files(self.root, layout.WRITABLE))
        except (Timeout, OSError, VaultmemError):
            return 0  # a writer is active (it sweeps), or the next writer settles and says what stops it

    # -- the journal ---------------------------------------------------------------------------
    def _settle(self) -> Settled | None:
        """Finish what a writer killed mid-transaction left (call with the lock held)."""
        path = self.root / layout.TXN_JOURNAL
        try:
            journal = json.loads(files.read_bytes(self.root, layout.TXN_JOURNAL))
            entries = journal["paths"]
            message = str(journal.get("message") or "")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, VaultmemError):  # torn, or not a file: gone
            journal, entries, message = None, None, ""
        if not isinstance(entries, dict):  # torn before it was whole: no file was touched yet
            files.remove(path)
            return None
        rels = list(entries)
        if self.on_write is not None:  # settling may put files back: as any write, said first
            self.on_write(rels)
        # its commit landed if a commit with its message sits on the HEAD it saw
        committed = gitstore.committed_since(self.root, journal.get("head"), message)
        left: list[str] = []  # changed by someone after the dead writer: left as they are
        if not committed:
            # Every step below may be killed in its turn: each finds what an earlier,
            # killed settling did and does not undo it twice (a file already put back
            # matches its "before" digest), so settling again always ends the same way.
            for rel, e in entries.items():
                target = files.inside(self.root, rel)
                aside = self.root / e["aside"] if e.get("aside") else None
                now = _digest(target)
                if "before" in e and now == e["before"]:
                    continue  # as it was: never replaced, or already put back
                if now == e.get("after"):  # the dead writer's content, untouched since: undo it
                    if aside is not None and aside.exists():
                        os.replace(aside, target)
                    elif not e.get("existed"):
                        target.unlink(missing_ok=True)
                    else:
                        left.append(rel)  # its old content is gone: nothing to put back
                elif (aside is not None and aside.exists() and now == _digest(aside)) or \
                        (now is None and not e.get("existed")):
                    continue  # never replaced: nothing to undo
                else:
                    left.append(rel)
        # The index agrees with HEAD for every path the journal names, whatever happened:
        # the dead writer's 'git add' (or a rolled-back file's entry) is never left for a
        # plain 'git commit' to record. Done before the journal goes, so a kill here is
        # settled again by the next command.
        if not gitstore.unstage(self.root, rels, wait=self.config.lock_timeout):
            raise Busy(f"a killed vaultmem change of {_listed(rels)} left them staged, and git's index stayed "
                       f"locked for {self.config.lock_timeout:g}s, so they could not be unstaged",
                       path=".git/index.lock", hint="retry once the git command holding the index has finished")
        for e in entries.values():
            if e.get("aside"):
                (self.root / e["aside"]).unlink(missing_ok=True)
        files.remove(path)
        done = Settled(message, rels, "committed" if committed else "rolled back", left)
        self.settled.append(done)
        return done

    def stray_staged(self) -> list[dict]:
        """Staged paths no vaultmem change owns (:func:`stray_staged`), for ``doctor``."""
        return stray_staged(self.root)

    # -- applying a change ---------------------------------------------------------------------
    def apply(self, actor: Actor, message: str, writes: dict[str, str | None],
              unscanned: tuple[str, ...] = (), rescrubbed: tuple[str, ...] = ()) -> str | None:
        """Write (text) or delete (None) each vault-relative path and commit them as one
        commit; returns its sha (None if nothing changed). Call with the lock held. On
        any failure every file is as it was and nothing is staged. Every added line is
        checked for secrets, except in ``unscanned`` paths (public keys and settings:
        high entropy by nature, and no secret). ``rescrubbed``: paths this change deletes
        after storing their text scrubbed elsewhere (a decided inbox item): an uncommitted
        edit of one that holds a secret is not recorded, instead of refusing the change."""
        if not getattr(self._held, "depth", 0):
            raise VaultmemError("a change was applied without the vault's write lock",
                                hint="this is a vaultmem bug: please report it")
        targets = {rel: files.inside(self.root, rel) for rel in writes}
        if self.on_write is not None:
            self.on_write(list(writes))
        drafts = self._check_drafts(gitstore.uncommitted(self.root, list(writes)),
                                    {rel for rel in rescrubbed if writes.get(rel, "") is None})
        if drafts:
            # Uncommitted edits of these files were made outside vaultmem, by someone it
            # cannot name (a person in Obsidian, an agent writing the file): they are
            # committed first under an identity that says so, never as the actor, so the
            # actor's commit (and git blame) holds only its own change and nothing is lost.
            gitstore.commit(self.root, drafts, f"vaultmem: record uncommitted edits to {', '.join(drafts)} "
                            f"(made outside vaultmem, author unknown) before a change by {actor.name}",
                            UNATTRIBUTED, self.config.lock_timeout)
        before = {rel: files.read_vault_text(self.root, rel) if t.exists() else None for rel, t in targets.items()}
        self._check_no_secrets({k: v for k, v in writes.items() if k not in unscanned}, before)
        # new and changed files first, deletions last: a reader never sees a moved file in neither place
        order = sorted(writes, key=lambda rel: writes[rel] is None)
        temps: dict[str, Path] = {}
        asides: dict[str, Path | None] = {}
        journal = self.root / layout.TXN_JOURNAL
        replaced: list[str] = []
        head = gitstore.head(self.root)
        try:
            try:
                for rel in order:
                    if writes[rel] is not None:
                        temps[rel] = files.write_temp(targets[rel], writes[rel])
                for rel in order:
                    asides[rel] = files.keep_aside(targets[rel])
                record = {"version": JOURNAL_VERSION, "pid": os.getpid(), "message": message,
                          "author": actor.name, "head": head, "paths": {
                              rel: {"existed": before[rel] is not None,
                                    "aside": asides[rel].relative_to(self.root).as_posix() if asides[rel] else None,
                                    # what it held (None: no file), so that settling knows a file
                                    # it has already put back
                                    "before": _digest(asides[rel]) if asides[rel] else None,
                                    "after": None if writes[rel] is None else _text_digest(writes[rel])}
                              for rel in order}}
                journal.parent.mkdir(parents=True, exist_ok=True)
                files.atomic_write(journal, json.dumps(record, ensure_ascii=False))
            except OSError as exc:
                raise from_os_error(exc, path=_shown(exc, self.root), writing=True) from None
            for rel in order:
                if writes[rel] is None:
                    targets[rel].unlink(missing_ok=True)
                else:
                    os.replace(temps.pop(rel), targets[rel])
                replaced.append(rel)
            for folder in {targets[rel].parent for rel in order}:
                files.fsync_dir(folder)
            sha = gitstore.commit(self.root, list(writes), message, actor, self.config.lock_timeout)
        except BaseException as exc:
            for tmp in temps.values():
                tmp.unlink(missing_ok=True)
            if len(replaced) == len(order) and _landed(self.root, head, message):
                # git made the commit and failed after it (or we were interrupted): the change
                # is recorded, so it stays; only the leftovers go
                for aside in asides.values():
                    if aside is not None:
                        aside.unlink(missing_ok=True)
                journal.unlink(missing_ok=True)
                if isinstance(exc, Exception):
                    return gitstore.head(self.root)
                raise
            for rel in replaced:
                if asides.get(rel) is not None:
                    os.replace(asides.pop(rel), targets[rel])
                else:
                    targets[rel].unlink(missing_ok=True)
            for aside in asides.values():
                if aside is not None:
                    aside.unlink(missing_ok=True)
            # the journal goes only once nothing is left staged; if git's index stayed locked,
            # the next command finds the files put back and unstages them
            if not replaced or gitstore.unstage(self.root, list(writes), wait=self.config.lock_timeout):
                journal.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise from_os_error(exc, path=_shown(exc, self.root), writing=True) from None
            raise
        for aside in asides.values():
            if aside is not None:
                aside.unlink(missing_ok=True)
        # not fsynced: a journal that outlives a power cut is settled as committed next time
        journal.unlink(missing_ok=True)
        return sha

    # -- the last line of defence against secrets ------------------------------------------------
    def _check_no_secrets(self, writes: dict[str, str | None], before: dict[str, str | None]) -> None:
        """No line this write adds to a file may hold a secret. Every input is scrubbed
        where it enters; this catches a path that forgot to. A line is not added if the
        file had it before, or (for a move into ``archive/``) if a file this write
        deletes had it."""
        from . import guard

        deleted = set()
        for rel, text in writes.items():
            if text is None:
                deleted.update((before.get(rel) or "").split("\n"))
        for rel, text in writes.items():
            old = set((before.get(rel) or "").split("\n"))
            if rel.startswith(f"{layout.ARCHIVE_DIR}/"):
                old |= deleted
            added = {n for n, line in enumerate((text or "").split("\n"), 1) if line not in old}
            # each added line, and a secret broken over the break next to one, as scrub() reads them
            for n, kind in guard.secret_lines(text or "", added)[:1]:
                raise VaultmemError(f"refusing to write a {kind} that was not scrubbed",
                                    path=rel, line=n, hint="this is a vaultmem bug: please report it")

    def _check_drafts(self, drafts: list[str], rescrubbed: set[str]) -> list[str]:
        """The uncommitted edits to commit before this change (see :meth:`apply`). A
        secret in one would reach git history that way: refused, unless this change
        deletes the file and stores its text scrubbed (``rescrubbed``), when that edit
        is left out of the record instead."""
        from . import guard

        swept = []
        for rel in drafts:
            path = self.root / rel
            found: list = []
            if path.is_file():
                # a line whose ending alone changed (LF → CRLF in an editor) adds nothing
                old = set((gitstore.committed_text(self.root, rel) or "").replace("\r", "").split("\n"))
                text = files.read_vault_text(self.root, rel)
                added = {n for n, line in enumerate(text.split("\n"), 1) if line.rstrip("\r") not in old}
                found = guard.secret_lines(text, added)[:1]
            if not found:
                swept.append(rel)
            elif rel not in rescrubbed:
                n, kind = found[0]
                raise SecretRefused(
                    f"the uncommitted edit holds a {kind}; vaultmem would have to commit it "
                    f"before this change, so nothing was written", path=rel, line=n,
                    hint="remove the secret from the file (or commit it yourself, knowingly), then retry")
        return swept


def _landed(root: Path, head: str | None, message: str) -> bool:
    try:
        return gitstore.committed_since(root, head, message)
    except Exception:  # noqa: BLE001 - git cannot tell us: take it as not made, and undo
        return False


def _text_digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _digest(path: Path) -> str | None:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _listed(paths: list[str], most: int = 3) -> str:
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def stray_staged(root: Path) -> list[dict]:
    """Paths whose index entry differs from HEAD that no vaultmem change under way owns
    (``{"path", "line": None, "problem"}`` each): a plain ``git commit`` would record them,
    though no vaultmem change made them — a killed change's leftover, or something staged
    by hand and not committed yet. A live writer's paths (its journal names them) are its own."""
    import shlex

    try:
        owned = set(json.loads(files.read_bytes(root, layout.TXN_JOURNAL))["paths"])
    except (OSError, ValueError, KeyError, TypeError, VaultmemError):
        owned = set()
    said = {"A": "added", "M": "changed", "D": "deleted", "T": "changed (type)"}
    return [{"path": rel, "line": None,
             "problem": f"staged ({said.get(status, status)}) but not committed, and no vaultmem change owns it: "
                        f"a plain 'git commit' would record it; if you did not stage it, unstage it with "
                        f"'git reset -q -- {shlex.quote(rel)}'"}
            for status, rel in gitstore.staged_changes(root) if rel not in owned]


def _shown(exc: OSError, root: Path) -> str | None:
    name = getattr(exc, "filename", None)
    if not name:
        return None
    try:
        rel = Path(name).resolve().relative_to(root)
    except (ValueError, OSError):
        return str(name)
    parts = rel.parts
    if parts and files.TEMP_MARK in parts[-1]:  # the temp file stands for the file it was to become
        real = parts[-1].split(files.TEMP_MARK)[0].removeprefix(".")
        rel = Path(*parts[:-1], real)
    return rel.as_posix()


__all__ = ["UNATTRIBUTED", "Scrubber", "Settled", "StorageError", "Writer", "redaction_key", "stray_staged"]
