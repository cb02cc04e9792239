"""Retrieve stage: a query → ranked, snippeted hits, through the index interface only.

``search`` returns the engine's BM25 order, re-ordered by a role's own documents, the day
a question names and the turn that answers rather than asks, with each hit's coverage
(the share of the query's terms it holds), its relevance (the rarity-weighted share of
what the query asks: ``is_relevant`` holds it to the cut) and a highlighted snippet.
``hybrid_search`` fuses it with the semantic channel (Reciprocal Rank Fusion). ``rank``
re-orders candidates for a brief by relevance, importance, recency and provenance
(user-stated beats agent-inferred beats third-party).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable
from functools import partial
from itertools import compress
from typing import NamedTuple

from . import ranker
from .analysis import (DATE_PREFIX, coverage, document_date_terms, highlight, is_cjk_char, normalize,
                       query_tokens, query_units, tokens)
from .answers import answer_kind, holds_answer
from .index import Filters, Found, Match
from .index.fields import analysed_texts, held_among, own_terms
from .models import Hit
from .query import MAX_EXPANSIONS, Query
from .ranker import answering_replies, answers_in_words, replies_first

OWN_BOOST = 1.5  # searching as a role: its own page and notes weigh more than shared memory
DATE_BOOST = 1.0  # a document of the day the question names (docs/recall.md: measured)
ASKING = 0.35  # a question-shaped entry: it asks, it does not answer
REPLY_CREDIT = 0.9  # the next turn after a question that matches scores at least this share of it
ANSWER_MISSING = 0.5  # relevance of a text without the number or name its question asks for (answers.py)
PROVENANCE = {"user": 1.0, "agent": 0.6, "unknown": 0.4, "third_party": 0.2}
WEIGHTS = {"relevance": 0.6, "importance": 0.15, "recency": 0.1, "provenance": 0.15}
HALF_LIFE_DAYS = 180


def search(store, query: str | Query, filters: Filters = Filters(), limit: int = 10,
           snippet_width: int = 160, similar: Similar | None = None) -> list[Hit]:
    """The best ``limit`` hits. ``query``: text, searched as plain words (a brief's task),
    or a :class:`~vaultmem.query.Query` (``query.parse``: phrases, exclusions, OR,
    prefixes: the engine requires and excludes, a phrase's order is checked on each hit).
    The engine ranks by the query's words; then scores are
    multiplied: a role's own documents by ``OWN_BOOST`` when searching as that role
    (``filters.agent``), so its own page entries come before shared memory that matches
    as well; a document of the day the question names by ``1 + DATE_BOOST`` (a date
    decides between matches but never brings in a document of that day that holds
    none of the question's words); a question-shaped entry by ``ASKING`` (the turn that
    asks is not the answer), while the turn after it in its session — the reply, when it
    is a candidate — scores at least ``REPLY_CREDIT`` of what the question scored. The
    engine is asked for enough candidates to re-order (under the rules, a pool of twice
    ``limit`` only when one of its first ``limit`` asks: otherwise nothing can pass them). Under ``search.ranking: learned``
    (``store.ranking``, the default) those multipliers give way to the learned ranker:
    the engine's first ``LEARNED_POOL`` candidates are ordered by the shipped model
    (:func:`learned_order`); with ``similar`` (:func:`fused_search` under a ranker trained
    on the semantic channel's similarity) the semantic channel's own best join them and
    every candidate's similarity is a feature (each hit's ``channel`` and ``similarity``
    say so). Each hit's ``relevance``
    (:func:`relevance`) is multiplied by ``ANSWER_MISSING`` when the question asks for a
    number or a name its text does not hold (``answers.py``): it is about the question
    without answering it."""
    if isinstance(query, Query) and query.syntax:
        parsed = query.expand(lambda prefix: store.terms_with_prefix(prefix, MAX_EXPANSIONS))
        text, terms = parsed.text, parsed.scoring_terms
        match = Match(required=parsed.required, excluded=parsed.excluded_terms)
    else:
        text = query.text if isinstance(query, Query) else query
        parsed, terms, match = None, query_tokens(text), None
    words = [t for t in terms if not t.startswith(DATE_PREFIX)]
    days = set(terms) - set(words)
    learned = ranker.model() if getattr(store, "ranking", "rules") == "learned" else None
    pool = max(limit * 3, 30) if days or filters.agent else limit * 2
    if learned is not None:
        pool = max(pool, LEARNED_POOL)
    checks = parsed is not None and parsed.checks_hits
    if learned is None and not days and not filters.agent and not checks:
        # The rules move a document only for a turn that asks: it falls, its reply rises to
        # REPLY_CREDIT of it. When none of the first ``limit`` asks, nothing past them can
        # pass them (a reply lifted by a question past them stays below it), and none of
        # them falls: those ``limit`` are the answer, in the rules' order, without the pool.
        found = store.search(words, filters, limit, text=text, match=match)
        if len(found) == limit and any(is_question(d.text) for d, _s in found):
            found = store.search(words, filters, pool, text=text, match=match)
    else:
        found = store.search(words or list(days), filters, pool, text=text, match=match)
    if checks:  # a phrase's terms in a row: checked on each hit
        asked = pool
        while True:
            kept = [(d, s) for d, s in found if parsed.holds(d.title, d.text, d.aliases)]
            if len(kept) >= pool or len(found) < asked:
                found = found.narrowed(kept[:pool]) if isinstance(found, Found) else kept[:pool]
                break
            asked *= 4
            found = store.search(words or list(days), filters, asked, text=text, match=match)
    units = unit_weights(store, parsed if parsed is not None else text) if found else []
    kind = answer_kind(text)
    sims, channels, extra = None, {}, []
    if similar is not None and learned is not None:
        learned = similar.model
        channels = dict.fromkeys((d.id for d, _s in found), "lexical")
        semantic, sims = similar.scores(list(channels))
        units = units or unit_weights(store, parsed if parsed is not None else text)
        for doc, sim in semantic:
            sims[doc.id] = sim
            if doc.id in channels:
                channels[doc.id] = "both"
            else:
                channels[doc.id] = "semantic"
                extra.append((doc, 0.0))
    if learned is not None:
        rescored = learned_order(learned, found, units, kind, text, terms, days, filters.agent, sims, extra)
    else:
        rescored = rule_order(found, words, days, filters.agent)
    out = []
    wanted = spaced_terms(asked_terms(terms, units))
    for doc, score, dates in rescored[:limit]:
        stored = found.terms_of(doc) if isinstance(found, Found) else None
        whole, have, share = judged(doc, dates, units, kind, text, stored, wanted)
        held = parsed.coverage(whole, dates) if parsed is not None else coverage(terms, whole, dates, have=have)
        out.append(Hit(doc=doc, score=score, coverage=held,
                       snippet=partial(highlight, doc.text, terms, width=snippet_width), relevance=share))
        if sims is not None:
            out[-1].channel, out[-1].similarity = channels[doc.id], sims.get(doc.id)
    return out


class Similar(NamedTuple):
    """What :func:`search` needs to order by a ranker trained on the semantic channel
    (:func:`ranker.similarity_model`): that ranker, and ``scores(ids)`` → (the channel's
    own best ``(doc, similarity)``, the similarity of each of ``ids`` that has a vector)."""

    model: object
    scores: Callable[[list[str]], tuple[list[tuple], dict[str, float]]]


# the learned ranker re-orders at least this many of the engine's candidates: on the tune
# split every answer the lexical engine finds at all is among its first 100, nearly all
# among the first 30 (docs/recall.md, "The learned ranker")
LEARNED_POOL = 60
FEATURE_CHARS = 2000  # what of a candidate's text its features read (a huge note costs no more)


def learned_order(learned, found, units, kind, question: str, terms: list[str], days: set,
                  agent: str | None, similarity: dict[str, float] | None = None, extra=()) -> list[list]:
    """The engine's candidates (``found``: (doc, score) best first) ordered by the learned
    model (:mod:`vaultmem.ranker`): ``[doc, score, date terms]`` best first, the score the
    model's, squashed to 0..1. ``similarity``: each candidate's similarity to the
    question, when the semantic channel scored them; ``extra``: the channel's own
    candidates the engine did not find. Each group's rows are made over its own pool (a
    row holds pool-wide features: the candidates' date range, who they name, their
    neighbours), so the engine's are exactly what the ranker was trained on."""
    cands, rows = candidate_rows(found, units, kind, question, terms, days, agent, similarity)
    if extra:
        more, more_rows = candidate_rows(list(extra), units, kind, question, terms, days, agent, similarity)
        cands, rows = cands + more, rows + more_rows
    scores = learned.score(rows)
    order = sorted(range(len(cands)), key=lambda i: (not answers_in_words(cands[i]), -scores[i], cands[i].doc.id))
    replies = answering_replies(cands, units)
    if replies:  # a reply put before the turn it answers takes that turn's score when it is higher
        order, before = replies_first(order, replies)
        for i in reversed(order):  # (the turn it comes before has its own score by then)
            if i in before:
                scores[i] = max(scores[i], scores[before[i]])
    return [[cands[i].doc, squash(scores[i]), list(cands[i].dates)] for i in order]


def squash(x: float) -> float:
    """A model's score (any real) as 0..1, in the same order: the logistic function."""
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


def learned_candidates(store, question: str, filters: Filters = Filters(), pool: int = LEARNED_POOL):
    """What the learned ranker orders for ``question`` (plain words): the engine's first
    ``pool`` candidates and their feature rows, as :func:`search` makes them — and the
    order the hand-set rules give them (their ids, best first). For training and
    measuring the ranker (``benchmarks/train_ranker.py``)."""
    terms = query_tokens(question)
    words = [t for t in terms if not t.startswith(DATE_PREFIX)]
    days = set(terms) - set(words)
    found = store.search(words or list(days), filters, pool, text=question)
    units = unit_weights(store, question) if found else []
    cands, rows = candidate_rows(found, units, answer_kind(question), question, terms, days, filters.agent)
    rules = [d.id for d, _s, _d in rule_order(found, words, days, filters.agent)]
    return cands, rows, rules


def candidate_rows(found, units, kind, question: str, terms: list[str], days: set, agent: str | None,
                   similarity: dict[str, float] | None = None):
    """The candidates (``found``: (doc, engine score) best first) as the learned ranker
    sees them: :class:`ranker.Candidate` objects and their feature rows
    (:func:`ranker.features`); what ``benchmarks/train_ranker.py`` trains on (with each
    one's ``similarity`` to the question, when given). Each
    candidate's text and heading (title and aliases) are analysed once, and every
    relevance feature is counted from which units each holds (as :func:`relevance`
    counts them)."""
    weights = [w for _g, w in units]
    whole_weight = sum(weights) or 1.0
    sets = unit_sets(units)
    word_units = [bool(grams) and not grams[0].startswith(DATE_PREFIX) for grams, _w in units]  # a prefix may expand to none
    cjk_terms = [t for t in terms if is_cjk_char(t)]
    plain_terms = [t for t in terms if not is_cjk_char(t)]
    # every check below asks only whether a part holds one of the query's terms: of each
    # part's terms, only those are looked for (the same answers as all of them)
    want = asked_terms(terms, units)
    spaced = spaced_terms(want)
    cands = []
    for n, (doc, score) in enumerate(found, start=1):
        dates = set(document_date_terms(doc.title, doc.text, doc.days)) if days else set()
        text = doc.text[:FEATURE_CHARS]
        heading = f"{doc.title}\n{' '.join(doc.aliases)}"
        # the terms the index holds, where they are what analysing the text again would give
        held = found.terms_of(doc) if isinstance(found, Found) else None
        stored = analysed_texts(held) if held is not None else {}
        text_terms = (held_among(stored["body"], spaced) if "body" in stored and len(doc.text) <= FEATURE_CHARS
                      else want.intersection(tokens(text)))
        text_terms |= dates
        head_terms = (held_among(stored["title"], spaced) | held_among(stored["aliases"], spaced) if "title" in stored
                      else want.intersection(tokens(heading)))
        in_text, in_head = _holds(sets, text_terms, text), _holds(sets, head_terms, heading)
        own = [a or b for a, b in zip(in_text, in_head)]
        near = doc.near[:FEATURE_CHARS]
        if near and not all(own):
            near_terms = (held_among(stored["near"], spaced) if "near" in stored and len(doc.near) <= FEATURE_CHARS
                          else want.intersection(tokens(near)))
            in_near = _holds(sets, near_terms, "")
        else:
            in_near = [False] * len(units)
        rel_own = _share(weights, own, whole_weight)
        have = text_terms | head_terms
        held = sum(1 for t in plain_terms if t in have) + sum(
            1 for t in cjk_terms if t in have or t in text or t in heading)
        cands.append(ranker.Candidate(
            doc=doc, score=score, rank=n, dates=tuple(sorted(dates)), rel_own=rel_own,
            rel_text=_share(weights, in_text, whole_weight),
            rel_all=rel_own + NEAR_CREDIT * _share(weights, [b and not a for a, b in zip(own, in_near)], whole_weight),
            holds_word=any(compress(own, word_units)), word_in_text=any(compress(in_text, word_units)),
            coverage=held / len(terms) if terms else 0.0, title_share=_share(weights, in_head, whole_weight),
            asks=is_question(text), holds_answer=holds_answer(kind, text, question),
            similarity=similarity.get(doc.id) if similarity is not None else None))
    return cands, ranker.features(cands, question, set(days), kind is not None, agent)


def asked_terms(terms: list[str], units) -> frozenset[str]:
    """Every term a hit is checked for: the query's and its units' (:func:`unit_weights`)."""
    return frozenset(terms).union(*(grams for grams, _w in units))


def spaced_terms(terms) -> list[tuple[str, str]]:
    """Each term with itself between two spaces: what :func:`.index.fields.held_among` looks for."""
    return [(t, f" {t} ") for t in terms]


def _share(weights: list[float], held: list[bool], whole: float) -> float:
    return sum(compress(weights, held)) / whole


class Units(list):
    """A query's units and their weights, ``(terms, weight)`` each (:func:`unit_weights`),
    keeping :func:`unit_sets` of them once made (every hit of a search is judged on them)."""

    sets: list | None = None


def unit_sets(units) -> list[tuple[frozenset[str], tuple[str, ...]]]:
    """Each of the query's ``units`` as the loops over candidates test it: its terms as a
    set, and those of them that are CJK characters (held anywhere in a text)."""
    if isinstance(units, Units) and units.sets is not None:
        return units.sets
    sets = [(frozenset(grams), tuple(t for t in grams if is_cjk_char(t))) for grams, _w in units]
    if isinstance(units, Units):
        units.sets = sets
    return sets


def _holds(sets, have: set[str], text: str) -> list[bool]:
    """Which of the query's units (``sets``: :func:`unit_sets`) a text holds: one of a
    unit's terms among ``have`` (its terms), or — a CJK character — the character
    anywhere in ``text``."""
    flat = None
    out = []
    for grams, cjk in sets:
        if not grams.isdisjoint(have):
            out.append(True)
        elif text and cjk:
            flat = normalize(text) if flat is None else flat
            out.append(any(t in flat for t in cjk))
        else:
            out.append(False)
    return out


def rule_order(found, words: list[str], days: set, agent: str | None) -> list[list]:
    """The engine's candidates ordered by the hand-set rules: ``[doc, score, date terms]``
    best first (see :func:`search`)."""
    rescored = []
    for doc, score in found:
        dates = document_date_terms(doc.title, doc.text, doc.days) if days else ()
        if agent and doc.agent == agent:
            score *= OWN_BOOST
        if words and days and days & set(dates):
            score *= 1 + DATE_BOOST
        rescored.append([doc, score, dates])
    asking = [is_question(doc.text) for doc, _s, _d in rescored]
    # the reply to a question that matches (the next turn of its session) is what answers it
    turns = {(d.session, d.turn): n for n, (d, _s, _d) in enumerate(rescored) if d.session and d.turn is not None}
    for n, (doc, score, _d) in enumerate(rescored):
        reply = turns.get((doc.session, doc.turn + 1)) if asking[n] and doc.session and doc.turn is not None else None
        if reply is not None and not asking[reply]:
            rescored[reply][1] = max(rescored[reply][1], score * REPLY_CREDIT)
    for n, hit in enumerate(rescored):
        if asking[n]:
            hit[1] *= ASKING
    rescored.sort(key=lambda x: (-x[1], x[0].id))
    return rescored


def judged(doc, dates, units, kind, question: str, stored: list[str] | None = None,
           wanted: list[tuple[str, str]] | None = None) -> tuple[str, set[str], float]:
    """What a hit is judged on: its whole text (title, text, aliases), its terms with its
    date terms, and its relevance to the question (:func:`relevance` over ``units``, by
    ``ANSWER_MISSING`` when the question asks for a number or name — ``kind`` — its text
    does not hold). ``stored``: its text fields' terms as the index holds them
    (:attr:`Found.analysed`), read instead of analysing the whole text again; with
    ``wanted`` (:func:`spaced_terms` of every term asked about: the units' and the
    query's), only those are looked for among them, and the terms returned are those of
    them it holds (with its date terms)."""
    whole = f"{doc.title}\n{doc.text}\n{' '.join(doc.aliases)}"
    parts = analysed_texts(stored) if stored is not None and wanted is not None else {}
    near_have = None
    if "title" in parts:  # the three parts' terms are the whole text's, the neighbours' their text's
        have = {*held_among(parts["body"], wanted), *held_among(parts["title"], wanted),
                *held_among(parts["aliases"], wanted), *dates}
        near_have = held_among(parts["near"], wanted)
    else:
        own = own_terms(stored) if stored is not None else None
        have = own.union(dates) if own is not None else set(tokens(whole)) | set(dates)
    share = relevance(units, whole, have, doc.near, near_have)
    if not holds_answer(kind, doc.text, question):
        share *= ANSWER_MISSING
    return whole, have, share


_QUESTION_END = ("?", "？", "吗", "呢", "么")


def is_question(text: str) -> bool:
    """Whether an entry reads as a question rather than a statement: its last sentence
    ends with a question mark (or 吗/呢 …) and it holds no statement of several words
    before it — "Is it the pottery workshop?" is, "Yes, every Saturday. Why?" is not."""
    flat = text.strip().rstrip("!！~～ .。…")
    if not flat.endswith(_QUESTION_END):
        return False
    sentences = [x for x in re.split(r"(?<=[.!?。！？])\s*", flat) if x.strip()]
    statements = [x for x in sentences if not x.rstrip().endswith(_QUESTION_END)]
    return sum(len(x.split()) if x.isascii() else len(x) // 3 for x in statements) < 6


NEAR_CREDIT = 0.5  # a term found only in the neighbours' text counts for this much of its weight
CJK_CHAR_WEIGHT = 0.5  # a CJK character is half a unit: a two-character word weighs as one word


def unit_weights(store, query: str | Query) -> Units:
    """Each unit of the query (``analysis.query_units``) with its weight: the inverse
    document frequency in the live index, ``log(1 + N / (df + 1))``, of its rarest term
    that any document holds (``df`` 0 when none does) — a rare word says more about what
    the question is after than a common one, and a word the vault lacks says most."""
    # a query with syntax: its plain words' units, then each phrase, OR group and prefix as one
    # (an excluded word is no part of what it asks for)
    units = query_units(query) if isinstance(query, str) else query_units(query.words) + query.syntax_units()
    total, df = store.term_weights(sorted({t for _u, grams in units for t in grams}))
    out = Units()
    for unit, grams in units:
        present = [df[t] for t in grams if df.get(t)]
        w = math.log(1 + (total or 1) / ((min(present) if present else 0) + 1))
        out.append((grams, w * CJK_CHAR_WEIGHT if "#" in unit else w))
    return out


def relevance(units: list[tuple[tuple[str, ...], float]], text: str, have: set[str], near: str,
              near_have: set[str] | None = None) -> float:
    """How much of the query a document answers (0..1): the weight of the query's units
    it holds (:func:`unit_weights`: a unit is held when the document holds one of its
    terms; ``have``: the terms of its ``text`` and its date terms), a unit found only in
    its neighbours' text at ``NEAR_CREDIT`` (``near_have``: the terms of ``near``, when
    known), over the weight of all of them."""
    whole = sum(w for _g, w in units)
    if not whole:
        return 0.0
    flat = None
    got = 0.0
    for (grams, cjk), (_g, w) in zip(unit_sets(units), units):
        if not grams.isdisjoint(have):
            got += w
            continue
        if cjk:
            flat = normalize(text) if flat is None else flat
            if any(t in flat for t in cjk):
                got += w
                continue
        if near:
            near_have = set(tokens(near)) if near_have is None else near_have
            if not grams.isdisjoint(near_have):
                got += NEAR_CREDIT * w
    return got / whole


def has_terms(query: str) -> bool:
    """Whether the query has a term the index holds: common words ("the", "of", "what")
    are not indexed, so a query of them alone matches nothing."""
    return bool(query_tokens(query))


# -- hybrid search: the semantic channel fused with the lexical ranking (docs/recall.md) ----------
# Under search.semantic auto, the semantic channel opens when no lexical hit holds the
# model's gate share of the query's terms (embedders.calibration: 0.3 for wordllama, 0.4
# for e5); each channel gives its FUSE_DEPTH best and Reciprocal Rank Fusion (k = RRF_K)
# orders their union. A semantic candidate less similar than MIN_SIMILARITY to the query
# is dropped: on the dev set, wordllama's best match for a no-answer query scores
# 0.19-0.5, the first answer 0.18-0.9, unrelated notes 0 and below. A hit is relevant on
# meaning alone at the model's own similarity (its calibration's relevant_at).
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


def semantic_hit(doc, similarity: float, query: str, units, snippet_width: int = 160) -> Hit:
    """A hit the semantic channel alone found: coverage, relevance (``units``: the
    query's :func:`unit_weights`) and snippet as :func:`search` gives any hit."""
    terms = query_tokens(query)
    dates = document_date_terms(doc.title, doc.text, doc.days) if any(t.startswith(DATE_PREFIX) for t in terms) else ()
    text, have, share = judged(doc, dates, units, answer_kind(query), query)
    return Hit(doc=doc, score=similarity, coverage=coverage(terms, text, dates, have=have),
               snippet=partial(highlight, doc.text, terms, width=snippet_width), channel="semantic",
               similarity=similarity, relevance=share)


def _gate_opens(store, query: str, lexical: list[Hit]) -> bool:
    """Under ``auto``: whether the semantic channel opens — the query says something in
    words (two terms at least that are neither dates nor numbers or codes: a lookup of one
    word, a port, a token is answered by its letters, and a paraphrase of it finds only
    look-alikes), no lexical hit holds the model's gate share of its terms
    (``embedders.calibration``), and the model reads its language (an English-only model
    never opens for a query with Chinese in it)."""
    from .index.embedders import calibration

    gate = calibration(store.model_spec).gate
    return reads_words(store, query) and not any(h.coverage >= gate for h in lexical)


def reads_words(store, query: str) -> bool:
    """Whether the semantic channel has something to weigh in ``query``: two terms at
    least that are neither dates nor numbers or codes, in a language the model reads."""
    from .analysis import cjk_chars
    from .index.embedders import english_only

    words = [t for t in query_tokens(query) if not t.startswith(DATE_PREFIX) and not any(c.isdigit() for c in t)]
    return len(words) >= 2 and not (english_only(store.model_spec) and cjk_chars(query))


def hybrid_search(store, query, filters: Filters = Filters(), limit: int = 10, snippet_width: int = 160):
    """:func:`fused_search`, its first ``store.rerank_depth`` hits re-ordered by the
    cross-encoder ``store.reranker`` names when one is set (:func:`rerank`)."""
    spec = getattr(store, "reranker", None)
    if not spec:
        return fused_search(store, query, filters, limit, snippet_width)
    from .models import Hits

    hits = fused_search(store, query, filters, max(limit, store.rerank_depth), snippet_width)
    text = query if isinstance(query, str) else query.text
    ordered, why = rerank(spec, text, list(hits[: store.rerank_depth]))
    return Hits((ordered + list(hits[store.rerank_depth:]))[:limit],
                warnings=list(hits.warnings) + ([why] if why else []))


def rerank(spec: str, question: str, hits: list[Hit]) -> tuple[list[Hit], str | None]:
    """``hits`` ordered by the cross-encoder ``spec`` (:mod:`vaultmem.index.rerankers`):
    each reads the question with the hit's title and text; a hit's ``rerank`` is its
    logit and its ``score`` that logit squashed to 0..1. Unchanged, with why, when the
    model cannot be used."""
    from .index import rerankers

    if len(hits) < 2:
        return hits, None
    try:
        model = rerankers.load(spec)
    except rerankers.ModelUnavailable as exc:
        return hits, f"{exc.message}: these hits are not re-ranked"
    texts = [f"{h.doc.title}\n{h.doc.text}"[:RERANK_CHARS] if h.doc.title else h.doc.text[:RERANK_CHARS] for h in hits]
    try:
        scores = model.score(question, texts)
    except Exception as exc:  # noqa: BLE001 — a model that fails on this input: the hits as they were
        return hits, (f"re-ranking is off for this search: the cross-encoder at {spec} failed "
                      f"({type(exc).__name__}: {' '.join(str(exc).split())[:160]}): these hits are not re-ranked")
    for hit, logit in zip(hits, scores):
        hit.rerank = logit
        hit.score = squash(logit)
    return sorted(hits, key=lambda h: (-h.rerank, h.doc.id)), None


RERANK_CHARS = 2000  # what of a hit a cross-encoder reads (it cuts a pair at 512 tokens anyway)


def fused_search(store, query, filters: Filters = Filters(), limit: int = 10, snippet_width: int = 160):
    """:func:`search`, with the semantic channel as the store's ``semantic_mode`` says
    (``query``: the text, or a parsed query whose ``text`` is what was asked; one that
    uses syntax — phrases, exclusions, OR, prefixes — is lexical only, since the semantic
    channel cannot keep those constraints): ``off`` is :func:`search` alone; ``auto``
    fuses when the query is words the lexical hits cover poorly and the model reads
    (:func:`_gate_opens`); ``always`` fuses every query; ``only`` ranks by similarity
    alone (for measurement). A fused hit's ``score`` is its RRF score, ``channel`` says which rankings held it
    ("lexical", "semantic", "both") and ``similarity`` is its cosine similarity to the
    query, ``semantic_rank`` its place in the semantic ranking and ``close`` whether that
    similarity reaches the model's ``relevant_at`` (``embedders.calibration``); a hit only
    the semantic channel found gets the relevance of its words, as any lexical hit.
    When a ranker trained on the model's similarity ships (:func:`ranker.similarity_model`:
    e5's) and the ranking is learned, it takes the place of the fusion and of the gate
    (under ``auto``, for every query in words: :func:`reads_words`): both channels'
    candidates, each scored with its similarity among its features
    (:func:`_similarity_ranked`). On the tune split that order beat the gated fusion
    (docs/recall.md, "A ranker that weighs e5's similarity"); a one-word lookup or a code
    stays lexical. Returns :class:`~vaultmem.models.Hits`; when the model
    cannot be used the hits are lexical and ``warnings`` says why. A search that does not
    fuse imports no numpy and loads no model."""
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
    learned_sim = None
    if mode in ("auto", "always") and getattr(store, "ranking", "rules") == "learned":
        learned_sim = ranker.similarity_model(store.model_spec)
    if learned_sim is not None and (mode == "always" or reads_words(store, text)):
        return _similarity_ranked(store, query, text, filters, limit, snippet_width, learned_sim, warnings)
    if mode == "only":
        lexical = []
    else:
        lexical = search(store, query, filters, FUSE_DEPTH if mode == "always" else limit, snippet_width)
        if mode == "off" or (mode == "auto" and not _gate_opens(store, text, lexical)):
            return Hits(lexical[:limit], warnings=warnings)
        if mode == "auto":
            lexical = search(store, query, filters, FUSE_DEPTH, snippet_width)
    from .index.embedders import ModelUnavailable, calibration

    try:
        semantic, similarity = store.semantic_search(text, filters, FUSE_DEPTH if mode != "only" else limit,
                                                     also=[h.doc.id for h in lexical])
    except ModelUnavailable as exc:
        return Hits(lexical[:limit], warnings=warnings + [f"{exc.message}: these are lexical hits only"])
    semantic = [(d, sim) for d, sim in semantic if sim >= MIN_SIMILARITY]
    close_at = calibration(store.model_spec).relevant_at
    units = unit_weights(store, text) if semantic else []
    if mode == "only":
        out = [semantic_hit(d, sim, text, units, snippet_width) for d, sim in semantic[:limit]]
    else:
        similarity.update((d.id, sim) for d, sim in semantic)
        by_id = {h.doc.id: h for h in lexical}
        out = []
        for doc, score, channel in fuse([(h.doc, h.score) for h in lexical], semantic)[:limit]:
            hit = by_id.get(doc.id) or semantic_hit(doc, score, text, units, snippet_width)
            hit.score, hit.channel, hit.similarity = score, channel, similarity.get(doc.id)
            out.append(hit)
    places = {d.id: n for n, (d, _sim) in enumerate(semantic, start=1)}
    for hit in out:
        hit.close = close_at is not None and hit.similarity is not None and hit.similarity >= close_at
        hit.semantic_rank = places.get(hit.doc.id)
    return Hits(out, warnings=warnings)


def _similarity_ranked(store, query, text: str, filters: Filters, limit: int, snippet_width: int, learned,
                       warnings: list[str]):
    """:func:`search` ordered by ``learned``, a ranker trained with the semantic channel's
    similarity among its features: the lexical candidates and the channel's own best
    (at least ``MIN_SIMILARITY``), each scored with its similarity to the query. Lexical
    hits alone, with why, when the model cannot be used."""
    from .index.embedders import ModelUnavailable, calibration
    from .models import Hits

    places: dict[str, int] = {}

    def scores(ids: list[str]) -> tuple[list[tuple], dict[str, float]]:
        semantic, sims = store.semantic_search(text, filters, FUSE_DEPTH, also=ids)
        semantic = [(d, sim) for d, sim in semantic if sim >= MIN_SIMILARITY]
        places.update((d.id, n) for n, (d, _sim) in enumerate(semantic, start=1))
        return semantic, sims

    try:
        out = search(store, query, filters, limit, snippet_width, similar=Similar(learned, scores))
    except ModelUnavailable as exc:
        return Hits(search(store, query, filters, limit, snippet_width),
                    warnings=warnings + [f"{exc.message}: these are lexical hits only"])
    close_at = calibration(store.model_spec).relevant_at
    for hit in out:
        hit.close = close_at is not None and hit.similarity is not None and hit.similarity >= close_at
        hit.semantic_rank = places.get(hit.doc.id)
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


def is_relevant(hit: Hit, query: str | Query, min_relevance: float) -> bool:
    """Whether a hit answers enough of the query to be worth injecting (or to count as
    a hit in an evaluation): its ``relevance`` (the rarity-weighted share of the query's
    terms it holds) at least ``min_relevance``. A hit without one (made elsewhere) is
    judged by its plain coverage, counted on at most six terms (units: a phrase, an OR
    group, a prefix one each). A hit the semantic channel found is relevant too when its
    meaning is close to the query's (``close``: its similarity at least the model's
    ``relevant_at``); one that only it found is otherwise judged by its relevance like
    any other. A question that asks for a number or a name
    (``answers.answer_kind``) is answered only by a hit whose text holds one: search
    scores the relevance of one without it by ``ANSWER_MISSING``, and a close semantic
    match without it is judged by its relevance like any other."""
    if hit.close and hit.channel != "lexical":
        # the semantic channel found it, its meaning is close to the query's — and it holds
        # the number or name the question asks for, if it asks for one (answers.py)
        asked = query.text if isinstance(query, Query) else query
        if holds_answer(answer_kind(asked), hit.doc.text, asked):
            return True
    if hit.relevance is not None:
        return hit.relevance >= min_relevance - 1e-9
    if hit.channel == "semantic":
        return False
    terms = query.units if isinstance(query, Query) else query_tokens(query)
    if not terms:
        return False
    need = max(1, math.ceil(min_relevance * min(len(terms), 6) - 1e-9))
    return round(hit.coverage * len(terms)) >= need
