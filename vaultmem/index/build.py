"""Building an index generation from every file, and the generation folders themselves.

A rebuild fills a fresh ``gen-<n>/`` beside the live one — parsing and analysing the files
in worker processes when there are many — writes its manifest, and swaps ``CURRENT``
atomically, so searches keep working meanwhile. The generation before it is kept one
round for readers that still have it open; every other generation is removed once the
index lock is held (a build only ever runs under that lock, so a generation that is
neither live nor the one before it was left by a killed build).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .. import files
from ..errors import ParseError, UnsafePath, VaultmemError
from ..layout import path_text, undecodable
from ..models import IndexDoc
from . import SyncReport
from .manifest import Manifests, entry, problems_of
from .registry import get, open_engine

PARALLEL_MIN_FILES = 2000  # a rebuild of this many files parses them in worker processes
PARALLEL_CHUNK = 500
GEN_PREFIX = "gen-"
CURRENT_FILE = "CURRENT"

Progress = Callable[[int, int], None]


# -- reading and parsing files ---------------------------------------------------------------
def read_file(root: Path, rel: str) -> tuple[bytes, str, dict | None] | None:
    """A file's bytes, sha1 and the problem that kept it from being read, or None if it
    is gone (or not a readable file). A file that may not be read — a symlink leading
    out of the vault, into its private folders, a pipe — is not read at all: no bytes, a
    checksum of the reason, and the reason as its problem (:func:`files.read_bytes`)."""
    import hashlib  # only when a file is read for indexing, not by every command

    if undecodable(rel):  # a name no engine can store: the file is listed as unread, never read
        shown = path_text(rel)
        problem = {"path": shown, "line": None, "message": "its name is not UTF-8 text",
                   "hint": f"rename {shown} (with UTF-8 characters only) to have it indexed", "unread": True}
        return b"", "unread:" + hashlib.sha1(b"name not UTF-8\0" + shown.encode()).hexdigest(), problem
    try:
        data = files.read_bytes(root, rel)
    except UnsafePath as exc:
        problem = {"path": rel, "line": None, "message": exc.message, "hint": exc.hint, "unread": True}
        return b"", "unread:" + hashlib.sha1(f"{exc.message}\0{exc.hint}".encode()).hexdigest(), problem
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None
    return data, hashlib.sha1(data).hexdigest(), None


# The most of one document's text that is indexed, kept and shown: what vaultmem writes
# is at most this size (memory.max_note_bytes), and a larger text brought by other means
# (git pull, an editor) is indexed by its beginning, so that no reader — search, snippet,
# brief — ever spends time on megabytes of one note.
MAX_DOC_CHARS = 256 * 1024


def parse_file(rel: str, data: bytes) -> tuple[list[IndexDoc], dict | None]:
    """A file's documents, or none and the problem that stopped its parse (or, for a
    document cut to :data:`MAX_DOC_CHARS`, the documents and that warning)."""
    from ..parse.document import UNMAKEABLE
    from ..parse.records import records  # (the parsers load when a file is parsed, not by every search)

    try:
        text = data.decode("utf-8")
        docs = records(rel, text)
        problem = None
        for d in docs:
            if len(d.text) > MAX_DOC_CHARS:
                if problem is None:
                    problem = {"path": rel, "line": d.line, "partial": True,
                               "message": f"is {len(d.text):,} characters long; only its first {MAX_DOC_CHARS:,} "
                                          "are indexed and shown",
                               "hint": "split it into smaller notes, or move the long material out of the vault"}
                cut = d.text.rfind("\n", 0, MAX_DOC_CHARS)
                d.text = d.text[: cut if cut > MAX_DOC_CHARS // 2 else MAX_DOC_CHARS]
        return docs, problem
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return [], {"path": rel, "line": line, "message": "not UTF-8 text"}
    except ParseError as exc:
        return [], {"path": rel, "line": exc.line, "message": exc.message, "hint": exc.hint}
    except UNMAKEABLE as exc:  # a value no reader can use (a number of 5,000 digits): this file, not the index
        return [], {"path": rel, "line": None, "message": f"cannot be read: {exc}",
                    "hint": "fix the file's frontmatter; the rest of the vault is read"}


def prepare(root: str, rels: list[str], whole: bool = True) -> list[tuple]:
    """Read, checksum, parse and analyse files: (rel, sha, docs, problem, fields, owner)
    each, or (rel, None, …) for a file that has gone. Runs in rebuild worker processes.
    ``whole`` False (a worker's answer, pickled to the build): a document that is no
    note of a session is sent as None — its fields hold all the index needs of it, and
    a document sent whole costs twice its fields to pickle and unpickle; a note of a
    session is sent whole, since its neighbours' text is added in the build."""
    from .fields import fields_of
    from .manifest import owner_of

    out = []
    for rel in rels:
        got = read_file(Path(root), rel)
        if got is None:
            out.append((rel, None, [], None, [], None))
            continue
        data, sha, problem = got
        docs, problem = ([], problem) if problem else parse_file(rel, data)
        fields = [fields_of(d) for d in docs]
        owner = owner_of(docs)
        if not whole:
            docs = [d if d.session else None for d in docs]
        out.append((rel, sha, docs, problem, fields, owner))
    return out


WORKER_NAME = "vaultmem-index-worker-of-{}"  # a build's worker processes: named after the building process's id


def _named_spawn(multiprocessing):
    """The spawn context, its processes named :data:`WORKER_NAME` of this process: a
    worker knows it is this build's before it imports the main script (spawn sets its
    name first), and a vault opened then is refused (:mod:`vaultmem.vault`) — a script's
    own workers are left alone."""
    base = type(multiprocessing.get_context("spawn"))

    class Named(base):
        def Process(self, *args, **kwargs):  # noqa: N802 (multiprocessing's name)
            process = super().Process(*args, **kwargs)
            process.name = WORKER_NAME.format(os.getpid())
            return process

    return Named()


def prepare_all(root: Path, rels: list[str], progress: Progress | None, whole: bool = True) -> Iterator[tuple]:
    """:func:`prepare` over every file — in worker processes (one per core, at most
    four) when there are many, since parsing and analysis are the bulk of a build and
    pure Python; in this process otherwise, or if workers cannot be started. ``whole``:
    every document sent whole (otherwise a worker sends only the notes of sessions)."""
    total, done = len(rels), 0
    chunks = [rels[i:i + PARALLEL_CHUNK] for i in range(0, total, PARALLEL_CHUNK)]
    workers = min(os.cpu_count() or 1, 4)
    if total >= PARALLEL_MIN_FILES and workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        try:
            # spawn, not fork: a watcher process has threads running
            with ProcessPoolExecutor(workers, mp_context=_named_spawn(multiprocessing)) as pool:
                for batch in pool.map(prepare, [str(root)] * len(chunks), chunks, [whole] * len(chunks)):
                    done += len(batch)
                    if progress:
                        progress(done, total)
                    yield from batch
            return
        except (OSError, RuntimeError) as exc:  # no processes here (a sandbox): do it in-process
            if done:
                raise VaultmemError(f"indexing workers failed: {exc}") from exc
            logging.getLogger("vaultmem.index").warning(
                "the index is built in this process, on one core: its worker processes could not start (%s)",
                str(exc) or type(exc).__name__)
    for chunk in chunks:
        batch = prepare(str(root), chunk)
        done += len(batch)
        if progress:
            progress(done, total)
        yield from batch


# -- generations -------------------------------------------------------------------------------
def _real_dir(path: Path) -> bool:
    """A folder, not a link to one (a generation linking out of the vault is never used)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def current_generation(base: Path) -> str | None:
    """The live generation named by ``CURRENT``, if that names a folder (a real one: not
    a link, which could lead to an index built anywhere). A ``CURRENT`` that is not a
    regular file (a folder, a link, a FIFO that would wait for a writer) names none: the
    index is rebuilt, and the swap replaces it (:func:`swap_current`)."""
    try:
        fd = os.open(os.path.join(base, CURRENT_FILE), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:  # read on every search: a plain read, no text wrapper
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        name = os.read(fd, 200).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
    return name if name.startswith(GEN_PREFIX) and "/" not in name and _real_dir(os.path.join(base, name)) else None


def _entries(base: Path) -> list[tuple[str, bool]]:
    """(name, is a real folder) of each ``gen-*`` entry of ``base``."""
    try:
        with os.scandir(base) as it:
            return [(e.name, e.is_dir(follow_symlinks=False)) for e in it if e.name.startswith(GEN_PREFIX)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def generations(base: Path) -> list[str]:
    """Every generation folder, oldest first (names hold their creation time)."""
    return sorted((name for name, real in _entries(base) if real), key=lambda n: (len(n), n))


def stale_generations(base: Path, live: str | None = None) -> list[str]:
    """Generations to remove: all but the live one and the newest one older than it (a
    process that opened that one a moment ago may still be reading it), and every
    ``gen-*`` that is no folder (a file, a link). Call with the index lock held: a build in progress — which holds the lock — looks like a stale one."""
    live = current_generation(base) if live is None else live
    entries = _entries(base)
    odd = [name for name, real in entries if not real]
    gens = sorted((name for name, real in entries if real), key=lambda n: (len(n), n))
    if live is None or live not in gens:
        return odd + gens[:-1]  # nothing live: keep only the newest
    older = gens[: gens.index(live)]
    keep = {live, *older[-1:]}
    return odd + [g for g in gens if g not in keep]


def has_links(folder: Path) -> bool:
    """Whether anything in ``folder`` (a generation) is a symlink: an engine's or the
    manifest's files linking anywhere else make the generation unusable."""
    stack = [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    if e.is_symlink():
                        return True
                    if e.is_dir(follow_symlinks=False):
                        stack.append(Path(e.path))
        except OSError:
            continue
    return False


def swap_current(base: Path, gen: str) -> None:
    """Make ``gen`` the live generation: ``CURRENT`` replaced at once. Whatever stands in
    its place that is not a regular file (a folder, a link, a FIFO: a hand's or a tool's)
    is removed first — a rename cannot replace a folder, and a link is never written
    through — so an index whose ``CURRENT`` went wrong is rebuilt, not broken for good."""
    path = base / CURRENT_FILE
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            shutil.rmtree(path)
        else:
            path.unlink()
    files.atomic_write(path, gen + "\n")


def remove_generations(base: Path, names: list[str]) -> None:
    for name in names:
        path = base / name
        if _real_dir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                path.unlink()  # a file or a link (never what a link points to)
            except OSError:
                pass


def build_generation(root: Path, base: Path, manifests: Manifests, seen: dict, engine: str, pinned: bool,
                     progress: Progress | None = None, vectors: bool = False) -> SyncReport:
    """Index every file of ``seen`` (rel → stat) into a new generation on ``engine`` and
    make it the live one. ``vectors``: the generation keeps the semantic channel's
    journal (its documents, to embed when that channel opens). Call with the index lock
    held."""
    report = SyncReport(rebuilt=True)
    base.mkdir(parents=True, exist_ok=True)
    # derived data: never committed, whatever the vault's .gitignore says
    files.ensure_gitignore(base, "# derived search index: rebuilt from the Markdown, never committed\n*\n")
    remove_generations(base, stale_generations(base))  # what killed builds left
    gen = f"{GEN_PREFIX}{time.time_ns()}"
    index = open_engine(engine, base / gen, create=True)
    manifest: dict[str, dict] = {}
    docs: list[IndexDoc | None] = []  # None: a document a worker did not send (its fields say all)
    fields: list[dict] = []
    whole = vectors or not get(engine).prepared_only  # the semantic journal, or an engine that reads documents
    try:
        for rel, sha, found, problem, found_fields, owner in prepare_all(root, sorted(seen), progress, whole):
            if sha is None:
                continue
            docs.extend(found)
            fields.extend(found_fields)
            report.new.append(rel)
            manifest[rel] = entry(seen[rel], sha, problem, [d for d in found if d is not None], owner)
        report.docs = len(docs)
        from ..parse.records import session_neighbours
        from .fields import with_neighbours

        sent = [n for n, d in enumerate(docs) if d is not None]
        for k in session_neighbours([docs[n] for n in sent]):  # the notes of a session know each other's text
            n = sent[k]
            fields[n] = with_neighbours(fields[n], docs[n])
        index.write(docs, [], prepared=fields)  # one commit: one segment, nothing to merge afterwards
    finally:
        index.close()
    if vectors:
        from . import vectors as semantic

        semantic.start(base / gen)
        semantic.record(base / gen, docs, [])
    manifests.save(gen, manifest, engine=engine, pinned=pinned)
    report.engine = engine
    swap_current(base, gen)
    remove_generations(base, stale_generations(base, gen))
    report.problems = problems_of(manifest)
    return report
