"""The Whoosh engine (whoosh-reloaded 2.7.5, pinned; see docs/recall.md for why).

Fields hold pre-analysed terms (one space-separated string per field), so Whoosh's own
analysis only splits on spaces. Scoring is BM25F (k1 0.9, b 0.4) over title (×2),
body, aliases (×1.5) and the neighbours' text (×0.5). Queries are built as term
objects, without Whoosh's query parser. The whole IndexDoc is stored as JSON for
results; filters use ID fields.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..analysis import is_cjk_char
from ..models import IndexDoc
from . import DEFAULT_EXCLUDED_KINDS, INACTIVE, Filters, rarest_terms
from .fields import FIELDS, NONE, fields_of
from .registry import EngineSpec, register


def schema():
    from whoosh.analysis import RegexTokenizer
    from whoosh.fields import ID, STORED, TEXT, Schema

    terms = RegexTokenizer(r"[^ ]+")
    return Schema(
        id=ID(stored=False, unique=True),
        path=ID(),
        kind=ID(),
        agent=ID(),
        type=ID(),
        status=ID(),
        doc=STORED(),
        chars=TEXT(analyzer=terms, phrase=False),  # CJK unigrams: only for one-character queries
        **{name: TEXT(analyzer=terms, field_boost=boost, phrase=False) for name, boost in FIELDS},
    )


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
        from whoosh import index

        self.folder = Path(folder)
        if create:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.ix = index.create_in(str(self.folder), schema())
        else:
            self.ix = index.open_dir(str(self.folder))
        self._searcher = None
        self._doc_sets: dict[int, dict] = {}

    def write(self, add: list[IndexDoc], delete_paths: list[str], prepared: list[dict] | None = None) -> None:
        if not add and not delete_paths:
            return
        # Large indexes: non-compound segments avoid copying a big segment on every update.
        writer = self.ix.writer(limitmb=128, compound=self.ix.doc_count_all() + len(add) < 20000)
        try:
            for path in delete_paths:
                writer.delete_by_term("path", path)
            for n, doc in enumerate(add):
                writer.add_document(**(prepared[n] if prepared else fields_of(doc)))
        except BaseException:
            writer.cancel()
            raise
        writer.commit()
        self._searcher = None

    def _get_searcher(self):
        from whoosh.scoring import BM25F

        if self._searcher is None:
            self._searcher = self.ix.searcher(weighting=BM25F(B=0.4, K1=0.9))
        elif not self._searcher.up_to_date():
            self._searcher = self._searcher.refresh()
        return self._searcher

    def search(self, terms: list[str], filters: Filters, limit: int, *, text: str = "") -> list[tuple[IndexDoc, float]]:
        from whoosh import query as Q

        if not terms:
            return []
        searcher = self._get_searcher()
        terms = rarest_terms(terms, lambda t: sum(searcher.doc_frequency(name, t) for name, _b in FIELDS))
        q = Q.Or([Q.Term("chars", t) if is_cjk_char(t) else Q.Term(name, t)
                  for t in terms for name, _boost in (FIELDS[:1] if is_cjk_char(t) else FIELDS)])
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
        if not filters.include_inactive:
            for st in INACTIVE:
                deny |= self._docs(searcher, "status", st)
        allow = [Q.Or([Q.Term("type", t) for t in filters.types])] if filters.types else []
        results = searcher.search(
            q, limit=limit, filter=Q.And(allow) if allow else None, mask=deny or None
        )
        return [(IndexDoc(**json.loads(hit["doc"])), float(hit.score)) for hit in results]

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

    def doc_count(self) -> int:
        return self.ix.doc_count()

    def segment_count(self) -> int:
        return len(self.ix._segments())

    def optimize(self) -> bool:
        """Merge the small segments that updates leave behind into one, leaving the
        largest segment as it is: cheap at any size, unlike Whoosh's full optimize, which
        rewrites the whole index (about 30 s at 10k notes)."""
        writer = self.ix.writer()
        writer.commit(mergetype=_merge_all_but_largest)
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
))
