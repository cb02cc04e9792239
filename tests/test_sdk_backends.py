"""The SDK backends: the Anthropic memory tool and the LangGraph store over a real vault.

Each SDK is an extra (``pip install -e '.[anthropic]'``, ``'.[langgraph]'``); the tests for
one that is not installed are skipped, saying which extra brings it. The memory tool is
driven as the SDK's tool runner drives it — ``tool.call(input)`` with the
``memory_20250818`` command objects — and once through the runner itself, the API's
answers served in process (no network).
"""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import string
import subprocess
import sys

import pytest

from conftest import git
from vaultmem import Vault



def importable(module: str) -> bool:
    """Whether ``module`` imports (``langgraph`` alone may be a namespace other packages left)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


HAS_ANTHROPIC = importable("anthropic.lib.tools")
HAS_LANGGRAPH = importable("langgraph.store.base") and importable("langgraph.graph")
needs_anthropic = pytest.mark.skipif(not HAS_ANTHROPIC, reason="the anthropic SDK is not installed "
                                     "(pip install -e '.[anthropic]')")
needs_langgraph = pytest.mark.skipif(not HAS_LANGGRAPH, reason="langgraph is not installed "
                                     "(pip install -e '.[langgraph]')")


def token() -> str:
    rng = random.Random(14)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def head(v: Vault) -> str:
    return git(v.root, "rev-parse", "HEAD").strip()


def pending(v: Vault) -> list:
    return v.inbox.items("pending")


def human(v: Vault):
    return v.actor(None)


def test_vaultmem_works_without_either_sdk_and_each_backend_names_its_extra(vault):
    """With the SDKs unimportable (as where neither extra is installed): the CLI and the
    library work, and importing a backend says which extra brings what it needs."""
    code = ("import sys\nsys.modules.update({'anthropic': None, 'langgraph': None})\n"
            "from vaultmem import Vault\nv = Vault.open(sys.argv[1])\n"
            "v.notes.remember('A fact.', v.actor('ella'), 'fact')\nprint(len(v.inbox.items()))\n"
            "for m in ('anthropic_memory', 'langgraph_store'):\n"
            "    try:\n        __import__('vaultmem.adapters.' + m)\n"
            "    except ImportError as e:\n        print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "1" and "pip install 'vaultmem[anthropic]'" in lines[1] and "[langgraph]" in lines[2]


def test_both_backends_find_the_vault_and_their_agent_the_same_way(vault, monkeypatch):
    """The vault (a path, an open Vault, or found as the CLI does) and the agent (the
    argument, else $VAULTMEM_AGENT, checked, never the human): one helper for both SDKs,
    which works without either installed."""
    from vaultmem.adapters.sdk import vault_and_agent
    from vaultmem.errors import BadInput, VaultmemError

    monkeypatch.delenv("VAULTMEM_AGENT", raising=False)
    with pytest.raises(BadInput) as info:
        vault_and_agent(vault.root, None, "the store")
    assert info.value.field == "agent" and info.value.message.startswith("the store writes as an agent")
    assert "VAULTMEM_AGENT" in info.value.hint
    with pytest.raises(VaultmemError, match="agent name"):
        vault_and_agent(vault.root, "../lee", "the store")
    assert vault_and_agent(vault, "ella", "the store") == (vault.root, "ella")
    monkeypatch.setenv("VAULTMEM_AGENT", "max")
    assert vault_and_agent(str(vault.root), "", "the memory tool") == (vault.root, "max")
    monkeypatch.setenv("VAULTMEM_VAULT", str(vault.root))
    assert vault_and_agent(None, None, "the store")[0] == vault.root


# -- the Anthropic memory tool ---------------------------------------------------------------------
def memory_tool(v: Vault, agent: str = "ella"):
    from vaultmem.adapters.anthropic_memory import VaultMemoryTool

    return VaultMemoryTool(v.root, agent=agent)


def refused(tool, command: dict) -> str:
    """The ToolError text the runner would send back as ``is_error``: never a traceback."""
    from anthropic.lib.tools import ToolError

    with pytest.raises(ToolError) as info:
        tool.call(command)
    text = str(info.value)
    assert "Traceback" not in text and 'File "' not in text, text
    return text


@needs_anthropic
def test_a_created_memory_is_a_proposal_view_marks_it_pending_and_approval_makes_it_memory(vault):
    tool = memory_tool(vault)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    first = tool.call({"command": "view", "path": "/memories"})
    assert first.startswith("Here're the files and directories up to 2 levels deep in /memories")

    said = tool.call({"command": "create", "path": "/memories/coffee.md",
                      "file_text": "The user prefers coffee to tea.\nEspresso, no sugar.\n"})
    items = pending(vault)
    assert len(items) == 1 and items[0].proposed_by == "ella" and items[0].op == "add"
    assert items[0].meta["note"]["name"] == "coffee" and "Espresso" in items[0].text
    assert items[0].id in said and "review" in said
    assert not (vault.root / "memories/coffee.md").exists()  # nothing is memory before a human says so

    listing = tool.call({"command": "view", "path": "/memories"})
    line = next(x for x in listing.splitlines() if "/memories/coffee.md" in x)
    assert "pending review" in line and items[0].id in line
    shown = tool.call({"command": "view", "path": "/memories/coffee.md"})
    assert "PENDING REVIEW" in shown.splitlines()[0] and "     1\tThe user prefers coffee to tea." in shown
    assert "already proposed" in refused(tool, {"command": "create", "path": "/memories/coffee.md",
                                                 "file_text": "again"})
    assert len(pending(vault)) == 1
    # another agent does not see ella's proposal
    assert "/memories/coffee.md" not in memory_tool(vault, "max").call({"command": "view", "path": "/memories"})

    vault.inbox.approve(items[0].id, human(vault))
    shown = tool.call({"command": "view", "path": "/memories/coffee.md", "view_range": [2, -1]})
    assert "PENDING" not in shown and shown.splitlines()[1:] == ["     2\tEspresso, no sugar."]
    assert "already exists" in refused(tool, {"command": "create", "path": "/memories/coffee.md", "file_text": "x"})
    assert "inbox: ella proposes add" in git(vault.root, "log", "--format=%s")


@needs_anthropic
def test_edits_deletes_and_renames_of_a_note_are_proposals_and_the_note_stays_as_it_was(vault):
    vault.notes.remember("The backend listens on 8080.", human(vault), "fact", name="backend-port")
    vault.notes.remember("Deploys go out on Tuesdays.", human(vault), "procedure", name="deploy-day")
    note = vault.root / "memories/backend-port.md"
    before = note.read_text(encoding="utf-8")
    tool = memory_tool(vault)

    said = tool.call({"command": "str_replace", "path": "/memories/backend-port.md",
                      "old_str": "8080", "new_str": "9090"})
    assert "review" in said and note.read_text(encoding="utf-8") == before
    [item] = pending(vault)
    assert (item.op, item.meta["target"], item.text) == ("replace", "memories/backend-port",
                                                         "The backend listens on 9090.")
    assert item.meta["note"]["type"] == "fact" and item.meta["note"]["name"] == "backend-port"
    shown = tool.call({"command": "view", "path": "/memories/backend-port.md"})
    assert item.id in shown.splitlines()[0] and "8080" in shown  # approved memory, the change marked
    assert "already waits" in refused(tool, {"command": "insert", "path": "/memories/backend-port.md",
                                             "insert_line": 0, "insert_text": "x"})
    assert "did not appear verbatim" in refused(tool, {"command": "str_replace", "path": "/memories/deploy-day.md",
                                                        "old_str": "Mondays", "new_str": "x"})

    tool.call({"command": "insert", "path": "/memories/deploy-day.md", "insert_line": 1,
               "insert_text": "Never on Fridays."})
    assert "already waits" in refused(tool, {"command": "delete", "path": "/memories/backend-port.md"})
    vault.notes.remember("The office is in Leeds.", human(vault), "fact", name="office")
    tool.call({"command": "delete", "path": "/memories/office.md"})
    ops = sorted((i.op, i.meta.get("target"), i.text) for i in pending(vault))
    assert ("replace", "memories/deploy-day", "Deploys go out on Tuesdays.\nNever on Fridays.") in ops
    assert any(op == "remove" and target == "memories/office" for op, target, _ in ops)
    assert "delete it" in tool.call({"command": "view", "path": "/memories"}).split("office.md", 1)[1].splitlines()[0]
    assert "waits" in tool.call({"command": "view", "path": "/memories"}).split("deploy-day.md", 1)[1].splitlines()[0]

    vault.notes.remember("Standups are at ten.", human(vault), "fact", name="standup")
    tool.call({"command": "rename", "old_path": "/memories/standup.md", "new_path": "/memories/standup-time.md"})
    renamed = [i for i in pending(vault) if i.meta.get("target") == "memories/standup"][0]
    assert renamed.op == "replace" and renamed.meta["note"]["name"] == "standup-time"
    assert sorted(p.name for p in (vault.root / "memories").glob("*.md")) == [
        "backend-port.md", "deploy-day.md", "office.md", "standup.md"]  # all as they were

    vault.inbox.approve(renamed.id, human(vault))
    assert (vault.root / "memories/standup-time.md").is_file() and not (vault.root / "memories/standup.md").exists()
    assert "Standups are at ten." in tool.call({"command": "view", "path": "/memories/standup-time.md"})


@needs_anthropic
def test_role_pages_are_read_by_their_role_and_an_insert_is_an_entry_through_the_gate(vault):
    vault.lifecycle.dispatch("reviewer", "review the API", vault.actor("lee"))
    page = vault.root / "agents/reviewer.md"
    before = page.read_text(encoding="utf-8")
    tool = memory_tool(vault, "reviewer")

    listing = tool.call({"command": "view", "path": "/memories/agents"})
    assert "/memories/agents/reviewer.md" in listing
    assert "reviewer" in tool.call({"command": "view", "path": "/memories/agents/reviewer.md"})
    said = tool.call({"command": "insert", "path": "/memories/agents/reviewer.md", "insert_line": 3,
                      "insert_text": "The API review found two unpaginated endpoints."})
    [item] = pending(vault)
    assert item.op == "page-add" and item.meta["role"] == "reviewer" and item.id in said
    assert page.read_text(encoding="utf-8") == before
    for command in ({"command": "str_replace", "path": "/memories/agents/reviewer.md", "old_str": "reviewer",
                     "new_str": "x"},
                    {"command": "delete", "path": "/memories/agents/reviewer.md"},
                    {"command": "rename", "old_path": "/memories/agents/reviewer.md",
                     "new_path": "/memories/agents/other.md"},
                    {"command": "create", "path": "/memories/agents/newrole.md", "file_text": "x"}):
        assert "role page" in refused(tool, command)
    assert "another role's page" in refused(memory_tool(vault, "ella"), {"command": "view",
                                                                         "path": "/memories/agents/reviewer.md"})
    assert "/memories/agents/reviewer.md" not in memory_tool(vault, "ella").call({"command": "view",
                                                                                   "path": "/memories"})

    orchestrator = memory_tool(vault, "lee")  # the orchestrator writes a page entry at once, as page add does
    orchestrator.call({"command": "insert", "path": "/memories/agents/reviewer.md", "insert_line": 0,
                       "insert_text": "Pagination is the next step."})
    assert "Pagination is the next step." in page.read_text(encoding="utf-8") and len(pending(vault)) == 1


@needs_anthropic
def test_escapes_huge_text_broken_yaml_and_bad_commands_are_tool_errors_and_nothing_is_written(vault, tmp_path):
    vault.notes.remember("Plain fact.", human(vault), "fact", name="plain")
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: outside\ntype: fact\n---\nsecret plans\n", encoding="utf-8")
    os.symlink(outside, vault.root / "memories/link.md")
    (vault.root / "memories/broken.md").write_text("---\nname: [unclosed\ntype: fact\n---\nbody\n", encoding="utf-8")
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-qm", "hand edits")
    start = head(vault)
    tool = memory_tool(vault)

    bad_paths = ["/etc/passwd", "memories/plain.md", "/memories/../.vaultmem/config.yaml", "/memoriesx/a.md",
                 "/memories/./plain.md", "/memories/a/../../b.md", "/memories/plain.md\x00.txt", "/memories//plain.md",
                 "/memories/sub/note.md", "/memories/notes.txt", "/memories/Coffee Prefs.md", "/memories/.hidden.md"]
    for path in bad_paths:
        for command in ({"command": "view", "path": path},
                        {"command": "create", "path": path, "file_text": "x"},
                        {"command": "delete", "path": path}):
            text = refused(tool, command)
            assert "/memories" in text, (path, text)
    assert "symlink" in refused(tool, {"command": "view", "path": "/memories/link.md"})
    assert "secret plans" not in tool.call({"command": "view", "path": "/memories"})
    assert "symlink" in refused(tool, {"command": "str_replace", "path": "/memories/link.md",
                                       "old_str": "secret", "new_str": "x"})
    broken = refused(tool, {"command": "view", "path": "/memories/broken.md"})
    assert re.search(r"memories/broken\.md:\d+: ", broken)
    edit = refused(tool, {"command": "str_replace", "path": "/memories/broken.md", "old_str": "body", "new_str": "x"})
    assert re.search(r"memories/broken\.md:\d+: ", edit)
    listing = tool.call({"command": "view", "path": "/memories"})
    assert "/memories/plain.md" in listing and "cannot be read" in listing.split("broken.md", 1)[1].splitlines()[0]

    huge = "word " * 300_000  # 1.5 MB, past memory.max_note_bytes
    assert "max_note_bytes" in refused(tool, {"command": "create", "path": "/memories/huge.md", "file_text": huge})
    assert "max_note_bytes" in refused(tool, {"command": "str_replace", "path": "/memories/plain.md",
                                              "old_str": "Plain", "new_str": huge})
    assert "/memories" in refused(tool, {"command": "delete", "path": "/memories"})
    assert "/memories" in refused(tool, {"command": "rename", "old_path": "/memories/plain.md",
                                         "new_path": "/tmp/plain.md"})
    assert "view_range" in refused(tool, {"command": "view", "path": "/memories/plain.md", "view_range": [3, "x"]})
    assert "insert_line" in refused(tool, {"command": "insert", "path": "/memories/plain.md", "insert_line": 9,
                                           "insert_text": "x"})
    assert "file_text" in refused(tool, {"command": "create", "path": "/memories/x.md"})
    assert "not a memory command" in refused(tool, {"command": "format", "path": "/memories"})
    assert "does not exist" in refused(tool, {"command": "view", "path": "/memories/none.md"})
    with pytest.raises(Exception, match="never cleared"):
        tool.clear_all_memory()
    assert head(vault) == start and pending(vault) == [] and outside.read_text().endswith("secret plans\n")

    # a broken settings file: every command is the error naming it, nothing written
    config = vault.root / ".vaultmem/config.yaml"
    good = config.read_text(encoding="utf-8")
    config.write_text(good.replace("lock_timeout: 10", "lock_timeout: ten"), encoding="utf-8")
    assert ".vaultmem/config.yaml" in refused(tool, {"command": "create", "path": "/memories/x.md", "file_text": "y"})
    config.write_text(good, encoding="utf-8")
    assert head(vault) == start and pending(vault) == []


@needs_anthropic
def test_a_secret_is_replaced_in_the_proposal_and_never_repeated_in_an_answer(vault):
    vault.notes.remember("The CI bot posts to #builds.", human(vault), "fact", name="ci-bot")
    tool = memory_tool(vault)
    secret = token()
    said = tool.call({"command": "create", "path": "/memories/ci-token.md", "file_text": f"The CI token is {secret}"})
    assert secret not in said and "redacted a github-token" in said
    [item] = pending(vault)
    assert secret not in item.text and "redacted" in item.text
    assert secret not in tool.call({"command": "view", "path": "/memories/ci-token.md"})
    text = refused(tool, {"command": "str_replace", "path": "/memories/ci-bot.md", "old_str": secret, "new_str": "x"})
    assert secret not in text
    said = tool.call({"command": "str_replace", "path": "/memories/ci-bot.md", "old_str": "#builds",
                      "new_str": f"#builds with {secret}"})
    assert secret not in said and "[redacted:github-token:" in said  # the snippet is of what was filed
    assert secret not in refused(tool, {"command": "view", "path": f"/memories/{secret}.md"})
    assert secret.lower() not in refused(tool, {"command": "view", "path": f"/memories/{secret}.md"})
    assert secret not in git(vault.root, "log", "-p", "--all")


@needs_anthropic
def test_the_tool_acts_as_an_agent_never_as_the_human(vault, monkeypatch):
    from vaultmem.adapters.anthropic_memory import VaultMemoryTool
    from vaultmem.errors import VaultmemError

    with pytest.raises(VaultmemError, match="agent"):
        VaultMemoryTool(vault.root)
    with pytest.raises(VaultmemError, match="agent name"):
        VaultMemoryTool(vault.root, agent="../lee")
    monkeypatch.setenv("VAULTMEM_AGENT", "ella")
    assert VaultMemoryTool(vault.root).agent == "ella"


@needs_anthropic
def test_through_the_sdk_tool_runner_the_model_memory_writes_land_in_the_review_inbox(vault):
    import httpx2 as httpx  # the transport the SDK is built on
    from anthropic import Anthropic

    uses = [[{"command": "view", "path": "/memories"}],
            [{"command": "create", "path": "/memories/tea.md", "file_text": "The user drinks green tea."},
             {"command": "view", "path": "/etc/passwd"}]]
    sent: list[dict] = []

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        turn = len(sent) - 1
        content = ([{"type": "tool_use", "id": f"toolu_{turn}{n}", "name": "memory", "input": u}
                    for n, u in enumerate(uses[turn])] if turn < len(uses) else [{"type": "text", "text": "Noted."}])
        return httpx.Response(200, json={
            "id": f"msg_{turn}", "type": "message", "role": "assistant", "model": "claude-test",
            "content": content, "stop_reason": "tool_use" if turn < len(uses) else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})

    client = Anthropic(api_key="test", base_url="http://127.0.0.1:9",
                       http_client=httpx.Client(transport=httpx.MockTransport(reply)))
    runner = client.beta.messages.tool_runner(model="claude-test", max_tokens=100, tools=[memory_tool(vault)],
                                              messages=[{"role": "user", "content": "I drink green tea."}])
    final = runner.until_done()
    assert final.content[0].text == "Noted."
    assert sent[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = [b for body in sent for m in body["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]  # each request, or the thread it continues
    by_id = {r["tool_use_id"]: r for r in results}
    assert "up to 2 levels deep" in by_id["toolu_00"]["content"] and not by_id["toolu_00"].get("is_error")
    assert "review" in by_id["toolu_10"]["content"] and not by_id["toolu_10"].get("is_error")
    assert by_id["toolu_11"]["is_error"] is True and "/memories" in str(by_id["toolu_11"]["content"])
    [item] = pending(vault)
    assert item.proposed_by == "ella" and item.text == "The user drinks green tea."


@needs_anthropic
def test_the_async_tool_answers_as_the_sync_one(vault):
    import anyio
    from anthropic.lib.tools import ToolError

    from vaultmem.adapters.anthropic_memory import VaultAsyncMemoryTool

    tool = VaultAsyncMemoryTool(vault.root, agent="ella")

    async def steps():
        said = await tool.call({"command": "create", "path": "/memories/tea.md", "file_text": "Green tea."})
        with pytest.raises(ToolError):
            await tool.call({"command": "view", "path": "/memories/../x.md"})
        return said, await tool.call({"command": "view", "path": "/memories/tea.md"})

    said, shown = anyio.run(steps)
    assert "review" in said and "PENDING REVIEW" in shown and len(pending(vault)) == 1


# -- the LangGraph store ---------------------------------------------------------------------------
def store_for(v: Vault, agent: str = "reviewer"):
    from vaultmem.adapters.langgraph_store import VaultStore

    return VaultStore(v.root, agent=agent)


def team_vault(v: Vault) -> Vault:
    h = human(v)
    v.notes.remember("The backend listens on 8080.", h, "fact", name="backend-port")
    v.notes.remember("Deploys go out on Tuesdays.", h, "procedure", name="deploy-day")
    v.notes.remember("max keeps his drafts in drafts/.", h, "fact", name="max-drafts", agent="max")
    v.lifecycle.dispatch("reviewer", "review the API", v.actor("lee"))
    v.lifecycle.dispatch("max", "write docs", v.actor("lee"))
    v.pages.add("reviewer", "Two endpoints on port 8080 are unpaginated.", v.actor("lee"))
    return v


@needs_langgraph
@pytest.mark.usefixtures("both_engines")
def test_the_store_gets_searches_and_lists_what_the_agent_may_see(vault):
    from langgraph.store.base import Item, SearchItem

    team_vault(vault)
    store = store_for(vault)
    item = store.get(("memories",), "backend-port")
    assert isinstance(item, Item) and item.key == "backend-port" and item.namespace == ("memories",)
    assert item.value["text"] == "The backend listens on 8080." and item.value["type"] == "fact"
    assert item.created_at.tzinfo is not None
    assert store.get(("memories",), "no-such-note") is None
    assert store.get(("memories",), "max-drafts") is None  # max's own note is not the reviewer's memory

    found = store.search(("memories",), query="8080")
    assert [i.key for i in found] == ["backend-port"] and isinstance(found[0], SearchItem) and found[0].score
    both = store.search((), query="8080 endpoints")
    assert {i.namespace for i in both} == {("memories",), ("agents", "reviewer")}
    entry = next(i for i in both if i.namespace == ("agents", "reviewer"))
    assert entry.key.startswith("m-") and "unpaginated" in entry.value["text"] and entry.value["section"] == "work"
    assert store.get(("agents", "reviewer"), entry.key).value["text"] == entry.value["text"]
    assert [i.key for i in store.search(("memories",), filter={"type": "procedure"})] == ["deploy-day"]
    assert [i.key for i in store.search(("memories",), limit=1, offset=1)] == ["deploy-day"]
    assert store.search(("agents", "max"), query="docs") == []
    assert store.list_namespaces() == [("agents", "reviewer"), ("memories",)]
    assert store.list_namespaces(prefix=("agents",)) == [("agents", "reviewer")]
    assert store.list_namespaces(max_depth=1) == [("agents",), ("memories",)]
    assert ("agents", "max") in store_for(vault, "lee").list_namespaces()  # the orchestrator sees every page


@needs_langgraph
def test_a_put_is_a_proposal_none_proposes_forgetting_and_the_notes_stay_as_they_were(vault):
    import anyio

    team_vault(vault)
    before = {p.name: p.read_text(encoding="utf-8") for p in (vault.root / "memories").glob("*.md")}
    page = (vault.root / "agents/reviewer.md").read_text(encoding="utf-8")
    store = store_for(vault)
    store.put(("memories",), "tea", {"text": "The user drinks green tea.", "type": "preference"})
    store.put(("memories",), "backend-port", {"text": "The backend listens on 9090."})
    store.delete(("memories",), "deploy-day")
    store.put(("agents", "reviewer"), "finding", {"text": "Pagination is the next step."})
    anyio.run(lambda: store.aput(("memories",), "coffee", {"text": "Coffee, black."}))
    got = {(i.op, i.meta.get("target"), i.text) for i in pending(vault)}
    assert got == {("add", None, "The user drinks green tea."), ("add", None, "Coffee, black."),
                   ("replace", "memories/backend-port", "The backend listens on 9090."),
                   ("remove", "memories/deploy-day", "deleted through the LangGraph store by reviewer"),
                   ("page-add", None, "Pagination is the next step.")}
    assert all(i.proposed_by == "reviewer" for i in pending(vault))
    tea = next(i for i in pending(vault) if i.text.startswith("The user drinks"))
    assert tea.meta["note"]["name"] == "tea" and tea.meta["note"]["type"] == "preference"
    assert {p.name: p.read_text(encoding="utf-8") for p in (vault.root / "memories").glob("*.md")} == before
    assert (vault.root / "agents/reviewer.md").read_text(encoding="utf-8") == page
    assert store.get(("memories",), "tea") is None  # not memory until a human approves it
    store.put(("memories",), "tea", {"text": "The user drinks green tea.", "type": "preference"})  # same: nothing new
    assert len(pending(vault)) == 5
    vault.inbox.approve(tea.id, human(vault))
    assert store.get(("memories",), "tea").value["text"] == "The user drinks green tea."


@needs_langgraph
def test_bad_namespaces_keys_values_huge_text_and_broken_yaml_are_refused_and_nothing_is_written(vault):
    from vaultmem.errors import VaultmemError

    team_vault(vault)
    (vault.root / "memories/broken.md").write_text("---\nname: [unclosed\ntype: fact\n---\nbody\n", encoding="utf-8")
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-qm", "hand edit")
    start = head(vault)
    store = store_for(vault)
    bad = [(("user_1", "memories"), "k", {"text": "x"}, "namespace"),
           (("agents",), "k", {"text": "x"}, "namespace"),
           (("memories",), "../escape", {"text": "x"}, "key"),
           (("memories",), "Has Space", {"text": "x"}, "key"),
           (("memories",), "k", {"note": "x"}, "text"),
           (("memories",), "k", {"text": "x", "colour": "red"}, "colour"),
           (("memories",), "k", {"text": "x", "type": "rumour"}, "type"),
           (("memories",), "k", {"text": "word " * 300_000}, "max_note_bytes"),
           (("memories",), "broken", {"text": "x"}, "memories/broken.md:"),
           (("agents", "max"), "k", {"text": "x"}, "another role"),
           (("agents", "reviewer"), "k", None, "entries"),
           (("agents", "nobody"), "k", {"text": "x"}, "nobody")]
    for namespace, key, value, said in bad:
        with pytest.raises(VaultmemError) as info:
            store.put(namespace, key, value)
        assert said in str(info.value) + (info.value.hint or ""), (namespace, key, str(info.value))
    with pytest.raises(VaultmemError, match=r"memories/broken\.md:\d+"):
        store.get(("memories",), "broken")
    with pytest.raises(VaultmemError, match="namespace"):
        store.get(("user_1",), "k")
    assert head(vault) == start and pending(vault) == []

    secret = token()
    store.put(("memories",), "ci-token", {"text": f"The CI token is {secret}"})
    [item] = pending(vault)
    assert secret not in item.text and secret not in git(vault.root, "log", "-p", "--all")
    with pytest.raises(VaultmemError) as info:
        store.put(("memories",), secret, {"text": "x"})
    assert secret not in str(info.value) + (info.value.hint or "") and secret.lower() not in info.value.hint
    with pytest.raises(VaultmemError) as info:
        store.get(("memories", secret), "k")
    assert secret not in str(info.value)
    with pytest.raises(VaultmemError, match="agent"):
        store_for(vault, agent="")


@needs_langgraph
def test_a_langgraph_graph_reads_and_writes_memory_through_the_store(vault):
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.store.base import BaseStore

    team_vault(vault)

    class State(TypedDict):
        question: str
        answer: str

    def recall(state: State, *, store: BaseStore) -> dict:
        hits = store.search(("memories",), query=state["question"], limit=3)
        store.put(("memories",), "asked-about-ports", {"text": f"Someone asked: {state['question']}"})
        return {"answer": hits[0].value["text"] if hits else ""}

    graph = StateGraph(State)
    graph.add_node("recall", recall)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", END)
    out = graph.compile(store=store_for(vault)).invoke({"question": "which port does the backend use"})
    assert out["answer"] == "The backend listens on 8080."
    [item] = pending(vault)
    assert item.proposed_by == "reviewer" and item.meta["note"]["name"] == "asked-about-ports"
