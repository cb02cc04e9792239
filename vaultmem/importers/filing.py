"""Filing what a source held: each item's stable key, what was filed before, and the
import itself — through the review gate, in commits of :data:`~.base.BATCH` items."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from .. import files, gitstore, guard, layout, notes
from ..errors import BadInput, VaultmemError
from ..models import Actor, Change, NoteFields
from ..names import check_name
from .base import BATCH, Found, KEY_MARK, PROGRESS_EVERY, Problem, REGISTRY, Read, SOURCES


# -- filing -----------------------------------------------------------------------------------
def filed_keys(root: Path) -> set[str]:
    """The import keys already in the vault: in waiting and decided inbox items, and in
    notes (an approved item's note keeps its ``source``)."""
    found: set[str] = set()
    for folder in (layout.INBOX_DIR, layout.ARCHIVED_INBOX_DIR, layout.MEMORIES_DIR, layout.ARCHIVED_NOTES_DIR):
        try:
            entries = list(os.scandir(root / folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if not entry.name.endswith(".md"):
                continue
            rel = f"{folder}/{entry.name}"
            try:
                text = files.read_vault_text(root, rel)
            except (OSError, VaultmemError):
                continue  # unreadable: the inbox lists it as a problem; it holds no key we can trust
            if "[import " in text:
                found.update(KEY_MARK.findall(text))
    return found


def _key(source: str, found: Found, body: str) -> str:
    """What makes an item the one it is: the source, where it belongs (the file within the
    source folder, the role, a JSON line's id) and its text as it would be stored, with
    each secret's placeholder read as its kind only (the placeholder's hash is local to a
    machine; the key must be the same on every clone)."""
    text = guard.PLACEHOLDER.sub(lambda m: m.group(0)[:-10] + m.group(0)[-1], body)
    text = " ".join(text.split())
    digest = hashlib.sha256(json.dumps([source, found.belongs, text], ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()[:16]


def _field_error(exc: VaultmemError) -> str:
    named = f"{exc.field}: " if exc.field and exc.field not in exc.message else ""
    return f"{named}{exc.message}: skipped"


def read(source: str, path: str | Path | None, types: tuple[str, ...], human: str | None = None,
         memory_dir: str | Path | None = None, vault_root: Path | None = None) -> Read:
    """Read a source (one of :data:`~.base.SOURCES`, as registered) into items, nothing
    checked or written."""
    found = REGISTRY.get(source)
    named = memory_dir not in (None, "")
    if named and not (found is not None and found.takes_memory_dir):
        raise BadInput("a memory folder is named only for claude-code", field="memory_dir")
    if found is None:
        raise BadInput(f"{source!r} is not a source vaultmem imports", field="source",
                       hint=f"one of {', '.join(SOURCES)}")
    return found.read(Path(path) if path not in (None, "") else None, types, human=human,
                      memory_dir=Path(memory_dir) if named else None, vault_root=vault_root)


def run(vault, source: str, path: str | Path | None, actor: Actor, dry_run: bool = False,
        memory_dir: str | Path | None = None, progress: Callable[[str], None] | None = None) -> Change:
    """Import ``source`` from ``path`` into ``vault``'s review inbox, filed by ``actor``
    in one commit; with ``dry_run`` nothing is written and the Change lists what would
    be filed. Items already filed (by their key) are counted, not filed again."""
    config = vault.config
    human = gitstore.human_actor(vault.root).name
    try:
        human = check_name(human, "author")
    except BadInput:
        human = None
    got = read(source, path, config.note_types, human, memory_dir, vault.root)
    say = progress or (lambda message: None)
    total = len(got.found)
    if total >= PROGRESS_EVERY:
        say(f"read {total:,} items from {got.root}")
    scrub = vault.writer.scrubber()
    # a problem quotes what it could not take (a field's value, a key): never a secret
    problems = [Problem(p.path, p.line, guard.without_secrets(p.message)) for p in got.problems]
    with contextlib.nullcontext() if dry_run else vault.writer.locked():
        existing = filed_keys(vault.root)
        proposals: list[dict] = []
        shown: list[dict] = []
        already: list[dict] = []
        seen: set[str] = set()
        for n, item in enumerate(got.found, 1):
            if total >= PROGRESS_EVERY and n % PROGRESS_EVERY == 0:
                say(f"checked {n:,} of {total:,} items")
            where = f"{source} {item.path}:{item.line}" + (f" ({item.note})" if item.note else "")
            name = item.name
            if name is not None:
                try:
                    notes.checked_name(name)
                except BadInput:
                    name = None  # a name that cannot be a file name: one is made from the text
            findings = len(scrub.findings)
            try:
                fields = NoteFields(type=item.type, name=name, description=item.description,
                                    importance=item.importance, confidence=item.confidence, tags=item.tags,
                                    aliases=item.aliases, key=item.key, agent=item.agent, project=item.project,
                                    author=item.author, author_kind=item.author_kind, source=where,
                                    said=item.said)
                meta, body = notes.prepare(item.text, actor, fields, config, scrub)
            except VaultmemError as exc:
                problems.append(Problem(item.path, item.line, guard.without_secrets(_field_error(exc))))
                continue
            key = _key(source, item, body)
            if key in existing or key in seen:
                del scrub.findings[findings:]  # nothing of it is written: its redactions go unsaid
                already.append({"key": key, "source": meta["source"]})
                continue
            seen.add(key)
            meta["source"] = f"{meta['source']} [import {key}]"
            proposals.append({"op": "add", "note": meta, "text": body})
            flags = guard.instruction_flags("\n".join([body, str(meta.get("name") or ""),
                                                       str(meta.get("description") or ""), *meta["aliases"]]))
            shown.append({"key": key, "source": meta["source"], "type": meta["type"], "name": meta["name"],
                          "description": meta["description"], "author": meta["author"],
                          "author_kind": meta["author_kind"], "scope": meta["scope"], "agent": meta["agent"],
                          "tags": meta["tags"], "quarantined": meta["author_kind"] == "third_party",
                          "flags": flags, "text": body})
        details: dict[str, Any] = {
            "source": source, "root": got.root, "dry_run": dry_run, "read": total, "new": len(proposals),
            "already": len(already), "skipped": [p.to_dict() for p in problems], "notes": got.notes,
            "quarantined": sum(1 for s in shown if s["quarantined"]), "flagged": sum(1 for s in shown if s["flags"]),
        }
        warnings = [f"{p}" for p in problems]
        if dry_run:
            message = f"import {source}: would file {len(proposals)} new items (dry run: nothing written)"
            return Change("import", [], None, message, {**details, "items": shown, "already_filed": already},
                          warnings=scrub.warnings() + warnings)
        if not proposals:
            message = f"import {source}: nothing new to file"
            return Change("import", [], None, message, {**details, "items": [], "already_filed": already},
                          warnings=scrub.warnings() + warnings)
        parts = [proposals[i:i + BATCH] for i in range(0, len(proposals), BATCH)]
        changes = []
        for n, part in enumerate(parts, 1):
            if len(parts) > 1:
                start = (n - 1) * BATCH
                say(f"filing items {start + 1:,}–{start + len(part):,} of {len(proposals):,} "
                    f"(commit {n} of {len(parts)})")
            elif len(proposals) >= PROGRESS_EVERY:
                say(f"filing {len(proposals):,} items in one commit")
            what = (f"{len(part)} imported item{'' if len(part) == 1 else 's'} ({source}"
                    + (f", part {n} of {len(parts)})" if len(parts) > 1 else ")"))
            changes.append(vault.inbox.file(actor, part, what=what, scrub=scrub))
    items = [item for change in changes for item in change.details["items"]]
    for item, extra in zip(items, shown):
        item.update(key=extra["key"], source=extra["source"])
    details.update(pending=sum(c.details["pending"] for c in changes),
                   approved=sum(c.details["approved"] for c in changes), items=items, already_filed=already,
                   commits=[c.commit for c in changes])
    last = changes[-1]  # its warnings are the whole import's: one scrubber read every item
    return Change("import", [p for c in changes for p in c.paths], last.commit,
                  "; ".join(c.message for c in changes), details, warnings=last.warnings + warnings)
