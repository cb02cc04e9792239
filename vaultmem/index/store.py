"""Keeping the derived index in step with the vault's files.

The index lives in ``.vaultmem/index/`` (git-ignored) as generations: ``gen-<n>/`` holds
an engine folder and ``manifest.json`` (per file: mtime, size, sha1, parse problem), and
the file ``CURRENT`` names the live generation; ``summary.bin`` (``files.pack``) repeats what
every command needs of the manifest — engine, owners, problems, one digest of every
file's stat — so that a refresh that finds nothing changed, and opening the engine, never
parse the manifest (1.9 MB of JSON at 10,000 files). A refresh stats every Markdown file,
re-reads only those whose mtime or size moved, and re-indexes only those whose content
checksum changed — reporting new, modified, deleted and moved (same checksum, new path)
files. A rebuild fills a fresh generation beside the live one and swaps ``CURRENT``
atomically, so searches keep working meanwhile. Writers take ``.vaultmem/index.lock``
(an OS lock, freed when its process dies); readers take no lock. An index that cannot be
opened or searched (killed mid-commit, files deleted or corrupted) is rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from .. import files
from ..analysis import ANALYZER_VERSION
from ..errors import BadInput, Busy, ParseError, VaultmemError
from ..models import IndexDoc
from ..parse.records import records
from ..walk import scan, stat_digest, take_ahead
from . import Filters, SyncReport

INDEX_DIR = ".vaultmem/index"
LOCK_FILE = ".vaultmem/index.lock"
MANIFEST_VERSION = 1
SUMMARY_VERSION = 3
JOURNAL_MAX_BYTES = 256 * 1024  # fold the manifest journal into manifest.json beyond this
PARALLEL_MIN_FILES = 2000  # a rebuild of this many files parses them in worker processes
PARALLEL_CHUNK = 500

Progress = Callable[[int, int], None]


ENGINES = ("whoosh", "tantivy")
ENV_ENGINE = "VAULTMEM_INDEX_ENGINE"  # overrides index.engine for one process (tests, benchmarks)
# ``auto`` builds a tantivy index from this many Markdown files on (Whoosh misses the
# 5 ms warm-search goal from 200 notes and is slower at every size measured:
# docs/benchmarks.md), and a Whoosh index is rebuilt on tantivy once the vault grows past
# it — never the other way round.
AUTO_TANTIVY_FILES = 200


def engine_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec("whoosh" if name == "whoosh" else "tantivy") is not None


def _open_engine(name: str, gen_dir: Path, create: bool = False):
    """The engine of one generation: Whoosh's files sit in the generation folder (as
    they always have), tantivy's in its ``tantivy/`` sub-folder."""
    if name == "tantivy":
        from .tantivy_engine import TantivyEngine

        return TantivyEngine(gen_dir / "tantivy", create=create)
    from .whoosh_engine import WhooshEngine

    return WhooshEngine(gen_dir, create=create)


def _read(root: Path, rel: str) -> tuple[bytes, str] | None:
    try:
        data = (root / rel).read_bytes()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return None
    import hashlib

    return data, hashlib.sha1(data).hexdigest()


def _docs(rel: str, data: bytes) -> tuple[list[IndexDoc], dict | None]:
    try:
        text = data.decode("utf-8")
        return records(rel, text), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return [], {"path": rel, "line": line, "message": "not UTF-8 text"}
    except ParseError as exc:
        return [], {"path": rel, "line": exc.line, "message": exc.message, "hint": exc.hint}


def _prepare(root: str, rels: list[str]) -> list[tuple]:
    """Read, checksum, parse and analyse files: (rel, sha, docs, problem, fields) each, or
    (rel, None, …) for a file that has gone. Runs in rebuild worker processes."""
    from .fields import fields_of

    out = []
    for rel in rels:
        got = _read(Path(root), rel)
        if got is None:
            out.append((rel, None, [], None, []))
            continue
        data, sha = got
        docs, problem = _docs(rel, data)
        out.append((rel, sha, docs, problem, [fields_of(d) for d in docs]))
    return out


def _prepared(root: Path, rels: list[str], progress: Progress | None):
    """:func:`_prepare` over every file — in worker processes (one per core, at most
    four) when there are many, since parsing and analysis are the bulk of a build and
    pure Python; in this process otherwise, or if workers cannot be started."""
    total, done = len(rels), 0
    chunks = [rels[i:i + PARALLEL_CHUNK] for i in range(0, total, PARALLEL_CHUNK)]
    workers = min(os.cpu_count() or 1, 4)
    if total >= PARALLEL_MIN_FILES and workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        try:
            # spawn, not fork: a watcher process has threads running
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                for batch in pool.map(_prepare, [str(root)] * len(chunks), chunks):
                    done += len(batch)
                    if progress:
                        progress(done, total)
                    yield from batch
            return
        except (OSError, RuntimeError) as exc:  # no processes here (a sandbox): do it in-process
            if done:
                raise VaultmemError(f"indexing workers failed: {exc}") from exc
    for chunk in chunks:
        batch = _prepare(str(root), chunk)
        done += len(batch)
        if progress:
            progress(done, total)
        yield from batch


def _owner_of(docs: list[IndexDoc]) -> str | None:
    """The agent a file's documents belong to (None: shared)."""
    owners = {d.agent for d in docs if d.agent}
    return owners.pop() if len(owners) == 1 else None


class IndexStore:
    """The vault's index: open it, refresh it, rebuild it, search it."""

    def __init__(self, root: Path, lock_timeout: float = 30.0, engine: str = "auto", env: bool = True) -> None:
        """``engine``: whoosh, tantivy or auto (the vault's ``index.engine``), unless
        ``$VAULTMEM_INDEX_ENGINE`` says otherwise (and ``env`` lets it)."""
        self.root = Path(root)
        self.base = self.root / INDEX_DIR
        self.lock_timeout = lock_timeout
        self.choice = (os.environ.get(ENV_ENGINE) if env else None) or engine
        if self.choice not in (*ENGINES, "auto"):
            raise BadInput(f"the index engine {self.choice!r} is not whoosh, tantivy or auto",
                           hint=f"set index.engine in .vaultmem/config.yaml (or {ENV_ENGINE})")
        self._engine = None
        self._engine_gen: str | None = None
        self._manifest_cache: list | None = None  # [base key, manifest, journal bytes applied]
        self._summary_cache: dict | None = None

    # -- generations -------------------------------------------------------------------
    def _current_gen(self) -> str | None:
        try:
            name = (self.base / "CURRENT").read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
            return None
        return name if name.startswith("gen-") and (self.base / name).is_dir() else None

    def _manifest(self, gen: str) -> dict | None:
        """The generation's manifest: ``manifest.json`` plus the changes appended to
        ``manifest.journal`` since it was written. Cached per process; a grown journal
        is read from where the cache stopped."""
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

    def _save_manifest(self, gen: str, manifest_files: dict, engine: str | None = None,
                       pinned: bool | None = None) -> None:
        """Write the whole manifest (and drop the journal it now contains). The engine
        and whether it was chosen by hand are kept from the current manifest unless given."""
        if engine is None or pinned is None:
            current = self._manifest(gen) or {}
            engine = engine or current.get("engine", "whoosh")
            pinned = bool(current.get("pinned")) if pinned is None else pinned
        data = {"version": MANIFEST_VERSION, "analyzer": ANALYZER_VERSION, "engine": engine, "pinned": pinned,
                "files": manifest_files}
        files.atomic_write(self.base / gen / "manifest.json", json.dumps(data, ensure_ascii=False))
        (self.base / gen / "manifest.journal").unlink(missing_ok=True)
        self._manifest_cache = None
        self._save_summary(gen, data)

    def _save_changes(self, gen: str, manifest_files: dict, changed: list[str]) -> None:
        """Record changed files by appending to the journal (one write, fsynced) — a few
        hundred bytes instead of rewriting a manifest of every file; the journal is folded
        into ``manifest.json`` once it grows long."""
        journal = self.base / gen / "manifest.journal"
        size = journal.stat().st_size if journal.exists() else 0
        if size > JOURNAL_MAX_BYTES:
            self._save_manifest(gen, manifest_files)
            return
        lines = "".join(json.dumps({"f": rel, "v": manifest_files.get(rel)}, ensure_ascii=False) + "\n"
                        for rel in changed)
        fd = os.open(journal, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if size and os.pread(fd, 1, size - 1) != b"\n":
                lines = "\n" + lines  # after a line a crash cut off
            os.write(fd, lines.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._manifest_cache is not None:
            self._manifest_cache[2] = size + len(lines.encode("utf-8"))  # our own change is applied already

    # -- the summary: what a no-change refresh and a search need, without the manifest --
    def _summary_key(self, gen: str) -> tuple | None:
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

    def _summary(self, gen: str) -> dict | None:
        """The generation's summary if it matches its manifest, else None."""
        key = self._summary_key(gen)
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

    def _save_summary(self, gen: str, manifest: dict) -> None:
        """Write the summary of ``manifest`` (as it is on disk now). A summary that cannot
        be written only costs the next command the manifest's parse."""
        key = self._summary_key(gen)
        if key is None:
            return
        entries = manifest["files"]
        data = {
            "key": key,
            "engine": manifest.get("engine", "whoosh"),
            "pinned": bool(manifest.get("pinned")),
            "count": len(entries),
            "owners": {rel: v["o"] for rel, v in entries.items() if v.get("o")},
            "problems": [v["p"] for v in entries.values() if v.get("p")],
            "digest": stat_digest({rel: (v["m"], v["s"], v.get("c"), v.get("i")) for rel, v in entries.items()}),
        }
        packed = files.pack(data)
        if packed is None:
            return
        try:
            files.atomic_write(self.base / gen / "summary.bin", packed, durable=False)
        except OSError:
            pass

    def save_summary(self) -> bool:
        """Bring the live generation's summary up to date if updates of single paths (a
        watcher's) left it stale; skipped while another process is indexing. True if
        written."""
        from filelock import Timeout

        try:
            with self._lock(0):
                gen = self._current_gen()
                if gen is None or self._summary(gen) is not None:
                    return False
                manifest = self._manifest(gen)
                if manifest is None:
                    return False
                self._save_summary(gen, manifest)
                return True
        except Timeout:
            return False

    def _facts(self, gen: str) -> dict | None:
        """Engine, pinned, count, owners and problems of a generation: from its summary,
        else from its manifest (None if that is unreadable)."""
        summary = self._summary(gen)
        if summary is not None:
            return summary
        manifest = self._manifest(gen)
        if manifest is None:
            return None
        entries = manifest["files"]
        return {"engine": manifest.get("engine", "whoosh"), "pinned": bool(manifest.get("pinned")),
                "count": len(entries), "owners": {rel: v["o"] for rel, v in entries.items() if v.get("o")},
                "problems": [v["p"] for v in entries.values() if v.get("p")]}

    def _lock(self, timeout: float):
        from filelock import FileLock

        self.base.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.root / LOCK_FILE), timeout=timeout)

    # -- which engine ------------------------------------------------------------------
    def _build_engine(self, n_files: int, requested: str | None = None) -> tuple[str, bool]:
        """(engine, pinned) for a new generation: the engine asked for (``--engine``, the
        environment or the config), else by the vault's size."""
        wanted = requested if requested not in (None, "auto") else self.choice
        if wanted in ENGINES:
            if not engine_available(wanted):
                raise VaultmemError(f"the {wanted} engine is not installed",
                                    hint="pip install tantivy (or set index.engine: whoosh)")
            return wanted, requested not in (None, "auto")
        big = n_files >= AUTO_TANTIVY_FILES and engine_available("tantivy")
        return ("tantivy" if big else "whoosh"), False

    def _switch_to(self, facts: dict) -> str | None:
        """The engine the live generation should be rebuilt on, if any: the configured
        one when it differs, or tantivy once an automatic Whoosh index has grown large.
        ``facts``: the generation's :meth:`_facts` (or its manifest)."""
        live = facts.get("engine", "whoosh")
        if self.choice in ENGINES:
            return self.choice if live != self.choice else None
        count = facts["count"] if "count" in facts else len(facts["files"])
        if (live == "whoosh" and not facts.get("pinned") and count >= AUTO_TANTIVY_FILES
                and engine_available("tantivy")):
            return "tantivy"
        return None

    def engine_name(self) -> str | None:
        """The live generation's engine (None before the first build)."""
        gen = self._current_gen()
        facts = self._facts(gen) if gen else None
        return facts["engine"] if facts else None

    # -- reading -----------------------------------------------------------------------
    def engine(self):
        """The live generation's engine, opened once per process (rebuilt if unreadable)."""
        gen = self._current_gen()
        if gen is not None and gen == self._engine_gen and self._engine is not None:
            return self._engine
        facts = self._facts(gen) if gen else None
        if facts is None:
            self.rebuild(only_if_broken=True)
        elif self._switch_to(facts):
            self.rebuild(switch=True)
        gen = self._current_gen()
        try:
            engine = _open_engine(self._facts(gen)["engine"], self.base / gen)
        except VaultmemError:
            raise
        except Exception:
            self.rebuild(unreadable=gen)
            gen = self._current_gen()
            engine = _open_engine(self._facts(gen)["engine"], self.base / gen)
        self.close()
        self._engine, self._engine_gen = engine, gen
        return engine

    def search(self, terms: list[str], filters: Filters, limit: int) -> list[tuple[IndexDoc, float]]:
        try:
            return self.engine().search(terms, filters, limit)
        except VaultmemError:
            raise
        except Exception:
            # A damaged index (a segment deleted or truncated under us): rebuild, retry once.
            broken = self._engine_gen
            self.close()
            self.rebuild(unreadable=broken)
            return self.engine().search(terms, filters, limit)

    def close(self) -> None:
        if self._engine is not None:
            try:
                self._engine.close()
            except Exception:
                pass
        self._engine, self._engine_gen = None, None

    # -- writing -----------------------------------------------------------------------
    def refresh(self, paths: Iterable[str] | None = None, wait: float | None = None,
                progress: Progress | None = None) -> SyncReport:
        """Bring the index up to date with the files (all of them, or just ``paths``,
        vault-relative, as a watcher reports them). With ``wait=0`` a refresh that would
        have to wait for another indexing process is skipped and says so."""
        started = time.perf_counter()
        if paths is None:
            quick = self._unchanged()
            if quick is not None:
                quick.seconds = time.perf_counter() - started
                return quick
        from filelock import Timeout

        lock = self._lock(self.lock_timeout if wait is None else wait)
        try:
            lock.acquire()
        except Timeout:
            if wait == 0:
                return SyncReport(skipped="another process is updating the index")
            raise Busy(f"another process has been updating the index for {self.lock_timeout:.0f}s",
                       path=LOCK_FILE, hint="retry in a moment") from None
        try:
            gen = self._current_gen()
            manifest = self._manifest(gen) if gen else None
            if manifest is None:
                report = self._rebuild_locked(progress)
            else:
                report = self._update_locked(gen, manifest["files"], paths)
                if not report.rebuilt and self._switch_to(self._manifest(gen) or manifest):
                    switched = self._rebuild_locked(progress)  # the configured engine, or grown past auto's size
                    report.rebuilt, report.engine = True, switched.engine
        except BaseException:
            self._manifest_cache = None  # the update edits the cached manifest in place
            raise
        finally:
            lock.release()
        report.seconds = time.perf_counter() - started
        return report

    def _unchanged(self) -> SyncReport | None:
        """Without the lock: the report of a refresh that finds nothing to do, if the
        files' stats are exactly those the summary recorded; else None."""
        gen = self._current_gen()
        summary = self._summary(gen) if gen else None
        if summary is None or self._switch_to(summary):
            return None
        ahead = take_ahead(self.root)  # this command's launcher may have walked already
        if ahead is None:
            seen = scan(self.root)
            ahead = len(seen), stat_digest(seen)
        count, digest = ahead
        if digest != summary["digest"]:
            return None
        return SyncReport(unchanged=count, problems=list(summary["problems"]), engine=summary["engine"])

    def _update_locked(self, gen: str, known: dict, paths: Iterable[str] | None) -> SyncReport:
        report = SyncReport()
        if paths is None:
            seen = scan(self.root)
            candidates = set(seen) | set(known)
        else:
            candidates = {p for p in paths if p.endswith(".md")}
            seen = {}
            for rel in candidates:
                try:
                    st = os.stat(self.root / rel)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                if os.path.isfile(self.root / rel):
                    seen[rel] = (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)
        add: list[IndexDoc] = []
        delete: list[str] = []
        deleted_hashes: dict[str, str] = {}
        touched: list[str] = []  # files whose stat moved without a content change
        for rel in sorted(candidates):
            old = known.get(rel)
            if rel not in seen:
                if old is not None:
                    report.deleted.append(rel)
                    delete.append(rel)
                    deleted_hashes[old["h"]] = rel
                    del known[rel]
                continue
            mtime, size, ctime, inode = seen[rel]
            if old is not None and (old["m"], old["s"], old.get("c"), old.get("i")) == (mtime, size, ctime, inode):
                report.unchanged += 1
                continue
            got = _read(self.root, rel)
            if got is None:
                continue
            data, sha = got
            if old is not None and old["h"] == sha:
                old.update(m=mtime, s=size, c=ctime, i=inode)
                report.unchanged += 1
                touched.append(rel)
                continue
            docs, problem = _docs(rel, data)
            (report.modified if old is not None else report.new).append(rel)
            if old is not None:
                delete.append(rel)
            add.extend(docs)
            known[rel] = {"m": mtime, "s": size, "c": ctime, "i": inode, "h": sha, "p": problem,
                          "o": _owner_of(docs)}
        # a move is a deleted path and a new path with the same checksum
        report.moved = [(deleted_hashes[known[rel]["h"]], rel) for rel in report.new
                        if known[rel]["h"] in deleted_hashes]
        if add or delete:
            try:
                self.engine_for(gen).write(add, delete)
            except VaultmemError:
                raise  # busy, say: not a damaged index
            except Exception:
                # the engine's files are damaged: index everything afresh instead
                self.close()
                rebuilt = self._rebuild_locked(None)
                rebuilt.modified, rebuilt.deleted, rebuilt.moved = report.modified, report.deleted, report.moved
                return rebuilt
        changed = report.new + report.modified + report.deleted + touched
        if changed:
            self._save_changes(gen, known, changed)
        report.docs = len(add)
        report.problems = [v["p"] for v in known.values() if v.get("p")]
        manifest = self._manifest(gen) or {}
        report.engine = manifest.get("engine", "whoosh")
        if paths is None and manifest and self._summary(gen) is None:
            self._save_summary(gen, manifest)  # what the next command's quick check compares with
        return report

    def engine_for(self, gen: str):
        if gen == self._engine_gen and self._engine is not None:
            return self._engine
        return _open_engine((self._facts(gen) or {}).get("engine", "whoosh"), self.base / gen)

    def rebuild(self, progress: Progress | None = None, only_if_broken: bool = False,
                unreadable: str | None = None, switch: bool = False, engine: str | None = None) -> SyncReport:
        """Build a fresh generation from every file and swap it in atomically.

        ``engine``: build on this engine (whoosh, tantivy, or auto: by the vault's size);
        a named engine stays chosen until the next ``--engine`` rebuild, unless the config
        names another. ``only_if_broken``/``unreadable``/``switch``: a repair or an engine
        switch, not a request — skipped when, once the lock is ours, another process has
        already put a good generation in place."""
        if engine not in (None, "auto", *ENGINES):
            raise BadInput(f"--engine {engine!r} is not whoosh, tantivy or auto")
        if engine in ENGINES and self.choice in ENGINES and engine != self.choice:
            raise BadInput(f"this vault's index engine is set to {self.choice}",
                           hint=f"to use {engine}: vaultmem config set index.engine {engine} (or auto)")
        started = time.perf_counter()
        with self._lock(max(self.lock_timeout, 300.0)):
            gen = self._current_gen()
            manifest = self._manifest(gen) if gen else None
            if (only_if_broken or unreadable) and gen and gen != unreadable and manifest is not None:
                return SyncReport(skipped="another process rebuilt the index")
            if switch and manifest is not None and not self._switch_to(manifest):
                return SyncReport(skipped="another process switched the index's engine")
            if engine is None and manifest is not None and manifest.get("pinned") and not switch:
                engine = manifest.get("engine")  # a plain rebuild keeps an engine chosen by hand
            report = self._rebuild_locked(progress, engine)
        report.seconds = time.perf_counter() - started
        return report

    def _rebuild_locked(self, progress: Progress | None, requested: str | None = None) -> SyncReport:
        report = SyncReport(rebuilt=True)
        self.base.mkdir(parents=True, exist_ok=True)
        # derived data: never committed, whatever the vault's .gitignore says
        files.ensure_gitignore(self.base, "# derived search index: rebuilt from the Markdown, never committed\n*\n")
        gen = f"gen-{time.time_ns()}"
        seen = scan(self.root)
        name, pinned = self._build_engine(len(seen), requested)
        engine = _open_engine(name, self.base / gen, create=True)
        manifest: dict[str, dict] = {}
        docs: list[IndexDoc] = []
        fields: list[dict] = []
        for rel, sha, found, problem, found_fields in _prepared(self.root, sorted(seen), progress):
            if sha is None:
                continue
            docs.extend(found)
            fields.extend(found_fields)
            report.new.append(rel)
            mtime, size, ctime, inode = seen[rel]
            manifest[rel] = {"m": mtime, "s": size, "c": ctime, "i": inode, "h": sha, "p": problem,
                             "o": _owner_of(found)}
        report.docs = len(docs)
        engine.write(docs, [], prepared=fields)  # one commit: one segment, nothing to merge afterwards
        engine.close()
        self._save_manifest(gen, manifest, engine=name, pinned=pinned)
        report.engine = name
        files.atomic_write(self.base / "CURRENT", gen + "\n")  # the swap
        self.close()
        self._remove_old_generations(keep={gen})
        report.problems = [v["p"] for v in manifest.values() if v.get("p")]
        return report

    def _remove_old_generations(self, keep: set[str]) -> None:
        """Remove generations except the live one and the newest older one (a process
        that opened it a moment ago may still be reading it)."""
        gens = sorted((p for p in self.base.glob("gen-*") if p.is_dir()), key=lambda p: p.name)
        older = [g for g in gens if g.name not in keep]
        for old in older[:-1]:
            shutil.rmtree(old, ignore_errors=True)

    def owners(self) -> dict[str, str]:
        """File → the agent it belongs to, for files that belong to one (from the manifest)."""
        gen = self._current_gen()
        facts = self._facts(gen) if gen else None
        return dict(facts["owners"]) if facts else {}

    def maintain(self, max_segments: int = 4) -> bool:
        """Merge the index's segments when updates have fragmented it (call when idle;
        many small segments slow every query). Skipped if another process is indexing."""
        from filelock import Timeout

        try:
            with self._lock(0):
                gen = self._current_gen()
                if gen is None:
                    return False
                engine = self.engine_for(gen)
                if engine.segment_count() <= max_segments:
                    return False
                return bool(engine.optimize())
        except Timeout:
            return False
