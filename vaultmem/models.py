"""Small value types shared by the pipeline stages and the facade.

Each has ``to_dict()`` giving the stable JSON shape the CLI prints with ``--json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SECTIONS = ("context", "work", "subagents")
AUTHOR_KINDS = ("user", "agent", "third_party", "unknown")
SCOPES = ("global", "agent", "project")


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

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "changed": self.commit is not None, "commit": self.commit,
                "paths": self.paths, "message": self.message, **self.details}
