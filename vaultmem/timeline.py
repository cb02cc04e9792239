"""What happened, in order: role-page entries (dated), decisions, live-log entries and
memory notes (by when they were created or said), for ``vaultmem timeline``. Read only.

For one role: its page's entries, the log and decision entries it signed, and the notes
scoped to it; for the whole vault: everything. A line that cannot be read is named in
``skipped_files`` (a broken page), never guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import files, layout, walk
from .errors import VaultmemError
from .parse.logline import entry_text, readable_entries
from .parse.records import records


@dataclass
class Event:
    when: str  # an ISO day or time
    kind: str  # entry | decision | log | note
    who: str | None
    what: str
    link: str

    def to_dict(self) -> dict[str, Any]:
        return {"when": self.when, "kind": self.kind, "who": self.who, "what": self.what, "link": self.link}


def _first_line(text: str, limit: int = 160) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def events(root: Path, role: str | None = None, since: str | None = None) -> tuple[list[Event], list[dict]]:
    """The events (oldest first) and the files that could not be read."""
    out: list[Event] = []
    unread: list[dict] = []
    logs = tuple(f"{d}/" for d in layout.LOG_DIRS.values())
    for rel in sorted(walk.scan(root)):
        is_log = rel.startswith(logs) and rel.count("/") == 2
        is_page = rel.startswith(f"{layout.AGENTS_DIR}/") and rel.count("/") == 1
        is_note = rel.startswith(f"{layout.MEMORIES_DIR}/")
        if not (is_log or is_page or is_note):
            continue
        if is_page and role is not None and rel != layout.page_path(role):
            continue
        try:
            text = files.read_vault_text(root, rel)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except VaultmemError as exc:
            unread.append({"path": rel, "line": exc.line, "message": exc.message})
            continue
        if is_log:
            kind = "decision" if rel.startswith(f"{layout.LOG_DIRS['decisions']}/") else "log"
            for n, e in readable_entries(text):
                if role is None or e.agent == role:
                    out.append(Event(e.ts, kind, e.agent, _first_line(entry_text(e)), f"{rel}:{n}"))
            continue
        try:
            docs = records(rel, text)
        except VaultmemError as exc:
            unread.append({"path": rel, "line": exc.line, "message": exc.message})
            continue
        for d in docs:
            if is_note and (d.status != "active" or (role is not None and d.agent != role)):
                continue
            when = str(d.meta.get("said") or d.meta.get("created") or d.date or "") if is_note else (d.date or "")
            if when:
                out.append(Event(when, "note" if is_note else "entry", d.agent, _first_line(d.title if is_note else d.text),
                                 d.link))
    if since:
        out = [e for e in out if e.when[:10] >= since]
    out.sort(key=lambda e: (e.when, e.link))
    return out, unread
