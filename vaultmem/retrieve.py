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
DATE_BOOST = 1.0  # a document of the day the question names (docs/recall.md: measured)
ASKING = 0.6  # a question-shaped entry: it asks, it does not answer
PROVENANCE = {"user": 1.0, "agent": 0.6, "unknown": 0.4, "third_party": 0.2}
WEIGHTS = {"relevance": 0.6, "importance": 0.15, "recency": 0.1, "provenance": 0.15}
HALF_LIFE_DAYS = 180


def search(store, query: str, filters: Filters = Filters(), limit: int = 10, snippet_width: int = 160) -> list[Hit]:
    """The best ``limit`` hits. The engine ranks by the query's words; then scores are
    multiplied: a role's own documents by ``OWN_BOOST`` when searching as that role
    (``filters.agent``), so its own page entries come before shared memory that matches
    as well; a document of the day the question names by ``1 + DATE_BOOST`` (a date
    decides between matches but never brings in a document of that day that holds
    none of the question's words); a question-shaped entry by ``ASKING`` (the turn that
    asks is not the answer). The engine is asked for enough candidates to re-order."""
    terms = query_tokens(query)
    words = [t for t in terms if not t.startswith(DATE_PREFIX)]
    days = set(terms) - set(words)
    pool = max(limit * 3, 30)
    found = store.search(words or list(days), filters, pool, text=query)
    rescored = []
    for doc, score in found:
        dates = document_date_terms(doc.title, doc.text, doc.days) if days else ()
        if filters.agent and doc.agent == filters.agent:
            score *= OWN_BOOST
        if words and days and days & set(dates):
            score *= 1 + DATE_BOOST
        if is_question(doc.text):
            score *= ASKING
        rescored.append((doc, score, dates))
    rescored.sort(key=lambda x: (-x[1], x[0].id))
    out = []
    for doc, score, dates in rescored[:limit]:
        text = f"{doc.title}\n{doc.text}\n{' '.join(doc.aliases)}"
        out.append(Hit(doc=doc, score=score, coverage=coverage(terms, text, dates),
                       snippet=highlight(doc.text, terms, width=snippet_width)))
    return out


_QUESTION_END = ("?", "？", "吗", "呢", "么")


def is_question(text: str) -> bool:
    """Whether an entry reads as a question rather than a statement: its last sentence
    ends with a question mark (or 吗/呢 …) and it holds no statement of several words
    before it — "Is it the pottery workshop?" is, "Yes, every Saturday. Why?" is not."""
    flat = text.strip().rstrip("!！~～ .。…")
    if not flat.endswith(_QUESTION_END):
        return False
    import re

    sentences = [x for x in re.split(r"(?<=[.!?。！？])\s*", flat) if x.strip()]
    statements = [x for x in sentences if not x.rstrip().endswith(_QUESTION_END)]
    return sum(len(x.split()) if x.isascii() else len(x) // 3 for x in statements) < 6


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
