"""Preservation: the vault's format and its migrations, what an upgrade must leave
intact, and backups (docs/preservation.md).

- :func:`plan_migrate`: the writes that bring a vault of an older format to
  :data:`~vaultmem.config.FORMAT_VERSION`, step by step (nothing written).
- :func:`journal_problems`: the journal's idempotence markers — each turn's block id once
  in the whole journal, on a turn of its day file.
- :func:`write_keys` / :func:`load_keys` / :func:`install_keys`: the private signing keys
  carried apart from a backup's bundle (they are never committed), in an archive of their own.

Backups themselves are git bundles of the whole history (``gitstore.bundle_create``,
``clone_bundle``); the facade checks a restored vault with ``Vault.verify``.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

from . import files, layout
from .config import FORMAT_VERSION, set_value
from .errors import BadInput, VaultmemError
from .names import check_name
from .parse.journal import DAY_FILE, day_turns

KEY_SUFFIX = ".key"


def _v1_to_v2(text_of: Callable[[str], str | None]) -> dict[str, str]:
    """Format 2 (the journal): the config names the journal's settings, at their defaults."""
    config = text_of(layout.CONFIG_PATH) or ""
    if not re.search(r"(?m)^journal:", config):  # a group someone wrote already is theirs
        config = set_value(set_value(config, "journal.keep_days", 0), "journal.hooks", True)
    return {layout.CONFIG_PATH: set_value(config, "version", 2)}


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


def load_keys(archive: Path) -> list[tuple[str, bytes]]:
    """The keys of an archive :func:`write_keys` made, read and checked: only plain files
    named ``<agent>.key``; a member with a path, a link or another name is refused."""
    try:
        tar = tarfile.open(archive, mode="r:gz")
    except (OSError, tarfile.TarError) as exc:
        raise BadInput(f"{archive} is not a keys archive vaultmem made: {exc}", field="keys",
                       hint="make one with 'vaultmem backup create PATH --keys KEYS'") from None
    with tar:
        taken = []
        for member in tar.getmembers():
            name = member.name
            if not member.isfile() or "/" in name or not name.endswith(KEY_SUFFIX):
                raise BadInput(f"{archive} holds {name!r}, which is not an agent's key: nothing was restored",
                               field="keys")
            check_name(name.removesuffix(KEY_SUFFIX), "agent name", field="keys")
            taken.append((name, tar.extractfile(member).read()))
    return taken


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
