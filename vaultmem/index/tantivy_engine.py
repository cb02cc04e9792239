"""The tantivy engine (tantivy-py, a Rust search library with Python wheels).

The same documents, fields and filters as the Whoosh engine: fields hold the terms
:mod:`vaultmem.analysis` produced, joined by spaces and split again by tantivy's
``whitespace`` tokenizer (which neither lowercases nor drops long tokens, so what is
indexed is exactly what analysis said). Text fields record frequencies but no positions
(no phrase queries are made). Scoring is tantivy's BM25 (k1 1.2, b 0.75) summed over the
fields, each term weighted by its field (title ×2, body, aliases ×1.5, near ×0.5), where
Whoosh computes BM25F; docs/recall.md gives the dev-set figures of both. Filters are term
queries on raw fields, wrapped so they never change a score. The whole IndexDoc is
stored as JSON bytes, and beside it the terms of its text fields (``terms``, what the
scoring below reads; an index made before it has another schema and is rebuilt).

Live statistics. tantivy keeps a deleted document in its segment until a merge — which
tantivy-py cannot ask for — and its BM25 counts it (document count, document frequency,
average field length), so an updated index would rank differently from a fresh one. So
tantivy finds the candidates and vaultmem scores them: the same BM25, each matched term's
frequency counted in the hit's stored terms and each field's length rounded as tantivy
stores it (one byte a field: :func:`fieldnorm`) — exactly what tantivy's explanation of
the hit would say (tested against it), without the explanation's cost — and the
statistics of the live documents: their number (tantivy's), each term's live document
frequency (a count query when anything is deleted), each field's total length
(``lengths.json`` beside the index, kept by every write and tied to tantivy's commit
stamp; counted afresh if it is missing or stale). tantivy's top candidates are fetched
until no document left out can reach the last place: the stale statistics can change a
score by at most a known factor per term (:meth:`LiveStats.bound`), so the hits are read
in tantivy's order only until one's score times that factor falls below the last place —
past it, none can reach it. Equal scores are ordered by document id.

A warm process reads the same documents again and again (an agent's questions come back
to the same notes): each searcher keeps the documents it has read, their terms and, once
a hit needed it, their IndexDoc (:meth:`LiveStats.read`), up to :data:`READ_CACHE_BYTES`
of memory, the least recently read dropped first. A commit opens a new searcher,
and with it an empty cache.

tantivy has its own writer lock (``.tantivy-writer.lock``); the index store already lets
one process write at a time, so the lock is only ever contended if something outside
vaultmem writes here, and then it surfaces as :class:`~vaultmem.errors.Busy`.
"""

from __future__ import annotations

import json
import os
import re
import threading
from bisect import bisect_right
from collections import OrderedDict
from heapq import heappush, heappushpop
from math import log
from pathlib import Path

from ..errors import Busy
from ..limits import engine_hits
from ..models import IndexDoc
from ..patterns import Lazy
from . import DEFAULT_EXCLUDED_KINDS, INACTIVE, Filters, Found, Match, by_rank, fold, rarest_terms
from . import fields as field_terms
from .fields import (FIELDS, FILTER_FIELDS, NONE, OWN_FIELDS, SEPARATOR, TEXT_FIELDS, fields_for, fields_of,
                     holding_fields, keep_lengths, kept_lengths, lengths_of, meta_term, stored_doc, term_count)
from .registry import EngineSpec, register

RAW_FIELDS = ("id", "path", "kind", "agent", "type", "status")
FIELD_NAMES = (*RAW_FIELDS, *TEXT_FIELDS, "doc", "terms", *FILTER_FIELDS)  # in schema order: a field's number is its place here
WEIGHTS = {**dict(FIELDS), "chars": 1.0}
TEXT_AT = {name: n for n, name in enumerate(TEXT_FIELDS)}
K1, B = 1.2, 0.75  # tantivy's BM25 constants
WRITER_HEAP = 64_000_000
# what one searcher keeps of the documents it has read, as memory (estimated: a
# document's stored terms ×8 plus 3.5 KB, its terms and IndexDoc as Python objects —
# measured ~7.4 KB a note of a 50,000-note vault): ~2,000 such notes, the candidates of
# some thirty different questions
READ_CACHE_BYTES = 16 * 1024 * 1024
FEW_VALUES = 16  # a filter of up to this many values is a term query each, not a term set
# ``auto`` builds a tantivy index from this many Markdown files on (Whoosh misses the
# 5 ms warm-search goal from 200 notes and is slower at every size measured:
# docs/benchmarks.md), and a Whoosh index is rebuilt on tantivy once the vault grows past
# it — never the other way round.
AUTO_TANTIVY_FILES = 200


def _schema():
    import tantivy

    sb = tantivy.SchemaBuilder()
    for name in RAW_FIELDS:
        sb.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    for name in TEXT_FIELDS:
        sb.add_text_field(name, stored=False, tokenizer_name="whitespace", index_option="freq")
    sb.add_bytes_field("doc", stored=True, indexed=False)
    sb.add_bytes_field("terms", stored=True, indexed=False)  # the text fields' terms: what scoring reads
    for name in FILTER_FIELDS:  # tags and meta hold several values: one raw term each
        sb.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    return sb.build()


def _fieldnorms() -> list[int]:
    """tantivy's field lengths as it stores them (one byte a document and field): exact
    up to 40, then 8 steps of 2, 8 of 4, 8 of 8... (``fieldnorm/code.rs``)."""
    table, step = list(range(41)), 2
    while len(table) < 256:
        for _ in range(8):
            table.append(table[-1] + step)
        step *= 2
    return table[:256]


FIELDNORMS = _fieldnorms()


def fieldnorm(length: int) -> int:
    """A field's length as tantivy's BM25 sees it: rounded down to a stored value."""
    return length if length <= 40 else FIELDNORMS[bisect_right(FIELDNORMS, length) - 1]


# The ``chars`` field (each CJK character of a document once) is stored as its length
# alone: a character is in it exactly where the title's, text's or aliases' stored terms
# hold it — their CJK terms are the bigrams (and lone characters) of the very runs it was
# made from (:func:`.fields.fields_of`), and no other term holds a CJK character. Storing
# the characters took 15 % of the document store (docs/benchmarks.md). Where the
# speaker's name is not in the title (``fields.SPEAKER``, an ablation's setting) the title's
# and aliases' terms leave it out while the unigrams keep it: the characters are stored.
CHARS_AT = TEXT_FIELDS.index("chars")
_CHARS_FROM = tuple(TEXT_FIELDS.index(name) for name in ("title", "body", "aliases"))


def stored_terms(fields: dict) -> bytes:
    """What the ``terms`` field stores of a document: the terms of its text fields (each
    field's joined by spaces, as :func:`fields_of` made them) but ``chars``, for which
    its length (its characters where the speaker's name is not in the title); joined by
    :data:`SEPARATOR` — which no term holds."""
    if field_terms.SPEAKER != "title":
        return SEPARATOR.join([fields[name] for name in TEXT_FIELDS]).encode("utf-8")
    parts = [fields[name] if name != "chars" else str(term_count(fields[name])) for name in TEXT_FIELDS]
    return SEPARATOR.join(parts).encode("utf-8")


def read_terms(data: bytes) -> list[str]:
    """The text fields' terms :func:`stored_terms` stored, in :data:`TEXT_FIELDS` order
    (``chars``: its length, or its characters)."""
    return data.decode("utf-8").split(SEPARATOR)


def _is_count(stored: str) -> bool:
    """Whether the ``chars`` field as :func:`read_terms` read it is its length (or its
    characters: no digit is a CJK character)."""
    return stored.isascii() and stored.isdigit()


def idf(n: int, total: int) -> float:
    """tantivy's BM25 idf of a term in ``n`` of ``total`` documents."""
    return log(1 + (total - n + 0.5) / (n + 0.5))


_TERM = Lazy(r'Term=Term\(field=(\d+), type=Str, "(.*)"\)$', re.S)
_ESCAPE = Lazy(r"\\(u\{([0-9a-fA-F]+)\}|.)", re.S)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0"}


def _unescape(text: str) -> str:
    """A string as Rust's Debug printed it, back to itself."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(2), 16)) if m.group(2) else _ESCAPES.get(m.group(1), m.group(1)),
                       text)


# In tantivy's explanation of a hit (JSON), each matched term's node holds its frequency,
# then its field length, then the term itself in its context.
_MATCHED = Lazy(r'"value": ([^,\s]+),\s*"description": "freq, occurrences of term within document"'
                r'.*?"value": ([^,\s]+),\s*"description": "dl, length of field"'
                r'.*?"context": \[\s*("(?:[^"\\]|\\.)*")', re.S)


def matched_terms(explanation: str) -> list[tuple[str, str, float, float]]:
    """(field, term, frequency, field length) of every term that matched, from tantivy's
    explanation of a hit (``Explanation.to_json()``): tantivy's own account of a score,
    which the tests hold :meth:`LiveStats.score_stored` to."""
    out = []
    for m in _MATCHED.finditer(explanation):
        term = _TERM.match(json.loads(m.group(3)))
        if term is None:
            raise ValueError(f"unexpected explanation: {m.group(3)[:200]!r}")
        out.append((FIELD_NAMES[int(term.group(1))], _unescape(term.group(2)), float(m.group(1)), float(m.group(2))))
    if not out and '"TermQuery' in explanation:
        raise ValueError("an explanation whose terms could not be read")
    return out


class LiveStats:
    """What BM25 needs of one searcher's live documents: their number, each field's total
    length, each term's document frequency — and how far tantivy's own (counting deleted
    documents) may be from them."""

    def __init__(self, searcher, schema, meta: dict, lengths: list[int]) -> None:
        self.searcher, self.schema = searcher, schema
        self.docs = searcher.num_docs
        self.all_docs = sum(seg["max_doc"] for seg in meta.get("segments", [])) or self.docs  # deleted included
        self.ghostly = self.all_docs > self.docs
        self.avgdl = {name: n / (self.docs or 1) for name, n in zip(TEXT_FIELDS, lengths)}
        self._df: dict[tuple[str, str], int] = {}
        self._read: OrderedDict[tuple[int, int], Read] = OrderedDict()
        self._read_bytes = 0
        self._read_lock = threading.Lock()  # a server searches in several threads

    def read(self, address) -> Read:
        """The document at ``address`` as read before, else read now (and kept)."""
        key = (address.segment_ord, address.doc)
        with self._read_lock:
            got = self._read.get(key)
            if got is not None:
                self._read.move_to_end(key)
                return got
        stored = self.searcher.doc(address)
        raw = bytes(stored.get_first("terms"))
        got = Read(stored, read_terms(raw), 8 * len(raw) + 3584)
        with self._read_lock:
            if key not in self._read:
                self._read[key] = got
                self._read_bytes += got.size
                while self._read_bytes > READ_CACHE_BYTES and len(self._read) > 1:
                    self._read_bytes -= self._read.popitem(last=False)[1].size
        return got

    def doc_frequency(self, field: str, term: str) -> int:
        key = (field, term)
        if key not in self._df:
            if not self.ghostly:
                self._df[key] = self.searcher.doc_freq(field, term)
            else:  # tantivy's doc_freq counts deleted documents; a count leaves them out
                from tantivy import Query

                self._df[key] = self.searcher.search(Query.term_query(self.schema, field, term), 1, count=True).count
        return self._df[key]

    def weight(self, field: str, term: str) -> float:
        """A term's BM25 weight in a field (its field's boost × idf × (k1 + 1)), live."""
        return WEIGHTS[field] * idf(self.doc_frequency(field, term), self.docs) * (K1 + 1)

    def term_score(self, weight: float, field: str, tf: float, dl: float) -> float:
        return weight * (tf / (tf + K1 * (1 - B + B * dl / (self.avgdl[field] or 1.0))))

    def score(self, matched: list[tuple[str, str, float, float]]) -> float:
        """BM25 over the live documents of a hit's matched terms, (field, term,
        frequency, tantivy's field length) as :func:`matched_terms` reads them."""
        return sum(self.term_score(self.weight(field, term), field, tf, dl) for field, term, tf, dl in matched)

    def weighed(self, clauses: list[tuple[str, str]]) -> list[tuple[str, list[tuple[str, float]]]]:
        """A query's (field, term) clauses as :meth:`score_stored` takes them: by field,
        each term with its :meth:`weight`."""
        grouped: dict[str, list[tuple[str, float]]] = {}
        for field, term in clauses:
            grouped.setdefault(field, []).append((term, self.weight(field, term)))
        return list(grouped.items())

    def score_stored(self, weighed: list[tuple[str, list[tuple[str, float]]]], stored: list[str]) -> float:
        """BM25 over the live documents of a hit: ``weighed``, the query's clauses as
        :meth:`weighed` gives them; ``stored``, the hit's text fields' terms (its
        ``terms`` field), counted here, each field's length rounded as tantivy stores it."""
        total = 0.0
        for field, pairs in weighed:
            if field == "chars" and _is_count(stored[CHARS_AT]):  # (one each: a character is held once, if at all)
                held = [weight for term, weight in pairs if any(term in stored[n] for n in _CHARS_FROM)]
                if held:
                    norm = K1 * (1 - B + B * fieldnorm(int(stored[CHARS_AT])) / (self.avgdl[field] or 1.0))
                    for weight in held:
                        total += weight * (1 / (1 + norm))
                continue
            text = stored[TEXT_AT[field]]
            if not text:
                continue
            present = [(term, weight) for term, weight in pairs if term in text]  # as text: all it can hold, and more
            if not present:
                continue
            words = text.split()
            # term_score's arithmetic, its field's part once
            norm = K1 * (1 - B + B * fieldnorm(len(words)) / (self.avgdl[field] or 1.0))
            for term, weight in present:
                tf = words.count(term)
                if tf:
                    total += weight * (tf / (tf + norm))
        return total

    def bound(self, clauses: list[tuple[str, str]]) -> float:
        """How many times its tantivy score a document's live score can be at most:
        per term, the ratio of the idfs, times the ratio of the average field lengths
        (at most all documents over live ones, since deleted ones only add length), with
        room for tantivy's single-precision arithmetic."""
        if not self.ghostly:  # tantivy's statistics are the live ones
            return 1 + 1e-5
        worst = 1.0
        for field, term in clauses:
            live = self.doc_frequency(field, term)
            if not live:
                continue
            stale = max(self.searcher.doc_freq(field, term), live)
            worst = max(worst, idf(live, self.docs) / idf(stale, self.all_docs))
        return worst * (self.all_docs / (self.docs or 1)) * (1 + 1e-5)


class Read:
    """A document as one searcher read it: its stored form, its text fields' terms, and
    its IndexDoc once asked for (parsed once; shared by every hit of it — read only)."""

    __slots__ = ("stored", "terms", "size", "_doc")

    def __init__(self, stored, terms: list[str], size: int) -> None:
        self.stored, self.terms, self.size, self._doc = stored, terms, size, None

    @property
    def doc(self) -> IndexDoc:
        doc = self._doc
        if doc is None:
            stored = self.stored
            if stored is None:  # another thread parsed it meanwhile (it sets _doc first)
                return self._doc
            doc = self._doc = _index_doc(stored)
            self.stored = None  # tantivy's copy is not needed again
        return doc


def clauses_of(terms: list[str]) -> list[tuple[str, str]]:
    """The (field, term) pairs a query's terms are searched in (:func:`.fields.fields_for`)."""
    return [(name, t) for t in terms for name in fields_for(t)]


def _index_doc(stored) -> IndexDoc:
    """The IndexDoc of a tantivy document as stored."""
    return stored_doc(bytes(stored.get_first("doc")))


class TantivyEngine:
    """One tantivy index folder. ``create=True`` makes a new empty index there."""

    name = "tantivy"

    def __init__(self, folder: Path, create: bool = False) -> None:
        import tantivy

        self.folder = Path(folder)
        self._meta_path = str(self.folder / "meta.json")  # stat before every search: its commit tells
        if create:
            self.folder.mkdir(parents=True, exist_ok=True)
        elif not (self.folder / "meta.json").is_file():
            raise FileNotFoundError(f"no tantivy index in {self.folder}")
        self.schema = _schema()
        self.ix = tantivy.Index(self.schema, path=str(self.folder), reuse=not create)
        self._searcher = None
        self._stamp = None
        self._stats: LiveStats | None = None

    def write(self, add: list[IndexDoc], delete_paths: list[str], prepared: list[dict] | None = None,
              later: list | None = None) -> None:
        """One commit (see :meth:`SearchEngine.write`); tantivy's merge policy may start a
        merge of segments at the commit: with ``later``, waiting for it (and freeing the
        writer and its lock) is appended there instead of done here."""
        import tantivy

        if not add and not delete_paths:
            return
        try:
            writer = self.ix.writer(WRITER_HEAP, 1)
        except ValueError as exc:
            if "LockBusy" in str(exc):
                raise Busy("another program holds the tantivy index's writer lock",
                           path=str(self.folder / ".tantivy-writer.lock"), hint="retry in a moment") from None
            raise
        try:
            searcher = self._get_searcher()  # the writer holds the index: nobody commits meanwhile
            lengths = kept_lengths(self.folder, self._meta().get("opstamp"))
            if lengths is None:
                lengths = self._count_lengths(searcher)
            for path in delete_paths:
                for gone in self._docs_of(path):
                    lengths = [a - b for a, b in zip(lengths, lengths_of(fields_of(gone)))]
                writer.delete_documents_by_term("path", path)
            for n, doc in enumerate(add):
                fields = prepared[n] if prepared else fields_of(doc)
                tdoc = tantivy.Document()
                for name in RAW_FIELDS:
                    tdoc.add_text(name, fields[name])
                for name in TEXT_FIELDS:
                    if fields[name]:
                        tdoc.add_text(name, fields[name])
                tdoc.add_bytes("doc", fields["doc"])
                tdoc.add_bytes("terms", stored_terms(fields))
                for name in FILTER_FIELDS:
                    for value in fields[name].split(SEPARATOR):
                        tdoc.add_text(name, value)
                writer.add_document(tdoc)
                lengths = [a + b for a, b in zip(lengths, lengths_of(fields))]
            opstamp = writer.commit()
        except BaseException:
            writer.rollback()
            writer.wait_merging_threads()
            raise
        try:
            keep_lengths(self.folder, opstamp, lengths)  # after the commit: a crash in between leaves it stale
            self.ix.reload()
            self._searcher = None
        except BaseException:
            writer.wait_merging_threads()  # nothing left running behind an error
            raise
        if later is not None:
            later.append(writer.wait_merging_threads)
        else:
            writer.wait_merging_threads()  # also frees the writer (and its lock)

    def _get_searcher(self):
        """A searcher on the newest commit: another process may have written since
        (tantivy's meta.json changes with every commit, so its stat tells)."""
        stamp = self._meta_stamp()
        if self._searcher is None or stamp != self._stamp:
            self.ix.reload()
            self._searcher, self._stamp, self._stats = self.ix.searcher(), stamp, None
        return self._searcher

    def _meta_stamp(self) -> tuple | None:
        try:
            st = os.stat(self._meta_path)
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _meta(self) -> dict:
        try:
            return json.loads((self.folder / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _docs_of(self, path: str) -> list[IndexDoc]:
        """The live documents of one file."""
        from tantivy import Query

        searcher = self._get_searcher()
        query, asked = Query.term_query(self.schema, "path", path), 256  # a file has a few documents, a page some dozens
        while len(hits := searcher.search(query, asked, count=False).hits) == asked:
            asked *= 4
        return [self._doc(searcher, address) for _score, address in hits]

    @staticmethod
    def _doc(searcher, address) -> IndexDoc:
        return _index_doc(searcher.doc(address))

    def _count_lengths(self, searcher) -> list[int]:
        """Each text field's total length, counted from every live document (an index
        whose ``lengths.json`` is missing or stale: written before it, or by a crash)."""
        from tantivy import Query

        total = [0] * len(TEXT_FIELDS)
        if searcher.num_docs:
            for _score, address in searcher.search(Query.all_query(), searcher.num_docs, count=False).hits:
                total = [a + b for a, b in zip(total, lengths_of(fields_of(self._doc(searcher, address))))]
        return total

    def live_stats(self) -> LiveStats:
        """The live statistics of the current searcher (once per commit)."""
        consistent = False
        for _ in range(5):  # meta.json as read must be the commit the searcher opened
            searcher = self._get_searcher()
            stats = self._stats
            if stats is not None and stats.searcher is searcher:
                return stats
            meta = self._meta()
            consistent = self._meta_stamp() == self._stamp
            if consistent:
                break
            self._searcher = None
        lengths = kept_lengths(self.folder, meta.get("opstamp")) if consistent else None
        if lengths is None:
            lengths = self._count_lengths(searcher)
            if consistent:
                keep_lengths(self.folder, meta.get("opstamp"), lengths)
        stats = LiveStats(searcher, self.schema, meta, lengths)
        if self._searcher is searcher:  # else a thread opened a newer commit meanwhile: never pin this one
            self._stats = stats
        return stats

    def search(self, terms: list[str], filters: Filters, limit: int, *, text: str = "",
               match: Match | None = None) -> list[tuple[IndexDoc, float]]:
        from tantivy import Occur, Query

        if not terms or limit <= 0 or (match is not None and match.impossible):
            return []
        stats = self.live_stats()
        searcher = stats.searcher
        if match is None:
            terms = rarest_terms(terms, lambda t: sum(stats.doc_frequency(name, t) for name, _b in FIELDS))
        s = self.schema
        clauses = clauses_of(terms)
        should = [(Occur.Should, Query.boost_query(Query.term_query(s, field, t), WEIGHTS[field]))
                  for field, t in clauses]
        parts = [(Occur.Must, Query.boolean_query(should))]

        def unscored(query) -> Query:
            return Query.const_score_query(query, 0.0)

        def any_of(field: str, values) -> Query:
            # a few values as term queries: tantivy's term set query costs ~0.35 ms a search
            # at 50,000 notes whatever it holds (the default exclusions made a search ×3-5)
            values = list(values)
            if len(values) > FEW_VALUES:  # the days of a date range: one set
                return unscored(Query.term_set_query(s, field, values))
            if len(values) == 1:
                return unscored(Query.term_query(s, field, values[0]))
            return unscored(Query.boolean_query([(Occur.Should, Query.term_query(s, field, v)) for v in values]))

        def held(term: str) -> Query:  # in the document's own text
            return Query.boolean_query([(Occur.Should, Query.term_query(s, name, term))
                                        for name in holding_fields(term)])

        if filters.agent is not None:
            parts.append((Occur.Must, any_of("agent", (filters.agent, NONE))))
        if filters.kinds:
            parts.append((Occur.Must, any_of("kind", filters.kinds)))
        else:
            parts.append((Occur.MustNot, any_of("kind", DEFAULT_EXCLUDED_KINDS)))
        if filters.statuses:
            parts.append((Occur.Must, any_of("status", filters.statuses)))
        elif not filters.include_inactive:
            parts.append((Occur.MustNot, any_of("status", INACTIVE)))
        if filters.types:
            parts.append((Occur.Must, any_of("type", filters.types)))
        if filters.author_kinds:
            parts.append((Occur.Must, any_of("author_kind", filters.author_kinds)))
        if filters.since or filters.until:
            days = [day for day, _n in searcher.terms_with_prefix("date", "")  # the distinct days: a few hundred
                    if day != NONE and not (filters.since and day < filters.since)
                    and not (filters.until and day > filters.until)]
            if not days:
                return []
            parts.append((Occur.Must, any_of("date", days)))
        for tag in filters.tags:
            parts.append((Occur.Must, any_of("tags", (fold(tag),))))
        for key, value in filters.where:
            parts.append((Occur.Must, any_of("meta", (meta_term(key, value),))))
        if match is not None:
            for alternatives in match.required:
                parts.append((Occur.Must, unscored(Query.boolean_query(
                    [(Occur.Should, Query.boolean_query([(Occur.Must, held(t)) for t in alt]))
                     for alt in alternatives if alt]))))
            for t in match.excluded:
                parts.append((Occur.MustNot, held(t)))
        query = Query.boolean_query(parts)
        bound = stats.bound(clauses)
        weighed = stats.weighed(clauses)
        scored: dict[tuple[int, int], tuple[float, Read]] = {}
        # tantivy makes room for every hit asked for before it looks (a billion: 32 GB, and
        # the process aborts): never more than the index holds, nor than limits allows
        held = searcher.num_docs
        limit = engine_hits(limit)
        # room past the last place for what ties with it: a second search for them costs
        # more than a first one that collects more (its hits are read only while they can
        # still reach the last place)
        asked = engine_hits(2 * limit + 10, held)
        while True:
            hits = searcher.search(query, asked, count=False).hits
            best: list[float] = []  # the best ``limit`` live scores read, the lowest first (a heap)
            complete = len(hits) < asked  # nothing past these
            for stale, address in hits:
                # hits come by tantivy's score: from one that cannot reach the last place on,
                # none can (its live score is at most ``bound`` times it), read or not
                if len(best) == limit and bound * stale < best[0]:
                    complete = True
                    break
                key = (address.segment_ord, address.doc)
                if key not in scored:
                    got = stats.read(address)
                    scored[key] = (stats.score_stored(weighed, got.terms), got)
                (heappush if len(best) < limit else heappushpop)(best, scored[key][0])
            if complete:
                break
            more = engine_hits(asked * 2, held)
            if more == asked:  # as many as an engine is ever asked for: ties past it go by score alone
                break
            asked = more
        cut = best[0] if best else 0.0
        # parsed only where they can be in
        found = Found.of([(got.doc, got.terms, score) for score, got in scored.values() if score >= cut])
        return found.narrowed(by_rank(found)[:limit])

    def terms_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """The term dictionary's own walk (tantivy's ``terms_with_prefix``): counts
        include deleted documents until a merge — they order the expansions only."""
        searcher = self._get_searcher()
        counts: dict[str, int] = {}
        for name in OWN_FIELDS:
            for term, n in searcher.terms_with_prefix(name, prefix):
                counts[term] = counts.get(term, 0) + n
        return sorted(counts, key=lambda t: (-counts[t], t))[:limit]

    def doc_frequency(self, term: str) -> int:
        """In how many live documents ``term`` occurs (most of any one of its fields)."""
        return self.doc_frequencies([term])[1][term]

    def doc_frequencies(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(live documents, :meth:`doc_frequency` of each of ``terms``), all of one commit:
        the newest is looked for once, not once per term."""
        stats = self.live_stats()
        return stats.docs, {t: max(stats.doc_frequency(name, t) for name in fields_for(t)) for t in terms}

    def doc_count(self) -> int:
        return self._get_searcher().num_docs

    def segment_count(self) -> int:
        return self._get_searcher().num_segments

    def optimize(self) -> bool:
        """Nothing to do: tantivy's merge policy merges segments in the background of
        each commit (the writer waits for those merges before it is released, or its
        caller does: :meth:`write`'s ``later``)."""
        return False

    def close(self) -> None:
        self._searcher = None
        self.ix = None



register(EngineSpec(
    name="tantivy", library="tantivy", auto_from_files=AUTO_TANTIVY_FILES,
    install_hint="pip install tantivy (or set index.engine: whoosh)",
    open=lambda gen_dir, create: TantivyEngine(gen_dir / "tantivy", create=create),  # in its own sub-folder
    prepared_only=True,
))
