"""Nothing outside the vault root is ever read: not through a symlinked file, a symlinked
folder, a link in an intermediate folder, nor a link that arrives by ``vaultmem sync``.

Each test plants a real symlink to a real file outside the vault holding a fake AWS key,
runs the real commands, and looks for the key everywhere a user (or an agent) could see
it: search and brief output, their ``--json``, and the bytes of the index on disk."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_vaultmem, vaultmem_in_process, wait_until

from vaultmem import Vault

KEY_ID = "AKIAQWERTYUIOPZXCVBN"
SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYzQWERTYKEY"
LEAKS = (KEY_ID, SECRET, KEY_ID.lower(), SECRET.lower())
CREDENTIALS = (f"[default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n\n"
               "deploy credentials for production\n")
OUT_WORDS = "deploy credentials production"


def outside_file(tmp_path: Path) -> Path:
    home = tmp_path / "home" / ".aws"
    home.mkdir(parents=True, exist_ok=True)
    target = home / "credentials"
    target.write_text(CREDENTIALS)
    return target


def outside_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "etc"
    folder.mkdir(exist_ok=True)
    (folder / "creds.md").write_text(CREDENTIALS)
    return folder


def index_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((root / ".vaultmem" / "index").rglob("*"))
                    if p.is_file() and not p.is_symlink())


def assert_not_leaked(root: Path, *outputs: str) -> None:
    for text in outputs:
        for leak in LEAKS:
            assert leak not in text, f"{leak} leaked: {text[:500]}"
    data = index_bytes(root)
    for leak in LEAKS:
        assert leak.encode() not in data, f"{leak} is in the index files"


ALL_KINDS = [a for k in ("inbox", "archive", "note", "identity", "checkpoint", "entry", "doc", "wiki", "shared", "log",
                         "decision") for a in ("--kind", k)]  # and the journal, which has an index of its own:


def everything_searched(cli, root: Path) -> list[str]:
    """search and brief in text and JSON, over every kind: all a user would see."""
    outs = []
    runs = [(OUT_WORDS, extra, json_) for extra in ([], ALL_KINDS, ["--agent", "rev"], ["--journal"])
            for json_ in ([], ["--json"])]
    runs += [(token, kinds, ["--json"]) for token in (SECRET.lower(), KEY_ID.lower()) for kinds in (ALL_KINDS, ["--journal"])]
    for query, extra, json_ in runs:
        r = cli("--vault", root, *json_, "search", query, *extra)
        assert r.exit_code == 0, r.output
        outs.append(r.output.replace(query, "<query>"))  # the query itself is echoed
        if json_:
            assert json.loads(r.stdout)["hits"] == [], r.stdout
    for json_ in ([], ["--json"]):
        r = cli("--vault", root, *json_, "brief", "rev", "--task", OUT_WORDS)
        assert r.exit_code == 0, r.output
        outs.append(r.output)
    return outs


def index_problems(cli, root: Path) -> list[dict]:
    r = cli("--vault", root, "--json", "index")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["problems"]


LINKED_FILES = ["memories/deploy-credentials.md", "identity/rev.md", "agents/rev.md", "checkpoints/rev.md",
                "wiki/creds.md", "inbox/i-20260101-abcdef.md", "archive/memories/old.md", "journal/2026-01-01.md",
                "shared/log/rev.md", "shared/decisions/rev.md"]


@pytest.mark.usefixtures("both_engines")
@pytest.mark.parametrize("rel", LINKED_FILES)
def test_a_file_linked_out_of_the_vault_is_never_read(cli, vault, tmp_path, rel):
    link = vault.root / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside_file(tmp_path))
    outs = everything_searched(cli, vault.root)
    problems = index_problems(cli, vault.root)
    assert_not_leaked(vault.root, *outs, json.dumps(problems))
    assert any(p["path"] == rel and "symlink leading out of the vault" in p["message"] for p in problems), problems


@pytest.mark.usefixtures("both_engines")
@pytest.mark.parametrize("rel", ["memories/sub", "wiki/ops", "journal"])
def test_a_folder_linked_out_of_the_vault_is_never_read(cli, vault, tmp_path, rel):
    link = vault.root / rel
    if link.is_dir():
        for child in link.iterdir():
            child.unlink()
        link.rmdir()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside_folder(tmp_path), target_is_directory=True)
    outs = everything_searched(cli, vault.root)
    problems = index_problems(cli, vault.root)
    assert_not_leaked(vault.root, *outs, json.dumps(problems))
    assert any(p["path"] == rel and "symlink leading out of the vault" in p["message"] for p in problems), problems


@pytest.mark.usefixtures("both_engines")
def test_a_link_into_vaultmems_own_folder_is_not_read_but_one_to_a_vault_file_is(cli, vault):
    private = vault.root / ".vaultmem" / "local" / "private.md"
    private.parent.mkdir(parents=True, exist_ok=True)
    private.write_text(CREDENTIALS)
    (vault.root / "memories" / "k.md").symlink_to("../.vaultmem/local/private.md")
    (vault.root / "wiki" / "shared-page.md").write_text("# shared\n\nthe zebrafinch runbook\n")
    (vault.root / "memories" / "alias.md").symlink_to("../wiki/shared-page.md")
    outs = everything_searched(cli, vault.root)
    problems = index_problems(cli, vault.root)
    assert_not_leaked(vault.root, *outs, json.dumps(problems))
    assert any(p["path"] == "memories/k.md" and "vaultmem's own folder" in p["message"] for p in problems), problems
    hits = json.loads(cli("--vault", vault.root, "--json", "search", "zebrafinch").stdout)["hits"]
    assert {h["path"] for h in hits} == {"wiki/shared-page.md", "memories/alias.md"}


@pytest.mark.usefixtures("both_engines")
def test_a_note_replaced_by_a_link_out_drops_out_of_the_index(cli, vault, tmp_path):
    note = vault.root / "memories" / "deploy.md"
    note.write_text("---\nname: deploy\ntype: fact\n---\ndeploy credentials live in the vault of ops\n")
    assert json.loads(cli("--vault", vault.root, "--json", "search", "deploy").stdout)["hits"]
    note.unlink()
    note.symlink_to(outside_file(tmp_path))
    outs = everything_searched(cli, vault.root)
    assert_not_leaked(vault.root, *outs)
    assert json.loads(cli("--vault", vault.root, "--json", "search", "ops").stdout)["hits"] == []


def test_memory_index_linked_out_is_not_read_and_the_brief_says_so(cli, vault, tmp_path):
    index = vault.root / "MEMORY.md"
    index.unlink()
    index.symlink_to(outside_file(tmp_path))
    for json_ in ([], ["--json"]):
        r = cli("--vault", vault.root, *json_, "brief", "rev", "--task", OUT_WORDS)
        assert r.exit_code == 0, r.output
        assert_not_leaked(vault.root, r.output)
        assert "MEMORY.md" in r.output and "symlink leading out of the vault" in r.output


def test_identity_linked_out_is_not_in_the_brief_and_the_brief_says_so(cli, vault, tmp_path):
    (vault.root / "identity" / "rev.md").symlink_to(outside_file(tmp_path))
    r = cli("--vault", vault.root, "--json", "brief", "rev", "--task", OUT_WORDS)
    assert r.exit_code == 0, r.output
    assert_not_leaked(vault.root, r.output)
    data = json.loads(r.stdout)
    assert data["identity_included"] is False
    assert any("identity/rev.md" in w and "symlink leading out of the vault" in w for w in data["warnings"])


def test_config_linked_out_is_refused_with_the_file_named(cli, vault, tmp_path):
    config = vault.root / ".vaultmem" / "config.yaml"
    target = tmp_path / "config.yaml"
    target.write_text(config.read_text() + f"# {SECRET}\n")
    config.unlink()
    config.symlink_to(target)
    r = vaultmem_in_process("--vault", vault.root, "search", "deploy")
    assert r.returncode == 3, r.stderr
    assert ".vaultmem/config.yaml" in r.stderr and "symlink leading out of the vault" in r.stderr
    assert "Traceback" not in r.stderr and SECRET not in r.stdout + r.stderr


@pytest.mark.parametrize("rel, args", [
    ("agents/rev.md", ["page", "show", "rev"]),
    ("checkpoints/rev.md", ["checkpoint", "show", "rev"]),
    ("shared/project-state.md", ["state", "show"]),
])
def test_named_files_linked_out_are_refused(cli, vault, tmp_path, rel, args):
    link = vault.root / rel
    link.unlink(missing_ok=True)
    link.symlink_to(outside_file(tmp_path))
    for json_ in ([], ["--json"]):
        r = cli("--vault", vault.root, *json_, *args)
        assert r.exit_code == 3, r.output
        assert_not_leaked(vault.root, r.output)
        assert rel in r.output and "symlink leading out of the vault" in r.output


def test_listings_skip_linked_out_files(cli, vault, tmp_path):
    target = outside_file(tmp_path)
    target.write_text(f"---\nid: i-20260101-abcdef\nstatus: pending\nops: []\n---\n{CREDENTIALS}")
    (vault.root / "inbox" / "i-20260101-abcdef.md").symlink_to(target)
    (vault.root / "shared" / "delegations").mkdir(parents=True, exist_ok=True)
    (vault.root / "shared" / "delegations" / "d-20260101-abcdef.md").symlink_to(target)
    (vault.root / "checkpoints" / "rev.md").symlink_to(target)
    for args in (["review", "list"], ["audit"], ["todo", "rev"], ["log", "tail"]):
        for json_ in ([], ["--json"]):
            r = cli("--vault", vault.root, *json_, *args)
            assert r.exit_code in (0, 1), r.output
            assert_not_leaked(vault.root, r.output)


# -- a link that arrives by sync ----------------------------------------------------------------


@pytest.mark.usefixtures("both_engines")
def test_a_link_committed_in_another_clone_arrives_by_sync_and_is_never_read(vault, tmp_path):
    remote = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(vault.root, "remote", "add", "origin", str(remote))
    git(vault.root, "push", "-q", "origin", "HEAD:main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(remote), str(other)], check=True)
    target = outside_file(tmp_path)
    (other / "memories" / "deploy-credentials.md").symlink_to(target)
    (other / "identity").mkdir(exist_ok=True)
    (other / "identity" / "rev.md").symlink_to(target)
    (other / "wiki" / "etc").symlink_to(outside_folder(tmp_path), target_is_directory=True)
    git(other, "add", "-A")
    git(other, "-c", "user.name=mallory", "-c", "user.email=m@example.com", "commit", "-qm", "links")
    git(other, "push", "-q", "origin", "HEAD:main")

    r = vaultmem_in_process("--vault", vault.root, "sync")
    assert r.returncode == 0, r.stderr
    assert (vault.root / "memories" / "deploy-credentials.md").is_symlink()  # git checked the links out
    outs = []
    for args in (["search", OUT_WORDS], ["search", SECRET.lower(), *ALL_KINDS], ["search", OUT_WORDS, "--agent", "rev"],
                 ["brief", "rev", "--task", OUT_WORDS], ["index"]):
        for json_ in ([], ["--json"]):
            # the plain search and brief in a real process too: its walk-ahead child reads the vault as well
            run = run_vaultmem if not json_ and args[0] in ("search", "brief") and OUT_WORDS in args \
                else vaultmem_in_process
            r = run("--vault", vault.root, *json_, *args)
            assert r.returncode == 0, r.stderr
            assert "Traceback" not in r.stderr
            outs += [r.stdout.replace(SECRET.lower(), "<query>"), r.stderr]
    assert_not_leaked(vault.root, *outs)
    report = json.loads(vaultmem_in_process("--vault", vault.root, "--json", "index").stdout)
    skipped = {p["path"] for p in report["problems"] if "symlink leading out of the vault" in p["message"]}
    assert skipped == {"memories/deploy-credentials.md", "identity/rev.md", "wiki/etc"}


# -- the watcher ---------------------------------------------------------------------------------


@pytest.mark.usefixtures("both_engines")
def test_the_watcher_does_not_index_a_links_target(vault, tmp_path):
    from vaultmem.adapters.watch import Watcher
    from vaultmem.index import Filters
    from vaultmem.retrieve import search

    reports = []
    w = Watcher(vault, debounce=0.05, max_delay=0.2, on_sync=reports.append)
    w.start()
    try:
        (vault.root / "memories" / "plain.md").write_text("---\nname: plain\ntype: fact\n---\nthe okapi marker\n")
        (vault.root / "memories" / "deploy-credentials.md").symlink_to(outside_file(tmp_path))

        def indexed():
            w.step(timeout=0.2)
            return search(vault.index, "okapi", Filters(), limit=5)

        wait_until(indexed, what="the watcher to index the plain note")
        def reported():
            w.step(timeout=0.2)
            return any(p["path"] == "memories/deploy-credentials.md" for r in reports for p in r.problems)

        wait_until(reported, what="the watcher to report the link")
        for word in (OUT_WORDS, SECRET.lower(), KEY_ID.lower()):
            assert search(vault.index, word, Filters(), limit=5) == []
        assert_not_leaked(vault.root)
    finally:
        w.stop()


# -- derived folders damaged: rebuilt, never a traceback, never read outside --------------------

NOTE = "---\nname: ibis\ntype: fact\n---\nthe ibis migrates in spring\n"


def _live_gen(root: Path) -> Path:
    base = root / ".vaultmem" / "index"
    return base / (base / "CURRENT").read_text().strip()


def _replace_with_file(path: Path) -> None:
    import shutil

    shutil.rmtree(path)
    path.write_text("not a folder\n")


def _replace_with_link(path: Path, outside: Path) -> None:
    import shutil

    shutil.copytree(path, outside, symlinks=True)
    shutil.rmtree(path)
    path.symlink_to(outside, target_is_directory=True)


DAMAGE = {
    "index is a file": lambda root, out: _replace_with_file(root / ".vaultmem" / "index"),
    "index links out": lambda root, out: _replace_with_link(root / ".vaultmem" / "index", out),
    "local is a file": lambda root, out: _replace_with_file(root / ".vaultmem" / "local"),
    "local links out": lambda root, out: _replace_with_link(root / ".vaultmem" / "local", out),
    "live generation is a file": lambda root, out: _replace_with_file(_live_gen(root)),
    "live generation links out": lambda root, out: _replace_with_link(_live_gen(root), out),
}


@pytest.mark.usefixtures("both_engines")
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_derived_folder_replaced_by_a_file_or_a_link_is_rebuilt(vault, tmp_path, damage):
    (vault.root / "memories" / "ibis.md").write_text(NOTE)
    r = vaultmem_in_process("--vault", vault.root, "search", "ibis")
    assert r.returncode == 0 and "memories/ibis.md" in r.stdout, r.stderr
    outside = tmp_path / "outside"
    DAMAGE[damage](vault.root, outside)
    before = sorted((p.relative_to(outside).as_posix(), p.read_bytes()) for p in outside.rglob("*")
                    if p.is_file()) if outside.exists() else []
    for args in (["search", "ibis"], ["--json", "search", "ibis"], ["brief", "rev", "--task", "ibis"], ["index"]):
        # the first search in a real process: its walk-ahead child meets the damage too
        r = (run_vaultmem if args == ["search", "ibis"] else vaultmem_in_process)("--vault", vault.root, *args)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr and "Error" not in r.stderr, r.stderr
        if args[-2:] == ["search", "ibis"]:
            assert "memories/ibis.md" in r.stdout
    for rel in (".vaultmem/index", ".vaultmem/local"):
        path = vault.root / rel
        assert not path.is_symlink() and (path.is_dir() or not path.exists()), rel
    gen = _live_gen(vault.root)
    assert gen.is_dir() and not gen.is_symlink()
    after = sorted((p.relative_to(outside).as_posix(), p.read_bytes()) for p in outside.rglob("*")
                   if p.is_file()) if outside.exists() else []
    assert after == before  # nothing outside the vault was written either


@pytest.mark.usefixtures("both_engines")
def test_a_generation_linked_to_an_index_outside_is_not_searched(vault, tmp_path):
    """An index built elsewhere (holding a key) that the live generation links to is never used."""
    elsewhere, _ = Vault.init(tmp_path / "elsewhere", lang="en", orchestrator="lee")
    (elsewhere.root / "memories" / "creds.md").write_text(CREDENTIALS)
    assert vaultmem_in_process("--vault", elsewhere.root, "index").returncode == 0
    (vault.root / "memories" / "ibis.md").write_text(NOTE)
    assert vaultmem_in_process("--vault", vault.root, "index").returncode == 0
    live = _live_gen(vault.root)
    import shutil

    shutil.rmtree(live)
    live.symlink_to(_live_gen(elsewhere.root), target_is_directory=True)
    outs = []
    for query in (OUT_WORDS, SECRET.lower(), "ibis"):
        r = vaultmem_in_process("--vault", vault.root, "--json", "search", query, *ALL_KINDS)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        outs.append(r.stdout.replace(SECRET.lower(), "<query>"))
    assert [h["path"] for h in json.loads(outs[-1])["hits"]] == ["memories/ibis.md"]
    assert_not_leaked(vault.root, *outs)


def test_the_evaluation_copy_keeps_links_as_links(vault, tmp_path):
    from vaultmem.evaluate import snapshot

    (vault.root / "memories" / "deploy-credentials.md").symlink_to(outside_file(tmp_path))
    (vault.root / "wiki" / "etc").symlink_to(outside_folder(tmp_path), target_is_directory=True)
    dest = tmp_path / "frozen"
    snapshot(vault.root, dest, at=None)
    assert (dest / "memories" / "deploy-credentials.md").is_symlink() and (dest / "wiki" / "etc").is_symlink()
    copied = b"".join(p.read_bytes() for p in dest.rglob("*") if p.is_file() and not p.is_symlink()
                      and not any(q.is_symlink() for q in p.parents))
    assert SECRET.encode() not in copied
    queries = tmp_path / "q.yaml"
    queries.write_text("- id: q1\n  query: deploy credentials production\n  expected: []\n")
    report, _ = Vault.open(vault.root).evaluate(queries, at=None)
    assert all(not r["results"] for r in report.details)


def test_a_pipe_or_link_among_the_local_caches_is_never_read(cli, vault, tmp_path):
    """A FIFO planted as the key-events cache (or a read cursor) blocked ``log tail`` and
    ``brief`` for good; a link there led out of the vault. Both are passed over."""
    import os

    vm = ("--vault", vault.root)
    assert cli(*vm, "--as", "ella", "keys", "new", "ella").exit_code == 0
    assert cli(*vm, "--as", "ella", "log", "append", "--channel", "c", "--type", "status",
               "--summary", "hi").exit_code == 0
    local = vault.root / ".vaultmem" / "local"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (local / "key-events.json").unlink(missing_ok=True)
    (local / "key-events.json").symlink_to(fifo)
    (local / "cursors").mkdir(exist_ok=True)
    (local / "cursors" / "lee.json").unlink(missing_ok=True)
    os.mkfifo(local / "cursors" / "lee.json")
    for args in (("log", "tail"), ("brief", "lee", "--task", "hi"), ("--as", "lee", "log", "tail", "--unseen")):
        r = run_vaultmem(*vm, *args, timeout=60)  # a process: the timeout guards a read of a FIFO that could hang
        assert r.returncode == 0, (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_the_walk_by_folder_descriptor_lists_what_the_walk_by_path_lists(vault, tmp_path, monkeypatch):
    """The freshness walk lists each folder through a descriptor of it (a stat looks up a
    name in the folder alone). It must list exactly what a walk by whole paths lists (the
    walk of a system without descriptors for folders): links in and out, hidden and
    ignored folders, a folder named like a note, Chinese names, the journal."""
    from vaultmem import walk

    root = vault.root
    (root / "memories" / "深" / "更深").mkdir(parents=True)
    (root / "memories" / "深" / "更深" / "笔记.md").write_text("x", encoding="utf-8")
    (root / "memories" / "folder.md").mkdir()
    (root / "memories" / "folder.md" / "inner.md").write_text("y", encoding="utf-8")
    (root / "memories" / ".hidden.md").write_text("h", encoding="utf-8")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "pkg.md").write_text("n", encoding="utf-8")
    (root / "memories" / "in.md").symlink_to(root / "memories" / "深" / "更深" / "笔记.md")
    (root / "memories" / "out.md").symlink_to(outside_file(tmp_path))
    (root / "memories" / "out-folder").symlink_to(tmp_path / "home", target_is_directory=True)
    (root / "memories" / "in-folder").symlink_to(root / "memories" / "深", target_is_directory=True)
    (root / "memories" / "dangling.md").symlink_to(root / "memories" / "nothing.md")
    (root / "journal" / "s").mkdir(parents=True)
    (root / "journal" / "s" / "turn.md").write_text("t", encoding="utf-8")

    by_fd = {part: walk.scan(root, part) for part in (None, walk.PART_MEMORY, walk.PART_JOURNAL)}
    monkeypatch.setattr(walk, "_BY_FD", False)
    by_path = {part: walk.scan(root, part) for part in (None, walk.PART_MEMORY, walk.PART_JOURNAL)}
    assert by_fd == by_path
    listed = by_fd[walk.PART_MEMORY]
    assert {"memories/深/更深/笔记.md", "memories/folder.md/inner.md", "memories/in.md", "memories/out.md",
            "memories/out-folder"} <= set(listed)
    assert not {"memories/.hidden.md", "node_modules/pkg.md", "memories/in-folder/更深/笔记.md",
                "memories/dangling.md", "memories/folder.md"} & set(listed)
    assert listed["memories/in.md"] == listed["memories/深/更深/笔记.md"]  # a link inside: its target's stat
    assert set(by_fd[walk.PART_JOURNAL]) == {"journal/s/turn.md"}


def test_the_walk_closes_each_folder_it_opened_whatever_stops_it(vault, monkeypatch):
    """A long-lived server walks the vault again and again: a folder's descriptor left
    open by a walk that failed (too many open files, say) would be one more each time."""
    import errno
    import os

    from vaultmem import walk

    def opened() -> int:
        return len(os.listdir("/proc/self/fd"))

    real = os.scandir
    before = opened()

    def full(path):
        if isinstance(path, int):
            raise OSError(errno.EMFILE, "Too many open files")
        return real(path)

    monkeypatch.setattr(os, "scandir", full)
    for _ in range(3):
        with pytest.raises(OSError):
            walk.scan(vault.root)
    monkeypatch.setattr(os, "scandir", real)
    assert opened() == before
    assert walk.scan(vault.root)  # and it walks as ever


def test_a_socket_or_a_pipe_named_like_a_note_is_listed_unread_never_fatal(cli, vault, tmp_path):
    """A Unix socket left in the vault by some program (named ``*.md``) cannot be opened
    at all (ENXIO): every search and brief stopped on it with 'cannot write
    .vaultmem/index: No such device or address', and a rebuild failed. A socket, like a
    pipe, is now listed as unread and the rest is searched."""
    import os
    import socket

    assert cli("--vault", vault.root, "remember", "kafka retries are capped at five", "--type", "fact").exit_code == 0
    sock = socket.socket(socket.AF_UNIX)
    short = tmp_path / "s"  # a socket's path must be short: bound here, moved into the vault
    sock.bind(str(short))
    try:
        os.rename(short, vault.root / "memories" / "sock.md")
        os.mkfifo(vault.root / "memories" / "pipe.md")
        for args in (("search", "kafka"), ("brief", "lee", "--task", "kafka"), ("index", "--rebuild")):
            r = run_vaultmem("--vault", vault.root, *args)  # a process: its timeout guards a read that could hang
            assert r.returncode == 0, (args, r.stdout, r.stderr)
            said = r.stdout + r.stderr
            assert "memories/sock.md" in said and "memories/pipe.md" in said and "not a regular file" in said, said
        assert "kafka-retries" in run_vaultmem("--vault", vault.root, "search", "kafka").stdout
        from vaultmem import walk  # a watcher's refresh of those paths records them as the walk does

        listed = walk.scan(vault.root)
        for rel in ("memories/sock.md", "memories/pipe.md"):
            assert walk.path_stat(vault.root, rel) == listed[rel]
    finally:
        sock.close()


def test_links_that_lead_to_each_other_are_passed_over_like_a_link_to_nothing(cli, vault):
    """Two links named like notes that point at each other (ELOOP) stopped every search
    and brief ('cannot write .vaultmem/index: Too many levels of symbolic links'). They
    are passed over, as a link to nothing is."""
    import os

    assert cli("--vault", vault.root, "remember", "kafka retries are capped at five", "--type", "fact").exit_code == 0
    os.symlink("loop-b.md", vault.root / "memories" / "loop-a.md")
    os.symlink("loop-a.md", vault.root / "memories" / "loop-b.md")
    for args in (("search", "kafka"), ("brief", "lee", "--task", "kafka"), ("index", "--rebuild")):
        r = run_vaultmem("--vault", vault.root, *args)  # a process: its timeout guards a loop that could hang
        assert r.returncode == 0, (args, r.stderr)
    assert "kafka-retries" in run_vaultmem("--vault", vault.root, "search", "kafka").stdout
    from vaultmem import files
    from vaultmem.errors import UnsafePath

    with pytest.raises(UnsafePath, match="leads back to itself"):  # named for what it is, not "out of the vault"
        files.read_bytes(vault.root, "memories/loop-a.md")
    os.symlink("round", vault.root / "memories" / "round")  # a folder on the way that loops
    with pytest.raises(UnsafePath, match="leads back to itself"):
        files.read_bytes(vault.root, "memories/round/x.md")
