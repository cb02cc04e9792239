"""Keeping the derived index in step with the vault's files: refresh, update, search.

The index lives in ``.vaultmem/index/`` (git-ignored) as generations: ``gen-<n>/`` holds
an engine's files and the manifest of what is indexed (:mod:`.manifest`); the file
``CURRENT`` names the live generation (:mod:`.build` makes generations and swaps them in);
engines are looked up by name (:mod:`.registry`). A refresh stats every Markdown file —
or takes the walk the launcher started ahead, when it was handed one — re-reads only
those whose stat moved, and re-indexes only those whose checksum changed, reporting new,
modified, deleted and moved (same checksum, new path) files. Writers take
``.vaultmem/index.lock`` (an OS lock, freed when its process dies); readers take no lock.
An index that cannot be opened or searched (killed mid-commit, files deleted or
corrupted) is rebuilt.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from .. import files, layout
from ..errors import BadInput, Busy, VaultmemError
from ..limits import SIZES, engine_hits
from ..models import IndexDoc
from ..walk import PART_MEMORY, commit_stamp, in_part, path_stat, scan, stat_digest
from . import Filters, Match, SearchEngine, SyncReport, registry
from .build import (Progress, build_generation, current_generation, has_links, parse_file, read_file,
                    remove_generations, stale_generations)
from .manifest import Manifests, entry, problems_of, same_stat
from .fresh import Freshness
from .semantic import SemanticChannel

INDEX_DIR = layout.INDEX_DIR
LOCK_FILE = layout.INDEX_LOCK
ENGINES = registry.names()
ENV_ENGINE = "VAULTMEM_INDEX_ENGINE"  # overrides index.engine for one process (tests, benchmarks)
ENV_SEMANTIC = "VAULTMEM_SEARCH_SEMANTIC"  # overrides search.semantic for one process (benchmarks)
SEMANTIC_MODES = ("off", "auto", "always", "only")
ENV_RANKING = "VAULTMEM_SEARCH_RANKING"  # overrides search.ranking for one process (benchmarks)
RANKINGS = ("learned", "rules")
AHEAD_WAIT = 2.0  # seconds a write waits for the launcher's walk before it goes on without it

__all__ = ["ENGINES", "ENV_ENGINE", "ENV_SEMANTIC", "INDEX_DIR", "LOCK_FILE", "SEMANTIC_MODES", "IndexStore",
           "Progress", "files_indexed"]


def files_indexed(root: Path) -> int:
    """How many files memory's live index holds (0 before its first build), from its
    summary — what the journal's index is sized with under ``auto``."""
    base = Path(root) / INDEX_DIR
    gen = current_generation(base)
    facts = Manifests(base).facts(gen) if gen else None
    return int(facts.get("count", 0)) if facts else 0


class IndexStore(Freshness, SemanticChannel):
    """The vault's index: open it, refresh it, rebuild it, search it."""

    def __init__(self, root: Path, lock_timeout: float = 30.0, engine: str = "auto", env: bool = True,
                 ahead=None, semantic: str = "off", model: str | None = None, part: str = PART_MEMORY,
                 ranking: str = "learned", reranker: str | None = None, rerank_depth: int = 20,
                 sized_with: Callable[[], int] | None = None) -> None:
        """``engine``: an engine's name or auto (the vault's ``index.engine``), unless
        ``$VAULTMEM_INDEX_ENGINE`` says otherwise (and ``env`` lets it). ``ahead``: the
        walk the launcher started for this vault (``walk.WalkAhead``), which the first
        no-change check takes instead of walking. ``semantic``/``model``: the vault's
        ``search.semantic`` and ``search.model`` (None: wordllama, if it is installed);
        ``$VAULTMEM_SEARCH_SEMANTIC`` overrides the first (whatever ``env`` says).
        ``ranking``: search.ranking (learned or rules; ``$VAULTMEM_SEARCH_RANKING``
        overrides it); ``reranker``/``rerank_depth``: search.reranker and
        search.rerank_depth (memory only). ``part``: the files it indexes — memory (all but the journal, in
        ``.vaultmem/index/``) or the journal (``journal/`` only, in
        ``.vaultmem/index/journal/``, lexical only: a journal of whole sessions never
        slows a search of memory). ``sized_with()``: another count of files that ``auto``
        chooses the engine by when it is the larger — the journal's store is given
        memory's, so that a vault's two indexes are on the engine its size calls for (and
        a command that rebuilds both loads one engine library, not two)."""
        self.root = Path(root)
        self.sized_with = sized_with
        self.part = part
        self.dir = INDEX_DIR if part == PART_MEMORY else layout.JOURNAL_INDEX_DIR
        self.lock_file = LOCK_FILE if part == PART_MEMORY else layout.JOURNAL_INDEX_LOCK
        self.base = self.root / self.dir
        self.lock_timeout = lock_timeout
        self.ahead = ahead
        self.vouched = False  # the launcher's walk matched the index before this process wrote
        self._seen: tuple | None = None  # (summary key, walk) of a no-change check that found a change
        self.choice = (os.environ.get(ENV_ENGINE) if env else None) or engine
        if self.choice != "auto" and not registry.known(self.choice):
            raise BadInput(f"the index engine {self.choice!r} is not {registry.choices()}",
                           hint=f"set index.engine in .vaultmem/config.yaml (or {ENV_ENGINE})")
        self.semantic_mode = (os.environ.get(ENV_SEMANTIC) or semantic) if part == PART_MEMORY else "off"
        if self.semantic_mode not in SEMANTIC_MODES:
            raise BadInput(f"the semantic search mode {self.semantic_mode!r} is not off, auto, always or only",
                           hint=f"set search.semantic in .vaultmem/config.yaml (or {ENV_SEMANTIC})")
        # search.ranking: how the engine's candidates are ordered — the learned ranker or the
        # hand-set rules (vaultmem.retrieve); $VAULTMEM_SEARCH_RANKING overrides it (benchmarks)
        self.ranking = os.environ.get(ENV_RANKING) or ranking
        if self.ranking not in RANKINGS:
            raise BadInput(f"the ranking {self.ranking!r} is not {' or '.join(RANKINGS)}",
                           hint=f"set search.ranking in .vaultmem/config.yaml (or {ENV_RANKING})")
        # search.reranker: a local cross-encoder re-orders the first rerank_depth hits (index.rerankers)
        depth = SIZES["rerank_depth"]
        self.reranker, self.rerank_depth = ((reranker, min(max(int(rerank_depth), depth.lo), depth.hi))
                                            if part == PART_MEMORY else (None, 0))
        self.model_spec = model or "wordllama"
        self.model_chosen = model is not None  # set by the user, not the default
        self._vectors = None  # (generation, set name, VectorSet) of the last semantic search
        self.manifests = Manifests(self.base)
        self._engine: SearchEngine | None = None
        self._engine_gen: str | None = None
        self._checked: str | None = None  # the live generation found free of links
        self._pinned: tuple[int, str | None] | None = None  # (thread, generation) an answer began on (live)
        # a long-lived process (the MCP server) answers as soon as a write's commit is
        # done: the merge of segments it started finishes in a thread, which holds the
        # index lock until then (see refresh)
        self.background_merges = False
        self._merging = None  # that thread, while one may run

    def _own_base(self) -> str | None:
        """``.vaultmem/index`` as a real folder of the vault and a live generation with no
        link in it, before anything in it is read: a file or a link in the folder's place,
        or a generation holding a link, is derived data gone wrong — removed (a link, never
        what it points to), so that the index is rebuilt instead of read from elsewhere.
        Returns the live generation (None: none, or it was removed)."""
        files.own_folder(self.root, self.dir)
        gen = self.live()
        if gen is not None and gen != self._checked and has_links(self.base / gen):
            remove_generations(self.base, [gen])
            self.manifests.forget()
            self._pinned = None
            gen = None
        self._checked = gen
        return gen

    def _lock(self, timeout: float):
        """The index lock (another process's writes wait for it) — once the merges this
        process left running have finished: they hold it."""
        from filelock import FileLock

        self.merged()
        self.base.parent.mkdir(parents=True, exist_ok=True)
        # not per thread: a write's lock is released by the thread that finishes its merges.
        # (Never a timeout of -1: filelock refuses one while another instance of this process holds it.)
        return FileLock(str(self.root / self.lock_file), timeout=timeout, thread_local=False)

    def merged(self) -> None:
        """Wait for the merges of segments a write of this process left running, if any."""
        thread, self._merging = self._merging, None
        if thread is not None:
            thread.join()

    def _finish_later(self, later: list, lock) -> None:
        """Run what the engine left to finish (its merges) in a thread that then releases
        ``lock``; :meth:`merged` waits for it."""
        import threading

        def finish() -> None:
            try:
                self._run(later, quiet=True)
            finally:
                lock.release()

        thread = threading.Thread(target=finish, name="vaultmem-index-merge")
        try:
            thread.start()
        except BaseException:  # no thread to be had: finish here
            finish()
            raise
        self._merging = thread

    def _facts(self, gen: str | None) -> dict | None:
        return self.manifests.facts(gen) if gen else None

    # -- which engine ------------------------------------------------------------------
    def _build_engine(self, n_files: int, requested: str | None = None) -> tuple[str, bool]:
        """(engine, pinned) for a new generation: the engine asked for (``--engine``, the
        environment or the config), else by the vault's size."""
        wanted = requested if requested not in (None, "auto") else self.choice
        if wanted != "auto":
            spec = registry.get(wanted)
            if not spec.available():
                raise VaultmemError(f"the {wanted} engine is not installed", hint=spec.install_hint or None)
            return wanted, requested not in (None, "auto")
        return registry.auto_choice(self._size(n_files)), False

    def _size(self, n_files: int, live: str | None = None) -> int:
        """What ``auto`` sizes this index by: its own ``n_files``, or the count
        ``sized_with`` gives when that is larger — asked only when it can matter (not
        for a live index already on the engine for the largest vaults)."""
        if self.sized_with is None or (live is not None and registry.auto_upgrade(live, sys.maxsize) is None):
            return n_files
        return max(n_files, self.sized_with())

    def _switch_to(self, facts: dict) -> str | None:
        """The engine the live generation should be rebuilt on, if any: the configured
        one when it differs, or the one ``auto`` prefers once an automatic index has
        grown past its size. ``facts``: the generation's facts (or its manifest)."""
        live = facts.get("engine", registry.LEGACY_ENGINE)
        if self.choice != "auto":
            return self.choice if live != self.choice else None
        if facts.get("pinned"):
            return None
        count = facts["count"] if "count" in facts else len(facts["files"])
        return registry.auto_upgrade(live, self._size(count, live))

    def opened_generation(self) -> str | None:
        """The generation this process has its engine open on (None: none opened yet)."""
        return self._engine_gen if self._engine is not None else None

    def engine_name(self) -> str | None:
        """The live generation's engine (None before the first build)."""
        facts = self._facts(current_generation(self.base))
        return facts["engine"] if facts else None

    def analyzer(self) -> str | None:
        """The analyzer version the live generation was built with (None: none built yet)."""
        gen = current_generation(self.base)
        return self.manifests.analyzer(gen) if gen else None

    def owners(self) -> dict[str, str]:
        """File → the agent it belongs to, for files that belong to one (from the manifest)."""
        facts = self._facts(current_generation(self.base))
        return dict(facts["owners"]) if facts else {}

    def status(self) -> dict:
        """The live generation at a glance: ``{"engine", "files", "problems"}`` (how many
        files it holds, how many it could not read), from its manifest's facts."""
        facts = self._facts(current_generation(self.base)) or {}
        return {"engine": facts.get("engine") or self.engine_name(), "files": facts.get("count", 0),
                "problems": len(facts.get("problems", ()))}

    def problems(self) -> list[dict]:
        """The files the live generation could not read (broken YAML, a missing section…),
        each ``{"path", "line", "message", "hint"}``, as the last refresh found them."""
        facts = self._facts(self.live())
        return [dict(p) for p in facts["problems"]] if facts else []

    # -- reading -----------------------------------------------------------------------
    def engine(self) -> SearchEngine:
        """The live generation's engine, opened once per process (rebuilt if unreadable)."""
        gen = self._own_base()
        if gen is not None and gen == self._engine_gen and self._engine is not None:
            return self._engine
        facts = self._facts(gen)
        if facts is None:
            self.rebuild(only_if_broken=True)
            gen = current_generation(self.base)
        elif self._switch_to(facts):
            self.rebuild(switch=True)
            gen = current_generation(self.base)
        # else the generation just checked for links (the one an answer began on: live)
        try:
            engine = registry.open_engine(self._facts(gen)["engine"], self.base / gen)
        except VaultmemError:
            raise
        except Exception:
            self.rebuild(unreadable=gen)
            gen = current_generation(self.base)
            engine = registry.open_engine(self._facts(gen)["engine"], self.base / gen)
        self._close_engine()  # the one it replaces (a merge of its writer goes on)
        self._engine, self._engine_gen = engine, gen
        return engine

    def engine_for(self, gen: str) -> SearchEngine:
        if gen == self._engine_gen and self._engine is not None:
            return self._engine
        return registry.open_engine((self._facts(gen) or {}).get("engine", registry.LEGACY_ENGINE), self.base / gen)

    def search(self, terms: list[str], filters: Filters, limit: int, text: str | None = None,
               match: Match | None = None) -> list[tuple[IndexDoc, float]]:
        """The best ``limit`` docs for the analysed ``terms`` of the query ``text`` (the
        raw query, for engines that read it themselves; the terms joined if not given),
        with what its syntax requires and excludes (``match``)."""
        text = " ".join(terms) if text is None else text
        limit = engine_hits(limit)  # the edges refuse a size out of range; this is the safety net
        return self._reading(lambda engine: engine.search(terms, filters, limit, text=text, match=match))

    def terms_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """The index terms beginning with ``prefix`` (see the engines)."""
        limit = engine_hits(limit)
        return self._reading(lambda engine: engine.terms_with_prefix(prefix, limit))

    def _reading(self, call):
        try:
            return call(self.engine())
        except VaultmemError:
            raise
        except Exception:
            # A damaged index (a segment deleted or truncated under us): rebuild, retry once.
            broken = self._engine_gen
            self.close()
            self.rebuild(unreadable=broken)
            return call(self.engine())

    def term_weights(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(live documents, each term's document frequency) of the index the last search
        answered from (the live one, opened for it): a query's terms are weighed by the
        statistics of the generation that found its hits, whatever another process has
        swapped in since."""
        engine = self._engine if self._engine is not None else self.engine()
        if hasattr(engine, "doc_frequencies"):  # all at once, of one commit (an engine may offer it)
            return engine.doc_frequencies(terms)
        return engine.doc_count(), {t: engine.doc_frequency(t) for t in terms}

    def close(self) -> None:
        """Close the index: once a merge this process left running has ended."""
        self.merged()
        self._close_engine()

    def _close_engine(self) -> None:
        if self._engine is not None:
            try:
                self._engine.close()
            except Exception:
                pass
        self._engine, self._engine_gen = None, None
        if self._vectors is not None:
            self._vectors[2].close()
            self._vectors = None

    # -- writing -----------------------------------------------------------------------
    def refresh(self, paths: Iterable[str] | None = None, wait: float | None = None,
                progress: Progress | None = None) -> SyncReport:
        """Bring the index up to date with the files (all of them, or just ``paths``,
        vault-relative, as a watcher reports them). With ``wait=0`` a refresh that would
        have to wait for another indexing process is skipped and says so."""
        started = time.perf_counter()
        self._own_base()
        self._seen = None
        if paths is None:
            quick = self._unchanged()
            if quick is not None:
                self._tidy_generations()
                quick.seconds = time.perf_counter() - started
                return quick
        elif self._merging is not None:  # this process's last write is merging: no wait for nothing to do
            paths = list(paths)
            quick = self._unchanged_paths(paths)
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
                       path=self.lock_file, hint="retry in a moment") from None
        later: list = []
        try:
            gen = current_generation(self.base)
            remove_generations(self.base, stale_generations(self.base, gen))  # left by killed builds
            manifest = self.manifests.load(gen) if gen else None
            if manifest is None:
                report = self._rebuild_locked(progress)
            else:
                report = self._update_locked(gen, manifest["files"], paths,
                                             later if self.background_merges else None)
                if not report.rebuilt and self._switch_to(self.manifests.load(gen) or manifest):
                    self._run(later)
                    switched = self._rebuild_locked(progress)  # the configured engine, or grown past auto's size
                    report.rebuilt, report.engine = True, switched.engine
        except BaseException:
            self.manifests.forget()  # the update edits the cached manifest in place
            self._run(later, quiet=True)  # the error that stopped the update is the one to say
            raise
        finally:
            self._seen = None
            if later:
                self._finish_later(later, lock)
            else:
                lock.release()
        report.seconds = time.perf_counter() - started
        return report

    def before_writing(self) -> None:
        """This process is about to change files: the walk the launcher started, if it is
        still unread, is read now — after a write it could no longer tell. When it matches
        the index and no other writer committed since it began (the vault's commit stamp
        did not move), the index is current but for this process's own writes, and the
        next answer (:meth:`ready_to_answer`) indexes those alone instead of walking again."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return
        self._own_base()
        walked = ahead.take(timeout=AHEAD_WAIT)
        if walked is not None and ahead.stamp is not None and ahead.stamp == commit_stamp(str(self.root)):
            self.vouched = self._unchanged(walked) is not None

    def _tidy_generations(self) -> None:
        """Remove generations that killed builds left, if there are any and no other
        process holds the index lock (a build in progress holds it): one listing of a
        folder of a few names when there are none."""
        if not stale_generations(self.base):
            return
        from filelock import Timeout

        try:
            with self._lock(0):
                remove_generations(self.base, stale_generations(self.base))
        except Timeout:
            pass

    def _unchanged(self, walked: tuple[int, int] | None = None) -> SyncReport | None:
        """Without the lock: the report of a refresh that finds nothing to do, if the
        files' stats are exactly those the summary recorded; else None. ``walked``: the
        (count, digest) of a walk made already."""
        gen = current_generation(self.base)
        summary = self.manifests.summary(gen) if gen else None
        if summary is None or self._switch_to(summary):
            return None
        if walked is None:
            ahead, self.ahead = self.ahead, None  # the launcher's walk is good for one check only
            walked = ahead.take() if ahead is not None else None
        if walked is None:
            seen = scan(self.root, self.part)
            # kept for the update that follows, while the index stays as this check saw it
            self._seen = (summary["key"], seen)
            walked = len(seen), stat_digest(seen)
        count, digest = walked
        if digest != summary["digest"]:
            return None
        return SyncReport(unchanged=count, problems=list(summary["problems"]), engine=summary["engine"])

    @staticmethod
    def _run(later: list, quiet: bool = False) -> None:
        """Finish now what an engine left to finish (see :meth:`SearchEngine.write`), each
        step whatever the one before did. ``quiet``: a step that fails is logged, not
        raised — the commit stands, and a later write merges again."""
        while later:
            step = later.pop(0)
            try:
                step()
            except Exception as exc:  # noqa: BLE001
                if not quiet:
                    raise
                import logging

                logging.getLogger("vaultmem.index").warning("merging the index's segments failed: %s", exc)

    def _unchanged_paths(self, paths: list[str]) -> SyncReport | None:
        """Without the lock: the report of a refresh of ``paths`` that finds nothing to do
        — each Markdown file of them as the manifest recorded it (or in neither); else
        None. (The update compares the same stats under the lock.)"""
        gen = current_generation(self.base)
        manifest = self.manifests.load(gen) if gen else None
        if manifest is None or self._switch_to(manifest):
            return None
        known = manifest["files"]
        count = 0
        for rel in {p for p in paths if p.endswith(".md") and in_part(p, self.part)}:
            st, old = path_stat(self.root, rel), known.get(rel)
            if (st is None) != (old is None) or (old is not None and not same_stat(old, st)):
                return None
            count += old is not None
        return SyncReport(unchanged=count, problems=problems_of(known),
                          engine=manifest.get("engine", registry.LEGACY_ENGINE))

    def _update_locked(self, gen: str, known: dict, paths: Iterable[str] | None,
                       later: list | None = None) -> SyncReport:
        """``later``: where the engine may leave the merges of its commit (see
        :meth:`SearchEngine.write`)."""
        report = SyncReport()
        if paths is None:
            kept, self._seen = self._seen, None
            # the no-change check's walk, unless another process indexed while this one waited
            now = self.manifests.summary(gen) if kept is not None else None
            seen = kept[1] if now is not None and now["key"] == kept[0] else scan(self.root, self.part)
            candidates = set(seen) | set(known)
        else:
            candidates = {p for p in paths if p.endswith(".md") and in_part(p, self.part)}
            seen = {}
            for rel in candidates:
                st = path_stat(self.root, rel)  # as the walk would record it (links included)
                if st is not None:
                    seen[rel] = st
        add: list[IndexDoc] = []
        delete: list[str] = []
        deleted_hashes: dict[str, str] = {}
        touched: list[str] = []  # files whose stat moved without a content change
        gone_sessions: set[str] = set()  # the sessions of files changed or deleted
        # a refresh of some paths: their entries as they were, to carry the summary over
        prior: dict[str, dict | None] | None = None if paths is None else {}
        for rel in sorted(candidates):
            old = known.get(rel)
            if prior is not None:
                prior[rel] = None if old is None else dict(old)
            if rel not in seen:
                if old is not None:
                    gone_sessions.add(old.get("g"))  # its neighbours lose a neighbour
                    report.deleted.append(rel)
                    delete.append(rel)
                    deleted_hashes[old["h"]] = rel
                    del known[rel]
                continue
            if old is not None and same_stat(old, seen[rel]):
                report.unchanged += 1
                continue
            got = read_file(self.root, rel)
            if got is None:
                continue
            data, sha, unread = got
            if old is not None and old["h"] == sha:
                old.update(zip("msci", seen[rel]))  # the new stat; the rest stands
                report.unchanged += 1
                touched.append(rel)
                continue
            docs, problem = ([], unread) if unread else parse_file(rel, data)
            if old is not None:
                gone_sessions.add(old.get("g"))  # its neighbours' neighbour changed (or left the session)
            (report.modified if old is not None else report.new).append(rel)
            # a "new" file too: a process killed between the engine's commit and the
            # manifest's journal left its documents in the engine, unrecorded
            delete.append(rel)
            add.extend(docs)
            known[rel] = entry(seen[rel], sha, problem, docs)
        # a move is a deleted path and a new path with the same checksum
        report.moved = [(deleted_hashes[known[rel]["h"]], rel) for rel in report.new
                        if known[rel]["h"] in deleted_hashes]
        if sessions := {s for s in (*(d.session for d in add), *gone_sessions) if s}:
            touched += self._relink_sessions(sessions, known, add, delete,
                                             {*report.new, *report.modified, *report.deleted}, prior)
        delete = [rel for rel in delete if not layout.undecodable(rel)]  # never indexed: no engine holds such a name
        if add or delete:
            try:
                # an engine registered elsewhere may not take ``later``: it is passed only when used
                self.engine_for(gen).write(add, delete, **({"later": later} if later is not None else {}))
            except VaultmemError:
                raise  # busy, say: not a damaged index
            except Exception:
                # the engine's files are damaged: index everything afresh instead
                self.close()
                rebuilt = self._rebuild_locked(None)
                rebuilt.modified, rebuilt.deleted, rebuilt.moved = report.modified, report.deleted, report.moved
                return rebuilt
            from . import vectors

            if vectors.started(self.base / gen):  # after the engine's commit, before the manifest's
                vectors.record(self.base / gen, add, delete)
        changed = list(dict.fromkeys(report.new + report.modified + report.deleted + touched))  # a touched one re-read
        if changed:
            self.manifests.append(gen, known, changed, prior)
        report.docs = len(add)
        report.problems = problems_of(known)
        manifest = self.manifests.load(gen) or {}
        report.engine = manifest.get("engine", registry.LEGACY_ENGINE)
        if paths is None and manifest and self.manifests.summary(gen) is None:
            self.manifests.save_summary(gen, manifest)  # what the next command's quick check compares with
        return report

    def _relink_sessions(self, sessions: set[str], known: dict, add: list[IndexDoc], delete: list[str],
                         done: set[str], prior: dict | None = None) -> list[str]:
        """The notes of ``sessions`` hold their neighbours' text (``near``): when one
        changes, comes or goes, the others of its session are indexed again with the new
        neighbours — read afresh, added to ``add``/``delete`` — and every document of
        those sessions gets its ``near`` anew. ``done``: the files already handled this
        round. Returns the files re-read (their manifest entries updated; ``prior``, when
        given, gets each one's entry as it was)."""
        from ..parse.records import session_neighbours

        reread = []
        for rel in sorted(r for r, v in known.items() if v.get("g") in sessions and r not in done):
            got = read_file(self.root, rel)
            st = path_stat(self.root, rel)
            if got is None or st is None or got[2]:
                continue
            docs, problem = parse_file(rel, got[0])
            delete.append(rel)
            add.extend(docs)
            if prior is not None:
                prior.setdefault(rel, dict(known[rel]))  # as it was before this refresh (a touched one too)
            known[rel] = entry(st, got[1], problem, docs)
            reread.append(rel)
        session_neighbours([d for d in add if d.session in sessions])
        return reread

    def save_summary(self) -> bool:
        """Bring the live generation's summary up to date if updates of single paths (a
        watcher's) left it stale; skipped while another process is indexing. True if
        written."""
        from filelock import Timeout

        try:
            with self._lock(0):
                gen = current_generation(self.base)
                if gen is None or self.manifests.summary(gen) is not None:
                    return False
                manifest = self.manifests.load(gen)
                if manifest is None:
                    return False
                self.manifests.save_summary(gen, manifest)
                return True
        except Timeout:
            return False

    def rebuild(self, progress: Progress | None = None, only_if_broken: bool = False,
                unreadable: str | None = None, switch: bool = False, engine: str | None = None) -> SyncReport:
        """Build a fresh generation from every file and swap it in atomically.

        ``engine``: build on this engine (a registered name, or auto: by the vault's
        size); a named engine stays chosen until the next ``--engine`` rebuild, unless the
        config names another. ``only_if_broken``/``unreadable``/``switch``: a repair or an
        engine switch, not a request — skipped when, once the lock is ours, another process
        has already put a good generation in place."""
        self._pinned = None  # the generation an answer began on is no longer the one to read
        if engine not in (None, "auto") and not registry.known(engine):
            raise BadInput(f"--engine {engine!r} is not {registry.choices()}")
        if engine not in (None, "auto") and self.choice != "auto" and engine != self.choice:
            raise BadInput(f"this vault's index engine is set to {self.choice}",
                           hint=f"to use {engine}: vaultmem config set index.engine {engine} (or auto)")
        started = time.perf_counter()
        self._own_base()
        with self._lock(max(self.lock_timeout, 300.0)):
            gen = current_generation(self.base)
            manifest = self.manifests.load(gen) if gen else None
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
        self._pinned = None  # the generation an answer began on is no longer the one to read
        seen = scan(self.root, self.part)
        name, pinned = self._build_engine(len(seen), requested)
        report = build_generation(self.root, self.base, self.manifests, seen, name, pinned, progress,
                                  vectors=self.keeps_vectors())
        self.close()
        return report

    def maintain(self, max_segments: int = 4) -> bool:
        """Merge the index's segments when updates have fragmented it (call when idle;
        many small segments slow every query). Skipped if another process is indexing."""
        from filelock import Timeout

        try:
            with self._lock(0):
                gen = current_generation(self.base)
                if gen is None:
                    return False
                engine = self.engine_for(gen)
                if engine.segment_count() <= max_segments:
                    return False
                return bool(engine.optimize())
        except Timeout:
            return False
