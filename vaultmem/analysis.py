"""Text analysis shared by indexing, querying, highlighting and the token budget.

Pure and engine-independent: every index engine is fed the same tokens, so recall does
not depend on the engine. Chinese, Japanese and Korean runs become overlapping
character bigrams (a run of one character stays a unigram), so a two-character word is
found inside a longer sentence without loading a dictionary (see docs/recall.md for the
measurement against jieba). Latin words are case-folded, English stopwords dropped and
the rest stemmed with the Snowball English stemmer, so ``reviews`` finds ``review``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

ANALYZER_VERSION = "bigram-snowball-2"  # stored in the index; a change forces a rebuild

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002ffff"
)
# One pattern holds the CJK class: compiling a class of ~40,000 code points costs ~3 ms
# each time it appears in a pattern, paid by every process. Splitting on CJK runs, then
# finding words in what lies between, gives exactly the tokens of the one-pass pattern
# ``([CJK]+)|([^\W_CJK]+)`` (a property test holds it).
_CJK_RUN = re.compile(rf"([{_CJK}]+)")
_WORD = re.compile(r"[^\W_]+")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves""".split()
)


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    if word.isdigit() or len(word) < 3 or not word.isascii():
        return word
    return _stemmer().stemWord(word)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _cjk_grams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def spans(text: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is a CJK run) of each CJK run and each other word of ``text``, in
    order: what :func:`tokens` makes its terms from, with positions (for highlighting)."""
    pos = 0
    for run in _CJK_RUN.finditer(text):
        for word in _WORD.finditer(text, pos, run.start()):
            yield word.start(), word.end(), False
        yield run.start(), run.end(), True
        pos = run.end()
    for word in _WORD.finditer(text, pos):
        yield word.start(), word.end(), False


def tokens(text: str) -> list[str]:
    """The index terms of ``text``, in order (duplicates kept, for term frequency)."""
    out: list[str] = []
    for i, part in enumerate(_CJK_RUN.split(normalize(text))):  # other text, CJK run, other text, …
        if i % 2:
            out.extend(_cjk_grams(part))
        elif part:
            for word in _WORD.findall(part):
                if word not in STOPWORDS:
                    out.append(stem(word))
    return out


def query_tokens(text: str) -> list[str]:
    """Distinct terms of a query, in order of first appearance."""
    return list(dict.fromkeys(tokens(text)))


def coverage(query: list[str], text: str) -> float:
    """The share of the query's distinct terms that occur in ``text`` (0..1). A
    one-character CJK term counts when that character occurs anywhere in the text."""
    if not query:
        return 0.0
    have = set(tokens(text))
    flat = normalize(text)
    return sum(1 for t in query if t in have or (is_cjk_char(t) and t in flat)) / len(query)


def is_cjk_char(term: str) -> bool:
    return len(term) == 1 and _CJK_RUN.match(term) is not None


def cjk_chars(text: str) -> list[str]:
    """Every CJK character of ``text`` (for the unigram field that answers one-character
    queries; normal terms are bigrams)."""
    return list("".join(_CJK_RUN.findall(normalize(text))))


# -- token budget ---------------------------------------------------------------------------

CHARS_PER_TOKEN = 3  # for non-CJK text; conservative next to the usual ~4


@lru_cache(maxsize=16384)  # a warm process briefs the same MEMORY.md lines again and again
def token_counts(text: str) -> tuple[int, int]:
    """(characters counted one token each or more, ASCII characters) — the inputs of
    :func:`tokens_for`. Every non-ASCII character counts: CJK as one token, anything else
    (emoji, CJK punctuation, Cyrillic, accented letters, symbols) as two."""
    if text.isascii():
        return 0, len(text)
    ascii_chars = len(text.encode("ascii", "ignore"))
    cjk = sum(map(len, _CJK_RUN.findall(text)))
    other = len(text) - ascii_chars - cjk
    return cjk + 2 * other, ascii_chars


def tokens_for(weighted: int, ascii_chars: int) -> int:
    return weighted + math.ceil(ascii_chars / CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """The documented token estimate: one token per three ASCII characters (spaces and
    punctuation included), rounded up; one token per CJK character; two tokens per other
    non-ASCII character (emoji, CJK punctuation, Cyrillic, accented letters …). Model
    tokenizers use about four ASCII characters and about one CJK character per token, so
    the estimate errs high: a brief within budget by this count is within budget for the
    model."""
    return tokens_for(*token_counts(text))


# -- highlighting --------------------------------------------------------------------------


def densest_window(starts: list[int], width: int) -> int:
    """The first of the ascending ``starts`` whose window ``[start, start + width)``
    holds the most of them. Linear: the window's end only ever moves forward (a note
    with 100,000 matches costs 100,000 steps, not 10¹⁰)."""
    best, best_count, hi = starts[0], 0, 0
    for lo, s in enumerate(starts):
        hi = max(hi, lo)
        while hi < len(starts) and starts[hi] < s + width:
            hi += 1
        if hi - lo > best_count:
            best, best_count = s, hi - lo
    return best


def highlight(text: str, query: list[str], width: int = 160, mark: tuple[str, str] = ("**", "**")) -> str:
    """A window of ``text`` around the densest cluster of query terms, with matched words
    (or CJK bigrams) wrapped in ``mark``. Works on the original text (case and width
    kept), independent of the engine."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    wanted = set(query)
    found: list[tuple[int, int]] = []
    for start, end, is_cjk in spans(flat):
        piece = flat[start:end]
        if is_cjk:
            for i in range(len(piece) - 1 if len(piece) > 1 else 1):
                gram = normalize(piece[i : i + 2] if len(piece) > 1 else piece)
                if gram in wanted:
                    found.append((start + i, start + i + len(gram)))
        elif stem(normalize(piece)) in wanted:
            found.append((start, end))
    merged: list[list[int]] = []
    for s, e in sorted(found):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    start = 0
    if len(flat) > width and merged:
        best = densest_window([s for s, _e in merged], width)
        start = max(0, min(best - width // 4, len(flat) - width))
    end = min(len(flat), start + width)
    out, pos = [], start
    for s, e in merged:
        if e <= start or s >= end:
            continue
        s, e = max(s, start), min(e, end)
        out.append(flat[pos:s])
        out.append(mark[0] + flat[s:e] + mark[1])
        pos = e
    out.append(flat[pos:end])
    return ("…" if start > 0 else "") + "".join(out) + ("…" if end < len(flat) else "")
