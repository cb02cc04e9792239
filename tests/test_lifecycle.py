"""delegate → harvest, the audit, and the management modes ask / todo / history."""

import json

import pytest
from conftest import git, out_json

from vaultmem.parse import parse_page


def vm(cli, vault, *args, agent="lee", input=None):
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args, input=input)


FIELDS = ["--task", "分析Dashboard渲染性能", "--conclusion", "DataTable缺少React.memo", "--output", "性能报告",
          "--decision", "暂不引入react-window"]


def delegate(cli, vault, role="前端审查", task="分析Dashboard渲染性能"):
    r = vm(cli, vault, "delegate", role, "--task", task, "--json")
    assert r.exit_code == 0, r.output
    return out_json(r)


@pytest.mark.usefixtures("both_engines")
def test_delegate_records_a_pending_delegation_and_briefs_the_sub_agent(cli, vault):
    d = delegate(cli, vault)
    assert d["id"].startswith("d-") and d["role"] == "前端审查" and d["page_created"] is True
    assert d["brief"]["markdown"].startswith("[记忆简报 - 前端审查]")
    assert (vault.root / d["path"]).exists()
    assert git(vault.root, "log", "-1", "--format=%an|%s").strip() == f"lee|delegate: {d['id']} to a sub-agent of 前端审查"
    assert sorted(p.name for p in (vault.root / "agents").glob("*.md")) == ["前端审查.md"]  # no sub-agent page
    assert vm(cli, vault, "delegate", "前端审查", "--task", " ").exit_code == 2


def test_the_sub_agents_brief_is_the_roles_brief_without_the_record_just_written(vault):
    lee = vault.actor("lee")
    vault.pages.ensure("前端审查", lee)
    vault.pages.add("前端审查", "Dashboard渲染慢：大表格没有虚拟滚动", lee)
    task = "分析Dashboard渲染性能"
    before = vault.brief("前端审查", task, tokens=800).markdown
    change, b = vault.lifecycle.delegate("前端审查", task, lee, tokens=800)
    assert (vault.root / change.details["path"]).is_file() and change.details["path"] not in b.markdown
    # the record repeats the task word for word: bookkeeping, never memory
    assert b.markdown == before == vault.brief("前端审查", task, tokens=800).markdown


def test_harvest_writes_the_four_elements_and_closes_the_delegation(cli, vault):
    d = delegate(cli, vault)
    r = vm(cli, vault, "harvest", "前端审查", "--delegation", d["id"], *FIELDS, "--json")
    assert r.exit_code == 0, r.output
    h = out_json(r)
    text = (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8")
    assert "- **任务**：分析Dashboard渲染性能\n- **结论**：DataTable缺少React.memo\n- **产出**：性能报告\n" \
           f"- **关键决策**：暂不引入react-window\n\n^{h['entry']['id']}\n" in text  # the id names the whole list
    page = parse_page(text, "agents/前端审查.md")
    (rec,) = [e for e in page.entries if e.section == "subagents"]
    assert rec.fields == {"task": "分析Dashboard渲染性能", "conclusion": "DataTable缺少React.memo",
                          "output": "性能报告", "decision": "暂不引入react-window"}
    assert sorted(git(vault.root, "show", "--name-only", "--format=", "HEAD").split()) == sorted(
        ["agents/前端审查.md", d["path"]])
    again = vm(cli, vault, "harvest", "前端审查", "--delegation", d["id"], *FIELDS)
    assert again.exit_code == 2 and "already harvested" in again.stderr


def test_harvest_from_stdin_and_in_english(cli, en_vault):
    r = cli("--vault", en_vault.root, "--as", "orch", "delegate", "reviewer", "--task", "review PR 42", "--json")
    d = out_json(r)
    fields = {"task": "review PR 42", "conclusion": "two bugs", "output": "comments on the PR",
              "decision": "block until fixed"}
    r = cli("--vault", en_vault.root, "--as", "orch", "harvest", "reviewer", "--delegation", d["id"], "--stdin",
            input=json.dumps(fields))
    assert r.exit_code == 0, r.output
    text = (en_vault.root / "agents" / "reviewer.md").read_text()
    assert "- **Task**: review PR 42\n- **Conclusion**: two bugs\n" in text


@pytest.mark.parametrize("drop, words", [(["--output", "--decision"], "output (产出), decision (关键决策)"),
                                         (["--task"], "task (任务)")])
def test_a_missing_element_is_refused_and_nothing_is_written(cli, vault, drop, words):
    d = delegate(cli, vault)
    before = (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8")
    args = []
    for i in range(0, len(FIELDS), 2):
        if FIELDS[i] not in drop:
            args += FIELDS[i : i + 2]
    r = vm(cli, vault, "harvest", "前端审查", "--delegation", d["id"], *args)
    assert r.exit_code == 2 and words in r.stderr
    assert (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8") == before
    assert out_json(vm(cli, vault, "audit", "--max-age", "0", "--json"))["stale_delegations"][0]["id"] == d["id"]


def test_harvest_refusals(cli, vault):
    d = delegate(cli, vault)
    vm(cli, vault, "page", "ensure", "后端架构")
    assert vm(cli, vault, "harvest", "后端架构", "--delegation", d["id"], *FIELDS).exit_code == 2  # wrong role
    assert vm(cli, vault, "harvest", "前端审查", "--delegation", "d-20260101-000000", *FIELDS).exit_code == 1
    assert vm(cli, vault, "harvest", "前端审查", "--delegation", "../../x", *FIELDS).exit_code == 2
    r = vm(cli, vault, "harvest", "前端审查", "--delegation", d["id"], *FIELDS, "--json", agent="前端审查")
    assert out_json(r)["action"] == "propose"  # a role agent does not write its own page: it proposes


def test_audit_lists_what_needs_a_human(cli, vault):
    assert vm(cli, vault, "audit").exit_code == 0
    d = delegate(cli, vault)
    (vault.root / "inbox" / "fact.md").write_text("---\nname: x\n---\nwaiting\n", encoding="utf-8")
    (vault.root / "memories" / "bare.md").write_text("---\nname: bare\ntype: fact\n---\nno provenance\n",
                                                     encoding="utf-8")
    (vault.root / "agents" / "前端审查.md").write_text(
        (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8") + "\n", encoding="utf-8")
    import subprocess

    subprocess.run(["git", "-C", str(vault.root), "-c", "user.name=rogue", "-c",
                    "user.email=rogue@agents.vaultmem.invalid", "commit", "-qam", "rogue edit"], check=True)
    r = vm(cli, vault, "audit", "--max-age", "0", "--json")
    assert r.exit_code == 1
    a = out_json(r)
    assert [x["id"] for x in a["stale_delegations"]] == [d["id"]]
    assert [(i["path"], i["op"]) for i in a["inbox"]] == [("inbox/fact.md", "unreadable")]
    assert "not an inbox item" in a["inbox"][0]["summary"]
    assert [c["author"] for c in a["foreign_page_commits"]] == ["rogue"]
    assert a["notes_without_provenance"] == [{"path": "memories/bare.md",
                                              "missing": ["author", "author_kind", "source", "created"]}]
    assert out_json(vm(cli, vault, "audit", "--json"))["stale_delegations"] == []  # younger than 24 h


@pytest.mark.usefixtures("both_engines")
def test_ask_todo_and_history(cli, vault):
    vm(cli, vault, "page", "ensure", "前端审查")
    vm(cli, vault, "page", "ensure", "后端架构")
    vm(cli, vault, "page", "add", "前端审查", "大列表没有虚拟滚动，渲染很慢")
    vm(cli, vault, "page", "add", "前端审查", "待办：补充虚拟滚动的测试")
    vm(cli, vault, "page", "add", "后端架构", "渲染服务的超时设置")
    hits = out_json(vm(cli, vault, "ask", "前端审查", "渲染为什么慢", "--json"))["hits"]
    assert hits and all(h["agent"] in ("前端审查", None) for h in hits)  # never 后端架构's page
    d = delegate(cli, vault, task="分析虚拟滚动方案")
    todo = out_json(vm(cli, vault, "todo", "前端审查", "--json"))
    assert [i["text"] for i in todo["items"]] == ["待办：补充虚拟滚动的测试"]
    assert [x["id"] for x in todo["pending_delegations"]] == [d["id"]]
    hist = out_json(vm(cli, vault, "history", "前端审查", "--diffs", "--json"))["commits"]
    assert [c["author"] for c in hist] == ["lee", "lee", "lee"]
    assert "+- 20" in hist[0]["diff"] and "待办" in hist[0]["diff"]
    assert "page: create agents/前端审查.md" in vm(cli, vault, "history", "前端审查").stdout
    assert vm(cli, vault, "todo", "nobody").exit_code == 1


@pytest.mark.usefixtures("both_engines")
def test_ask_draws_on_the_global_notes_the_brief_cites(cli, vault):
    vm(cli, vault, "page", "ensure", "前端审查")
    vm(cli, vault, "page", "add", "前端审查", "接口联调时先确认端口")
    vm(cli, vault, "page", "ensure", "后端架构")
    vm(cli, vault, "page", "add", "后端架构", "后端端口由网关分配")
    assert vm(cli, vault, "remember", "后端端口固定8080", "--type", "fact", "--alias", "backend port",
              agent=None).exit_code == 0
    brief = out_json(vm(cli, vault, "brief", "前端审查", "--task", "后端端口", "--json"))
    asked = out_json(vm(cli, vault, "ask", "前端审查", "后端端口", "--json"))["hits"]
    cited = {i["path"] for i in brief["items"]}
    assert "memories/后端端口固定8080.md" in cited
    assert {h["path"] for h in asked} >= cited  # what the brief cites, ask finds
    assert all(h["agent"] in ("前端审查", None) for h in asked)  # never another role's page
    assert asked[0]["agent"] == "前端审查" or asked[0]["path"] == "memories/后端端口固定8080.md"
    r = vm(cli, vault, "ask", "前端审查", "backend port")
    assert "memories/后端端口固定8080" in r.stdout, r.output


@pytest.mark.parametrize("text,open_", [
    ("发现useEffect清理函数缺失，后续审查重点关注", False),  # a lesson: what to look at next time
    ("后续：补充虚拟滚动的性能基准", True),
    ("待办：升级到React 19", True),
    ("遗留问题：内存泄漏尚未定位", True),
    ("清理了遗留代码，渲染快了一倍", False),  # legacy code, cleaned up: done
    ("问题未解决，等待后端修复", True),
    ("[ ] 补测试", True),
    ("Learned to follow up on flaky tests with a retry before blaming the code", False),
    ("Follow-up: check the cache headers", True),
    ("TODO add tests for the dashboard", True),
    ("The request stayed pending until the timeout; fixed by a keep-alive", False),
    ("pending: API review by the backend team", True),
    ("CSP blocked inline scripts, so we moved them to files", False),
    ("Blocked on the design review", True),
    ("Open question: should the table paginate?", True),
])
def test_todo_lists_open_items_not_lessons_that_mention_what_comes_next(cli, vault, text, open_):
    vm(cli, vault, "page", "ensure", "前端审查")
    assert vm(cli, vault, "page", "add", "前端审查", text).exit_code == 0
    items = out_json(vm(cli, vault, "todo", "前端审查", "--json"))["items"]
    assert [i["text"] for i in items] == ([text] if open_ else [])


def test_history_diffs_name_chinese_paths_as_written(cli, vault):
    vm(cli, vault, "page", "ensure", "前端审查")
    vm(cli, vault, "page", "add", "前端审查", "大列表没有虚拟滚动")
    out = vm(cli, vault, "history", "前端审查", "--diffs").stdout
    assert "+++ b/agents/前端审查.md" in out and "--- a/agents/前端审查.md" in out
    assert "\\3" not in out  # no octal escapes (core.quotepath)


def test_harvest_of_an_unknown_delegation_names_the_pending_ones(cli, vault):
    d = delegate(cli, vault)
    r = vm(cli, vault, "harvest", "前端审查", "--delegation", "d-20200101-abcdef", *FIELDS)
    assert r.exit_code == 1
    assert "no delegation d-20200101-abcdef" in r.stderr
    assert d["id"] in r.stderr  # a fresh one too, which audit leaves out until it is old
    assert "vaultmem todo 前端审查" in r.stderr
    assert "vaultmem audit\n" not in r.stderr + "\n"
