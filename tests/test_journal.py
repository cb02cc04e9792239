"""The journal: sessions filed from real transcripts, read back, kept out of normal recall,
and the brief's last resort (docs/journal.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, hermes_provider, out_json, run_vaultmem, vaultmem_in_process, wait_until, write_note
from vaultmem import journal
from vaultmem.errors import BadInput, PermissionRefused
from vaultmem.vault import Vault

AWS = "AKIAIOSFODNN7EXAMPLE"


def claude_entry(kind: str, n: int, content, session: str = "sess-1", day: str = "2026-12-01", **extra) -> dict:
    entry = {"type": kind, "sessionId": session, "uuid": f"{kind[0]}{n}", "timestamp": f"{day}T09:{n:02d}:00.000Z",
             "message": {"role": kind, "content": content}, **extra}
    return entry


def claude_transcript(path: Path, session: str = "sess-1", day: str = "2026-12-01") -> Path:
    """A Claude Code transcript: a summary line, a user prompt, an assistant reply split
    over two entries (text, then a tool call), the tool's result, Claude Code's own meta
    entry, a sub-agent's sidechain entry and a last reply holding a secret."""
    lines = [
        {"type": "summary", "summary": "Login fix", "leafUuid": "x"},
        claude_entry("user", 1, "The login page returns 500 since yesterday. We decided to use argon2 for hashing.",
                     session, day),
        {**claude_entry("assistant", 2, [{"type": "text", "text": "I think the bug is in auth.py. Let me look."}],
                        session, day), "message": {"id": "m1", "role": "assistant",
                                                   "content": [{"type": "text", "text": "I think the bug is in auth.py."}]}},
        {**claude_entry("assistant", 3, [], session, day),
         "message": {"id": "m1", "role": "assistant",
                     "content": [{"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "src/auth.py"}}]}},
        claude_entry("user", 4, [{"type": "tool_result", "tool_use_id": "tu1", "content": "def login():\n    pass\n"}],
                     session, day),
        claude_entry("user", 5, "<command-name>/clear</command-name>", session, day, isMeta=True),
        claude_entry("user", 6, "a sub-agent's own prompt", session, day, isSidechain=True),
        {**claude_entry("assistant", 7, [], session, day),
         "message": {"id": "m2", "role": "assistant",
                     "content": [{"type": "text", "text": f"Fixed: the salt came from an unset variable; the key was {AWS}.\nTests pass."}]}},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def day_file(v: Vault, day: str) -> str:
    return (v.root / "journal" / f"{day}.md").read_text(encoding="utf-8")


# -- filing ------------------------------------------------------------------------------------


def test_a_claude_code_session_is_filed_turn_by_turn_with_ids_and_provenance(en_vault, tmp_path):
    path = claude_transcript(tmp_path / "sess-1.jsonl")
    done = vaultmem_in_process("journal", "add", path, "--agent", "claude-code", "--json", cwd=en_vault.root)
    assert done.returncode == 0, done.stderr
    data = out_json(done)
    assert (data["session"], data["shape"], data["added"], data["days"]) == ("sess-1", "claude-code", 4, ["2026-12-01"])
    text = day_file(en_vault, "2026-12-01")
    sh = journal.session_hash("sess-1")
    assert "## 09:01 · session sess-1 · claude-code" in text and "source: sess-1.jsonl (claude-code)" in text
    # who said what, in order, where it came from, a block id each
    assert f"- **09:01:00 user** · L2 — The login page returns 500 since yesterday. We decided to use argon2 for " \
           f"hashing. ^j-{sh}-1" in text
    assert f"- **09:02:00 assistant** · L3 — I think the bug is in auth.py.\n  → Read: src/auth.py ^j-{sh}-2" in text
    assert f"- **09:04:00 tool** · L5 — result of Read: def login(): (+1 lines) ^j-{sh}-3" in text
    assert "/clear" not in text and "sub-agent's own prompt" not in text  # meta and sidechain entries are not turns
    # the secret is a placeholder in the file, in git and in the index
    assert AWS not in text and "[redacted:aws-access-key:" in text
    assert "redacted a aws-access-key" in " ".join(data["warnings"])
    assert AWS not in git(en_vault.root, "log", "-p", "--all")
    assert out_json(vaultmem_in_process("search", AWS, "--journal", "--json", cwd=en_vault.root))["hits"] == []
    assert git(en_vault.root, "status", "--porcelain") == ""
    assert git(en_vault.root, "log", "-1", "--format=%s").startswith("journal: session sess-1: 4 new turns")


def test_a_transcript_holding_a_cut_emoji_is_filed(en_vault, tmp_path):
    """JavaScript writes half an emoji (a lone surrogate, "\\ud83d") when a text is cut in
    the middle of one, and Claude Code's transcripts are written so. Such a turn stopped
    the whole session's filing (UnicodeEncodeError writing the day file); it is filed with
    U+FFFD in its place, the emoji that is whole kept."""
    lines = [claude_entry("user", 1, "kafka retries, cut here \ud83d", "s-cut", "2026-12-01"),
             claude_entry("user", 2, "a whole one \ud83d\ude00 and a stray \udcff", "s-cut", "2026-12-01")]
    path = tmp_path / "s-cut.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert "\\ud83d" in path.read_text(encoding="utf-8")  # escaped alone in the file, as Claude Code writes it
    done = vaultmem_in_process("journal", "add", path, "--agent", "claude-code", "--json", cwd=en_vault.root)
    assert done.returncode == 0 and out_json(done)["added"] == 2, done.stdout + done.stderr
    text = day_file(en_vault, "2026-12-01")
    assert "cut here \ufffd" in text and "a whole one \U0001f600 and a stray \ufffd" in text
    assert git(en_vault.root, "status", "--porcelain") == ""


def test_adding_a_session_again_changes_nothing_and_a_grown_one_gains_its_new_turns(en_vault, tmp_path):
    path = claude_transcript(tmp_path / "sess-1.jsonl")
    actor = en_vault.actor(None)
    assert en_vault.journal.add(path, actor).details["added"] == 4
    before, head = day_file(en_vault, "2026-12-01"), git(en_vault.root, "rev-parse", "HEAD")
    again = en_vault.journal.add(path, actor)
    assert (again.commit, again.details["added"], again.details["known"]) == (None, 0, 4)
    assert day_file(en_vault, "2026-12-01") == before and git(en_vault.root, "rev-parse", "HEAD") == head
    # the next day the session goes on: its new turn goes to that day, the old ones stay put
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(claude_entry("user", 8, "Actually, it should be bcrypt, not argon2.", day="2026-12-02")) + "\n")
    grown = en_vault.journal.add(path, actor)
    assert (grown.details["added"], grown.details["days"]) == (1, ["2026-12-02"])
    assert day_file(en_vault, "2026-12-01") == before
    assert f"bcrypt, not argon2. ^j-{journal.session_hash('sess-1')}-5" in day_file(en_vault, "2026-12-02")
    # turns of two sessions on one day: each session's new turns go after its own last one
    other = claude_transcript(tmp_path / "sess-2.jsonl", session="sess-2")
    en_vault.journal.add(other, actor)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(claude_entry("assistant", 9, "Switched to bcrypt.", day="2026-12-01")) + "\n")
    en_vault.journal.add(path, actor)
    turns = journal.day_turns(day_file(en_vault, "2026-12-01"))
    assert [t.session for t in turns] == ["sess-1"] * 5 + ["sess-2"] * 4
    assert turns[4].text == "Switched to bcrypt."


def test_hermes_messages_json_turns_and_markdown_are_read(en_vault, tmp_path):
    msgs = tmp_path / "hermes.json"
    msgs.write_text(json.dumps({"session_id": "h-42", "messages": [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": "什么时候部署？"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "terminal",
                                                                                   "arguments": "{\"command\": \"kubectl get pods\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "terminal", "content": "web-1 Running\nweb-2 Running"},
        {"role": "assistant", "content": [{"type": "text", "text": "周五下午部署。"}]},
    ]}, ensure_ascii=False), encoding="utf-8")
    t = journal.read(msgs)
    assert (t.session, t.shape) == ("h-42", "messages")
    assert [(x.speaker, x.text) for x in t.turns] == [
        ("user", "什么时候部署？"), ("assistant", "→ terminal: kubectl get pods"),
        ("tool", "result of terminal: web-1 Running (+1 lines)"), ("assistant", "周五下午部署。")]
    turns = tmp_path / "turns.json"
    turns.write_text('[\n  {"speaker": "Ana", "text": "Ship on Friday?", "time": "2026-11-30T16:00:00Z"},\n'
                     '  {"speaker": "Bo", "text": "Yes, after the freeze."}\n]\n', encoding="utf-8")
    t = journal.read(turns)
    assert t.shape == "turns" and [(x.speaker, x.where, x.time) for x in t.turns] == [
        ("Ana", "L2", "2026-11-30T16:00:00Z"), ("Bo", "L3", None)]
    md = tmp_path / "standup.md"
    md.write_text("---\ntitle: standup\n---\n# Standup 4 Dec\n\n**Ana:** I finished the migration.\nIt took two days.\n\n"
                  "- [09:05] Bo: Blocked on review.\n林夏：我来审。\n", encoding="utf-8")
    t = journal.read(md)
    assert t.shape == "markdown" and t.session == "standup"
    assert [(x.speaker, x.text, x.where) for x in t.turns] == [
        ("Ana", "I finished the migration.\nIt took two days.", "L6"), ("Bo", "[09:05] Blocked on review.", "L9"),
        ("林夏", "我来审。", "L10")]
    # turns without a time go under the day given
    change = en_vault.journal.add(md, en_vault.actor(None), day="2026-12-04")
    assert change.details["days"] == ["2026-12-04"]
    assert "- **林夏** · L10 — 我来审。 ^j-" in day_file(en_vault, "2026-12-04")


@pytest.mark.parametrize("name, text, line, says", [
    ("broken.jsonl", '{"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}}\n'
                     '{"type": "assistant", "message": {"role": "assis\n', 2, "not JSON"),
    ("list.json", '[\n {"role": "user", "content": "hi"},\n {"role": "user", "content": }\n]', 3, "not JSON"),
    ("object.json", '{"title": "no messages here"}', 1, "without a list of 'messages'"),
    ("nospeaker.jsonl", '{"speaker": "a", "text": "x"}\n{"words": "who said this?"}\n', 2, "without a speaker"),
    ("prose.md", "# Notes\n\nJust some text, nobody speaking.\nMore text.\n", 3, "text before any turn"),
])
def test_a_broken_transcript_is_reported_with_file_and_line_and_nothing_is_filed(en_vault, tmp_path, name, text, line,
                                                                                says):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    head = git(en_vault.root, "rev-parse", "HEAD")
    done = vaultmem_in_process("journal", "add", path, cwd=en_vault.root)
    assert done.returncode == 2
    assert f"{path}:{line}: " in done.stderr and says in done.stderr and "nothing was filed" in done.stderr
    assert not list((en_vault.root / "journal").glob("*.md"))
    assert git(en_vault.root, "rev-parse", "HEAD") == head


def test_a_huge_paste_is_filed_cut_with_where_the_rest_is(en_vault, tmp_path):
    path = tmp_path / "paste.jsonl"
    huge = "log line with nothing secret in it\n" * 10_000  # 340 KB in one turn, more than a note may hold
    path.write_text(json.dumps(claude_entry("user", 1, huge)) + "\n", encoding="utf-8")
    change = en_vault.journal.add(path, en_vault.actor(None))
    assert change.details["added"] == 1
    text = day_file(en_vault, "2026-12-01")
    assert f"({len(huge.strip()) - journal.MAX_TURN_CHARS + 300:,} more characters in paste.jsonl L1) ^j-" in text
    once = journal.clipped(huge, "paste.jsonl", "L1")
    assert journal.clipped(once, "paste.jsonl", "L1") == once  # the Hermes outbox clips, then the journal
    assert len(text) < journal.MAX_TURN_CHARS * 2


def test_missing_empty_and_undecodable_transcripts_and_bad_days_are_refused(en_vault, tmp_path):
    actor = en_vault.actor(None)
    with pytest.raises(BadInput, match="no such transcript"):
        en_vault.journal.add(tmp_path / "nope.jsonl", actor)
    (tmp_path / "empty.md").write_text("  \n", encoding="utf-8")
    with pytest.raises(BadInput, match="empty"):
        en_vault.journal.add(tmp_path / "empty.md", actor)
    (tmp_path / "latin1.md").write_bytes("A: ok\nB: caf\xe9\n".encode("latin-1"))
    with pytest.raises(BadInput) as err:
        en_vault.journal.add(tmp_path / "latin1.md", actor)
    assert err.value.line == 2 and "not UTF-8" in err.value.message
    (tmp_path / "ok.md").write_text("A: hello\n", encoding="utf-8")
    with pytest.raises(BadInput, match="not a day"):
        en_vault.journal.add(tmp_path / "ok.md", actor, day="2026-13-01")
    with pytest.raises(BadInput):
        en_vault.journal.add(tmp_path / "ok.md", actor, agent="../escape")


# -- kept out of normal recall; the last resort -------------------------------------------------


def test_the_journal_never_leaks_into_a_normal_search_or_brief(en_vault, tmp_path):
    en_vault.journal.add(claude_transcript(tmp_path / "s.jsonl"), en_vault.actor(None))
    root = en_vault.root
    for args in (["search", "argon2"], ["search", "argon2", "--agent", "coder"], ["search", "argon2", "--as", "orch"]):
        assert out_json(vaultmem_in_process(*args, "--json", cwd=root))["hits"] == [], args
    found = out_json(vaultmem_in_process("search", "argon2", "--journal", "--json", cwd=root))["hits"]
    assert found and {h["kind"] for h in found} == {"journal"}
    assert found[0]["path"] == "journal/2026-12-01.md" and found[0]["entry_id"].startswith("j-")
    # another agent may not read it, by --journal or by kind
    for args in (["--journal", "--as", "coder"], ["--kind", "journal", "--agent", "coder"]):
        refused = vaultmem_in_process("search", "argon2", *args, cwd=root)
        assert refused.returncode == 3 and "may not read the journal" in refused.stderr, args
    # memory's index holds none of it: the journal has an index of its own, git-ignored
    v = Vault.open(root)
    files_in_memory = v.index_status()["files"]
    assert v.journal_index.status()["files"] == 1
    (root / "journal" / "2026-12-05.md").write_text("---\ntype: journal\n---\n", encoding="utf-8")
    assert Vault.open(root).index_status()["files"] == files_in_memory
    assert (root / ".vaultmem/index/journal").is_dir()
    assert git(root, "status", "--porcelain") == "?? journal/2026-12-05.md\n"
    refused = vaultmem_in_process("search", "argon2", "--kind", "journal", "--kind", "note", cwd=root)
    assert refused.returncode == 2 and "searched on its own" in refused.stderr
    # a brief for another role never falls back to it
    brief = en_vault.brief("coder", "which hashing algorithm for the login, argon2?")
    assert not any(i["kind"] == "journal" for i in brief.items) and "journal" not in brief.markdown.lower()


def test_a_brief_for_the_orchestrator_falls_back_to_the_journal_only_when_memory_has_nothing(en_vault, tmp_path):
    en_vault.journal.add(claude_transcript(tmp_path / "s.jsonl"), en_vault.actor(None))
    # a note that shares a word and passes nothing: the brief's nearest, until the journal answers
    en_vault.notes.remember("The login page shows a blue banner on Mondays.", en_vault.actor(None), "fact")
    task = "which hashing algorithm does the login use, argon2?"
    b = en_vault.brief("orch", task)
    fell = [i for i in b.items if i["kind"] == "journal"]
    assert fell and all(i["line"].startswith("- From the journal: (session sess-1, 2026-12-01") for i in fell)
    assert "[[journal/2026-12-01#^j-" in b.markdown
    # the journal knows: its turns are the memory of this, in place of the nearest notes
    assert not b.no_memory and fell == [i for i in b.items if i["layer"] == "memory"]
    # memory that answers: the journal is not searched
    en_vault.notes.remember("The login hashes passwords with argon2id (decided in December).", en_vault.actor(None), "decision",
                      name="login hashing")
    b = en_vault.brief("orch", task)
    assert b.items and not any(i["kind"] == "journal" for i in b.items)
    # nothing anywhere: the brief says nothing is known
    b = en_vault.brief("orch", "kubernetes ingress certificate renewal")
    assert "Nothing known: neither memory nor the journal holds anything relevant" in b.markdown
    assert b.no_memory and not any(i["kind"] == "journal" for i in b.items)


def test_a_delegation_record_is_no_evidence_that_keeps_the_journal_closed(en_vault, tmp_path):
    en_vault.journal.add(claude_transcript(tmp_path / "s.jsonl"), en_vault.actor(None))
    task = "which hashing algorithm does the login use, argon2?"
    en_vault.lifecycle.delegate("coder", task, en_vault.actor("orch"))  # a record repeating the task
    assert any(h.doc.path.startswith("shared/delegations/") for h in en_vault.search(task, agent="orch"))
    b = en_vault.brief("orch", task)
    assert any(i["kind"] == "journal" for i in b.items) and "shared/delegations/" not in b.markdown


def test_ask_falls_back_to_the_journal_for_a_human_and_says_when_nothing_is_known(en_vault, tmp_path):
    en_vault.journal.add(claude_transcript(tmp_path / "s.jsonl"), en_vault.actor(None))
    root = en_vault.root
    assert vaultmem_in_process("page", "ensure", "coder", "--as", "orch", cwd=root).returncode == 0
    done = vaultmem_in_process("ask", "coder", "which hashing algorithm, argon2?", cwd=root)
    assert done.returncode == 0 and done.stdout.startswith("- from the journal (session sess-1, 2026-12-01 09:01:00 user)")
    data = out_json(vaultmem_in_process("ask", "coder", "which hashing algorithm, argon2?", "--json", cwd=root))
    assert data["journal_searched"] and data["hits"][0]["kind"] == "journal"
    # another agent asking gets the role's memory only
    data = out_json(vaultmem_in_process("ask", "coder", "which hashing algorithm, argon2?", "--json", "--as", "coder",
                                        cwd=root))
    assert not data["journal_searched"] and not any(h["kind"] == "journal" for h in data["hits"])
    done = vaultmem_in_process("ask", "coder", "kubernetes ingress certificate", cwd=root)
    assert done.stdout.startswith("nothing known: neither this role's memory nor the journal holds anything relevant")


def test_two_active_notes_that_disagree_send_the_orchestrator_to_the_journal(en_vault, tmp_path):
    en_vault.journal.add(claude_transcript(tmp_path / "s.jsonl"), en_vault.actor(None))
    # two people wrote the same fact apart (remember would have superseded the first)
    write_note(en_vault.root, "hashing-a", "Login hashing uses argon2.", key="login.hashing", created="2026-11-01")
    write_note(en_vault.root, "hashing-b", "Login hashing uses bcrypt.", key="login.hashing", created="2026-11-02")
    b = en_vault.brief("orch", "login hashing argon2 or bcrypt")
    assert any(i["kind"] == "note" for i in b.items) and any(i["kind"] == "journal" for i in b.items)
    assert any("two active notes" in w or "key" in w for w in b.warnings)


def test_mcp_search_memory_reads_the_journal_for_the_orchestrator_only(en_vault, tmp_path):
    import anyio
    from mcp import Client

    from vaultmem.adapters.mcp import VaultServer

    en_vault.journal.add(claude_transcript(tmp_path / "s.jsonl"), en_vault.actor(None))

    def ask(agent: str):
        async def main():
            async with Client(VaultServer(Vault.open(en_vault.root), agent, watch=False)) as client:
                return await client.call_tool("search_memory", {"query": "argon2", "journal": True})
        return anyio.run(main)

    found = ask("orch")
    assert not found.is_error and found.structured_content["hits"][0]["kind"] == "journal"
    refused = ask("coder")
    assert refused.is_error and "may not read the journal" in refused.content[0].text


# -- the day's record, retention --------------------------------------------------------------


def test_consolidate_writes_the_days_record_once_and_keeps_sequence_decisions_doubts_and_tools(en_vault, tmp_path):
    human = en_vault.actor(None)
    en_vault.journal.add(claude_transcript(tmp_path / "s.jsonl"), human)
    change = en_vault.journal.consolidate(human, day="2026-12-01")
    text = day_file(en_vault, "2026-12-01")
    sh = journal.session_hash("sess-1")
    record = text[text.index(journal.RECORD_START):text.index(journal.RECORD_END)]
    assert text.index(journal.RECORD_START) < text.index("## 09:01 · session")  # at the top
    # no agent was named when it was filed: the session stands alone
    assert "- 09:01–09:07 · session sess-1: The login page returns 500 since yesterday." in record
    assert f"  - decided: We decided to use argon2 for hashing. [[journal/2026-12-01#^j-{sh}-1]]" in record
    assert f"  - doubt: I think the bug is in auth.py. [[journal/2026-12-01#^j-{sh}-2]]" in record
    assert "  - tools: Read ×1" in record and "  - last word: Fixed: the salt came from" in record
    assert change.commit is not None
    again = en_vault.journal.consolidate(human, day="2026-12-01")
    assert again.commit is None and day_file(en_vault, "2026-12-01") == text
    # the record is searched with the journal (as one more document of the day)
    hits = en_vault.search("argon2", journal=True)
    assert "journal/2026-12-01.md#record" in [h.doc.id for h in hits]
    with pytest.raises(PermissionRefused):
        en_vault.journal.consolidate(en_vault.actor("coder"), day="2026-12-01")
    done = vaultmem_in_process("journal", "consolidate", "--date", "2026-11-11", cwd=en_vault.root)
    assert done.returncode == 1 and "the journal has no day 2026-11-11" in done.stderr


def test_prune_removes_days_past_the_retention_policy_humans_only(en_vault, tmp_path):
    import datetime as dt

    human = en_vault.actor(None)
    for day in ("2026-10-01", "2026-11-20", "2026-12-01"):
        (tmp_path / f"{day}.md").write_text("A: hello\n", encoding="utf-8")
        en_vault.journal.add(tmp_path / f"{day}.md", human, session=f"s-{day}", day=day)
    assert en_vault.journal.prune(human).paths == []  # keep_days 0: forever
    en_vault.set_config("journal.keep_days", 30, human)
    v = Vault.open(en_vault.root)
    with pytest.raises(PermissionRefused):
        v.journal.prune(v.actor("orch"), today=dt.date(2026, 12, 3))
    dry = v.journal.prune(v.actor("orch"), dry_run=True, today=dt.date(2026, 12, 3))
    assert dry.paths == ["journal/2026-10-01.md"] and dry.commit is None
    done = v.journal.prune(human, today=dt.date(2026, 12, 3))
    assert done.paths == ["journal/2026-10-01.md"] and done.commit
    assert v.journal.days() == ["2026-11-20", "2026-12-01"]
    assert "A: hello" not in git(v.root, "status", "--porcelain")
    assert git(v.root, "show", f"{done.commit}~1:journal/2026-10-01.md")  # history keeps it


# -- the hooks and the provider file sessions by themselves -----------------------------------------


def test_the_stop_hook_files_the_transcript_and_a_broken_one_is_said_not_half_filed(en_vault, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))  # a hook reads only Claude Code's transcripts
    (tmp_path / "claude/projects/-proj").mkdir(parents=True)
    path = claude_transcript(tmp_path / "claude/projects/-proj/sess-1.jsonl")
    payload = {"session_id": "sess-1", "transcript_path": str(path), "cwd": str(en_vault.root),
               "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Tests pass."}
    done = run_vaultmem("hook", "claude", "Stop", "--vault", en_vault.root, stdin=json.dumps(payload))
    assert done.returncode == 0, done.stderr
    assert len(journal.day_turns(day_file(en_vault, "2026-12-01"))) == 4
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"type": "user", "sessionId": "sess-1", "message": {"role": "us')  # being written
    done = run_vaultmem("hook", "claude", "Stop", "--vault", en_vault.root, stdin=json.dumps(payload))
    assert done.returncode == 0
    assert f"{path}:9: a line that is not JSON" in done.stderr and "not filed in the journal" in done.stderr
    assert len(journal.day_turns(day_file(en_vault, "2026-12-01"))) == 4
    en_vault.set_config("journal.hooks", False, en_vault.actor(None))
    path.write_text(path.read_text(encoding="utf-8").rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(claude_entry("user", 30, "One more thing.")) + "\n")
    assert run_vaultmem("hook", "claude", "Stop", "--vault", en_vault.root, stdin=json.dumps(payload)).returncode == 0
    assert "One more thing." not in day_file(en_vault, "2026-12-01")


def test_session_end_files_the_journal_from_its_detached_filer(en_vault, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))  # a hook reads only Claude Code's transcripts
    (tmp_path / "claude/projects/-proj").mkdir(parents=True)
    path = claude_transcript(tmp_path / "claude/projects/-proj/sess-9.jsonl", session="sess-9")
    payload = {"session_id": "sess-9", "transcript_path": str(path), "cwd": str(en_vault.root),
               "hook_event_name": "SessionEnd", "reason": "exit"}
    done = run_vaultmem("hook", "claude", "SessionEnd", "--vault", en_vault.root, stdin=json.dumps(payload))
    assert done.returncode == 0, done.stderr
    target = en_vault.root / "journal" / "2026-12-01.md"
    wait_until(lambda: target.exists() and "sess-9" in target.read_text(encoding="utf-8")
               and not list((en_vault.root / ".vaultmem/local/claude/spool").glob("*.json")), what="the filer")
    assert len(journal.day_turns(target.read_text(encoding="utf-8"))) == 4


def test_the_hermes_provider_files_the_session_at_its_end(en_vault, tmp_path, monkeypatch):
    p = hermes_provider(en_vault.root, tmp_path / "home", monkeypatch, "hermes-7")
    try:
        p.on_session_end([{"role": "system", "content": "sys"}, {"role": "user", "content": "Remember the deploy is on Friday."},
                          {"role": "assistant", "content": f"Noted. The token is {AWS}."}])
        assert p.flush(60)
    finally:
        p.shutdown()
    days = Vault.open(en_vault.root).journal.days()
    assert len(days) == 1
    text = day_file(en_vault, days[0])
    assert "session hermes-7 · orch" in text and "source: hermes (messages)" in text
    assert "- **user** · #1 — Remember the deploy is on Friday." in text and AWS not in text


# -- faults -----------------------------------------------------------------------------------------


def test_two_processes_filing_sessions_at_once_lose_no_turn(en_vault, tmp_path):
    paths = [claude_transcript(tmp_path / f"s{n}.jsonl", session=f"s{n}") for n in range(4)]
    procs = [subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(en_vault.root), "journal", "add", str(p)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in paths]
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    turns = journal.day_turns(day_file(en_vault, "2026-12-01"))
    assert sorted({t.session for t in turns}) == ["s0", "s1", "s2", "s3"] and len(turns) == 16
    assert git(en_vault.root, "status", "--porcelain") == ""


@pytest.mark.soak
def test_a_journal_add_killed_at_any_step_leaves_the_day_as_before_or_as_after(en_vault, tmp_path):
    """SIGKILL just before each file-system step of a real `vaultmem journal add`."""
    import shutil

    from test_kills import clean_env, kill_at, kill_points

    human = en_vault.actor(None)
    en_vault.journal.add(claude_transcript(tmp_path / "old.jsonl", session="old"), human)
    path = claude_transcript(tmp_path / "new.jsonl", session="new")
    counting, points = kill_points(en_vault.root, ["journal", "add", str(path)], tmp_path)
    after = day_file(Vault.open(counting), "2026-12-01")
    before = day_file(en_vault, "2026-12-01")
    assert points
    problems = []
    for point in points:
        root = tmp_path / f"case-{point.replace(':', '-')}"
        shutil.copytree(en_vault.root, root, symlinks=True)
        done = kill_at(root, ["journal", "add", str(path)], point)
        if done.returncode != -9:
            problems.append(f"{point}: not reached ({done.returncode})")
            continue
        subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), "journal", "days"], capture_output=True,
                       timeout=120, env=clean_env())
        now = (root / "journal" / "2026-12-01.md").read_text(encoding="utf-8")
        status = git(root, "status", "--porcelain").strip()
        if now not in (before, after) or status:
            problems.append(f"{point}: a torn day file or status {status!r}")
        # and the next add files exactly what is missing
        subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), "journal", "add", str(path)],
                       capture_output=True, timeout=120, env=clean_env(), check=True)
        if (root / "journal" / "2026-12-01.md").read_text(encoding="utf-8") != after:
            problems.append(f"{point}: adding again did not give the whole day")
    assert not problems, "\n".join(problems)


def test_a_chinese_vault_names_its_journal_and_record_in_chinese(vault, tmp_path):
    md = tmp_path / "聊天.md"
    md.write_text("林夏：我们决定用川菜馆办年会。\n小北：也许要提前订位，我不确定有没有包间。\n", encoding="utf-8")
    human = vault.actor(None)
    vault.journal.add(md, human, day="2026-12-03")
    vault.journal.consolidate(human, day="2026-12-03")
    text = day_file(vault, "2026-12-03")
    assert text.startswith("---\ntype: journal\ndate: 2026-12-03\n---\n# 日志 2026-12-03\n")
    assert "## 当日记录" in text and "会话 聊天：我们决定用川菜馆办年会。" in text
    assert "  - 决定：我们决定用川菜馆办年会。" in text and "  - 存疑：" in text
    turns = [h.doc for h in vault.search("川菜", journal=True) if h.doc.section != "record"]
    assert turns[0].speaker == "林夏" and turns[0].session == "聊天"


def test_help_teaches_the_journal_commands():
    done = vaultmem_in_process("journal", "--help")
    assert done.returncode == 0 and all(c in done.stdout for c in ("add", "consolidate", "prune", "days"))
    done = vaultmem_in_process("journal", "add", "--help")
    assert done.returncode == 0 and "--session" in done.stdout and "Examples" in done.stdout
    assert "--journal" in vaultmem_in_process("search", "--help").stdout
