"""Memory that disagrees with itself, found for a human and never resolved here.

Seed 003: a credential in the store carried one mis-heard character; three other
sources agreed with each other and not with it; search returned the wrong value with
full confidence, because search worked as designed. What caught it was a check across
sources. This module makes two such checks over the vault's files:

- **same key**: active notes with the same ``key`` in the same scope whose values
  differ. vaultmem's own writes never leave two (a newer note with a key supersedes the
  older, ``notes.plan_add``), but a note written by hand in Obsidian, or two clones that
  each wrote the key and were merged by ``sync``, do.
- **outlier**: a keyed note's value — a code, an identifier, a number of six characters
  or more — where at least ``min_sources`` other sources (notes, page entries, log
  entries, decisions) hold one variant of it, one character changed, added, dropped or
  two swapped, and fewer of them hold the note's own. Only a note with a ``key`` and one
  such code (or a ``value`` field) states one value; a note listing several names several
  things, and a variant the note holds too is another thing it names, not a slip.

A note's value is its ``value`` field when it has one, else the codes and numbers in
its text (``8080``, ``5821-Q7``), else its words (stemmed, common words left out): two
notes agree when their values are the same. Archived and superseded notes, the inbox
and the journal are not sources: an older value is history, not a disagreement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import files, layout, walk
from .errors import VaultmemError
from .parse.records import records

MIN_SOURCES = 2  # other sources that must agree on a variant before a note's value is called an outlier
MIN_CODE = 6  # characters: shorter codes and numbers (ports, years, counts) differ by design too often
_CODE = re.compile(r"(?<![\w.\-/])(?=[\w.\-/]*\d)\w[\w.\-/]*\w(?![\w\-/])", re.ASCII)
_DATE = re.compile(r"\d{4}-\d\d-\d\d|\d{4}/\d\d?/\d\d?|\d\d?:\d\d")
SKIPPED = (layout.ARCHIVE_DIR, layout.INBOX_DIR, layout.JOURNAL_DIR)


@dataclass
class Conflict:
    """One disagreement: ``kind`` ``same-key`` or ``outlier``; ``notes`` the notes and
    sources involved, each with its ``path``, ``value`` and who wrote it."""

    kind: str
    key: str | None
    message: str
    notes: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "message": self.message, "notes": self.notes,
                "sources": self.sources}


@dataclass
class Report:
    """What ``find`` found: the ``conflicts`` and the files it could not read
    (``skipped_files``: ``path``, ``line``, ``message``)."""

    conflicts: list[Conflict]
    skipped_files: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"conflicts": [c.to_dict() for c in self.conflicts], "count": len(self.conflicts)}


def codes(text: str) -> list[str]:
    """The codes and numbers in ``text`` that can be told apart by one character: at
    least ``MIN_CODE`` characters holding a digit; dates and times left out."""
    return sorted({m.group(0) for m in _CODE.finditer(text)
                   if len(m.group(0)) >= MIN_CODE and not _DATE.fullmatch(m.group(0))})


def value_of(meta: dict, body: str) -> tuple[str, ...]:
    """What a note states, to compare (see the module docstring)."""
    from .analysis import tokens

    if meta.get("value") not in (None, ""):
        return (str(meta["value"]).strip(),)
    found = [m.group(0) for m in _CODE.finditer(body) if not _DATE.fullmatch(m.group(0))]
    if found:
        return tuple(sorted(set(found)))
    return tuple(sorted(set(tokens(body))))


def _one_edit_keys(code: str) -> set[str]:
    """The code with one character left out, at each place: two codes one edit or one
    swap apart share such a key (the deletion neighbourhood of symmetric-delete search)."""
    return {code[:i] + code[i + 1:] for i in range(len(code))} | {code}


def find(root: Path, min_sources: int = MIN_SOURCES) -> Report:
    """Every disagreement in the vault at ``root``, and the files that could not be read:
    they are named, never guessed at."""
    notes: list[tuple[str, dict, str, dict]] = []  # (path, meta, body, who)
    sources: dict[str, set[str]] = {}  # code → the documents that hold it
    unread: list[dict] = []
    for rel in sorted(walk.scan(root)):
        if rel.startswith(tuple(f"{d}/" for d in SKIPPED)):
            continue
        try:
            text = files.read_vault_text(root, rel)
            docs = records(rel, text)
        except VaultmemError as exc:
            unread.append({"path": rel, "line": exc.line, "message": exc.message})
            continue
        except (FileNotFoundError, NotADirectoryError):
            continue
        for d in docs:
            if d.status != "active" or d.kind in ("inbox", "archive", "journal"):
                continue
            where = d.link if d.entry_id or d.line is None else f"{d.path}:{d.line}"  # a log entry: its line
            for c in codes(f"{d.title}\n{d.text}"):
                sources.setdefault(c, set()).add(where)
            if d.kind == "note":
                notes.append((d.path, d.meta, d.text, {"author": d.meta.get("author"),
                                                       "source": d.meta.get("source"), "link": where}))
    return Report(_same_key(notes) + _outliers(notes, sources, min_sources), unread)


def _same_key(notes) -> list[Conflict]:
    groups: dict[tuple, list] = {}
    for path, meta, body, who in notes:
        if meta.get("key"):
            scope = meta.get("scope") or "global"
            groups.setdefault((meta["key"], scope, meta.get("agent"), meta.get("project")), []).append(
                (path, meta, body, who))
    out = []
    for (key, *_scope), members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        values = {value_of(meta, body) for _p, meta, body, _w in members}
        if len(members) < 2 or len(values) < 2:
            continue
        listed = [{"path": p, "value": " ".join(value_of(m, b)), "author": w["author"], "source": w["source"],
                   "confirmed": m.get("confirmed") or m.get("created")} for p, m, b, w in members]
        out.append(Conflict("same-key", key, f"{len(members)} active notes state key {key!r} with {len(values)} "
                            f"different values: " + "; ".join(f"{x['path']} says {x['value']!r}" for x in listed),
                            notes=listed))
    return out


def _outliers(notes, sources: dict[str, set[str]], min_sources: int) -> list[Conflict]:
    by_key: dict[str, set[str]] = {}
    for c in sources:
        for k in _one_edit_keys(c):
            by_key.setdefault(k, set()).add(c)
    out = []
    for path, meta, body, who in notes:
        if not meta.get("key"):
            continue  # a note with a key states one value; any other is a record of what happened
        held = set(codes(f"{meta.get('name') or ''}\n{body}"))
        stated = [str(meta["value"]).strip()] if meta.get("value") not in (None, "") else sorted(held)
        if len(stated) != 1 or len(stated[0]) < MIN_CODE:
            continue  # a list of codes, or none long enough to tell a slip from another value
        for mine in stated:
            support = sources.get(mine, set()) - {who["link"]}
            # a variant the note holds too is another thing it names (build 1101 and 1102), not a slip
            variants = {c for k in _one_edit_keys(mine) for c in by_key.get(k, ()) if c not in held}
            for other in sorted(variants):
                witnesses = sources[other] - {who["link"]} - sources.get(mine, set())
                if len(witnesses) >= min_sources and len(witnesses) > len(support):
                    out.append(Conflict(
                        "outlier", meta.get("key"),
                        f"{path} says {mine!r}; {len(witnesses)} other sources say {other!r} "
                        f"({', '.join(sorted(witnesses)[:5])}{' …' if len(witnesses) > 5 else ''})"
                        + (f", {len(support)} agree with it" if support else ""),
                        notes=[{"path": path, "value": mine, "author": who["author"], "source": who["source"]}],
                        sources=[{"link": w, "value": other} for w in sorted(witnesses)]))
    return out
