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
from .index import Filters, Match
from .models import Hit
from .query import MAX_EXPANSIONS, Query

OWN_BOOST = 1.5  # searching as a role: its own page and notes weigh more than shared memory
PROVENANCE = {"user": 1.0, "agent": 0.6, "unknown": 0.4, "third_party": 0.2}
WEIGHTS = {"relevance": 0.6, "importance": 0.15, "recency": 0.1, "provenance": 0.15}
HALF_LIFE_DAYS = 180


def search(store, query: str | Query, filters: Filters = Filters(), limit: int = 10,
           snippet_width: int = 160) -> list[Hit]:
    """The best ``limit`` hits. ``query``: text, searched as plain words (a brief's task),
    or a :class:`~vaultmem.query.Query` (``query.parse``: phrases, exclusions, OR,
    prefixes). Searching as a role (``filters.agent``), the role's own documents' scores
    are multiplied by ``OWN_BOOST`` before the cut, so its own page entries come before
    shared memory that matches as well."""
    if isinstance(query, Query) and query.syntax:
        parsed = query.expand(lambda prefix: store.terms_with_prefix(prefix, MAX_EXPANSIONS))
        text, terms = parsed.text, parsed.scoring_terms
        match = Match(required=parsed.required, excluded=parsed.excluded_terms)
    else:
        text = query.text if isinstance(query, Query) else query
        parsed, terms, match = None, query_tokens(text), None
    want = limit * 2 if filters.agent else limit
    found = store.search(terms, filters, want, text=text, match=match)
    if parsed is not None and parsed.checks_hits:  # a phrase's terms in a row: checked on each hit
        asked = want
        while True:
            kept = [(d, s) for d, s in found if parsed.holds(d.title, d.text, d.aliases)]
            if len(kept) >= want or len(found) < asked:
                found = kept[:want]
                break
            asked *= 4
            found = store.search(terms, filters, asked, text=text, match=match)
    if filters.agent:
        found = sorted(((d, s * OWN_BOOST if d.agent == filters.agent else s) for d, s in found),
                       key=lambda x: x[1], reverse=True)[:limit]
    out = []
    for doc, score in found:
        text = f"{doc.title}\n{doc.text}\n{' '.join(doc.aliases)}"
        dates = document_date_terms(doc.title, doc.text, doc.days) if any(t.startswith(DATE_PREFIX) for t in terms) else ()
        held = parsed.coverage(text, dates) if parsed is not None else coverage(terms, text, dates)
        out.append(Hit(doc=doc, score=score, coverage=held,
                       snippet=highlight(doc.text, terms, width=snippet_width)))
    return out


def has_terms(query: str) -> bool:
    """Whether the query has a term the index holds: common words ("the", "of", "what")
    are not indexed, so a query of them alone matches nothing."""
    return bool(query_tokens(query))


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


def is_relevant(hit: Hit, query: str | Query, min_coverage: float) -> bool:
    """Whether a hit matches enough of the query to be worth injecting (or to count as a
    hit in an evaluation): at least ``min_coverage`` of the query's terms, counted on at
    most six terms, so a long task text needs a couple of matching terms, not a third of
    all its words."""
    terms = query.units if isinstance(query, Query) else query_tokens(query)  # syntax: a phrase, a group… one each
    if not terms:
        return False
    need = max(1, math.ceil(min_coverage * min(len(terms), 6) - 1e-9))
    return round(hit.coverage * len(terms)) >= need
