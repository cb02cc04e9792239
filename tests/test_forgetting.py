"""Forgetting: retention scores, gc to the archive, restore (real git vaults, the real CLI,
real subprocesses for a killed run and for concurrent writers)."""

import datetime as dt
import json
import os
import signal
import subprocess
import sys

import pytest
from conftest import git, out_json, run_vaultmem, vaultmem_in_process
from test_kills import wait_for

from vaultmem import forgetting, upkeep, usage
from vaultmem.vault import Vault

OLD = "2026-01-01T10:00:00Z"  # eleven months before the tests' 'now'
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


def vm(cli, vault, *args, agent=None, input=None):
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args, input=input)


def note(vault, slug, type_="episode", confirmed=OLD, importance=0.5, extra="", body=None):
    text = (f"---\nname: {slug}\ndescription: {slug}\ntype: {type_}\nscope: global\nimportance: {importance}\n"
            f"created: {confirmed}\nconfirmed: {confirmed}\nstatus: active\n{extra}---\n{body or slug + ' happened'}\n")
    (vault.root / "memories" / f"{slug}.md").write_text(text, encoding="utf-8")
    index = vault.root / "MEMORY.md"
    lines = index.read_text(encoding="utf-8").replace(
        "<!-- vaultmem:index:end", f"- [[memories/{slug}|{slug}]] ({type_})\n<!-- vaultmem:index:end")
    index.write_text(lines, encoding="utf-8")
    return text


def commit(vault, message="notes by hand"):
    git(vault.root, "add", "-A")
    git(vault.root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", message)


def active(vault):
    return sorted(p.stem for p in (vault.root / "memories").glob("*.md"))


def archived(vault):
    return sorted(p.stem for p in (vault.root / "archive" / "memories").glob("*.md"))


def test_scores_decay_by_type_and_use_keeps_a_note_alive():
    policy = forgetting.Policy()
    meta = {"type": "episode", "importance": 0.5, "confirmed": "2026-10-02T00:00:00Z"}
    s = forgetting.score("e", meta, NOW, None, policy)
    assert s.age_days == pytest.approx(60) and s.decay == pytest.approx(0.25) and s.score == pytest.approx(0.075)
    # the same age for a fact (half-life a year) barely decays; a procedure never does
    assert forgetting.score("f", {**meta, "type": "fact"}, NOW, None, policy).score > 0.26
    assert forgetting.score("p", {**meta, "type": "procedure"}, NOW, None, policy).decay == 1.0
    # recalled eight times, last a week ago: use counts in full and the clock restarts
    used = forgetting.score("e", meta, NOW, (8, "2026-11-24T00:00:00Z"), policy)
    assert used.usage == 1.0 and used.age_days == pytest.approx(7) and used.score == pytest.approx(0.8507 * 0.7, abs=1e-3)
    parts = used.to_dict()["parts"]
    assert set(parts) == {"importance", "last_seen", "age_days", "half_life_days", "decay", "recalls", "usage"}


def test_gc_dry_run_lists_exactly_what_gc_then_archives_in_one_commit(cli, vault):
    note(vault, "old-trip", confirmed=OLD)
    note(vault, "old-lunch", confirmed=OLD, importance=0.2)
    note(vault, "pinned-trip", confirmed=OLD, extra="pinned: true\n")
    note(vault, "until-next-year", confirmed=OLD, extra="expires: 2099-01-01\n")
    note(vault, "expired-offer", type_="fact", confirmed="2026-11-30T10:00:00Z", extra="expires: 2026-02-01\n")
    note(vault, "how-to-deploy", type_="procedure", confirmed=OLD)
    note(vault, "fresh-fact", type_="fact", confirmed="2026-11-20T10:00:00Z")
    commit(vault)
    r = vm(cli, vault, "gc", "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    planned = out_json(r)
    going = [x["slug"] for x in planned["archive"]]
    assert sorted(going) == ["expired-offer", "old-lunch", "old-trip"]
    why = {x["slug"]: x for x in planned["archive"]}
    assert why["expired-offer"]["reason"].startswith("expired on 2026-02-01")
    assert why["old-trip"]["parts"]["half_life_days"] == 30 and why["old-trip"]["score"] < 0.1
    assert active(vault) == ["expired-offer", "fresh-fact", "how-to-deploy", "old-lunch", "old-trip",
                             "pinned-trip", "until-next-year"]  # a dry run changes nothing
    assert git(vault.root, "status", "--porcelain") == ""
    head = git(vault.root, "rev-parse", "HEAD")
    r = vm(cli, vault, "gc", "--json")
    assert r.exit_code == 0, r.output
    done = out_json(r)
    assert [x["slug"] for x in done["archive"]] == going
    assert git(vault.root, "rev-list", "--count", f"{head.strip()}..HEAD").strip() == "1"
    body = git(vault.root, "log", "-1", "--format=%B")
    assert body.startswith("gc: archive 3 notes") and all(f"memories/{s}.md score" in body for s in going)
    assert active(vault) == ["fresh-fact", "how-to-deploy", "pinned-trip", "until-next-year"]
    assert archived(vault) == sorted(going)
    index = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert "old-trip" not in index and "pinned-trip" in index
    moved = (vault.root / "archive/memories/old-trip.md").read_text(encoding="utf-8")
    assert "status: archived" in moved and "gc_score:" in moved and "archive_reason: 'gc: score" in moved
    assert git(vault.root, "status", "--porcelain") == ""
    # a second run finds nothing more
    assert out_json(vm(cli, vault, "gc", "--json"))["archive"] == []


def test_every_archived_note_is_restored_byte_for_byte(cli, vault):
    texts = {s: note(vault, s, confirmed=OLD, body=f"{s}: 旧的记忆，一字不差") for s in ("北京出差", "trip-2", "trip-3")}
    commit(vault)
    assert vm(cli, vault, "gc").exit_code == 0
    assert active(vault) == []
    for slug, text in texts.items():
        r = vm(cli, vault, "restore", slug, "--json")
        assert r.exit_code == 0, r.output
        assert out_json(r)["exact"] is True
        assert (vault.root / "memories" / f"{slug}.md").read_bytes() == text.encode("utf-8")
    assert archived(vault) == [] and git(vault.root, "status", "--porcelain") == ""
    assert "[[memories/北京出差|" in (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert [h.doc.id for h in vault.search("北京出差")][:1] == ["memories/北京出差.md"]


def test_restore_keeps_an_edit_made_in_the_archive_and_refuses_to_overwrite(cli, vault):
    note(vault, "trip", confirmed=OLD)
    commit(vault)
    vm(cli, vault, "gc")
    moved = vault.root / "archive/memories/trip.md"
    moved.write_text(moved.read_text(encoding="utf-8").replace("trip happened", "trip happened, in May"),
                     encoding="utf-8")
    commit(vault, "a human corrects the archived note")
    note(vault, "trip", type_="fact", confirmed=OLD, body="another note took the name")
    r = vm(cli, vault, "restore", "trip")
    assert r.exit_code == 2 and "memories/trip.md exists" in r.output
    (vault.root / "memories" / "trip.md").unlink()
    git(vault.root, "checkout", "--", "MEMORY.md")
    r = vm(cli, vault, "restore", "trip", "--json")
    assert r.exit_code == 0, r.output
    back = (vault.root / "memories/trip.md").read_text(encoding="utf-8")
    assert "trip happened, in May" in back and "status: active" in back
    assert "archived" not in back and "gc_score" not in back and "archive_reason" not in back
    assert out_json(r)["exact"] is False and "edited in the archive" in " ".join(out_json(r)["warnings"])
    assert vm(cli, vault, "restore", "../etc/passwd").exit_code != 0


def test_a_human_edit_not_yet_committed_is_never_swept_into_the_archive(cli, vault):
    note(vault, "trip", confirmed=OLD)
    note(vault, "lunch", confirmed=OLD)
    commit(vault)
    path = vault.root / "memories/trip.md"
    path.write_text(path.read_text(encoding="utf-8") + "A line the human is still writing.\n", encoding="utf-8")
    r = vm(cli, vault, "gc", "--json")
    assert r.exit_code == 0, r.output
    got = out_json(r)
    assert [x["slug"] for x in got["archive"]] == ["lunch"]
    assert got["skipped"][0]["path"] == "memories/trip.md" and "uncommitted" in got["skipped"][0]["reason"]
    assert "still writing" in path.read_text(encoding="utf-8")
    assert git(vault.root, "status", "--porcelain").strip() == "M memories/trip.md"


def test_caps_archive_the_lowest_scores_beyond_the_cap(cli, vault):
    cfg = vault.root / ".vaultmem/config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("  caps: {}", "  caps:\n    episode: 2"), encoding="utf-8")
    for n, imp in enumerate([0.9, 0.8, 0.3, 0.2]):
        note(vault, f"e{n}", confirmed="2026-11-30T10:00:00Z", importance=imp)
    note(vault, "pinned", confirmed="2026-11-30T10:00:00Z", importance=0.1, extra="pinned: true\n")
    commit(vault)
    got = out_json(vm(cli, vault, "gc", "--dry-run", "--json"))
    assert {x["slug"]: x["reason"].split(" (")[0] for x in got["archive"]} == {
        "e2": "over the cap of 2 episode notes", "e3": "over the cap of 2 episode notes",
        "e1": "over the cap of 2 episode notes"}  # the pinned one takes a place and stays
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("episode: 2", "episod: 2"), encoding="utf-8")
    r = vm(cli, vault, "gc", "--dry-run")
    assert r.exit_code == 1 and "forgetting.caps.episod" in r.output and "memory.types" in r.output
    assert "config.yaml:" in r.output  # the file and its line


def test_a_brief_that_cites_a_note_keeps_it_from_decaying(vault):
    note(vault, "kafka-outage", confirmed=OLD, body="Kafka 集群 outage: the broker disk filled up")
    note(vault, "lunch", confirmed=OLD)
    commit(vault)
    made = vault.brief("后端", "kafka broker outage")
    assert any(i["path"] == "memories/kafka-outage.md" for i in made.items)
    use = usage.read_usage(vault.root)
    assert use["memories/kafka-outage.md"][0] == 1 and "memories/lunch.md" not in use
    assert git(vault.root, "status", "--porcelain") == ""  # usage data is never committed
    plan, _ = upkeep.gc(vault, vault.actor(None), dry_run=True)
    assert [s.slug for s in plan.archive] == ["lunch"]  # recalled today: its clock restarted
    # a torn line (a crash mid-append) is skipped, the rest still counts
    with open(vault.root / ".vaultmem/local/usage.jsonl", "ab") as f:
        f.write(b'{"t": "2026-12-01T00:00:00Z", "via": "brief", "ids": ["memories/lu')
    assert usage.read_usage(vault.root)["memories/kafka-outage.md"][0] == 1


def test_a_process_that_stays_writes_its_usage_records_together_soon_after_and_in_order(vault):
    """A long-lived process (the MCP server) holds what its searches and briefs recalled
    and appends it in one write, within a second: another process reads every record
    then, once each and in the order made, with no call of the server's needed; its own
    reads see them at once; at close nothing held is left behind."""
    note(vault, "kafka-outage", confirmed=OLD, body="Kafka 集群 outage: the broker disk filled up")
    commit(vault)
    path = vault.root / ".vaultmem/local/usage.jsonl"
    lines = lambda: path.read_bytes().splitlines() if path.exists() else []  # noqa: E731

    def read_elsewhere() -> list[dict]:  # what another process reads
        r = subprocess.run([sys.executable, "-c", "import sys; print(open(sys.argv[1], encoding='utf-8').read())",
                            str(path)], capture_output=True, text=True, timeout=60)
        return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]

    held = Vault.open(vault.root)
    held.stays_open()
    try:
        start = len(lines())
        held.search("kafka broker")
        held.brief("后端", "kafka broker outage")
        held.search("broker disk")
        assert usage.read_usage(vault.root)["memories/kafka-outage.md"][0] == 3  # its own read: at once
        held.search("kafka outage")
        wait_for(lambda: len(lines()) == start + 4, "the fourth record, written without a call")
        made = read_elsewhere()[start:]
        assert [r["via"] for r in made] == ["search", "brief", "search", "search"]
        assert [r["t"] for r in made] == sorted(r["t"] for r in made)
        held.search("kafka")
    finally:
        held.close()
    assert len(lines()) == start + 5  # the one still held when it closed
    vault.search("kafka")  # a process that does not stay writes at once
    assert len(lines()) == start + 6


def _counted_afresh(root) -> dict:
    """The usage file counted whole, line by line, as read_usage counted it before it kept
    its counts."""
    out: dict = {}
    for raw in (root / ".vaultmem/local/usage.jsonl").read_bytes().splitlines():
        try:
            rec = json.loads(raw)
            t, ids = str(rec["t"]), rec["ids"]
        except (ValueError, KeyError, TypeError):
            continue
        for p in ids:
            n, last = out.get(p, (0, ""))
            out[p] = (n + 1, max(last, t))
    return out


def test_usage_is_counted_once_then_only_what_was_appended(vault, monkeypatch):
    """A brief of a large page reads the recalls at every call, and the file only grows:
    it is counted once, then only what was appended — in this process, and from the counts
    kept for the next one — and counted afresh when it is no longer the file counted."""
    monkeypatch.setattr(usage, "COUNTS_EVERY", 2000)  # keep the counts for the next process often
    path, counts = vault.root / ".vaultmem/local/usage.jsonl", vault.root / ".vaultmem/local/usage.counts"
    day = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    for n in range(60):
        usage.record_use(vault.root, [f"memories/n{n % 7}.md", f"agents/后端.md#^m-{n % 3}"], "brief",
                         when=day + dt.timedelta(hours=n), question=f"q{n}", agent="后端")
    assert usage.read_usage(vault.root) == _counted_afresh(vault.root) and counts.is_file()
    # a line still being written is counted once it is whole, and once
    with open(path, "ab") as f:
        f.write(b'{"t": "2026-12-02T00:00:00.000000Z", "via": "search", "ids": ["memories/n1.md"')
    torn = usage.read_usage(vault.root)
    assert torn["memories/n1.md"][0] == 9
    with open(path, "ab") as f:
        f.write(b']}\n')
    assert usage.read_usage(vault.root)["memories/n1.md"] == (10, "2026-12-02T00:00:00.000000Z")
    assert usage.read_usage(vault.root) == _counted_afresh(vault.root)
    # another process goes on from the counts kept, reading only what follows them: a count
    # changed in the kept file (and only there) shows through
    kept = json.loads(counts.read_bytes())
    kept["counts"]["memories/only-in-the-kept-counts.md"] = [5, "2026-11-05T00:00:00.000000Z"]
    counts.write_text(json.dumps(kept), encoding="utf-8")
    usage.record_use(vault.root, ["memories/n2.md"], "search", when=day + dt.timedelta(days=40))
    code = "import sys, json; from vaultmem import usage; print(json.dumps(usage.read_usage(sys.argv[1])))"
    other = json.loads(subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True,
                                      text=True, check=True).stdout)
    assert other.pop("memories/only-in-the-kept-counts.md") == [5, "2026-11-05T00:00:00.000000Z"]
    assert {p: tuple(v) for p, v in other.items()} == _counted_afresh(vault.root)
    # the file replaced (removed, then written anew): neither this process's counts nor the
    # kept ones are of it
    path.unlink()
    usage.record_use(vault.root, ["memories/n3.md"], "search", when=day)
    assert usage.read_usage(vault.root) == {"memories/n3.md": (1, "2026-11-01T00:00:00.000000Z")}
    # cut in place (the same file, shorter), and counts that are not counts: counted afresh
    usage.record_use(vault.root, [f"memories/n{n}.md" for n in range(50)], "search", when=day)
    usage.read_usage(vault.root)
    with open(path, "r+b") as f:
        f.truncate(len(path.read_bytes().splitlines(keepends=True)[0]))
    monkeypatch.setattr(usage, "COUNTS_EVERY", 1)  # these counts kept too: of the file as it is
    assert usage.read_usage(vault.root) == {"memories/n3.md": (1, "2026-11-01T00:00:00.000000Z")}
    valid = json.loads(counts.read_bytes())
    assert valid["offset"] == path.stat().st_size
    damaged = [b"not json", b'{"v": 2, "ino": "x"}', b"[" * 100_000 + b"]" * 100_000,
               json.dumps({**valid, "counts": {"memories/n3.md": [1, 2]}}).encode(),  # of this file, not counts
               json.dumps({**valid, "offset": -5}).encode()]
    for bad in damaged:
        counts.write_bytes(bad)
        assert subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True, text=True,
                              check=True).stdout.strip() == '{"memories/n3.md": [1, "2026-11-01T00:00:00.000000Z"]}'


def test_usage_emptied_in_place_and_written_again_is_counted_afresh(vault, monkeypatch):
    """The same inode, grown past what was counted, its last bytes as before (the same
    question, lines of one length): still another file, told apart by its first line."""
    monkeypatch.setattr(usage, "COUNTS_EVERY", 1)
    path = vault.root / ".vaultmem/local/usage.jsonl"
    day = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)

    def brief(slug: str, n: int, start: dt.datetime) -> None:
        for k in range(n):
            usage.record_use(vault.root, [f"memories/{slug}.md", "memories/x.md"], "brief",
                             when=start + dt.timedelta(seconds=k), question="kafka broker", agent="后端")

    brief("aaa", 20, day)
    assert usage.read_usage(vault.root)["memories/aaa.md"][0] == 20
    ino = path.stat().st_ino
    with open(path, "r+b") as f:  # emptied in place: the same inode
        f.truncate(0)
    brief("bbb", 25, day + dt.timedelta(days=1))
    assert path.stat().st_ino == ino
    code = "import sys, json; from vaultmem import usage; print(json.dumps(usage.read_usage(sys.argv[1])))"
    other = json.loads(subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True,
                                      text=True, check=True).stdout)  # from the counts kept of the first
    for got in ({p: tuple(v) for p, v in other.items()}, usage.read_usage(vault.root)):  # and this process's
        assert got == _counted_afresh(vault.root) and "memories/aaa.md" not in got
        assert got["memories/bbb.md"][0] == 25 and got["memories/x.md"][0] == 25


def test_held_usage_records_are_written_at_once_when_no_thread_can_be_started(vault, monkeypatch):
    """Where the writing thread cannot be started (a thread limit, a process ending), a
    search still answers and its record — with those held before it — is written at once;
    the next record tries the timer again."""
    import threading

    note(vault, "kafka-outage", confirmed=OLD, body="Kafka 集群 outage: the broker disk filled up")
    commit(vault)
    path = vault.root / ".vaultmem/local/usage.jsonl"
    lines = lambda: path.read_bytes().splitlines() if path.exists() else []  # noqa: E731
    held = Vault.open(vault.root)
    held.stays_open()
    try:
        start = len(lines())

        def no_thread(self):
            raise RuntimeError("can't start new thread")

        with monkeypatch.context() as m:
            m.setattr(threading.Timer, "start", no_thread)
            assert [h.doc.id for h in held.search("kafka broker")] == ["memories/kafka-outage.md"]
            # at once (or by a timer started earlier, still pending): never left waiting for a flush
            wait_for(lambda: len(lines()) == start + 1, "the record made while no thread could start")
        held.search("kafka outage")  # threads again: held, written within a second
        wait_for(lambda: len(lines()) == start + 2, "the record held once threads can start again")
    finally:
        held.close()


def test_a_forked_child_neither_writes_its_parents_held_records_nor_loses_its_own(vault):
    """A process that holds records and forks: the child writes its own at once (it holds
    none), never the parent's, which the parent writes once."""
    note(vault, "kafka-outage", confirmed=OLD, body="Kafka 集群 outage: the broker disk filled up")
    commit(vault)
    path = vault.root / ".vaultmem/local/usage.jsonl"
    held = Vault.open(vault.root)
    held.stays_open()
    try:
        held.search("kafka broker")  # held by the parent
        pid = os.fork()
        if pid == 0:  # the child: its own search, then read, then gone without running atexit
            try:
                held.search("broker disk")
                ok = usage.read_usage(vault.root)["memories/kafka-outage.md"][0] == 1  # the parent's not yet
                os._exit(0 if ok else 3)
            except BaseException:
                os._exit(4)
        status: list[int] = []

        def ended() -> bool:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                status.append(os.waitstatus_to_exitcode(code))
            return bool(status)

        try:
            wait_for(ended, "the forked child")  # a bound on a hang, not a budget
        finally:
            if not status:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        assert status == [0]
    finally:
        held.close()
    made = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert sorted(r["q"] for r in made) == sorted({usage.fingerprint("kafka broker"), usage.fingerprint("broker disk")})


def test_agents_may_look_but_not_collect(cli, vault):
    note(vault, "trip", confirmed=OLD)
    commit(vault)
    assert vm(cli, vault, "gc", "--dry-run", agent="ella").exit_code == 0
    r = vm(cli, vault, "gc", agent="ella")
    assert r.exit_code != 0 and "may not run gc" in r.output
    assert active(vault) == ["trip"]


@pytest.mark.soak
def test_a_gc_killed_at_any_step_leaves_the_vault_as_before_or_as_after(vault, tmp_path):
    """SIGKILL just before each file-system step of a real `vaultmem gc` process."""
    from test_kills import clean_env, kill_at, kill_points

    for n in range(4):
        note(vault, f"old-{n}", confirmed=OLD)
    note(vault, "fresh", type_="fact", confirmed="2026-11-30T10:00:00Z")
    commit(vault)
    import shutil

    _counting, points = kill_points(vault.root, ["gc"], tmp_path)
    assert points
    before = sorted(p.name for p in (vault.root / "memories").glob("*.md"))
    problems = []
    for point in points:
        root = tmp_path / f"case-{point.replace(':', '-')}"
        shutil.copytree(vault.root, root, symlinks=True)
        done = kill_at(root, ["gc"], point)
        if done.returncode != -9:
            problems.append(f"{point}: not reached ({done.returncode})")
            continue
        # the next command settles the dead writer; then the vault is as before or as after
        subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), "conflicts"], capture_output=True,
                       timeout=120, env=clean_env())
        now = sorted(p.name for p in (root / "memories").glob("*.md"))
        gone = sorted(p.name for p in (root / "archive/memories").glob("*.md"))
        status = git(root, "status", "--porcelain").strip()
        if not ((now == before and gone == []) or (now == ["fresh.md"] and len(gone) == 4)) or status:
            problems.append(f"{point}: memories {now}, archive {gone}, status {status!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.soak
def test_gc_while_agents_write_and_a_watcher_runs_loses_no_write(vault, tmp_path):
    """While gc archives 30 notes, with `vaultmem watch` running: two processes remember,
    the orchestrator adds page entries, a human approves an agent's proposals — every
    write lands and `git status` is clean."""
    import signal

    from conftest import wait_until

    for n in range(30):
        note(vault, f"old-{n:02d}", confirmed=OLD)
    commit(vault)
    env = {**os.environ, "VAULTMEM_VAULT": str(vault.root)}
    assert vaultmem_in_process("page", "ensure", "前端审查", "--as", "lee", env=env).returncode == 0
    items = []
    for i in range(6):
        filed = vaultmem_in_process("remember", f"proposal {i} from ella", "--type", "fact", "--as", "ella", "--json",
                                    env=env)
        assert filed.returncode == 0, filed.stderr
        items.append(json.loads(filed.stdout)["items"][0]["id"])
    watcher = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault.root), "watch"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: vault.watcher_alive() or watcher.poll() is not None, what="the watcher's heartbeat")
        assert vault.watcher_alive()

        def loop(argv_of):  # a process that runs six vaultmem commands one after another
            code = ("import subprocess, sys\n"
                    f"for argv in {[argv_of(i) for i in range(6)]!r}:\n"
                    "    subprocess.run([sys.executable, '-m', 'vaultmem', *argv], check=True, capture_output=True)\n")
            return subprocess.Popen([sys.executable, "-c", code], env=env)

        writers = [loop(lambda i, w=w: ["remember", f"w{w} fact {i}", "--type", "fact"]) for w in range(2)]
        writers.append(loop(lambda i: ["page", "add", "前端审查", f"审查记录 {i}", "--as", "lee"]))
        writers.append(loop(lambda i: ["review", "approve", items[i]]))
        gc = run_vaultmem("--vault", vault.root, "gc", "--json", timeout=300)
        for p in writers:
            assert p.wait(timeout=300) == 0
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=60)
    assert gc.returncode == 0, gc.stderr
    assert len(json.loads(gc.stdout)["archive"]) == 30
    names = active(vault)
    assert sorted(names) == sorted([f"w{w}-fact-{i}" for w in range(2) for i in range(6)]
                                   + [f"proposal-{i}-from-ella" for i in range(6)])
    page = (vault.root / "agents/前端审查.md").read_text(encoding="utf-8")
    assert all(f"审查记录 {i}" in page for i in range(6))
    assert len(archived(vault)) == 30 and not list((vault.root / "inbox").glob("*.md"))
    assert git(vault.root, "status", "--porcelain") == ""
    index = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert all(f"[[memories/{n}|" in index for n in names) and "old-00" not in index


def test_restoring_a_superseded_value_says_that_two_values_are_now_active(cli, vault):
    vm(cli, vault, "remember", "The backend listens on 8080", "--type", "fact", "--name", "port a", "--key", "backend.port")
    vm(cli, vault, "remember", "The backend listens on 9090", "--type", "fact", "--name", "port b", "--key", "backend.port")
    r = vm(cli, vault, "restore", "port-a", "--json")
    assert r.exit_code == 0, r.output
    assert any("two active values" in w and "memories/port-b" in w for w in out_json(r)["warnings"])
    assert [c["kind"] for c in out_json(vm(cli, vault, "conflicts", "--json"))["conflicts"]] == ["same-key"]


@pytest.mark.parametrize("question", ["What port does the API use?", "后端端口是多少", "x" * 5000])
def test_a_questions_fingerprint_is_the_sha256_of_its_terms(question):
    # usage.py digests without hashlib (whose import loads OpenSSL): the same digest
    import hashlib

    from vaultmem.analysis import tokens

    terms = " ".join(sorted(set(tokens(question))))
    assert usage.fingerprint(question) == hashlib.sha256(terms.encode("utf-8")).hexdigest()[:16]
    assert usage.fingerprint("the of and") is None  # nothing but stopwords: no question to tell apart
