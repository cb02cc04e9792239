"""Whether two proposals say the same fact (their terms, their negations, their readers):
repeats join one waiting item, and what memory holds already is not filed again."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import files, layout
from ..analysis import normalize, tokens
from ..errors import VaultmemError
from ..parse.document import parse_document, plain
from .items import INBOX_DIR, Item, MAX_SESSIONS, SAME_TERMS, SCOPE_KEYS, now_stamp

if TYPE_CHECKING:
    from .gate import Inbox


_NEGATION = re.compile(r"\b(?:not|no|never|nor|none|without|cannot)\b|n't|不|没|無|无|未")


@dataclass(frozen=True)
class Sameness:
    """What tells one fact's text from another's: its normalised characters, its index
    terms, the terms that hold a digit, and whether it says no. Near-equal texts share
    most terms (:data:`SAME_TERMS`) but never differ in a number (a changed port is a new
    fact) or in saying no (stopwords drop "not": "we use npm" and "we do not use npm"
    have the same terms)."""

    key: str
    terms: frozenset
    digits: frozenset
    negated: bool

    @classmethod
    def of(cls, text: str) -> "Sameness":
        folded = normalize(text or "")
        terms = frozenset(tokens(text or ""))
        return cls(re.sub(r"\W+", "", folded), terms, frozenset(t for t in terms if any(c.isdigit() for c in t)),
                   bool(_NEGATION.search(folded)))

    def near(self, other: "Sameness") -> bool:
        if self.key and self.key == other.key:
            return True
        if not self.terms or not other.terms or self.digits != other.digits or self.negated != other.negated:
            return False
        return len(self.terms & other.terms) / len(self.terms | other.terms) >= SAME_TERMS


def same_fact(a: str, b: str) -> bool:
    """Whether two texts state the same fact: equal once normalised, or near-equal."""
    return Sameness.of(a).near(Sameness.of(b))


def readers_of(note: Any) -> tuple:
    """Who a note (or a proposed one) is for: its scope, agent and project."""
    note = note if isinstance(note, dict) else {}
    return (str(note.get("scope") or "global"), *(str(note.get(k) or "") for k in SCOPE_KEYS[1:]))


class Known:
    """What one filing compares its proposals with, read once, when first needed: the
    active notes of memory and the ADD items waiting (and those this filing writes)."""

    def __init__(self, inbox: "Inbox") -> None:
        self.inbox = inbox
        self._notes: list[tuple[str, tuple, Sameness]] | None = None
        self._waiting: list[tuple[Item, Sameness]] | None = None
        self._new: set[str] = set()

    def notes(self) -> list[tuple[str, tuple, Sameness]]:
        if self._notes is None:
            self._notes = []
            root = self.inbox.root
            folder = root / layout.MEMORIES_DIR
            for p in sorted(folder.glob("*.md")) if folder.is_dir() else []:
                rel = f"{layout.MEMORIES_DIR}/{p.name}"
                try:
                    doc = parse_document(files.read_vault_text(root, rel), rel, require_frontmatter=False, fast=True)
                except (VaultmemError, OSError):
                    continue
                meta = plain(doc.meta) if isinstance(doc.meta, dict) else {}
                if str(meta.get("status") or "active") != "active":
                    continue
                body = "".join(doc.lines[doc.body_start:])
                self._notes.append((rel, readers_of(meta), Sameness.of(body)))
        return self._notes

    def held(self, item: Item) -> str | None:
        """The active note that already holds what the ADD ``item`` proposes, for its
        readers (a global note holds it for everyone), if one does."""
        same, readers = Sameness.of(item.text), readers_of(item.meta.get("note"))
        for rel, theirs, other in self.notes():
            if (theirs[0] == "global" or theirs == readers) and same.near(other):
                return rel
        return None

    def noted(self, item: Item, rel: str) -> None:
        """A note this filing writes (a trusted agent's fact approved at once)."""
        self.notes().append((rel, readers_of(item.meta.get("note")), Sameness.of(item.text)))

    def waiting(self) -> list[tuple[Item, Sameness]]:
        if self._waiting is None:
            self._waiting = [(i, Sameness.of(i.text)) for i in self.inbox.items(fast=True)
                             if i.op == "add" and i.path.startswith(f"{INBOX_DIR}/")]
        return self._waiting

    def waiting_twin(self, item: Item) -> Item | None:
        """The oldest waiting ADD the ``item`` repeats: the same or near-equal text, for the
        same readers, said by the same kind of author, flagged alike. Only an item as
        vaultmem filed it is joined (a changed one waits for a human as it is)."""
        same, note = Sameness.of(item.text), item.meta.get("note") or {}
        for other, theirs in self.waiting():
            mine = other.meta.get("note") if isinstance(other.meta.get("note"), dict) else {}
            if (readers_of(mine) != readers_of(note) or mine.get("author_kind") != note.get("author_kind")
                    or bool(other.flags) != bool(item.flags) or other.quarantined != item.quarantined
                    or not same.near(theirs)):
                continue
            if other.id in self._new:
                return other
            try:
                full = self.inbox.get(other.id)  # read as it will be written back
            except VaultmemError:
                continue
            if not self.inbox.filed(full).changed:
                return full
        return None

    def filing(self, item: Item) -> None:
        self.waiting().append((item, Sameness.of(item.text)))
        self._new.add(item.id)

    def replace(self, old: Item, new: Item) -> None:
        self._waiting = [(new if i.id == old.id else i, s) for i, s in self.waiting()]

    def item(self, iid: str) -> Item:
        return next(i for i, _ in self.waiting() if i.id == iid)


def joined_item(item: Item, session: str | None, proposer: str) -> Item:
    """A waiting item seen again: its count, the sessions and proposers that saw it, when
    first and last. Its provenance (who filed it, when, from which session) stays."""
    meta = dict(item.meta)
    seen = meta.get("seen")
    sessions = [str(x) for x in meta.get("sessions") or ([meta["session"]] if meta.get("session") else [])]
    if session and session not in sessions:
        sessions.append(session)
    by = [str(x) for x in meta.get("seen_by") or [item.proposed_by]]
    meta.update(seen=(int(seen) if str(seen).isdigit() else 1) + 1, sessions=sessions[-MAX_SESSIONS:],
                seen_by=by + ([proposer] if proposer not in by else []),
                first_seen=meta.get("first_seen") or meta.get("proposed"), last_seen=now_stamp())
    return Item(item.id, item.path, item.op, item.status, meta, item.text, item.flags)
