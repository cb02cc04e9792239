"""Crashes, stale locks and a full disk, against the installed ``vaultmem`` in real processes.

Each test runs the CLI as a subprocess on a real git vault under tmp_path and breaks it
the way the world does: SIGKILL at a chosen step (a ``git`` stand-in first in PATH that
hangs after ``git add``; ``tests/killpoints/sitecustomize.py``, on the PYTHONPATH of the
killed process only, which kills it at its Nth os.replace / os.unlink), a lock file a
killed git left behind, a lock a live git holds, a disk with no space left. Then it
looks at what a user would see: the files, ``git log`` / ``git show`` / ``git status``,
exit codes and messages.

The contract: a killed command is either finished as its own commit or undone, never
swept into the next command's commit; an approval is all or nothing; a stale git lock
does not block writes (a live one is never taken away); a full disk is a clear error
that changes nothing. Nothing here waits a fixed time: it waits for a marker file or a
process, with a generous deadline only as a safety net.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
KILLPOINTS = HERE / "killpoints"
VAULTMEM = Path(sys.executable).with_name("vaultmem")
if not VAULTMEM.exists():  # pragma: no cover - an installation without the venv layout
    VAULTMEM = Path(shutil.which("vaultmem") or "vaultmem")
REAL_GIT = shutil.which("git") or "git"
DEADLINE = 60.0  # a safety net only: every wait ends as soon as its condition holds

ITEM_TEXT = "The API gateway retries twice"  # the inbox item approvals are killed on
ITEM_SLUG = "the-api-gateway-retries-twice"


# -- running the CLI ---------------------------------------------------------------------------


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a vaultmem subprocess: nothing of a vault, agent, kill point or
    git redirection leaks in from the test runner's environment."""
    drop = {"VAULTMEM_VAULT", "VAULTMEM_AGENT", "PYTHONPATH", "GIT_PYTHON_GIT_EXECUTABLE", "GIT_DIR",
            "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_EDITOR"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("VAULTMEM_TEST_")}
    env.update(extra)
    return env


def vm(root: Path, *args, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(VAULTMEM), "--vault", str(root), *map(str, args)], env=env or clean_env(),
                          cwd=root, input=stdin, capture_output=True, text=True, timeout=DEADLINE)


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    shown = " ".join(map(str, result.args[1:]))
    assert result.returncode == 0, f"{shown} failed ({result.returncode}):\n{result.stderr}{result.stdout}"
    return result


def git(root: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run([REAL_GIT, "-c", "core.quotepath=off", "-C", str(root), *args], capture_output=True,
                          text=True, env=clean_env())
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def wait_for(condition, what: str, proc: subprocess.Popen | None = None) -> None:
    """Poll ``condition`` until it holds; fail if ``proc`` ends first or at the deadline."""
    end = time.monotonic() + DEADLINE
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"waiting for {what}: the process ended first (exit {proc.returncode})")
        if time.monotonic() > end:
            raise AssertionError(f"waiting for {what}: still not there after {DEADLINE:g}s")
        time.sleep(0.01)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=DEADLINE)


def kill_after_git(root: Path, args: list[str], tmp: Path, word: str = "add") -> None:
    """Run ``vaultmem ARGS`` with a git that hangs right after ``git WORD`` and SIGKILL
    the whole process group there (the real git step has finished; nothing after it ran)."""
    marker = tmp / f"git-{word}-done"
    marker.unlink(missing_ok=True)
    env = clean_env(PATH=f"{KILLPOINTS}{os.pathsep}{os.environ.get('PATH', '')}", VAULTMEM_TEST_REAL_GIT=REAL_GIT,
                    VAULTMEM_TEST_GIT_PAUSE=word, VAULTMEM_TEST_GIT_MARKER=str(marker))
    log = (tmp / f"killed-{word}.log").open("w")
    proc = subprocess.Popen([str(VAULTMEM), "--vault", str(root), *args], env=env, cwd=root, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        try:
            wait_for(marker.exists, f"'git {word}' in 'vaultmem {' '.join(args)}'", proc)
        except AssertionError as exc:
            log.flush()
            raise AssertionError(f"{exc}; the kill point was never reached. Output:\n"
                                 f"{(tmp / f'killed-{word}.log').read_text()}") from None
    finally:
        kill_group(proc)
        log.close()


def kill_at(root: Path, args: list[str], point: str) -> subprocess.CompletedProcess:
    """Run ``vaultmem ARGS`` with SIGKILL injected at a file-system step (see
    tests/killpoints/sitecustomize.py)."""
    env = clean_env(PYTHONPATH=str(KILLPOINTS), VAULTMEM_TEST_KILL_AT=point)
    return subprocess.run([str(VAULTMEM), "--vault", str(root), *args], env=env, cwd=root, capture_output=True,
                          text=True, timeout=DEADLINE)


def kill_points(root: Path, args: list[str], tmp: Path) -> tuple[Path, list[str]]:
    """Run ``vaultmem ARGS`` to its end on a copy of the vault at ``root`` (``tmp/counting``),
    counting its file-system steps: (that copy, as it is after the command, and a kill
    point before each step, for :func:`kill_at`)."""
    log = tmp / "steps.log"
    counting = tmp / "counting"
    shutil.copytree(root, counting, symlinks=True)
    subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(counting), *args], capture_output=True,
                   text=True, timeout=DEADLINE, check=True,
                   env=clean_env(PYTHONPATH=str(KILLPOINTS), VAULTMEM_TEST_KILL_LOG=str(log)))
    steps = [line.split("\t", 1)[0] for line in log.read_text().splitlines()]
    return counting, [f"{op}:{k}" for op in ("replace", "rename", "unlink") for k in range(1, steps.count(op) + 1)]


# -- what a user sees in git -----------------------------------------------------------------------


def tree(root: Path, rev: str = "HEAD") -> set[str]:
    return set(git(root, "ls-tree", "-r", "--name-only", rev).splitlines())


def commit_files(root: Path, rev: str = "HEAD") -> set[str]:
    return set(git(root, "show", "--name-only", "--format=", rev).split("\n")) - {""}


def subject(root: Path, rev: str = "HEAD") -> str:
    return git(root, "log", "-1", "--format=%s", rev).strip()


def added_lines(root: Path, rev: str = "HEAD") -> list[str]:
    return [line[1:] for line in git(root, "show", "--format=", "--no-color", rev).splitlines()
            if line.startswith("+") and not line.startswith("+++")]


def status(root: Path, *paths: str) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all", "--", *paths)


def staged(root: Path) -> str:
    return git(root, "diff", "--cached", "--name-status")


def memory_links(text: str) -> set[str]:
    """The notes MEMORY.md links to, as file paths."""
    return {f"{m}.md" for m in re.findall(r"\[\[(memories/[^|\]#]+)", text)}


def linked_but_missing(root: Path) -> list[str]:
    """Notes HEAD's MEMORY.md links to that HEAD does not hold."""
    return sorted(memory_links(git(root, "show", "HEAD:MEMORY.md")) - tree(root))


def carriers(root: Path, base: str, text: str) -> list[tuple[str, str, str]]:
    """Commits after ``base`` that add or remove ``text``: (sha, author, subject)."""
    out = git(root, "log", f"{base}..HEAD", f"-S{text}", "--format=%H%x09%an%x09%s")
    return [tuple(line.split("\t", 2)) for line in out.splitlines()]


# -- the vaults --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, str]:
    """A vault (English, orchestrator 'orch', git.lock_timeout 1 s) with a role page, a note
    and one pending inbox item; copied, never changed, by each test."""
    root = tmp_path_factory.mktemp("template") / "vault"
    ok(subprocess.run([str(VAULTMEM), "init", str(root), "--lang", "en", "--orchestrator", "orch"],
                      env=clean_env(), capture_output=True, text=True, timeout=DEADLINE))
    ok(vm(root, "config", "set", "git.lock_timeout", "1"))
    ok(vm(root, "--as", "orch", "page", "ensure", "reviewer"))
    ok(vm(root, "--as", "orch", "page", "add", "reviewer", "Check effect cleanups in every review"))
    ok(vm(root, "remember", "Use pnpm, never npm", "--type", "preference"))
    filed = ok(vm(root, "--as", "ella", "--json", "retain", "-",
                  stdin=f"- type: fact\n  text: {ITEM_TEXT}\n  author: alice\n  author_kind: user\n"))
    item = json.loads(filed.stdout)["items"][0]["id"]
    assert status(root) == "", status(root)
    return root, item


@pytest.fixture
def vault(template, tmp_path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(template[0], root, symlinks=True)
    return root


@pytest.fixture
def item(template) -> str:
    return template[1]


# -- 1. killed between git add and git commit ------------------------------------------------------


def dead_writer_problems(root: Path, base: str, text: str, paths: set[str], author: str, mentions: str) -> list[str]:
    """The change a writer killed after 'git add' made (it holds ``text``, in ``paths``)
    must be committed as its own commit (by ``author``, its message naming ``mentions``)
    or undone with nothing left staged."""
    problems = []
    found = carriers(root, base, text)
    head = git(root, "rev-parse", "HEAD").strip()
    if found:
        for sha, who, subj in found:
            if sha == head:
                problems.append(f"the killed writer's change ({text!r}) was swept into the next command's commit "
                                f"{sha[:8]} '{subj}'")
            elif who != author or mentions not in subj:
                problems.append(f"the killed writer's change ({text!r}) was committed by {who} as '{subj}', "
                                f"not as its own commit (by {author}, naming {mentions})")
            elif not commit_files(root, sha) <= paths:
                problems.append(f"the commit finishing the killed change also holds "
                                f"{sorted(commit_files(root, sha) - paths)}")
    else:
        for rel in sorted(paths):
            if (root / rel).exists() and text in (root / rel).read_text(encoding="utf-8"):
                problems.append(f"the killed writer's change ({text!r}) is still in {rel}, uncommitted")
    if status(root, *sorted(paths)):
        problems.append(f"git status is not clean for the killed writer's files:\n{status(root, *sorted(paths))}")
    if staged(root):
        problems.append(f"left staged (the user's next 'git commit' would carry it):\n{staged(root)}")
    return problems


def next_commit_problems(root: Path, own_files: set[str], own_text: str, dead_text: str) -> list[str]:
    problems = []
    if commit_files(root) != own_files:
        problems.append(f"the next command's commit '{subject(root)}' holds {sorted(commit_files(root))}, "
                        f"not just its own {sorted(own_files)}")
    foreign = [line for line in added_lines(root) if dead_text in line]
    if foreign:
        problems.append(f"the next command's commit '{subject(root)}' adds the killed writer's lines: {foreign}")
    if own_text not in subject(root):
        problems.append(f"HEAD is '{subject(root)}', not the next command's own commit")
    missing = linked_but_missing(root)
    if missing:
        problems.append(f"HEAD's MEMORY.md links notes HEAD does not hold: {missing}")
    return problems


def test_remember_killed_after_git_add_is_not_swept_into_the_next_commit(vault, tmp_path):
    """A human's `remember` killed between `git add` and `git commit`; the next, unrelated
    `remember` commits only its own note and line, and MEMORY.md at HEAD links no note
    HEAD lacks; the killed note is its own commit or gone."""
    base = git(vault, "rev-parse", "HEAD").strip()
    kill_after_git(vault, ["remember", "The backend listens on 8080", "--type", "fact"], tmp_path)
    ok(vm(vault, "remember", "Deploys run on Fridays", "--type", "fact"))
    problems = next_commit_problems(vault, {"MEMORY.md", "memories/deploys-run-on-fridays.md"},
                                    "Deploys run on Fridays", "The backend listens on 8080")
    problems += dead_writer_problems(vault, base, "The backend listens on 8080",
                                     {"MEMORY.md", "memories/the-backend-listens-on-8080.md"},
                                     git(vault, "log", "-1", "--format=%an").strip(), "The backend listens on 8080")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("follow_up", ["remember", "page-add-same-page"])
def test_orchestrator_page_add_killed_after_git_add_is_finished_or_undone(vault, tmp_path, follow_up):
    """The orchestrator's `page add` killed between `git add` and `git commit`; after the
    next write (an unrelated human `remember`, or the orchestrator's next entry on the
    same page) the killed entry is the orchestrator's own commit or gone, never left
    staged, never committed in someone else's name."""
    base = git(vault, "rev-parse", "HEAD").strip()
    dead = "Watch the retry budget of every client"
    kill_after_git(vault, ["--as", "orch", "page", "add", "reviewer", dead], tmp_path)
    if follow_up == "remember":
        own, own_files = "Deploys run on Fridays", {"MEMORY.md", "memories/deploys-run-on-fridays.md"}
        ok(vm(vault, "remember", own, "--type", "fact"))
        own_subject = own
    else:
        own, own_files = "Prefer composition over inheritance", {"agents/reviewer.md"}
        ok(vm(vault, "--as", "orch", "page", "add", "reviewer", own))
        own_subject = "agents/reviewer.md"
        if own not in "".join(added_lines(vault)):
            pytest.fail(f"HEAD '{subject(vault)}' does not add the orchestrator's new entry")
    problems = next_commit_problems(vault, own_files, own_subject, dead)
    problems += dead_writer_problems(vault, base, dead, {"agents/reviewer.md"}, "orch", "agents/reviewer.md")
    assert not problems, "\n".join(problems)


# -- 2. review approve killed at any moment ---------------------------------------------------------


def item_state(root: Path, iid: str) -> tuple[str, list[str]]:
    """Where the item is by the files ('pending', 'approved' or a problem) and what is wrong."""
    pending = (root / "inbox" / f"{iid}.md").exists()
    archived = root / "archive" / "inbox" / f"{iid}.md"
    notes = sorted(p.name for p in (root / "memories").glob(f"{ITEM_SLUG}*.md"))
    index = (root / "MEMORY.md").read_text(encoding="utf-8")
    linked = sorted(p for p in memory_links(index) if p.startswith(f"memories/{ITEM_SLUG}"))
    problems = []
    if pending and archived.exists():
        problems.append(f"{iid} is both in inbox/ and in archive/inbox/")
        return "both", problems
    if not pending and not archived.exists():
        problems.append(f"{iid} is missing from both inbox/ and archive/inbox/")
        return "lost", problems
    if pending:
        if notes or linked:
            problems.append(f"{iid} is still pending, yet a note was written for it: files {notes}, "
                            f"MEMORY.md links {linked}")
        return "pending", problems
    text = archived.read_text(encoding="utf-8")
    if not re.search(r"^status: approved\s*$", text, re.M):
        problems.append(f"archive/inbox/{iid}.md is not marked approved")
    if notes != [f"{ITEM_SLUG}.md"]:
        problems.append(f"{iid} is archived as approved, but memories/ holds {notes} for it")
    if linked != [f"memories/{ITEM_SLUG}.md"]:
        problems.append(f"{iid} is archived as approved, but MEMORY.md links {linked} for it")
    return "approved", problems


def approval_problems(root: Path, iid: str, where: str) -> list[str]:
    """After a killed `review approve`: a read, then a write, then approving again."""
    problems = []
    # A read already sees all or nothing.
    read = vm(root, "--json", "review", "list", "--status", "all")
    if read.returncode != 0:
        return [f"{where}: 'vaultmem review list' failed ({read.returncode}): {read.stderr.strip()}"]
    listed = [i for i in json.loads(read.stdout)["items"] if i["id"] == iid]
    state, wrong = item_state(root, iid)
    problems += [f"{where}, after a read: {w}" for w in wrong]
    if [i["status"] for i in listed] != [state] and state in ("pending", "approved"):
        problems.append(f"{where}: 'vaultmem review' lists {iid} as {[i['status'] for i in listed]}, "
                        f"the files say {state}")
    # The next write leaves it committed either way.
    follow = vm(root, "remember", "Deploys run on Fridays", "--type", "fact")
    if follow.returncode != 0:
        return problems + [f"{where}: the next 'vaultmem remember' failed ({follow.returncode}): "
                           f"{follow.stderr.strip()}"]
    state, wrong = item_state(root, iid)
    problems += [f"{where}, after the next write: {w}" for w in wrong]
    head = tree(root)
    if state == "pending" and (f"inbox/{iid}.md" not in head or any(p.startswith(f"memories/{ITEM_SLUG}")
                                                                    for p in head)):
        problems.append(f"{where}: {iid} is pending, but HEAD does not hold it that way")
    if state == "approved":
        index = git(root, "show", "HEAD:MEMORY.md")
        held = {f"archive/inbox/{iid}.md", f"memories/{ITEM_SLUG}.md"} <= head and f"inbox/{iid}.md" not in head
        if not held or f"memories/{ITEM_SLUG}.md" not in memory_links(index):
            problems.append(f"{where}: {iid} is approved on disk, but its note, MEMORY.md line and archived item "
                            f"are not all committed")
    if commit_files(root) != {"MEMORY.md", "memories/deploys-run-on-fridays.md"}:
        problems.append(f"{where}: the next command's commit holds {sorted(commit_files(root))}")
    if status(root) or staged(root):
        problems.append(f"{where}: git status is not clean after the next write:\n{status(root)}{staged(root)}")
    missing = linked_but_missing(root)
    if missing:
        problems.append(f"{where}: HEAD's MEMORY.md links notes HEAD does not hold: {missing}")
    # Approving again never makes a second note.
    again = vm(root, "review", "approve", iid)
    if state == "pending" and again.returncode != 0:
        problems.append(f"{where}: approving the pending {iid} again failed: {again.stderr.strip()}")
    notes = sorted(p.name for p in (root / "memories").glob(f"{ITEM_SLUG}*.md"))
    if state in ("pending", "approved") and notes != [f"{ITEM_SLUG}.md"]:
        problems.append(f"{where}: after approving again, memories/ holds {notes}")
    return problems


def approve_steps(root: Path, iid: str, tmp: Path) -> list[tuple[str, str]]:
    """The file-system steps `review approve` makes: (op, path), in order."""
    log = tmp / "steps.log"
    ok(subprocess.run([str(VAULTMEM), "--vault", str(root), "review", "approve", iid], cwd=root, capture_output=True,
                      text=True, timeout=DEADLINE,
                      env=clean_env(PYTHONPATH=str(KILLPOINTS), VAULTMEM_TEST_KILL_LOG=str(log))))
    return [tuple(line.split("\t", 1)) for line in log.read_text().splitlines()]


@pytest.mark.soak
def test_review_approve_killed_at_every_file_step_is_all_or_nothing(template, tmp_path):
    """`review approve` SIGKILLed just before each of its os.replace / os.unlink calls
    (and just after the last): the item stays pending with no note, or is archived
    approved with its note and MEMORY.md line committed; never lost, never doubled."""
    src, iid = template
    counting = tmp_path / "counting"
    shutil.copytree(src, counting, symlinks=True)
    steps = approve_steps(counting, iid, tmp_path)
    assert steps, "review approve made no file-system step that could be interrupted"
    points = []
    for op in ("replace", "rename", "unlink"):
        points += [f"{op}:{n}" for n in range(1, sum(1 for s in steps if s[0] == op) + 1)]
    points.append(f"any:{len(steps)}+")
    shown = {p: (steps[int(p.split(':')[1].rstrip('+')) - 1] if p.startswith("any") else
                 [s for s in steps if s[0] == p.split(":")[0]][int(p.split(":")[1]) - 1]) for p in points}

    def case(point: str) -> list[str]:
        root = tmp_path / f"case-{point.replace(':', '-').replace('+', 'after')}"
        shutil.copytree(src, root, symlinks=True)
        op, path = shown[point]
        path = path.replace(f"{counting}/", "")
        where = f"killed {'after' if point.endswith('+') else 'before'} {op} {path} ({point})"
        done = kill_at(root, ["review", "approve", iid], point)
        if done.returncode != -signal.SIGKILL:
            return [f"{where}: the kill point was not reached (exit {done.returncode}): {done.stderr.strip()}"]
        return approval_problems(root, iid, where)

    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = [p for found in pool.map(case, points) for p in found]
    assert not problems, f"{len(points)} kill points ({', '.join(points)}):\n" + "\n".join(problems)


@pytest.mark.parametrize("word", ["add", "commit"])
def test_review_approve_killed_at_its_git_steps_is_all_or_nothing(vault, item, tmp_path, word):
    """`review approve` SIGKILLed right after its `git add` (nothing committed yet) or its
    `git commit`: the same all-or-nothing outcome."""
    kill_after_git(vault, ["review", "approve", item], tmp_path, word=word)
    problems = approval_problems(vault, item, f"killed after git {word}")
    assert not problems, "\n".join(problems)


# -- 3. git lock files -------------------------------------------------------------------------------


RAW_GIT = ("fatal:", "Unable to create", "Another git process seems", "File exists")


@pytest.mark.parametrize("lock", ["index.lock", "HEAD.lock"])
def test_a_stale_git_lock_does_not_block_the_next_write(vault, lock):
    """A lock file a killed git left (no git running): the next `remember` recovers (exit 0,
    lock gone, its commit made) or fails with its own clear message naming the file —
    not git's raw text, and not 'busy', since nothing is."""
    (vault / ".git" / lock).write_bytes(b"")
    done = vm(vault, "remember", "Deploys run on Fridays", "--type", "fact")
    if done.returncode == 0:
        assert not (vault / ".git" / lock).exists(), f"the write succeeded but .git/{lock} is still there"
        assert "Deploys run on Fridays" in subject(vault), subject(vault)
        assert commit_files(vault) == {"MEMORY.md", "memories/deploys-run-on-fridays.md"}
        assert status(vault) == "" and staged(vault) == ""
        return
    raw = [marker for marker in RAW_GIT if marker in done.stderr]
    assert "Traceback" not in done.stderr, done.stderr
    assert not raw, f"exit {done.returncode} with git's raw text ({raw}):\n{done.stderr}"
    assert done.returncode != 4, f"reported busy (exit 4) though no git process is running:\n{done.stderr}"
    assert f".git/{lock}" in done.stderr, f"the message does not name .git/{lock}:\n{done.stderr}"
    assert not (vault / "memories" / "deploys-run-on-fridays.md").exists(), "a failed write left its note"


def test_a_lock_held_by_a_live_git_is_waited_for_and_never_removed(vault, tmp_path):
    """A real `git commit` sits in its editor holding .git/index.lock: `remember` waits
    git.lock_timeout, exits 4 (busy) with a hint and changes nothing; the lock is still
    there; released, that git commit finishes normally with only its own change."""
    started, release = tmp_path / "editor-started", tmp_path / "editor-release"
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\n: > '{started}'\nwhile [ ! -e '{release}' ]; do sleep 0.05; done\n"
                      "printf 'A human commit of their own\\n' > \"$1\"\n")
    editor.chmod(0o755)
    (vault / "notes.md").write_text("my own notes\n")
    git(vault, "add", "notes.md")
    before = (vault / "MEMORY.md").read_bytes()
    # with a path, git commit holds the index lock until its editor returns
    human = subprocess.Popen([REAL_GIT, "-C", str(vault), "-c", "user.name=Hu Man", "-c", "user.email=hu@example.org",
                              "commit", "--", "notes.md"], env=clean_env(GIT_EDITOR=str(editor)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for(started.exists, "git commit's editor", human)
        assert (vault / ".git" / "index.lock").exists(), "git commit does not hold .git/index.lock in its editor"
        done = vm(vault, "remember", "Deploys run on Fridays", "--type", "fact")
        assert done.returncode == 4, f"exit {done.returncode}, not 4 (busy):\n{done.stderr}"
        assert "hint:" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert (vault / ".git" / "index.lock").exists(), "vaultmem removed the lock a live git holds"
        assert human.poll() is None, "the other git ended while vaultmem was waiting"
        assert not (vault / "memories" / "deploys-run-on-fridays.md").exists()
        assert (vault / "MEMORY.md").read_bytes() == before
        release.write_text("")
        out, _ = human.communicate(timeout=DEADLINE)
        assert human.returncode == 0, f"the other git commit failed: {out}"
    finally:
        release.write_text("")
        if human.poll() is None:
            kill_group(human)
    assert subject(vault) == "A human commit of their own"
    assert commit_files(vault) == {"notes.md"}, "the other git's commit carries what vaultmem had staged"
    assert status(vault) == "" and staged(vault) == "", status(vault) + staged(vault)
    ok(vm(vault, "remember", "Deploys run on Fridays", "--type", "fact"))
    assert commit_files(vault) == {"MEMORY.md", "memories/deploys-run-on-fridays.md"}


# -- 4. a full disk, and temp files of killed writers -------------------------------------------------


def tune_log_tail(root: Path, agent: str) -> None:
    """Append signed entries until the last 4 KiB page of the agent's log has a little room
    left (less than an entry): on a full disk the next entry then fits only in part."""
    path = root / "shared" / "log" / f"{agent}.md"

    def append(length: int) -> int:
        size = path.stat().st_size if path.exists() else 0
        body = ("pad " * (length // 4 + 1))[:length].strip() or "pad"  # prose: no secret scan to wait for
        ok(vm(root, "--as", agent, "log", "append", "--summary", "padding", "--body", body))
        return path.stat().st_size - size

    append(1)  # the first entry has no previous hash: measure on the next ones
    d10, d20 = append(11), append(21)
    slope = (d20 - d10) / 10
    base = d10 - 11 * slope
    for _ in range(6):
        room = -path.stat().st_size % 4096
        if 40 <= room <= 200:
            return
        length = int((4096 - 120 - path.stat().st_size - base) % 4096 / slope)
        append(max(length, 3))
    raise AssertionError(f"could not leave 40..200 bytes at the end of {path}'s last page")


def run_on_full_disk(tmp_path: Path, source: Path, commands: list[list[str]], after: list[list[str]]) -> dict:
    """Run the commands in a fresh clone of ``source`` on a full 4 MiB tmpfs, in a private
    mount namespace (see tests/killpoints/full_disk.py)."""
    spec = {"mount": str(tmp_path / "small-disk"), "size": "4m", "source": str(source), "keys": ["ella"],
            "vaultmem": str(VAULTMEM), "env": clean_env(), "commands": commands, "after": after}
    script = [sys.executable, str(KILLPOINTS / "full_disk.py")]
    tries = []
    if shutil.which("unshare"):
        tries.append(["unshare", "-m", *script] if os.geteuid() == 0 else ["unshare", "-rm", *script])
    if os.geteuid() == 0:
        tries.append(script)  # no namespaces here: mount and unmount for real
    why = "not root and no 'unshare'"
    for cmd in tries:
        done = subprocess.run(cmd, input=json.dumps({**spec, "unmount": cmd == script}), capture_output=True,
                              text=True, timeout=3 * DEADLINE)
        if done.returncode == 0 and done.stdout.strip():
            report = json.loads(done.stdout)
            if "skip" not in report:
                return report
            why = report["skip"]
        else:
            why = f"{' '.join(cmd[:2])} failed: {done.stderr.strip()[-300:]}"
    pytest.skip(f"no small disk to fill: {why}")


def test_a_full_disk_is_a_clear_error_that_changes_nothing(vault, tmp_path):
    """On a full disk, remember / page add / keys new / search / log append each exit 5
    with one clear line (storage_error in JSON, 'no space left'), no traceback; every
    file stays byte-identical, no temp file or empty .gitignore is left; with the space
    back, `log verify` is clean and the next `log append` works."""
    ok(vm(vault, "--as", "ella", "keys", "new", "ella"))
    tune_log_tail(vault, "ella")
    ok(vm(vault, "--as", "ella", "log", "commit"))
    assert status(vault) == "", status(vault)
    writes = [["remember", "Written on a full disk", "--type", "fact"],
              ["--as", "orch", "page", "add", "reviewer", "Written on a full disk"],
              ["--as", "bob", "keys", "new", "bob"],
              ["search", "pnpm"],
              # prose, not a token: no secret scan (which would need a new redaction key)
              ["--as", "ella", "log", "append", "--summary", "Appended on a full disk", "--body", "disk full " * 40]]
    commands = [c for w in writes for c in (w, ["--json", *w])]
    report = run_on_full_disk(tmp_path, vault, commands,
                              after=[["--json", "log", "verify"],
                                     ["--as", "ella", "log", "append", "--summary", "space is back"],
                                     ["--json", "log", "verify"]])
    assert report["free_blocks"] == 0, f"the disk was not full: {report['free_blocks']} blocks free"
    problems = []
    seen: dict[str, set] = {"changed": set(), "temp_files": set(), "empty_gitignores": set()}
    for r in report["commands"]:
        what = "vaultmem " + " ".join(a if len(a) < 40 else a[:12] + "…" for a in r["args"])
        for key in seen:  # what this command left, not what an earlier one did
            r[key], seen[key] = sorted(set(r[key]) - seen[key]), seen[key] | set(r[key])
        if "Traceback" in r["stderr"]:
            problems.append(f"{what}: a Python traceback: {r['stderr'].strip().splitlines()[-1]}")
        if r["rc"] != 5:
            problems.append(f"{what}: exit {r['rc']}, not 5")
        if "--json" in r["args"]:
            try:
                error = json.loads(r["stdout"])["error"]
            except (ValueError, KeyError, TypeError):
                problems.append(f"{what}: no JSON error on stdout: {r['stdout'].strip()[:200]!r}")
            else:
                if error.get("type") != "storage_error" or "no space left" not in str(error.get("message")).lower():
                    problems.append(f"{what}: JSON error {error.get('type')}: {error.get('message')}")
        elif "Traceback" not in r["stderr"]:
            lines = [line for line in r["stderr"].splitlines() if line.strip()]
            errors = [line for line in lines if line.startswith("error:")]
            other = [line for line in lines if not line.startswith(("error:", "  hint:"))]
            if len(errors) != 1 or other or "no space left" not in errors[0].lower():
                problems.append(f"{what}: not one clear 'no space left' error line: {r['stderr'].strip()!r}")
        for key, label in (("changed", "changed"), ("temp_files", "left temp files"),
                           ("empty_gitignores", "left an empty .gitignore")):
            if r[key]:
                problems.append(f"{what}: {label}: {r[key]}")
    verify, append, verify_again = report["after"]
    for r in (verify, verify_again):
        findings = json.loads(r["stdout"]).get("findings") if r["stdout"].strip().startswith("{") else None
        if r["rc"] != 0 or findings:
            problems.append(f"with the space back, 'vaultmem log verify' exit {r['rc']}: "
                            f"{[f.get('message') for f in findings or []] or r['stdout'].strip()[:300]}")
    if append["rc"] != 0:
        problems.append(f"with the space back, 'vaultmem log append' exit {append['rc']}: {append['stderr'].strip()}")
    assert not problems, "\n".join(problems)


def test_temp_files_of_killed_writers_are_swept_everywhere_by_the_next_write(vault):
    """Temp files a killed writer leaves in archive/inbox/, .vaultmem/local/ (and its
    cursors/) or .vaultmem/keys/ are removed by the next write, as they are elsewhere."""
    ok(vm(vault, "--as", "ella", "keys", "new", "ella"))
    planted = ["archive/inbox/.i-20260101-abcdef.md.vmtmp-0badc0de", ".vaultmem/local/.redact.key.vmtmp-0badc0de",
               ".vaultmem/local/cursors/.ella.json.vmtmp-0badc0de", ".vaultmem/keys/.ella.key.vmtmp-0badc0de",
               "memories/.use-pnpm-never-npm.md.vmtmp-0badc0de"]
    for rel in planted:
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text("half a file")
    ok(vm(vault, "remember", "Deploys run on Fridays", "--type", "fact"))
    left = [rel for rel in planted if (vault / rel).exists()]
    assert not left, f"temp files of killed writers left after the next write: {left}"
