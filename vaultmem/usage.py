"""What was recalled: the local usage data every brief and search appends.

Each brief and search appends one JSON line to ``.vaultmem/local/usage.jsonl`` (per
machine, never committed): when, how (``via``), the memory notes and role-page entries it
returned, and — with the question asked — a fingerprint of it (never its text) and who
asked. Forgetting scores notes by their recalls (:mod:`vaultmem.forgetting`), compaction
keeps the entries recalled, ``vaultmem stats`` counts repeated questions. It is derived and
best-effort: losing it makes notes look less used, never loses a note.

Every search and brief writes here, so this module is kept light: it loads no parser and
no domain module. A long-lived process (the MCP server) holds its records and writes them
together at most :data:`HOLD_SECONDS` later (:func:`hold`): each line appended used to wake
the server's own file watcher on every call.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import json
import os
import threading
from functools import lru_cache
from pathlib import Path

from . import files, layout
from .errors import VaultmemError

USAGE_FILE = "usage.jsonl"  # in .vaultmem/local/
HOLD_SECONDS = 1.0  # how long a held vault's records may wait before they are written (hold)

_lock = threading.Lock()  # guards what follows, and orders the writes of held records
_holders: dict[str, int] = {}  # vault root → how many open vaults of this process hold its records
_held: dict[str, list[bytes]] = {}  # vault root → its records not yet written, oldest first
_due: threading.Timer | None = None  # writes the held records HOLD_SECONDS after the first of them


@lru_cache(maxsize=1)
def _sha256():
    """SHA-256's constructor, looked up once: the interpreter's own implementation when it
    has one — importing :mod:`hashlib` loads OpenSSL (~2 ms), which every search and brief
    would pay for one short digest; the digest is the same (a test holds them equal)."""
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # CPython up to 3.11
        except ImportError:
            from hashlib import sha256
    return sha256


def fingerprint(question: str) -> str | None:
    """What tells one question from another: its distinct index terms (stemmed words,
    CJK bigrams), hashed — the usage data never holds the question's text."""
    from .analysis import tokens

    terms = sorted(set(tokens(question or "")))
    if not terms:
        return None
    return _sha256()(" ".join(terms).encode("utf-8")).hexdigest()[:16]


def record_use(root: Path, ids: list[str], via: str, when: _dt.datetime | None = None,
               question: str | None = None, agent: str | None = None) -> None:
    """Note that the memory notes (``memories/<slug>.md``) and role-page entries
    (``agents/<role>.md#^<id>``) among the hits' ``ids`` were recalled (``via``: brief or
    search): gc scores notes by it, compaction keeps the entries recalled. With the
    ``question`` asked (a search's query, a brief's task) the record is kept even when
    nothing was recalled, with the question's fingerprint — never its text — and the
    ``agent`` who asked (``vaultmem stats``: repeated questions)."""
    notes = [p for p in ids if p.startswith(f"{layout.MEMORIES_DIR}/")
             or (p.startswith(f"{layout.AGENTS_DIR}/") and "#^" in p)]
    q = fingerprint(question) if question else None
    if not notes and not q:
        return
    when = when or _dt.datetime.now(_dt.timezone.utc)
    rec = {"t": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "via": via, "ids": notes}  # a search after a brief: later
    if q:
        rec.update(q=q, agent=agent)
    line = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
    global _due
    with _lock:
        key = str(root)
        if key in _holders:
            _held.setdefault(key, []).append(line)
            if _due is not None:
                return
            due = threading.Timer(HOLD_SECONDS, _write_due)
            due.name, due.daemon = "vaultmem usage records", True
            try:
                due.start()
            except RuntimeError:  # no thread to be had (a thread limit, the process ending): written now
                files.append_local(root, USAGE_FILE, b"".join(_held.pop(key)))
            else:
                _due = due
            return
    files.append_local(root, USAGE_FILE, line)


def hold(root: Path) -> None:
    """This process stays (the MCP server): it keeps ``root``'s records and appends them
    together, in one write, at most :data:`HOLD_SECONDS` after the first of them, when
    :func:`release` is called, or when the process exits. A call then answers without
    writing a line — each line appended woke the server's own file watcher (two file
    events a call, on its threads). Another process reads them up to that much later; this
    process's own :func:`read_usage` writes them first. A process killed outright loses
    at most that last second's records: usage data is best-effort. Each ``hold`` is ended
    by one :func:`release`."""
    with _lock:
        _holders[str(root)] = _holders.get(str(root), 0) + 1


def release(root: Path) -> None:
    """End one :func:`hold` of ``root``; the records held are written now."""
    with _lock:
        n = _holders.get(str(root), 0) - 1
        if n > 0:
            _holders[str(root)] = n
        else:
            _holders.pop(str(root), None)
    flush(root)


def flush(root: Path | None = None) -> None:
    """Write the records held for ``root`` (every vault's: None) now, each vault's in one
    append, in the order they were made."""
    with _lock:  # the write under the lock: two writers of held records never swap their order
        for key in [str(root)] if root is not None else list(_held):
            lines = _held.pop(key, None)
            if lines:
                files.append_local(Path(key), USAGE_FILE, b"".join(lines))


def _write_due() -> None:
    global _due
    with _lock:
        _due = None
    flush()


def _forked() -> None:
    """In a child process: what the parent holds is the parent's to write (once), and no
    thread of the parent's — its timer, a writer holding the lock — came along."""
    global _lock, _due, _counting
    _lock, _counting = threading.Lock(), threading.Lock()
    _holders.clear()
    _held.clear()
    _counted.clear()
    _due = None


atexit.register(flush)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def usage_data(root: Path) -> bytes | None:
    """The usage file's bytes (None: there is none), with what this process holds written
    first (:func:`hold`: every vault's, whatever spelling of its folder it was given)."""
    flush()
    try:
        return files.read_local(root, USAGE_FILE)
    except (OSError, VaultmemError):
        return None


def read_usage(root: Path) -> dict[str, tuple[int, str]]:
    """Each note's recalls and the last one's time: ``path → (count, ISO time)``. A
    line that cannot be read (torn by a crash) is skipped. What this process holds
    (:func:`hold`) is written first.

    The file only grows (lines appended), so it is counted once: a process keeps its
    counts and the bytes they cover, and reads only what was appended since; the counts
    are also kept for the next process in :data:`COUNTS_FILE` (every :data:`COUNTS_EVERY`
    bytes counted). A brief of a large page asks this at every call: reading the whole
    file took 6.5 s at 315,000 lines. Counts that no longer match the file (it was
    replaced, cut, or rewritten) are dropped and the file is counted afresh."""
    flush()
    try:
        path = files.own_folder(root, files.LOCAL_DIR) / USAGE_FILE
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (OSError, VaultmemError):  # none yet, or a link: nothing recalled
        return {}
    try:
        with os.fdopen(fd, "rb") as f, _counting:
            return _counted_now(root, os.path.realpath(path), f)
    except OSError:  # not a file, or not readable: nothing recalled (usage data is best-effort)
        return {}


def _counted_now(root: Path, key: str, f) -> dict[str, tuple[int, str]]:
    """:func:`read_usage` of the open usage file ``f`` (its real path ``key``), under
    ``_counting``: the counts so far, and what was appended since."""
    st = os.fstat(f.fileno())
    counted = _counted.get(key)
    if counted is None or not counted.matches(f, st):
        counted = _saved_counts(root, f, st) or _Counts(st.st_dev, st.st_ino)
    f.seek(counted.offset)
    new = f.read()
    whole = new[: new.rfind(b"\n") + 1]  # a line still being written is counted once it is whole
    _count(counted.counts, whole)
    counted.offset += len(whole)
    if len(counted.head) < EDGE_BYTES:
        counted.head = (counted.head + whole)[:EDGE_BYTES]
    counted.tail = (counted.tail + whole)[-EDGE_BYTES:]
    counted.unsaved += len(whole)
    _counted[key] = counted
    if counted.unsaved >= COUNTS_EVERY:
        counted.unsaved = 0
        files.write_local(root, COUNTS_FILE, counted.dump())
    return dict(counted.counts)


COUNTS_FILE = "usage.counts"  # in .vaultmem/local/: read_usage's counts, and what of the file they cover
COUNTS_EVERY = 1 << 20  # bytes of usage counted before the counts are kept for the next process again
# the first and the last bytes counted, kept to tell the file counted from another that took its
# inode (removed and made anew, emptied in place): its first line's time, to the microsecond
EDGE_BYTES = 64


class _Counts:
    """What :func:`read_usage` has counted of one usage file: its device and inode, how
    many bytes (whole lines), the first and last :data:`EDGE_BYTES` of them, and
    ``path → (count, last time)``."""

    def __init__(self, dev: int, ino: int, offset: int = 0, head: bytes = b"", tail: bytes = b"",
                 counts: dict | None = None) -> None:
        self.dev, self.ino, self.offset, self.head, self.tail = dev, ino, offset, head, tail
        self.counts: dict[str, tuple[int, str]] = counts if counts is not None else {}
        self.unsaved = 0

    def matches(self, f, st: os.stat_result) -> bool:
        """Whether the open file ``f`` is the one counted, grown or as it was."""
        if (st.st_dev, st.st_ino) != (self.dev, self.ino) or st.st_size < self.offset:
            return False
        fd = f.fileno()
        return (os.pread(fd, len(self.head), 0) == self.head
                and os.pread(fd, len(self.tail), self.offset - len(self.tail)) == self.tail)

    def dump(self) -> bytes:
        return json.dumps({"v": 2, "dev": self.dev, "ino": self.ino, "offset": self.offset, "head": self.head.hex(),
                           "tail": self.tail.hex(), "counts": self.counts}, separators=(",", ":")).encode("ascii")


_counting = threading.Lock()  # guards _counted (a server reads in several threads)
_counted: dict[str, _Counts] = {}  # a usage file's real path → its counts in this process


def _saved_counts(root: Path, f, st: os.stat_result) -> _Counts | None:
    """The counts a process kept for the next (:data:`COUNTS_FILE`), when they are of
    this file; None otherwise (none, damaged, or of a file since replaced or rewritten)."""
    try:
        data = json.loads(files.read_local(root, COUNTS_FILE) or b"null")
        if not isinstance(data, dict) or data.get("v") != 2:
            return None
        dev, ino, offset, counts = data["dev"], data["ino"], data["offset"], data["counts"]
        head, tail = bytes.fromhex(data["head"]), bytes.fromhex(data["tail"])
        if (type(dev) is not int or type(ino) is not int or type(offset) is not int
                or len(head) != min(offset, EDGE_BYTES) or len(tail) != min(offset, EDGE_BYTES)
                or not isinstance(counts, dict)
                or not all(type(c) is list and len(c) == 2 and type(c[0]) is int and type(c[1]) is str
                           for c in counts.values())):
            return None
    except (OSError, VaultmemError, ValueError, KeyError, TypeError, RecursionError):
        return None
    saved = _Counts(dev, ino, offset, head, tail, {p: (c[0], c[1]) for p, c in counts.items()})
    return saved if saved.matches(f, st) else None


def _count(counts: dict[str, tuple[int, str]], data: bytes) -> None:
    """Add the records of ``data`` (whole lines) to ``counts``."""
    for raw in data.splitlines():
        try:
            rec = json.loads(raw)
            t, ids = str(rec["t"]), rec["ids"]
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
        for p in ids if isinstance(ids, list) else ():
            if not isinstance(p, str):
                continue
            n, last = counts.get(p, (0, ""))
            counts[p] = (n + 1, t if t > last else last)
