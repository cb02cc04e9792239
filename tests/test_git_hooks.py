"""The vault's pre-commit hook (hooks/git/pre-commit, 'vaultmem install git-hooks') and
'vaultmem check --staged': real git commits in real vaults, the hook run by git."""

from __future__ import annotations

import json
import os
import random
import stat
import string
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, run_vaultmem, wait_until

HOOK_TEMPLATE = Path(__file__).resolve().parents[1] / "hooks" / "git" / "pre-commit"


def token(seed: int = 7) -> str:
    rng = random.Random(seed)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def commit(root: Path, message: str = "edit", env: dict | None = None) -> subprocess.CompletedProcess:
    """A real 'git commit' of everything, the way a person (or Obsidian's git plugin) commits."""
    git(root, "add", "-A")
    return subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


@pytest.fixture
def hooked(cli, en_vault):
    """A vault with vaultmem's pre-commit hook installed."""
    done = cli("install", "git-hooks", "--vault", en_vault.root)
    assert done.exit_code == 0, done.output
    return en_vault


def test_install_keeps_a_users_hook_and_uninstall_puts_it_back(cli, en_vault):
    hooks = en_vault.root / ".git" / "hooks"
    mine = "#!/bin/sh\necho ran >> \"$(git rev-parse --show-toplevel)/../user-hook-ran\"\n"
    (hooks / "pre-commit").write_text(mine)
    os.chmod(hooks / "pre-commit", 0o750)
    plan = cli("install", "git-hooks", "--vault", en_vault.root, "--dry-run", "--json")
    assert [f["action"] for f in json.loads(plan.stdout)["files"]] == ["moved", "changed"]
    assert (hooks / "pre-commit").read_text() == mine  # a dry run writes nothing
    assert cli("install", "git-hooks", "--vault", en_vault.root).exit_code == 0
    assert (hooks / "pre-commit.before-vaultmem").read_text() == mine
    ours = (hooks / "pre-commit").read_text()
    assert "vaultmem pre-commit hook" in ours and os.access(hooks / "pre-commit", os.X_OK)
    assert f"VAULTMEM_INSTALLED={Path(sys.executable).parent / 'vaultmem'}" in ours  # absolute: a GUI's PATH is bare
    assert "nothing to install" in cli("install", "git-hooks", "--vault", en_vault.root).stdout
    (en_vault.root / "wiki").mkdir(exist_ok=True)
    (en_vault.root / "wiki" / "plain.md").write_text("---\ntitle: Plain\n---\nNothing secret here.\n")
    done = commit(en_vault.root)
    assert done.returncode == 0, done.stderr
    assert (en_vault.root.parent / "user-hook-ran").read_text() == "ran\n"  # chained: the user's hook still runs
    assert cli("uninstall", "git-hooks", "--vault", en_vault.root).exit_code == 0
    assert (hooks / "pre-commit").read_text() == mine and not (hooks / "pre-commit.before-vaultmem").exists()
    assert stat.S_IMODE((hooks / "pre-commit").stat().st_mode) == 0o750
    assert "left as it is" in cli("uninstall", "git-hooks", "--vault", en_vault.root).stdout


def test_vaultmems_own_commits_pass_the_hook(cli, en_vault):
    root = en_vault.root
    ran = root.parent / "passed"
    # a hook of the user's, which vaultmem's runs only once its check has passed: one line per commit
    (root / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\necho passed >> '{ran}'\n")
    os.chmod(root / ".git" / "hooks" / "pre-commit", 0o755)
    assert cli("install", "git-hooks", "--vault", root).exit_code == 0
    # what the user has staged is not part of vaultmem's commits (git commit --only): it does not block them
    (root / "wiki").mkdir(exist_ok=True)
    (root / "wiki" / "draft.md").write_text("---\ntitle: [unclosed\n---\n")
    git(root, "add", "wiki/draft.md")
    before = len(git(root, "log", "--oneline").splitlines())
    assert run_vaultmem("remember", "The build runs on Python 3.12", "--type", "fact", "--vault", root).returncode == 0
    assert cli("page", "ensure", "reviewer", "--vault", root).exit_code == 0
    assert cli("page", "add", "reviewer", "Checks the API schema first", "--vault", root).exit_code == 0
    assert cli("keys", "new", "lee", "--vault", root).exit_code == 0
    for summary in ("schema merged", "tests green"):
        assert cli("log", "append", "--summary", summary, "--as", "lee", "--vault", root).exit_code == 0
    done = cli("log", "commit", "--as", "lee", "--vault", root)
    assert done.exit_code == 0, done.output
    assert len(git(root, "log", "--oneline").splitlines()) == before + 5
    assert ran.read_text().splitlines() == ["passed"] * 5
    assert git(root, "status", "--porcelain") == "A  wiki/draft.md\n"  # still staged, as the user left it


def test_a_blocked_commit_names_the_file_and_line(cli, hooked):
    root = hooked.root
    cli("keys", "new", "lee", "--vault", root)
    cli("log", "append", "--summary", "first entry", "--as", "lee", "--vault", root)
    cli("log", "commit", "--as", "lee", "--vault", root)
    head = git(root, "rev-parse", "HEAD")
    (root / "wiki").mkdir(exist_ok=True)
    (root / "wiki" / "deploy.md").write_text(f"---\ntitle: Deploy\n---\nUse the token {token()} to push.\n")
    (root / "memories" / "broken.md").write_text("---\nname: [unclosed\ndescription: x\n---\nbody\n")
    log = root / "shared" / "log" / "lee.md"
    log.write_text(log.read_text().replace("first entry", "first entrY"))
    done = commit(root)
    assert done.returncode != 0
    assert "wiki/deploy.md:4: the line holds a secret (github-token" in done.stderr
    assert "memories/broken.md:3: broken YAML frontmatter" in done.stderr
    assert "shared/log/lee.md:1: the line differs from the last commit; the logs are append-only" in done.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert not (root / ".git" / "index.lock").exists()  # git's lock is never left behind


def test_check_staged_in_process(cli, en_vault):
    root = en_vault.root
    assert cli("check", "--staged", "--vault", root).exit_code == 0  # nothing staged
    cli("keys", "new", "lee", "--vault", root)
    for summary in ("one", "two"):
        cli("log", "append", "--summary", summary, "--as", "lee", "--vault", root)
    git(root, "add", "-A")
    ok = cli("check", "--staged", "--vault", root, "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout) == {"ok": True, "checked": 1, "problems": []}
    git(root, "commit", "-q", "-m", "logs")
    log = root / "shared" / "log" / "lee.md"
    lines = log.read_text().splitlines(keepends=True)
    # a copy of a signed entry appended again (a replay), and a torn last line
    log.write_text("".join(lines) + lines[0] + lines[1][:40])
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian" / "plugin.json").write_text(json.dumps({"token": token(3)}) + "\n")
    (root / ".obsidian" / "main.js").write_text(f'var a="{token(4)}";\n')  # a plugin's code: not scanned
    (root / "shared" / "keys" / "lee.pub").write_text((root / "shared" / "keys" / "lee.pub").read_text() + "#\n")
    git(root, "add", "-A")
    found = json.loads(cli("check", "--staged", "--vault", root, "--json").stdout)["problems"]
    where = {(p["path"], p["line"], p["kind"]) for p in found}
    assert ("shared/log/lee.md", 3, "log-replayed") in where or ("shared/log/lee.md", 3, "log-duplicated") in where
    assert ("shared/log/lee.md", 4, "log-truncated") in where
    assert (".obsidian/plugin.json", 1, "secret") in where
    assert not any(p["path"] in ("shared/keys/lee.pub", ".obsidian/main.js") for p in found)
    git(root, "reset", "-q", "--hard")
    # Obsidian's templates hold placeholders that are no YAML until applied: not checked
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian" / "templates.json").write_text('{"folder": "Templates/"}')
    for folder in ("Templates", "wiki"):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "daily.md").write_text("---\ncreated: {{date}}\n---\n# {{title}}\n")
    git(root, "add", "-A")
    found = json.loads(cli("check", "--staged", "--vault", root, "--json").stdout)["problems"]
    assert [(p["path"], p["kind"]) for p in found] == [("wiki/daily.md", "frontmatter")]
    git(root, "reset", "-q", "--hard")
    log.unlink()
    git(root, "add", "-A")
    gone = cli("check", "--staged", "--vault", root)
    assert gone.exit_code == 1 and "shared/log/lee.md: the log file is deleted" in gone.stderr
    git(root, "reset", "-q", "--hard")
    log.write_text("".join(lines[:1]))
    git(root, "add", "-A")
    cut = json.loads(cli("check", "--staged", "--vault", root, "--json").stdout)["problems"]
    assert [(p["line"], p["kind"]) for p in cut] == [(2, "log-truncated")]


def test_a_held_index_lock_is_waited_for(hooked):
    """Obsidian's git plugin commits on a timer: while its git holds index.lock, a
    vaultmem write waits for it (bounded), then commits through the hook."""
    root = hooked.root
    lock = root / ".git" / "index.lock"
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL)  # held open: a live git's lock
    try:
        proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "remember", "Deploys wait for CI", "--type", "fact",
                                 "--vault", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        note = root / "memories" / "deploys-wait-for-ci.md"
        wait_until(note.exists, what="the write to reach the commit")
        assert proc.poll() is None  # still waiting for the lock
    finally:
        os.close(fd)
        lock.unlink()  # the other git is done
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "remember: Deploys wait for CI" in git(root, "log", "-1", "--format=%s")
    assert not lock.exists() and git(root, "status", "--porcelain") == ""


def test_the_hook_blocks_when_it_cannot_find_vaultmem(tmp_path, en_vault):
    bare = tmp_path / "bare"
    bare.mkdir()
    done = subprocess.run(["/bin/sh", str(HOOK_TEMPLATE)], cwd=en_vault.root, capture_output=True, text=True,
                          env={"PATH": str(bare)}, timeout=60)
    assert done.returncode == 1 and "cannot find vaultmem" in done.stderr and "blocked" in done.stderr


def test_a_hooks_path_outside_the_vault_is_refused(cli, en_vault, tmp_path):
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    git(en_vault.root, "config", "core.hooksPath", str(shared))
    done = cli("install", "git-hooks", "--vault", en_vault.root)
    assert done.exit_code == 1 and "core.hooksPath" in done.stderr and list(shared.iterdir()) == []
