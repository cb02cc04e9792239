"""A real Claude Code with vaultmem, offline: the plugin (``--plugin-dir hooks/claude-code``)
and ``vaultmem install claude --project``, each in one scenario of two sessions against the
stand-in Messages API (standin.py), plus a session whose hooks find vaultmem only in the
project's ``.venv``. What each test proves: docs/e2e.md.

Scenario "plugin" / "installed":
  1. ``-p`` with a prompt that states a fact ("please remember that …") and asks for the
     reviewer: the stand-in answers with an Agent tool_use (subagent_type reviewer); the
     sub-agent reports with Task/Conclusion/Output/Decision lines; the session ends.
  2. ``--resume SESSION -p /compact``: PreCompact saves a checkpoint, and SessionStart
     (source compact) hands it back.
  3. ``-p`` asking for the reviewer's brief: the stand-in calls vaultmem's MCP ``dispatch``
     tool (allowed by its exact name, read from the first session's tools), and the model's
     next request holds the tool's result.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from vaultmem.analysis import estimate_tokens

from . import standin as si
from .conftest import (ORCHESTRATOR, PLUGIN, Scenario, bare_path, git_log, run_once, venv_bin, vaultmem_exe)

FACT = "please remember that the staging database listens on port 6543"
PROMPT = f"Hello. {FACT.capitalize()}. {si.DELEGATE_MARK}: ask the reviewer to check the deploy notes."
VENV_PROMPT = "E2E-VENV: hello."
DISPATCH_PROMPT = f"{si.DISPATCH_MARK}: brief the reviewer before it checks the staging database."
SEARCH_PROMPT = f"{si.SEARCH_MARK}: what do we know about the staging database settings?"
PAGE_ENTRY = "the staging database settings live in deploy/staging.env, not in the notes"
MODES = ["plugin", "installed"]


# -- the scenarios (each run once per test run, shared by the workers) ----------------------

def _two_sessions(sc: Scenario, args: list[str], env: dict) -> None:
    work = sc.run("work", [*args, "--allowedTools", "Agent", "-p", PROMPT], env)
    assert work["returncode"] == 0 and work["session_id"], work["stderr"] or work["stdout"][-2000:]
    sc.wait_filed(work["session_id"])
    compact = sc.run("compact", [*args, "--resume", work["session_id"], "-p", "/compact"], env)
    assert compact["returncode"] == 0, compact["stderr"] or compact["stdout"][-2000:]
    sc.wait_filed(work["session_id"])
    # what the reviewer learned, on its page (the orchestrator writes it at once)
    added = subprocess.run([str(vaultmem_exe()), "--vault", str(sc.vault), "--as", ORCHESTRATOR, "page", "add",
                            si.ROLE, PAGE_ENTRY, "--section", "work"], capture_output=True, text=True)
    assert added.returncode == 0, added.stderr
    first = next(b for b in message_requests(work) if si.dispatch_tool(b))
    dispatch = sc.run("dispatch", [*args, "--allowedTools", si.dispatch_tool(first), "-p", DISPATCH_PROMPT], env)
    assert dispatch["returncode"] == 0, dispatch["stderr"] or dispatch["stdout"][-2000:]
    sc.wait_filed(dispatch["session_id"])
    search = sc.run("search", [*args, "--allowedTools", si.vault_tool(first, "search_memory"), "-p", SEARCH_PROMPT],
                    env)
    assert search["returncode"] == 0, search["stderr"] or search["stdout"][-2000:]
    sc.wait_filed(search["session_id"])


def build_plugin(root: Path, claude: str, standin) -> dict:
    sc = Scenario(root, claude, standin)
    sc.setup()
    # the README's set-up: vaultmem in an activated virtualenv, the vault named in the environment
    env = sc.env(f"{venv_bin()}{os.pathsep}{bare_path()}", VAULTMEM_VAULT=str(sc.vault))
    _two_sessions(sc, ["--plugin-dir", str(PLUGIN)], env)
    return sc.result()


def build_installed(root: Path, claude: str, standin) -> dict:
    sc = Scenario(root, claude, standin)
    sc.setup(git_project=True)  # Claude Code reads .claude/settings.local.json only where git can vouch for it
    done = subprocess.run([str(vaultmem_exe()), "install", "claude", "--project", "--vault", str(sc.vault)],
                          cwd=sc.project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    env = sc.env(bare_path())  # installed hooks and server name vaultmem by absolute path
    sc.facts["mcp_list_unapproved"] = sc.run("mcp list", ["mcp", "list"], env, stream=False)["stdout"]
    # the approval a person gives at the first interactive start ("Use this and all future
    # MCP servers in this project?" → yes), written as Claude Code writes it
    (sc.project / ".claude" / "settings.local.json").write_text(
        json.dumps({"enabledMcpjsonServers": ["vaultmem"]}, indent=2) + "\n")
    sc.facts["mcp_list_approved"] = sc.run("mcp list", ["mcp", "list"], env, stream=False)["stdout"]
    _two_sessions(sc, [], env)
    return sc.result()


def build_venv(root: Path, claude: str, standin) -> dict:
    sc = Scenario(root, claude, standin)
    sc.setup()
    venv = Path(os.path.realpath(venv_bin().parent))
    (sc.project / ".venv").symlink_to(venv, target_is_directory=True)
    path = bare_path()
    env = sc.env(path, VAULTMEM_VAULT=str(sc.vault))
    env.pop("VAULTMEM_BIN", None)
    probe = subprocess.run(["sh", "-c", "command -v vaultmem; python3 -c 'import vaultmem' 2>/dev/null && echo imports"],
                           env={"PATH": path}, capture_output=True, text=True)
    sc.facts["vaultmem_reachable_without_venv"] = probe.stdout.strip()
    run = sc.run("venv", ["--plugin-dir", str(PLUGIN), "-p", VENV_PROMPT], env)
    assert run["returncode"] == 0, run["stderr"] or run["stdout"][-2000:]
    sc.wait_filed(run["session_id"])  # SessionEnd files from a detached process: wait for it
    return sc.result()


BUILDERS = {"plugin": build_plugin, "installed": build_installed, "venv": build_venv}


@pytest.fixture
def scenario(request, claude_bin, standin, shared_dir):
    name = request.param
    return run_once(shared_dir, name, lambda root: BUILDERS[name](root, claude_bin, standin))


# -- reading what happened -------------------------------------------------------------------

def session(result: dict, name: str) -> dict:
    return next(s for s in result["sessions"] if s["name"] == name)


def message_requests(sess: dict) -> list[dict]:
    return [r["body"] for r in sess["requests"]
            if r["method"] == "POST" and r["path"].split("?")[0].endswith("/v1/messages")]


def main_requests(sess: dict, marker: str) -> list[dict]:
    """The requests of the session's own conversation (not a sub-agent's, not a side request)."""
    return [b for b in message_requests(sess)
            if any(marker in u for u in si.user_texts(b)) and not si.is_subagent(b)]


def hook_responses(sess: dict, hook_name: str) -> list[dict]:
    return [e for e in sess["events"] if e.get("subtype") == "hook_response" and e.get("hook_name") == hook_name]


def inbox_items(result: dict) -> list[str]:
    return [p.read_text() for p in sorted((Path(result["vault"]) / "inbox").glob("*.md"))]


def vault_tools(body: dict) -> list[str]:
    return [t for t in si.tool_names(body) if t.startswith("mcp__") and "vaultmem" in t]


# -- the plugin and the installed hooks ------------------------------------------------------

@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_brief_in_first_request(scenario):
    first = main_requests(session(scenario, "work"), si.DELEGATE_MARK)[0]
    text = si.all_text(first)
    assert "SessionStart hook additional context: vaultmem: what the team's memory holds for lee" in text
    assert "[Memory brief — lee]" in text


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_vaultmem_tools_in_first_request(scenario):
    first = main_requests(session(scenario, "work"), si.DELEGATE_MARK)[0]
    tools = vault_tools(first)
    assert any(t.endswith("__search_memory") for t in tools), \
        f"no vaultmem tool in the first request; its tools: {si.tool_names(first)}"
    assert any(t.endswith("__brief") for t in tools) and any(t.endswith("__harvest") for t in tools)


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_subagent_request_holds_role_page(scenario):
    work = session(scenario, "work")
    delegated = [r.get("reply", {}) for r in work["requests"] if r.get("reply", {}).get("tool")]
    assert delegated and delegated[0]["input"]["subagent_type"] == si.ROLE, "the stand-in never delegated"
    sub = [b for b in message_requests(work) if si.is_subagent(b)]
    assert sub, "no request of the sub-agent reached the stand-in"
    text = si.all_text(sub[0])
    assert "SubagentStart hook additional context: vaultmem: what the team's memory holds for the role reviewer" in text
    assert "agents/reviewer.md" in text and "[Memory brief — reviewer]" in text
    # the role's context went to the sub-agent alone, not to the orchestrator's conversation
    assert all("memory holds for the role reviewer" not in si.all_text(b)
               for b in main_requests(work, si.DELEGATE_MARK))
    page = Path(scenario["vault"]) / "agents" / "reviewer.md"
    assert page.is_file() and "type: agent-page" in page.read_text()


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_subagent_stop_harvest(scenario):
    harvests = [t for t in inbox_items(scenario) if "op: harvest" in t and "role: reviewer" in t]
    assert harvests, f"no harvest in inbox/; the log: {git_log(Path(scenario['vault']))}"
    assert "keep the staging port at 6543" in harvests[0]
    assert "review the deploy notes" in harvests[0]
    assert [e for e in hook_responses(session(scenario, "work"), "SubagentStop") if e.get("exit_code") == 0]


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_stop_and_session_end_filing(scenario):
    sid = session(scenario, "work")["session_id"]
    vault = Path(scenario["vault"])
    assert f"journal: session {sid}" in git_log(vault)
    journal = "".join(p.read_text() for p in (vault / "journal").glob("*.md"))
    assert sid[:8] in journal or "6543" in journal
    facts = [t for t in inbox_items(scenario) if "op: add" in t and f"session: {sid}" in t
             and "author_kind: user" in t]
    assert any(FACT in t.lower() for t in facts), f"the user's fact is not in inbox/: {facts}"
    spool = vault / ".vaultmem" / "local" / "claude" / "spool"
    assert not list(spool.glob("*.failed")) if spool.is_dir() else True


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_precompact_checkpoint_and_resume(scenario):
    compact = session(scenario, "compact")
    assert any(e.get("subtype") == "compact_boundary" for e in compact["events"]), "the compaction did not happen"
    assert any(si.is_compaction(b) for b in message_requests(compact))
    checkpoint = Path(scenario["vault"]) / "checkpoints" / "lee.md"
    assert checkpoint.is_file(), "PreCompact saved no checkpoint"
    saved = checkpoint.read_text()
    assert "compaction (manual)" in saved and "6543" in saved
    back = hook_responses(compact, "SessionStart:compact")
    assert back, "SessionStart (compact) did not run"
    context = json.loads(back[0]["output"])["hookSpecificOutput"]["additionalContext"]
    assert "~~~~checkpoint" in context and "checkpoints/lee.md" in context and "6543" in context


def handed_back(run: dict, tool: str, mark: str) -> str:
    """What Claude Code handed the model back from vaultmem's MCP ``tool``, which the
    stand-in called in the conversation holding ``mark``: the tool result's text."""
    called = [r.get("reply", {}) for r in run["requests"] if r.get("reply", {}).get("tool")]
    assert called and called[0]["tool"].endswith(f"__{tool}"), f"the stand-in never called {tool}"
    answered = [b for b in main_requests(run, mark) if si.has_tool_result(b)]
    assert answered, f"no tool result came back to the model: {run['stdout'][-2000:]}"
    return "\n".join(si.tool_result_text(t) for t in si.tool_results(answered[0]))


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_the_mcp_dispatch_tool_hands_the_model_the_roles_brief(scenario):
    """The model calls vaultmem's MCP ``dispatch`` for the reviewer: what Claude Code
    hands the model back is the brief's Markdown — the role's own page entry with its
    citation — not only its figures. (Claude Code gives the model a result's structured
    content when there is one, not its text: the brief must be there.)"""
    result = handed_back(session(scenario, "dispatch"), "dispatch", si.DISPATCH_MARK)
    assert "[Memory brief — reviewer]" in result and PAGE_ENTRY in result, result[:3000]
    assert "agents/reviewer#^" in result  # cited
    # and the brief once: each line's source beside it, not the line again with its scores
    handed = json.loads(result)
    assert "items" not in handed and handed["cites"]["page"][0].startswith("agents/reviewer.md#^"), result[:3000]
    # (+125 tokens here, the brief's figures and one citation; with the items whole, +304)
    assert estimate_tokens(result) <= estimate_tokens(handed["markdown"]) + 200, result


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_the_mcp_search_tool_hands_the_model_its_hits_compactly(scenario):
    """The model calls vaultmem's MCP ``search_memory``: what Claude Code hands it back is
    the search's structured content — the hits, the reviewer's page entry among them, each
    without the fields its path and entry id make (``id``, ``link``) or that only ranking
    uses, and none without a value (docs/mcp.md, "A search is handed over compactly")."""
    result = handed_back(session(scenario, "search"), "search_memory", si.SEARCH_MARK)
    handed = json.loads(result)
    assert handed["query"] == si.SEARCH_QUERY and handed["hits"], result[:3000]
    entry = next(h for h in handed["hits"] if h["kind"] == "entry")
    assert entry["path"] == "agents/reviewer.md" and entry["entry_id"] and ".env, not in the notes" in entry["snippet"]
    for hit in handed["hits"]:
        assert None not in hit.values() and not {"id", "link", "coverage"} & set(hit), hit
    assert "parsed" not in handed and "filters" not in handed


@pytest.mark.parametrize("scenario", MODES, indirect=True)
def test_hooks_say_no_error(scenario):
    said = [(s["name"], e["hook_name"], e.get("exit_code"), (e.get("stderr") or "") + (e.get("output") or ""))
            for s in scenario["sessions"] for e in s["events"] if e.get("subtype") == "hook_response"]
    assert said, "no hook ran"
    noisy = [x for x in said if x[2] != 0 or "error" in x[3].lower() and "vaultmem" in x[3].lower()]
    assert not noisy, noisy


@pytest.mark.parametrize("scenario", ["installed"], indirect=True)
def test_installed_mcp_server_needs_approval(scenario):
    """``.mcp.json``'s server waits for approval; ``enabledMcpjsonServers`` in the project's
    ``.claude/settings.local.json`` gives it (docs/install.md)."""
    assert "vaultmem" in scenario["facts"]["mcp_list_unapproved"]
    assert "Pending approval" in scenario["facts"]["mcp_list_unapproved"]
    approved = scenario["facts"]["mcp_list_approved"]
    assert "Pending approval" not in approved, approved
    # `claude mcp list` starts the server, checks it, closes its standard input and waits
    # for it to end: a server that does not end on EOF shows "Failed to connect" here
    assert "Connected" in approved, approved


# -- vaultmem only in the project's virtualenv -----------------------------------------------

@pytest.mark.parametrize("scenario", ["venv"], indirect=True)
def test_hooks_find_vaultmem_in_project_venv(scenario):
    """``PATH`` without vaultmem, ``VAULTMEM_BIN`` unset, the project's ``.venv`` holding it:
    the plugin's launcher finds it there, for the hooks and for the MCP server."""
    assert scenario["facts"]["vaultmem_reachable_without_venv"] == "", \
        "this machine's PATH reaches vaultmem without the venv: the test proves nothing here"
    run = session(scenario, "venv")
    first = main_requests(run, "E2E-VENV")[0]
    assert "[Memory brief — lee]" in si.all_text(first), \
        f"SessionStart found no vaultmem: {[e.get('stderr') for e in hook_responses(run, 'SessionStart:startup')]}"
    assert any(t.endswith("__search_memory") for t in vault_tools(first)), \
        f"the MCP server did not start; tools: {si.tool_names(first)}"
    assert f"journal: session {run['session_id']}" in git_log(Path(scenario["vault"]))
