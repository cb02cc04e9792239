"""The signed live-context log: appends, tail, unseen, ack, decisions, checkpoints, state."""

import json
import subprocess
import sys

import pytest
from conftest import SAFETY_NET, Lines, git, out_json

from vaultmem.livelog import read_entries


def vm(cli, vault, *args, agent=None):
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args)


@pytest.fixture
def team(cli, vault):
    for agent in ("lee", "ella", "max"):
        assert vm(cli, vault, "keys", "new", agent, agent=agent).exit_code == 0
    return vault


def test_keys_private_outside_git_public_committed(cli, team):
    key = team.root / ".vaultmem" / "keys" / "ella.key"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    tracked = git(team.root, "ls-files").split()
    assert "shared/keys/ella.pub" in tracked and not any(".vaultmem/keys" in t for t in tracked)
    assert git(team.root, "status", "--porcelain", "--untracked-files=all") == ""
    r = vm(cli, team, "keys", "new", "ella", agent="ella")
    assert r.exit_code == 2 and "already has a key" in r.stderr and "rotate" in r.stderr


def test_append_writes_a_readable_signed_line(cli, team):
    r = vm(cli, team, "log", "append", "--channel", "backend", "--type", "status", "--summary", "API v2 schema merged",
           "--body", "details <b>here</b>\nsecond line -->", "--json", agent="ella")
    e = out_json(r)
    assert e["id"] == "ella#1" and e["channel"] == "backend" and e["kid"]
    line = (team.root / "shared" / "log" / "ella.md").read_text(encoding="utf-8")
    visible, machine = line.split(" <!-- vm1 ")
    assert visible.startswith("- 20") and "· **ella** · #backend · status — API v2 schema merged<br>details" in visible
    assert "&lt;b&gt;here&lt;/b&gt;" in visible and line.count("-->") == 1 and line.endswith("-->\n")
    assert json.loads(machine[:-4])["s"] == "API v2 schema merged"


@pytest.mark.parametrize(
    "args, agent, code, words",
    [
        (["--summary", "two\nlines"], "ella", 2, "one line"),
        (["--summary", "   "], "ella", 2, "empty"),
        (["--summary", "x", "--channel", "bad channel"], "ella", 2, "--channel"),
        (["--summary", "x"], "nokey", 1, "no key"),
        (["--summary", "x"], None, 2, "--as"),
    ],
)
def test_bad_appends_are_refused(cli, team, args, agent, code, words):
    r = vm(cli, team, "log", "append", *args, agent=agent)
    assert r.exit_code == code and words in r.stderr
    assert not (team.root / "shared" / "log" / "ella.md").exists()


def test_tail_filters_unseen_and_ack(cli, team):
    vm(cli, team, "log", "append", "--summary", "ella one", "--channel", "backend", agent="ella")
    vm(cli, team, "log", "append", "--summary", "max one", "--type", "question", agent="max")
    vm(cli, team, "log", "append", "--summary", "lee one", agent="lee")
    vm(cli, team, "log", "append", "--summary", "ella two", "--channel", "backend", agent="ella")

    def ids(*args, agent=None):
        r = vm(cli, team, "log", "tail", "--json", *args, agent=agent)
        return [json.loads(x)["id"] for x in r.stdout.splitlines()]

    assert ids() == ["ella#1", "max#1", "lee#1", "ella#2"]
    assert ids("-n", "2") == ["lee#1", "ella#2"]
    assert ids("--agent", "ella") == ["ella#1", "ella#2"]
    assert ids("--channel", "backend") == ["ella#1", "ella#2"]
    assert ids("--type", "question") == ["max#1"]
    assert ids("--since", "1h") == ids() and ids("--since", "2999-01-01") == []
    assert ids("--unseen", agent="lee") == ["ella#1", "max#1", "ella#2"]  # not its own
    assert ids("--unseen", agent="lee") == []  # now read
    vm(cli, team, "log", "append", "--summary", "max two", agent="max")
    assert ids("--unseen", agent="lee") == ["max#2"]
    ack = out_json(vm(cli, team, "log", "ack", "max#2", "--json", agent="lee"))
    assert ack["type"] == "ack" and ack["ref"] == "max#2"
    assert vm(cli, team, "log", "ack", "max#9", agent="lee").exit_code == 1
    assert vm(cli, team, "log", "ack", "lee#1", agent="lee").exit_code == 2
    # the next entry records what lee has read: its high-water marks
    lee3 = out_json(vm(cli, team, "log", "append", "--summary", "lee three", "--json", agent="lee"))
    assert lee3["hw"] == {"ella": 2, "max": 2}
    r = vm(cli, team, "log", "tail", "--since", "yesterday")
    assert r.exit_code == 2 and "--since" in r.stderr


def test_follow_prints_entries_from_other_processes(cli, team):
    vm(cli, team, "log", "append", "--summary", "before", agent="ella")
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(team.root), "log", "tail", "-f",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Lines(proc.stdout)
    try:
        # It has printed the tail, so it follows from here on: what comes next is new to it
        # (sleeping 1.5 s instead let a slow start print the new entries as its tail).
        out.wait_for(lambda line: '"summary": "before"' in line)
        for n in range(3):
            subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(team.root), "--as", "max", "log",
                            "append", "--summary", f"live {n}"], check=True, capture_output=True, timeout=SAFETY_NET)
        out.wait_count(4)
    finally:
        proc.terminate()
        proc.wait(timeout=SAFETY_NET)
    assert [json.loads(x)["summary"] for x in out.lines[:4]] == ["before", "live 0", "live 1", "live 2"]


@pytest.mark.usefixtures("both_engines")
def test_decide_records_rationale_and_notes_it_live(cli, team):
    d = out_json(vm(cli, team, "decide", "--decision", "Use PostgreSQL", "--why", "JSONB and RLS", "--json",
                    agent="lee"))
    assert d["decision"]["id"] == "lee#1" and d["decision"]["body"] == "JSONB and RLS"
    assert d["live"]["ref"] == "decisions:lee#1" and d["live"]["type"] == "decision"
    d2 = out_json(vm(cli, team, "decide", "--decision", "Use CockroachDB", "--why", "multi-region",
                     "--supersedes", "lee#1", "--json", agent="ella"))
    assert d2["decision"]["ref"] == "lee#1"
    assert vm(cli, team, "decide", "--decision", "x", "--why", "y", "--supersedes", "lee#7", agent="ella").exit_code == 1
    assert vm(cli, team, "decide", "--decision", "x", "--why", " ", agent="ella").exit_code == 2
    hits = out_json(vm(cli, team, "search", "CockroachDB", "--json"))["hits"]
    assert {h["kind"] for h in hits} == {"decision", "log"}
    r = vm(cli, team, "log", "tail", "--decisions")
    assert "Use PostgreSQL" in r.stdout and "Use CockroachDB" in r.stdout


@pytest.mark.usefixtures("both_engines")
def test_brief_shows_unseen_entries_of_others(cli, team):
    assert vm(cli, team, "page", "ensure", "ella", agent="lee").exit_code == 0
    vm(cli, team, "log", "append", "--summary", "billing API frozen until Friday", agent="max")
    vm(cli, team, "log", "append", "--summary", "my own note", agent="ella")
    data = out_json(vm(cli, team, "brief", "ella", "--task", "billing", "--json"))
    md = data["markdown"]
    assert "## 共享动态（未读）" in md and "max#1" in md and "billing API frozen" in md and data["live_entries"] == 1
    assert "my own note" not in md
    vm(cli, team, "log", "tail", "--unseen", agent="ella")  # ella reads the log
    data = out_json(vm(cli, team, "brief", "ella", "--task", "billing", "--json"))
    assert data["live_entries"] == 0 and "共享动态" not in data["markdown"]


def test_checkpoint_save_show_and_stale(cli, team, tmp_path):
    ctx = tmp_path / "ctx.md"
    ctx.write_text("Working on the invoice export.\n", encoding="utf-8")
    r = vm(cli, team, "checkpoint", "save", str(ctx), "--task", "invoice export", "--step", "3/5",
           "--next", "write tests", "--next", "open PR", agent="ella")
    assert r.exit_code == 0, r.output
    cp = out_json(vm(cli, team, "checkpoint", "show", "ella", "--json"))
    assert (cp["task"], cp["step"], cp["next"], cp["stale"]) == ("invoice export", "3/5", ["write tests", "open PR"],
                                                                  False)
    assert cp["text"] == "Working on the invoice export."
    assert git(team.root, "log", "-1", "--format=%an").strip() == "ella"
    vm(cli, team, "config", "set", "checkpoint.fresh_minutes", "1")
    path = team.root / "checkpoints" / "ella.md"
    path.write_text(path.read_text().replace(cp["saved"][:4], "2020"), encoding="utf-8")
    text = vm(cli, team, "checkpoint", "show", "ella").stdout
    assert "[STALE]" in text and "task: invoice export" in text
    r = vm(cli, team, "checkpoint", "show", "nobody")
    assert r.exit_code == 1 and "no checkpoint" in r.stderr
    assert vm(cli, team, "checkpoint", "save", "-", agent="ella").exit_code == 2  # empty stdin


def test_state_set_and_show_who_changed_it(cli, team):
    assert "no project state yet" in vm(cli, team, "state", "show").stdout
    vm(cli, team, "state", "set", "Phase 2: API v2 in progress", agent="lee")
    st = out_json(vm(cli, team, "state", "show", "--json"))
    assert st["text"] == "Phase 2: API v2 in progress" and st["updated_by"] == "lee"
    assert git(team.root, "log", "-1", "--format=%an|%s").strip() == "lee|state: project state updated by lee"


def test_appends_are_committed_by_log_commit(cli, team):
    vm(cli, team, "log", "append", "--summary", "x", agent="ella")
    assert "shared/log/ella.md" in git(team.root, "status", "--porcelain", "--untracked-files=all")
    assert vm(cli, team, "log", "commit", agent="ella").exit_code == 0
    assert git(team.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert "no new entries" in vm(cli, team, "log", "commit", agent="ella").stdout


def test_rotated_key_keeps_verifying(cli, team):
    vm(cli, team, "log", "append", "--summary", "before", agent="ella")
    r = vm(cli, team, "keys", "rotate", "ella", "--json", agent="ella")
    assert r.exit_code == 0, r.output
    vm(cli, team, "log", "append", "--summary", "after", agent="ella")
    entries, _ = read_entries(team.root / "shared" / "log" / "ella.md")
    assert entries[0].kid != entries[2].kid and entries[1].type == "key-rotate"
    assert vm(cli, team, "log", "verify").exit_code == 0


def test_a_revoked_key_no_longer_signs(cli, team):
    from vaultmem.livelog import append as raw_append
    from vaultmem.livelog import load_private_key

    old_key = load_private_key(team.root, "ella")
    old = out_json(vm(cli, team, "keys", "rotate", "ella", "--json", agent="ella"))
    first_kid = read_entries(team.root / "shared" / "log" / "ella.md")[0][0].kid
    assert vm(cli, team, "keys", "revoke", "ella", old["kid"], agent="ella").exit_code == 2  # the current key
    r = vm(cli, team, "keys", "revoke", "ella", first_kid, "--reason", "leaked", agent="ella")
    assert r.exit_code == 0, r.output
    assert vm(cli, team, "log", "verify").exit_code == 0
    raw_append(team.root, "live", "ella", "general", "status", "signed with the leaked key", private=old_key)
    r = vm(cli, team, "log", "verify", "--json")
    assert r.exit_code == 1 and [f["kind"] for f in out_json(r)["findings"]] == ["revoked-key"]


def test_unseen_never_marks_entries_read_that_it_did_not_show(cli, team):
    for n in range(30):
        team.shared.append(team.actor("max"), "general", "status", f"m{n}")

    def seqs():
        r = vm(cli, team, "log", "tail", "--unseen", "-n", "20", "--json", agent="lee")
        return [json.loads(x)["seq"] for x in r.stdout.splitlines()]

    assert seqs() == list(range(1, 21))  # the oldest unseen first
    assert seqs() == list(range(21, 31))
    assert seqs() == []
