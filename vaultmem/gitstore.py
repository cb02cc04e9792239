"""Recording vault changes as git commits (gitpython).

One mutation is one commit that holds only the paths it changed, authored and
committed by the acting agent. ``git commit --only -- <paths>`` is used so that what
a user has staged or edited elsewhere stays exactly as it was. A busy
``.git/index.lock`` (another git process) is waited for, then reported. git's own
signing settings hold: with ``commit.gpgsign`` true the commit is signed, or refused
when git cannot sign it.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from pathlib import Path

from .errors import Busy, GitError, StorageError
from .models import Actor

_LOCK_MARKERS = ("index.lock",)
# git's words for a lock file it found taken: "Unable to create '/v/.git/HEAD.lock': File exists."
_LOCK_TAKEN = re.compile(r"Unable to create '([^']+\.lock)': File exists")


def _not_a_repo(root: Path) -> GitError:
    return GitError(f"{root} is not a git repository", path=str(root),
                    hint=f"run 'git init' in {root} and commit its files; vaultmem records every change as a commit")


def _repo(root: Path):
    import git

    try:
        return git.Repo(root)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise _not_a_repo(root) from None


def _check_repo(root: Path) -> None:
    """``root`` is a repository's top folder: else git would record the change in one above it."""
    if not (root / ".git").exists():
        raise _not_a_repo(root)


class GitFailed(Exception):
    """A git command that exited non-zero; ``said``: its stderr and stdout."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


def _run(root: Path, args: list[str], env: dict | None = None, stdin: bytes | None = None) -> bytes:
    """``git -C root ARGS`` as GitPython's ``repo.git`` runs it — the environment inherited
    (plus ``env``; in a git hook, ``GIT_INDEX_FILE`` names git's index), messages in English
    for the checks that read them — without GitPython's ~30 ms import, on every hook's
    write (status, add, commit). Its stdout; :class:`GitFailed`."""
    import subprocess

    # never a repository above the vault's (GitPython opened root/.git itself); no stdin, as GitPython
    full = {**os.environ, **(env or {}), "LANGUAGE": "C", "LC_ALL": "C",
            "GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.abspath(root))}
    given = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    try:  # the git GitPython runs
        done = subprocess.run([os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git", "-C", str(root), *args],
                              capture_output=True, env=full, **given)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)", path=str(root)) from None
    if done.returncode != 0:
        raise GitFailed(f"{done.stderr.decode('utf-8', 'replace')} {done.stdout.decode('utf-8', 'replace')}")
    return done.stdout


def _git(root: Path, args: list[str], env: dict | None = None, stdin: bytes | None = None) -> str:
    return _run(root, args, env, stdin).decode("utf-8", "surrogateescape")


def init_repo(root: Path) -> bool:
    """``git init`` the vault unless it already is (its own) repository; True if created."""
    import git

    if (root / ".git").exists():
        return False
    git.Repo.init(root, initial_branch="main") if _supports_initial_branch() else git.Repo.init(root)
    return True


def _supports_initial_branch() -> bool:
    import git

    try:
        return git.Git().version_info >= (2, 28)
    except Exception:
        return False


def human_actor(root: Path) -> Actor:
    """The person at the keyboard, as git knows them (falls back to a neutral name). Read
    again only when a file git reads it from changed (or the environment naming them): a
    long-lived process (``vaultmem mcp`` asks at every call) saves ~1.3 ms a call."""
    stamp = _config_stamp(root)
    known = _HUMAN.get(root)
    if stamp is not None and known is not None and known[0] == stamp:
        return known[1]
    import git

    name = email = None
    includes = True  # until the files are read: an identity not read whole is not remembered
    try:
        reader = git.Repo(root).config_reader() if (root / ".git").exists() else git.GitConfigParser()
        includes = any(section.startswith("include") for section in reader.sections())
        name = reader.get_value("user", "name", "") or None
        email = reader.get_value("user", "email", "") or None
    except Exception:
        includes = True
    actor = Actor(name=str(name or FALLBACK_NAME), kind="human", email=str(email or FALLBACK_EMAIL))
    if stamp is not None and not includes:  # a file it includes could change unseen: read each time
        _HUMAN[root] = (stamp, actor)
    return actor


_HUMAN: dict[Path, tuple[tuple, Actor]] = {}
_GIT_ENV = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
            "GIT_CONFIG_COUNT", "GIT_DIR")


def _config_stamp(root: Path) -> tuple | None:
    """What the identity git gives for ``root`` depends on: the environment that names its
    configuration files, and each file's size, times and inode (None: a ``.git`` that is
    not a folder, whose configuration lives elsewhere — not remembered)."""
    dot_git = root / ".git"
    if dot_git.is_symlink() or (dot_git.exists() and not dot_git.is_dir()):
        return None
    env = tuple(os.environ.get(k) for k in _GIT_ENV)
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    stamps = []
    for path in (dot_git / "config", home / ".gitconfig", xdg / "git" / "config", Path("/etc/gitconfig")):
        try:
            st = path.stat()
            stamps.append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino))
        except OSError:
            stamps.append(None)
    return env, tuple(stamps)


# the human's name and email when git knows neither (no user.name / user.email anywhere)
FALLBACK_NAME = "vaultmem user"
FALLBACK_EMAIL = "user@vaultmem.invalid"
# in .vaultmem/local/ (layout.LOCAL_DIR, kept out of git): made when the fallback was first said
IDENTITY_SAID = (".vaultmem", "local", "identity-said")


def identity_notice(root: Path, actor: Actor) -> str | None:
    """What to say, once per vault, when a commit was made in the fallback name: that
    commits are authored so, and how to set an identity. None when there is nothing to
    say: a named actor, or said before (its mark in ``.vaultmem/local/`` is made here, by
    an exclusive create, so two processes never both say it)."""
    if not actor.is_human or (actor.name != FALLBACK_NAME and actor.email != FALLBACK_EMAIL):
        return None
    meta, local = root / IDENTITY_SAID[0], root / IDENTITY_SAID[0] / IDENTITY_SAID[1]
    try:
        if meta.is_symlink() or local.is_symlink():
            return None  # never written through a link (nor said on every command instead)
        local.mkdir(parents=True, exist_ok=True)
        ignore = local / ".gitignore"
        if not ignore.exists():  # as vaultmem.files.write_local keeps it: never committed
            with contextlib.suppress(FileExistsError):
                fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
                os.write(fd, b"# per-machine state (watcher heartbeat, read cursors, caches): never committed\n*\n")
                os.close(fd)
        fd = os.open(local / IDENTITY_SAID[2], os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o644)
    except OSError:  # said before (it exists), or a vault we cannot write: nothing said
        return None
    os.close(fd)
    return (f"git has no identity here (user.name / user.email), so vaultmem's commits in {root} are authored "
            f"'{actor.name} <{actor.email}>'. Set yours: git config --global user.name 'Your Name' && "
            f"git config --global user.email you@example.com (or without --global, in {root}, for this vault "
            f"only). This is said once per vault.")


def lock_owner_alive(root: Path, lock: Path) -> bool | None:
    """Whether a live process may own git's ``lock`` file: one that holds it open, or a
    git process working in this repository (a ``git commit`` waiting for its editor
    holds ``index.lock`` closed). False means it was left by a killed git; None means
    this system cannot tell (no ``/proc``)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    root_real = os.path.realpath(root)
    lock_real = os.path.realpath(lock)
    me = os.getpid()
    unseen = False  # a process we may not look into could be the owner
    for entry in os.scandir(proc):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmd = (proc / entry.name / "cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue  # it has just exited
        except OSError:
            unseen = True
            continue
        name = os.path.basename(cmd[0]).decode(errors="replace") if cmd and cmd[0] else ""
        is_git = name.startswith("git") and b"cat-file" not in cmd  # gitpython's readers hold no lock
        try:
            if is_git:
                cwd = os.path.realpath(proc / entry.name / "cwd", strict=True)
                if cwd == root_real or cwd.startswith(root_real + os.sep):
                    return True
            for fd in os.scandir(proc / entry.name / "fd"):
                if os.readlink(fd.path) == lock_real:
                    return True
        except FileNotFoundError:
            continue
        except OSError:
            # a git we may not look into could be the owner; another program we may not
            # look into (an init, another user's shell) is not holding git's lock
            unseen = unseen or is_git
    return None if unseen else False


STALE_AFTER = 2.0  # seconds a lock must have stood unowned before it is taken for a killed git's


def clear_stale_lock(root: Path, lock: Path, min_age: float = STALE_AFTER) -> bool:
    """Remove git's ``lock`` if it has existed for ``min_age`` seconds and no live
    process can own it (a git killed while it held it). True if it was removed. Call
    with the vault's write lock held."""
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    if age < min_age or lock_owner_alive(root, lock) is not False:
        return False
    lock.unlink(missing_ok=True)
    return True


def _lock_busy(root: Path, lock: Path, timeout: float) -> Busy:
    rel = os.path.relpath(lock, root)
    return Busy(f"another git process has held {rel} for {timeout:.1f}s", path=rel,
                hint=f"wait for it to finish and retry; if no git process is running, delete {lock}")


def _wait_for_lock(root: Path, lock: Path, deadline: float, timeout: float) -> None:
    # a lock nobody holds will never be let go (a killed git left it); one that has just
    # appeared may be a git that is starting, so it must stand a moment before it counts
    min_age = min(STALE_AFTER, timeout / 2)
    next_check = 0.0
    while lock.exists():
        now = time.monotonic()
        if now >= next_check:
            next_check = now + 0.25  # a /proc scan costs a few ms: not at every poll
            if clear_stale_lock(root, lock, min_age):
                return
        if time.monotonic() >= deadline:
            raise _lock_busy(root, lock, timeout)
        time.sleep(0.05)


def _storage(text: str, root: Path) -> StorageError | None:
    if any(m in text for m in ("No space left on device", "Disk quota exceeded", "Out of diskspace")):
        return StorageError("no space left on device for git to record the change; nothing was changed",
                            path=str(root), hint="free some space on that disk, then retry")
    return None


# git's words when the signing program failed: "error: gpg failed to sign the data",
# "error: ssh-keygen failed to sign", "fatal: failed to write commit object"
_SIGN_FAILED = re.compile(r"fail(?:ed)? to sign|failed to write commit object|signing failed", re.I)


def _unsigned(text: str, root: Path) -> GitError | None:
    """The error for a commit git was told to sign (``commit.gpgsign``) and could not."""
    if not _SIGN_FAILED.search(text):
        return None
    try:
        signs = _git(root, ["config", "--bool", "--get", "commit.gpgsign"]).strip() == "true"
    except GitFailed:
        signs = False  # unset
    if not signs:
        return None
    said = " ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return GitError(f"git could not sign the commit, and commit.gpgsign is true in git's config, so nothing was "
                    f"changed ({said})", path=str(root),
                    hint=f"make the signing key available to git (user.signingkey, gpg.program, gpg.format), or "
                         f"turn signing off for this vault: git -C {root} config commit.gpgsign false")


ARGV_PATHS = 500  # paths given on git's command line at most; more go through a file (the OS caps argv)


@contextlib.contextmanager
def _pathspec(paths: list[str]):
    """git's pathspec arguments for ``paths``: on the command line, or — for a change of
    thousands of files, a GC run — in a NUL-separated file (``--pathspec-from-file``),
    since the system refuses an argument list that long."""
    if len(paths) <= ARGV_PATHS:
        yield ["--", *paths]
        return
    fd, name = tempfile.mkstemp(suffix=".pathspec")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write("\0".join(paths).encode("utf-8"))
        yield [f"--pathspec-from-file={name}", "--pathspec-file-nul"]
    finally:
        os.unlink(name)


@contextlib.contextmanager
def _message(message: str):
    """git's arguments for a commit message: ``-m`` for a short one, a file (``-F``) for
    one longer than a single command-line argument may be (a GC's list of every note)."""
    if len(message.encode("utf-8")) <= 32 * 1024:
        yield ["-m", message]
        return
    fd, name = tempfile.mkstemp(suffix=".msg")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(message.encode("utf-8"))
        yield ["-F", name]
    finally:
        os.unlink(name)


def _update_index(root: Path, paths: list[str], env: dict) -> None:
    """Stage ``paths`` — changed, new or deleted — as ``git add -A`` would, reading them
    from a list (linear in their number, where ``add``'s pathspecs are quadratic)."""
    _git(root, ["update-index", "--add", "--remove", "-z", "--stdin"], env, stdin="\0".join(paths).encode("utf-8"))


def _batches(paths: list[str]) -> list[list[str]]:
    """``paths`` in runs short enough for a command line (for git commands that read no
    pathspec file: ls-files, diff, status, ls-tree)."""
    return [paths[i:i + ARGV_PATHS] for i in range(0, len(paths), ARGV_PATHS)] or [[]]


def commit(root: Path, paths: list[str], message: str, actor: Actor, lock_timeout: float) -> str | None:
    """Commit exactly ``paths`` (added, changed or deleted). Returns the new commit's
    hexsha, or None when those paths hold no change."""
    _check_repo(root)
    name, email = actor.git_identity()
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
    deadline = time.monotonic() + lock_timeout
    staged = False
    index_lock = root / ".git" / "index.lock"
    try:
        while True:
            _wait_for_lock(root, index_lock, deadline, lock_timeout)
            try:
                # Stage only our paths (-A: also their deletions), then commit only them.
                gone = {p for p in paths if not (root / p).exists()}  # they count if git tracks them
                tracked = {t for batch in _batches(sorted(gone)) if batch
                           for t in _git(root, ["ls-files", "-z", "--", *batch], env).split("\0")}
                paths = [p for p in paths if p not in gone or p in tracked]
                if not paths:
                    return None
                if len(paths) <= ARGV_PATHS:
                    _git(root, ["add", "-A", "--", *paths], env)
                else:  # git add matches every path against every pathspec: update-index reads a list
                    _update_index(root, paths, env)
                staged = True
                # no --no-gpg-sign: git signs when its config says so (commit.gpgsign)
                with _pathspec(paths) as spec, _message(message) as said:
                    try:
                        _git(root, ["commit", "--only", "-q", *said, *spec], env)
                    except GitFailed:  # refused: whether for want of a change is asked only now
                        if has_commit(root) and not any(_git(root, ["diff", "--cached", "--name-only", "--", *b],
                                                             env).strip() for b in _batches(paths)):
                            return None
                        raise
                notice = identity_notice(root, actor)
                if notice is not None:
                    _say(notice)
                return head(root)
            except GitFailed as exc:
                text = exc.said
                taken = _LOCK_TAKEN.search(text)
                if taken is None and not any(m in text for m in _LOCK_MARKERS):
                    if staged:
                        unstage(root, paths)
                    raise _storage(text, root) or _unsigned(text, root) or GitError(
                        f"git could not record the change: {text.strip()}", path=str(root)) from None
                lock = Path(taken.group(1)) if taken else index_lock
                _wait_for_lock(root, lock, deadline, lock_timeout)  # clears it if its git was killed
                if time.monotonic() >= deadline:
                    raise _lock_busy(root, lock, lock_timeout) from None
                time.sleep(0.05)
    except Busy as exc:
        # We may have staged our paths before another process took the lock: put them
        # back once it lets go, so that the user's next commit does not carry them.
        if staged and not unstage(root, paths, wait=lock_timeout):
            exc.hint = (exc.hint or "") + f"; then run 'git reset -- {' '.join(paths)}' to unstage this attempt"
        raise


def _say(text: str) -> None:
    """A note for the person at the terminal, on stderr (never stdout: a ``--json`` reader
    or an MCP client reads that); a closed stderr is no error."""
    import sys

    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"note: {text}\n")
        sys.stderr.flush()


def unstage(root: Path, paths: list[str], wait: float = 0.0) -> bool:
    """Put the index entries of ``paths`` back to HEAD (after a refused commit, or when
    rolling back a killed writer's change). False if git's index stayed locked."""
    _check_repo(root)
    deadline = time.monotonic() + wait
    while True:
        try:
            with _pathspec(paths) as spec:
                if has_commit(root):
                    _git(root, ["reset", "-q", *spec])
                else:
                    _git(root, ["rm", "-q", "--cached", "--ignore-unmatch", *spec])
            return True
        except GitFailed:
            if clear_stale_lock(root, root / ".git" / "index.lock", min(STALE_AFTER, wait / 2)):
                continue
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def head(root: Path) -> str | None:
    """The sha HEAD points at (None in a repository with no commit yet)."""
    _check_repo(root)
    try:
        return _git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).strip() or None
    except GitFailed:
        return None


def committed_since(root: Path, base: str | None, message: str) -> bool:
    """True if a commit with ``message`` was made on top of ``base`` (HEAD then)."""
    now = head(root)
    if now is None or now == base:
        return False
    try:
        subjects = _git(root, ["log", "--format=%B%x00", f"{base}..HEAD" if base else "HEAD", "-n", "50"])
    except GitFailed:
        return False
    return any(body.strip() == message.strip() for body in subjects.split("\0"))


def uncommitted(root: Path, paths: list[str]) -> list[str]:
    """Those of ``paths`` whose file differs from the last commit (edited, new or deleted)."""

    if len(paths) <= ARGV_PATHS:
        found = set(_status(root, paths)) if paths else set()
    else:  # one status of the folders that hold them, not one per run of paths (each walks the tree)
        folders = sorted({p.rsplit("/", 1)[0] if "/" in p else p for p in paths})
        batches = [folders] if len(folders) <= ARGV_PATHS else _batches(paths)
        found = {p for batch in batches for p in _status(root, batch)}
    return [p for p in paths if p in found]


def _status(root: Path, pathspec: list[str]) -> list[str]:
    """The paths ``git status`` reports as differing from the last commit."""
    _check_repo(root)
    try:
        out = _git(root, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *pathspec])
    except GitFailed as exc:
        raise _storage(exc.said, root) or GitError(f"git status failed: {exc.said.strip()}", path=str(root)) from None
    found, records, i = [], out.split("\0"), 0
    while i < len(records):
        rec = records[i]
        if len(rec) > 3:
            found.append(rec[3:])
            if rec[0] in "RC":  # a rename/copy record is followed by its source path
                i += 1
        i += 1
    return found


def log(root: Path, path: str | None = None, max_count: int = 20) -> list[dict]:
    """Recent commits (optionally of one path): sha, author, date, message."""
    repo = _repo(root)
    args = {"max_count": max_count}
    commits = repo.iter_commits(paths=path, **args) if path else repo.iter_commits(**args)
    return [
        {
            "commit": c.hexsha,
            "author": c.author.name,
            "email": c.author.email,
            "date": c.authored_datetime.isoformat(),
            "message": c.message.strip(),
        }
        for c in commits
    ]


def path_history(root: Path, path: str, since: str | None = None) -> list[tuple[str, str, str, str]]:
    """The commits that changed ``path`` (newest first) as (sha, author name, subject,
    author email);
    ``since`` (an ISO date) stops the walk at commits older than it, so the cost follows
    the history since then, not the whole of it."""
    import git

    args = ["--format=%H%x1f%an%x1f%ae%x1f%s", *([f"--since={since}"] if since else []), "--", path]
    try:
        out = _repo(root).git.log(*args)
    except git.GitCommandError as exc:
        if not has_commit(root):
            return []
        text = f"{exc.stderr or ''} {exc.stdout or ''}"
        raise _storage(text, root) or GitError(f"git log failed: {text.strip()}", path=str(root)) from None
    found = [line.split("\x1f", 3) for line in out.splitlines() if line.count("\x1f") >= 3]
    return [(sha, name, subject, email) for sha, name, email, subject in found]


def show(root: Path, commit: str, path: str) -> str:
    """The diff one commit made to one path (paths as written: ``agents/前端审查.md``, not
    git's octal escapes)."""
    return _repo(root).git(c="core.quotepath=false").show("--format=", "--no-color", commit, "--", path)


def text_at(root: Path, commit: str, path: str) -> str | None:
    """The file as ``commit`` holds it (``HEAD``, a sha, ``sha^``), byte for byte; None if
    it does not hold it."""
    import git

    try:
        return _repo(root).git.show(f"{commit}:{path}", strip_newline_in_stdout=False)
    except git.GitCommandError:
        return None


def added_in(root: Path, path: str) -> str | None:
    """The newest commit that added ``path`` (moved it there, or made it); None if none did."""
    import git

    try:
        out = _repo(root).git.log("--diff-filter=A", "--no-renames", "--format=%H", "-1", "--", path)
    except git.GitCommandError:
        return None
    return out.strip() or None


def changed_under(root: Path, folder: str) -> list[str]:
    """The files under ``folder`` that differ from the last commit (edited, new or
    deleted): one ``git status`` for the whole folder, whatever its size."""
    return _status(root, [folder])


def committed_text(root: Path, path: str) -> str | None:
    """The file as the last commit holds it (None if it is not in the last commit)."""
    import git

    try:
        return _repo(root).git.show(f"HEAD:{path}", strip_newline_in_stdout=False)
    except git.GitCommandError:
        return None


# -- what the next commit records (read-only: the pre-commit check) ------------------------------
# git's empty tree: what the first commit of a repository is compared with
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _git_out(root: Path, args: list[str], stdin: bytes | None = None) -> bytes:
    """``git -C root ARGS`` run for its output, with paths taken literally (:func:`_run`).
    Reads only: no lock is taken, nothing is written."""
    try:
        return _run(root, args, {"GIT_LITERAL_PATHSPECS": "1"}, stdin)
    except GitFailed as exc:
        raise _storage(exc.said, root) or GitError(f"git {args[0]} failed: {exc.said.strip()}",
                                                   path=str(root)) from None


def has_commit(root: Path) -> bool:
    """Whether the repository has a commit (HEAD points at one)."""
    try:
        _git_out(root, ["rev-parse", "--verify", "--quiet", "HEAD"])
    except GitError:
        return False
    return True


def staged_changes(root: Path, head_exists: bool | None = None) -> list[tuple[str, str]]:
    """What the next commit changes, from the index (the one ``GIT_INDEX_FILE`` names, in a
    hook): (status, path) with status A (added), M (modified), D (deleted) or T (type
    changed), against HEAD (against nothing before the first commit). Renames are a
    deletion and an addition. ``head_exists``: :func:`has_commit`, if the caller knows."""
    base = "HEAD" if (has_commit(root) if head_exists is None else head_exists) else EMPTY_TREE
    out = _git_out(root, ["diff-index", "--cached", "--name-status", "--no-renames", "-z", base])
    parts = out.decode("utf-8", "surrogateescape").split("\0")
    return [(parts[i][:1], parts[i + 1]) for i in range(0, len(parts) - 1, 2) if parts[i]]


def _object_ids(out: bytes, sha_field: int) -> dict[str, str]:
    found = {}
    for record in out.decode("utf-8", "surrogateescape").split("\0"):
        if "\t" in record:
            meta, path = record.split("\t", 1)
            fields = meta.split()
            if fields and fields[0] != "160000":  # a submodule has no blob to read
                found[path] = fields[sha_field]
    return found


def staged_ids(root: Path, paths: list[str]) -> dict[str, str]:
    """path → blob id of each of ``paths`` (files or folders) as the index holds it."""
    if not paths:
        return {}
    return {k: v for batch in _batches(paths)
            for k, v in _object_ids(_git_out(root, ["ls-files", "--stage", "-z", "--", *batch]), 1).items()}


def committed_ids(root: Path, paths: list[str], head_exists: bool | None = None) -> dict[str, str]:
    """path → blob id of each of ``paths`` (files or folders) as HEAD holds it."""
    if not paths or not (has_commit(root) if head_exists is None else head_exists):
        return {}
    return {k: v for batch in _batches(paths)
            for k, v in _object_ids(_git_out(root, ["ls-tree", "-r", "-z", "HEAD", "--", *batch]), 2).items()}


def read_blobs(root: Path, ids: dict, max_size: int | None = None, whole=()) -> dict:
    """key → the bytes of blob ``ids[key]``, all read by one ``git cat-file``; with
    ``max_size``, blobs larger than that are left out (an attachment of gigabytes is not
    read into memory), but for the keys in ``whole``."""
    wanted = list(dict.fromkeys(ids.values()))
    if wanted and max_size is not None:
        sizes = _git_out(root, ["cat-file", "--batch-check"], stdin="".join(f"{sha}\n" for sha in wanted).encode())
        small = {fields[0] for fields in (line.split() for line in sizes.decode().splitlines())
                 if len(fields) == 3 and int(fields[2]) <= max_size}
        small |= {ids[key] for key in whole if key in ids}
        wanted = [sha for sha in wanted if sha in small]
    if not wanted:
        return {}
    out = _git_out(root, ["cat-file", "--batch"], stdin="".join(f"{sha}\n" for sha in wanted).encode())
    blobs: dict[str, bytes] = {}
    pos = 0
    for sha in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        blobs[sha] = out[pos:pos + size]
        pos += size + 1
    return {key: blobs[sha] for key, sha in ids.items() if sha in blobs}


def hooks_dir(root: Path) -> Path:
    """The folder git runs this repository's hooks from (``core.hooksPath`` if set, else
    ``.git/hooks``), absolute."""
    out = _git_out(root, ["rev-parse", "--git-path", "hooks"]).decode("utf-8", "surrogateescape").strip()
    folder = Path(out)
    return folder if folder.is_absolute() else (root / folder)


# -- backups: a git bundle of the whole history --------------------------------------------------


def bundle_create(root: Path, path: Path) -> list[str]:
    """Write every branch and tag of the vault's history to the bundle file ``path``;
    the refs it holds."""
    import git

    try:
        _repo(root).git.bundle("create", str(path), "--all")
    except git.GitCommandError as exc:
        raise _storage(str(exc.stderr), root) or GitError(f"git bundle failed: {str(exc.stderr).strip()}",
                                                          path=str(path)) from None
    return bundle_heads(path)


def bundle_heads(path: Path) -> list[str]:
    """The refs a bundle file holds (``sha ref`` each); GitError if it is no bundle."""
    import subprocess

    done = subprocess.run(["git", "bundle", "list-heads", str(path)], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise GitError(f"{path} is not a git bundle vaultmem can read: {done.stderr.strip() or 'it holds no refs'}",
                       path=str(path), hint="a backup is made by 'vaultmem backup create PATH'")
    return done.stdout.strip().splitlines()


def clone_bundle(path: Path, dest: Path) -> None:
    """A new repository at ``dest`` from the bundle file ``path``, its files checked out,
    with no remote left pointing at the bundle."""
    import git

    try:
        repo = git.Repo.clone_from(str(path), str(dest))
        repo.delete_remote("origin")
    except git.GitCommandError as exc:
        raise GitError(f"cannot restore from {path}: {str(exc.stderr).strip()}", path=str(path)) from None
