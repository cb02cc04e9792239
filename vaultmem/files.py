"""Vault file I/O: the only module that writes files.

Writes are atomic: the new content goes to a temp file in the target's folder, is
fsynced, replaces the target with ``os.replace`` and the folder is fsynced, so a
process killed at any instant leaves the old file or the new one, never a torn one.
A killed writer can leave its temp file behind; :func:`sweep_temp_files` removes
those (the facade calls it under the vault's write lock, so no live writer's temp
file is touched). Every path is checked to stay inside the vault, symlinks included.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from . import layout
from .errors import BadInput, ParseError, UnsafePath, VaultmemError

TEMP_MARK = ".vmtmp-"


def inside(root: Path, rel: str | Path) -> Path:
    """Resolve ``rel`` against the vault ``root`` and refuse anything that leaves it.

    Symlinks are followed before the check (``Path.resolve``), and the comparison is
    on path components, so ``vault-evil/`` is not inside ``vault/``.
    """
    root_real = root.resolve()
    rel_path = Path(rel)
    if rel_path.is_absolute():
        raise UnsafePath(f"refusing the absolute path {rel}: vault paths are relative", path=rel)
    target = (root_real / rel_path).resolve()
    if target != root_real and root_real not in target.parents:
        raise UnsafePath(
            f"refusing to touch {rel}: it resolves to {target}, outside the vault {root_real}",
            path=rel,
            hint="a symlink or '..' leads out of the vault",
        )
    return root_real / rel_path


# -- reading: nothing outside the vault, through any link ----------------------------------
LINK_OUT = layout.LINK_OUT
link_problem = layout.link_problem
within = layout.within
NOT_REGULAR = "not a regular file (a pipe, a socket or a device): not read"
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _opened_at(fd: int) -> str | None:
    """Where the open file ``fd`` really is (Linux: ``/proc/self/fd``), or None."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return where if where.startswith(os.sep) else None


_REAL_ROOTS: dict[str, str] = {}


def _real_root(root: str | os.PathLike) -> str:
    """The resolved vault root (resolved once per process: the root is where the user
    pointed vaultmem, the one path that may lead anywhere)."""
    key = os.fspath(root)
    real = _REAL_ROOTS.get(key)
    if real is None:
        real = _REAL_ROOTS[key] = os.path.realpath(key)
    return real


def open_inside(root: str | os.PathLike, rel: str | os.PathLike) -> int:
    """A file descriptor, open for reading, on the vault file ``rel`` — the one way every
    reader of vault files opens them, so nothing outside the vault is ever read.

    A link is followed only while it stays inside the vault (and out of ``.git/`` and
    ``.vaultmem/``, unless ``rel`` is in them itself): a file or folder linking out, a
    link in an intermediate folder, a link swapped in between the check and the open —
    each raises :class:`UnsafePath` naming ``rel`` and the reason ("a symlink leading out
    of the vault"), and nothing is read. The last component is opened with
    ``O_NOFOLLOW``, and where the system tells (``/proc/self/fd``) the file actually opened
    is checked to lie inside the vault. Only regular files are opened (a FIFO would
    block; a device is not a note): a folder raises ``IsADirectoryError``, a missing file
    ``FileNotFoundError``. Hard links cannot be told from the file itself (both names are
    the same file): a hard link to a file outside the vault is read like any other file."""
    root_real = _real_root(root)
    rel = os.fspath(rel)
    shown = rel.replace(os.sep, "/")
    if os.path.isabs(rel):
        raise UnsafePath(f"refusing the absolute path {rel}: vault paths are relative", path=shown)
    literal = os.path.join(root_real, rel)
    if ".." in rel or "//" in literal or "/./" in literal:
        literal = os.path.normpath(literal)
    if not within(literal, root_real):
        raise UnsafePath(f"refusing to read {shown}: '..' leads out of the vault", path=shown)

    def refuse(real: str, why: str):
        return UnsafePath(f"{why}: not read", path=shown,
                          hint=f"it resolves to {real}; vaultmem reads only files inside the vault — "
                               "replace the link with the file itself, or remove it")

    try:
        fd = os.open(literal, _READ_FLAGS)
        checked = False
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device without its driver): no file to open
            raise UnsafePath(NOT_REGULAR, path=shown, hint="vaultmem reads only regular files") from None
        if exc.errno not in (errno.ELOOP, errno.EMLINK):  # not a link: missing, a folder in the way...
            if exc.errno == errno.ENOTDIR or isinstance(exc, FileNotFoundError):
                real = os.path.realpath(literal)  # a dangling link, or a folder link, on the way?
                why = link_problem(root_real, literal, real)
                if why:
                    raise refuse(real, why) from None
            raise
        real = os.path.realpath(literal)  # the file itself is a link: where does it lead?
        why = link_problem(root_real, literal, real)
        if why:
            raise refuse(real, why) from None
        try:
            fd = os.open(real, _READ_FLAGS)
        except OSError as again:
            if again.errno in (errno.ELOOP, errno.EMLINK):
                if _loops(literal):  # links that lead to each other (the file's, or a folder's on the way)
                    raise UnsafePath("a symlink that leads back to itself (a loop): not read", path=shown,
                                     hint="replace the link with the file it should lead to, or remove it") from None
                raise refuse(real, LINK_OUT) from None  # swapped for a link meanwhile
            if again.errno == errno.ENXIO:  # a link to a socket inside the vault
                raise UnsafePath(NOT_REGULAR, path=shown, hint="vaultmem reads only regular files") from None
            raise
        checked = True
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", literal)
        where = _opened_at(fd)
        if where is None and not checked:
            where = os.path.realpath(literal)  # no /proc: check the path as it is now
        if where is not None and where != literal:  # opened where its path says: no link on the way
            why = link_problem(root_real, literal, where)
            if why:
                raise refuse(where, why)
        if not stat.S_ISREG(mode):
            raise UnsafePath(NOT_REGULAR, path=shown, hint="vaultmem reads only regular files")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _loops(path: str) -> bool:
    """Whether resolving ``path`` goes round in a loop of links."""
    try:
        os.path.realpath(path, strict=True)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def own_folder(root: str | os.PathLike, rel: str) -> Path:
    """vaultmem's folder ``rel`` (``.vaultmem/index``, ``.vaultmem/local``: derived data and
    per-machine caches, never memory) as a real folder of the vault, or absent: a file
    or a symlink standing where it should be is removed — a link, not what it points to
    — so that nothing is read from or written to wherever it leads; the folder is made
    again by whatever writes there next. One ``lstat`` when all is well. An ``OSError``
    (a read-only vault) is left to the caller; reads through a link are refused anyway."""
    path = Path(root) / rel
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return path
    if not stat.S_ISDIR(st.st_mode):
        path.unlink()
    return path


def may_read(root: str | os.PathLike, rel: str | os.PathLike) -> bool:
    """Whether the vault path ``rel`` is a regular file that :func:`open_inside` would
    open (for listings that pass over the rest: a log file that is a link leading out of
    the vault is not one of the logs). Readers still open with :func:`open_inside`."""
    root_real = os.path.realpath(root)
    literal = os.path.normpath(os.path.join(root_real, rel))
    real = os.path.realpath(literal)
    return within(literal, root_real) and link_problem(root_real, literal, real) is None and os.path.isfile(real)


def read_bytes(root: str | os.PathLike, rel: str | os.PathLike) -> bytes:
    """The bytes of the vault file ``rel`` (see :func:`open_inside`: never outside the vault)."""
    fd = open_inside(root, rel)
    try:
        chunks = []
        size = os.fstat(fd).st_size
        while True:
            chunk = os.read(fd, max(size + 1, 65536))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def read_vault_text(root: str | os.PathLike, rel: str | os.PathLike, shown: str | None = None) -> str:
    """The vault file ``rel`` as UTF-8 text (see :func:`open_inside` and :func:`decode`);
    errors name it as ``shown`` (default: ``rel``)."""
    shown = shown or Path(rel).as_posix()
    try:
        data = read_bytes(root, rel)
    except IsADirectoryError:
        raise VaultmemError(f"{shown} is a folder, where a file was expected", path=shown,
                            hint="rename or remove that folder") from None
    except (FileNotFoundError, VaultmemError):
        raise
    except OSError as exc:
        raise VaultmemError(f"cannot read {shown}: {exc.strerror}", path=shown) from None
    return decode(data, shown)


def read_text(path: Path, shown: str | None = None) -> str:
    """Read a file that is not in a vault (a template, a file named on the command line)
    as UTF-8; vault files are read with :func:`read_vault_text`. Errors name the file (as
    ``shown``) and line."""
    shown = shown or str(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise VaultmemError(f"{shown} is a folder, where a file was expected", path=shown,
                            hint="rename or remove that folder") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise VaultmemError(f"cannot read {shown}: {exc.strerror}", path=shown) from None
    return decode(data, shown)


def decode(data: bytes, shown: str) -> str:
    """``data`` as UTF-8 (a BOM and CRLF are kept for the parser to see); a byte that is
    not names the file and its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be decoded",
            path=shown,
            line=line,
            hint="save the file as UTF-8 (Obsidian and most editors do by default)",
        ) from None


def fsync_path(path: Path) -> None:
    """Flush a file, or a folder's entries, to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    fsync_path(folder)


def atomic_write(path: Path, text: str | bytes, durable: bool = True, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` (UTF-8, or bytes as they are) so that readers and
    crashes see either the old or the new content, never a mix. Creates missing parent
    folders. A symlink is not written through (that would replace the link with a file):
    it is refused. ``durable=False`` skips the fsyncs, for caches that may be lost. A
    failed write (a full disk) leaves the old file and no temp file."""
    tmp = write_temp(path, text, durable, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def _utf8(text: str, path: Path) -> bytes:
    """``text`` as UTF-8, or BadInput when it holds what is no text: a lone surrogate, which
    stands for a byte that was not UTF-8 (a terminal in another encoding) or half an emoji.
    The last guard of every write: nothing is written."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(f"the text for {path.name} holds a character that is not text (U+{ord(text[exc.start]):04X}, "
                       f"a byte that was not UTF-8 or half an emoji) at character {exc.start + 1}; nothing is written",
                       hint="give the text as UTF-8") from None


def write_temp(path: Path, text: str | bytes, durable: bool = True, mode: int = 0o644) -> Path:
    """The new content of ``path`` in a temp file beside it (fsynced unless not
    ``durable``), ready to be moved over it: its name marks it for the sweep of a killed
    writer's leftovers. Nothing is left when writing fails."""
    if path.is_symlink():
        raise UnsafePath(f"refusing to write {path}: it is a symbolic link", path=str(path),
                         hint="vaultmem writes only regular files; replace the link with the file itself")
    data = _utf8(text, path) if isinstance(text, str) else text
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{path.name}{TEMP_MARK}{os.urandom(4).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    if path.exists():
        try:
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        except OSError:
            pass
    return tmp


def keep_aside(path: Path) -> Path | None:
    """A second name for ``path``'s current content (a hard link beside it, marked as a
    temp file), so that it can be put back after ``path`` is replaced or removed — with
    no free space needed. None if ``path`` does not exist. Falls back to a copy where
    the file system has no hard links."""
    if not path.exists():
        return None
    aside = path.parent / f".{path.name}{TEMP_MARK}o{os.urandom(4).hex()[:7]}"  # as long as a temp name
    try:
        os.link(path, aside)
    except OSError:
        import shutil

        try:
            shutil.copy2(path, aside)
        except BaseException:
            aside.unlink(missing_ok=True)
            raise
    return aside


def ensure_gitignore(folder: Path, text: str) -> None:
    """Give ``folder`` its own ``.gitignore`` (written whole or not at all)."""
    ignore = folder / ".gitignore"
    if not ignore.exists():
        atomic_write(ignore, text)


def remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)


LOCAL_DIR = layout.LOCAL_DIR


def pack(value) -> bytes | None:
    """``value`` (plain data: str, int, float, bool, None, tuples, lists, dicts) as bytes
    for a cache file: a CRC-32 of the payload, then the payload (marshal). None if the
    value holds anything else."""
    import marshal
    import zlib

    try:
        payload = marshal.dumps(value)
    except ValueError:
        return None
    return zlib.crc32(payload).to_bytes(4, "big") + payload


def unpack(data: bytes):
    """What :func:`pack` packed, or None for bytes it did not make whole (a torn or
    damaged file: marshal itself must never see those, it is not safe on bad input)."""
    import marshal
    import zlib

    if len(data) < 5 or zlib.crc32(data[4:]).to_bytes(4, "big") != data[:4]:
        return None
    try:
        return marshal.loads(data[4:])
    except (ValueError, EOFError, TypeError):
        return None


LOCAL_IGNORE = "# per-machine state (watcher heartbeat, read cursors, caches): never committed\n*\n"


def write_local(root: Path, name: str, data: str | bytes) -> bool:
    """Write a per-machine state or cache file in ``.vaultmem/local/`` (kept out of git
    by its own .gitignore, whatever the vault's says). Not fsynced: a cache may be lost.
    False if it could not be written (a read-only vault): callers go on without it."""
    try:
        folder = own_folder(root, LOCAL_DIR)
        folder.mkdir(parents=True, exist_ok=True)
        ensure_gitignore(folder, LOCAL_IGNORE)
        atomic_write(folder / name, data, durable=False)
        return True
    except (OSError, VaultmemError):  # also a link there, which is not written through
        return False


def append_local(root: Path, name: str, data: bytes) -> bool:
    """Append ``data`` to a per-machine file in ``.vaultmem/local/`` in one write (lines
    from several processes never interleave: each is one ``O_APPEND`` write). Never
    through a link. False if it could not be written: callers go on without it."""
    try:
        folder = own_folder(root, LOCAL_DIR)
        folder.mkdir(parents=True, exist_ok=True)
        ensure_gitignore(folder, LOCAL_IGNORE)
        fd = os.open(folder / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        return True
    except (OSError, VaultmemError):
        return False


def read_local(root: Path, name: str) -> bytes | None:
    """A per-machine file of ``.vaultmem/local/``, or None when there is none (never
    read through a link)."""
    try:
        fd = os.open(own_folder(root, LOCAL_DIR) / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def find_temp_files(root: Path, folders: list[str]) -> list[Path]:
    """Temp files (``.<name>.vmtmp-…``) in ``folders`` (vault-relative, "." the top)."""
    found = []
    for rel in folders:
        try:
            folder = inside(root, rel)
        except UnsafePath:
            continue  # never follow a link out of the vault
        try:
            names = os.listdir(folder)
        except OSError:  # gone, not a folder, not ours to list: no temp file of ours is found there
            continue
        found.extend(folder / name for name in names if name.startswith(".") and TEMP_MARK in name)
    return found


def sweep_temp_files(root: Path, folders) -> list[Path]:
    """Delete temp files that killed writers left in the vault's writable folders.

    Only call this while holding the vault's write lock: every live writer holds it
    too, so any temp file found is an orphan.
    """
    removed = []
    for victim in find_temp_files(root, list(dict.fromkeys([".", *folders]))):
        try:
            victim.unlink()
            removed.append(victim)
        except FileNotFoundError:
            pass
    return removed
