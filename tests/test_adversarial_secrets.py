"""Issue 28, points 3, 6 (journal add, import jsonl) and 9, through the real CLI and hooks.

- A known key prefix (Anthropic, OpenAI, GitHub, Slack, AWS, Google, Stripe …) is a secret
  whatever its entropy, and ``pass: VALUE`` is a password; ordinary prose is left alone.
- An import keeps each item's file path in its ``source``: a path is not a secret.
- A JSON line nested too deep is named and skipped; the other lines are filed.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from conftest import git, run_vaultmem, vaultmem_in_process

from vaultmem import Vault, guard

KEY = b"k" * 16

# low-entropy keys with a known prefix: each is a secret by its prefix alone
PREFIXED = {
    "anthropic": "sk-ant-api03-" + "A" * 93 + "AA",
    "anthropic-admin": "sk-ant-admin01-" + "B" * 90,
    "openai-project": "sk-proj-" + "A" * 40,
    "openai-legacy": "sk-" + "a" * 48,
    "openai-service": "sk-svcacct-" + "Q" * 40,
    "github-classic": "ghp_" + "A" * 36,
    "github-fine-grained": "github_pat_" + "A" * 82,
    "github-oauth": "gho_" + "b" * 36,
    "github-server": "ghs_" + "C" * 36,
    "slack-bot": "xoxb-" + "A" * 30,
    "slack-user": "xoxp-" + "a" * 30,
    "aws": "AKIA" + "A" * 16,
    "aws-session": "ASIA" + "B" * 16,
    "google": "AIza" + "A" * 35,
    "stripe-live": "sk_live_" + "a" * 24,
    "stripe-restricted": "rk_live_" + "b" * 24,
    "stripe-test": "sk_test_" + "c" * 24,
    "gitlab": "glpat-" + "a" * 20,
    "huggingface": "hf_" + "A" * 34,
    "npm": "npm_" + "a" * 36,
}
LOW_ANTHROPIC = PREFIXED["anthropic"]
PASSWORD = "qwerty77x"


def scrubbed(text: str) -> str:
    return guard.scrub(text, "text", KEY)[0]


@pytest.mark.parametrize("name", sorted(PREFIXED))
def test_a_known_key_prefix_is_a_secret_whatever_its_entropy(name):
    key = PREFIXED[name]
    for text in (key, f"use {key} for CI", f"export TOKEN={key}", f"key: `{key}`."):
        out = scrubbed(text)
        assert key not in out and "[redacted:" in out, (name, text, out)


@pytest.mark.parametrize("text", [
    "pass: qwerty77x", "db pass: qwerty77x for staging", "Pass = qwerty77x", "the admin pass:qwerty77x",
    "passwd: qwerty77x", "pwd: qwerty77x", "password: qwerty77x",
])
def test_a_password_after_pass_or_password_is_a_secret(text):
    out = scrubbed(text)
    assert PASSWORD not in out and "[redacted:password:" in out, out


@pytest.mark.parametrize("text", [
    "Move the task-list to the desk-lamp drawer", "we use sk-learn and scikit-learn", "risk-assessment and ask-me-anything",
    "The password policy requires 12 characters", "password policy: see the wiki", "Lint pass: OK",
    "First pass: v1.2.3 shipped", "pass: 3/4 tests", "bypass: enabled", "the test pass rate: 97%",
    "Our tasks: skim-read the spec, then a second pass", "AIza is how Google keys start",
    "see /home/alice/work/my-project/CLAUDE.md for the rules",
    "the temp copy is in /tmp/tmpk3j2_x8a/proj/CLAUDE.md",
    "cd /home/alice/work/my-project/CLAUDE first", "cd /Users/alice/Code/MyApp/src",
    "the transcript is ~/.claude/projects/-tmp-pytest-of-x-q8ZkL3mN7xWvB2rT9yHjD4-proj/3f2a.jsonl",
])
def test_ordinary_prose_is_kept(text):
    assert scrubbed(text) == text


# -- every way in ------------------------------------------------------------------------------


def leaks(root: Path, values) -> list[str]:
    """Which of ``values`` are in a file of the vault or in its git history."""
    on_disk = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*")
                        if p.is_file() and ".git" not in p.parts)
    history = git(root, "log", "--all", "-p")
    return [v for v in values if v in on_disk or v in history]


SECRET_TEXT = (f"The staging key is {LOW_ANTHROPIC} and the db pass: {PASSWORD}; "
               f"CI uses {PREFIXED['github-fine-grained']} and {PREFIXED['google']}")
SECRET_VALUES = [LOW_ANTHROPIC, PASSWORD, PREFIXED["github-fine-grained"], PREFIXED["google"]]


def test_remember_and_the_inbox_keep_no_prefixed_key_or_pass(tmp_path):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    r = vaultmem_in_process("--vault", v.root, "remember", SECRET_TEXT, "--type", "fact", "--name", "staging access")
    assert r.returncode == 0, r.stderr
    assert "redacted a anthropic-key in the text" in r.stderr and "redacted a password" in r.stderr
    # another fact with the same secrets (a repeat of the note would not be filed: memory holds it)
    agent_text = (f"Production deploys read {LOW_ANTHROPIC}; the backup host pass: {PASSWORD}; the release bot "
                  f"signs with {PREFIXED['github-fine-grained']}, the maps widget calls {PREFIXED['google']}")
    r = vaultmem_in_process("--vault", v.root, "--as", "ella", "remember", agent_text, "--type", "fact")
    assert r.returncode == 0, r.stderr
    assert list((v.root / "inbox").glob("i-*.md")), "an agent's fact goes to the inbox"
    assert leaks(v.root, SECRET_VALUES) == []


def test_journal_add_keeps_no_prefixed_key_or_pass(tmp_path):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    t = tmp_path / "chat.jsonl"
    t.write_text(json.dumps({"role": "user", "content": SECRET_TEXT, "timestamp": "2026-12-01T10:00:00Z"}) + "\n"
                 + json.dumps({"role": "assistant", "content": "noted", "timestamp": "2026-12-01T10:00:05Z"}) + "\n",
                 encoding="utf-8")
    r = vaultmem_in_process("--vault", v.root, "journal", "add", t, "--session", "s-1")
    assert r.returncode == 0, r.stderr
    day = (v.root / "journal" / "2026-12-01.md").read_text(encoding="utf-8")
    assert "[redacted:anthropic-key:" in day and "[redacted:password:" in day and "noted" in day
    assert leaks(v.root, SECRET_VALUES) == []


def claude_session(tmp_path: Path, entries: list[dict]) -> tuple[Vault, Path, Path]:
    """A vault inside a project, and a session transcript where Claude Code keeps it
    (``$CLAUDE_CONFIG_DIR/projects/<the project's path, mangled>/<session>.jsonl``)."""
    v, _ = Vault.init(tmp_path / "proj", lang="en", orchestrator="orch")
    config = tmp_path / "claude-config"
    folder = config / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(v.root))
    folder.mkdir(parents=True)
    transcript = folder / "sess-28.jsonl"
    lines = []
    for n, e in enumerate(entries, 1):
        lines.append(json.dumps({**e, "sessionId": "sess-28", "uuid": f"u-{n}", "cwd": str(v.root),
                                 "timestamp": f"2026-12-01T10:00:{n:02d}Z"}))
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return v, transcript, config


def test_a_precompact_checkpoint_and_the_stop_journal_keep_no_prefixed_key_or_pass(tmp_path):
    entries = [
        {"type": "user", "message": {"role": "user", "content": f"Deploy staging. {SECRET_TEXT}"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"Deployed with {LOW_ANTHROPIC}; the db pass: {PASSWORD} works."}]}},
    ]
    v, transcript, config = claude_session(tmp_path, entries)
    env = {"CLAUDE_PROJECT_DIR": str(v.root), "CLAUDE_CONFIG_DIR": str(config)}
    common = {"session_id": "sess-28", "transcript_path": str(transcript), "cwd": str(v.root),
              "permission_mode": "default"}
    r = run_vaultmem("hook", "claude", "PreCompact", env=env,
                     stdin=json.dumps({**common, "hook_event_name": "PreCompact", "trigger": "auto"}))
    assert r.returncode == 0, r.stderr
    checkpoint = (v.root / "checkpoints" / "orch.md").read_text(encoding="utf-8")
    assert "Deploy staging" in checkpoint and "[redacted:anthropic-key:" in checkpoint
    r = run_vaultmem("hook", "claude", "Stop", env=env,
                     stdin=json.dumps({**common, "hook_event_name": "Stop", "stop_hook_active": False}))
    assert r.returncode == 0, r.stderr
    journal = "".join(p.read_text(encoding="utf-8") for p in (v.root / "journal").glob("*.md"))
    assert "Deploy staging" in journal and "[redacted:anthropic-key:" in journal
    assert leaks(v.root, SECRET_VALUES) == []


# -- point 9: an import keeps its provenance ------------------------------------------------------


def test_an_import_keeps_each_items_file_path_and_still_scrubs_its_text(tmp_path):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    homes = [Path(tempfile.mkdtemp(dir=tmp_path)) / "proj",  # /…/tmpk3j2_x8a/proj
             tmp_path / "pytest-of-x-q8ZkL3mN7xWvB2rT9yHjD4" / "proj",  # a long random-looking temp name
             tmp_path / "home" / "alice" / "work" / "my-project"]
    for n, project in enumerate(homes):
        project.mkdir(parents=True)
        (project / "CLAUDE.md").write_text(f"# Rules {n}\n\n- Use pnpm, not npm ({n}).\n"
                                           f"- The CI token is {PREFIXED['github-classic']} ({n}).\n",
                                           encoding="utf-8")
        r = vaultmem_in_process("--vault", v.root, "import", "claude-code", project, "--json")
        assert r.returncode == 0, r.stderr
        done = json.loads(r.stdout)
        sources = sorted(i["note"]["source"] for i in done["items"])
        path = project.resolve() / "CLAUDE.md"
        assert [re.sub(r" \[import [0-9a-f]{16}\]$", "", s) for s in sources] == [
            f"claude-code {path}:3", f"claude-code {path}:4"], sources
        said = " ".join(done.get("warnings", []))
        assert "in the source" not in said, said  # the path is not reported as a secret
        assert "redacted a github-token in the text" in said  # the text's key still is
    assert leaks(v.root, [PREFIXED["github-classic"]]) == []


def test_a_json_lines_import_keeps_its_path_and_scrubs_the_lines_own_source(tmp_path):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    folder = Path(tempfile.mkdtemp(dir=tmp_path, prefix="export-Zq8W3kLm9Xv"))
    src = folder / "mem0.jsonl"
    src.write_text(json.dumps({"memory": "Staging has two replicas", "source": f"chat with {LOW_ANTHROPIC}"}) + "\n",
                   encoding="utf-8")
    r = vaultmem_in_process("--vault", v.root, "import", "jsonl", src, "--json")
    assert r.returncode == 0, r.stderr
    source = json.loads(r.stdout)["items"][0]["note"]["source"]
    assert source.startswith(f"jsonl {src}:1 (chat with [redacted:anthropic-key:"), source
    assert leaks(v.root, [LOW_ANTHROPIC]) == []


# -- point 6: a JSON line nested too deep ---------------------------------------------------------
# Real processes: JSON this deep meets the interpreter's recursion limit, whose depth depends on
# the stack it is read from; a command's own process is what a user's run has.

DEEP = "[" * 2000 + "]" * 2000


def test_import_jsonl_skips_a_line_nested_too_deep_and_files_the_rest(tmp_path):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    src = tmp_path / "export.jsonl"
    src.write_text("\n".join([json.dumps({"memory": "Deploys use blue-green switching"}),
                              '{"memory": "deep", "metadata": ' + DEEP + "}",
                              json.dumps({"memory": "Staging has two replicas"}), DEEP]) + "\n", encoding="utf-8")
    r = run_vaultmem("--vault", v.root, "import", "jsonl", src)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr
    assert re.search(rf"warning: {re.escape(str(src))}:2: .*nested .*deep.*skipped", r.stderr), r.stderr
    assert re.search(rf"warning: {re.escape(str(src))}:4: .*nested .*deep.*skipped", r.stderr), r.stderr
    texts = sorted(p.read_text(encoding="utf-8").rsplit("---\n", 1)[-1].strip()
                   for p in (v.root / "inbox").glob("i-*.md"))
    assert texts == ["Deploys use blue-green switching", "Staging has two replicas"]


def test_import_of_one_deep_json_document_is_skipped_not_a_crash(tmp_path):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    src = tmp_path / "export.json"
    src.write_text(DEEP, encoding="utf-8")
    r = run_vaultmem("--vault", v.root, "import", "jsonl", src)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert re.search(rf"warning: {re.escape(str(src))}:1: .*nested .*deep.*skipped", r.stderr), r.stderr


@pytest.mark.parametrize("deep_at", [1, 2])
def test_journal_add_skips_a_line_nested_too_deep_and_files_the_other_turns(tmp_path, deep_at):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    turns = [json.dumps({"type": "user", "sessionId": "s-deep", "uuid": "u1", "timestamp": "2026-12-01T10:00:00Z",
                         "message": {"role": "user", "content": "hello there"}}),
             json.dumps({"type": "assistant", "sessionId": "s-deep", "uuid": "u2", "timestamp": "2026-12-01T10:00:01Z",
                         "message": {"role": "assistant", "content": [{"type": "text", "text": "hi back"}]}})]
    turns.insert(deep_at - 1, '{"type": "user", "sessionId": "s-deep", "message": ' + DEEP + "}")
    t = tmp_path / "s-deep.jsonl"
    t.write_text("\n".join(turns) + "\n", encoding="utf-8")
    r = run_vaultmem("--vault", v.root, "journal", "add", t)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert re.search(rf"warning: {re.escape(str(t))}:{deep_at}: .*nested .*deep.*skipped", r.stderr), r.stderr
    day = (v.root / "journal" / "2026-12-01.md").read_text(encoding="utf-8")
    assert "hello there" in day and "hi back" in day
    again = run_vaultmem("--vault", v.root, "journal", "add", t)  # the same turns, the same numbers
    assert again.returncode == 0 and "all 2 turns are in the journal already" in again.stdout, again.stdout


def test_journal_add_of_one_deep_json_document_is_refused_with_its_file(tmp_path):
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="orch")
    t = tmp_path / "chat.json"
    t.write_text('{"messages": ' + DEEP + "}", encoding="utf-8")
    r = run_vaultmem("--vault", v.root, "journal", "add", t)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert str(t) in r.stderr and "nested" in r.stderr and "deep" in r.stderr
