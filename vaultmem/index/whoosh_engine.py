"""The Whoosh engine (whoosh-reloaded 2.7.5, pinned; see docs/recall.md for why).

Fields hold pre-analysed terms (one space-separated string per field), so Whoosh's own
analysis only splits on spaces. Scoring is BM25F (k1 0.9, b 0.4) over title (×2),
body, aliases (×1.5) and the neighbours' text (×0.5). Queries are built as term
objects, without Whoosh's query parser. The whole IndexDoc is stored as JSON for
results, with its fields' lengths beside it; filters use ID fields.

Whoosh keeps a deleted document in its segment until that segment is merged, and its
BM25F counts it: in the document count, the term's document frequency and the average
field length. An index updated in place would then rank differently from one built
afresh (and a merge makes a segment's total field length a sum of rounded lengths, so
even the merge history would show). :func:`live_bm25f` takes the statistics from the live
documents only: their number, each query term's document frequency (counted from the
postings, which leave deleted documents out) and each field's total length (kept beside
the index by every write, tied to the commit's generation). Equal scores are ordered by
document id, so updated and rebuilt indexes rank alike.
"""

from __future__ import annotations

import sys
from math import log
from pathlib import Path
from types import ModuleType

from ..limits import engine_hits
from ..models import IndexDoc
from . import DEFAULT_EXCLUDED_KINDS, INACTIVE, Filters, Match, by_rank, complete_at, fold, rarest_terms
from .fields import (FIELDS, NONE, OWN_FIELDS, SEPARATOR, TEXT_FIELDS, fields_for, fields_of, holding_fields,
                     keep_lengths, kept_lengths, lengths_of, meta_term, stored_doc)
from .registry import EngineSpec, register


class _Later(ModuleType):
    """Stands in for a module while Whoosh loads: its attributes are the real module's,
    imported on first use (see :func:`_load_whoosh`)."""

    def __getattr__(self, name: str):
        import importlib

        if name.startswith("__"):  # what the import system asks of a module (__path__ …)
            raise AttributeError(name)
        real = importlib.import_module(self.__name__)
        if real is self:  # still standing in: Whoosh itself asked
            raise AttributeError(name)
        return getattr(real, name)


def _on_call(module: str, name: str):
    """A function that imports ``module`` when called, and calls its ``name``."""
    def call(*args, **kwargs):
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    return call


def _load_whoosh() -> None:
    """Import Whoosh without what its imports drag in and it never uses here.
    ``whoosh.compat`` imports ``urllib.request`` (http.client, email, ssl, hashlib) for
    ``urlretrieve``, which only its developer tools call; ``whoosh.reading`` imports the
    ``cached_property`` package, which imports ``asyncio`` (ssl again) to ask whether a
    function is a coroutine; ``whoosh.query`` imports ``whoosh.lang.morph_en``, ~12 ms of
    regular expressions compiled for the word variations of a query class never built
    here. That was ~70 ms of every process that opens a Whoosh index, the engine of small
    vaults: most hooks and commands.

    While Whoosh's modules load, stand-ins answer these imports: ``urlretrieve`` and
    ``variations`` import the real module when they are called, and the stand-in for ``asyncio`` answers
    ``iscoroutinefunction`` as :mod:`inspect` does (asyncio's own answer for a function)
    and hands out any other of the real module's attributes when asked. ``sys.modules``
    is then left as it was, so every later import of one gets the real module; one
    imported already is used as it is. Only a process of one thread does this — a cold
    command or hook, what it is for: in one of several threads (a server, a library's
    host), another thread's import of one of them meanwhile would get the stand-in, so
    Whoosh is imported as it is."""
    if "whoosh.reading" in sys.modules:
        return
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return  # another thread importing either meanwhile would get the stand-in: Whoosh imports them
    import inspect

    standing: dict[str, ModuleType] = {}
    # all cached_property asks of asyncio, at every first read of a cached attribute (Whoosh
    # reads one per search): for a function, the answer asyncio's own gives
    for name, attributes in (("urllib.request", {"urlretrieve": _on_call("urllib.request", "urlretrieve")}),
                             ("asyncio", {"iscoroutinefunction": inspect.iscoroutinefunction}),
                             ("whoosh.lang.morph_en", {"variations": _on_call("whoosh.lang.morph_en", "variations")})):
        if name not in sys.modules:
            standing[name] = later = _Later(name)
            later.__dict__.update(attributes)
    sys.modules.update(standing)
    try:
        import whoosh.compat  # noqa: F401
        import whoosh.query  # noqa: F401
        import whoosh.reading  # noqa: F401
    finally:
        for name, module in standing.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def schema():
    _load_whoosh()
    from whoosh.analysis import RegexTokenizer
    from whoosh.fields import ID, STORED, TEXT, Schema

    terms = RegexTokenizer(r"[^ ]+")
    def values():  # the values of a many-valued filter field, each whole; filters only, never scored
        f = TEXT(analyzer=RegexTokenizer(f"[^{SEPARATOR}]+"), phrase=False)
        f.scorable = False
        return f

    return Schema(
        id=ID(stored=False, unique=True),
        path=ID(),
        kind=ID(),
        agent=ID(),
        type=ID(),
        status=ID(),
        author_kind=ID(),
        date=ID(),  # the document's day (YYYY-MM-DD), or NONE
        tags=values(),
        meta=values(),  # key=value of each scalar frontmatter value
        doc=STORED(),
        lengths=STORED(),  # each text field's number of terms (the statistics of deleted docs)
        chars=TEXT(analyzer=terms, phrase=False),  # CJK unigrams: only for one-character queries
        **{name: TEXT(analyzer=terms, field_boost=boost, phrase=False) for name, boost in FIELDS},
    )


K1, B = 0.9, 0.4


def stored_lengths(stored: dict) -> list[int]:
    """A document's field lengths, from its stored fields."""
    if "lengths" in stored:
        return list(stored["lengths"])
    return lengths_of(fields_of(stored_doc(stored["doc"])))  # an index from before lengths


class LiveStats:
    """The collection statistics of one searcher's live documents: their number, each
    field's total length (kept beside the index: Whoosh's own totals count deleted
    documents, and a merge adds rounded lengths), each term's document frequency (a
    segment's postings leave its deleted documents out)."""

    def __init__(self, searcher, lengths: list[int]) -> None:
        reader = searcher.reader()
        self.searcher = searcher
        self.doc_count = reader.doc_count()
        self.leaves = list(reader.leaf_readers())
        self.ghostly = any(r.has_deletions() for r, _base in self.leaves)
        self.lengths = dict(zip(TEXT_FIELDS, lengths))
        self._df: dict[tuple[str, str], int] = {}

    def doc_frequency(self, field: str, text: str) -> int:
        if not self.ghostly:
            return self.searcher.doc_frequency(field, text)
        key = (field, text)
        if key not in self._df:
            n = 0
            for r, _base in self.leaves:
                if (field, text) in r:
                    n += sum(1 for _ in r.postings(field, text).all_ids()) if r.has_deletions() \
                        else r.doc_frequency(field, text)
            self._df[key] = n
        return self._df[key]

    def idf(self, field: str, text: str) -> float:  # Whoosh's idf, over the live documents
        return log(self.doc_count / (self.doc_frequency(field, text) + 1)) + 1

    def avg_field_length(self, field: str) -> float:
        return self.lengths[field] / (self.doc_count or 1)


def live_bm25f(stats_of, B: float = B, K1: float = K1):
    """Whoosh's BM25F with the statistics of the live documents only (see the module
    doc); ``stats_of(searcher)``: the :class:`LiveStats` of a top-level searcher."""
    from whoosh.scoring import BM25F, BM25FScorer, WeightScorer

    class LiveScorer(BM25FScorer):
        def __init__(self, searcher, fieldname, text, B, K1, qf=1):
            stats = stats_of(searcher.get_parent())
            self.idf = stats.idf(fieldname, text)
            self.avgfl = stats.avg_field_length(fieldname) or 1
            self.B, self.K1, self.qf = B, K1, qf
            self.setup(searcher, fieldname, text)

    class LiveBM25F(BM25F):
        def idf(self, searcher, fieldname, text):
            return stats_of(searcher.get_parent()).idf(fieldname, text)

        def scorer(self, searcher, fieldname, text, qf=1):
            if not searcher.schema[fieldname].scorable:
                return WeightScorer.for_(searcher, fieldname, text)
            return LiveScorer(searcher, fieldname, text, self._field_B.get(fieldname, self.B), self.K1, qf=qf)

    return LiveBM25F(B=B, K1=K1)


def _merge_all_but_largest(writer, segments):
    """A Whoosh merge policy (same shape as ``whoosh.writing.MERGE_SMALL``): every
    segment but the largest is merged into the new one."""
    from whoosh.reading import SegmentReader

    if len(segments) <= 2:
        return segments
    largest = max(segments, key=lambda seg: seg.doc_count_all())
    for seg in segments:
        if seg is not largest:
            reader = SegmentReader(writer.storage, writer.schema, seg)
            writer.add_reader(reader)
            reader.close()
    return [largest]


class WhooshEngine:
    """One Whoosh index folder. ``create=True`` makes a new empty index there."""

    name = "whoosh"

    def __init__(self, folder: Path, create: bool = False) -> None:
        _load_whoosh()
        from whoosh import index

        self.folder = Path(folder)
        if create:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.ix = index.create_in(str(self.folder), schema())
        else:
            self.ix = index.open_dir(str(self.folder))
        self._searcher = None
        self._doc_sets: dict[int, dict] = {}

    def write(self, add: list[IndexDoc], delete_paths: list[str], prepared: list[dict] | None = None,
              later: list | None = None) -> None:
        if not add and not delete_paths:
            return
        # Large indexes: non-compound segments avoid copying a big segment on every update.
        writer = self.ix.writer(limitmb=128, compound=self.ix.doc_count_all() + len(add) < 20000)
        with_lengths = "lengths" in self.ix.schema  # an index from before lengths were stored has no place for them
        try:
            lengths = self._lengths()
            with self.ix.searcher() as before:
                for path in delete_paths:
                    for stored in before.documents(path=path):
                        lengths = [a - b for a, b in zip(lengths, stored_lengths(stored))]
            for path in delete_paths:
                writer.delete_by_term("path", path)
            for n, doc in enumerate(add):
                fields = prepared[n] if prepared else fields_of(doc)
                counts = lengths_of(fields)
                lengths = [a + b for a, b in zip(lengths, counts)]
                writer.add_document(**({**fields, "lengths": counts} if with_lengths else fields))
        except BaseException:
            writer.cancel()
            raise
        writer.commit()
        keep_lengths(self.folder, self.ix.latest_generation(), lengths)  # after the commit: a crash leaves it stale
        self._searcher = None

    def _lengths(self, searcher=None) -> list[int]:
        """Each text field's total length over the live documents of the newest commit
        (or of ``searcher``'s): as kept beside the index, else counted from them."""
        own = searcher is None
        searcher = self.ix.searcher() if own else searcher
        try:
            lengths = kept_lengths(self.folder, searcher.reader().generation())
            if lengths is None:
                lengths = [0] * len(TEXT_FIELDS)
                for stored in searcher.all_stored_fields():
                    lengths = [a + b for a, b in zip(lengths, stored_lengths(stored))]
                keep_lengths(self.folder, searcher.reader().generation(), lengths)
            return lengths
        finally:
            if own:
                searcher.close()

    def live_stats(self, searcher) -> LiveStats:
        """The live statistics of a top-level searcher (made once per searcher)."""
        stats = getattr(searcher, "vaultmem_live", None)
        if stats is None:
            stats = searcher.vaultmem_live = LiveStats(searcher, self._lengths(searcher))
        return stats

    def _get_searcher(self):
        if self._searcher is None:
            self._searcher = self.ix.searcher(weighting=live_bm25f(self.live_stats))
        elif not self._searcher.up_to_date():
            self._searcher.close()  # refresh() reuses segment readers: it misses another process's deletions
            self._searcher = self.ix.searcher(weighting=live_bm25f(self.live_stats))
        return self._searcher

    def search(self, terms: list[str], filters: Filters, limit: int, *, text: str = "",
               match: Match | None = None) -> list[tuple[IndexDoc, float]]:
        from whoosh import query as Q

        if not terms or (match is not None and match.impossible):
            return []
        searcher = self._get_searcher()
        stats = self.live_stats(searcher)
        if match is None:
            terms = rarest_terms(terms, lambda t: sum(stats.doc_frequency(name, t) for name, _b in FIELDS))
        q = Q.Or([Q.Term(name, t) for t in terms for name in fields_for(t)])
        # Everything is expressed as a mask (documents to leave out) built from the few
        # values to exclude: other agents, kinds not asked for, inactive notes. Masks of
        # small sets are cheap; an allow-filter such as "this agent or nobody" would
        # enumerate almost every document on every query.
        deny: set[int] = set()
        if filters.agent is not None:
            for a in self._values(searcher, "agent"):
                if a not in (filters.agent, NONE):
                    deny |= self._docs(searcher, "agent", a)
        if filters.kinds:
            for k in self._values(searcher, "kind"):
                if k not in filters.kinds:
                    deny |= self._docs(searcher, "kind", k)
        else:
            for k in DEFAULT_EXCLUDED_KINDS:
                deny |= self._docs(searcher, "kind", k)
        if filters.statuses:
            for st in self._values(searcher, "status"):
                if st not in filters.statuses:
                    deny |= self._docs(searcher, "status", st)
        elif not filters.include_inactive:
            for st in INACTIVE:
                deny |= self._docs(searcher, "status", st)
        if filters.author_kinds:
            for a in self._values(searcher, "author_kind"):
                if a not in filters.author_kinds:
                    deny |= self._docs(searcher, "author_kind", a)
        if filters.since or filters.until:
            for day in self._values(searcher, "date"):  # the distinct days: a few hundred
                if day == NONE or (filters.since and day < filters.since) or (filters.until and day > filters.until):
                    deny |= self._docs(searcher, "date", day)
        for t in (match.excluded if match is not None else ()):
            for name in holding_fields(t):
                deny |= self._docs(searcher, name, t)
        allow = [Q.Or([Q.Term("type", t) for t in filters.types])] if filters.types else []
        allow += [Q.Term("tags", fold(t)) for t in filters.tags]
        allow += [Q.Term("meta", meta_term(k, v)) for k, v in filters.where]
        for alternatives in (match.required if match is not None else ()):
            allow.append(Q.Or([Q.And([Q.Or([Q.Term(name, t) for name in holding_fields(t)]) for t in alt])
                               for alt in alternatives if alt]))
        held = searcher.doc_count()
        limit = engine_hits(limit)  # never room for more than the index holds, nor than limits allows
        asked = engine_hits(limit + 10, held)
        while True:  # until every document tying with the last place is in (ties go by id)
            results = searcher.search(q, limit=asked, filter=Q.And(allow) if allow else None, mask=deny or None)
            top = results.top_n  # (score, docnum), best first
            if complete_at([score for score, _n in top], limit, asked):
                break
            # each search scores every match again: a tie of thousands (entries of one
            # shape on a big page) is reached in a few searches, not in one per doubling
            more = engine_hits(asked * 8, held)
            if more == asked:  # as many as an engine is ever asked for: ties past it go by score alone
                break
            asked = more
        scores = sorted((score for score, _n in top), reverse=True)
        cut = scores[min(limit, len(scores)) - 1] if scores else 0.0
        # a document is read only when it can be among the best ``limit``: above the last
        # place, or tying with it (whose ids decide)
        found = [(stored_doc(searcher.stored_fields(docnum)["doc"]), float(score))
                 for score, docnum in top if score >= cut]
        return by_rank(found)[:limit]

    def terms_with_prefix(self, prefix: str, limit: int) -> list[str]:
        searcher = self._get_searcher()
        reader = searcher.reader()
        counts: dict[str, int] = {}
        for name in OWN_FIELDS:
            for term in reader.expand_prefix(name, prefix):
                term = term.decode("utf-8") if isinstance(term, bytes) else term
                counts[term] = counts.get(term, 0) + reader.doc_frequency(name, term)
        return sorted(counts, key=lambda t: (-counts[t], t))[:limit]

    def _docs(self, searcher, field: str, value: str) -> frozenset[int]:
        """Document numbers holding ``field == value``, read from the posting list once
        per searcher (cheaper than letting Whoosh union matchers for every query)."""
        cache = self._doc_sets.get(id(searcher))
        if cache is None:
            self._doc_sets = {id(searcher): {}}
            cache = self._doc_sets[id(searcher)]
        key = (field, value)
        if key not in cache:
            reader = searcher.reader()
            cache[key] = (frozenset(reader.postings(field, value).all_ids())
                          if (field, value) in reader else frozenset())
        return cache[key]

    @staticmethod
    def _values(searcher, field: str) -> list[str]:
        """The distinct values of an ID field (a handful: agents, kinds)."""
        return [v.decode("utf-8") if isinstance(v, bytes) else v for v in searcher.lexicon(field)]

    def doc_frequency(self, term: str) -> int:
        """In how many live documents ``term`` occurs (most of any one of its fields)."""
        return self.doc_frequencies([term])[1][term]

    def doc_frequencies(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(live documents, :meth:`doc_frequency` of each of ``terms``), all of one searcher."""
        stats = self.live_stats(self._get_searcher())
        return stats.doc_count, {t: max(stats.doc_frequency(name, t) for name in fields_for(t)) for t in terms}

    def doc_count(self) -> int:
        return self.ix.doc_count()  # live documents only

    def segment_count(self) -> int:
        return len(self.ix._segments())

    def optimize(self) -> bool:
        """Merge the small segments that updates leave behind into one, leaving the
        largest segment as it is: cheap at any size, unlike Whoosh's full optimize, which
        rewrites the whole index (about 30 s at 10k notes)."""
        lengths = self._lengths()
        writer = self.ix.writer()
        writer.commit(mergetype=_merge_all_but_largest)
        keep_lengths(self.folder, self.ix.latest_generation(), lengths)  # a merge keeps the live documents
        self._searcher = None
        return True

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        self.ix.close()


register(EngineSpec(
    name="whoosh", library="whoosh", auto_from_files=0, install_hint="pip install whoosh-reloaded",
    open=lambda gen_dir, create: WhooshEngine(gen_dir, create=create),  # its files sit in the generation folder
    prepared_only=True,
))
