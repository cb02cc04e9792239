"""Atomic writes under SIGKILL, temp-file cleanup, and paths that must stay in the vault."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Lines, git, group_alive, holds_flock, kill_now, kill_when, run_vaultmem, wait_until

from vaultmem import UnsafePath
from vaultmem.files import TEMP_MARK, atomic_write, inside
from vaultmem.parse import parse_page

WRITER = r"""
import sys
from pathlib import Path
from vaultmem.files import atomic_write
target = Path(sys.argv[1])
a, b = "A" * 3_000_000 + "\n", "B" * 1_500_000 + "\n"
print("ready", flush=True)
n = 0
while True:
    atomic_write(target, a if n % 2 else b)
    n += 1
    print(n, flush=True)
"""


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if TEMP_MARK in p.name and ".git" not in p.parts]


def test_a_writer_killed_at_any_moment_leaves_old_or_new_never_torn(tmp_path):
    target = tmp_path / "page.md"
    atomic_write(target, "original\n")
    allowed = {"original\n", "A" * 3_000_000 + "\n", "B" * 1_500_000 + "\n"}
    rng = random.Random(7)
    caught_mid_write = 0
    for round_ in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True)
        out = Lines(proc.stdout)
        out.wait_count(1 + rng.randint(0, 3))  # "ready", then a few whole writes: a random point in the loop
        if round_ % 2:
            kill_now(proc)  # wherever the writer is by now
        else:
            kill_when(proc, lambda: temp_files(tmp_path))  # in the middle of a write, for certain
        out.text()
        assert target.read_text() in allowed
        leftovers = temp_files(tmp_path)
        caught_mid_write += bool(leftovers)
        for p in leftovers:
            p.unlink()
    # the kills really landed inside writes (a temp file was left), not only between them
    assert caught_mid_write >= 6


ENTRY_WRITER = r"""
import sys
from vaultmem import Vault
v = Vault(sys.argv[1])
actor = v.actor("lee")
print("ready", flush=True)
i = 0
while True:
    v.pages.add("前端审查", f"lesson {i} " + "x" * 2000, actor)
    i += 1
    print(i, flush=True)
"""


def test_a_long_lived_process_sweeps_only_after_a_writer_died_holding_the_lock(vault):
    """A server (one Vault object, never reopened) writes on: each write lists the vault's
    folders for temp files only when the writer before it died holding the lock — not on
    every write, which would cost a time growing with the vault."""
    from vaultmem import Vault
    from vaultmem.transaction import WRITING_MARK

    vault.pages.ensure("前端审查", vault.actor("lee"))
    server = Vault.open(vault.root)
    mark = vault.root / ".vaultmem" / "local" / WRITING_MARK
    server.pages.add("前端审查", "before", server.actor("lee"))
    assert not mark.exists()  # a writer that finished leaves no mark
    stray = vault.root / "memories" / f".stray.md{TEMP_MARK}0"  # not a dead writer's: left for a command's tidy
    stray.write_text("x")
    server.pages.add("前端审查", "no sweep", server.actor("lee"))
    assert stray.exists()
    proc = subprocess.Popen([sys.executable, "-c", ENTRY_WRITER, str(vault.root)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    Lines(proc.stdout).wait_count(2)
    kill_when(proc, lambda: holds_flock(vault.root / ".vaultmem" / "write.lock") and mark.exists())
    wait_until(lambda: not group_alive(proc.pid), what="the killed writer's git commands to finish")
    assert mark.exists()  # it died holding the lock
    torn = vault.root / "agents" / f".前端审查.md{TEMP_MARK}dead"
    torn.write_text("torn")
    server.pages.add("前端审查", "after the crash", server.actor("lee"))
    assert temp_files(vault.root) == [] and not mark.exists()
    assert parse_page((vault.root / "agents/前端审查.md").read_text(encoding="utf-8"),
                      "agents/前端审查.md").entries[-1].text == "after the crash"


def test_vault_command_killed_mid_write_leaves_a_whole_page_and_no_temp_files(vault):
    vault.pages.ensure("前端审查", vault.actor("lee"))
    page_path = vault.root / "agents" / "前端审查.md"
    write_lock = vault.root / ".vaultmem" / "write.lock"
    rng = random.Random(11)
    for round_ in range(6):
        # its own process group: the git commands it starts are in it too
        proc = subprocess.Popen([sys.executable, "-c", ENTRY_WRITER, str(vault.root)], stdout=subprocess.PIPE,
                                text=True, start_new_session=True)
        out = Lines(proc.stdout)
        out.wait_count(1 + rng.randint(0, 2))  # "ready", then a few whole entries
        if round_ % 2:
            kill_now(proc)  # wherever the writer is by now
        else:
            kill_when(proc, lambda: holds_flock(write_lock))  # in the middle of a change, for certain
        out.text()
        # a killed vaultmem process may leave its git child finishing a commit: wait for it
        wait_until(lambda: not group_alive(proc.pid), what="the killed writer's git commands to finish")
        assert not (vault.root / ".git" / "index.lock").exists()
        parse_page(page_path.read_text(encoding="utf-8"), "agents/前端审查.md")  # whole, parseable
    # a lock held by a killed process does not block the next writer, and the next
    # command removes whatever temp file a kill left behind
    leftover = vault.root / "agents" / f".前端审查.md{TEMP_MARK}deadbeef"
    leftover.write_text("torn")
    r = run_vaultmem("--vault", vault.root, "--as", "lee", "page", "add", "前端审查", "after the crash")
    assert r.returncode == 0, r.stderr
    assert temp_files(vault.root) == []
    page = parse_page(page_path.read_text(encoding="utf-8"), "agents/前端审查.md")
    assert page.entries[-1].text == "after the crash"
    subprocess.run(["git", "-C", str(vault.root), "fsck", "--no-progress"], check=True, capture_output=True)


def test_read_commands_also_sweep_orphan_temp_files(vault, cli):
    vault.pages.ensure("r", vault.actor("lee"))
    (vault.root / "memories" / f".x.md{TEMP_MARK}0001").write_text("torn")
    (vault.root / f".MEMORY.md{TEMP_MARK}0002").write_text("torn")
    assert cli("--vault", vault.root, "page", "show", "r").exit_code == 0
    assert temp_files(vault.root) == []


def test_temp_files_are_not_committed_even_when_left_behind(vault):
    (vault.root / "agents" / f".r.md{TEMP_MARK}0003").write_text("torn")
    assert ".vmtmp-" not in git(vault.root, "status", "--porcelain", "--untracked-files=all")


def test_inside_refuses_traversal_absolute_and_sibling_prefix(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()
    (tmp_path / "vault-evil").mkdir()
    assert inside(root, "agents/x.md") == root.resolve() / "agents/x.md"
    for bad in ["../vault-evil/x.md", "../../etc/passwd", "agents/../../x", str(tmp_path / "abs.md")]:
        with pytest.raises(UnsafePath):
            inside(root, bad)


def test_inside_follows_symlinks(tmp_path):
    root = tmp_path / "vault"
    (root / "agents").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "agents" / "evil.md").symlink_to(tmp_path / "target.md")
    with pytest.raises(UnsafePath):
        inside(root, "link/x.md")
    with pytest.raises(UnsafePath):
        inside(root, "agents/evil.md")
    (root / "wiki").mkdir()
    (root / "alias").symlink_to(root / "wiki")  # a link that stays inside is fine
    assert inside(root, "alias/x.md")


def test_atomic_write_keeps_permissions_and_leaves_no_temp(tmp_path):
    target = tmp_path / "f.md"
    target.write_text("old")
    os.chmod(target, 0o600)
    atomic_write(target, "new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o600
    assert temp_files(tmp_path) == []
