"""`vaultmem links`: wikilinks and backlinks resolved as Obsidian resolves them."""

from conftest import out_json


def vm(cli, vault, *args, agent=None):
    return cli("--vault", vault.root, *(["--as", agent] if agent else []), *args)


def write(vault, rel, text):
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_links_and_backlinks_with_block_ids_headings_aliases_and_names(cli, vault):
    assert vm(cli, vault, "remember", "后端端口固定8080", "--type", "fact", "--name", "后端端口").exit_code == 0
    assert vm(cli, vault, "page", "ensure", "前端审查", agent="lee").exit_code == 0
    r = vm(cli, vault, "page", "add", "前端审查", "端口见 [[后端端口]]", agent="lee", )
    assert r.exit_code == 0, r.output
    page = (vault.root / "agents/前端审查.md").read_text(encoding="utf-8")
    block = page.rsplit("^", 1)[1].split()[0]
    write(vault, "wiki/ops/deploy.md", "---\naliases: [发布流程]\n---\n# Deploy\n## Rollback\nsteps\n")
    write(vault, "wiki/deploy.md", "# the shorter path wins\n")
    write(vault, "memories/review-notes.md", "\n".join([
        "---", "name: review notes", "type: fact", "---",
        f"From the review: [[agents/前端审查#^{block}|the entry]] and [[前端审查]].",
        "Deploying: [[deploy]], [[ops/deploy#Rollback]], [[发布流程]].",
        "Broken: [[前端审查#^m-000000]], [[ops/deploy#Nowhere]], [[never-written]].",
        "```", "[[inside-a-fence]]", "```", "and `[[inline-code]]` are not links.", ""]))
    r = vm(cli, vault, "links", "review-notes", "--json")
    assert r.exit_code == 0, r.output
    got = out_json(r)
    assert got["path"] == "memories/review-notes.md"
    seen = {x["link"]: (x["target"], x["problem"]) for x in got["outgoing"]}
    assert seen[f"[[agents/前端审查#^{block}|the entry]]"] == ("agents/前端审查.md", None)
    assert seen["[[前端审查]]"] == ("agents/前端审查.md", None)
    assert seen["[[deploy]]"] == ("wiki/deploy.md", None)  # two files share the name: the shortest path
    assert seen["[[ops/deploy#Rollback]]"] == ("wiki/ops/deploy.md", None)
    assert seen["[[发布流程]]"] == ("wiki/ops/deploy.md", None)  # by its alias
    assert seen["[[前端审查#^m-000000]]"][1] == "agents/前端审查.md has no block ^m-000000"
    assert seen["[[ops/deploy#Nowhere]]"][1] == "wiki/ops/deploy.md has no heading 'Nowhere'"
    assert seen["[[never-written]]"] == (None, "no file is named 'never-written'")
    assert not any("inside-a-fence" in k or "inline-code" in k for k in seen)
    assert {x["line"] for x in got["outgoing"] if x["link"] == "[[deploy]]"} == {6}
    # the role's page, by the role's name: who links to it, from where
    back = out_json(vm(cli, vault, "links", "前端审查", "--json"))["backlinks"]
    assert {(x["source"], x["line"]) for x in back} >= {("memories/review-notes.md", 5)}
    # the note's backlinks: the page entry and MEMORY.md
    sources = {x["source"] for x in out_json(vm(cli, vault, "links", "后端端口", "--json"))["backlinks"]}
    assert sources == {"agents/前端审查.md", "MEMORY.md"}
    text = vm(cli, vault, "links", "review-notes").output
    assert "(broken: no file is named 'never-written')" in text and "→ wiki/ops/deploy.md#Rollback" in text


def test_a_name_that_is_no_file_is_a_clear_error(cli, vault):
    r = vm(cli, vault, "links", "nothing-here")
    assert r.exit_code == 1 and "no file, note or role page is named 'nothing-here'" in r.output


def test_the_timeline_puts_entries_decisions_log_entries_and_notes_in_order(cli, vault):
    assert vm(cli, vault, "remember", "东京出差定在5月", "--type", "episode", "--said", "2026-04-01T09:00:00Z").exit_code == 0
    assert vm(cli, vault, "page", "ensure", "前端审查", agent="lee").exit_code == 0
    assert vm(cli, vault, "page", "add", "前端审查", "审查了 Dashboard", agent="lee").exit_code == 0
    assert vm(cli, vault, "keys", "new", "ella", agent="ella").exit_code == 0
    assert vm(cli, vault, "log", "append", "--summary", "gateway deployed", agent="ella").exit_code == 0
    assert vm(cli, vault, "decide", "--decision", "Use pnpm", "--why", "one lockfile", agent="ella").exit_code == 0
    r = vm(cli, vault, "timeline", "--json")
    assert r.exit_code == 0, r.output
    got = out_json(r)["events"]
    kinds = [e["kind"] for e in got]
    assert kinds[0] == "note" and got[0]["when"].startswith("2026-04-01")  # said in April: first
    assert {"entry", "log", "decision"} <= set(kinds)
    assert [e["when"] for e in got] == sorted(e["when"] for e in got)
    assert any(e["kind"] == "decision" and e["what"].startswith("Use pnpm") and e["link"].endswith(":1") for e in got)
    # one role: its page's entries; one agent: what it signed
    assert {e["kind"] for e in out_json(vm(cli, vault, "timeline", "前端审查", "--json"))["events"]} == {"entry"}
    assert {e["kind"] for e in out_json(vm(cli, vault, "timeline", "ella", "--json"))["events"]} == {"log", "decision"}
    late = out_json(vm(cli, vault, "timeline", "--since", "2026-04-02", "--json"))["events"]
    assert late and all(e["when"][:10] >= "2026-04-02" for e in late) and "note" not in [e["kind"] for e in late]
    assert vm(cli, vault, "timeline", "--since", "May 4").exit_code == 2
    assert vm(cli, vault, "timeline", "nobody").exit_code == 1
    assert "审查了 Dashboard" in vm(cli, vault, "timeline", "前端审查").output
