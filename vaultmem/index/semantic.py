"""The index's semantic channel: whether it can open, its vectors kept in step with the
index's generations, and the documents nearest a text (:class:`SemanticChannel`, the part
of :class:`.store.IndexStore` that deals with embeddings; the model is loaded only here).
"""

from __future__ import annotations

from ..errors import ModelUnavailable
from ..limits import engine_hits
from ..models import IndexDoc
from . import Filters, SyncReport
from .build import current_generation


class SemanticChannel:
    """The semantic channel of an index store: mixed into :class:`.store.IndexStore`, whose
    ``base``, ``semantic_mode``, ``model_spec``, ``manifests``, ``lock_timeout``, lock,
    engine and rebuild it uses, and whose ``_vectors`` (the open vector set) it keeps."""

    def semantic_off_because(self) -> str | None:
        """Why the semantic channel cannot open (the mode is off, the model's library is
        missing, its folder absent), found without importing numpy or the model; None
        when it can (the model may still fail to load: :meth:`semantic_search` says so)."""
        if self.semantic_mode == "off":
            return "search.semantic is off"
        from .embedders import check_available

        return check_available(self.model_spec)

    def keeps_vectors(self) -> bool:
        """Whether new generations journal their documents for the semantic channel."""
        return self.semantic_off_because() is None

    def semantic_status(self) -> dict:
        """``{"mode", "model", "on", "why", "vectors"}``: whether the semantic channel can
        open and why not, and how many documents have vectors (no model is loaded)."""
        from . import vectors

        why = self.semantic_off_because()
        gen = current_generation(self.base)
        state = vectors.read_state(self.base / gen) if gen else None
        out = {"mode": self.semantic_mode, "model": self.model_spec, "on": why is None, "why": why,
               "vectors": (state or {}).get("count", 0)}
        if why is None and gen and state is not None and state.get("model") != self.model_spec:
            out["vectors"] = 0  # made by another model: embedded again when the channel opens
        return out

    def vectors_report(self, wait: float | None = None) -> dict:
        """Embed what changed since the semantic channel's vectors were made; the channel's
        status after it, with ``embedded`` (how many documents were embedded now) and
        ``loaded`` (whether the model was loaded: not when nothing waited for a vector and
        its fingerprint was told from its files, so a model that cannot load is said only by
        the report that needs it, and by every search that would use it). A model that
        cannot be used turns the channel off and says why."""
        status = self.semantic_status()
        if not status["on"]:
            return status
        try:
            done = self.sync_vectors(wait=wait)
        except ModelUnavailable as exc:
            return {**status, "on": False, "why": exc.message}
        status = self.semantic_status()
        if done is None:
            return {**status, "embedded": 0, "skipped": "another process is updating the index"}
        return {**status, "embedded": done.get("embedded", 0), "loaded": done.get("loaded", True)}

    def sync_vectors(self, wait: float | None = None, most: int | None = None) -> dict | None:
        """Embed what the live generation journaled since its vectors were made (all of
        it under another model); None if the channel is off or another process holds the
        index lock (with ``wait=0``). Loads the model (:class:`ModelUnavailable`) when there
        is something to embed, or when its fingerprint cannot be told from its files.
        ``most``: embed at most this many documents, else :class:`vectors.TooMany` and
        nothing embedded."""
        if self.semantic_off_because() is not None:
            return None
        from . import embedders, vectors

        model = embedders.loaded(self.model_spec)  # a warm process's model: its own fingerprint
        known = model.fingerprint if model is not None else embedders.fingerprint_of(self.model_spec)
        if known is None:  # only the loaded model tells
            model = embedders.load(self.model_spec)
            known = model.fingerprint
        self.engine()  # a live generation, repaired or built if need be
        gen = current_generation(self.base)
        if vectors.started(self.base / gen) and not vectors.pending(self.base / gen, known):
            # nothing to embed: the model is loaded only when something is (~0.3 s for wordllama)
            return {"embedded": 0, "count": (vectors.read_state(self.base / gen) or {}).get("count", 0),
                    "loaded": model is not None}
        model = embedders.load(self.model_spec)
        from filelock import Timeout

        try:
            lock = self._lock(self.lock_timeout if wait is None else wait)
            lock.acquire()
        except Timeout:
            return None
        try:
            gen = current_generation(self.base)
            rebuilt = False
            if not vectors.started(self.base / gen):  # made while the channel was off: nothing journaled
                self._rebuild_keeping_engine()
                gen, rebuilt = current_generation(self.base), True
            try:
                done = vectors.sync(self.base / gen, model, most)
            except vectors.Lost:
                self._rebuild_keeping_engine()  # journals every document afresh
                done = vectors.sync(self.base / current_generation(self.base), model, most)
                rebuilt = True
            done["rebuilt"] = rebuilt
            return done
        finally:
            lock.release()

    def _rebuild_keeping_engine(self) -> SyncReport:
        """A rebuild with the index lock held, on the engine chosen by hand if one was."""
        gen = current_generation(self.base)
        manifest = self.manifests.load(gen) if gen else None
        pinned = manifest.get("engine") if manifest is not None and manifest.get("pinned") else None
        return self._rebuild_locked(None, pinned)

    def _rebuild_vectors(self, model) -> bool:
        """Build the index afresh (its journal holds every document) and its vectors;
        False when another process holds the index lock."""
        from filelock import Timeout

        from . import vectors

        try:
            lock = self._lock(0)
            lock.acquire()
        except Timeout:
            return False
        try:
            self._rebuild_keeping_engine()
            vectors.sync(self.base / current_generation(self.base), model)
            return True
        finally:
            lock.release()

    def semantic_search(self, text: str, filters: Filters, limit: int, also: list[str] = ()
                        ) -> tuple[list[tuple[IndexDoc, float]], dict[str, float]]:
        """The ``limit`` documents most similar to ``text`` that ``filters`` admits, best
        first, and the similarity of each id of ``also`` (lexical hits) that has a vector.
        Brings the vectors up to date first (if no other process is indexing); raises
        :class:`ModelUnavailable` when the model cannot be used."""
        from . import embedders, vectors

        model = embedders.load(self.model_spec)
        most = getattr(model, "search_embeds_at_most", None)
        try:
            self.sync_vectors(wait=0, most=most)
        except vectors.TooMany as exc:  # a dear model and a whole vault to embed: not inside a search
            raise ModelUnavailable(f"semantic search waits: {exc.waiting:,} documents are not embedded by "
                                   f"{self.model_spec} yet (a search embeds at most {most:,} itself: run "
                                   f"'vaultmem index')",
                                   hint="run 'vaultmem index' once, and keep 'vaultmem watch' running") from None
        gen = current_generation(self.base)
        state = vectors.read_state(self.base / gen) if gen else None
        if state is None or state.get("fingerprint") != model.fingerprint:
            return [], {}  # another process is making them right now
        cached = self._vectors
        if cached is None or cached[:2] != (gen, state["set"]):
            if cached is not None:
                cached[2].close()
            found = vectors.VectorSet.open(self.base / gen, state)
            if found is None:  # damaged (a disk error, a hand): never read, made afresh with the index
                self._vectors = None
                if not self._rebuild_vectors(model):
                    return [], {}
                gen = current_generation(self.base)
                state = vectors.read_state(self.base / gen)
                found = vectors.VectorSet.open(self.base / gen, state)
                if found is None:
                    return [], {}
            self._vectors = cached = (gen, state["set"], found)
        vset = cached[2]
        query = embedders.embed_query(model, text)
        hits = vset.search(query, filters.admits, engine_hits(limit))
        return hits, vset.similarity_of(list(also), query) if also else {}

