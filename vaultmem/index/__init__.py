"""Index stage: the search engine behind a small interface, and keeping it in sync.

Retrieval and the brief talk to the index store only; the store talks to engines through
:class:`SearchEngine` and finds them by name in :mod:`.registry`. The engines receive terms
already produced by :mod:`vaultmem.analysis`, so their own analysis never decides what
matches.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from ..models import IndexDoc

DEFAULT_EXCLUDED_KINDS = ("inbox", "archive", "journal")  # the journal: read on purpose only
INACTIVE = ("archived", "superseded")
MAX_TERMS = 12  # a long task text is searched by its rarest terms


def rarest_terms(terms: list[str], doc_frequency) -> list[str]:
    """At most ``MAX_TERMS`` of the terms: the rarest that occur at all (a brief's task
    text can run to dozens of terms; the common ones add time, not precision)."""
    if len(terms) <= MAX_TERMS:
        return terms
    df = {t: doc_frequency(t) for t in terms}
    return sorted((t for t in terms if df[t]), key=lambda t: df[t])[:MAX_TERMS] or terms[:MAX_TERMS]


class Found(list):
    """An engine's hits, (doc, score) best first — a list — with the terms of each hit's
    text fields as the index holds them (:data:`.fields.TEXT_FIELDS`, each field's terms
    joined by spaces), for an engine that read them anyway to score. Ranking reads a
    candidate's terms from there (:meth:`terms_of`) instead of analysing its text again."""

    def __init__(self, hits=(), analysed: dict[int, list[str]] | None = None) -> None:
        super().__init__(hits)
        self.analysed = analysed if analysed is not None else {}  # id() of a hit's doc → its terms

    @classmethod
    def of(cls, hits: list[tuple[IndexDoc, list[str], float]]) -> "Found":
        """Hits given as (doc, its stored terms, score)."""
        return cls([(doc, score) for doc, _terms, score in hits], {id(doc): terms for doc, terms, _s in hits})

    def terms_of(self, doc: IndexDoc) -> list[str] | None:
        """The stored terms of ``doc`` — this very object, one of the hits: two documents
        with one id (a page entry copied with its ``^id``) are told apart — or None."""
        return self.analysed.get(id(doc))

    def narrowed(self, hits: list[tuple[IndexDoc, float]]) -> "Found":
        """Some of these hits (the same document objects), with their stored terms."""
        return Found(hits, {id(doc): self.analysed[id(doc)] for doc, _s in hits if id(doc) in self.analysed})


def by_rank(scored: list[tuple[IndexDoc, float]]) -> list[tuple[IndexDoc, float]]:
    """Best first; equal scores by document id, so that ties never follow the order in
    which documents happened to be added."""
    return sorted(scored, key=lambda hit: (-hit[1], hit[0].id))


def complete_at(scores: list[float], limit: int, asked: int) -> bool:
    """Whether ``scores`` — an engine's best ``asked`` hits, best first — hold every
    document that can be among the best ``limit``: true when the engine had no more, or
    when the lowest score fetched is below the ``limit``-th (an engine's top ``asked``
    holds every document scoring above its last, but of those tying with it only some)."""
    if len(scores) < asked or len(scores) < limit or limit <= 0:
        return True
    return scores[-1] < sorted(scores, reverse=True)[limit - 1]


class Match(NamedTuple):
    """What a query's syntax asks of every hit beyond its ranked terms (built by
    :mod:`vaultmem.query`): ``required``, per phrase or OR group, its alternatives — a
    hit holds every term of at least one, in its own title, text or aliases
    (:func:`.fields.holding_fields`); ``excluded``, terms no hit holds there. Engines
    enforce both in the index, so a selective one still fills ``limit``; the order of a
    phrase's terms is checked on the hits (the index keeps no positions). With a match,
    every scoring term is searched (a syntax query is short, and a prefix's expansions
    must all match)."""

    required: tuple[tuple[tuple[str, ...], ...], ...] = ()
    excluded: tuple[str, ...] = ()

    @property
    def impossible(self) -> bool:
        """Whether no document can match (a requirement without any alternative: a
        prefix that begins no index term)."""
        return any(not any(alt) for alt in self.required)


class Filters(NamedTuple):
    """Which documents a query may return (a named tuple, not a frozen dataclass: every
    command that searches makes this class, and Python 3.11 takes ~1.5 ms to make that one).

    ``agent``: scope to this agent — its own docs plus those owned by no agent (global
    and shared memory); other agents' page entries and notes are never returned.
    ``kinds``/``types``: keep only these. ``kinds`` defaults to everything but the inbox
    (quarantine) and the archive; inactive (archived, superseded) notes are left out
    unless ``include_inactive``. The rest narrow further, all of them together:
    ``tags`` (every one of them), ``statuses``, ``author_kinds``, ``since``/``until``
    (ISO dates, inclusive, on the document's date), ``where`` ((key, value) pairs a
    note's scalar frontmatter must hold, compared as case-folded text)."""

    agent: str | None = None
    kinds: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    include_inactive: bool = False
    tags: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    author_kinds: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    where: tuple[tuple[str, str], ...] = ()

    def admits(self, doc: IndexDoc) -> bool:
        """Whether ``doc`` may be returned — the same decision every engine makes, for
        callers that hold documents themselves (the semantic channel)."""
        if self.agent is not None and doc.agent not in (None, self.agent):
            return False
        if self.kinds:
            if doc.kind not in self.kinds:
                return False
        elif doc.kind in DEFAULT_EXCLUDED_KINDS:
            return False
        status = doc.status or "active"
        if self.statuses:
            if status not in self.statuses:
                return False
        elif not self.include_inactive and status in INACTIVE:
            return False
        if self.types and doc.type not in self.types:
            return False
        if self.tags and not set(map(fold, self.tags)) <= set(map(fold, doc.tags)):
            return False
        if self.author_kinds and doc.author_kind not in self.author_kinds:
            return False
        if (self.since or self.until) and not doc.date:
            return False
        if self.since and doc.date[:10] < self.since:
            return False
        if self.until and doc.date[:10] > self.until:
            return False
        meta = {fold(k): fold(v) for k, v in doc.meta.items()}
        return all(meta.get(fold(k)) == fold(v) for k, v in self.where)

    @property
    def narrowing(self) -> bool:
        """Whether any of the filters beyond scope, kind and type is set."""
        return bool(self.tags or self.statuses or self.author_kinds or self.since or self.until or self.where)


def fold(text: str) -> str:
    """How filter values are compared: NFKC, case-folded, outer spaces dropped."""
    text = str(text)
    if text.isascii():  # most keys and values (a build folds a dozen a note): NFKC leaves ASCII be
        return text.lower().strip()
    return unicodedata.normalize("NFKC", text).casefold().strip()


@dataclass
class SyncReport:
    """What a refresh of the index found and did."""

    new: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    problems: list[dict] = field(default_factory=list)
    docs: int = 0
    rebuilt: bool = False
    skipped: str | None = None  # why nothing was done (e.g. another process is indexing)
    seconds: float = 0.0
    engine: str | None = None  # the engine of the generation that was updated or built
    semantic: dict | None = None  # the semantic channel after the refresh (``IndexStore.semantic_status``)

    @property
    def changed(self) -> bool:
        return bool(self.new or self.modified or self.deleted)

    def merged(self, other: SyncReport) -> SyncReport:
        """This report with ``other``'s folded in (the journal's index into memory's: their
        files differ)."""
        for name in ("new", "modified", "deleted", "moved", "problems"):
            getattr(self, name).extend(getattr(other, name))
        self.unchanged += other.unchanged
        self.docs += other.docs
        return self

    def to_dict(self) -> dict:
        return {"new": self.new, "modified": self.modified, "deleted": self.deleted,
                "moved": [list(m) for m in self.moved], "unchanged": self.unchanged, "docs": self.docs,
                "problems": self.problems, "rebuilt": self.rebuilt, "skipped": self.skipped, "engine": self.engine,
                "seconds": round(self.seconds, 3), **({"semantic": self.semantic} if self.semantic else {})}


class SearchEngine(Protocol):
    """What an index engine provides — every call the index store makes on one.

    An engine is opened on one generation folder through :mod:`.registry` (where each
    engine module registers itself by name). Documents arrive with their fields already
    analysed (:func:`.fields.fields_of`: the terms of :func:`vaultmem.analysis.tokens`);
    a search receives both the query's analysed terms and its raw text, so an engine that
    reads text its own way (embeddings, say) needs nothing more. Ranking must depend only
    on the documents live in the index — never on deleted documents an engine still
    keeps, nor on the order documents were added — so that an index kept up to date ranks
    exactly as one built afresh; equal scores are ordered by document id."""

    name: str  # the name the engine is registered under

    def write(self, add: list[IndexDoc], delete_paths: list[str], prepared: list[dict] | None = None,
              later: list | None = None) -> None:
        """Delete every doc of ``delete_paths``, then add ``add``: one atomic commit.
        ``prepared``: ``fields.fields_of`` of each doc of ``add``, if already computed.
        ``later``: where an engine that merges segments after its commit may append what
        finishes that work (and frees its writer) instead of waiting for it — the caller
        calls it, and keeps others from writing until it returns; None: wait."""

    def search(self, terms: list[str], filters: Filters, limit: int, *, text: str,
               match: Match | None = None) -> list[tuple[IndexDoc, float]]:
        """The best ``limit`` docs for the query (any term may match), best first, equal
        scores by id, each admitted by ``filters`` (every one of them, in the index).
        ``terms``: the query's analysed terms (``analysis.query_tokens``); ``text``: the
        query as it was asked; ``match``: what its syntax requires and excludes."""

    def terms_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """At most ``limit`` index terms of the documents' own text (title, body,
        aliases) that begin with ``prefix``, those in most documents first (then by
        term)."""

    def doc_frequency(self, term: str) -> int:
        """In how many live documents the analysed ``term`` occurs (the most of any one
        field it is searched in): what a relevance judgement weighs terms by."""

    def doc_count(self) -> int:
        """How many documents are live in the index. (An engine may also offer
        ``doc_frequencies(terms) -> (doc_count, {term: doc_frequency})``, all of one
        commit: a query's terms are then weighed in one call.)"""

    def segment_count(self) -> int:
        """How many segments the index is split into (the store merges when idle beyond
        a few); 1 for an engine without segments."""

    def optimize(self) -> bool:
        """Merge the small segments updates left (call when idle; must stay cheap);
        False when the engine merges on its own and did nothing."""

    def close(self) -> None:
        """Let go of the index's files (the engine is not used afterwards)."""
