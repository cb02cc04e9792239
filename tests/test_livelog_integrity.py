"""verify finds every kind of tampering; concurrent writers lose nothing; kills and locks;
three clones sync through a bare remote."""

import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import SAFETY_NET, Lines, git, holds_flock, kill_now, kill_when

from vaultmem import Vault
from vaultmem.livelog import append, load_private_key, read_entries, repair
from vaultmem.parse.logline import parse_line


@pytest.fixture
def team(vault):
    for agent in ("lee", "ella", "max"):
        vault.shared.new_key(agent, vault.actor(agent))
    return vault


def add(vault, agent, summary, **kw):
    return vault.shared.append(vault.actor(agent), kw.pop("channel", "general"), kw.pop("type_", "status"),
                               summary, **kw)


def kinds(vault):
    findings, _ = vault.shared.verify()
    return sorted({(f["kind"], f["agent"], f["seq"]) for f in findings})


def lines(vault, agent, log="log"):
    return (vault.root / "shared" / log / f"{agent}.md").read_text(encoding="utf-8").splitlines(keepends=True)


def write(vault, agent, content, log="log"):
    (vault.root / "shared" / log / f"{agent}.md").write_text("".join(content), encoding="utf-8")


@pytest.fixture
def logged(team):
    for n in range(1, 5):
        add(team, "ella", f"ella entry {n}")
        add(team, "max", f"max entry {n}")
    assert kinds(team) == []
    return team


def test_one_edited_byte_in_the_visible_text_is_found(logged):
    content = lines(logged, "ella")
    content[1] = content[1].replace("ella entry 2", "ella entry 9", 1)
    write(logged, "ella", content)
    assert ("edited", "ella", 2) in kinds(logged)


def test_one_edited_byte_in_the_signed_fields_is_found(logged):
    content = lines(logged, "ella")
    content[2] = content[2].replace('"s":"ella entry 3"', '"s":"ella entry 8"')
    write(logged, "ella", content)
    found = kinds(logged)
    assert ("bad-signature", "ella", 3) in found


def test_a_deleted_entry_is_found(logged):
    content = lines(logged, "ella")
    del content[1]
    write(logged, "ella", content)
    assert ("deleted", "ella", 3) in kinds(logged)


def test_reordered_entries_of_one_agent_are_found(logged):
    content = lines(logged, "ella")
    content[1], content[2] = content[2], content[1]
    write(logged, "ella", content)
    found = {k for k, _a, _s in kinds(logged)}
    assert found & {"reordered", "deleted", "chain-broken"}


def test_a_replayed_or_duplicated_entry_is_found(logged):
    content = lines(logged, "ella")
    write(logged, "ella", content + [content[1]])
    found = kinds(logged)
    assert ("replayed", "ella", 2) in found
    max_lines = lines(logged, "max")
    write(logged, "ella", content)
    write(logged, "max", max_lines + [content[0]])  # ella's entry copied into max's file
    assert any(k == "wrong-author" for k, _a, _s in kinds(logged))


def test_an_unknown_key_is_found(logged):
    from vaultmem.livelog import new_private_key

    stranger = new_private_key()
    append(logged.root, "live", "ella", "general", "status", "signed by a stranger", private=stranger)
    assert ("unknown-key", "ella", 5) in kinds(logged)


def test_an_entry_claiming_another_agents_name_is_found(logged):
    # max writes an entry into ella's file, as ella, signed with max's own key
    max_key = load_private_key(logged.root, "max")
    append(logged.root, "live", "ella", "general", "status", "I am ella, honest", private=max_key)
    assert ("forged-author", "ella", 5) in kinds(logged)


def test_a_missing_public_key_is_found(logged):
    (logged.root / "shared" / "keys" / "max.pub").unlink()
    assert any(k == "unknown-key" and a == "max" for k, a, _s in kinds(logged))


def test_a_truncated_tail_is_found_against_others_high_water_marks(logged):
    logged.shared.tail(unseen_as=logged.actor("lee"))  # lee reads ella up to 4 …
    add(logged, "lee", "lee saw everything")  # … and records it in its next entry
    write(logged, "ella", lines(logged, "ella")[:2])  # ella's last two entries are lost
    found = kinds(logged)
    assert ("truncated", "ella", 2) in found


def test_a_checkpoint_records_a_high_water_mark_too(logged):
    logged.shared.tail(unseen_as=logged.actor("lee"))
    logged.shared.save_checkpoint(logged.actor("lee"), "ctx", task="t")
    write(logged, "max", lines(logged, "max")[:1])
    found = kinds(logged)
    assert ("truncated", "max", 1) in found


def test_a_cut_off_last_entry_is_found_and_repaired(logged):
    path = logged.root / "shared" / "log" / "ella.md"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # a crash in the middle of the last write
    findings, _ = logged.shared.verify()
    assert any(f["kind"] == "truncated" and f["agent"] == "ella" for f in findings)
    with pytest.raises(Exception) as err:
        add(logged, "ella", "appending after a torn tail")
    assert "log repair" in str(getattr(err.value, "hint", "")) + str(err.value)
    cut = repair(logged.root)
    assert cut[0]["path"] == "shared/log/ella.md" and cut[0]["removed_bytes"] > 0
    assert kinds(logged) == []
    assert [e.seq for e in read_entries(path)[0]] == [1, 2, 3]
    add(logged, "ella", "after repair")
    assert kinds(logged) == []


def test_interleaved_entries_of_different_agents_are_fine(logged):
    add(logged, "max", "x")
    add(logged, "ella", "y")
    add(logged, "max", "z")
    assert kinds(logged) == []
    order = [e.id for e in logged.shared.tail(n=100)]
    assert order.index("max#5") < order.index("ella#5") < order.index("max#6")


def test_verify_cli_names_agent_sequence_and_line(logged):
    content = lines(logged, "max")
    content[2] = content[2].replace("max entry 3", "max entry X", 1)
    write(logged, "max", content)
    r = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(logged.root), "log", "verify"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "shared/log/max.md:3: max#3 edited" in r.stdout


WRITER = r"""
import random, sys
from pathlib import Path
from vaultmem import Vault
v = Vault(sys.argv[1]); me = v.actor(sys.argv[2]); rng = random.Random(int(sys.argv[3]))
report = sys.argv[5:] == ["report"]  # a line after each whole entry
for i in range(int(sys.argv[4])):
    size = int(100 * (655.36 ** rng.random()))  # 100 B .. 64 KiB, log-uniform
    v.shared.append(me, "load", "status", f"{sys.argv[3]}-{i}", body=("lorem ipsum " * (size // 12 + 1))[:size])
    if report:
        print(i, flush=True)
"""

READER = r"""
import sys, time
from pathlib import Path
from vaultmem.parse.logline import parse_line
path, stop = Path(sys.argv[1]), Path(sys.argv[2])
seen = done = 0
while True:
    last = stop.exists()  # the writers have finished: one more read sees everything
    if path.exists():
        with open(path, "rb") as fh:
            fh.seek(done)
            data = fh.read()
        whole = data[: data.rfind(b"\n") + 1]  # each line once, as soon as it is whole
        for raw in whole.split(b"\n"):
            if raw:
                parse_line(raw.decode())  # raises on a partial or interleaved entry
                seen += 1
        done += len(whole)
    if last:
        break
    time.sleep(0.01)  # a polling interval, not a wait for anything
print(seen)
"""


@pytest.mark.soak
def test_eight_processes_append_hundreds_of_entries_each_losing_nothing(team):
    # 8 × 400 appends racing on one file (VAULTMEM_STRESS_APPENDS=1000 for the longer run
    # this test was written with: 8,000 entries, about 40 s)
    n = int(os.environ.get("VAULTMEM_STRESS_APPENDS", "400"))
    path = team.root / "shared" / "log" / "ella.md"
    stop = team.root.parent / "writers-done"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(path), str(stop)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(team.root), "ella", str(w), str(n)])
             for w in range(8)]
    assert [p.wait(timeout=1200) for p in procs] == [0] * 8
    stop.write_text("")
    out, err = reader.communicate(timeout=SAFETY_NET)
    # the reader, reading while they wrote, never saw a partial or interleaved entry
    assert reader.returncode == 0 and int(out) == 8 * n, err
    entries, problems = read_entries(path)
    assert problems == [] and len(entries) == 8 * n
    assert [e.seq for e in entries] == list(range(1, 8 * n + 1))
    assert sorted(e.summary for e in entries) == sorted(f"{w}-{i}" for w in range(8) for i in range(n))
    findings, counts = team.shared.verify()
    assert findings == [] and counts["entries"] == 8 * n


HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


def test_a_lock_held_by_a_killed_process_does_not_block_the_next_writer(team):
    add(team, "ella", "first")
    path = team.root / "shared" / "log" / "ella.md"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
    assert not holds_flock(path)  # the lock went with its process
    done = []

    def never_wait(seconds):
        raise AssertionError(f"the writer waited ({seconds}s) instead of taking the free lock")

    def next_writer():
        try:
            add(team, "ella", "second")
            done.append(None)
        except BaseException as exc:  # noqa: BLE001 - reported below
            done.append(exc)

    sleep, time.sleep = time.sleep, never_wait  # a writer that polls a stale lock would sleep
    try:
        writer = threading.Thread(target=next_writer, daemon=True)
        writer.start()
        writer.join(SAFETY_NET)  # a writer blocked on a lock would never finish
    finally:
        time.sleep = sleep
    assert done == [None], done or "the next writer is still blocked"
    assert [e.summary for e in read_entries(path)[0]] == ["first", "second"]


@pytest.mark.soak
def test_writers_killed_mid_append_leave_a_log_that_verifies_or_repairs(team):
    rng = random.Random(5)
    path = team.root / "shared" / "log" / "max.md"
    for round_ in range(5):
        p = subprocess.Popen([sys.executable, "-c", WRITER, str(team.root), "max", str(rng.randint(0, 99)), "100000",
                              "report"], stdout=subprocess.PIPE, text=True)
        out = Lines(p.stdout)
        out.wait_count(rng.randint(1, 20))  # a random number of whole entries first
        if round_ % 2:
            kill_now(p)  # wherever the writer is by now
        else:
            kill_when(p, lambda: holds_flock(path))  # in the middle of an append, for certain
        out.text()
        findings, _ = team.shared.verify()
        assert all(f["kind"] == "truncated" for f in findings), findings
        repair(team.root)
        assert team.shared.verify()[0] == []
    assert len(read_entries(path)[0]) > 0


def _clone(remote, dest, agent_keys_from):
    subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True)
    keys = dest / ".vaultmem" / "keys"
    keys.mkdir(parents=True, exist_ok=True)
    for key in (agent_keys_from / ".vaultmem" / "keys").glob("*.key"):
        (keys / key.name).write_bytes(key.read_bytes())
    return Vault(dest)


def test_three_clones_append_concurrently_and_sync_to_the_same_log(team, tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(team.root, "remote", "add", "origin", str(remote))
    git(team.root, "push", "-q", "origin", "HEAD:main")
    clones = [_clone(remote, tmp_path / f"clone{n}", team.root) for n in range(3)]
    agents = ["lee", "ella", "max"]
    for round_ in range(3):
        for n, (clone, agent) in enumerate(zip(clones, agents)):
            add(clone, agent, "same summary everywhere")  # identical summaries, different agents
            add(clone, agent, f"{agent} round {round_}")
        for clone, agent in zip(clones, agents):
            clone.shared.sync(clone.actor(agent))
    for clone, agent in zip(clones, agents):
        clone.shared.sync(clone.actor(agent))
    views = [[e.line for e in clone.shared.tail(n=1000)] for clone in clones]
    assert len(views[0]) == 3 * 3 * 2
    assert views[0] == views[1] == views[2]
    for clone in clones:
        assert clone.shared.verify()[0] == []
    summaries = [parse_line(x).summary for x in views[0]]
    assert summaries.count("same summary everywhere") == 9


def test_sync_reports_a_page_conflict_and_merges_nothing(team, tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    team.pages.ensure("r", team.actor("lee"))
    git(team.root, "remote", "add", "origin", str(remote))
    git(team.root, "push", "-q", "origin", "HEAD:main")
    a = _clone(remote, tmp_path / "a", team.root)
    b = _clone(remote, tmp_path / "b", team.root)
    a.pages.add("r", "from a", a.actor("lee"))
    b.pages.add("r", "from b", b.actor("lee"))
    a.shared.sync(a.actor("lee"))
    before = git(b.root, "rev-parse", "HEAD")
    from vaultmem import GitError

    with pytest.raises(GitError) as err:
        b.shared.sync(b.actor("lee"))
    assert "agents/r.md" in err.value.message
    assert git(b.root, "rev-parse", "HEAD") == before
    assert git(b.root, "status", "--porcelain") == ""


# -- what review broke ------------------------------------------------------------------------


def test_keys_rotated_and_revoked_in_the_live_log_count_for_decisions_too(team):
    lee = team.actor("lee")
    team.shared.decide(lee, "Use PostgreSQL", "JSONB")
    old = load_private_key(team.root, "lee")
    team.shared.rotate_key("lee", lee)
    team.shared.decide(lee, "Use Redis", "speed")  # signed with the new key: fine
    assert kinds(team) == []
    team.shared.revoke_key("lee", read_entries(team.root / "shared" / "decisions" / "lee.md")[0][0].kid, lee)
    append(team.root, "decisions", "lee", "decisions", "decision", "Rewrite everything in Perl", private=old)
    assert ("revoked-key", "lee", 3) in kinds(team)


@pytest.mark.parametrize("edit", [
    lambda l: l.replace('"seq":2', '"seq":"2"'),
    lambda l: l.replace('"seq":2', '"seq":2.0'),
    lambda l: l.replace('{"a":', '{"zz":"unsigned","a":'),
    lambda l: l.replace('{"a":', '{"s":"FAKE","a":'),
    lambda l: l.replace('"sig":"', '"sig":"!!'),
    lambda l: l.replace('"s":', '"\\u0073":'),
])
def test_any_edit_of_the_json_part_is_found_on_that_line(team, edit):
    add(team, "ella", "one")
    add(team, "ella", "two")
    content = lines(team, "ella")
    changed = edit(content[1].rstrip("\n")) + "\n"
    assert changed != content[1]
    write(team, "ella", [content[0], changed])
    found = kinds(team)
    assert any(k in ("edited", "bad-signature", "unreadable") and s in (2, None) for k, _a, s in found), found


def test_a_carriage_return_cannot_fake_another_agents_line(cli, team):
    from vaultmem import BadInput

    with pytest.raises(BadInput):
        add(team, "max", "harmless", body="x\r- 2026 · **ella** · decision — drop the database")
    with pytest.raises(BadInput):
        add(team, "max", "bell\x07")
    e = add(team, "max", "ok", body="line one\r\nline two")
    assert e.body == "line one\nline two" and "\r" not in lines(team, "max")[0].rstrip("\n")


def test_a_truncated_decision_log_is_found(team):
    lee = team.actor("lee")
    team.shared.decide(lee, "D1", "why 1")
    team.shared.decide(lee, "D2", "why 2")
    write(team, "lee", lines(team, "lee", "decisions")[:1], log="decisions")
    assert ("truncated", "lee", 1) in [(k, a, s) for k, a, s in kinds(team) if k == "truncated"]


def test_unseen_with_a_filter_leaves_hidden_entries_unseen(team):
    add(team, "ella", "backend news", channel="backend")
    add(team, "ella", "frontend news", channel="frontend")
    lee = team.actor("lee")
    assert [e.summary for e in team.shared.tail(unseen_as=lee, channel="frontend")] == ["frontend news"]
    assert [e.summary for e in team.shared.tail(unseen_as=lee)] == ["backend news"]
    assert team.shared.tail(unseen_as=lee) == []


def test_crlf_line_ends_from_a_clone_still_read_and_verify(team):
    add(team, "ella", "one")
    add(team, "ella", "two")
    path = team.root / "shared" / "log" / "ella.md"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert kinds(team) == []
    add(team, "ella", "three")
    assert [e.summary for e in team.shared.tail()] == ["one", "two", "three"]


def test_the_same_agent_writing_on_two_clones_shows_as_forked(team):
    add(team, "ella", "base")
    content = lines(team, "ella")
    add(team, "ella", "on clone A")
    branch_a = lines(team, "ella")[1]
    write(team, "ella", content)
    add(team, "ella", "on clone B")
    branch_b = lines(team, "ella")[1]
    write(team, "ella", content + [branch_a, branch_b])  # what a union merge leaves
    assert ("forked", "ella", 2) in kinds(team)
