"""What the facade's reads and writes hand back: who acts (:class:`Actor`), what a change
did (:class:`Change`), a role page and its entries (:class:`PageInfo`, :class:`Entry`), a note
(:class:`NoteInfo`) and the fields a note is written with (:class:`NoteFields`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from dataclasses import fields as _fields
from typing import Any

from . import SECTIONS


@dataclass(frozen=True)
class Actor:
    """Who makes a change: an agent (``--as``) or the human at the keyboard."""

    name: str
    kind: str = "agent"  # "agent" | "human"
    email: str | None = None

    @property
    def is_human(self) -> bool:
        return self.kind == "human"

    def git_identity(self) -> tuple[str, str]:
        if self.email:
            return self.name, self.email
        return self.name, f"{self.name.replace(' ', '-')}@agents.vaultmem.invalid"


@dataclass
class Entry:
    """One entry of a role page: a working-memory line, a project-context bullet or a
    sub-agent record. ``id`` is the Obsidian block id (``m-…``) a link can point at."""

    section: str
    text: str
    line: int
    id: str | None = None
    date: str | None = None
    project: str | None = None
    title: str | None = None
    fields: dict[str, str] | None = None

    def link(self, page_path: str) -> str | None:
        if not self.id:
            return None
        return f"[[{page_path.removesuffix('.md')}#^{self.id}]]"

    def to_dict(self, page_path: str | None = None) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if v is not None}
        if page_path and self.id:
            d["link"] = self.link(page_path)
        return d


@dataclass
class PageInfo:
    """A role page as the facade reports it."""

    name: str
    path: str
    meta: dict[str, Any]
    lang: str
    entries: list[Entry] = field(default_factory=list)
    extra_sections: list[str] = field(default_factory=list)

    @property
    def projects(self) -> list[str]:
        value = self.meta.get("projects")
        if value in (None, ""):
            return []
        return [str(x) for x in value] if isinstance(value, list) else [str(value)]

    def to_dict(self) -> dict[str, Any]:
        by_section: dict[str, list] = {s: [] for s in SECTIONS}
        for e in self.entries:
            by_section[e.section].append(e.to_dict(self.path))
        return {
            "name": self.name,
            "path": self.path,
            "lang": self.lang,
            "frontmatter": self.meta,
            "sections": by_section,
            "extra_sections": self.extra_sections,
        }


@dataclass
class NoteInfo:
    """A memory note as read: its ``slug``, vault ``path``, frontmatter ``meta`` and ``body``."""

    slug: str
    path: str
    meta: dict[str, Any]
    body: str

    def to_dict(self) -> dict[str, Any]:
        return {"slug": self.slug, "path": self.path, "frontmatter": self.meta, "body": self.body}


@dataclass
class Change:
    """What one mutation did: the commit it made (None when nothing changed)."""

    action: str
    paths: list[str]
    commit: str | None
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    # what the change kept out of the vault (secrets replaced by placeholders), for the user
    warnings: list[str] = field(default_factory=list, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out = {"action": self.action, "changed": self.commit is not None, "commit": self.commit,
               "paths": self.paths, "message": self.message, **self.details}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


@dataclass
class NoteFields:
    """What a memory note says about its fact, besides the fact itself: one place for
    the fields that ``remember``, ``retain`` items and inbox edits all take. None means
    "use the default" (see :func:`vaultmem.notes.prepare`)."""

    type: str
    name: str | None = None
    description: str | None = None
    importance: float | None = None
    confidence: float | None = None
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    key: str | None = None
    scope: str | None = None
    agent: str | None = None
    project: str | None = None
    author: str | None = None
    author_kind: str | None = None
    source: str | None = None
    said: str | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in _fields(cls))

    @classmethod
    def of(cls, meta: dict[str, Any], **changes: Any) -> NoteFields:
        """The fields of a stored note's (or inbox item's) frontmatter, with ``changes``."""
        values = {k: meta.get(k) for k in cls.names()}
        values["tags"] = list(meta.get("tags") or [])
        values["aliases"] = list(meta.get("aliases") or [])
        values.update(changes)
        return cls(**values)
