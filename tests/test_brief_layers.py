"""The brief in layers: the role's own page is always there — whatever words the task shares
with it — in its own order, cut by rank when the budget is short and saying what it left out;
the relevance gate holds only for memory outside the page. The same composition reaches the
agent through every adapter: the CLI, MCP, Claude Code's SessionStart and SubagentStart hooks,
and the Hermes provider's prefetch."""

from __future__ import annotations

import json
import re

import anyio
import pytest
from conftest import built_once, hermes_provider, out_json, run_vaultmem, vaultmem_in_process
from mcp import Client

from vaultmem import BadInput, ParseError, Vault, VaultmemError
from vaultmem.adapters.mcp import VaultServer
from vaultmem.analysis import estimate_tokens
from vaultmem.brief import BriefParts, build_brief
from vaultmem.models import Hit, IndexDoc
from vaultmem.usage import record_use

ROLE = "前端审查"
WORK = "大列表没有虚拟滚动，已警告3次"
CONTEXT = "技术栈：React 18 + Vite"
UNRELATED_TASK = "检查登录页面的表单校验"  # shares no word with the page


@pytest.fixture
def page_vault(tmp_path, made_vaults) -> Vault:
    """The issue's vault: a role with one working-memory entry and one project's context."""
    return built_once(made_vaults, ("brief_layers page",), tmp_path / "vault", _page)


def _page(vault: Vault) -> None:
    lee = vault.actor("lee")
    vault.pages.ensure(ROLE, lee)
    vault.pages.add(ROLE, WORK, lee)
    vault.pages.add(ROLE, CONTEXT, lee, section="context", project="dashboard")


def page_lines(markdown: str) -> list[str]:
    """The lines of the brief's page layer, in order."""
    lines = markdown.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("## 本角色记忆页") or x.startswith("## This role's page"))
    out = []
    for x in lines[start + 1:]:
        if not x.startswith("- "):
            break
        out.append(x)
    return out


# -- the page layer, never gated ---------------------------------------------------------------


@pytest.mark.parametrize("task", ["审查React组件性能，大列表渲染", UNRELATED_TASK])
def test_the_roles_own_entries_are_in_its_brief_whatever_the_task_shares_with_them(page_vault, task):
    b = page_vault.brief(ROLE, task, tokens=600)
    assert WORK in b.markdown and CONTEXT in b.markdown
    assert f"[[agents/{ROLE}#^" in b.markdown  # cited
    layers = {i["layer"] for i in b.items}
    assert layers == {"page"} and b.layers["page"] == {"shown": 2, "of": 2}
    # the page's own order: a project's context, then the working memory
    lines = page_lines(b.markdown)
    assert CONTEXT in lines[0] and "dashboard" in lines[0] and WORK in lines[1]


def test_the_gate_still_keeps_unrelated_global_memory_out(page_vault):
    page_vault.notes.remember("后端端口固定8080", page_vault.actor(None), "fact")
    b = page_vault.brief(ROLE, UNRELATED_TASK, tokens=600)
    assert "8080" not in b.markdown.split("## 记忆索引")[0]  # not as relevant memory (the index may list it)
    assert WORK in b.markdown
    hit = page_vault.brief(ROLE, "后端端口是多少", tokens=600)
    assert any(i["layer"] == "memory" and "8080" in i["line"] for i in hit.items)


# -- once the gate opens, the search's first hits join ------------------------------------------

CAT = "What is the name of Tom's cat?"
ADOPTED = "Tom adopted a cat from the shelter last spring"
WHISKERS = "She only comes when Tom shakes the treat tin and calls Whiskers"  # the answer: it shares only "Tom"


@pytest.fixture
def cat_vault(tmp_path, made_vaults) -> Vault:
    return built_once(made_vaults, ("brief_layers cat",), tmp_path / "en-vault", _cats, lang="en", orchestrator="orch")


def _cats(en_vault: Vault) -> None:
    human = en_vault.actor(None)
    for text in (ADOPTED, WHISKERS, "The deploy pipeline runs on Fridays after Tom's review",
                 "Tom prefers tea over coffee in the morning"):
        en_vault.notes.remember(text, human, "fact")
    en_vault.skills.add("pet-names", "Naming a new pet", human, when_to_use="when someone asks for a name")


def memory_lines(b) -> list[str]:
    return [i["line"] for i in b.items if i["layer"] == "memory"]


def test_once_a_hit_passes_the_gate_the_searchs_first_hits_join_the_brief(cat_vault):
    cut, lead = cat_vault.config.brief_min_relevance, cat_vault.config.brief_lead
    hits = list(cat_vault.search(CAT, agent="orch"))
    first = [h.doc.text for h in hits[:lead]]
    relevance = {h.doc.text: h.relevance for h in hits}
    assert relevance[ADOPTED] >= cut > relevance[WHISKERS] and WHISKERS in first  # the answer alone would be gated
    assert any(h.doc.kind == "skill" for h in hits[:lead])
    b = cat_vault.brief("orch", CAT, tokens=1500)
    assert any(WHISKERS in x for x in memory_lines(b)) and any(ADOPTED in x for x in memory_lines(b))
    # a skill among those first hits is named only when it passes the gate itself: it is followed
    assert not any(i["layer"] == "skills" for i in b.items)
    # brief.lead 0: the gate alone decides, hit by hit
    cat_vault.set_config("brief.lead", 0, cat_vault.actor(None))
    gated = Vault.open(cat_vault.root).brief("orch", CAT, tokens=1500)
    assert any(ADOPTED in x for x in memory_lines(gated)) and not any(WHISKERS in x for x in memory_lines(gated))


def test_a_task_no_hit_passes_the_gate_for_says_no_memory_and_shows_the_nearest_as_such(cat_vault):
    task = "Which morning train does Anna take?"
    hits = cat_vault.search(task, agent="orch")
    assert len(hits) and all(h.relevance < cat_vault.config.brief_min_relevance for h in hits)  # found, all weak
    b = cat_vault.brief("orch", task, tokens=1500)
    # "no memory of this", in its words and its JSON; the search's first hits under a heading that says so
    assert b.no_memory and b.to_dict()["no_memory"] is True
    assert "## Nearest memory (nothing clearly matches this task" in b.markdown and "## Relevant memory" not in b.markdown
    nearest = [h.doc.text for h in hits if h.doc.kind != "skill"][: cat_vault.config.brief_lead]
    lines = memory_lines(b)
    assert len(lines) == len(nearest) and all(text in line for text, line in zip(nearest, lines))
    assert not any(i["layer"] == "skills" for i in b.items)  # a skill is named only when it passes the gate itself
    # a brief whose gate opens says memory matched, under its own heading
    opened = cat_vault.brief("orch", CAT, tokens=1500)
    assert not opened.no_memory and "## Relevant memory" in opened.markdown and "## Nearest" not in opened.markdown


def test_the_nearest_are_not_recalls_and_a_decision_among_them_is_shown_with_them(cat_vault):
    from vaultmem.usage import read_usage

    task = "Which morning train does Anna take?"
    cat_vault.shared.new_key("orch", cat_vault.actor("orch"))
    cat_vault.shared.decide(cat_vault.actor("orch"), "Take a backup before every migration",
                            "a failed one cost us a day")
    b = cat_vault.brief("orch", task, tokens=1500)
    assert b.no_memory and "## Decisions" not in b.markdown
    assert any("backup before every migration" in x for x in memory_lines(b))  # with the nearest, under their heading
    # a recall confirms a note (forgetting): the nearest match nothing clearly, so none is recorded
    assert not any(path.startswith(("memories/", "shared/")) for path in read_usage(cat_vault.root))
    opened = cat_vault.brief("orch", CAT, tokens=1500)
    assert any(path.startswith("memories/") for path in read_usage(cat_vault.root)) and not opened.no_memory


def test_a_skill_that_passes_the_gate_does_not_open_it_for_the_notes(cat_vault):
    # written by hand and not committed: a skill is followed, so it is named only once
    # reviewed — and whether it is or not, it says nothing of what memory holds
    task = "Rotate the signing keys for Tom"
    skill = cat_vault.root / "skills" / "rotate-keys" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text("---\nname: rotate-keys\ndescription: Rotate the signing keys\n"
                     "when_to_use: when the signing keys must be rotated\n---\n\n1. Rotate the keys.\n", encoding="utf-8")
    hits = cat_vault.search(task, agent="orch")
    assert any(h.doc.kind == "skill" and h.relevance >= cat_vault.config.brief_min_relevance for h in hits)
    assert any(h.doc.kind == "note" for h in hits[:cat_vault.config.brief_lead])  # weak notes, about Tom
    b = cat_vault.brief("orch", task, tokens=1500)
    # the weak notes are only the nearest: the brief says memory has nothing on the task
    assert b.no_memory and "## Nearest memory" in b.markdown and "## Relevant memory" not in b.markdown
    assert memory_lines(b) and any("not committed" in w for w in b.warnings)


def test_the_lead_never_brings_the_roles_own_page_or_a_delegation_record_into_memory(page_vault):
    lee = page_vault.actor("lee")
    page_vault.pages.add(ROLE, "大列表渲染卡顿：先做虚拟滚动", lee)
    page_vault.notes.remember("大列表渲染要用虚拟滚动", page_vault.actor(None), "fact")  # passes: opens the lead
    page_vault.lifecycle.delegate(ROLE, "审查大列表渲染", lee)  # a record repeating the task's words
    task = "审查大列表渲染"
    first = page_vault.search(task, agent=ROLE)[:page_vault.config.brief_lead]
    assert {"entry", "note"} <= {h.doc.kind for h in first}
    b = page_vault.brief(ROLE, task, tokens=2000)
    memory = [i for i in b.items if i["layer"] == "memory"]
    assert memory and all(i["path"].startswith("memories/") for i in memory)
    assert any("虚拟滚动" in i["line"] for i in b.items if i["layer"] == "page")


def test_brief_lead_is_read_from_the_config_and_checked(cat_vault, cli):
    assert cat_vault.config.brief_lead == 5
    config = cat_vault.root / ".vaultmem" / "config.yaml"
    text = config.read_text(encoding="utf-8")
    assert "\n  lead: 5\n" in text  # the template documents it
    config.write_text(text.replace("\n  lead: 5\n", "\n  lead: -1\n"), encoding="utf-8")
    r = cli("--vault", cat_vault.root, "brief", "orch", "--task", CAT)
    assert r.exit_code != 0 and "brief.lead" in r.output and "config.yaml" in r.output


def test_another_roles_page_is_never_in_the_brief(page_vault):
    lee = page_vault.actor("lee")
    page_vault.pages.ensure("后端架构", lee)
    page_vault.pages.add("后端架构", "大列表接口要分页，已警告3次", lee)
    b = page_vault.brief(ROLE, "大列表渲染", tokens=2000)
    assert "分页" not in b.markdown and WORK in b.markdown
    other = page_vault.brief("后端架构", "大列表渲染", tokens=2000)
    assert WORK not in other.markdown and "分页" in other.markdown


def test_a_project_named_by_the_task_or_given_shows_only_that_projects_context(page_vault):
    lee = page_vault.actor("lee")
    page_vault.pages.add(ROLE, "管理后台用 Vue 3", lee, section="context", project="admin-portal")
    both = page_vault.brief(ROLE, UNRELATED_TASK, tokens=2000)
    assert CONTEXT in both.markdown and "Vue 3" in both.markdown  # no project named: all of them
    named = page_vault.brief(ROLE, "检查admin-portal登录页面", tokens=2000)
    assert "Vue 3" in named.markdown and CONTEXT not in named.markdown
    given = page_vault.brief(ROLE, UNRELATED_TASK, tokens=2000, project="dashboard")
    assert CONTEXT in given.markdown and "Vue 3" not in given.markdown
    assert WORK in named.markdown and WORK in given.markdown  # working memory is not per project


def test_a_latin_project_name_counts_only_as_a_whole_word(en_vault):
    orch = en_vault.actor("orch")
    en_vault.pages.ensure("reviewer", orch)
    en_vault.pages.add("reviewer", "Go services use gRPC", orch, section="context", project="api")
    en_vault.pages.add("reviewer", "Nightly jobs run in UTC", orch, section="context", project="jobs")
    b = en_vault.brief("reviewer", "a rapid check of the login form", tokens=2000)
    assert "gRPC" in b.markdown and "UTC" in b.markdown  # "rapid" names no project: all of them
    b = en_vault.brief("reviewer", "check the api login form", tokens=2000)
    assert "gRPC" in b.markdown and "UTC" not in b.markdown


# -- a short budget: cut by rank inside the layer, and said ---------------------------------------


def many_entries(vault: Vault, n: int = 30) -> list[str]:
    """``n`` working-memory entries, the i-th dated i days after 2025-01-01: their ids, oldest first."""
    import datetime as dt

    page = vault.root / "agents" / f"{ROLE}.md"
    text = page.read_text(encoding="utf-8")
    day = dt.date(2025, 1, 1)
    lines = "".join(f"- {day + dt.timedelta(days=i)} | 第{i}条经验：组件{i}要注意状态管理 ^m-e{i:05d}\n"
                    for i in range(n))
    page.write_text(text.replace("## 工作记忆\n", "## 工作记忆\n" + lines, 1), encoding="utf-8")
    return [f"m-e{i:05d}" for i in range(n)]


def test_a_short_budget_keeps_the_newest_entries_and_says_how_many_it_left_out(vault):
    vault.pages.ensure(ROLE, vault.actor("lee"))
    ids = many_entries(vault)
    b = vault.brief(ROLE, UNRELATED_TASK, tokens=700)
    shown = [i["entry_id"] for i in b.items if i["layer"] == "page"]
    assert 0 < len(shown) < 30
    assert shown == ids[::-1][: len(shown)]  # newest first
    left = 30 - len(shown)
    assert f"另有 {left} 条本页条目未显示：`vaultmem page show {ROLE}`" in b.markdown
    assert b.layers["page"] == {"shown": len(shown), "of": 30}
    assert b.tokens <= 700 == b.budget


def test_relevance_to_the_task_only_reorders_the_page(vault):
    vault.pages.ensure(ROLE, vault.actor("lee"))
    ids = many_entries(vault)
    page = vault.root / "agents" / f"{ROLE}.md"
    page.write_text(page.read_text(encoding="utf-8").replace("组件3要注意状态管理", "虚拟滚动列表要预估行高"),
                    encoding="utf-8")
    b = vault.brief(ROLE, "虚拟滚动列表的行高", tokens=700)
    shown = [i["entry_id"] for i in b.items if i["layer"] == "page"]
    assert shown[0] == ids[3]  # an old entry the task is about comes first (then its neighbours, by their
    near = set(ids[1:6])  # text: entries are searched with their neighbours' text at half weight) …
    rest = [e for e in shown[1:] if e not in near]
    assert rest and rest == [e for e in ids[::-1] if e not in near][: len(rest)]  # … then newest first


def test_entries_of_one_day_are_ordered_by_how_often_they_were_recalled(vault):
    vault.pages.ensure(ROLE, vault.actor("lee"))
    page = vault.root / "agents" / f"{ROLE}.md"
    text = page.read_text(encoding="utf-8")
    lines = "".join(f"- 2026-02-01 | 同一天的第{i}条经验，关于缓存和请求合并 ^m-d{i:05d}\n" for i in range(1, 20))
    lines = "- 2026-02-01 | 灰度发布要先开功能开关 ^m-d00000\n" + lines
    page.write_text(text.replace("## 工作记忆\n", "## 工作记忆\n" + lines, 1), encoding="utf-8")
    for _ in range(3):  # the first entry of the day was recalled three times
        record_use(vault.root, [f"agents/{ROLE}.md#^m-d00000"], "search")
    b = vault.brief(ROLE, UNRELATED_TASK, tokens=500)
    shown = [i["entry_id"] for i in b.items if i["layer"] == "page"]
    assert 0 < len(shown) < 20 and shown[0] == "m-d00000"
    assert shown[1:] == [f"m-d{i:05d}" for i in range(19, 0, -1)][: len(shown) - 1]  # then the later line first


def test_a_page_too_big_for_its_share_leaves_room_for_the_other_layers(vault):
    vault.pages.ensure(ROLE, vault.actor("lee"))
    many_entries(vault, 200)
    vault.notes.remember("表单校验统一用 zod，登录页也一样", vault.actor(None), "decision")
    b = vault.brief(ROLE, UNRELATED_TASK, tokens=1500)
    assert any(i["layer"] == "memory" and "zod" in i["line"] for i in b.items)
    assert 0 < b.layers["page"]["shown"] < 200 and b.tokens <= 1500


def distinct(seed: int, n: int = 12) -> str:
    """Chinese text that shares little with any other seed's (brief merges near-duplicates)."""
    import random

    rng = random.Random(seed)
    return "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(n))


def test_the_shares_come_from_the_config(vault, cli):
    vault.pages.ensure(ROLE, vault.actor("lee"))
    many_entries(vault, 200)
    for i in range(40):
        vault.notes.remember(f"登录页表单校验：{distinct(i)}", vault.actor(None), "fact")
    default = vault.brief(ROLE, UNRELATED_TASK, tokens=3000)
    vault.set_config("brief.shares.page", 0.05, vault.actor(None))
    vault.set_config("brief.shares.memory", 0.9, vault.actor(None))
    vault.set_config("brief.max_items", 40, vault.actor(None))
    small = Vault.open(vault.root).brief(ROLE, UNRELATED_TASK, tokens=3000)
    assert small.layers["page"]["shown"] < default.layers["page"]["shown"]
    assert small.layers["memory"]["shown"] > default.layers["memory"]["shown"]


@pytest.mark.parametrize("setting, value, why", [
    ("brief.shares.page", 1.5, "it must be from 0 to 1"),
    ("brief.shares.pages", 0.1, "names no layer of a brief"),
])
def test_a_bad_share_is_refused_and_named(vault, setting, value, why):
    with pytest.raises(VaultmemError) as err:
        vault.set_config(setting, value, vault.actor(None))
    assert why in str(err.value)


def test_a_hand_edited_share_that_breaks_the_config_names_its_line(vault, cli):
    config = vault.root / ".vaultmem" / "config.yaml"
    text = config.read_text(encoding="utf-8").replace("    page: 0.35", "    page: lots")
    config.write_text(text, encoding="utf-8")
    line = text.splitlines().index("    page: lots") + 1
    r = cli("brief", ROLE, "--task", "x", "--vault", vault.root)
    assert r.exit_code != 0 and f"config.yaml:{line}" in r.output and "brief.shares.page" in r.output


# -- the guarantee, over generated layers --------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5)
LATIN = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
TEXT = st.lists(st.one_of(CJK, LATIN, st.sampled_from(["~~~", "\n", "😀"])), min_size=1, max_size=200).map("".join)


def entry_hit(n: int, text: str, section: str) -> Hit:
    doc = IndexDoc(id=f"agents/r.md#^m-{n:06x}", path="agents/r.md", kind="entry", text=text, agent="r",
                   section=section, date="2026-05-08" if section != "context" else None, entry_id=f"m-{n:06x}",
                   project="p" if section == "context" else None)
    return Hit(doc=doc, score=0.0)


@settings(max_examples=200)
@given(page=st.lists(st.tuples(TEXT, st.sampled_from(["context", "work", "subagents"])), max_size=40),
       notes=st.lists(TEXT, max_size=15), index=st.lists(TEXT, max_size=30), live=st.lists(TEXT, max_size=6),
       budget=st.integers(120, 4000), lang=st.sampled_from(["zh", "en"]),
       shares=st.lists(st.floats(0, 0.3), min_size=7, max_size=7))
def test_no_layered_brief_exceeds_its_budget_and_a_cut_page_says_so(page, notes, index, live, budget, lang, shares):
    from vaultmem.brief import LAYERS

    hits = [Hit(doc=IndexDoc(id=f"memories/n{i}.md", path=f"memories/n{i}.md", kind="note", text=t), score=1.0)
            for i, t in enumerate(notes)]
    parts = BriefParts(agent="r", task="t", identity="I review code.", hits=hits, index_lines=index, live=live,
                       lang=lang, page=[entry_hit(n, t, s) for n, (t, s) in enumerate(page)], page_path="agents/r.md",
                       shares=dict(zip(LAYERS, shares)))
    try:
        b = build_brief(parts, budget)
    except BadInput:
        assert budget < 120
        return
    assert b.tokens == estimate_tokens(b.markdown) <= budget
    shown = b.layers.get("page", {}).get("shown", 0)
    if page and shown < len(page) and shown:
        assert re.search(rf"{len(page) - shown}\D.*vaultmem page show r", b.markdown)
    assert [i["entry_id"] for i in b.items if i["layer"] == "page"] == sorted(
        [i["entry_id"] for i in b.items if i["layer"] == "page"],
        key=lambda e: ({"context": 0, "work": 1, "subagents": 2}[page[int(e[2:], 16)][1]], int(e[2:], 16)))


def test_a_budget_that_can_hold_the_page_holds_all_of_it(vault):
    """Figure: the role's own entries are in every brief whose budget can hold them — all
    of them when its share of the budget can, and never none when one line could fit."""
    from vaultmem.brief import DEFAULT_SHARES

    vault.pages.ensure(ROLE, vault.actor("lee"))
    many_entries(vault, 12)
    for i in range(30):
        vault.notes.remember(f"登录页表单校验规则第{i}条", vault.actor(None), "fact")
    whole = vault.brief(ROLE, UNRELATED_TASK, tokens=100_000)
    page_cost = sum(estimate_tokens(i["line"] + "\n") for i in whole.items if i["layer"] == "page") + 40
    head = 120  # the header, the task and the closing fence
    for budget in range(int(page_cost / DEFAULT_SHARES["page"]) + head, 8000, 400):
        b = vault.brief(ROLE, UNRELATED_TASK, tokens=budget)
        assert b.layers["page"]["shown"] == 12, (budget, b.markdown)
    seen = False  # once a page line fits, a larger budget never shows none
    for budget in range(130, 1500, 10):
        try:
            b = vault.brief(ROLE, UNRELATED_TASK, tokens=budget)
        except BadInput:
            continue  # not even the header fits
        shown = b.layers.get("page", {}).get("shown", 0)
        assert shown or not seen, (budget, b.markdown)
        seen = seen or bool(shown)
    assert seen


def test_a_broken_page_is_said_in_the_brief_and_nothing_else_breaks(page_vault):
    page = page_vault.root / "agents" / f"{ROLE}.md"
    page.write_text(page.read_text(encoding="utf-8").replace("## 工作记忆", "## 记忆"), encoding="utf-8")
    b = page_vault.brief(ROLE, UNRELATED_TASK, tokens=800)
    assert f"agents/{ROLE}.md" in b.markdown and "无法读取" in b.markdown
    assert any(f"agents/{ROLE}.md" in w for w in b.warnings)
    assert "page" not in b.layers


# -- every adapter hands over the same composition ---------------------------------------------------


def test_cli_brief_and_dispatch(page_vault):
    r = vaultmem_in_process("brief", ROLE, "--task", UNRELATED_TASK, "--tokens", "600", "--vault", page_vault.root)
    assert r.returncode == 0, r.stderr
    assert WORK in r.stdout and CONTEXT in r.stdout
    r = vaultmem_in_process("--json", "dispatch", ROLE, "--task", UNRELATED_TASK, "--project", "dashboard",
                            "--as", "lee", "--vault", page_vault.root)
    data = json.loads(r.stdout)
    assert data["layers"]["page"] == {"shown": 2, "of": 2} and WORK in data["markdown"]


def test_mcp_brief_and_dispatch(page_vault):
    server = VaultServer(page_vault, agent="lee")

    async def steps():
        async with Client(server) as c:
            got = await c.call_tool("brief", {"agent": ROLE, "task": UNRELATED_TASK, "tokens": 600})
            sent = await c.call_tool("dispatch", {"role": ROLE, "task": UNRELATED_TASK, "project": "dashboard"})
            return got, sent

    got, sent = anyio.run(steps)
    for result in (got, sent):
        assert not result.is_error
        text = "\n".join(c.text for c in result.content)
        assert WORK in text and CONTEXT in text
        assert result.structured_content["layers"]["page"]["shown"] == 2


def test_claude_code_subagent_start_hands_the_sub_agent_its_roles_page(page_vault, tmp_path):
    page_vault.set_config("hooks.claude.agent", "lee", page_vault.actor(None))
    data = json.dumps({"session_id": "s1", "hook_event_name": "SubagentStart", "agent_id": "a1",
                       "agent_type": ROLE, "cwd": str(tmp_path), "transcript_path": str(tmp_path / "none.jsonl")})
    r = run_vaultmem("hook", "claude", "SubagentStart", "--vault", page_vault.root, stdin=data)
    assert r.returncode == 0, r.stderr
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert WORK in context and CONTEXT in context
    # the delegation the hook has just recorded repeats the task: bookkeeping, not memory
    assert "shared/delegations/" not in context and page_vault.lifecycle.delegations(role=ROLE, status="pending")


def test_claude_code_session_start_hands_the_agent_its_page(page_vault, tmp_path):
    data = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup",
                       "cwd": str(tmp_path), "transcript_path": str(tmp_path / "none.jsonl")})
    r = run_vaultmem("hook", "claude", "SessionStart", "--as", ROLE, "--vault", page_vault.root, stdin=data)
    assert r.returncode == 0, r.stderr
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert WORK in context and CONTEXT in context


def test_hermes_prefetch_hands_the_agent_its_page(page_vault, tmp_path, monkeypatch):
    provider = hermes_provider(page_vault.root, tmp_path / "hermes", monkeypatch, "s1", agent=ROLE)
    try:
        brief = provider.prefetch(UNRELATED_TASK, session_id="s1")
    finally:
        provider.shutdown()
    assert WORK in brief and CONTEXT in brief


NEAR = "登录接口限流为每分钟60次"  # shares 登录 with UNRELATED_TASK, and little else: under the gate


def test_every_adapter_says_no_memory_and_shows_the_nearest_as_such(page_vault, tmp_path, monkeypatch):
    page_vault.notes.remember(NEAR, page_vault.actor(None), "fact")
    [hit] = [h for h in page_vault.search(UNRELATED_TASK, agent=ROLE) if h.doc.kind == "note"]
    assert 0 < hit.relevance < page_vault.config.brief_min_relevance
    heading = "## 最接近的记忆（没有一条明确与此任务相关"
    data = out_json(vaultmem_in_process("--json", "brief", ROLE, "--task", UNRELATED_TASK, "--tokens", "600",
                                        "--vault", page_vault.root))
    assert data["no_memory"] is True and heading in data["markdown"] and NEAR in data["markdown"]
    assert WORK in data["markdown"]  # the role's page, as ever
    server = VaultServer(page_vault, agent="lee")

    async def steps():
        async with Client(server) as c:
            return [await c.call_tool("brief", {"agent": ROLE, "task": task, "tokens": 600})
                    for task in (UNRELATED_TASK, "登录接口限流多少")]

    weak, matched = anyio.run(steps)
    assert weak.structured_content["no_memory"] is True and heading in weak.structured_content["markdown"]
    assert matched.structured_content["no_memory"] is False and "## 相关记忆" in matched.structured_content["markdown"]
    provider = hermes_provider(page_vault.root, tmp_path / "hermes", monkeypatch, "s1", agent=ROLE)
    try:
        assert heading in provider.prefetch(UNRELATED_TASK, session_id="s1")
    finally:
        provider.shutdown()
    # a session that asked nothing yet is briefed for a placeholder: no nearest notes for it
    payload = json.dumps({"session_id": "s2", "hook_event_name": "SessionStart", "source": "startup",
                          "cwd": str(tmp_path / "登录"), "transcript_path": str(tmp_path / "none.jsonl")})
    r = run_vaultmem("hook", "claude", "SessionStart", "--as", ROLE, "--vault", page_vault.root, stdin=payload)
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert r.returncode == 0 and WORK in context and "## 最接近的记忆" not in context


def test_a_page_that_cannot_be_parsed_is_an_error_only_for_its_own_commands(page_vault):
    page = page_vault.root / "agents" / f"{ROLE}.md"
    page.write_text("---\nname: [\n---\n", encoding="utf-8")
    with pytest.raises(ParseError):
        page_vault.pages.read(ROLE)
    assert page_vault.brief("其他角色", UNRELATED_TASK, tokens=600).tokens <= 600


def test_a_page_edited_by_hand_between_two_briefs_of_one_process_is_read_as_it_is_now(page_vault):
    """A warm process keeps each page's last parse while its text is the same: the page
    edited in an editor between two briefs — an entry added, then its YAML broken — is
    read as it is now: the new entry shown, then the broken page named with its line."""
    first = page_vault.brief(ROLE, task=UNRELATED_TASK)
    assert any(WORK in x for x in page_lines(first.markdown))
    path = page_vault.root / "agents" / f"{ROLE}.md"
    text = path.read_text(encoding="utf-8")
    assert page_vault.brief(ROLE, task=UNRELATED_TASK).markdown == first.markdown  # the same text, the same brief
    added = "表格组件缺少空状态，已提醒一次"
    at = next(n for n, x in enumerate(text.splitlines(keepends=True)) if WORK in x)
    lines = text.splitlines(keepends=True)
    path.write_text("".join(lines[:at + 1] + [f"- 2026-12-08 | {added}\n"] + lines[at + 1:]), encoding="utf-8")
    assert any(added in x for x in page_lines(page_vault.brief(ROLE, task=UNRELATED_TASK).markdown))
    path.write_text(text.replace("---\n", "---\nrole: [unclosed\n", 1), encoding="utf-8")
    broken = page_vault.brief(ROLE, task=UNRELATED_TASK)
    assert [(p["path"], p["line"]) for p in broken.skipped_files] == [(f"agents/{ROLE}.md", 3)]
    assert added not in broken.markdown and f"agents/{ROLE}.md" in broken.markdown  # the brief says so


def test_a_role_pages_parse_is_kept_while_its_text_is_the_same_and_only_read():
    """The parse a warm process keeps: the same text gives the very same parse (each
    PageDocs still counts the documents it makes), another text a new one, and a page
    larger than all that is kept is parsed each time."""
    from vaultmem.parse.records import PARSED_CHARS, page_docs

    rel = "agents/缓存审查.md"
    text = ("---\nname: 缓存审查\ntype: agent-page\n---\n# 缓存审查\n\n## 项目上下文\n\n## 工作记忆\n"
            "- 2026-12-07 | 缓存击穿要加互斥锁 ^m-aaaaaa\n\n## 子Agent记录\n")
    first, second = page_docs(rel, text), page_docs(rel, text)
    assert first.page is second.page
    first.doc(0)
    assert (first.made, second.made) == (1, 0)
    changed = page_docs(rel, text.replace("互斥锁", "逻辑过期"))
    assert changed.page is not first.page and "逻辑过期" in changed.doc(0).text
    huge = text.replace("## 子Agent记录\n", "x" * PARSED_CHARS + "\n\n## 子Agent记录\n")
    assert page_docs(rel, huge).page is not page_docs(rel, huge).page
