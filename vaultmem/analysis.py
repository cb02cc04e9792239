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

from .patterns import Lazy

ANALYZER_VERSION = "bigram-snowball-dates-filters-6"  # stored in the index; a change forces a rebuild

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\U00020000-\U0002ffff"
)
# One pattern holds the CJK class: compiling a class of ~40,000 code points costs ~1.2 ms
# each time it appears in a pattern. Splitting on CJK runs, then finding words in what
# lies between, gives exactly the tokens of the one-pass pattern ``([CJK]+)|([^\W_CJK]+)``
# (a property test holds it). It is compiled on the first text that may hold a CJK run
# (:func:`_may_hold_cjk`), so a command that meets only other text (an English search's
# query and snippets) never pays for the class.
_CJK_RUN = Lazy(rf"([{_CJK}]+)")
# A text holds no CJK run when it is ASCII, or when none of its characters has a UTF-8 lead
# byte of the CJK ranges (E3-ED: U+3000-U+DFFF; EF: U+F000-U+FFFF; F0: U+10000-U+3FFFF). One
# that has such a byte may still hold none (CJK punctuation, fullwidth forms, emoji): the
# class decides. This small class compiles in a twentieth of the time, so a cold command
# whose texts hold a dash or a curly quote but no CJK never compiles the CJK class. Once the
# class is compiled (a Chinese vault's build), its own scan decides without this test.
_CJK_LEAD = Lazy(rb"[\xe3-\xed\xef\xf0]")


def _may_hold_cjk(text: str) -> bool:
    if text.isascii():
        return False
    if _CJK_RUN.ready:  # compiled already (a Chinese vault's build): the class's own scan decides
        return True
    return _CJK_LEAD.search(text.encode("utf-8", "surrogatepass")) is not None


def _cjk_split(text: str) -> list[str]:
    """``_CJK_RUN.split(text)``: other text, CJK run, other text, …"""
    return _CJK_RUN.split(text) if _may_hold_cjk(text) else [text]


def _cjk_runs(text: str) -> Iterator[re.Match]:
    """``_CJK_RUN.finditer(text)``."""
    return _CJK_RUN.finditer(text) if _may_hold_cjk(text) else iter(())


def _cjk_findall(text: str) -> list[str]:
    """``_CJK_RUN.findall(text)``."""
    return _CJK_RUN.findall(text) if _may_hold_cjk(text) else []


_WORD = re.compile(r"[^\W_]+")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves
    s t d ll m re ve""".split()  # what "Tom's", "don't", "I'll", "we're" leave once split at the apostrophe
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
    for run in _cjk_runs(text):
        for word in _WORD.finditer(text, pos, run.start()):
            yield word.start(), word.end(), False
        yield run.start(), run.end(), True
        pos = run.end()
    for word in _WORD.finditer(text, pos):
        yield word.start(), word.end(), False


def tokens(text: str, runs: list[str] | None = None) -> list[str]:
    """The index terms of ``text``, in order (duplicates kept, for term frequency).
    ``runs``: when given, each CJK run of the normalised text is appended to it (what
    :func:`cjk_chars` reads, without normalising and splitting the text again)."""
    out: list[str] = []
    for i, part in enumerate(_cjk_split(normalize(text))):  # other text, CJK run, other text, …
        if i % 2:
            out.extend(_cjk_grams(part))
            if runs is not None:
                runs.append(part)
        elif part:
            for word in _WORD.findall(part):
                if word not in STOPWORDS:
                    out.append(stem(word))
    return out


def query_tokens(text: str, today=None) -> list[str]:
    """Distinct terms of a query, in order of first appearance; a date written in it
    is one date term instead of its digits and month words (``yesterday`` counts from
    ``today``, default the current day). A short query's are remembered for its day: one
    answer of a warm process reads its question five times (its parse, the engine's
    gate, the ranker's terms)."""
    if len(text) > REMEMBERED_QUERY_CHARS:
        return _query_tokens(text, today)
    import datetime as dt

    return list(_remembered_query_tokens(text, today or dt.date.today()))


REMEMBERED_QUERY_CHARS = 1000  # a longer text (a brief's whole task) is analysed each time, never kept


def _query_tokens(text: str, today) -> list[str]:
    rest, found = query_dates(text, today)
    return list(dict.fromkeys([*tokens(rest), *found]))


@lru_cache(maxsize=4096)
def _remembered_query_tokens(text: str, today) -> tuple[str, ...]:
    return tuple(_query_tokens(text, today))


def query_dates(text: str, today=None) -> tuple[str, list[str]]:
    """A query without its written dates, and their terms (:func:`split_dates`, days
    counted from ``today``, default the current day); most queries name no date, and a
    glance for a digit, a month or a relative day says so without the date patterns."""
    lowered = text.lower()
    # the relative-day and weekday patterns only where the text holds what they cannot match without
    if not (any(c.isdigit() for c in text)
            or (any(w in lowered for w in _RELATIVE_NEEDS) and _RELATIVE_RE.search(text))
            or (any(w in lowered for w in _WEEKDAY_NEEDS) and _WEEKDAY_RE.search(text))
            or any(m in lowered for m in _MONTHS)):
        return text, []
    import datetime as dt

    return split_dates(text, today or dt.date.today())


# Characters that say how a Chinese question is asked, not what it is about: a
# relevance judgement leaves them out (indexing and ranking keep them).
QUESTION_CHARS = frozenset("什么哪吗呢怎谁几啥嘛")
_QUESTION_WORDS = Lazy("为什么|怎么样|怎么办|什么样|什么|怎么|怎样|如何|为何|哪里|哪儿|哪个|哪些|哪种|哪家|哪天|"
                        "多少|多久|多长|几个|几次|是否|是不是|有没有|能不能|会不会|要不要|应该|可以|的时候")
FUNCTION_CHARS = frozenset("是的了在有和与及或我你他她它们这那个也都就还要会能吧呀啊把被给对从到为")


def query_units(text: str, today=None) -> list[tuple[str, tuple[str, ...]]]:
    """What a query asks for, unit by unit, for judging how much of it a document
    answers: each word (its stem), each date (its term), and each content character of
    a CJK run with the query's bigrams that hold it — a character is answered when a
    document holds one of them, so the seam of two words ("州做" of "杭州做") costs
    nothing while a word the vault lacks ("短信") does. (unit, terms) pairs, in order."""
    rest, found = query_dates(text, today)
    units: list[tuple[str, tuple[str, ...]]] = [(t, (t,)) for t in found]
    flat = normalize(rest)
    for i, part in enumerate(_cjk_split(flat if flat.isascii() else _QUESTION_WORDS.sub(" ", flat))):
        if i % 2:
            if len(part) == 1:
                units.append((part, (part,)))
                continue
            for k, ch in enumerate(part):
                if ch in QUESTION_CHARS or ch in FUNCTION_CHARS:
                    continue
                grams = tuple(part[j:j + 2] for j in (k - 1, k) if 0 <= j < len(part) - 1)
                units.append((f"{ch}#{k}:{part}", grams))
        elif part:
            units.extend((stem(w), (stem(w),)) for w in _WORD.findall(part) if w not in STOPWORDS)
    return list({u: (u, grams) for u, grams in units}.values())


def coverage(query: list[str], text: str, dates: list[str] | tuple[str, ...] = (), have: set[str] | None = None
             ) -> float:
    """The share of the query's distinct terms that occur in ``text`` (0..1). A
    one-character CJK term counts when that character occurs anywhere in the text, a
    date term when it is among ``dates`` (the document's date terms). ``have``: the
    terms of ``text`` and ``dates``, when the caller has them already."""
    if not query:
        return 0.0
    have = (set(tokens(text)) | set(dates)) if have is None else have
    flat = normalize(text)
    return sum(1 for t in query if t in have or (is_cjk_char(t) and t in flat)) / len(query)


def is_cjk_char(term: str) -> bool:
    return len(term) == 1 and _may_hold_cjk(term) and _CJK_RUN.match(term) is not None


def cjk_chars(text: str) -> list[str]:
    """Every CJK character of ``text`` (for the unigram field that answers one-character
    queries; normal terms are bigrams)."""
    return list("".join(_cjk_findall(normalize(text))))


# -- dates ---------------------------------------------------------------------------------
# A date is indexed and searched as normalised terms of its own, in a field of its own:
# ``@2023-05-04`` (the day), ``@05-04`` (the day without its year: "5月4号" names no year)
# and ``@2023-05`` (the month). Written out, a date is digits and month words that meet
# nothing — ``5月4日`` is the terms ``5 月 4 日``, ``2023-05-04`` in frontmatter the terms
# ``2023 05 04`` — and its bare numbers match turn numbers and counts.
DATE_PREFIX = "@"
_MONTHS = {m: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), 1) for m in names}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DATE_PATTERNS = [Lazy(p, re.I) for p in (  # compiled when a text may hold such a date
    r"(?<!\d)" + _YEAR + r"[-/.](?P<m>[01]?\d)[-/.](?P<d>[0-3]?\d)(?!\d)",          # 2023-05-04, 2023/5/4
    r"(?:" + _YEAR + r"\s*年\s*)?(?<!\d)(?P<m>[01]?\d)\s*月\s*(?P<d>[0-3]?\d)\s*[日号號]",  # 2023年5月4日, 5月4号
    r"(?<![\w])" + _MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?(?![\w])",   # May 4, May 4th, 2023
    r"(?<![\w])" + _DAY + r"(?:\s+of)?\s+" + _MONTH + r"(?:,?\s+" + _YEAR + r")?(?![\w])",  # 4 May 2023
    r"(?<!\d)" + _YEAR + r"\s*年\s*(?P<m>[01]?\d)\s*月(?!\s*[0-3]?\d\s*[日号號])",     # 2023年5月
    r"(?<![\w])" + _MONTH + r"\s+" + _YEAR + r"(?![\w])",                            # May 2023
)]
# what each of _DATE_PATTERNS cannot match without: a text without it skips the pattern
# (a full date's year begins with 19 or 20; a month's name is looked for once)
_DATE_NEEDS = ("year", "月", "month", "month", "月", "month")
_MONTH_WORD = Lazy(r"(?<![^\W\d_])(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")(?![^\W\d_])", re.I)
# the first three letters of every month's name: a lower-cased NFKC text without one holds no
# month's name (none of these letters has another character that matches it under re.I once
# NFKC has turned "ſ" into "s"), and twelve substring tests cost a tenth of the search
_MONTH_STARTS = tuple(dict.fromkeys(name[:3] for name in _MONTHS))


def _has_month_word(flat: str, low: str) -> bool:
    """Whether the NFKC text ``flat`` (``low``: lower-cased) names a month (:data:`_MONTH_WORD`)."""
    return any(start in low for start in _MONTH_STARTS) and _MONTH_WORD.search(flat) is not None


_RELATIVE = {"today": 0, "yesterday": -1, "tomorrow": 1, "今天": 0, "今日": 0, "昨天": -1, "昨日": -1,
             "前天": -2, "明天": 1, "后天": 2}
_RELATIVE_RE = Lazy(r"(?<![\w])(?:today|yesterday|tomorrow)(?![\w])|今天|今日|昨天|昨日|前天|明天|后天", re.I)
_RELATIVE_NEEDS = ("天", "日", "day", "tomorrow")  # what _RELATIVE_RE cannot match without
_WEEKDAY_NEEDS = ("周", "星期", "礼拜", "last")  # … and _WEEKDAY_RE
_ZH_DAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_EN_DAYS = {d: n for n, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
# 上周五 / 上星期五 / 这周三 / 本周日; last Friday (the most recent Friday before the day)
_WEEKDAY_RE = Lazy(r"(?P<zh>上|这|本)(?:个)?(?:周|星期|礼拜)(?P<zd>[一二三四五六日天])"
                   r"|(?<![\w])last\s+(?P<en>monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?![\w])",
                   re.I)


def date_terms_of(day) -> list[str]:
    """The terms of one calendar day (a ``datetime.date``): day, day without year, month."""
    if day.year < 1000:  # strftime's %Y does not pad such a year: as it always wrote them
        return [f"{DATE_PREFIX}{day:%Y-%m-%d}", f"{DATE_PREFIX}{day:%m-%d}", f"{DATE_PREFIX}{day:%Y-%m}"]
    iso = day.isoformat()[:10]  # YYYY-MM-DD (of a datetime too), without three strftime calls
    return [DATE_PREFIX + iso, DATE_PREFIX + iso[5:], DATE_PREFIX + iso[:7]]


def _iso_day(value):
    import datetime as dt

    try:
        return dt.date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def find_dates(text: str, ref=None) -> list[tuple[int, int, list[str]]]:
    """Each date written in ``text``: (start, end, its terms). A full date gives the
    day's three terms; a day without a year gives ``@MM-DD``; a month ``@YYYY-MM``.
    ``yesterday`` / ``昨天``, ``上周五`` / ``这周三`` and ``last Friday`` are days relative to
    ``ref`` (a date, or an ISO string; weeks start on Monday), understood only when it is
    given."""
    import datetime as dt

    flat = unicodedata.normalize("NFKC", text)
    low = flat.lower()  # (NFKC already: no other character lowers to the letters looked for)
    found: list[tuple[int, int, list[str]]] = []
    taken: list[tuple[int, int]] = []
    month_word = None
    for pattern, needs in zip(_DATE_PATTERNS, _DATE_NEEDS):
        if needs == "月" and "月" not in flat:
            continue
        if needs == "year" and "20" not in flat and "19" not in flat:
            continue
        if needs == "month":  # the month-name patterns: one look for a month's name first
            month_word = _has_month_word(flat, low) if month_word is None else month_word
            if not month_word:
                continue
        for m in pattern.finditer(flat):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            g = m.groupdict()
            month = int(g["m"]) if g.get("m") else _MONTHS.get((g.get("mon") or "").lower())
            day = int(g["d"] or 0) if "d" in g and g.get("d") else int(g["day"]) if g.get("day") else None
            year = int(g["year"]) if g.get("year") else None
            if not month or not 1 <= month <= 12:
                continue
            if day is None:
                if year is None:
                    continue
                terms = [f"{DATE_PREFIX}{year:04d}-{month:02d}"]
            elif not 1 <= day <= 31:
                continue
            elif year is not None:
                try:
                    terms = date_terms_of(dt.date(year, month, day))
                except ValueError:
                    continue
            elif day <= (29 if month == 2 else 30 if month in (4, 6, 9, 11) else 31):
                terms = [f"{DATE_PREFIX}{month:02d}-{day:02d}"]
            else:
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), m.end(), terms))
    base = ref if isinstance(ref, dt.date) or ref is None else _iso_day(ref)
    relative = weekday = False
    if base is not None:  # each only where the lower-cased text holds what it cannot match without
        relative = any(w in low for w in _RELATIVE_NEEDS)
        weekday = any(w in low for w in _WEEKDAY_NEEDS)
    if relative:
        for m in _RELATIVE_RE.finditer(flat):
            if not any(s < m.end() and m.start() < e for s, e in taken):
                found.append((m.start(), m.end(), date_terms_of(base + dt.timedelta(days=_RELATIVE[m.group(0).lower()]))))
    if weekday:
        for m in _WEEKDAY_RE.finditer(flat):
            if m.group("zh"):
                monday = base - dt.timedelta(days=base.weekday()) - dt.timedelta(days=7 if m.group("zh") == "上" else 0)
                day = monday + dt.timedelta(days=_ZH_DAYS[m.group("zd")])
            else:
                back = (base.weekday() - _EN_DAYS[m.group("en").lower()]) % 7 or 7
                day = base - dt.timedelta(days=back)
            found.append((m.start(), m.end(), date_terms_of(day)))
    return sorted(found)


def date_terms(text: str, ref=None, dates=()) -> list[str]:
    """The date terms of a document: of each day in ``dates`` (its frontmatter dates,
    ISO), and of each date written in ``text`` (relative days against ``ref``)."""
    out: list[str] = []
    for value in dates:
        day = _iso_day(value) if value else None
        if day is not None:
            out.extend(date_terms_of(day))
    for _s, _e, terms in find_dates(text, ref):
        out.extend(terms)
    return out


def document_date_terms(title: str, text: str, days: list[str]) -> list[str]:
    """A document's date terms as the index holds them: of its days (``days``, ISO; the
    first is what ``yesterday`` in its text counts from) and of the dates in its title
    and text."""
    return date_terms(f"{title}\n{text}", ref=days[0] if days else None, dates=days)


def split_dates(query: str, today=None) -> tuple[str, list[str]]:
    """A query without its written dates, and their terms: the date is searched by its
    normalised terms, and its digits and month words no longer match numbers."""
    found = find_dates(query, today)
    if not found:
        return query, []
    flat = unicodedata.normalize("NFKC", query)  # what find_dates' positions are in
    rest, pos, terms = [], 0, []
    for start, end, found_terms in found:
        rest += [flat[pos:start], " "]
        pos = end
        terms.extend(found_terms[:1] if len(found_terms) == 3 else found_terms)  # a full date asks for its day
    rest.append(flat[pos:])
    return "".join(rest), list(dict.fromkeys(terms))


# -- token budget ---------------------------------------------------------------------------

CHARS_PER_TOKEN = 3  # for non-CJK text; conservative next to the usual ~4
# A CJK character counts 1.25 tokens, in quarters so that counts of lines add up exactly:
# against Claude's published tokenizer (the tokenizer.json that the anthropic package
# shipped up to 0.39) Chinese chat costs ~1.1–1.3 tokens a character, and one token a
# character under-counted 229 of 408 turns of our Chinese dev conversations by 5% in all
# (docs/recall.md, "The token estimate").
QUARTERS_PER_CJK = 5
QUARTERS_PER_OTHER = 8  # any other non-ASCII character: two tokens


@lru_cache(maxsize=16384)  # a warm process briefs the same MEMORY.md lines again and again
def token_counts(text: str) -> tuple[int, int]:
    """(quarter tokens of the non-ASCII characters, ASCII characters) — the inputs of
    :func:`tokens_for`. Every non-ASCII character counts: CJK as 1.25 tokens, anything
    else (emoji, CJK punctuation, Cyrillic, accented letters, symbols) as two."""
    if text.isascii():
        return 0, len(text)
    ascii_chars = len(text.encode("ascii", "ignore"))
    cjk = sum(map(len, _cjk_findall(text)))
    other = len(text) - ascii_chars - cjk
    return QUARTERS_PER_CJK * cjk + QUARTERS_PER_OTHER * other, ascii_chars


def tokens_for(quarters: int, ascii_chars: int) -> int:
    return math.ceil(quarters / 4) + math.ceil(ascii_chars / CHARS_PER_TOKEN)


def estimate_tokens(text: str) -> int:
    """The documented token estimate: one token per three ASCII characters (spaces and
    punctuation included), rounded up; 1.25 tokens per CJK character; two tokens per
    other non-ASCII character (emoji, CJK punctuation, Cyrillic, accented letters …),
    rounded up. Model tokenizers use about four ASCII characters and 1.1–1.3 CJK
    characters per token, so the estimate errs high: a brief within budget by this
    count is within budget for the model."""
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


# what highlighting asks of every word and CJK pair of every hit shown: the same few
# thousand pieces again and again in a warm process
@lru_cache(maxsize=65536)
def _folded(piece: str) -> str:
    return normalize(piece)


@lru_cache(maxsize=65536)
def _folded_term(word: str) -> str:
    return stem(normalize(word))


def highlight(text: str, query: list[str], width: int = 160, mark: tuple[str, str] = ("**", "**")) -> str:
    """A window of ``text`` around the densest cluster of query terms, with matched words
    (or CJK bigrams) wrapped in ``mark``. Works on the original text (case and width
    kept), independent of the engine."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    wanted = set(query)
    grams = not all(t.isascii() for t in wanted)  # a CJK pair is never ASCII, even folded
    found: list[tuple[int, int]] = []

    def words(upto: int) -> None:
        for m in _WORD.finditer(flat, pos, upto):
            if _folded_term(m.group()) in wanted:
                found.append(m.span())

    pos = 0
    for run in _cjk_runs(flat):  # as spans() gives them, without a generator's cost
        start = run.start()
        words(start)
        if grams:
            piece = run.group()
            for i in range(len(piece) - 1 if len(piece) > 1 else 1):
                gram = _folded(piece[i : i + 2] if len(piece) > 1 else piece)
                if gram in wanted:
                    found.append((start + i, start + i + len(gram)))
        pos = run.end()
    words(len(flat))
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
