"""Recording vault changes as git commits (gitpython).

One mutation is one commit that holds only the paths it changed, authored and
committed by the acting agent. ``git commit --only -- <paths>`` is used so that what
a user has staged or edited elsewhere stays exactly as it was. A busy
``.git/index.lock`` (another git process) is waited for, then reported.
"""

from __future__ import annotations

import time
from pathlib import Path

from .errors import Busy, GitError
from .models import Actor

_LOCK_MARKERS = ("index.lock",)


def _repo(root: Path):
    import git

    try:
        return git.Repo(root)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(
            f"{root} is not a git repository",
            path=str(root),
            hint=f"run 'git init' in {root} and commit its files; vaultmem records every change as a commit",
        ) from None


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
    """The person at the keyboard, as git knows them (falls back to a neutral name)."""
    import git

    name = email = None
    try:
        reader = git.Repo(root).config_reader() if (root / ".git").exists() else git.GitConfigParser()
        name = reader.get_value("user", "name", None)
        email = reader.get_value("user", "email", None)
    except Exception:
        pass
    return Actor(name=str(name or "vaultmem user"), kind="human", email=str(email or "user@vaultmem.invalid"))


def _wait_for_index_lock(root: Path, timeout: float) -> None:
    lock = root / ".git" / "index.lock"
    deadline = time.monotonic() + timeout
    while lock.exists():
        if time.monotonic() >= deadline:
            raise Busy(
                f"another git process has held {lock} for {timeout:.1f}s",
                path=str(lock),
                hint="wait for it to finish and retry; if no git process is running, delete that file",
            )
        time.sleep(0.05)


def commit(root: Path, paths: list[str], message: str, actor: Actor, lock_timeout: float) -> str | None:
    """Commit exactly ``paths`` (added, changed or deleted). Returns the new commit's
    hexsha, or None when those paths hold no change."""
    import git

    repo = _repo(root)
    name, email = actor.git_identity()
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    deadline = time.monotonic() + lock_timeout
    staged = False
    lock_path = str(root / ".git" / "index.lock")
    try:
        while True:
            _wait_for_index_lock(root, max(0.0, deadline - time.monotonic()))
            try:
                with repo.git.custom_environment(**env):
                    # Stage only our paths (-A: also their deletions), then commit only them.
                    tracked = set(repo.git.ls_files("-z", "--", *paths).split("\0"))
                    paths = [p for p in paths if p in tracked or (root / p).exists()]
                    if not paths:
                        return None
                    repo.git.add("-A", "--", *paths)
                    staged = True
                    if not repo.git.diff("--cached", "--name-only", "--", *paths).strip() and _has_head(repo):
                        return None
                    repo.git.commit("--only", "--no-gpg-sign", "-q", "-m", message, "--", *paths)
                return repo.head.commit.hexsha
            except git.GitCommandError as exc:
                text = f"{exc.stderr or ''} {exc.stdout or ''}"
                if not any(m in text for m in _LOCK_MARKERS):
                    if staged:
                        _unstage(repo, paths)
                    raise GitError(f"git could not record the change: {text.strip()}", path=str(root)) from None
                if time.monotonic() >= deadline:
                    raise Busy(f"git's index is locked by another process (waited {lock_timeout:.1f}s)",
                               path=lock_path, hint="retry when the other git command has finished") from None
                time.sleep(0.05)
    except Busy as exc:
        # We may have staged our paths before another process took the lock: put them
        # back once it lets go, so that the user's next commit does not carry them.
        if staged and not _unstage(repo, paths, wait=lock_timeout):
            exc.hint = (exc.hint or "") + f"; then run 'git reset -- {' '.join(paths)}' to unstage this attempt"
        raise


def _unstage(repo, paths: list[str], wait: float = 0.0) -> bool:
    """Put the index entries of ``paths`` back to HEAD after a refused commit."""
    import git

    deadline = time.monotonic() + wait
    while True:
        try:
            if _has_head(repo):
                repo.git.reset("-q", "--", *paths)
            else:
                repo.git.rm("-q", "--cached", "--ignore-unmatch", "--", *paths)
            return True
        except git.GitCommandError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def uncommitted(root: Path, paths: list[str]) -> list[str]:
    """Those of ``paths`` whose file differs from the last commit (edited, new or deleted)."""
    repo = _repo(root)
    out = repo.git.status("--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
    found = set()
    records = out.split("\0")
    i = 0
    while i < len(records):
        rec = records[i]
        if len(rec) > 3:
            found.add(rec[3:])
            if rec[0] in "RC":  # a rename/copy record is followed by its source path
                i += 1
        i += 1
    return [p for p in paths if p in found]


def _has_head(repo) -> bool:
    try:
        repo.head.commit
        return True
    except ValueError:
        return False


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


def show(root: Path, commit: str, path: str) -> str:
    """The diff one commit made to one path."""
    return _repo(root).git.show("--format=", "--no-color", commit, "--", path)


def committed_text(root: Path, path: str) -> str | None:
    """The file as the last commit holds it (None if it is not in the last commit)."""
    import git

    try:
        return _repo(root).git.show(f"HEAD:{path}", strip_newline_in_stdout=False)
    except git.GitCommandError:
        return None
