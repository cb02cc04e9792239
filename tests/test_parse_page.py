"""Role-page parsing: forgiving of what humans do in Obsidian, exact about what it changes."""

import datetime as dt

import pytest

from vaultmem.errors import ParseError
from vaultmem.parse import add_context_entry, add_project, add_work_entry, new_page_text, parse_page

SEED_PAGE = """---
name: 前端审查
category: 前端开发
first_used: 2026-05-08
projects:
- 项目A
tags: [agent-memory]
type: agent-page
---
# 前端审查 Agent 记忆
## 项目上下文
<!-- 与该Agent相关的项目背景 -->
### 项目A
- **技术栈**：React 18 + TypeScript + Vite
- **用户偏好**：函数组件优先、CSS Modules
## 工作记忆
<!-- 经验 -->
- 2026-05-08 | 发现Dashboard组件存在useEffect清理函数缺失问题 ^m-aaa111
- 2026-05-08 | 用户明确偏好使用React.memo而非useMemo进行组件级优化
## 子Agent记录
### 2026-05-08 Dashboard性能分析
- **任务**：分析Dashboard组件的渲染性能
- **结论**：DataTable缺少React.memo，大列表无虚拟滚动
- **产出**：性能报告 + 优化建议
- **关键决策**：暂不引入react-window ^m-bbb222
"""

# What a human might leave after editing in Obsidian on Windows: BOM, CRLF, keys
# reordered, an extra key with a comment, English headings, an extra section, a code
# block holding a '## ' line, a list item with a continuation line.
HUMAN_PAGE = (
    "\ufeff---\r\n"
    "type: agent-page   # keep this\r\n"
    "name: Code Reviewer\r\n"
    "owner: alice\r\n"
    "projects: [shop]\r\n"
    "tags: [agent-memory, reviewed]\r\n"
    "first_used: 2026-01-02\r\n"
    "category: review\r\n"
    "---\r\n"
    "# Code Reviewer agent memory\r\n"
    "\r\n"
    "## Notes from Alice\r\n"
    "Free text the tool must keep.\r\n"
    "\r\n"
    "## Working memory\r\n"
    "- 2026-01-02 | prefers small PRs ^m-000001\r\n"
    "  and squash merges\r\n"
    "```\r\n"
    "## not a heading inside code\r\n"
    "```\r\n"
    "\r\n"
    "## Project context\r\n"
    "### shop\r\n"
    "- Django 5 ^m-000002\r\n"
    "\r\n"
    "## Sub-agent records\r\n"
    "\r\n"
    "## Links\r\n"
    "- [[elsewhere]]\r\n"
)


def test_seed_page_parses_into_entries():
    page = parse_page(SEED_PAGE, "agents/前端审查.md")
    assert page.name == "前端审查" and page.lang == "zh" and page.projects == ["项目A"]
    ctx = [e for e in page.entries if e.section == "context"]
    assert [e.project for e in ctx] == ["项目A", "项目A"]
    work = [e for e in page.entries if e.section == "work"]
    assert work[0].date == "2026-05-08" and work[0].id == "m-aaa111"
    assert work[0].text == "发现Dashboard组件存在useEffect清理函数缺失问题"
    assert work[1].id is None  # a human-written line without an id is still an entry
    (rec,) = [e for e in page.entries if e.section == "subagents"]
    assert rec.title == "Dashboard性能分析" and rec.date == "2026-05-08" and rec.id == "m-bbb222"
    assert rec.fields == {
        "task": "分析Dashboard组件的渲染性能",
        "conclusion": "DataTable缺少React.memo，大列表无虚拟滚动",
        "output": "性能报告 + 优化建议",
        "decision": "暂不引入react-window",
    }


def test_human_edited_page_parses_and_round_trips_byte_for_byte():
    page = parse_page(HUMAN_PAGE, "agents/Code Reviewer.md")
    assert page.doc.text() == HUMAN_PAGE
    assert page.lang == "en"
    assert page.extra_sections == ["Notes from Alice", "Links"]
    work = [e for e in page.entries if e.section == "work"]
    assert len(work) == 1
    assert (work[0].text, work[0].id, work[0].date) == ("prefers small PRs\nand squash merges", "m-000001", "2026-01-02")


def test_adding_an_entry_changes_only_the_inserted_lines():
    page = parse_page(HUMAN_PAGE, "agents/Code Reviewer.md")
    new_text, entry = add_work_entry(page, "checks migrations first", dt.date(2026, 3, 4))
    assert new_text.startswith("\ufeff---\r\n")
    old_lines = HUMAN_PAGE.split("\r\n")
    new_lines = new_text.split("\r\n")
    assert len(new_lines) == len(old_lines) + 1
    inserted = [x for x in new_lines if x not in old_lines]
    assert inserted == [f"- 2026-03-04 | checks migrations first ^{entry.id}"]
    # the entry lands in working memory (after the code block, before Project context)
    assert new_lines.index(inserted[0]) < new_lines.index("## Project context")
    assert "\n" not in new_text.replace("\r\n", "")  # no bare LF slipped in
    again = parse_page(new_text, "agents/Code Reviewer.md")
    assert [e.id for e in again.entries if e.section == "work"][-1] == entry.id


def test_adding_a_project_keeps_comments_order_and_flow_style():
    page = parse_page(HUMAN_PAGE, "agents/Code Reviewer.md")
    assert add_project(page, "billing")
    text = page.doc.text()
    assert "type: agent-page   # keep this\r\n" in text
    assert "projects: [shop, billing]\r\n" in text
    assert text.index("type:") < text.index("name:") < text.index("owner:")
    assert text.endswith("- [[elsewhere]]\r\n")
    assert not add_project(parse_page(text, "p.md"), "billing")


def test_context_entry_goes_under_its_project_heading_or_a_new_one():
    page = parse_page(SEED_PAGE, "agents/前端审查.md")
    text, e1 = add_context_entry(page, "项目A", "**关键约束**：Node 18+、ESM only")
    page = parse_page(text, "agents/前端审查.md")
    text, e2 = add_context_entry(page, "项目B", "Vue 3")
    page = parse_page(text, "agents/前端审查.md")
    ctx = [(e.project, e.id) for e in page.entries if e.section == "context"]
    assert ctx[2] == ("项目A", e1.id) and ctx[3] == ("项目B", e2.id)
    lines = text.splitlines()
    assert lines.index("### 项目B") < lines.index("## 工作记忆")
    assert lines[lines.index("## 工作记忆") - 1] == ""


def test_new_page_has_seed_frontmatter_and_sections_in_both_languages():
    for lang, heads in (("zh", ["## 项目上下文", "## 工作记忆", "## 子Agent记录"]),
                        ("en", ["## Project context", "## Working memory", "## Sub-agent records"])):
        text = new_page_text("前端审查", lang, "前端开发", "web", dt.date(2026, 5, 8))
        lines = text.splitlines()
        assert lines[:9] == ["---", "name: 前端审查", "category: 前端开发", "first_used: 2026-05-08", "projects:",
                             "- web", "tags: [agent-memory]", "type: agent-page", "---"]
        assert [x for x in lines if x.startswith("## ")] == heads
        page = parse_page(text, "agents/前端审查.md")
        assert page.lang == lang and page.entries == []


@pytest.mark.parametrize(
    "broken, line, words",
    [
        (SEED_PAGE.replace("category: 前端开发", "category: [前端开发"), 4, "YAML"),
        (SEED_PAGE.replace("type: agent-page", "type: agent-page\n\tbad: tab"), 9, "YAML"),
        (SEED_PAGE.replace("name: 前端审查\n", "name: 前端审查\nname: again\n"), 3, "YAML"),
        (SEED_PAGE.replace("---\n# 前端审查", "# 前端审查", 1), 1, "never closed"),
        (SEED_PAGE.split("---\n", 2)[2], 1, "no frontmatter"),
        (SEED_PAGE.replace("## 工作记忆\n", ""), 24, "no '## 工作记忆'"),
        (SEED_PAGE + "## 工作记忆\n", 26, "appears twice"),
        ("---\n- a list\n---\n## 项目上下文\n## 工作记忆\n## 子Agent记录\n", 2, "a list, not"),
    ],
)
def test_broken_pages_are_reported_with_file_line_and_hint(broken, line, words):
    with pytest.raises(ParseError) as err:
        parse_page(broken, "agents/前端审查.md")
    exc = err.value
    assert exc.path == "agents/前端审查.md"
    assert exc.line == line, str(exc)
    assert words in str(exc)
    assert exc.hint


def test_headings_match_loosely():
    text = SEED_PAGE.replace("## 子Agent记录", "## 子 Agent 记录").replace("## 工作记忆", "##  工作记忆 ##")
    page = parse_page(text, "p.md")
    assert set(page.sections) == {"context", "work", "subagents"}
