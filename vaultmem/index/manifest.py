"""What an index generation holds: its manifest, the manifest's journal, and the summary.

``gen-<n>/manifest.json`` records the engine, whether it was chosen by hand, and per file
its stat (mtime, size, change time, inode), sha1, parse problem and owning agent.
Changes of a few files are appended to ``manifest.journal`` (one fsynced write) instead of
rewriting a manifest of every file; the journal is folded in once it grows long.
``summary.bin`` (``files.pack``: marshal behind a CRC-32) repeats what every command needs
of the manifest — engine, owners, problems, one digest of every file's stat — so that a
refresh that finds nothing changed, and opening the engine, never parse the manifest
(1.6 MB of JSON at 10,000 files). A summary is valid only for the manifest and journal
it was made from (its key holds their stat), so a crash or a hand edit makes it stale.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .. import files
from ..analysis import ANALYZER_VERSION
from ..models import IndexDoc
from ..walk import DIGEST_MASK, stat_digest, stat_term
from .registry import LEGACY_ENGINE

MANIFEST_VERSION = 1
SUMMARY_VERSION = 3
JOURNAL_MAX_BYTES = 256 * 1024  # fold the manifest journal into manifest.json beyond this


def owner_of(docs: list[IndexDoc]) -> str | None:
    """The agent a file's documents belong to (None: shared)."""
    owners = {d.agent for d in docs if d.agent}
    return owners.pop() if len(owners) == 1 else None


def entry(stat: tuple, sha: str, problem: dict | None, docs: list[IndexDoc], owner: str | None | object = ...) -> dict:
    """A file's manifest entry: its stat (mtime, size, change time, inode), checksum,
    parse problem, owner (``owner``, or :func:`owner_of` the ``docs``) and the session
    its note belongs to (if any: the first of ``docs`` that names one)."""
    mtime, size, ctime, inode = stat
    out = {"m": mtime, "s": size, "c": ctime, "i": inode, "h": sha}
    if problem is not None:  # (no problem, no owner: no key — most files, a fifth of the manifest)
        out["p"] = problem
    owner = owner_of(docs) if owner is ... else owner
    if owner is not None:
        out["o"] = owner
    session = next((d.session for d in docs if d.session), None)
    if session:
        out["g"] = session  # its notes' neighbours are the other notes of this session
    return out


def stat_of(entry: dict) -> tuple:
    """A manifest entry's stat, as the walk records one (mtime, size, change time, inode)."""
    return entry["m"], entry["s"], entry.get("c"), entry.get("i")


def same_stat(old: dict, stat: tuple) -> bool:
    return stat_of(old) == tuple(stat)


def problems_of(entries: dict) -> list[dict]:
    """The parse problems the manifest's ``entries`` record, in their order."""
    return [v["p"] for v in entries.values() if v.get("p")]


def facts_of(manifest: dict) -> dict:
    """Engine, pinned, count, owners and problems of a manifest."""
    entries = manifest["files"]
    return {"engine": manifest.get("engine", LEGACY_ENGINE), "pinned": bool(manifest.get("pinned")),
            "count": len(entries), "owners": {rel: v["o"] for rel, v in entries.items() if v.get("o")},
            "problems": problems_of(entries)}


def _json_bytes(data) -> bytes:
    """``data`` as UTF-8 JSON, without spaces. A file's name that holds bytes that are not
    UTF-8 (lone surrogates: raw, they cannot be written as UTF-8) has them as ``\\udcNN``
    escapes, which read back as they were."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


class Manifests:
    """The manifests and summaries of the generations in ``base``, cached per process."""

    def __init__(self, base: Path) -> None:
        self.base = Path(base)
        self._manifest_cache: list | None = None  # [base key, manifest, journal bytes applied]
        self._summary_cache: dict | None = None

    def forget(self) -> None:
        """Drop the cached manifest (an update edits it in place: after a failed one it is
        read again)."""
        self._manifest_cache = None

    # -- the manifest ------------------------------------------------------------------
    def analyzer(self, gen: str) -> str | None:
        """The analyzer version the generation's manifest says it was built with (None if
        it cannot be read): what ``verify`` compares with this vaultmem's."""
        try:
            data = json.loads((self.base / gen / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return str(data.get("analyzer")) if isinstance(data, dict) and data.get("analyzer") else None

    def load(self, gen: str) -> dict | None:
        """The generation's manifest: ``manifest.json`` plus the changes appended to
        ``manifest.journal`` since it was written (None if unreadable). Cached; a grown
        journal is read from where the cache stopped."""
        path, journal = self.base / gen / "manifest.json", self.base / gen / "manifest.journal"
        try:
            st = path.stat()
            base_key = (gen, st.st_mtime_ns, st.st_size, st.st_ino)
            cached = self._manifest_cache
            if cached is None or cached[0] != base_key:
                data = json.loads(path.read_text(encoding="utf-8"))
                if (not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION
                        or data.get("analyzer") != ANALYZER_VERSION or not isinstance(data.get("files"), dict)):
                    return None
                cached = self._manifest_cache = [base_key, data, 0]
        except (OSError, ValueError):
            return None
        try:
            with open(journal, "rb") as fh:
                fh.seek(cached[2])
                more = fh.read()
        except FileNotFoundError:
            more = b""
        whole = more[: more.rfind(b"\n") + 1]  # a line cut off by a crash is ignored
        for raw in whole.split(b"\n"):
            if raw.strip():
                try:
                    change = json.loads(raw)
                    if change.get("v") is None:
                        cached[1]["files"].pop(change["f"], None)
                    else:
                        cached[1]["files"][change["f"]] = change["v"]
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
        cached[2] += len(whole)
        return cached[1]

    def save(self, gen: str, manifest_files: dict, engine: str | None = None, pinned: bool | None = None) -> None:
        """Write the whole manifest (and drop the journal it now contains), then its
        summary. The engine and whether it was chosen by hand are kept from the current
        manifest unless given."""
        if engine is None or pinned is None:
            current = self.load(gen) or {}
            engine = engine or current.get("engine", LEGACY_ENGINE)
            pinned = bool(current.get("pinned")) if pinned is None else pinned
        data = {"version": MANIFEST_VERSION, "analyzer": ANALYZER_VERSION, "engine": engine, "pinned": pinned,
                "files": manifest_files}
        files.atomic_write(self.base / gen / "manifest.json", _json_bytes(data))
        (self.base / gen / "manifest.journal").unlink(missing_ok=True)
        self._manifest_cache = None
        self.save_summary(gen, data)

    def append(self, gen: str, manifest_files: dict, changed: list[str], prior: dict | None = None) -> None:
        """Record changed files by appending to the journal (one write, fsynced) — a few
        hundred bytes instead of rewriting a manifest of every file; the journal is folded
        into ``manifest.json`` once it grows long. ``prior``: each changed file's entry
        before the change (None: it had none); given, a summary that was current is
        carried over to the new journal (:meth:`carry_summary`) instead of going stale."""
        summary = self.summary(gen) if prior is not None else None  # current before this append
        journal = self.base / gen / "manifest.journal"
        size = journal.stat().st_size if journal.exists() else 0
        if size > JOURNAL_MAX_BYTES:
            self.save(gen, manifest_files)
            return
        lines = b"".join(_json_bytes({"f": rel, "v": manifest_files.get(rel)}) + b"\n" for rel in changed)
        fd = os.open(journal, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if size and os.pread(fd, 1, size - 1) != b"\n":
                lines = b"\n" + lines  # after a line a crash cut off
            os.write(fd, lines)
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._manifest_cache is not None:
            self._manifest_cache[2] = size + len(lines)  # our own change is applied already
        if summary is not None:
            self.carry_summary(gen, summary, manifest_files, changed, prior)

    # -- the summary -------------------------------------------------------------------
    def summary_key(self, gen: str) -> tuple | None:
        """What the summary was made from: the manifest's stat and the journal's size
        (any change of either, a crash's or a hand's, makes the summary stale)."""
        try:
            st = (self.base / gen / "manifest.json").stat()
        except OSError:
            return None
        try:
            journal = (self.base / gen / "manifest.journal").stat().st_size
        except FileNotFoundError:
            journal = 0
        except OSError:
            return None
        return (SUMMARY_VERSION, MANIFEST_VERSION, sys.version_info[:2], ANALYZER_VERSION, st.st_mtime_ns,
                st.st_size, st.st_ino, journal)

    def summary(self, gen: str) -> dict | None:
        """The generation's summary if it matches its manifest, else None."""
        key = self.summary_key(gen)
        if key is None:
            return None
        cached = self._summary_cache
        if cached is not None and cached["key"] == (gen, key):
            return cached
        try:
            data = files.unpack((self.base / gen / "summary.bin").read_bytes())
        except OSError:
            return None
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        data["key"] = (gen, key)
        self._summary_cache = data
        return data

    def save_summary(self, gen: str, manifest: dict) -> None:
        """Write the summary of ``manifest`` (as it is on disk now). A summary that cannot
        be written only costs the next command the manifest's parse."""
        key = self.summary_key(gen)
        if key is None:
            return
        entries = manifest["files"]
        data = {
            "key": key,
            **facts_of(manifest),
            "digest": stat_digest({rel: stat_of(v) for rel, v in entries.items()}),
        }
        self._write_summary(gen, data)

    def _write_summary(self, gen: str, data: dict) -> bool:
        """``data`` as the generation's summary; False if it could not be written."""
        packed = files.pack(data)
        if packed is None:
            return False
        try:
            files.atomic_write(self.base / gen / "summary.bin", packed, durable=False)
        except OSError:
            return False
        return True

    def carry_summary(self, gen: str, summary: dict, entries: dict, changed: list[str], prior: dict) -> None:
        """Write the summary of the manifest as it is now, from ``summary`` (current
        before ``changed`` changed, each from its ``prior`` entry): the digest moved by
        those files' terms alone, so that the next command's no-change check holds without
        re-reading the manifest, and a refresh of a few files stays a few files' work.
        Left stale (the next full check makes it afresh) when a file is missing from ``prior``."""
        digest, owners, problems = summary["digest"], dict(summary["owners"]), False
        for rel in changed:
            if rel not in prior:
                return
            old, new = prior[rel], entries.get(rel)
            if old is not None:
                digest -= stat_term(rel, stat_of(old))
            if new is not None:
                digest += stat_term(rel, stat_of(new))
            owners.pop(rel, None)
            if new is not None and new.get("o"):
                owners[rel] = new["o"]
            problems = problems or any(v is not None and v.get("p") for v in (old, new))
        key = self.summary_key(gen)
        if key is None:
            return
        data = {k: v for k, v in summary.items() if k != "key"}
        if problems:  # a parse problem came, went or changed: recounted (rare; one pass)
            data["problems"] = problems_of(entries)
        data.update(key=key, count=len(entries), owners=owners, digest=digest & DIGEST_MASK)
        if self._write_summary(gen, data):
            data["key"] = (gen, key)
            self._summary_cache = data

    def facts(self, gen: str) -> dict | None:
        """Engine, pinned, count, owners and problems of a generation: from its summary,
        else from its manifest (None if that is unreadable)."""
        summary = self.summary(gen)
        if summary is not None:
            return summary
        manifest = self.load(gen)
        return facts_of(manifest) if manifest is not None else None
