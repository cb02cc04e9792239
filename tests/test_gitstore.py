"""Every mutation is one commit of exactly its files, by the acting agent; git trouble
is waited for or reported, and never leaves half a change behind."""

import os
import subprocess
import sys
import threading

from conftest import SAFETY_NET, git, out_json, wait_until

from vaultmem import Busy, GitError


def vm(cli, vault, *args, agent="lee"):
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args)


def test_users_unrelated_edits_stay_uncommitted_and_intact(cli, vault):
    root = vault.root
    (root / "wiki" / "draft.md").write_text("half-written wiki page\n")
    (root / "memories" / "staged.md").write_text("staged by the user\n")
    git(root, "add", "memories/staged.md")
    identity = root / "identity" / "lee.md"
    identity.write_text(identity.read_text() + "\nuser edit\n")
    r = vm(cli, vault, "page", "ensure", "前端审查")
    assert r.exit_code == 0
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["agents/前端审查.md"]
    status = git(root, "status", "--porcelain").splitlines()
    assert "A  memories/staged.md" in status  # still staged, not committed
    assert " M identity/lee.md" in status and "?? wiki/draft.md" in status
    assert (root / "wiki" / "draft.md").read_text() == "half-written wiki page\n"
    assert identity.read_text().endswith("\nuser edit\n")
    vm(cli, vault, "remember", "fact", "--type", "fact")
    assert "A  memories/staged.md" in git(root, "status", "--porcelain").splitlines()


def test_commit_author_and_committer_are_the_agent(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    assert git(vault.root, "log", "-1", "--format=%an|%cn|%ae").strip() == "lee|lee|lee@agents.vaultmem.invalid"


# A process that holds git's index.lock open, as a live git does: it removes the lock
# when it reads a line, and says "stolen" if the lock was gone by then.
LOCK_HOLDER = """
import os, sys
lock = sys.argv[1]
fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
print("holding", flush=True)
sys.stdin.readline()
print("stolen" if not os.path.exists(lock) else "released", flush=True)
if os.path.exists(lock):
    os.unlink(lock)
"""


def _hold_lock(vault):
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(vault.root / ".git" / "index.lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    return holder


def _release(holder) -> str:
    out, _ = holder.communicate("go\n", timeout=SAFETY_NET)
    return out.strip()


def test_a_lock_a_live_git_holds_is_waited_for_and_left_to_it(cli, vault):
    vault.set_config("git.lock_timeout", SAFETY_NET, vault.actor(None))  # the wait below is not a race
    holder = _hold_lock(vault)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("r", vm(cli, vault, "page", "ensure", "r")))
    worker.start()
    wait_until((vault.root / "agents" / "r.md").exists, what="the page to be written")  # then it waits to commit
    assert worker.is_alive(), "the command finished while a live git held the lock"
    assert _release(holder) == "released"  # vaultmem never removed the live git's lock
    worker.join(60)
    assert result["r"].exit_code == 0, result["r"].output
    assert "agents/r.md" in git(vault.root, "show", "--name-only", "--format=", "HEAD")


def test_a_lock_held_too_long_is_reported_and_the_files_are_restored(cli, vault):
    assert vm(cli, vault, "config", "set", "git.lock_timeout", "0.3", agent=None).exit_code == 0
    holder = _hold_lock(vault)
    try:
        r = vm(cli, vault, "page", "ensure", "r", "--json")
        assert r.exit_code == 4
        err = out_json(r)["error"]
        assert err["type"] == "busy" and "index.lock" in err["path"] and "delete" in err["hint"]
        assert not (vault.root / "agents" / "r.md").exists()
        assert (vault.root / ".git" / "index.lock").exists()
    finally:
        assert _release(holder) == "released"
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_lock_left_by_a_killed_git_is_removed_and_the_write_goes_on(cli, vault):
    for name in ("index.lock", "HEAD.lock"):
        (vault.root / ".git" / name).write_text("")  # no process holds it: its git was killed
        r = vm(cli, vault, "remember", f"fact after a stale {name}", "--type", "fact", agent=None)
        assert r.exit_code == 0, r.output
        assert not (vault.root / ".git" / name).exists()
        assert f"stale {name}" in git(vault.root, "log", "-1", "--format=%s")


def test_a_rejecting_git_hook_leaves_no_half_change(vault):
    hook = vault.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'policy: no commits today' >&2\nexit 1\n")
    hook.chmod(0o755)
    index_before = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    try:
        vault.notes.remember("a fact", vault.actor("lee"), "fact")
    except GitError as exc:
        assert "no commits today" in exc.message
    else:
        raise AssertionError("the hook should have refused the commit")
    assert not (vault.root / "memories" / "a-fact.md").exists()
    assert (vault.root / "MEMORY.md").read_text(encoding="utf-8") == index_before
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""
    leftovers = [p.name for p in vault.root.rglob("*") if ".vmtmp-" in p.name or p.name == "txn.json"]
    assert leftovers == []  # no temp file, no kept-aside copy, no journal


def test_concurrent_writers_in_separate_processes_lose_nothing(vault):
    """Four processes add 5 entries each to the same page at once: the write lock
    serialises them, so all 20 entries and 20 commits are there."""
    vault.pages.ensure("r", vault.actor("lee"))
    # 20 writes queue for the write lock; on a busy machine one writer can wait behind
    # the other 19 for longer than the usual 10 s: the timeout is a safety net here
    vault.set_config("git.lock_timeout", SAFETY_NET, vault.actor(None))
    commits = int(git(vault.root, "rev-list", "--count", "HEAD"))
    code = (
        "import sys; from vaultmem import Vault\n"
        "v = Vault(sys.argv[1])\n"
        "for i in range(5): v.pages.add('r', f'{sys.argv[2]} entry {i}', v.actor('lee'))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(vault.root), f"w{n}"]) for n in range(4)]
    assert [p.wait(timeout=SAFETY_NET * 2) for p in procs] == [0, 0, 0, 0]
    page = vault.pages.read("r")
    texts = sorted(e.text for e in page.entries if e.section == "work")
    assert texts == sorted(f"w{n} entry {i}" for n in range(4) for i in range(5))
    assert len({e.id for e in page.entries}) == 20
    assert int(git(vault.root, "rev-list", "--count", "HEAD")) == commits + 20
    assert git(vault.root, "status", "--porcelain") == ""


def test_busy_write_lock_is_reported(vault):
    from filelock import FileLock

    vault.set_config("git.lock_timeout", 0.2, vault.actor(None))
    with FileLock(str(vault.root / ".vaultmem" / "write.lock")):
        code = "import sys; from vaultmem import Vault; v = Vault(sys.argv[1]); v.pages.ensure('r', v.actor('lee'))"
        r = subprocess.run([sys.executable, "-c", code, str(vault.root)], capture_output=True, text=True)
    assert r.returncode != 0 and "Busy" in r.stderr and "another vaultmem process" in r.stderr
    assert Busy.exit_code == 4
    assert not os.path.exists(vault.root / "agents" / "r.md")


def test_a_change_of_thousands_of_files_is_committed_and_unstaged_past_the_argument_limit(tmp_path):
    """A GC run moves thousands of notes in one commit: more paths than a command line takes."""
    from vaultmem import gitstore
    from vaultmem.models import Actor

    root = tmp_path / "repo"
    (root / "memories").mkdir(parents=True)
    gitstore.init_repo(root)
    names = [f"memories/{'很长的笔记名字-' * 10}{n:05d}.md" for n in range(9000)]
    for rel in names:
        (root / rel).write_text(rel, encoding="utf-8")
    assert len(" ".join(names).encode()) > 2 * 1024 * 1024  # more than the system's ARG_MAX here
    actor = Actor("lee", "human")
    message = "many\n\n" + "\n".join(f"- {rel}: archived" for rel in names)  # 2.3 MB: more than one argument holds
    sha = gitstore.commit(root, names, message, actor, lock_timeout=10)
    assert sha and gitstore.uncommitted(root, names) == []
    assert git(root, "log", "-1", "--format=%B").strip() == message
    assert len(gitstore.committed_ids(root, names)) == 9000
    for rel in names[:6000]:
        (root / rel).unlink()
    assert len(gitstore.uncommitted(root, names)) == 6000
    assert gitstore.commit(root, names, "fewer", actor, lock_timeout=10)
    assert len(gitstore.committed_ids(root, names)) == 3000 and gitstore.changed_under(root, "memories") == []
    for rel in names[6000:]:
        (root / rel).write_text("changed", encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    assert gitstore.unstage(root, names)
    assert len(gitstore.staged_ids(root, names)) == 3000 and len(gitstore.uncommitted(root, names)) == 3000


def test_paths_that_hold_no_change_make_no_commit_and_a_refused_commit_still_says_why(vault):
    """A commit is tried first and asked about only when git refuses it: paths whose files
    hold what the last commit holds make none (and commit nothing else staged), and a hook
    that refuses a real change is still an error that names it."""
    from vaultmem import gitstore
    from vaultmem.models import Actor

    root, actor = vault.root, Actor("lee", "agent")
    head = git(root, "rev-parse", "HEAD").strip()
    (root / "memories" / "staged.md").write_text("staged by the user\n")
    git(root, "add", "memories/staged.md")
    assert gitstore.commit(root, ["MEMORY.md"], "nothing", actor, lock_timeout=10) is None
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert "memories/staged.md" in git(root, "diff", "--cached", "--name-only")  # still the user's, staged
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'refused by policy' >&2\nexit 1\n")
    hook.chmod(0o755)
    (root / "MEMORY.md").write_text("changed\n")
    try:
        gitstore.commit(root, ["MEMORY.md"], "a change", actor, lock_timeout=10)
    except GitError as exc:
        assert "refused by policy" in exc.message
    else:
        raise AssertionError("a refused commit must raise")
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert "MEMORY.md" not in git(root, "diff", "--cached", "--name-only")  # unstaged again


def test_a_long_lived_process_sees_the_humans_new_git_identity(vault, tmp_path, monkeypatch):
    """``vaultmem mcp`` asks who the human is at every call and remembers the answer
    only while git's configuration files stay as they were: a ``git config user.name``
    in the vault, or a new global file, is seen at the next call."""
    from vaultmem.gitstore import human_actor

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    git(vault.root, "config", "user.name", "Ada One")
    git(vault.root, "config", "user.email", "ada@example.org")
    assert (human_actor(vault.root).name, human_actor(vault.root).email) == ("Ada One", "ada@example.org")
    git(vault.root, "config", "user.name", "Ada Two")
    assert human_actor(vault.root).name == "Ada Two"
    git(vault.root, "config", "--unset", "user.name")
    assert human_actor(vault.root).name == "vaultmem user"  # git knows no name now
    (home / ".gitconfig").write_text("[user]\n\tname = Global Grace\n")
    assert human_actor(vault.root).name == "Global Grace"
    (home / ".gitconfig").write_text("[include]\n\tpath = more.inc\n")
    (home / "more.inc").write_text("[user]\n\tname = Included Ida\n")
    assert human_actor(vault.root).name == "Included Ida"
    (home / "more.inc").write_text("[user]\n\tname = Included Iris\n")  # only the included file changed
    assert human_actor(vault.root).name == "Included Iris"
    git(vault.root, "config", "--unset", "user.email")  # an identity git knows only in part, from an include
    (home / "more.inc").write_text("[user]\n\tname = Included Ines\n")
    assert human_actor(vault.root).name == "Included Ines"
    (home / "more.inc").write_text("[user]\n\tname = Included Inga\n")
    assert human_actor(vault.root).name == "Included Inga"


def test_a_vault_whose_git_folder_is_broken_never_commits_into_the_repository_around_it(tmp_path):
    from vaultmem import gitstore
    from vaultmem.models import Actor

    outer = tmp_path / "project"
    outer.mkdir()
    git(outer, "init", "-q")
    git(outer, "commit", "-q", "--allow-empty", "-m", "project start")
    vault_dir = outer / "vault"
    (vault_dir / ".git").mkdir(parents=True)  # a .git that is no repository (emptied, say)
    (vault_dir / "note.md").write_text("x\n")
    try:
        gitstore.commit(vault_dir, ["note.md"], "a note", Actor("lee", "agent"), 2.0)
    except GitError:
        pass
    else:
        raise AssertionError("a commit must not land anywhere")
    assert git(outer, "log", "--format=%s").splitlines() == ["project start"]
    assert git(outer, "status", "--porcelain", "--untracked-files=all").strip() == "?? vault/note.md"  # nothing staged
