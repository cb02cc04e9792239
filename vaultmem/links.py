"""Wikilinks between the vault's files, resolved the way Obsidian resolves them, for
``vaultmem links`` (and for checks that look for broken ones). Read only.

A link is ``[[target]]``, ``[[target|shown text]]``, ``[[target#Heading]]`` or
``[[target#^block-id]]`` (``![[…]]`` embeds too). Its target is found as Obsidian finds
it: a path from the vault's top, with or without ``.md`` (``memories/backend-port``);
else a file name anywhere in the vault (``backend-port``), the shortest path first when
several share it; else — vaultmem's addition — a note or page whose frontmatter
``aliases`` holds it. A ``#^block-id`` must be a block id that the target holds (``^m-…``
at a line's end) — or, for a role page, a block that ``vaultmem compact`` moved to
``archive/agents/<role>-<year>.md`` (the link resolves there, ``moved_from`` naming the
page); a heading must be one of its headings. Links inside code (fenced
blocks and `inline code`) are not links.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import files, layout, walk
from .errors import VaultmemError
from .parse.document import parse_document, plain
from .parse.wikilink import wikilinks

_BLOCK_ID = re.compile(r"\s\^([A-Za-z0-9-]+)\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass
class Link:
    source: str  # the file the link is in
    line: int
    text: str  # the link as written
    target: str | None  # the file it resolves to; None: broken
    anchor: str | None  # "#Heading" or "#^block-id"
    problem: str | None = None
    moved_from: str | None = None  # the role page a compacted block left (target: its archive file)

    def to_dict(self) -> dict[str, Any]:
        out = {"source": self.source, "line": self.line, "link": self.text, "target": self.target,
               "anchor": self.anchor, "problem": self.problem}
        if self.moved_from:
            out["moved_from"] = self.moved_from
        return out


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip().casefold()


class LinkMap:
    """Every Markdown file of a vault, and what each one links to."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths = sorted(p for p in walk.scan(root) if p.endswith(".md"))
        self.by_path = {_fold(p.removesuffix(".md")): p for p in self.paths}
        self.by_name: dict[str, list[str]] = {}
        for p in self.paths:
            self.by_name.setdefault(_fold(p.rsplit("/", 1)[-1].removesuffix(".md")), []).append(p)
        for found in self.by_name.values():
            found.sort(key=lambda p: (p.count("/"), len(p), p))
        self.texts: dict[str, str] = {}
        self.unread: list[dict[str, Any]] = []
        self.by_alias: dict[str, str] = {}
        for p in self.paths:
            try:
                text = files.read_vault_text(root, p)
            except (VaultmemError, FileNotFoundError, NotADirectoryError) as exc:
                self.unread.append({"path": p, "line": getattr(exc, "line", None), "message": str(exc)})
                continue
            self.texts[p] = text
            if text.startswith("---"):
                try:
                    meta = plain(parse_document(text, p, require_frontmatter=False, fast=True).meta) or {}
                except VaultmemError:
                    meta = {}
                aliases = meta.get("aliases") or []
                for alias in aliases if isinstance(aliases, list) else [aliases]:
                    self.by_alias.setdefault(_fold(str(alias)), p)
        self._links: dict[str, list[Link]] = {}

    def resolve(self, target: str, source: str) -> str | None:
        """The file ``target`` (the part of a link before ``#`` and ``|``) names, or None;
        an empty target is the source itself (``[[#^block]]``)."""
        want = _fold(target.removesuffix(".md"))
        if not want:
            return source
        if want in self.by_path:
            return self.by_path[want]
        found = self.by_name.get(want.rsplit("/", 1)[-1], [])
        if "/" in want:  # a partial path: the files it ends
            found = [p for p in found if _fold(p.removesuffix(".md")).endswith("/" + want)]
        if found:
            return found[0]  # the shortest path first, as Obsidian does
        return self.by_alias.get(want)

    def _anchor_problem(self, target: str, anchor: str) -> str | None:
        text = self.texts.get(target, "")
        if anchor.startswith("#^"):
            block = anchor[2:]
            if not any((m := _BLOCK_ID.search(line)) and m.group(1) == block for line in text.splitlines()):
                return f"{target} has no block ^{block}"
            return None
        heading = _fold(anchor[1:])
        if heading and not any((m := _HEADING.match(line)) and _fold(m.group(1)) == heading
                               for line in text.splitlines()):
            return f"{target} has no heading {anchor[1:]!r}"
        return None

    def _moved_block(self, target: str, anchor: str) -> str | None:
        """The archive file that holds a block ``vaultmem compact`` moved off role page
        ``target`` (``archive/agents/<role>-<year>.md``), or None."""
        if not anchor.startswith("#^") or not target.startswith(f"{layout.AGENTS_DIR}/") or target.count("/") != 1:
            return None
        stem = target.removeprefix(f"{layout.AGENTS_DIR}/").removesuffix(".md")
        years = re.compile(re.escape(f"{layout.ARCHIVED_PAGES_DIR}/{stem}-") + r"\d{4}\.md")
        for path in sorted((p for p in self.paths if years.fullmatch(p)), reverse=True):
            if self._anchor_problem(path, anchor) is None:
                return path
        return None

    def links_from(self, source: str) -> list[Link]:
        if source in self._links:
            return self._links[source]
        out: list[Link] = []
        for n, raw, anchor, written in wikilinks(self.texts.get(source, "")):
            target = self.resolve(raw, source)
            problem = None if target else f"no file is named {raw!r}"
            moved_from = None
            if target and anchor:
                problem = self._anchor_problem(target, anchor)
                moved = self._moved_block(target, anchor) if problem else None
                if moved:
                    target, moved_from, problem = moved, target, None
            out.append(Link(source, n, written, target, anchor, problem, moved_from))
        self._links[source] = out
        return out

    def backlinks(self, target: str) -> list[Link]:
        return [link for p in self.paths if p != target for link in self.links_from(p) if link.target == target]

    def broken(self) -> list[Link]:
        return [link for p in self.paths for link in self.links_from(p) if link.problem]


def find(root: Path, name: str) -> tuple[str, LinkMap]:
    """The vault file ``name`` means: a path (``memories/x``, ``agents/前端审查.md``), a
    note's slug, a role's name, or anything a link could say. NotFound when none."""
    from .errors import NotFound

    m = LinkMap(root)
    got = m.resolve(name, "") or m.resolve(f"agents/{name}", "") or m.resolve(f"memories/{name}", "")
    if not got:
        raise NotFound(f"no file, note or role page is named {name!r}", field="target",
                       hint="give a path (memories/SLUG, agents/ROLE), a note's slug or a role's name")
    return got, m
