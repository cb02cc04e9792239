"""Issue 28, points 1, 11 and the sub-agent record of 12: what an adversarial run broke in
the Claude Code hooks, through real hook processes (``vaultmem hook claude EVENT``) fed
real payloads, the vault checked afterwards.

1. A hook reads only a Claude Code transcript: a regular file (no link, no FIFO), of
   Claude Code's JSON-lines shape, inside Claude Code's transcript folder (the session's
   project folder when it is there). Anything else files nothing and says one line.
11. An empty (or not JSON) PreCompact payload writes no checkpoint.
12. A harvested sub-agent record carries its block id on a line of its own after the
   four bullets, so a link to it points at the whole record.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest
from conftest import git, run_vaultmem, wait_until

from vaultmem import Vault
from vaultmem.errors import BadInput
from vaultmem.adapters import claude
from vaultmem.parse.page import parse_page

SESSION = "sess-1"
REPORT = ("Task: Review payments.py for SQL injection\nConclusion: charge() built its query from user input\n"
          "Output: a patch to payments.py\nDecision: parameterised queries everywhere")
LEAK = "The deploy password is outside-only-7Qx"


def folder_name(path: Path | str) -> str:
    """The folder Claude Code keeps a project's transcripts in: its path, every character
    not an ASCII letter or digit made '-'."""
    return re.sub(r"[^a-zA-Z0-9]", "-", str(path))


def entries(texts: list[tuple[str, str]], session: str = SESSION, cwd: str = "/") -> list[dict]:
    """Transcript lines as Claude Code writes them (a summary line, then messages with
    their uuid, session and place)."""
    out: list[dict] = [{"type": "summary", "summary": "a session", "leafUuid": "u-0"}]
    parent = None
    for n, (kind, text) in enumerate(texts, 1):
        content = text if kind == "user" else [{"type": "text", "text": text}]
        out.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                    "sessionId": session, "version": "2.0.14", "gitBranch": "main", "type": kind,
                    "message": {"role": kind, "content": content}, "uuid": f"u-{n}",
                    "timestamp": f"2026-12-01T10:00:{n:02d}.000Z"})
        parent = f"u-{n}"
    return out


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


MAIN = [("user", "Review the payment module. I prefer small pull requests."),
        ("assistant", "Done.\nConclusion: the payment module is safe after the fix.")]


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A vault in a project, HOME a temp folder whose ~/.claude/projects holds the
    session's transcript, the hooks run as Claude Code runs them ($CLAUDE_PROJECT_DIR)."""
    gitconfig = Path.home() / ".gitconfig"
    if gitconfig.is_file():  # the machine's git identity, whatever HOME is now
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    v, _ = Vault.init(tmp_path / "proj", lang="en", orchestrator="orch")
    v.set_config("review.auto_harvest", True, v.actor(None))
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(v.root))
    folder = home / ".claude" / "projects" / folder_name(v.root)
    transcript = write_lines(folder / f"{SESSION}.jsonl", entries(MAIN, cwd=str(v.root)))
    return Vault.open(v.root), folder, transcript


def hook(event: str, data: dict | str):
    text = data if isinstance(data, str) else json.dumps(data)
    return run_vaultmem("hook", "claude", event, stdin=text)


def payload(event: str, root: Path, path_key: str, path: str) -> dict:
    data = {"session_id": SESSION, "cwd": str(root), "hook_event_name": event, "permission_mode": "default",
            path_key: path}
    if event in ("SubagentStart", "SubagentStop"):
        data.update(agent_id="a1", agent_type="code-reviewer")
    if event == "SubagentStop":
        data["transcript_path"] = str(Path(path).parent / f"{SESSION}.jsonl")
    if event == "PreCompact":
        data["trigger"] = "auto"
    if event == "SessionEnd":
        data["reason"] = "other"
    return data


def state(root: Path) -> tuple:
    spool = root / ".vaultmem/local/claude/spool"
    agents = root / ".vaultmem/local/claude/agents"
    return (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"),
            sorted(p.name for p in spool.iterdir()) if spool.is_dir() else [],
            sorted(p.name for p in agents.iterdir()) if agents.is_dir() else [])


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("vaultmem hook: "), err
    assert "Traceback" not in err
    return lines[0]


# -- point 1: a hook reads only a Claude Code transcript -------------------------------------------------


def plant(case: str, tmp_path: Path, folder: Path) -> str:
    """A path a payload could name that is no transcript of this session."""
    outside = write_lines(tmp_path / "outside" / "secret.jsonl",
                          entries([("user", f"{LEAK}. We decided to ship it."), ("assistant", REPORT)]))
    if case == "/etc/passwd":
        return "/etc/passwd"
    if case == "a link to a transcript outside":
        link = folder / "link.jsonl"
        if not link.is_symlink():
            os.symlink(outside, link)
        return str(link)
    if case == "JSON lines that are no transcript":
        return str(write_lines(folder / "chat.jsonl", [{"role": "user", "content": f"{LEAK}. I prefer leaks."},
                                                       {"role": "assistant", "content": REPORT}]))
    if case == "a transcript outside Claude Code's folder":
        return str(outside)
    if case == "another project's transcript":
        return str(write_lines(folder.parent / folder_name("/srv/other") / "sess-9.jsonl",
                               entries([("user", f"{LEAK}. We decided to ship it."), ("assistant", REPORT)])))
    if case == "a FIFO":
        fifo = folder / "fifo.jsonl"
        if not fifo.exists():
            os.mkfifo(fifo)
        return str(fifo)
    raise AssertionError(case)


CASES = ["/etc/passwd", "a link to a transcript outside", "JSON lines that are no transcript",
         "a transcript outside Claude Code's folder", "another project's transcript", "a FIFO"]
READERS = {"Stop": "transcript_path", "SessionEnd": "transcript_path", "PreCompact": "transcript_path",
           "SubagentStart": "transcript_path", "SubagentStop": "agent_transcript_path"}


@pytest.mark.parametrize("event", list(READERS))
def test_a_hook_files_nothing_from_a_file_that_is_no_transcript_of_the_session(event, setup, tmp_path):
    v, folder, _ = setup
    for case in CASES:
        path = plant(case, tmp_path, folder)
        before = state(v.root)
        r = hook(event, payload(event, v.root, READERS[event], path))
        assert (r.returncode, r.stdout) == (0, ""), case
        line = one_line(r.stderr)
        assert READERS[event] in line and "not" in line, (case, line)
        assert state(v.root) == before, case  # no commit, no spool, no sub-agent record
    tracked = git(v.root, "log", "-p", "--all")
    assert LEAK not in tracked and "root:x:0:0" not in tracked


def test_a_real_transcript_is_still_filed_by_every_hook(setup):
    v, folder, transcript = setup
    root = v.root
    main = write_lines(transcript, entries(MAIN + [
        ("assistant", "Delegating."),
    ], cwd=str(root)))
    lines = [json.loads(x) for x in main.read_text(encoding="utf-8").splitlines()]
    lines[-1]["message"]["content"].append({"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {
        "subagent_type": "code-reviewer", "prompt": "Review payments.py for SQL injection"}})
    write_lines(main, lines)
    # a sub-agent's transcript where recent Claude Code keeps it
    sub = write_lines(folder / SESSION / "subagents" / "agent-a1.jsonl",
                      entries([("user", "Review payments.py for SQL injection"), ("assistant", REPORT)]))

    r = hook("SubagentStart", payload("SubagentStart", root, "transcript_path", str(main)))
    assert (r.returncode, r.stderr) == (0, "")
    assert [d["task"] for d in v.lifecycle.delegations(role="code-reviewer")] == ["Review payments.py for SQL injection"]
    r = hook("SubagentStop", payload("SubagentStop", root, "agent_transcript_path", str(sub)))
    assert (r.returncode, r.stderr) == (0, "")
    assert "charge() built its query from user input" in (root / "agents/code-reviewer.md").read_text(encoding="utf-8")
    r = hook("PreCompact", payload("PreCompact", root, "transcript_path", str(main)))
    assert (r.returncode, r.stderr) == (0, "")
    assert "I prefer small pull requests" in (root / "checkpoints/orch.md").read_text(encoding="utf-8")
    r = hook("Stop", payload("Stop", root, "transcript_path", str(main)))
    assert (r.returncode, r.stderr) == (0, "")
    journal = "".join(p.read_text(encoding="utf-8") for p in (root / "journal").glob("*.md"))
    assert "I prefer small pull requests" in journal
    assert {i.text for i in v.inbox.items()} >= {"I prefer small pull requests."}


def test_session_end_files_a_real_transcript_and_refuses_a_planted_one(setup, tmp_path):
    v, folder, transcript = setup
    r = hook("SessionEnd", payload("SessionEnd", v.root, "transcript_path", "/etc/shadow"))
    assert r.returncode == 0 and "transcript_path" in one_line(r.stderr)
    assert not claude.pending_spools(v.root)
    r = hook("SessionEnd", payload("SessionEnd", v.root, "transcript_path", str(transcript)))
    assert (r.returncode, r.stderr) == (0, "")
    wait_until(lambda: any((v.root / "journal").glob("*.md")) and not claude.pending_spools(v.root),
               what="the detached filer")


def test_a_transcript_folder_moved_by_claude_config_dir_or_linked_elsewhere_is_read(setup, tmp_path, monkeypatch,
                                                                                   capsys):
    """$CLAUDE_CONFIG_DIR moves ~/.claude; a ~/.claude that is a link (a dotfiles repo)
    is Claude Code's folder all the same: only the transcript itself may not be a link."""
    v, folder, _ = setup
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    moved = write_lines(config / "projects" / folder_name(v.root) / "sess-2.jsonl",
                        entries([("user", "We decided to use Postgres for the job queue.")], session="sess-2"))
    data = json.dumps({"session_id": "sess-2", "cwd": str(v.root), "hook_event_name": "Stop",
                       "transcript_path": str(moved)})
    assert claude.main("Stop", None, None, stdin=io.StringIO(data)) == 0
    assert capsys.readouterr().err == ""
    assert any("Postgres" in i.text for i in v.inbox.items())

    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    dotfiles = tmp_path / "dotfiles"
    (Path.home() / ".claude").rename(dotfiles)
    os.symlink(dotfiles, Path.home() / ".claude")
    linked = write_lines(Path.home() / ".claude" / "projects" / folder_name(v.root) / "sess-3.jsonl",
                         entries([("user", "I prefer tabs over spaces in this project.")], session="sess-3"))
    data = json.dumps({"session_id": "sess-3", "cwd": str(v.root / "src"), "hook_event_name": "Stop",
                       "transcript_path": str(linked)})
    assert claude.main("Stop", None, None, stdin=io.StringIO(data)) == 0
    assert capsys.readouterr().err == ""
    assert any("tabs over spaces" in i.text for i in v.inbox.items())


def test_a_transcript_whose_lines_are_deep_json_is_refused_in_one_line(setup, capsys):
    v, folder, _ = setup
    deep = folder / "deep.jsonl"
    deep.write_text("[" * 200_000 + "]" * 200_000 + "\n", encoding="utf-8")
    head = git(v.root, "rev-parse", "HEAD")
    data = json.dumps({"session_id": SESSION, "cwd": str(v.root), "hook_event_name": "Stop",
                       "transcript_path": str(deep)})
    assert claude.main("Stop", None, None, stdin=io.StringIO(data)) == 0
    assert "transcript_path" in one_line(capsys.readouterr().err)
    assert git(v.root, "rev-parse", "HEAD") == head


def test_a_spool_naming_a_file_that_is_no_transcript_is_set_aside(setup, capsys):
    """A spool (written before this check, or planted in .vaultmem/local) is checked again
    when it is filed: set aside, one line, nothing filed."""
    v, _, _ = setup
    claude.spool(v.root, "SessionEnd", {"session_id": "sess-7", "transcript_path": "/etc/passwd"}, None)
    head = git(v.root, "rev-parse", "HEAD")
    assert claude.drain(v.root, wait=0) == 0
    assert "transcript_path" in one_line(capsys.readouterr().err)
    assert git(v.root, "rev-parse", "HEAD") == head and not claude.pending_spools(v.root)


def test_a_deeply_nested_payload_is_said_in_one_line(setup):
    v, _, _ = setup
    head = git(v.root, "rev-parse", "HEAD")
    r = hook("Stop", "[" * 200_000 + "]" * 200_000)
    assert (r.returncode, r.stdout) == (0, "")
    line = one_line(r.stderr)
    assert "not JSON" in line and "bug" not in line
    assert git(v.root, "rev-parse", "HEAD") == head


# -- point 11: an empty PreCompact writes nothing --------------------------------------------------------


def test_an_empty_or_broken_precompact_payload_leaves_the_checkpoint_alone(setup):
    v, _, _ = setup
    v.shared.save_checkpoint(v.actor("orch"), "half-way through the payment review", task="review payments",
                             step="reading charge()")
    checkpoint = (v.root / "checkpoints/orch.md").read_text(encoding="utf-8")
    before = state(v.root)
    for stdin in ("", "  \n", "not json"):
        r = hook("PreCompact", stdin)
        assert (r.returncode, r.stdout) == (0, ""), repr(stdin)
        assert "payload" in one_line(r.stderr), repr(stdin)
        assert state(v.root) == before, repr(stdin)
        assert (v.root / "checkpoints/orch.md").read_text(encoding="utf-8") == checkpoint


# -- point 12: a sub-agent record's block id covers the whole record ----------------------------------------


def test_a_harvested_record_has_its_block_id_on_a_line_of_its_own(setup):
    v, folder, transcript = setup
    r = hook("SubagentStop", {**payload("SubagentStop", v.root, "agent_transcript_path", str(transcript)),
                              "last_assistant_message": REPORT})
    assert (r.returncode, r.stderr) == (0, "")
    text = (v.root / "agents/code-reviewer.md").read_text(encoding="utf-8")
    page = parse_page(text, "agents/code-reviewer.md")
    [record] = [e for e in page.entries if e.section == "subagents"]
    assert record.id and record.fields["decision"] == "parameterised queries everywhere"
    lines = text.split("\n")
    at = lines.index(f"^{record.id}")  # Obsidian: an id on its own line after a list names the whole list
    assert lines[at - 1] == "" and lines[at - 2].startswith("- **Key decision**: parameterised queries")
    assert not lines[at - 2].endswith(record.id)
    assert all(record.id not in ln for ln in lines if ln.startswith("- "))
    [d] = v.lifecycle.delegations(role="code-reviewer")
    assert d["record"] == f"[[agents/code-reviewer#^{record.id}]]"


def test_which_project_folder_a_session_may_read_from(setup, tmp_path, monkeypatch):
    """The session's own folder when it is there (named for $CLAUDE_PROJECT_DIR or the
    cwd, or for a folder above the cwd); when none is there, any project folder."""
    v, folder, transcript = setup
    projects = folder.parent
    other = write_lines(projects / folder_name("/srv/other") / "sess-9.jsonl", entries(MAIN, session="sess-9"))
    check = claude.transcript_file
    assert check(str(transcript), "transcript_path", str(v.root), str(v.root)) == str(transcript)
    with pytest.raises(BadInput, match="this session's project folder"):
        check(str(other), "transcript_path", str(v.root), str(v.root))
    # a cwd below the project, the project not named: the transcript of a session started above it
    (projects / folder_name(v.root / "src")).mkdir()
    assert check(str(transcript), "transcript_path", str(v.root / "src"), None) == str(transcript)
    # no folder named for this session at all (a name Claude Code shortened): any project folder
    assert check(str(other), "transcript_path", str(tmp_path / ("x" * 240)), None) == str(other)
    assert check(str(folder / "not-yet.jsonl"), "transcript_path", str(v.root), None) is None  # nothing there
    with pytest.raises(BadInput, match="absolute"):
        check("relative/sess.jsonl", "transcript_path")
