"""Preservation: the vault's format and its migrations, what an upgrade must leave
intact, and backups (docs/preservation.md).

- :func:`plan_migrate`: the writes that bring a vault of an older format to
  :data:`~vaultmem.config.FORMAT_VERSION`, step by step (nothing written).
- :func:`journal_problems`: the journal's idempotence markers — each turn's block id once
  in the whole journal, on a turn of its day file.
- :func:`write_keys` / :func:`load_keys` / :func:`install_keys`: the private signing keys
  carried apart from a backup's bundle (they are never committed), in an archive of their own;
  :func:`key_problems`: each key in ``.vaultmem/keys/`` holds a key (``verify``).

Backups themselves are git bundles of the whole history (``gitstore.bundle_create``,
``clone_bundle``); :mod:`vaultmem.upkeep` checks a restored vault with ``verify``.
"""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
import zlib
from collections.abc import Callable
from pathlib import Path

from . import files, layout
from .config import FORMAT_VERSION, set_values
from .errors import BadInput, VaultmemError
from .names import check_name
from .parse.journal import DAY_FILE, day_turns

KEY_SUFFIX = ".key"
# A private key file is the base64 of a 32-byte Ed25519 seed and a newline (45 bytes); a
# keys archive is one such file a member. What is larger is no key, and is refused by its
# size before it is read: a keys archive may hold up to MAX_KEYS keys.
MAX_KEY_BYTES = 1024
MAX_KEYS = 10_000
MAX_KEYS_ARCHIVE_BYTES = 4 * 1024 * 1024


def _v1_to_v2(text_of: Callable[[str], str | None]) -> dict[str, str]:
    """Format 2 (the journal): the config names the journal's settings, at their defaults."""
    config = text_of(layout.CONFIG_PATH) or ""
    journal = [] if re.search(r"(?m)^journal:", config) else [("journal.keep_days", 0), ("journal.hooks", True)]
    return {layout.CONFIG_PATH: set_values(config, [*journal, ("version", 2)])}  # a group someone wrote is theirs


# version → (what the step to the next version does, the step)
MIGRATIONS: dict[int, tuple[str, Callable]] = {
    1: ("the journal's settings in the config (journal.keep_days: 0, journal.hooks: true)", _v1_to_v2),
}


def plan_migrate(root: Path, version: int) -> tuple[dict[str, str], list[str]]:
    """(the files to write, what each step does) to bring a vault of format ``version`` to
    :data:`FORMAT_VERSION`; nothing when it is there already."""
    writes: dict[str, str] = {}
    steps: list[str] = []

    def text_of(rel: str) -> str | None:
        if rel in writes:
            return writes[rel]
        try:
            return files.read_vault_text(root, rel)
        except FileNotFoundError:
            return None

    for v in range(version, FORMAT_VERSION):
        if v not in MIGRATIONS:  # pragma: no cover - a format without its step is a bug here
            raise VaultmemError(f"no migration from format {v}", hint="this is a vaultmem bug: please report it")
        what, step = MIGRATIONS[v]
        writes.update(step(text_of))
        steps.append(f"{v} → {v + 1}: {what}")
    return writes, steps


def journal_problems(root: Path) -> list[dict]:
    """Where the journal's markers would make ``journal add`` file a turn twice or not at
    all: a block id found twice (in one day file or two), or one that no turn carries (an
    edited item), each ``{"path", "line", "problem"}``."""
    seen: dict[str, str] = {}
    out: list[dict] = []
    folder = root / layout.JOURNAL_DIR
    for p in sorted(folder.iterdir()) if folder.is_dir() else []:
        m = DAY_FILE.match(p.name)
        if not m:
            continue
        rel = f"{layout.JOURNAL_DIR}/{p.name}"
        try:
            text = files.read_vault_text(root, rel)
        except VaultmemError as exc:
            out.append({"path": rel, "line": exc.line, "problem": exc.message})
            continue
        turns = {t.id: t.line for t in day_turns(text)}
        for n, line in enumerate(text.splitlines(), 1):
            for found in re.finditer(r"\^(j-[0-9a-f]{8}-\d+)(?=\s|$)", line):
                tid = found.group(1)
                if tid in seen:
                    out.append({"path": rel, "line": n, "problem": f"turn ^{tid} is in the journal twice "
                                                                   f"(also {seen[tid]})"})
                    continue
                seen[tid] = f"{rel}:{n}"
                if tid not in turns:
                    out.append({"path": rel, "line": n, "problem": f"^{tid} marks no turn (an edited item): "
                                                                   "adding its session again would file it twice"})
    return out


def write_keys(root: Path, dest: Path) -> list[str]:
    """The private signing keys (``.vaultmem/keys/*.key``) into a gzipped tar at ``dest``,
    readable by its owner only; the agents whose keys it holds."""
    folder = root / layout.PRIVATE_KEYS_DIR
    keys = sorted(p for p in folder.glob(f"*{KEY_SUFFIX}") if p.is_file() and not p.is_symlink()) \
        if folder.is_dir() else []
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for p in keys:
            data = p.read_bytes()
            info = tarfile.TarInfo(p.name)
            info.size, info.mode, info.mtime = len(data), 0o600, 0
            tar.addfile(info, io.BytesIO(data))
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(buf.getvalue())
    return [p.name.removesuffix(KEY_SUFFIX) for p in keys]


def key_problem(data: bytes) -> str | None:
    """Why ``data`` is not a private signing key as ``vaultmem keys new`` writes it (the
    base64 of a 32-byte Ed25519 seed), or None when it is one."""
    import base64
    import binascii

    if len(data) > MAX_KEY_BYTES:
        return f"is {len(data):,} bytes; a private key is under {MAX_KEY_BYTES:,}"
    try:
        raw = base64.b64decode(data.strip(), validate=True)
    except (binascii.Error, ValueError):
        return "is not a private key: its text is not base64"
    if len(raw) != 32:
        return f"is not a private key: it holds {len(raw)} bytes, an Ed25519 key 32"
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        Ed25519PrivateKey.from_private_bytes(raw)
    except ValueError as exc:  # pragma: no cover - any 32 bytes are a seed today
        return f"is not a private key: {exc}"
    return None


def load_keys(archive: Path) -> list[tuple[str, bytes]]:
    """The keys of an archive :func:`write_keys` made, read and checked: only plain files
    named ``<agent>.key`` that each hold a key (:func:`key_problem`); a member with a path,
    a link, another name, more than :data:`MAX_KEY_BYTES` or no key in it is refused, and
    so is an archive over :data:`MAX_KEYS_ARCHIVE_BYTES` (before it is read)."""
    hint = "make one with 'vaultmem backup create PATH --keys KEYS'"
    try:
        size = archive.stat().st_size
    except OSError as exc:
        raise BadInput(f"{archive} cannot be read: {exc.strerror or exc}", field="keys") from None
    if size > MAX_KEYS_ARCHIVE_BYTES:
        raise BadInput(f"{archive} is {size:,} bytes, more than a keys archive holds ({MAX_KEYS_ARCHIVE_BYTES:,}): "
                       "nothing was restored", field="keys", hint=hint)
    try:
        tar = tarfile.open(archive, mode="r:gz")
    except (OSError, tarfile.TarError) as exc:
        raise BadInput(f"{archive} is not a keys archive vaultmem made: {exc}", field="keys", hint=hint) from None
    taken = []
    try:
        with tar:
            for member in tar:  # one header at a time: an oversize member is refused before it is read
                name = member.name
                if not member.isfile() or "/" in name or not name.endswith(KEY_SUFFIX):
                    raise BadInput(f"{archive} holds {name!r}, which is not an agent's key: nothing was restored",
                                   field="keys")
                check_name(name.removesuffix(KEY_SUFFIX), "agent name", field="keys")
                if len(taken) >= MAX_KEYS:
                    raise BadInput(f"{archive} holds more than {MAX_KEYS:,} keys: nothing was restored", field="keys")
                if member.size > MAX_KEY_BYTES:  # its header says so: refused unread
                    data, problem = b"", f"is {member.size:,} bytes; a private key is under {MAX_KEY_BYTES:,}"
                else:
                    data = tar.extractfile(member).read(MAX_KEY_BYTES + 1)
                    problem = key_problem(data)
                if problem:
                    raise BadInput(f"{archive}: {name} {problem}: nothing was restored", field="keys", hint=hint)
                taken.append((name, data))
    except (OSError, EOFError, tarfile.TarError, zlib.error) as exc:
        raise BadInput(f"{archive} is not a keys archive vaultmem made: {exc}", field="keys", hint=hint) from None
    return taken


def key_problems(root: Path) -> list[dict]:
    """``verify``'s check of the private keys folder: each ``<agent>.key`` a regular file
    that holds a key (:func:`key_problem`; an oversize one is refused by its size, never
    read), ``{"path", "line", "problem"}`` each."""
    folder = root / layout.PRIVATE_KEYS_DIR
    out: list[dict] = []
    for p in sorted(folder.glob(f"*{KEY_SUFFIX}")) if folder.is_dir() else []:
        rel = f"{layout.PRIVATE_KEYS_DIR}/{p.name}"
        try:
            st = p.lstat()
            if not stat.S_ISREG(st.st_mode):
                problem = "is not a regular file (a link or a folder): no key is read from it"
            elif st.st_size > MAX_KEY_BYTES:
                problem = f"is {st.st_size:,} bytes; a private key is under {MAX_KEY_BYTES:,}"
            else:
                problem = key_problem(files.read_bytes(root, rel))
        except (OSError, VaultmemError) as exc:
            problem = f"cannot be read: {getattr(exc, 'strerror', None) or exc}"
        if problem:
            out.append({"path": rel, "line": None, "problem": f"{problem}: the agent cannot sign with it (restore "
                                                               "it from the keys file 'backup create --keys' wrote)"})
    return out


def install_keys(root: Path, taken: list[tuple[str, bytes]]) -> list[str]:
    """Keys :func:`load_keys` read, into ``root``'s ``.vaultmem/keys/`` (mode 0600)."""
    folder = root / layout.PRIVATE_KEYS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    for name, data in taken:
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    return [n.removesuffix(KEY_SUFFIX) for n, _ in taken]
