"""What a killed writer may have left in the vault — its journal, temp files — looked for
cheaply, so that every command can look before anything is settled: one ``stat`` for the
journal, and each writable folder's mtime against the mtimes recorded when it was last
found clean (``.vaultmem/local/tidy.bin``; creating a temp file moves its folder's). A
command that finds nothing imports no writer; what is found is settled by
:meth:`vaultmem.transaction.Writer.tidy`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from . import files, layout
from .errors import VaultmemError

TIDY_STAMPS = "tidy.bin"  # in .vaultmem/local/: folders' mtimes when they held no temp file


def journal_left(root: Path) -> bool:
    """Whether a writer's journal is there: a writer died mid-change, or one is writing."""
    return (root / layout.TXN_JOURNAL).exists()


def moved_folders(root: Path) -> tuple[dict[str, int], list[str]]:
    """Each writable folder's mtime, and the folders whose mtime moved since they were last
    found clean (``.vaultmem/local/`` is left out: reads write their caches there, this
    stamp file among them, so its mtime moves on every command)."""
    stamps = {}
    for rel in (rel for rel in layout.WRITABLE if rel != layout.LOCAL_DIR):
        try:
            stamps[rel] = os.stat(root / rel).st_mtime_ns
        except OSError:
            continue
    try:
        clean = files.unpack(files.read_bytes(root, f"{layout.LOCAL_DIR}/{TIDY_STAMPS}"))
    except (OSError, VaultmemError):
        clean = {}
    if not isinstance(clean, dict):
        clean = {}
    return stamps, [rel for rel, mtime in stamps.items() if clean.get(rel) != mtime]


def temp_files_left(root: Path) -> bool:
    """Whether a writable folder whose mtime moved holds a temp file. When none does, the
    folders' mtimes are recorded as clean (those of the last two seconds excepted: a temp
    file made in the same clock tick could hide behind them)."""
    stamps, look = moved_folders(root)
    if not look:
        return False
    if files.find_temp_files(root, look):
        return True
    settled = time.time_ns() - 2_000_000_000
    files.write_local(root, TIDY_STAMPS, files.pack({rel: m for rel, m in stamps.items() if m < settled}))
    return False


def anything_left(root: Path) -> bool:
    """Whether :meth:`~vaultmem.transaction.Writer.tidy` has something to do: a journal, or
    a temp file."""
    return journal_left(root) or temp_files_left(root)
