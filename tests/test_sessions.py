"""What a session's text holds worth keeping (``vaultmem/sessions.py``), read one way for
every runtime: the four elements of a sub-agent's labelled report, and the sentences in
which the user states a preference, a decision or a correction. Pure functions: text
in, text out."""

from __future__ import annotations

import pytest

from vaultmem import sessions
from vaultmem.sessions import fact_candidates, report_fields

# -- a sub-agent's report -------------------------------------------------------------------------


def test_an_english_report_in_plain_bold_and_list_labels():
    report = ("I reviewed payments.py.\n\n"
              "**Task:** Review payments.py for SQL injection\n"
              "- Conclusion: charge() built its query from user input\n"
              "* **Output**: a patch to payments.py\n"
              "1. Key decision: parameterised queries everywhere\n")
    assert report_fields(report) == {
        "task": "Review payments.py for SQL injection",
        "conclusion": "charge() built its query from user input",
        "output": "a patch to payments.py",
        "decision": "parameterised queries everywhere"}


def test_a_chinese_report_with_full_width_colons():
    report = "**任务**：检查端口配置\n- 结论：端口是 8080\n- 产出：docs/port.md\n关键决策：保持 8080"
    assert report_fields(report) == {"task": "检查端口配置", "conclusion": "端口是 8080",
                                     "output": "docs/port.md", "decision": "保持 8080"}


def test_a_label_alone_takes_its_paragraph_and_a_heading_is_a_label():
    report = ("## Findings\n\n- the cache is cold\n- it warms in 2 min\n\n"
              "Output:\n- b.py\n- c.py\n\n"
              "## Next steps\nnothing here is a decision\n")
    assert report_fields(report) == {"conclusion": "the cache is cold it warms in 2 min", "output": "b.py c.py"}


def test_a_report_missing_an_element_has_no_such_key_and_nothing_is_guessed():
    fields = report_fields("Task: find the port\nConclusion: 8080\nOutput: docs/port.md\n")
    assert fields == {"task": "find the port", "conclusion": "8080", "output": "docs/port.md"}
    assert "decision" not in fields
    assert report_fields("I looked into it. The output is fine and we decided nothing.") == {}
    assert report_fields("Retries live in config/retry.yaml. Conclusion: three attempts.") == {}
    assert report_fields("```\nConclusion: inside code\n```") == {}
    assert report_fields("Conclusion:\n\n") == {}
    assert report_fields("") == {}


def test_the_first_statement_of_an_element_counts_and_bold_is_not_part_of_it():
    fields = report_fields("**Conclusion: it works**\nConclusion: a later one\nOutput: __init__.py\n")
    assert fields == {"conclusion": "it works", "output": "__init__.py"}


def test_other_words_for_an_element_are_read_unless_only_its_own_names_are_asked_for():
    report = "Summary: the port is 8080\nFiles created: notes/port.md\nDecided: keep 8080\n结论：端口是 8080"
    assert report_fields(report) == {"conclusion": "the port is 8080", "output": "notes/port.md",
                                     "decision": "keep 8080"}
    assert report_fields(report, synonyms=False) == {"conclusion": "端口是 8080"}
    assert report_fields("## Summary\nall tests pass", synonyms=False) == {}


# -- the user's sentences worth keeping -------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("I prefer small pull requests.", ("preference", "I prefer small pull requests.")),
    ("From now on, run the linter before every commit.",
     ("preference", "From now on, run the linter before every commit.")),
    ("我喜欢用 tabs 缩进。", ("preference", "我喜欢用 tabs 缩进。")),
    ("以后都用 pnpm 安装依赖", ("preference", "以后都用 pnpm 安装依赖")),
    ("We decided to use Postgres for the job queue.", ("decision", "We decided to use Postgres for the job queue.")),
    ("Let's go with the nightly build at 02:00.", ("decision", "Let's go with the nightly build at 02:00.")),
    ("我们决定用 Postgres 做任务队列。", ("decision", "我们决定用 Postgres 做任务队列。")),
    ("Actually, the port is 8081 on staging.", ("fact", "Actually, the port is 8081 on staging.")),
    ("That's wrong: the timeout is 30 seconds.", ("fact", "That's wrong: the timeout is 30 seconds.")),
    ("不对，端口应该是 8081。", ("fact", "不对，端口应该是 8081。")),
    ("Remember that the release freeze starts on the 20th.",
     ("fact", "Remember that the release freeze starts on the 20th.")),
    ("The root cause was a shared temp dir.", ("failure+fix", "The root cause was a shared temp dir.")),
])
def test_a_preference_a_decision_or_a_correction_in_either_language(text, expected):
    assert fact_candidates(text) == [expected]


def test_a_question_is_not_a_fact():
    assert fact_candidates("Should we always deploy on Fridays?") == []
    assert fact_candidates("我们以后都用 pnpm 吗？") == []
    assert fact_candidates("How is the cache built?") == []


def test_sentences_are_split_in_both_languages_and_code_is_not_read():
    text = ("Hi there. I prefer tabs over spaces. ```we decided x in code```\n"
            "- 我喜欢短的函数。我们决定用 pytest。\n"
            "ok.")
    assert fact_candidates(text) == [("preference", "I prefer tabs over spaces."),
                                     ("preference", "我喜欢短的函数。"),
                                     ("decision", "我们决定用 pytest。")]


def test_a_long_run_without_a_sentence_end_is_not_a_fact_and_a_fact_is_cut_to_its_limit():
    assert fact_candidates("I prefer " + "x" * (2 * sessions.MAX_FACT_CHARS + 10)) == []
    [(kind, text)] = fact_candidates("I prefer " + "y" * sessions.MAX_FACT_CHARS)
    assert kind == "preference" and len(text) == sessions.MAX_FACT_CHARS
