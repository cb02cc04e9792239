"""Per-machine records under ``.vaultmem/local/``: a started sub-agent's delegation, read
back when it stops."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ... import files, layout
from ...errors import VaultmemError
from .. import edge

# -- local records: a started sub-agent's delegation ------------------------------------------------------


def local_folder(root: Path, rel: str) -> Path:
    """The per-machine folder ``rel`` under ``.vaultmem/local``, made if need be: each
    folder on the way a real folder of the vault (a link standing there — committed by
    someone, or planted — is removed, never written through)."""
    parts = Path(rel).relative_to(layout.LOCAL_DIR).parts
    files.own_folder(root, layout.LOCAL_DIR)
    for n in range(1, len(parts) + 1):
        files.own_folder(root, str(Path(layout.LOCAL_DIR, *parts[:n])))
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    files.ensure_gitignore(root / layout.LOCAL_DIR,
                           "# per-machine state (watcher heartbeat, read cursors, caches): never committed\n*\n")
    return folder


def save_agent_record(root: Path, agent_id: str, record: dict) -> None:
    folder = local_folder(root, layout.CLAUDE_AGENTS_DIR)
    files.atomic_write(folder / f"{agent_id}.json", edge.json_text(record, indent=None), durable=True, mode=0o600)


def load_agent_record(root: Path, agent_id: str) -> dict | None:
    try:
        data = json.loads(files.read_vault_text(root, f"{layout.CLAUDE_AGENTS_DIR}/{agent_id}.json"))
    except (OSError, ValueError, VaultmemError):
        return None
    return data if isinstance(data, dict) else None


RECORD_DAYS = 7  # a finished sub-agent's record is kept this long (a late repeated SubagentStop files nothing)


def agent_records(root: Path) -> list[dict]:
    """The sub-agents' records; those finished more than :data:`RECORD_DAYS` ago go."""
    try:
        folder = local_folder(root, layout.CLAUDE_AGENTS_DIR)
    except OSError:
        return []
    out = []
    old = time.time() - RECORD_DAYS * 86400
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        r = load_agent_record(root, p.stem)
        try:
            if r and r.get("done") and p.stat().st_mtime < old:
                p.unlink()
                continue
        except OSError:
            continue
        if r:
            out.append(r)
    return out
