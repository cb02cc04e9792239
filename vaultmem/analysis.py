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
from functools import lru_cache

ANALYZER_VERSION = "bigram-snowball-2"  # stored in the index; a change forces a rebuild

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002ffff"
)
_TOKEN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)", re.UNICODE)
_CJK_CHAR = re.compile(rf"[{_CJK}]")

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


def tokens(text: str) -> list[str]:
    """The index terms of ``text``, in order (duplicates kept, for term frequency)."""
    out: list[str] = []
    for m in _TOKEN.finditer(normalize(text)):
        cjk, word = m.groups()
        if cjk:
            out.extend(_cjk_grams(cjk))
        elif word not in STOPWORDS:
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
    return len(term) == 1 and bool(_CJK_CHAR.match(term))


def cjk_chars(text: str) -> list[str]:
    """Every CJK character of ``text`` (for the unigram field that answers one-character
    queries; normal terms are bigrams)."""
    return _CJK_CHAR.findall(normalize(text))


# -- token budget ---------------------------------------------------------------------------

CHARS_PER_TOKEN = 3  # for non-CJK text; conservative next to the usual ~4


def token_counts(text: str) -> tuple[int, int]:
    """(characters counted one token each or more, ASCII characters) — the inputs of
    :func:`tokens_for`. Every non-ASCII character counts: CJK as one token, anything else
    (emoji, CJK punctuation, Cyrillic, accented letters, symbols) as two."""
    if text.isascii():
        return 0, len(text)
    ascii_chars = len(text.encode("ascii", "ignore"))
    cjk = len(_CJK_CHAR.findall(text))
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


def highlight(text: str, query: list[str], width: int = 160, mark: tuple[str, str] = ("**", "**")) -> str:
    """A window of ``text`` around the densest cluster of query terms, with matched words
    (or CJK bigrams) wrapped in ``mark``. Works on the original text (case and width
    kept), independent of the engine."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    wanted = set(query)
    spans: list[tuple[int, int]] = []
    for m in _TOKEN.finditer(flat):
        cjk, word = m.groups()
        if cjk:
            for i in range(len(cjk) - 1 if len(cjk) > 1 else 1):
                gram = normalize(cjk[i : i + 2] if len(cjk) > 1 else cjk)
                if gram in wanted:
                    spans.append((m.start() + i, m.start() + i + len(gram)))
        elif word and stem(normalize(word)) in wanted:
            spans.append((m.start(), m.end()))
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    start = 0
    if len(flat) > width and merged:
        best, best_count = merged[0][0], 0
        for s, _e in merged:
            count = sum(1 for s2, _ in merged if s <= s2 < s + width)
            if count > best_count:
                best, best_count = s, count
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
