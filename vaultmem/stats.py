"""A vault at a glance, and how well its memory serves (``vaultmem stats``). Read only.

Counts: notes by type and status, role pages' sizes against their budget, what waits
for a human (and the inbox's age: its oldest item, those past ``review.nudge_days``), log entries per agent, the index's and the vectors' size on disk. And three
figures of seed 002's observability, from the local usage data (:mod:`vaultmem.forgetting`
records each brief and search: when, who, a fingerprint of what was asked, what it cited)
and from the notes:

- **recall hit rate** — of the briefs that cited anything, the share with at least one
  cited item used afterwards: found again by a later search, or a note confirmed after
  the brief;
- **repeated-question rate** — of the distinct questions (briefs' tasks, searches, the
  live log's ``question`` entries, told apart by their index terms), the share asked in
  more than one session (records at least :data:`SESSION_GAP_MINUTES` apart);
- **correction rate** — of the agent-written notes, the share a user's note superseded.

The usage data is per machine: another machine's briefs are not counted.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from . import compaction, files, layout, pages
from .forgetting import instant
from .usage import fingerprint, usage_data
from .analysis import estimate_tokens
from .errors import VaultmemError
from .parse import parse_page
from .parse.document import parse_document, plain
from .parse.logline import entry_text, readable_entries

SESSION_GAP_MINUTES = 30  # records of one question closer than this are one session


def _notes(root: Path, folder: str, unread: list) -> dict[str, dict]:
    out = {}
    path = root / folder
    names = sorted(e.name for e in os.scandir(path) if e.name.endswith(".md")) if path.is_dir() else []
    for name in names:
        rel = f"{folder}/{name}"
        try:
            doc = parse_document(files.read_vault_text(root, rel), rel, require_frontmatter=False, fast=True)
        except VaultmemError as exc:
            unread.append({"path": rel, "line": exc.line, "message": exc.message})
            continue
        except (FileNotFoundError, NotADirectoryError):
            continue
        out[rel] = plain(doc.meta) if isinstance(doc.meta, dict) else {}
    return out


def _size(folder: Path, only: str | None = None) -> int:
    total = 0
    for top, _dirs, names in os.walk(folder):
        if only and only not in Path(top).parts:
            continue
        for name in names:
            try:
                total += os.stat(os.path.join(top, name)).st_size
            except OSError:
                pass
    return total


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def usage_records(root: Path) -> list[dict]:
    """The usage data's records, oldest first: ``{"t", "via", "ids", "q", "agent"}``
    (``q``, ``agent``: None in records written before they were kept), those this process
    holds too (:func:`usage.hold`)."""
    out = []
    for raw in (usage_data(root) or b"").splitlines():
        try:
            rec = json.loads(raw)
            t = instant(rec["t"])
        except (ValueError, KeyError, TypeError):
            continue
        if t is None:
            continue
        ids = rec.get("ids") if isinstance(rec.get("ids"), list) else []
        out.append({"t": t, "via": rec.get("via"), "ids": [str(x) for x in ids], "q": rec.get("q"),
                    "agent": rec.get("agent")})
    out.sort(key=lambda r: r["t"])
    return out


def collect(root: Path, config, waiting: dict[str, int]) -> dict[str, Any]:
    """Everything ``vaultmem stats`` shows (``waiting``: inbox items and pending
    delegations, counted by the caller)."""
    unread: list[dict] = []
    active = _notes(root, layout.MEMORIES_DIR, unread)
    archived = _notes(root, layout.ARCHIVED_NOTES_DIR, unread)
    by_type: dict[str, int] = {}
    by_status: dict[str, int] = {}
    for rel, meta in [*active.items(), *archived.items()]:
        status = str(meta.get("status") or "active")
        if rel.startswith(f"{layout.ARCHIVE_DIR}/") and status == "active":
            status = "archived"
        by_status[status] = by_status.get(status, 0) + 1
        if status == "active":
            type_ = str(meta.get("type") or "untyped")
            by_type[type_] = by_type.get(type_, 0) + 1
    # role pages against their budget
    budget = dict(config.page_entries)
    page_rows = []
    for role in pages.roles(root):
        rel = pages.page_rel(root, role)
        row: dict[str, Any] = {"role": role, "path": rel}
        try:
            text = files.read_vault_text(root, rel)
            page = parse_page(text, rel, stem=role)
        except (VaultmemError, FileNotFoundError) as exc:
            unread.append({"path": rel, "line": getattr(exc, "line", None), "message": str(exc)})
            continue
        row["bytes"] = len(text.encode("utf-8"))
        row["entries"] = {s: sum(1 for e in page.entries if e.section == s) for s in ("context", "work", "subagents")}
        row["tokens"] = estimate_tokens(text)
        row["over_budget"] = [r["section"] for r in compaction.budget_rows(root, role, budget, config.page_tokens)
                              if r["over_budget"]]
        page_rows.append(row)
    # the logs
    logs: dict[str, dict[str, int]] = {}
    log_questions: list[tuple[_dt.datetime, str]] = []
    for kind, folder in layout.LOG_DIRS.items():
        path = root / folder
        for p in sorted(path.glob("*.md")) if path.is_dir() else []:
            try:
                text = files.read_vault_text(root, f"{folder}/{p.name}")
            except (VaultmemError, FileNotFoundError):
                continue
            for _n, e in readable_entries(text):
                logs.setdefault(e.agent, {"live": 0, "decisions": 0})[kind] += 1
                said = entry_text(e).strip()
                if kind == "live" and (e.type == "question" or said.endswith(("?", "？"))):
                    t = instant(e.ts)
                    fp = fingerprint(said)
                    if t and fp:
                        log_questions.append((t, fp))
    inbox = inbox_figures(_notes(root, layout.INBOX_DIR, []), config.nudge_days)
    index_dir = root / layout.INDEX_DIR
    index = {"bytes": _size(index_dir), "vectors_bytes": _size(index_dir, only=layout.INDEX_VECTORS)}
    return {"notes": {"active": len(active), "by_type": dict(sorted(by_type.items())),
                      "by_status": dict(sorted(by_status.items()))},
            "pages": page_rows, "waiting": waiting, "inbox": inbox, "logs": dict(sorted(logs.items())), "index": index,
            "recall": recall_figures(usage_records(root), active, log_questions),
            "corrections": corrections(active, archived),
            "skipped_files": unread}


def inbox_figures(items: dict[str, dict], nudge_days: float, now: _dt.datetime | None = None) -> dict[str, Any]:
    """The review inbox's size and age: how many items wait, when the oldest was filed
    and how many days ago, and how many have waited longer than ``review.nudge_days``
    (``items``: each waiting file's frontmatter; one whose filing time cannot be read is
    counted as waiting, not as old)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    times = sorted(t for meta in items.values() if (t := instant(meta.get("proposed"))) is not None)
    oldest = times[0] if times else None
    cut = now - _dt.timedelta(days=nudge_days)
    return {"waiting": len(items), "oldest": oldest.strftime("%Y-%m-%dT%H:%M:%SZ") if oldest else None,
            "oldest_days": round((now - oldest).total_seconds() / 86400, 2) if oldest else None,
            "nudge_days": nudge_days if nudge_days != int(nudge_days) else int(nudge_days),
            "over_nudge": sum(1 for t in times if t < cut),
            "seen_again": sum(1 for meta in items.values() if str(meta.get("seen") or 1) not in ("0", "1"))}


def recall_figures(records: list[dict], notes: dict[str, dict], log_questions: list) -> dict[str, Any]:
    """The recall hit rate and the repeated-question rate (see the module's docstring)."""
    last_searched: dict[str, _dt.datetime] = {}  # a later search is one after the brief: the last decides
    for r in records:
        if r["via"] == "search":
            for i in r["ids"]:
                if i not in last_searched or r["t"] > last_searched[i]:
                    last_searched[i] = r["t"]
    briefs = [r for r in records if r["via"] == "brief"]
    cited = [r for r in briefs if r["ids"]]
    hits = 0
    for r in cited:
        for i in r["ids"]:
            confirmed = instant((notes.get(i) or {}).get("confirmed"))
            if (confirmed and confirmed > r["t"]) or (i in last_searched and last_searched[i] > r["t"]):
                hits += 1
                break
    asked: dict[str, list[_dt.datetime]] = {}
    for r in records:
        if r["q"]:
            asked.setdefault(str(r["q"]), []).append(r["t"])
    for t, fp in log_questions:
        asked.setdefault(fp, []).append(t)
    repeated = 0
    gap = _dt.timedelta(minutes=SESSION_GAP_MINUTES)
    for times in asked.values():
        times.sort()
        if any(b - a >= gap for a, b in zip(times, times[1:])):
            repeated += 1
    return {"briefs": len(briefs), "briefs_citing": len(cited), "briefs_used": hits,
            "hit_rate": _rate(hits, len(cited)), "questions": len(asked), "repeated_questions": repeated,
            "repeated_rate": _rate(repeated, len(asked)), "searches": sum(1 for r in records if r["via"] == "search")}


def corrections(active: dict[str, dict], archived: dict[str, dict]) -> dict[str, Any]:
    """Agent-written notes, and those a user's note superseded (by ``supersedes``)."""
    every = {**archived, **active}
    by_ref = {rel.removesuffix(".md").rsplit("/", 1)[-1]: meta for rel, meta in every.items()}
    agent_notes = [m for m in every.values() if str(m.get("author_kind") or "") == "agent"]
    corrected = set()
    for meta in every.values():
        if str(meta.get("author_kind") or "") != "user":
            continue
        olds = meta.get("supersedes") or []
        for old in olds if isinstance(olds, list) else [olds]:
            slug = str(old).removesuffix(".md").rsplit("/", 1)[-1]
            if str((by_ref.get(slug) or {}).get("author_kind") or "") == "agent":
                corrected.add(slug)
    return {"agent_notes": len(agent_notes), "corrected_by_user": len(corrected),
            "rate": _rate(len(corrected), len(agent_notes))}
