"""Session ends as small durable files under ``.vaultmem/local/claude/spool/``, filed one
filer at a time — by the next hook, or a detached process that outlives the hook."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ... import files, layout
from ...errors import Busy, GitError, StorageError, VaultNotFound
from .. import edge
from .events import retain_spooled
from .payload import ENV_AGENT, ENV_PROJECT, HookError, checked_id, environ, now, say, secret_free
from .records import local_folder

if TYPE_CHECKING:  # imported when a hook opens the vault: SessionEnd, within its budget, never does
    from ...vault import Vault

DRAIN_WAIT = 120.0  # seconds a background filer waits for another one before leaving its spool

def spool(root: Path, event: str, payload: dict, agent_opt: str | None) -> Path:
    """The session end as a small durable file in the spool (fsynced, renamed into place)."""
    session = checked_id(payload, "session_id")
    item = {"event": event, "session_id": session, "agent": agent_opt or environ().get(ENV_AGENT) or None,
            "transcript_path": payload.get("transcript_path"), "cwd": payload.get("cwd"),
            "project_dir": environ().get(ENV_PROJECT) or None, "reason": payload.get("reason"),
            "last_assistant_message": payload.get("last_assistant_message"), "spooled": now()}
    if item["agent"] is not None:
        from ...names import check_name

        check_name(item["agent"], "agent name")
    folder = local_folder(root, layout.CLAUDE_SPOOL_DIR)
    path = folder / f"{time.time_ns()}-{event}-{session or 'unknown'}.json"
    files.atomic_write(path, edge.json_text(item, indent=None), durable=True, mode=0o600)
    return path


def pending_spools(root: Path) -> list[Path]:
    try:
        folder = local_folder(root, layout.CLAUDE_SPOOL_DIR)
        return sorted(p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except OSError:
        return []


def drain(root: Path, wait: float = DRAIN_WAIT, vault: Vault | None = None) -> int:
    """File every spooled session end, oldest first, under the drain lock (one filer at a
    time; with ``wait`` 0 a busy lock means another filer is at it). A spool goes only
    once its facts are filed; a kill before that leaves it for the next filer, and the
    facts a killed filer did file are not filed twice (see :func:`filed_before`).
    ``vault``: the vault already open (a hook's, a warm server's), else one is opened."""
    if not pending_spools(root):
        return 0
    lock_path = local_folder(root, layout.CLAUDE_DIR) / Path(layout.CLAUDE_DRAIN_LOCK).name
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return 0
                time.sleep(0.05)
        filed = 0
        v = vault
        for path in pending_spools(root):
            try:
                item = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(item, dict):
                    raise HookError(f"{path.name} is not a spooled session end")
            except (OSError, ValueError, HookError) as exc:
                set_aside(path, exc)
                continue
            if v is None:
                from ...vault import Vault

                v = Vault.open(root)
            try:
                filed += retain_spooled(v, item)
            except (Busy, GitError, StorageError, VaultNotFound, OSError):
                raise  # another writer, git's lock, a full disk: the spool stays for the next hook
            except Exception as exc:  # noqa: BLE001 - this spool cannot be filed as it is: kept aside, said,
                set_aside(path, exc)  # and never again in the way of the sessions after it
                continue
            path.unlink(missing_ok=True)
        return filed
    finally:
        os.close(fd)


def set_aside(path: Path, exc: BaseException) -> None:
    """A spool that cannot be filed: renamed ``*.failed`` (kept for a human), and said."""
    try:
        path.rename(path.with_suffix(".failed"))
    except OSError:
        pass
    say(f"vaultmem hook: {path.name} set aside as .failed: {secret_free(edge.one_line(exc))}")


def spawn_drainer(root: Path) -> None:
    """Start a detached process that files the spool (it outlives the hook and Claude Code's
    wait for it); its errors go to ``.vaultmem/local/claude/drain.log``."""
    import subprocess

    folder = local_folder(root, layout.CLAUDE_DIR)
    log = open(folder / Path(layout.CLAUDE_DRAIN_LOG).name, "ab")
    try:
        # run from the root folder, never from the vault: "python -m" puts its working
        # folder first on the import path, and a vault may hold a folder named vaultmem
        subprocess.Popen([sys.executable, "-m", "vaultmem.adapters.claude", "drain", str(root)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, close_fds=True,
                         start_new_session=True, cwd=os.path.abspath(os.sep))
    finally:
        log.close()


def drainer_main(root: str) -> int:
    """The background filer: ``python -m vaultmem.adapters.claude drain ROOT``."""
    path = Path(root)
    pid_file = local_folder(path, layout.CLAUDE_DIR) / Path(layout.CLAUDE_DRAINER_PID).name
    files.atomic_write(pid_file, f"{os.getpid()}\n", durable=False)
    try:
        drain(path)
    except BaseException as exc:  # noqa: BLE001 - said in drain.log; the spool stays for the next hook
        say(f"vaultmem hook: {now()} filing the spool: {secret_free(edge.one_line(exc))}")
    return 0
