"""Retrieve stage: a query → ranked, snippeted hits, through the index interface only.

``search`` returns the engine's BM25 order with each hit's coverage (the share of the
query's terms it holds) and a highlighted snippet. ``rank`` re-orders candidates for a
brief by relevance, importance, recency and provenance (user-stated beats agent-inferred
beats third-party).
"""

from __future__ import annotations

import datetime as _dt
import math

from .analysis import DATE_PREFIX, coverage, document_date_terms, highlight, query_tokens
from .index import Filters
from .models import Hit

OWN_BOOST = 1.5  # searching as a role: its own page and notes weigh more than shared memory
PROVENANCE = {"user": 1.0, "agent": 0.6, "unknown": 0.4, "third_party": 0.2}
WEIGHTS = {"relevance": 0.6, "importance": 0.15, "recency": 0.1, "provenance": 0.15}
HALF_LIFE_DAYS = 180


def search(store, query: str, filters: Filters = Filters(), limit: int = 10, snippet_width: int = 160) -> list[Hit]:
    """The best ``limit`` hits. Searching as a role (``filters.agent``), the role's own
    documents' scores are multiplied by ``OWN_BOOST`` before the cut, so its own page
    entries come before shared memory that matches as well."""
    terms = query_tokens(query)
    found = store.search(terms, filters, limit * 2 if filters.agent else limit, text=query)
    if filters.agent:
        found = sorted(((d, s * OWN_BOOST if d.agent == filters.agent else s) for d, s in found),
                       key=lambda x: x[1], reverse=True)[:limit]
    out = []
    for doc, score in found:
        text = f"{doc.title}\n{doc.text}\n{' '.join(doc.aliases)}"
        dates = document_date_terms(doc.title, doc.text, doc.days) if any(t.startswith(DATE_PREFIX) for t in terms) else ()
        out.append(Hit(doc=doc, score=score, coverage=coverage(terms, text, dates),
                       snippet=highlight(doc.text, terms, width=snippet_width)))
    return out


def has_terms(query: str) -> bool:
    """Whether the query has a term the index holds: common words ("the", "of", "what")
    are not indexed, so a query of them alone matches nothing."""
    return bool(query_tokens(query))


# -- hybrid search: the semantic channel fused with the lexical ranking (docs/recall.md) ----------
# Under search.semantic auto, the semantic channel opens when no lexical hit holds
# GATE_COVERAGE of the query's terms; each channel gives its FUSE_DEPTH best and
# Reciprocal Rank Fusion (k = RRF_K) orders their union. A semantic candidate less similar
# than MIN_SIMILARITY to the query is dropped: on the dev set, wordllama's best match for a
# no-answer query scores 0.19-0.5, the first answer 0.18-0.9, unrelated notes 0 and below.
GATE_COVERAGE = 0.3
FUSE_DEPTH = 50
RRF_K = 60
MIN_SIMILARITY = 0.2


def fuse(lexical: list[tuple], semantic: list[tuple], k: int = RRF_K) -> list[tuple]:
    """Reciprocal Rank Fusion of two rankings (``(doc, score)`` best first): each
    document scores the sum of ``1 / (k + rank)`` over the rankings that hold it (rank 1
    first). Returns ``(doc, fused score, channel)`` best first, equal scores by id."""
    fused: dict[str, list] = {}
    for channel, ranking in (("lexical", lexical), ("semantic", semantic)):
        for rank_, (doc, _score) in enumerate(ranking, start=1):
            got = fused.get(doc.id)
            if got is None:
                fused[doc.id] = [doc, 1.0 / (k + rank_), channel]
            else:
                got[1] += 1.0 / (k + rank_)
                got[2] = "both"
    return sorted((tuple(v) for v in fused.values()), key=lambda x: (-x[1], x[0].id))


def semantic_hit(doc, similarity: float, query: str, snippet_width: int = 160) -> Hit:
    """A hit the semantic channel alone found: coverage and snippet as for any hit."""
    terms = query_tokens(query)
    text = f"{doc.title}\n{doc.text}\n{' '.join(doc.aliases)}"
    dates = document_date_terms(doc.title, doc.text, doc.days) if any(t.startswith(DATE_PREFIX) for t in terms) else ()
    return Hit(doc=doc, score=similarity, coverage=coverage(terms, text, dates),
               snippet=highlight(doc.text, terms, width=snippet_width), channel="semantic", similarity=similarity)


def _gate_opens(store, query: str, lexical: list[Hit]) -> bool:
    """Under ``auto``: whether the semantic channel opens — the query says something in
    words (two terms at least that are neither dates nor numbers or codes: a lookup of one
    word, a port, a token is answered by its letters, and a paraphrase of it finds only
    look-alikes), no lexical hit holds ``GATE_COVERAGE`` of its terms, and the model reads
    its language (an English-only model never opens for a query with Chinese in it)."""
    from .analysis import cjk_chars
    from .index.embedders import english_only

    words = [t for t in query_tokens(query) if not t.startswith(DATE_PREFIX) and not any(c.isdigit() for c in t)]
    if len(words) < 2 or any(h.coverage >= GATE_COVERAGE for h in lexical):
        return False
    return not (english_only(store.model_spec) and cjk_chars(query))


def hybrid_search(store, query, filters: Filters = Filters(), limit: int = 10, snippet_width: int = 160):
    """:func:`search`, with the semantic channel as the store's ``semantic_mode`` says
    (``query``: the text, or a parsed query whose ``text`` is what was asked; one that
    uses syntax — phrases, exclusions, OR, prefixes — is lexical only, since the semantic
    channel cannot keep those constraints): ``off`` is :func:`search` alone; ``auto``
    fuses when the query is words the lexical hits cover poorly and the model reads
    (:func:`_gate_opens`); ``always`` fuses every query; ``only`` ranks by similarity
    alone (for measurement). A fused hit's ``score`` is its RRF score, ``channel`` says which rankings held it
    ("lexical", "semantic", "both") and ``similarity`` is its cosine similarity to the
    query. Returns :class:`~vaultmem.models.Hits`; when the model cannot be used the hits
    are lexical and ``warnings`` says why. A search that does not fuse imports no numpy
    and loads no model."""
    from .index.embedders import ModelUnavailable
    from .models import Hits

    mode = getattr(store, "semantic_mode", "off")
    if not isinstance(query, str) and getattr(query, "syntax", False):
        mode = "off"  # phrases, exclusions, OR, prefixes: constraints only the lexical engines keep
    text = query if isinstance(query, str) else query.text  # a parsed query: what was asked
    warnings: list[str] = []
    why = store.semantic_off_because() if mode != "off" else None
    if why is not None:
        if mode in ("always", "only") or store.model_chosen:  # the default model, not installed: as before
            warnings.append(f"semantic search is off ({why}): these are lexical hits only")
        mode = "off"
    if mode == "only":
        lexical = []
    else:
        lexical = search(store, query, filters, FUSE_DEPTH if mode == "always" else limit, snippet_width)
        if mode == "off" or (mode == "auto" and not _gate_opens(store, text, lexical)):
            return Hits(lexical[:limit], warnings=warnings)
        if mode == "auto":
            lexical = search(store, query, filters, FUSE_DEPTH, snippet_width)
    try:
        semantic, similarity = store.semantic_search(text, filters, FUSE_DEPTH if mode != "only" else limit,
                                                     also=[h.doc.id for h in lexical])
    except ModelUnavailable as exc:
        return Hits(lexical[:limit], warnings=warnings + [f"{exc.message}: these are lexical hits only"])
    semantic = [(d, sim) for d, sim in semantic if sim >= MIN_SIMILARITY]
    if mode == "only":
        return Hits([semantic_hit(d, sim, text, snippet_width) for d, sim in semantic[:limit]], warnings=warnings)
    similarity.update((d.id, sim) for d, sim in semantic)
    by_id = {h.doc.id: h for h in lexical}
    out = []
    for doc, score, channel in fuse([(h.doc, h.score) for h in lexical], semantic)[:limit]:
        hit = by_id.get(doc.id) or semantic_hit(doc, score, text, snippet_width)
        hit.score, hit.channel, hit.similarity = score, channel, similarity.get(doc.id)
        out.append(hit)
    return Hits(out, warnings=warnings)


def _recency(date: str | None, today: _dt.date) -> float:
    if not date:
        return 0.5
    try:
        day = _dt.date.fromisoformat(date[:10])
    except ValueError:
        return 0.5
    age = max(0, (today - day).days)
    return 0.5 ** (age / HALF_LIFE_DAYS)


def rank(hits: list[Hit], today: _dt.date | None = None) -> list[Hit]:
    """Order hits by a blend of relevance (score relative to the best hit), importance,
    recency and provenance; sets each hit's ``rank_score``."""
    if not hits:
        return []
    today = today or _dt.date.today()
    top = max(h.score for h in hits) or 1.0
    for h in hits:
        d = h.doc
        h.rank_score = (
            WEIGHTS["relevance"] * (h.score / top)
            + WEIGHTS["importance"] * d.importance
            + WEIGHTS["recency"] * _recency(d.date, today)
            + WEIGHTS["provenance"] * PROVENANCE.get(d.author_kind, 0.4)
        )
    return sorted(hits, key=lambda h: h.rank_score, reverse=True)


def is_relevant(hit: Hit, query: str, min_coverage: float) -> bool:
    """Whether a hit matches enough of the query to be worth injecting (or to count as a
    hit in an evaluation): at least ``min_coverage`` of the query's terms, counted on at
    most six terms, so a long task text needs a couple of matching terms, not a third of
    all its words."""
    terms = query_tokens(query)
    if not terms:
        return False
    need = max(1, math.ceil(min_coverage * min(len(terms), 6) - 1e-9))
    return round(hit.coverage * len(terms)) >= need
