"""vaultmem page ensure/add/show/list on real vaults, including refusals and broken pages."""

import datetime as dt

import pytest
from conftest import git, out_json


def today() -> str:
    return dt.datetime.now().astimezone().date().isoformat()


def vm(cli, vault, *args, agent="lee"):
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args)


def head(vault):
    return git(vault.root, "rev-parse", "HEAD").strip()


def test_page_is_created_lazily_on_first_ensure_only(cli, vault):
    assert not (vault.root / "agents" / "前端审查.md").exists()
    assert out_json(vm(cli, vault, "page", "list", "--json")) == {"pages": []}
    days = {today()}  # the day the page is made on: this one, or the next if midnight passes meanwhile
    r = vm(cli, vault, "page", "ensure", "前端审查", "--category", "前端开发", "--project", "web", "--json")
    days.add(today())
    data = out_json(r)
    assert data["created"] is True and data["path"] == "agents/前端审查.md"
    text = (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8")
    assert any(text.startswith(f"---\nname: 前端审查\ncategory: 前端开发\nfirst_used: {day}\nprojects:\n- web\n"
                               "tags: [agent-memory]\ntype: agent-page\n---\n") for day in days), text
    assert "## 项目上下文" in text and "## 工作记忆" in text and "## 子Agent记录" in text
    assert git(vault.root, "log", "-1", "--format=%an|%s").strip() == "lee|page: create agents/前端审查.md on first dispatch"
    assert git(vault.root, "show", "--name-only", "--format=", "HEAD").split() == ["agents/前端审查.md"]

    again = out_json(vm(cli, vault, "page", "ensure", "前端审查", "--json"))
    assert again["created"] is False and again["changed"] is False
    before = head(vault)
    added = out_json(vm(cli, vault, "page", "ensure", "前端审查", "--project", "admin", "--json"))
    assert added["created"] is False and added["project_added"] is True
    assert "- web\n- admin\n" in (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8")
    assert head(vault) != before
    r = vm(cli, vault, "page", "ensure", "前端审查")
    assert "exists; nothing changed" in r.stdout


def test_english_vault_pages_get_english_headings(cli, en_vault):
    cli("--vault", en_vault.root, "--as", "orch", "page", "ensure", "code-reviewer")
    text = (en_vault.root / "agents" / "code-reviewer.md").read_text()
    assert "## Project context\n" in text and "## Working memory\n" in text and "## Sub-agent records\n" in text


def test_entries_get_dates_and_stable_block_ids(cli, vault):
    vm(cli, vault, "page", "ensure", "前端审查", "--project", "web")
    days = {today()}
    w = out_json(vm(cli, vault, "page", "add", "前端审查", "发现useEffect清理函数缺失", "--json"))["entry"]
    days.add(today())
    c = out_json(vm(cli, vault, "page", "add", "前端审查", "技术栈：React 18", "--section", "context", "--json"))["entry"]
    assert w["id"].startswith("m-") and w["link"] == f"[[agents/前端审查#^{w['id']}]]"
    assert c["project"] == "web"
    text = (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8")
    assert any(f"- {day} | 发现useEffect清理函数缺失 ^{w['id']}\n" in text for day in days), text
    assert f"### web\n- 技术栈：React 18 ^{c['id']}\n" in text
    shown = out_json(vm(cli, vault, "page", "show", "前端审查", "--json"))
    assert [e["id"] for e in shown["sections"]["work"]] == [w["id"]]
    assert [e["id"] for e in shown["sections"]["context"]] == [c["id"]]
    human = vm(cli, vault, "page", "show", "前端审查").stdout
    assert f"^{w['id']}" in human and "发现useEffect清理函数缺失" in human and "### web" in human
    # ids survive later edits, by us or by a human
    vm(cli, vault, "page", "add", "前端审查", "second lesson")
    path = vault.root / "agents" / "前端审查.md"
    path.write_text(path.read_text(encoding="utf-8").replace("## 工作记忆", "## 工作记忆\n人工备注"), encoding="utf-8")
    shown = out_json(vm(cli, vault, "page", "show", "前端审查", "--json"))
    assert shown["sections"]["work"][0]["id"] == w["id"]


def test_context_needs_a_project_when_the_page_has_several(cli, vault):
    vm(cli, vault, "page", "ensure", "r1", "--project", "a")
    vm(cli, vault, "page", "ensure", "r1", "--project", "b")
    r = vm(cli, vault, "page", "add", "r1", "text", "--section", "context")
    assert r.exit_code == 2 and "--project" in r.stderr and "a, b" in r.stderr
    r = vm(cli, vault, "page", "add", "r1", "new project fact", "--section", "context", "--project", "c")
    assert r.exit_code == 0
    assert "- c\n" in (vault.root / "agents" / "r1.md").read_text()


def test_text_from_stdin_and_multiline_entries(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    r = cli("--vault", vault.root, "--as", "lee", "page", "add", "r", "-", "--json", input="line one\nline two\n")
    entry = out_json(r)["entry"]
    text = (vault.root / "agents" / "r.md").read_text()
    assert f"| line one\n  line two ^{entry['id']}\n" in text
    shown = out_json(vm(cli, vault, "page", "show", "r", "--json"))
    assert shown["sections"]["work"][0]["text"] == "line one\nline two"


def test_only_the_orchestrator_or_a_human_writes_pages(cli, vault):
    r = vm(cli, vault, "page", "ensure", "前端审查", agent="ella")
    assert r.exit_code == 3 and "only the orchestrator 'lee'" in r.stderr
    assert not (vault.root / "agents" / "前端审查.md").exists()
    vm(cli, vault, "page", "ensure", "前端审查")
    page = (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8")
    # a role agent's own-page write is kept as a proposal (tests/test_review.py), not written
    r = vm(cli, vault, "page", "add", "前端审查", "I rewrite myself", agent="前端审查", )
    assert r.exit_code == 0 and "waiting for review" in r.stdout
    r = vm(cli, vault, "page", "add", "前端审查", "x", "--json", agent="ella")
    assert out_json(r)["action"] == "propose"
    assert (vault.root / "agents" / "前端审查.md").read_text(encoding="utf-8") == page
    # the human at the keyboard (no --as) is never blocked
    r = vm(cli, vault, "page", "add", "前端审查", "human note", agent=None)
    assert r.exit_code == 0
    assert git(vault.root, "log", "-1", "--format=%an").strip() != "lee"


@pytest.mark.parametrize("bad", ["../escape", "a/b", "CON", "x\u202ey", "trailing.", ".hidden", "x" * 300])
def test_unsafe_role_names_are_refused_and_nothing_is_created(cli, vault, bad):
    r = vm(cli, vault, "page", "ensure", bad)
    assert r.exit_code == 2, r.output
    assert "refused" in r.stderr
    assert sorted(p.name for p in (vault.root / "agents").iterdir()) == [".gitkeep"]
    assert not (vault.root.parent / "escape.md").exists()


def test_case_insensitive_collision_is_refused(cli, vault):
    vm(cli, vault, "page", "ensure", "Reviewer")
    r = vm(cli, vault, "page", "ensure", "reviewer")
    assert r.exit_code == 2 and "collides with the existing 'Reviewer'" in r.stderr
    r = vm(cli, vault, "page", "show", "reviewer")
    assert r.exit_code == 1 and "did you mean Reviewer" in r.stderr


def test_symlinked_agents_folder_leading_out_is_refused(cli, vault, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault.root / "agents" / ".gitkeep").unlink()
    (vault.root / "agents").rmdir()
    (vault.root / "agents").symlink_to(outside)
    r = vm(cli, vault, "page", "ensure", "r")
    assert r.exit_code == 3 and "outside the vault" in r.stderr
    assert list(outside.iterdir()) == []


def test_symlinked_page_leading_out_is_refused(cli, vault, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("do not touch\n")
    (vault.root / "agents" / "r.md").symlink_to(secret)
    r = vm(cli, vault, "page", "add", "r", "x")
    assert r.exit_code == 3
    assert secret.read_text() == "do not touch\n"


@pytest.mark.parametrize(
    "damage, line, words",
    [
        (lambda t: t.replace("category: ''", "category: [unclosed"), 4, "flow sequence started on line 3"),
        (lambda t: t.replace("## 工作记忆\n", ""), None, "no '## 工作记忆' section"),
    ],
)
def test_broken_page_is_reported_and_nothing_is_written(cli, vault, damage, line, words):
    vm(cli, vault, "page", "ensure", "r")
    path = vault.root / "agents" / "r.md"
    broken = damage(path.read_text())
    path.write_text(broken)
    git(vault.root, "commit", "-qam", "human edit")
    before = head(vault)
    for args in (["page", "add", "r", "x"], ["page", "show", "r"], ["page", "ensure", "r", "--project", "p"],
                 ["page", "ensure", "r"]):  # a dispatch to a page that exists still reads it
        r = vm(cli, vault, *args)
        assert r.exit_code == 1, args
        assert "agents/r.md:" in r.stderr and words in r.stderr and "hint:" in r.stderr
        if line:
            assert f"agents/r.md:{line}:" in r.stderr
    assert path.read_text() == broken and head(vault) == before
    listed = out_json(vm(cli, vault, "page", "list", "--json"))["pages"]
    assert listed[0]["ok"] is False and words in listed[0]["problem"]


def test_show_and_list_of_unknown_role(cli, vault):
    r = vm(cli, vault, "page", "show", "nobody")
    assert r.exit_code == 1 and "no page for role 'nobody'" in r.stderr and "page ensure nobody" in r.stderr
    r = vm(cli, vault, "page", "add", "nobody", "x", "--json")
    assert out_json(r)["error"]["type"] == "not_found"


def test_empty_entry_text_is_refused(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    r = vm(cli, vault, "page", "add", "r", "   ")
    assert r.exit_code == 2 and "empty" in r.stderr
    r = vm(cli, vault, "page", "add", "r", "x", "--section", "journal")
    assert r.exit_code == 2 and "work or context" in r.stderr


def test_page_list_counts_entries(cli, vault):
    vm(cli, vault, "page", "ensure", "前端审查", "--category", "前端开发", "--project", "web")
    vm(cli, vault, "page", "add", "前端审查", "a")
    vm(cli, vault, "page", "ensure", "后端架构")
    pages = out_json(vm(cli, vault, "page", "list", "--json"))["pages"]
    assert [p["role"] for p in pages] == sorted(["前端审查", "后端架构"])
    by = {p["role"]: p for p in pages}
    assert by["前端审查"]["entries"] == {"context": 0, "work": 1, "subagents": 0}
    assert by["前端审查"]["projects"] == ["web"]
    text = vm(cli, vault, "page", "list").stdout
    assert "前端审查  [前端开发]" in text
