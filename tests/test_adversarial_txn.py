"""Issue 28, as an attacker and a careless user met it: a phantom staged note after two
kills, clones whose syncs never meet, commits made in a made-up name without a word.

Everything runs for real: the installed ``vaultmem`` as a subprocess on a git vault under
tmp_path, killed with SIGKILL — the whole process group (vaultmem and its git children,
``os.killpg``) or at one of its own file-system steps (``tests/killpoints``) —, a bare
remote and two clones, a git with no identity (an empty global config). Nothing waits a
fixed time: waits end on a condition (a marker file, a process's end), with a deadline
only as a safety net; a random delay before a kill only picks where the kill lands.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from test_kills import (
    DEADLINE,
    KILLPOINTS,
    REAL_GIT,
    VAULTMEM,
    clean_env,
    git,
    kill_after_git,
    kill_at,
    kill_group,
    ok,
    staged,
    status,
    tree,
    vm,
)

# -- the vaults ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A vault (English, git.lock_timeout 1 s) holding one note; copied by each test."""
    root = tmp_path_factory.mktemp("template") / "vault"
    ok(subprocess.run([str(VAULTMEM), "init", str(root), "--lang", "en", "--orchestrator", "orch"],
                      env=clean_env(), capture_output=True, text=True, timeout=DEADLINE))
    ok(vm(root, "config", "set", "git.lock_timeout", "1"))
    ok(vm(root, "remember", "Use pnpm, never npm", "--type", "preference"))
    assert status(root) == "", status(root)
    return root


@pytest.fixture
def vault(template, tmp_path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(template, root, symlinks=True)
    return root


def memory_links(text: str) -> set[str]:
    return {f"{m}.md" for m in re.findall(r"\[\[(memories/[^|\]#]+)", text)}


def settled_problems(root: Path, doctor: bool = True) -> list[str]:
    """What a user would find wrong once a command has run to its end after the kills (with
    ``doctor``, its run is that command): a failing doctor, anything staged (a plain 'git
    commit' would record it), the notes at HEAD against the notes HEAD's MEMORY.md lists,
    a dirty working tree."""
    problems = []
    done = vm(root, "--json", "doctor") if doctor else None
    if done is not None and done.returncode != 0:
        failing = [c for c in json.loads(done.stdout)["checks"] if not c["ok"]]
        problems.append(f"doctor fails: {failing}")
    if staged(root):
        problems.append(f"left staged (a plain 'git commit' would record it):\n{staged(root)}")
    at_head = {p for p in tree(root) if p.startswith("memories/") and p.endswith(".md")}
    listed = memory_links(git(root, "show", "HEAD:MEMORY.md"))
    if at_head != listed:
        problems.append(f"HEAD's notes {sorted(at_head)} are not what HEAD's MEMORY.md lists {sorted(listed)}")
    left = status(root)
    if left:
        problems.append(f"git status is not clean:\n{left}")
    return problems


def journal_exists(root: Path) -> bool:
    return (root / ".vaultmem" / "local" / "txn.json").exists()


# -- 4. a phantom staged note ----------------------------------------------------------------------


def recovery_points(root: Path, tmp: Path, args: list[str]) -> list[str]:
    """The kill points of the recovery ``vaultmem ARGS`` makes first on ``root`` (a vault a
    killed writer left): before and after each of its file-system steps (see
    tests/killpoints/sitecustomize.py) up to the removal of the dead writer's journal,
    counted on a copy of ``root``."""
    log = tmp / "steps.log"
    counting = tmp / "counting"
    shutil.copytree(root, counting, symlinks=True)
    ok(subprocess.run([str(VAULTMEM), "--vault", str(counting), *args], capture_output=True, text=True,
                      timeout=DEADLINE, env=clean_env(PYTHONPATH=str(KILLPOINTS), VAULTMEM_TEST_KILL_LOG=str(log))))
    steps = [line.split("\t", 1) for line in log.read_text().splitlines()]
    shutil.rmtree(counting)
    last = next(n for n, (op, path) in enumerate(steps, 1) if op == "unlink" and path.endswith("/txn.json"))
    return [f"any:{k}{after}" for k in range(1, last + 1) for after in ("", "+")]


@pytest.mark.soak
def test_recovery_killed_at_any_step_leaves_nothing_staged(vault, tmp_path):
    """A `remember` killed as a group right after `git add`; the next command's recovery of
    its journal killed before and after each of its file steps; then a command that runs
    to its end (doctor). Before: a recovery killed after it had put the files back but
    before it unstaged them left the dead note staged (`AD memories/….md`) for good, and
    doctor passed."""
    kill_after_git(vault, ["remember", "Kafka topics keep 45 days", "--type", "fact"], tmp_path)
    assert journal_exists(vault) and staged(vault), "the first kill did not land between 'git add' and 'git commit'"
    next_args = ["remember", "Deploys run on Fridays", "--type", "fact"]
    failures = []
    points = recovery_points(vault, tmp_path, next_args)
    assert len(points) >= 6, points  # the dead note, MEMORY.md put back, its copy, the journal
    for point in points:
        case = tmp_path / f"case-{point.replace(':', '-').replace('+', 'after')}"
        shutil.copytree(vault, case, symlinks=True)
        killed = kill_at(case, next_args, point)
        if killed.returncode != -9:  # 'after' a removal of a file already gone: that call raised, no kill
            assert point.endswith("+"), f"{point}: not killed ({killed.returncode}): {killed.stderr}"
            shutil.rmtree(case)
            continue
        problems = settled_problems(case)  # its doctor is the command that settles
        if problems:
            failures.append(f"recovery killed at {point}:\n  " + "\n  ".join(problems))
        shutil.rmtree(case)
    assert not failures, "\n".join(failures)


def test_recovery_killed_as_a_group_during_its_git_reset_is_finished_next_time(vault, tmp_path):
    """The recovery's own `git reset` (unstaging the dead writer's paths) finishes, and the
    whole group is killed right after it, before the journal goes: the next command
    settles the journal again, and nothing is left staged."""
    kill_after_git(vault, ["remember", "Kafka topics keep 45 days", "--type", "fact"], tmp_path)
    kill_after_git(vault, ["remember", "Deploys run on Fridays", "--type", "fact"], tmp_path, word="reset")
    ok(vm(vault, "remember", "Reviews need two approvals", "--type", "fact"))
    problems = settled_problems(vault)
    assert not problems, "\n".join(problems)


def counting_git(tmp: Path) -> Path:
    """A folder holding a ``git`` that writes each of its calls to $VAULTMEM_TEST_GIT_LOG as it
    starts, then runs the real git: a test waits for a command's Nth git call."""
    folder = tmp / "counting-git"
    folder.mkdir(exist_ok=True)
    script = folder / "git"
    script.write_text('#!/bin/sh\necho "$*" >> "$VAULTMEM_TEST_GIT_LOG"\nexec "$VAULTMEM_TEST_REAL_GIT" "$@"\n',
                      encoding="utf-8")
    script.chmod(0o755)
    return folder


KILLS = int(os.environ.get("VAULTMEM_TEST_GROUP_KILLS", "12"))  # set it higher for a longer soak


@pytest.mark.soak
def test_group_kills_at_random_points_including_recovery_leave_nothing_staged(vault, tmp_path):
    """`remember` killed as a whole process group (vaultmem and its git children) at random
    points of its git work — after its Nth git call has started (N at random) and a random
    few milliseconds more —, three kills in a row, so that kills land in the recovery of
    the previous kill's journal; then one command to its end, and nothing is staged, HEAD's
    notes are what HEAD's MEMORY.md lists, the tree is clean; doctor passes at the end.
    The wait before a kill only picks where it lands; what is checked never depends on it."""
    rng = random.Random(28)
    calls = tmp_path / "git-calls.log"
    env = clean_env(PATH=f"{counting_git(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}",
                    VAULTMEM_TEST_REAL_GIT=REAL_GIT, VAULTMEM_TEST_GIT_LOG=str(calls))

    def git_calls() -> int:
        return len(calls.read_text(encoding="utf-8").splitlines()) if calls.exists() else 0

    ok(vm(vault, "remember", "Counting run", "--type", "fact", env=env))
    span = git_calls()  # the git calls of one remember: kills land among them (and the recovery's)
    outcomes = {"left a journal": 0, "killed with a journal standing": 0}
    failures = []
    for i in range(KILLS):
        calls.unlink(missing_ok=True)
        standing = journal_exists(vault)
        proc = subprocess.Popen([str(VAULTMEM), "--vault", str(vault), "remember", f"Topic kt{i} keeps {i} days",
                                 "--type", "fact"], env=env, cwd=vault, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        nth = rng.randint(1, span + 2)
        end = time.monotonic() + DEADLINE
        while proc.poll() is None and git_calls() < nth and time.monotonic() < end:
            time.sleep(0.002)
        end = time.monotonic() + rng.uniform(0, 0.03)
        while proc.poll() is None and time.monotonic() < end:
            time.sleep(0.002)
        kill_group(proc)
        outcomes["left a journal"] += journal_exists(vault)
        outcomes["killed with a journal standing"] += standing
        if i % 3 == 2:  # a run of three kills, then one command to its end
            ok(vm(vault, "remember", f"Settled after kill {i}", "--type", "fact"))
            problems = settled_problems(vault, doctor=False)
            if problems:
                failures.append(f"after kill {i} ({outcomes}):\n  " + "\n  ".join(problems))
                break
    assert not failures, "\n".join(failures)
    problems = settled_problems(vault)
    assert not problems, "\n".join(problems)


def test_doctor_names_a_staged_path_no_change_owns(vault):
    """A path staged by nobody vaultmem knows of (a dead writer's leftover, a half-made
    commit) would be recorded by the next plain `git commit`: doctor says so, naming it."""
    (vault / "memories" / "kt45.md").write_text("---\ntype: fact\n---\nKafka topics keep 45 days\n", encoding="utf-8")
    git(vault, "add", "memories/kt45.md")
    (vault / "memories" / "kt45.md").unlink()  # as the dead writer's recovery left it: AD
    done = vm(vault, "--json", "doctor")
    assert done.returncode == 1, done.stdout + done.stderr
    found = [p for c in json.loads(done.stdout)["checks"] if not c["ok"] for p in c["problems"]]
    assert any(p["path"] == "memories/kt45.md" and "staged" in p["problem"] for p in found), found
    text = vm(vault, "doctor")
    assert "memories/kt45.md" in text.stdout and "git reset" in text.stdout, text.stdout


# -- 12. sync fast-forwards ------------------------------------------------------------------------


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def merges(root: Path) -> int:
    return len(git(root, "rev-list", "--merges", "HEAD").split())


def test_clones_syncing_in_turn_reach_the_same_head(vault, tmp_path):
    """A bare remote and two clones. When one side is strictly ahead, sync fast-forwards
    (or only pushes): no merge commit, and after each has synced once more both clones
    and the remote are at one commit. Before: every pull was a merge commit (--no-ff), so
    the clones leapfrogged each other for ever."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(vault, "remote", "add", "origin", str(remote))
    ok(vm(vault, "sync"))  # the first sync records .gitattributes and pushes
    other = tmp_path / "clone-b"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    base_merges = merges(vault)

    ok(vm(vault, "remember", "Staging runs on port 8081", "--type", "fact"))
    ok(vm(vault, "sync"))  # strictly ahead: a push only
    ok(vm(other, "sync"))  # strictly behind: a fast-forward
    assert head(other) == head(vault) == git(remote, "rev-parse", "HEAD").strip()

    ok(vm(other, "remember", "Releases are tagged vYYYY.MM", "--type", "fact"))
    ok(vm(other, "sync"))
    ok(vm(vault, "sync"))
    ok(vm(other, "sync"))  # nothing new on either side: HEAD stays
    assert head(other) == head(vault) == git(remote, "rev-parse", "HEAD").strip()
    assert merges(vault) == base_merges, git(vault, "log", "--merges", "--format=%h %s")


def test_sync_still_merges_when_both_sides_moved(vault, tmp_path):
    """Diverged clones still merge (a fast-forward cannot hold both sides), and after the
    first clone syncs again both are at the merge."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(vault, "remote", "add", "origin", str(remote))
    ok(vm(vault, "sync"))
    other = tmp_path / "clone-b"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    ok(vm(vault, "remember", "Staging runs on port 8081", "--type", "fact"))
    ok(vm(other, "--as", "orch", "page", "ensure", "reviewer"))
    ok(vm(vault, "sync"))
    ok(vm(other, "sync"))  # both moved: a merge commit
    assert len(git(other, "log", "-1", "--format=%p").split()) == 2, "the diverged sync made no merge commit"
    ok(vm(vault, "sync"))  # strictly behind the merge: a fast-forward
    assert head(other) == head(vault) == git(remote, "rev-parse", "HEAD").strip()
    assert {"memories/staging-runs-on-port-8081.md", "agents/reviewer.md"} <= tree(vault)


# -- 12. no git identity: said once ------------------------------------------------------------------


def no_identity_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    empty = tmp_path / "empty.gitconfig"
    empty.write_text("", encoding="utf-8")
    env = clean_env(HOME=str(home), GIT_CONFIG_GLOBAL=str(empty), GIT_CONFIG_NOSYSTEM="1",
                    XDG_CONFIG_HOME=str(home / ".config"))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        env.pop(name, None)
    return env


def test_commits_without_a_git_identity_are_said_once_per_vault(tmp_path):
    """With no user.name / user.email anywhere, the first commit says on stderr that
    commits are authored 'vaultmem user' and how to set an identity; later commands do
    not repeat it. Before: nothing was said."""
    env = no_identity_env(tmp_path)
    root = tmp_path / "v"
    first = subprocess.run([str(VAULTMEM), "init", str(root), "--lang", "en"], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=DEADLINE)
    ok(first)
    assert "vaultmem user" in first.stderr and "git config" in first.stderr and "user.name" in first.stderr, \
        first.stderr
    assert git(root, "log", "-1", "--format=%an").strip() == "vaultmem user"
    later = [vm(root, "remember", "Use pnpm, never npm", "--type", "preference", env=env),
             vm(root, "remember", "Deploys run on Fridays", "--type", "fact", env=env)]
    for done in later:
        ok(done)
        assert "vaultmem user" not in done.stderr and "user.name" not in done.stderr, done.stderr
    assert git(root, "log", "-1", "--format=%an").strip() == "vaultmem user"
    assert status(root) == "", status(root)  # what records it was said is never committed


def test_a_vault_whose_first_commits_were_made_with_an_identity_says_it_when_one_is_gone(template, tmp_path):
    """A vault made with an identity says nothing; the first commit made without one says
    it, once."""
    root = tmp_path / "v"
    shutil.copytree(template, root, symlinks=True)
    env = no_identity_env(tmp_path)
    first = ok(vm(root, "remember", "Deploys run on Fridays", "--type", "fact", env=env))
    assert "vaultmem user" in first.stderr and "user.name" in first.stderr, first.stderr
    again = ok(vm(root, "remember", "Reviews need two approvals", "--type", "fact", env=env))
    assert "vaultmem user" not in again.stderr, again.stderr
    named = ok(vm(root, "remember", "Staging runs on port 8081", "--type", "fact"))
    assert "vaultmem user" not in named.stderr, named.stderr
