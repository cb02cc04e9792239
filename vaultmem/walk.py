"""Finding the vault and walking its Markdown files — and the walk started ahead of time.

Every answer (``search``, ``brief``, ``dispatch``) first checks that the index is fresh:
one ``stat`` per Markdown file, summed into one digest and compared with the digest the
index recorded (see :mod:`vaultmem.index.store`). At 10,000 files that walk costs about as
much as starting the CLI does (~0.1 s each on a small VM: a ``stat`` is a system call, and
threads do not overlap it with Python work). So a new ``vaultmem`` process for one of
those commands forks a child that walks the vault *before* the parent imports anything
else; the parent goes on importing and parsing its options, and the freshness check
takes the child's digest instead of walking. :func:`start_ahead` returns the walk as a
:class:`WalkAhead`, which the launcher hands down explicitly — to the CLI, its session,
the vault it opens and that vault's index — so nothing is kept in module state. The two
overlap on two cores. The child is only a head start: its answer is used for the vault
the command really opens (the vault checks the root), once (:meth:`WalkAhead.take`),
and read before the command writes, if it does (then it vouches only for the index as it
was: ``IndexStore.before_writing``); anything odd (no ``fork``, a failed child, another
vault) falls back to walking in the process. The Claude Code hooks that brief start one
with :func:`walk_ahead` once they know their vault.

Standard library only, and little of it (``json`` is imported where used): the launcher
imports this module before anything else.
"""

from __future__ import annotations

import errno
import marshal
import os
import stat  # loaded with os already
import time
import zlib

from .layout import CONFIG_PATH, IGNORED_DIRS, JOURNAL_DIR, LOCAL_DIR, WATCH_HEARTBEAT, link_problem

ENV_VAULT = "VAULTMEM_VAULT"
# The commands that check freshness first, so start the walk ahead.
AHEAD_COMMANDS = frozenset({"search", "brief", "dispatch"})
# A running ``vaultmem watch`` keeps WATCH_HEARTBEAT fresh (see vaultmem/adapters/watch.py); while
# it does and has nothing waiting, commands skip their own freshness check.
WATCH_STALE_SECONDS = 15

Stat = tuple[int, int, int, int]


def is_vault(path: str | os.PathLike) -> bool:
    return os.path.isfile(os.path.join(path, CONFIG_PATH))


def find_vault(cwd: str | None = None) -> str | None:
    """The nearest folder at or above ``cwd`` (resolved) that is a vault, or None."""
    folder = os.path.realpath(cwd or os.getcwd())
    while True:
        if is_vault(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def watcher_alive(root: str | os.PathLike, idle: bool = False) -> bool:
    """True while a ``vaultmem watch`` process keeps this vault's index fresh (with
    ``idle``: and has no changes waiting to be indexed)."""
    import json

    try:
        if os.path.islink(os.path.join(root, LOCAL_DIR)):
            return False  # a heartbeat is never read through a link (it could lead anywhere)
        fd = os.open(os.path.join(root, WATCH_HEARTBEAT), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with open(fd, encoding="utf-8") as fh:
            beat = json.load(fh)
        os.kill(int(beat["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if idle and beat.get("pending"):
        return False
    return time.time() - float(beat.get("beat", 0)) < WATCH_STALE_SECONDS


# The two parts of a vault that have an index each: memory (the search index) and the journal
# (its own index, so that a journal of whole sessions never slows a search of memory).
PART_MEMORY = "memory"
PART_JOURNAL = "journal"


def in_part(rel: str, part: str | None) -> bool:
    """Whether the vault path ``rel`` belongs to ``part`` of the vault: ``"memory"`` (all
    but the journal), ``"journal"`` (``journal/`` only) or None (all of it)."""
    if part is None:
        return True
    journal = rel.startswith(JOURNAL_DIR + "/") or rel == JOURNAL_DIR
    return journal if part == PART_JOURNAL else not journal


def scan(root: str | os.PathLike, part: str | None = None) -> dict[str, Stat]:
    """Every Markdown file of the vault (of ``part`` of it: :func:`in_part`): rel path →
    (mtime_ns, size, ctime_ns, inode).
    The change time cannot be set by tools that restore an mtime (``touch -r``,
    ``rsync -t``, ``cp -p``), so a same-size edit with a restored mtime is still seen.

    Symbolic links (see :func:`link_stat`): a Markdown link that stays inside the vault
    stands for its target; a Markdown file or a folder linking out of the vault is listed
    by the link's own stat — never the target's — so the index can report it unread;
    a folder link inside the vault is not followed (its files are walked where they are)."""
    out: dict[str, Stat] = {}
    root = os.fspath(root)
    root_real: str | None = None
    stack = [("", root)]
    if part == PART_JOURNAL:
        top = os.path.join(root, JOURNAL_DIR)
        if os.path.islink(top):  # a link in the journal's place: listed as the walk lists any link
            stack = []
            st = link_stat(os.path.realpath(root), JOURNAL_DIR)
            if st is not None:
                out[JOURNAL_DIR] = st
        else:
            stack = [(JOURNAL_DIR + "/", top)]
    while stack:
        prefix, folder = stack.pop()
        try:
            # listed through a descriptor of the folder, so that each file's stat looks up
            # its name in the folder alone, not its whole path: a sixth of a walk's time
            fd = os.open(folder, _FOLDER) if _BY_FD else folder
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        try:
            try:
                entries = os.scandir(fd)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                continue
            with entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith(".") or (part == PART_MEMORY and not prefix and name == JOURNAL_DIR):
                        continue
                    try:
                        if entry.is_symlink():
                            if root_real is None:
                                root_real = os.path.realpath(root)
                            st = link_stat(root_real, prefix + name)
                            if st is not None:
                                out[prefix + name] = st
                        elif entry.is_dir(follow_symlinks=False):
                            if name not in IGNORED_DIRS:
                                stack.append((prefix + name + "/", os.path.join(folder, name)))
                        elif name.endswith(".md"):
                            st = entry.stat(follow_symlinks=False)
                            out[prefix + name] = (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)
                    except (FileNotFoundError, PermissionError):  # gone meanwhile; a folder listed, not entered
                        continue
        finally:
            if _BY_FD:
                os.close(fd)
    return out


# Where the system lists a folder by descriptor (not Windows), the walk does.
_BY_FD = os.scandir in os.supports_fd and hasattr(os, "O_DIRECTORY")
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def link_stat(root_real: str, rel: str) -> Stat | None:
    """What the walk records for the symlink ``rel`` (under the resolved root): the
    target's stat for a Markdown link that stays inside the vault (so an edit of the
    target is seen); the link's own stat for a Markdown link, or a link to a folder,
    that leads out of the vault or into its private folders (the index lists it as
    skipped, and nothing outside is even looked at); None for anything else (a folder
    link inside, a link to nothing inside, a link out whose target is not a folder and
    not named ``.md``)."""
    literal = os.path.join(root_real, rel)
    real = os.path.realpath(literal)
    if link_problem(root_real, literal, real):
        if not rel.endswith(".md"):
            try:
                if not os.path.isdir(literal):
                    return None
            except OSError:
                return None
        st = os.lstat(literal)
    elif rel.endswith(".md"):
        try:
            st = os.stat(literal)  # FileNotFoundError: a link to nothing
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # links that lead to each other: a link to nothing too
                return None
            raise
        if not stat.S_ISREG(st.st_mode):
            return None
    else:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


def path_stat(root: str | os.PathLike, rel: str) -> Stat | None:
    """The walk's record of one vault path (as :func:`scan` would make it), or None if
    it is not a file the walk lists."""
    root_real = os.path.realpath(root)
    path = os.path.join(root_real, rel)
    parent = os.path.dirname(path)
    try:
        if os.path.realpath(parent) != parent:
            return None  # inside a folder link: the walk does not go there
        if os.path.islink(path):
            return link_stat(root_real, rel)
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return None  # the walk goes into it; a pipe or a socket it lists, as the index's unread
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)


DIGEST_MASK = 0xFFFFFFFFFFFFFFFF


def stat_digest(stats: dict[str, tuple]) -> int:
    """One number for a set of files and their (mtime, size, ctime, inode), the same in
    every process of one Python version (ints and tuples hash alike everywhere; a path is
    taken by its CRC-32, as strings hash differently per process). Any file added,
    removed, renamed or touched changes it. A sum of one term per file
    (:func:`stat_term`), so a change of a few files moves it by their terms alone."""
    try:
        return _digest(map(str.encode, stats), stats)  # UTF-8
    except UnicodeEncodeError:  # a name that is not UTF-8 (lone surrogates): taken as they are
        return _digest((rel.encode("utf-8", "surrogatepass") for rel in stats), stats)


def _digest(names, stats: dict[str, tuple]) -> int:
    return sum(map(hash, zip(map(zlib.crc32, names), stats.values()))) & DIGEST_MASK


def stat_term(rel: str, st: tuple) -> int:
    """One file's share of :func:`stat_digest` (digests add and subtract these, modulo
    ``DIGEST_MASK + 1``)."""
    return hash((zlib.crc32(rel.encode("utf-8", "surrogatepass")), tuple(st)))


# -- the walk ahead of time ---------------------------------------------------------------------


def command_line(argv: list[str]) -> tuple[str | None, str | None]:
    """The command word and the ``--vault`` value of a command line, as far as a quick
    look can tell (global options come before the command; ``--vault`` may follow it)."""
    command = vault = None
    args = iter(argv)
    for arg in args:
        if arg == "--":
            break
        if arg == "--vault":
            vault = next(args, None)
        elif arg.startswith("--vault="):
            vault = arg[len("--vault="):]
        elif arg == "--as" and command is None:
            next(args, None)
        elif command is None and not arg.startswith("-"):
            command = arg
    return command, vault


def command_word(argv: list[str]) -> str | None:
    return command_line(argv)[0]


def commit_stamp(root: str) -> tuple | None:
    """The stat of the vault's git index (``.git/index``), which every commit rewrites:
    read before a walk and again before this process writes, a stamp that moved says
    another writer committed in between (a false alarm — a ``git status`` refreshing the
    index — only costs a walk). None when there is none to read."""
    try:
        st = os.stat(os.path.join(root, ".git", "index"))
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns


class WalkAhead:
    """A walk of ``root`` running in a forked child: its (file count, digest) is read
    once with :meth:`take` (a walk nobody reads ends by itself), and ``stamp``, the
    vault's :func:`commit_stamp` from before the walk, once it is taken."""

    def __init__(self, root: str, pid: int, read: int) -> None:
        self.root = root  # resolved, as ``Vault.root`` is
        self.pid = pid
        self._read: int | None = read
        self.stamp: tuple | None = None

    @property
    def pending(self) -> bool:
        """True until the walk is taken."""
        return self._read is not None

    def take(self, timeout: float | None = None) -> tuple[int, int] | None:
        """The (file count, digest) the child walked, waiting for it if it is still
        walking (at most ``timeout`` seconds: a walk still going then is stopped); None
        if it failed, did not finish in time, or was taken before (each walk is taken
        once: later checks in the same process walk for themselves)."""
        read, self._read = self._read, None
        if read is None:
            return None
        if timeout is not None:
            import select

            if not select.select([read], [], [], timeout)[0]:  # a walk stuck on a hung mount
                import signal

                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                _reap(self.pid, read)
                return None
        chunks = []
        try:
            while chunk := os.read(read, 4096):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            status = _reap(self.pid, read)
        if status != 0:
            return None
        try:
            count, digest, stamp = marshal.loads(b"".join(chunks))
        except (EOFError, ValueError, TypeError):
            return None
        if type(count) is not int or type(digest) is not int or not isinstance(stamp, (tuple, type(None))):
            return None
        self.stamp = stamp
        return count, digest


def start_ahead(argv: list[str]) -> WalkAhead | None:
    """For a command that checks freshness first: fork a child that walks the vault the
    command line names and sends back (file count, digest). Returns the running walk, or
    None when nothing was started (another command, no vault found, no ``fork`` on this
    system, anything unexpected: the command then walks for itself)."""
    try:
        command, vault = command_line(argv)
        if command not in AHEAD_COMMANDS:
            return None
        chosen = vault or os.environ.get(ENV_VAULT) or None
        if chosen is not None:
            root = os.path.realpath(os.path.expanduser(chosen))
            if not is_vault(root):
                return None  # the command itself will say so
        else:
            root = find_vault()
            if root is None:
                return None
    except (OSError, ValueError):  # e.g. a deleted working folder: the command will say so
        return None
    return walk_ahead(root)


def walk_ahead(root: str) -> WalkAhead | None:
    """Fork a child that walks the vault at ``root`` (resolved) and sends back (file
    count, digest) — unless a watcher keeps its index fresh. None when nothing was
    started (no ``fork`` on this system, no pipe: the caller walks for itself)."""
    if not hasattr(os, "fork"):
        return None
    try:
        read, write = os.pipe()
    except OSError:
        return None
    status = 1
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # the child: walk, report, leave without running the parent's exit code
        try:
            os.close(read)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # a caller waiting for the command's output must not wait for us
                os.dup2(null, fd)
            if not watcher_alive(root, idle=True):  # else the command will not ask
                stamp = commit_stamp(root)  # before the walk: a commit during it moves it
                seen = scan(root, PART_MEMORY)  # what the search index covers
                os.write(write, marshal.dumps((len(seen), stat_digest(seen), stamp)))  # ~60 bytes: one write
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    return WalkAhead(root, pid, read)


def _reap(pid: int, read: int) -> int:
    os.close(read)
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 1
