"""The semantic channel's vectors: derived data inside each index generation.

``gen-<n>/vectors/`` holds:

- ``journal-<k>.jsonl`` — what the lexical index was given, one line per write: the paths
  whose documents went and the documents that came (``{"del": [...], "add": [...]}``).
  Appending it costs a JSON dump and no model, so a refresh that edits the index never
  imports numpy or loads a model; the journal is written after the engine's commit and
  before the manifest's, so a process killed in between re-indexes those files (and
  journals them again) on the next refresh. A line cut off by a crash is never read.
- ``set-<ns>/`` — a complete vector set: ``vectors.npy`` (float32, one unit-length row per
  document), ``docs.jsonl`` (the document of each row, in row order), ``offsets.npy``
  (where each row's line starts) and ``rows.json`` (each row's id and path).
- ``state.json`` — the live set, the model's fingerprint, and how much of the journal the
  set holds. Written last and atomically: a process killed while it makes a set leaves
  the previous set live (or none), never a row whose vector is not its document's.

:func:`sync` (called with the index lock held) folds the journal's new lines into a new
set: it embeds only the documents that came since, copies the rows of the others, drops
those of deleted files; a model whose fingerprint differs re-embeds every document.
Searching is a brute-force cosine over the memory-mapped matrix (10,000 × 256 floats:
about a millisecond), then documents are read for the best rows only.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import fields
from pathlib import Path

from .. import files, layout
from ..models import IndexDoc

VERSION = 1
STATE = "state.json"
SET_PREFIX = "set-"
JOURNAL_PREFIX = "journal-"
ROTATE_BYTES = 4 * 1024 * 1024  # a fully applied journal beyond this starts afresh
# a journal the channel never folds in (it never opens) grows with every change: beyond this
# the generation stops keeping vectors (its folder goes), and the next opening rebuilds
MAX_JOURNAL_BYTES = 64 * 1024 * 1024
MAX_EMBED_CHARS = 2000  # what of a document is embedded: its beginning (title first)
_DOC_FIELDS = {f.name for f in fields(IndexDoc)}


def folder(gen_dir: Path) -> Path:
    return Path(gen_dir) / layout.INDEX_VECTORS


def started(gen_dir: Path) -> bool:
    """Whether this generation keeps vectors (its writes are journaled)."""
    return folder(gen_dir).is_dir()


def embed_text(doc: IndexDoc) -> str:
    """What is embedded for a document: its title, text and aliases (``near``, the
    neighbours' text, is left out: measured in docs/recall.md)."""
    parts = [doc.title, doc.text, " ".join(doc.aliases)]
    return "\n".join(p for p in parts if p)[:MAX_EMBED_CHARS]


def read_state(gen_dir: Path) -> dict | None:
    try:
        data = json.loads((folder(gen_dir) / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    return data


def _journal_name(state: dict | None) -> str:
    name = (state or {}).get("journal")
    return name if isinstance(name, str) and name.startswith(JOURNAL_PREFIX) and "/" not in name else \
        f"{JOURNAL_PREFIX}0.jsonl"


def start(gen_dir: Path) -> None:
    """Make a generation keep vectors from now on: its folder and an empty journal."""
    folder(gen_dir).mkdir(parents=True, exist_ok=True)
    (folder(gen_dir) / _journal_name(None)).touch()


def record(gen_dir: Path, add: list[IndexDoc], delete_paths: list[str]) -> None:
    """Journal one write of the lexical index (no model, no numpy): one appended line,
    fsynced. Call with the index lock held, after the engine's commit."""
    if not add and not delete_paths:
        return
    base = folder(gen_dir)
    base.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"del": sorted(set(delete_paths)), "add": [d.plain() for d in add]},
                      ensure_ascii=False, separators=(",", ":")) + "\n"
    state = read_state(gen_dir)
    path = base / _journal_name(state)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size - (state or {}).get("applied", 0) > MAX_JOURNAL_BYTES:
            shutil.rmtree(base, ignore_errors=True)  # readers keep what they have open
            return
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = "\n" + line  # after a line a crash cut off (never read: not valid JSON)
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def pending(gen_dir: Path, fingerprint: str | None = None) -> bool:
    """Whether the live set lacks journaled writes (or was made by another model)."""
    state = read_state(gen_dir)
    if state is None:
        return True
    if fingerprint is not None and state.get("fingerprint") != fingerprint:
        return True
    try:
        size = (folder(gen_dir) / _journal_name(state)).stat().st_size
    except FileNotFoundError:
        size = 0
    return size > state.get("applied", 0)


def _journal_lines(path: Path, start_at: int) -> tuple[list[dict], int]:
    """The whole lines of the journal from ``start_at``, and where they end."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start_at)
            data = fh.read()
    except FileNotFoundError:
        return [], start_at
    whole = data[: data.rfind(b"\n") + 1]
    out = []
    for raw in whole.split(b"\n"):
        if raw.strip():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue  # a line a crash cut off
            if isinstance(entry, dict):
                out.append(entry)
    return out, start_at + len(whole)


def as_doc(data: dict) -> IndexDoc:
    return IndexDoc(**{k: v for k, v in data.items() if k in _DOC_FIELDS})


class Lost(Exception):
    """The generation's vectors cannot be made from what it holds (its set is damaged and
    the journal no longer holds every document): the index must be built afresh."""


class TooMany(Exception):
    """More documents wait to be embedded than the caller would embed itself."""

    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} documents wait to be embedded")
        self.waiting = waiting


def sync(gen_dir: Path, model, most: int | None = None) -> dict:
    """Bring the generation's vectors up to date with its journal and ``model``; returns
    ``{"embedded", "kept", "dropped", "count"}``. Call with the index lock held.
    :class:`Lost` when the generation cannot say what its documents are; :class:`TooMany`,
    with nothing written, when more than ``most`` documents would be embedded."""
    import numpy as np

    base = folder(gen_dir)
    base.mkdir(parents=True, exist_ok=True)
    state = read_state(gen_dir)
    journal = base / _journal_name(state)
    old = VectorSet.open(gen_dir, state) if state is not None else None
    if state is not None and old is None:
        raise Lost(f"the vector set of {gen_dir.name} cannot be read")
    if state is None and not journal.exists():
        raise Lost(f"{gen_dir.name} has journaled no documents")
    same_model = old is not None and state.get("fingerprint") == model.fingerprint and old.dim == model.dim
    entries, end = _journal_lines(journal, state.get("applied", 0) if state is not None else 0)
    if same_model and not entries:
        return {"embedded": 0, "kept": old.count, "dropped": 0, "count": old.count}
    # the rows of the old set that stand, and the documents to embed (the newest per id)
    keep = list(range(old.count)) if old is not None else []
    keep_ids = {old.rows[i][0]: i for i in keep} if old is not None else {}
    fresh: dict[str, dict] = {}
    for entry in entries:
        gone = set(entry.get("del") or ())
        if gone:
            fresh = {i: d for i, d in fresh.items() if d.get("path") not in gone}
            keep_ids = {i: r for i, r in keep_ids.items() if old.rows[r][1] not in gone}
        for d in entry.get("add") or ():
            if isinstance(d, dict) and isinstance(d.get("id"), str):
                keep_ids.pop(d["id"], None)
                fresh[d["id"]] = d
    kept_rows = sorted(keep_ids.values())
    dropped = (old.count if old is not None else 0) - len(kept_rows)
    if not same_model and old is not None:
        # another model: every document is embedded again, from the old set's documents
        for r in kept_rows:
            d = json.loads(old.line(r))
            fresh.setdefault(d["id"], d)
        kept_rows = []
    new_docs = [fresh[i] for i in sorted(fresh)]
    if most is not None and len(new_docs) > most:
        raise TooMany(len(new_docs))
    texts = [embed_text(as_doc(d)) for d in new_docs]
    embedded = model.embed(texts) if texts else np.zeros((0, model.dim), dtype=np.float32)
    name = f"{SET_PREFIX}{time.time_ns()}"
    target = base / name
    target.mkdir()
    count = len(kept_rows) + len(new_docs)
    matrix = np.empty((count, model.dim), dtype=np.float32)
    if kept_rows:
        matrix[: len(kept_rows)] = old.matrix[np.asarray(kept_rows, dtype=np.int64)]
    matrix[len(kept_rows):] = embedded
    np.save(target / "vectors.npy", matrix)
    offsets = np.empty(count + 1, dtype=np.int64)
    rows = []
    with open(target / "docs.jsonl", "wb") as fh:
        pos = 0
        for n, r in enumerate(kept_rows):
            line = old.line(r)
            offsets[n] = pos
            fh.write(line)
            pos += len(line)
            rows.append(list(old.rows[r]))
        for n, d in enumerate(new_docs, start=len(kept_rows)):
            line = json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            offsets[n] = pos
            fh.write(line)
            pos += len(line)
            rows.append([d["id"], d.get("path")])
        offsets[count] = pos
    np.save(target / "offsets.npy", offsets)
    (target / "rows.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    for part in ("vectors.npy", "docs.jsonl", "offsets.npy", "rows.json"):
        files.fsync_path(target / part)
    new_state = {"version": VERSION, "set": name, "fingerprint": model.fingerprint, "model": model.name,
                 "dim": model.dim, "count": count, "journal": journal.name, "applied": end}
    rotate = end > ROTATE_BYTES
    if rotate:  # everything journaled is in the set: the next writes go to a new journal
        fresh_journal = base / f"{JOURNAL_PREFIX}{time.time_ns()}.jsonl"
        fresh_journal.touch()
        new_state.update(journal=fresh_journal.name, applied=0)
    files.atomic_write(base / STATE, json.dumps(new_state))  # the swap
    if old is not None:
        old.close()
    tidy(gen_dir)
    return {"embedded": len(new_docs), "kept": len(kept_rows), "dropped": dropped, "count": count}


def tidy(gen_dir: Path) -> None:
    """Remove the sets and journals the live state does not name (what a killed sync,
    a finished one or a rotation left). Call with the index lock held."""
    base = folder(gen_dir)
    state = read_state(gen_dir)
    live = {(state or {}).get("set"), _journal_name(state)}
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for e in entries:
        if e.name in live or not (e.name.startswith(SET_PREFIX) or e.name.startswith(JOURNAL_PREFIX)):
            continue
        if e.name.startswith(JOURNAL_PREFIX) and state is None:
            continue  # nothing folded in yet: every journal line is still needed
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)
        else:
            try:
                os.unlink(e.path)
            except OSError:
                pass


class VectorSet:
    """One complete vector set, memory-mapped."""

    def __init__(self, target: Path, state: dict) -> None:
        import mmap

        import numpy as np

        self.state = state
        self.target = target
        self.matrix = np.load(target / "vectors.npy", mmap_mode="r")
        self.offsets = np.load(target / "offsets.npy")
        self.rows = json.loads((target / "rows.json").read_text(encoding="utf-8"))
        self.count = int(self.matrix.shape[0]) if self.matrix.ndim == 2 else 0
        self.dim = int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0
        if len(self.rows) != self.count or len(self.offsets) != self.count + 1:
            raise ValueError(f"the vector set {target} does not hold one document per row")
        self._fh = open(target / "docs.jsonl", "rb")
        size = os.fstat(self._fh.fileno()).st_size
        self._map = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self._docs: dict[int, IndexDoc] = {}
        self._row_of: dict[str, int] | None = None

    @classmethod
    def open(cls, gen_dir: Path, state: dict | None = None) -> VectorSet | None:
        """The live set of a generation, or None (none made yet, or unreadable)."""
        state = read_state(gen_dir) if state is None else state
        name = (state or {}).get("set")
        if not isinstance(name, str) or not name.startswith(SET_PREFIX) or "/" in name:
            return None
        try:
            return cls(folder(gen_dir) / name, state)
        except (OSError, ValueError):
            return None

    @property
    def fingerprint(self) -> str | None:
        return self.state.get("fingerprint")

    def line(self, row: int) -> bytes:
        return bytes(self._map[int(self.offsets[row]): int(self.offsets[row + 1])])

    def doc(self, row: int) -> IndexDoc:
        got = self._docs.get(row)
        if got is None:
            got = self._docs[row] = as_doc(json.loads(self.line(row)))
        return got

    def similarity_of(self, ids: list[str], query) -> dict[str, float]:
        """Cosine similarity of the query to each of ``ids`` that has a row."""
        if self._row_of is None:
            self._row_of = {r[0]: n for n, r in enumerate(self.rows)}
        found = {i: self._row_of[i] for i in ids if i in self._row_of}
        if not found:
            return {}
        import numpy as np

        sims = self.matrix[np.asarray(list(found.values()), dtype=np.int64)] @ query
        return {i: float(s) for i, s in zip(found, sims)}

    def search(self, query, admits, limit: int) -> list[tuple[IndexDoc, float]]:
        """The ``limit`` rows most similar to the unit vector ``query`` whose documents
        ``admits`` takes, best first (equal similarities by id)."""
        import numpy as np

        if not self.count or limit <= 0:
            return []
        sims = self.matrix @ np.asarray(query, dtype=np.float32)
        out: list[tuple[IndexDoc, float]] = []
        done: set[int] = set()
        take = min(self.count, max(4 * limit, 200))
        while True:
            if take >= self.count:
                order = np.argsort(-sims, kind="stable")
            else:
                top = np.argpartition(-sims, take - 1)[:take]
                order = top[np.argsort(-sims[top], kind="stable")]
            for row in order.tolist():
                if row in done:
                    continue
                done.add(row)
                doc = self.doc(row)
                if admits(doc):
                    out.append((doc, float(sims[row])))
                    if len(out) >= limit:
                        break
            if len(out) >= limit or take >= self.count:
                break
            take = min(self.count, take * 4)
        out.sort(key=lambda x: (-x[1], x[0].id))
        return out

    def close(self) -> None:
        try:
            if not isinstance(self._map, bytes):
                self._map.close()
            self._fh.close()
        except Exception:
            pass
