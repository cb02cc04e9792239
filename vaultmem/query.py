"""Query syntax: what a search's text asks for beyond its plain words. Pure.

``parse(text)`` reads:

- plain words — ranked, any of them may match (exactly as a query without syntax);
- ``"exact phrase"`` (or “…”) — every hit holds the phrase's analysed terms one after
  the other in its title, its text or one of its aliases (stems and CJK bigrams: ``"reviewed
  the PR"`` matches "review the pr", ``"端口固定"`` the bigrams 端口 口固 固定 in a row);
- ``-word`` / ``-"a phrase"`` / ``-prefix*`` — no hit holds it (a dash inside a word,
  ``billing-api`` or ``2023-05-04``, is not an exclusion; nor is one before a digit);
- ``a OR b`` (upper case, between two words, phrases or prefixes; ``a OR b OR c`` is one
  group) — every hit holds at least one of the alternatives; the group counts as one
  term in coverage and in the relevance cut, covered by any alternative;
- ``prefix*`` — the index terms beginning with the prefix (normalised, not stemmed), at
  most :data:`MAX_EXPANSIONS` of them, most frequent first, any of which may match
  (``端*``: the bigrams that begin with 端), and the prefix's own stem (``redis*`` finds
  "redis", which the index holds as ``redi``).

A query of exclusions only, an unclosed quote, or a phrase or exclusion of common words
only is a :class:`~vaultmem.errors.BadInput` (``field="query"``). A query without any of
this syntax is its plain words, searched exactly as before (:attr:`Query.syntax` False).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .analysis import is_cjk_char, normalize, query_tokens, stem, tokens
from .errors import BadInput

MAX_EXPANSIONS = 50  # index terms a prefix stands for, at most
QUOTES = {'"': '"', "\u201c": "\u201d"}  # opening → closing
_SPACE = re.compile(r"\s+")
_LAST_WORD = re.compile(r"[^\W_]+$")


class Part(NamedTuple):
    """One word, phrase or prefix of a query, as written (``text``) and analysed.

    It and :class:`Query` are named tuples, not frozen dataclasses: every command that
    searches makes both classes, and Python 3.11 took ~1.7 ms to make the two dataclasses."""

    text: str
    terms: tuple[str, ...] = ()  # analysed terms (a prefix: its expansions, once expanded)
    kind: str = "word"  # "word", "phrase" (its terms consecutive) or "prefix"
    prefix: str | None = None  # a prefix's normalised text

    @property
    def consecutive(self) -> bool:
        """Whether its terms must stand in a row in the document (a phrase, or a word that
        analyses to several terms — ``billing-api``, ``端口固定`` — in a group or exclusion)."""
        return self.kind != "prefix" and len(self.terms) > 1

    def alternatives(self) -> tuple[tuple[str, ...], ...]:
        """What holding it means: all the terms of one of these (a prefix: any expansion)."""
        if self.kind == "prefix":
            return tuple((t,) for t in self.terms)
        return (self.terms,) if self.terms else ()

    def to_dict(self) -> dict:
        out = {"text": self.text, "kind": self.kind, "terms": list(self.terms)}
        if self.prefix is not None:
            out["prefix"] = self.prefix
        return out


class Query(NamedTuple):
    """A parsed query. ``terms``: the plain words' analysed terms (what a query without
    syntax is made of); ``phrases``: required phrases; ``excluded``: words, phrases and
    prefixes no hit may hold; ``groups``: OR groups, each a tuple of alternatives;
    ``prefixes``: plain prefixes (ranked like plain words). ``syntax``: whether any of it
    was used."""

    text: str
    terms: tuple[str, ...] = ()
    words: str = ""  # the plain words as written (a query without syntax: all of it)
    phrases: tuple[Part, ...] = ()
    excluded: tuple[Part, ...] = ()
    groups: tuple[tuple[Part, ...], ...] = ()
    prefixes: tuple[Part, ...] = ()
    syntax: bool = False
    expanded: bool = False  # its prefixes' terms filled in (:meth:`expand`)

    # -- what the engines and the relevance cut need ----------------------------------
    def parts(self):
        yield from self.phrases
        for group in self.groups:
            yield from group
        yield from self.prefixes
        yield from self.excluded

    def prefix_parts(self) -> list[Part]:
        return [p for p in self.parts() if p.kind == "prefix"]

    def expand(self, lookup) -> Query:
        """The query with each prefix's terms: ``lookup(prefix)``, the index terms that
        begin with it (at most :data:`MAX_EXPANSIONS`, most frequent first)."""
        if self.expanded or not self.prefix_parts():
            return self._replace(expanded=True)
        memo: dict[str, tuple[str, ...]] = {}

        def fill(p: Part) -> Part:
            if p.kind != "prefix":
                return p
            if p.prefix not in memo:
                # the word itself as the index holds it: redis* finds "redis", indexed as its stem "redi"
                own = stem(p.prefix)
                found = ([own] if own != p.prefix else []) + list(lookup(p.prefix))
                memo[p.prefix] = tuple(dict.fromkeys(found))[:MAX_EXPANSIONS]
            return p._replace(terms=memo[p.prefix])

        return self._replace(phrases=self.phrases, excluded=tuple(map(fill, self.excluded)),
                       groups=tuple(tuple(map(fill, g)) for g in self.groups),
                       prefixes=tuple(map(fill, self.prefixes)), expanded=True)

    @property
    def scoring_terms(self) -> list[str]:
        """Every term that adds to a hit's score: the plain words', the phrases', the
        alternatives' and the prefixes' (never an excluded one), in order, once."""
        out = list(self.terms)
        for p in (*self.phrases, *(p for g in self.groups for p in g), *self.prefixes):
            out.extend(p.terms)
        return list(dict.fromkeys(out))

    @property
    def units(self) -> list[tuple[tuple[str, ...], ...]]:
        """What coverage and the relevance cut count, one unit a plain term, phrase, OR
        group or prefix; each unit the alternatives that cover it (all terms of one). A
        query without syntax: one unit a term, as before."""
        out: list[tuple[tuple[str, ...], ...]] = [((t,),) for t in self.terms]
        out += [p.alternatives() for p in self.phrases]
        out += [tuple(a for p in g for a in p.alternatives()) for g in self.groups]
        out += [p.alternatives() for p in self.prefixes]
        return out

    def syntax_units(self) -> list[tuple[str, tuple[str, ...]]]:
        """The phrases, OR groups and prefixes as (label, terms) units, a unit held when a
        document holds any of its terms (for a relevance measure that counts units that
        way: every hit holds each phrase and one alternative of each group already)."""
        out = [(p.text.replace("#", ""), p.terms) for p in self.phrases]  # "#" marks CJK units elsewhere
        out += [(" OR ".join(p.text.replace("#", "") for p in g), tuple(t for p in g for t in p.terms)) for g in self.groups]
        out += [(p.text.replace("#", ""), p.terms) for p in self.prefixes]
        return out

    @property
    def required(self) -> tuple[tuple[tuple[str, ...], ...], ...]:
        """What every hit must hold, for the engine: per phrase and OR group, the
        alternatives (all terms of one of them, anywhere in the document's own text)."""
        return tuple(u for u in (*(p.alternatives() for p in self.phrases),
                                 *(tuple(a for p in g for a in p.alternatives()) for g in self.groups)))

    @property
    def excluded_terms(self) -> tuple[str, ...]:
        """Terms no hit may hold, for the engine (excluded words of one term, every
        expansion of an excluded prefix); excluded phrases are checked on the hits."""
        out = []
        for p in self.excluded:
            if p.kind == "prefix" or len(p.terms) == 1:
                out.extend(p.terms)
        return tuple(dict.fromkeys(out))

    @property
    def checks_hits(self) -> bool:
        """Whether hits must be checked one by one (a phrase's terms in a row)."""
        return any(p.consecutive for p in self.parts())

    def holds(self, title: str, text: str, aliases) -> bool:
        """Whether a document (its title, text, aliases) has every phrase in a row, one
        alternative of each group, and none of the excluded phrases in a row."""
        runs = [tokens(title), tokens(text), *(tokens(a) for a in aliases)]
        flat = normalize(f"{title}\n{text}\n{' '.join(aliases)}")
        have: set[str] | None = None

        def holds(p: Part) -> bool:
            nonlocal have
            if p.consecutive:
                return any(_in_a_row(p.terms, run) for run in runs)
            if have is None:
                have = {t for run in runs for t in run}
            return any(all(t in have or (is_cjk_char(t) and t in flat) for t in alt) for alt in p.alternatives())

        if not all(holds(p) for p in self.phrases if p.consecutive):
            return False
        if not all(any(holds(p) for p in g) for g in self.groups):
            return False
        return not any(holds(p) for p in self.excluded if p.consecutive)

    def coverage(self, text: str, dates=()) -> float:
        """The share of :attr:`units` the text covers (as :func:`analysis.coverage` counts
        terms: a CJK character anywhere, a date term among ``dates``)."""
        units = self.units
        if not units:
            return 0.0
        have = set(tokens(text)) | set(dates)
        flat = normalize(text)

        def held(t: str) -> bool:
            return t in have or (is_cjk_char(t) and t in flat)

        return sum(1 for u in units if any(alt and all(map(held, alt)) for alt in u)) / len(units)

    def to_dict(self) -> dict:
        return {"text": self.text, "syntax": self.syntax, "words": self.words, "terms": list(self.terms),
                "phrases": [p.to_dict() for p in self.phrases],
                "excluded": [p.to_dict() for p in self.excluded],
                "groups": [[p.to_dict() for p in g] for g in self.groups],
                "prefixes": [p.to_dict() for p in self.prefixes]}


def _in_a_row(terms: tuple[str, ...], run: list[str]) -> bool:
    n = len(terms)
    first = terms[0]
    return any(run[i] == first and tuple(run[i:i + n]) == terms for i in range(len(run) - n + 1))


def plain(text: str) -> Query:
    """``text`` as plain words, no syntax read (a brief's task): its analysed terms."""
    return Query(text=text, terms=tuple(query_tokens(text)), words=text)


def _bad(message: str, hint: str) -> BadInput:
    return BadInput(message, field="query", hint=hint)


def _lex(text: str) -> list[tuple[str, str, bool]]:
    """(what, its text, excluded) of each piece: ``what`` is "word", "phrase" or "or"."""
    out: list[tuple[str, str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        neg = False
        at_start = i == 0 or text[i - 1].isspace()
        if c == "-" and at_start and i + 1 < n and (text[i + 1] in QUOTES or _is_letter(text[i + 1])):
            neg, i = True, i + 1
            c = text[i]
        if c in QUOTES:
            close = text.find(QUOTES[c], i + 1)
            if close < 0:
                raise _bad(f"the quote at character {i + 1} is not closed ({text[i:i + 30]!r})",
                           'close the phrase with a second " (or search for the words without quotes)')
            out.append(("phrase", text[i + 1:close], neg))
            i = close + 1
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] not in QUOTES:
            j += 1
        word = text[i:j]
        out.append(("or" if word == "OR" and not neg else "word", word, neg))
        i = j
    return out


def _is_letter(c: str) -> bool:
    return c.isalpha() or is_cjk_char(c)


def _part(kind: str, raw: str) -> Part:
    if kind == "phrase":
        return Part(text=f'"{raw}"', terms=tuple(tokens(raw)), kind="phrase")
    if raw.endswith("*") and raw.rstrip("*"):
        m = _LAST_WORD.search(normalize(raw.rstrip("*")))
        if m and not (len(m.group(0)) > 1 and all(map(is_cjk_char, m.group(0)))):
            return Part(text=raw, kind="prefix", prefix=m.group(0))
        # 端口* : the terms beginning with it are its bigrams (a CJK run is indexed by pairs)
    return Part(text=raw, terms=tuple(tokens(raw)), kind="word")


def parse(text: str) -> Query:
    """The query ``text`` as plain words and syntax (see the module doc)."""
    pieces = _lex(text)
    syntax = any(kind == "phrase" or neg for kind, _raw, neg in pieces) or any(
        kind == "word" and raw.endswith("*") and raw.rstrip("*") for kind, raw, _neg in pieces)
    # OR joins the operands on each side; an OR with nothing on one side is a plain word
    items: list = []  # Part, ("excluded", Part), or a list of Parts (a group); a Part is a tuple too:
    # the marker is told by its type
    k = 0
    while k < len(pieces):
        kind, raw, neg = pieces[k]
        if kind == "or":
            prev = items[-1] if items else None
            nxt = pieces[k + 1] if k + 1 < len(pieces) else None
            if prev is not None and nxt is not None and nxt[0] != "or":
                if type(prev) is tuple or nxt[2]:  # ("excluded", Part)
                    raise _bad("an exclusion cannot be an alternative of OR",
                               "write the alternatives without '-', and the exclusion apart: a OR b -c")
                syntax = True
                alt = _part(nxt[0], nxt[1])
                items[-1] = (prev if isinstance(prev, list) else [prev]) + [alt]
                k += 2
                continue
            items.append(Part(text=raw, terms=tuple(tokens(raw))))  # "OR" alone: the word or
            k += 1
            continue
        part = _part(kind, raw)
        items.append(("excluded", part) if neg else part)
        k += 1
    if not syntax:
        return plain(text)
    words, phrases, excluded, groups, prefixes = [], [], [], [], []
    for item in items:
        if isinstance(item, list):
            groups.append(tuple(item))
        elif type(item) is tuple:  # ("excluded", Part)
            excluded.append(item[1])
        elif item.kind == "phrase":
            phrases.append(item)
        elif item.kind == "prefix":
            prefixes.append(item)
            words.append(normalize(item.text.rstrip("*"))[: -len(item.prefix)])  # billing-ap*: billing
        else:
            words.append(item.text)
    for p in (*phrases, *excluded, *(p for g in groups for p in g)):
        if p.kind != "prefix" and not p.terms:
            what = "the exclusion" if p in excluded else "the phrase" if p.kind == "phrase" else "the alternative"
            raise _bad(f"{what} {p.text} has only common words, which are not indexed",
                       "add a word that says what to look for, or leave it out")
    query = Query(text=text, terms=tuple(query_tokens(" ".join(words))), words=" ".join(words), phrases=tuple(phrases),
                  excluded=tuple(excluded), groups=tuple(groups), prefixes=tuple(prefixes), syntax=True)
    if excluded and not (query.terms or phrases or groups or prefixes):
        raise _bad("the query only leaves things out: " + " ".join(f"-{p.text}" for p in excluded),
                   "add what to look for: redis -cluster")
    return query
