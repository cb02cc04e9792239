from vaultmem.analysis import coverage, densest_window, estimate_tokens, highlight, query_tokens, tokens


def test_two_character_chinese_word_is_found_inside_a_sentence():
    assert set(query_tokens("端口")) <= set(tokens("后端端口固定8080"))
    assert "8080" in tokens("后端端口固定8080")


def test_single_cjk_character_and_mixed_scripts():
    assert tokens("审") == ["审"]
    assert tokens("useEffect清理函数") == ["useeffect", "清理", "理函", "函数"]
    assert tokens("テスト 한국어") == ["テス", "スト", "한국", "국어"]


def test_english_inflections_stem_together_and_stopwords_drop():
    assert query_tokens("reviews") == query_tokens("review") == query_tokens("reviewed")
    assert tokens("the and of") == []
    assert tokens("ＡＢＣ Deploying") == ["abc", "deploy"]  # full width folded, stemmed


def test_coverage_counts_distinct_query_terms():
    q = query_tokens("backend port 端口")
    assert coverage(q, "后端端口固定8080") == 1 / 3
    assert coverage(q, "the backend port is 8080, 端口固定") == 1.0
    assert coverage([], "x") == 0.0


def test_highlight_marks_words_and_bigrams_in_the_original_text():
    text = "后端端口固定8080. The Reviews happen weekly."
    out = highlight(text, query_tokens("端口 review"))
    assert "后端**端口**固定8080" in out and "**Reviews**" in out


def test_highlight_windows_long_text_around_the_matches():
    text = "filler " * 200 + "the deploy freeze starts friday " + "filler " * 200
    out = highlight(text, query_tokens("deploy freeze"), width=80)
    assert out.startswith("…") and out.endswith("…") and "**deploy** **freeze**" in out and len(out) < 110


def test_token_estimate_counts_cjk_characters_one_each():
    assert estimate_tokens("端口") == 3  # 1.25 a character, rounded up
    assert estimate_tokens("端口固定") == 5
    assert estimate_tokens("abcdef") == 2
    assert estimate_tokens("端口abc") == 4
    assert estimate_tokens("") == 0


# -- one compiled CJK class: the same answers as the one-pass patterns it replaced ----------

import re  # noqa: E402

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vaultmem import analysis  # noqa: E402

_ONE_PASS = re.compile(rf"([{analysis._CJK}]+)|([^\W_{analysis._CJK}]+)")
_CJK_CHAR = re.compile(rf"[{analysis._CJK}]")
# CJK-range characters that are not word characters (unassigned, ・, ゛, ゠ …) and their
# neighbours: where a two-step split could differ from the one-pass pattern
ALPHABET = st.sampled_from(list("ab Z_-.,。，「」日本語中文한국어カタカナé\u00a0\u3000ｱ１２😀—’“\u2fff\ue000\U00010000")
                           + ["\U00020001", "\u4dbf", "\u4e00", "\u9fff", "\uf900", "\uac00", "\ud7a3", "\ud7a4",
                              "\ud7af", "\u3040", "\u30ff", "\u30fb", "\u309b", "\u30a0", "the", "and", "reviews"])


def _reference_tokens(text):
    out = []
    for m in _ONE_PASS.finditer(analysis.normalize(text)):
        cjk, word = m.groups()
        if cjk:
            out.extend(analysis._cjk_grams(cjk))
        elif word not in analysis.STOPWORDS:
            out.append(analysis.stem(word))
    return out


@settings(max_examples=600, deadline=None)
@given(st.lists(ALPHABET, max_size=30).map("".join))
@example("react组件\u30fbテスト")
@example("\u3040ぁ\ud7af中x")
def test_the_single_cjk_pattern_gives_what_the_one_pass_patterns_gave(text):
    assert list(analysis.spans(text)) == [(m.start(), m.end(), m.group(1) is not None) for m in _ONE_PASS.finditer(text)]
    assert analysis.tokens(text) == _reference_tokens(text)
    assert analysis.cjk_chars(text) == _CJK_CHAR.findall(analysis.normalize(text))
    weighted, ascii_chars = analysis.token_counts(text)
    cjk = len(_CJK_CHAR.findall(text))
    assert (weighted, ascii_chars) == (5 * cjk + 8 * (len(text) - ascii_chars - cjk), len(text.encode("ascii", "ignore")))
    for ch in text:
        assert analysis.is_cjk_char(ch) == bool(_CJK_CHAR.match(ch))



def test_every_cjk_character_has_a_lead_byte_the_small_class_holds():
    """The test that spares a cold command the CJK class must never rule out a CJK run:
    every code point of the class, encoded, holds one of the lead bytes it looks for."""
    cjk = re.compile(rf"[{analysis._CJK}]")
    missed = [hex(c) for c in range(0x80, 0x40000) if not 0xD800 <= c < 0xE000 and cjk.match(chr(c))
              and analysis._CJK_LEAD.search(chr(c).encode("utf-8")) is None]
    assert missed == []


def test_text_without_cjk_never_compiles_the_cjk_class():
    """Compiling the CJK class costs a process ~1.2 ms: a command that meets only text
    without CJK (an English search's query, analysis and snippets, a dash or a curly quote
    among them) must not pay for it, and the first text with CJK still finds its runs."""
    import subprocess
    import sys

    script = (
        "from vaultmem import analysis as a\n"
        "assert a.tokens('Reviews of the backend port') == ['review', 'backend', 'port']\n"
        "assert a.query_units('which port?') and a.cjk_chars('port 8080') == []\n"
        "assert '**port**' in a.highlight('the backend port is 8080', a.query_tokens('port'))\n"
        "assert not a.is_cjk_char('x') and a.estimate_tokens('abc') == 1\n"
        "assert a.tokens('Reviews \u2014 the \u201cport\u201d, caf\u00e9') == ['review', 'port', 'caf\u00e9']\n"
        "assert '**port**' in a.highlight('the port\u2019s number \u2014 8080', a.query_tokens('port'))\n"
        "assert not a.is_cjk_char('\u2014') and a.cjk_chars('caf\u00e9 \u2014') == []\n"
        "print(a._CJK_RUN._compiled is None)\n"
        "assert a.tokens('后端端口') == ['后端', '端端', '端口'] and a.is_cjk_char('端')\n"
        "print(a._CJK_RUN._compiled is None)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


# -- highlighting is linear, and chooses the window it always chose -----------------------------


def _old_window(starts, width):
    """The window choice highlight made before: every match against every other (O(n²))."""
    best, best_count = starts[0], 0
    for s in starts:
        count = sum(1 for s2 in starts if s <= s2 < s + width)
        if count > best_count:
            best, best_count = s, count
    return best


@given(st.lists(st.integers(0, 400), min_size=1, max_size=60, unique=True), st.integers(1, 200))
def test_the_linear_window_is_the_window_the_quadratic_count_chose(starts, width):
    starts.sort()
    assert densest_window(starts, width) == _old_window(starts, width)


WORDS = ["port", "ports", "backend", "the", "端口", "后端", "固定", "x", "8080", "Review", "日本語", "a"]


@given(st.lists(st.sampled_from(WORDS), min_size=0, max_size=120), st.sampled_from(["port", "端口 review", "后端 8080"]),
       st.integers(10, 80))
def test_highlight_output_is_unchanged_on_ordinary_text(words, query, width):
    text = " ".join(words)
    q = query_tokens(query)
    assert highlight(text, q, width=width) == _old_highlight(text, q, width)


def _old_highlight(text, query, width):
    """highlight as it was before the window choice became linear (the reference)."""
    from vaultmem.analysis import normalize, spans, stem

    flat = " ".join(text.split())
    if not flat:
        return ""
    wanted = set(query)
    found = []
    for start, end, is_cjk in spans(flat):
        piece = flat[start:end]
        if is_cjk:
            for i in range(len(piece) - 1 if len(piece) > 1 else 1):
                gram = normalize(piece[i: i + 2] if len(piece) > 1 else piece)
                if gram in wanted:
                    found.append((start + i, start + i + len(gram)))
        elif stem(normalize(piece)) in wanted:
            found.append((start, end))
    merged = []
    for s, e in sorted(found):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    start = 0
    if len(flat) > width and merged:
        best = _old_window([s for s, _ in merged], width)
        start = max(0, min(best - width // 4, len(flat) - width))
    end = min(len(flat), start + width)
    out, pos = [], start
    for s, e in merged:
        if e <= start or s >= end:
            continue
        s, e = max(s, start), min(e, end)
        out.append(flat[pos:s])
        out.append("**" + flat[s:e] + "**")
        pos = e
    out.append(flat[pos:end])
    return ("…" if start > 0 else "") + "".join(out) + ("…" if end < len(flat) else "")


_DATE_PIECES = ["2023", "年", "5", "月", "4", "日", "号", " ", "May", "may", "Sept.", "sept", "december", "Dec", ",", "of",
                "th", "-", "/", ".", "12", "31", "1999", "x", "_", "mayday", "昨天", "today", "上周五", "\u00a0", "５",
                "ＭＡＹ", "é", "TODAY", "Yesterday", "tomorrow", "holiday", "今日", "前天", "明天", "last", "LAST",
                "friday", "Monday", "上个礼拜一", "本星期日", "这周", "三", "1985", "2019", "ſ", "ſep", "İ", "\u212a",
                "AUG", "nov", "Jan", "JUL", "oCt", "feb", "mAr", "apr", "jun", "DEC", "ｊａｎ"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_DATE_PIECES), max_size=14))
@example(["x-", "may", " ", "4"])
@example(["1999", "-", "12", "/", "31"])
@example(["Yesterday", " ", "LAST", " ", "friday", "上个礼拜一"])
@example(["4", "May", " ", "2023"])
@example(["ſep", " ", "4", ",", " ", "2023"])
@example(["ｊａｎ", " ", "12"])
def test_skipping_a_date_pattern_the_text_cannot_match_changes_no_date(pieces):
    """find_dates skips a pattern when the text lacks what it needs (a year's 19 or 20,
    月, a month's name, a relative day's or a weekday's words): the same dates as running
    every pattern over every text."""
    text = "".join(pieces)
    quick = analysis.find_dates(text, "2024-03-05")
    saved = analysis._DATE_NEEDS, analysis._RELATIVE_NEEDS, analysis._WEEKDAY_NEEDS
    analysis._DATE_NEEDS = (None,) * len(saved[0])
    analysis._RELATIVE_NEEDS = analysis._WEEKDAY_NEEDS = ("",)  # "" is in every text
    try:
        assert quick == analysis.find_dates(text, "2024-03-05")
    finally:
        analysis._DATE_NEEDS, analysis._RELATIVE_NEEDS, analysis._WEEKDAY_NEEDS = saved


def test_a_datetime_counts_as_its_day():
    import datetime as dt

    day, moment = dt.date(2024, 3, 5), dt.datetime(2024, 3, 5, 10, 30)
    assert analysis.date_terms_of(moment) == analysis.date_terms_of(day) == ["@2024-03-05", "@03-05", "@2024-03"]
    assert analysis.find_dates("yesterday", moment) == analysis.find_dates("yesterday", day)
    assert analysis.date_terms_of(dt.date(5, 3, 4)) == ["@5-03-04", "@03-04", "@5-03"]  # strftime's unpadded year


_FIELD_PIECES = ["后端", "端口", "固定", "カタカナ", "한국어", "𠀀", "ﬁle", "Ⅻ", "e\u0301", "\u0301", "x", "API", "８０８０",
                 " ", "\n", "\t", "\u3000", "\u00a0", "\u2028", "\x1f", "-", "_", ".", "May 4", "昨天"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_FIELD_PIECES), max_size=8).map("".join), min_size=3, max_size=3),
       st.lists(st.sampled_from(_FIELD_PIECES), max_size=3))
def test_a_documents_unigrams_and_field_lengths_are_what_analysing_it_whole_gives(parts, aliases):
    # fields_of takes the CJK unigrams from the runs tokens() split, and counts each text
    # field's terms by its spaces: the same as analysing the joined text and splitting
    from vaultmem.index.fields import TEXT_FIELDS, fields_of, lengths_of
    from vaultmem.models import IndexDoc

    title, text, near = parts
    doc = IndexDoc(id="memories/x.md", path="memories/x.md", kind="note", title=title, text=text, aliases=aliases,
                   near=near, days=["2024-03-05"])
    fields = fields_of(doc)
    whole = f"{doc.title} {doc.text} {' '.join(doc.aliases)}"
    assert fields["chars"] == " ".join(dict.fromkeys(analysis.cjk_chars(whole)))
    assert lengths_of(fields) == [len(fields[name].split()) for name in TEXT_FIELDS]
