from vaultmem.analysis import coverage, estimate_tokens, highlight, query_tokens, tokens


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
    assert estimate_tokens("端口") == 2
    assert estimate_tokens("abcdef") == 2
    assert estimate_tokens("端口abc") == 3
    assert estimate_tokens("") == 0
