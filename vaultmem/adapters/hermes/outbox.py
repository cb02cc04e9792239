"""The outbox: what a session handed over, on disk until it is in the vault (secrets
already replaced), carried out by the next provider when this one stopped first."""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any

from ... import files, layout
from .settings import LOCK_NAME


# -- the outbox: what a session handed over, until it is in the vault ---------------------------

class Outbox:
    """One provider's folder in ``.vaultmem/local/hermes/``: numbered JSON files, each a
    piece of work (``turn-facts``, ``log``, ``delegation``, ``session-end``,
    ``checkpoint``), written before the work is done and removed once it is. The owner
    holds ``owner.lock`` (an OS lock, freed when its process dies) for its lifetime."""

    def __init__(self, root: Path, folder: Path, lock_fd: int | None = None) -> None:
        self.root = root
        self.folder = folder
        self._seq = 0
        self._lock_fd = lock_fd
        self._mutex = threading.Lock()

    @classmethod
    def create(cls, root: Path) -> Outbox:
        base = files.own_folder(root, layout.LOCAL_DIR)
        base.mkdir(parents=True, exist_ok=True)
        files.ensure_gitignore(base, "# per-machine state (watcher heartbeat, read cursors, caches): never committed\n*\n")
        name = f"{_dt.datetime.now(_dt.timezone.utc):%Y%m%dT%H%M%S}-{os.getpid()}-{secrets.token_hex(3)}"
        files.own_folder(root, layout.HERMES_OUTBOX_DIR)  # a link planted there is removed, never followed
        folder = root / layout.HERMES_OUTBOX_DIR / name
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # new and ours: never held by another
        return cls(root, folder, fd)

    def put(self, kind: str, data: dict[str, Any]) -> Path:
        with self._mutex:
            self._seq += 1
            path = self.folder / f"{self._seq:08d}-{kind}.json"
        self.rewrite(path, {"kind": kind, **data})
        return path

    @staticmethod
    def rewrite(path: Path, job: dict[str, Any]) -> None:
        """Write a job's file whole, owner-only: a new one (:meth:`put`), or one with what is
        already done of it noted."""
        files.atomic_write(path, json.dumps(job, ensure_ascii=False), mode=0o600)

    def pending(self) -> list[Path]:
        return sorted(p for p in self.folder.glob("*.json") if p.name[:8].isdigit())

    def close(self) -> None:
        """Let go of the folder: removed when empty, else left for the next provider."""
        if self._lock_fd is None:
            return
        try:
            if not self.pending():
                for p in self.folder.iterdir():
                    p.unlink(missing_ok=True)
                self.folder.rmdir()
        except OSError:
            pass
        os.close(self._lock_fd)
        self._lock_fd = None

    @staticmethod
    def orphans(root: Path, own: Path | None) -> list[Path]:
        """Folders of providers that are gone (their lock is free), oldest first."""
        base = files.own_folder(root, layout.HERMES_OUTBOX_DIR)
        out = []
        for folder in sorted(base.iterdir()) if base.is_dir() else []:
            if folder == own or not folder.is_dir():
                continue
            try:
                fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)  # its provider still runs
                continue
            os.close(fd)
            out.append(folder)
        return out
