"""What every importer shares: the items and problems a source is read into, a source
folder read without following a link out of it, Markdown blocks, tags and names, and
the registry of sources."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .. import files, notes
from ..errors import BadInput, ParseError
from ..layout import path_text, undecodable
from ..names import check_name, slugify
from ..parse.document import parse_document


SOURCES = ("claude-code", "hermes", "basic-memory", "jsonl")
MAX_SOURCE_BYTES = 64 * 1024 * 1024  # a source file larger than this is not read at all
KEY_MARK = re.compile(r"\[import ([0-9a-f]{16})\]")
PROGRESS_EVERY = 250  # items between two progress reports
BATCH = 500  # items filed in one commit: a big import is filed in parts, each reported as it lands
HERMES_DELIMITER = "\n§\n"  # Hermes' tools/memory_tool.py ENTRY_DELIMITER

# Claude Code's four memory types (memdir/memoryTypes.ts) → (vault type, author_kind in
# the project's auto memory). user and feedback are what the user said about themselves
# and how they want work done; project and reference are Claude Code's own notes.
CLAUDE_TYPES = {
    "user": ("fact", "user"),
    "feedback": ("preference", "user"),
    "project": ("fact", "third_party"),
    "reference": ("fact", "third_party"),
}
# words another tool uses for a kind of memory → the vault's type (basic-memory
# categories, mem0 metadata types, JSON lines' type)
TYPE_WORDS = {
    "preference": "preference", "preferences": "preference", "pref": "preference", "likes": "preference",
    "feedback": "preference", "偏好": "preference", "喜好": "preference",
    "decision": "decision", "decisions": "decision", "choice": "decision", "决定": "decision", "决策": "decision",
    "fact": "fact", "facts": "fact", "note": "fact", "info": "fact", "observation": "fact", "insight": "fact",
    "idea": "fact", "事实": "fact", "信息": "fact",
    "failure+fix": "failure+fix", "fix": "failure+fix", "bug": "failure+fix", "issue": "failure+fix",
    "problem": "failure+fix", "lesson": "failure+fix", "故障": "failure+fix", "修复": "failure+fix",
    "procedure": "procedure", "method": "procedure", "technique": "procedure", "howto": "procedure",
    "how-to": "procedure", "process": "procedure", "step": "procedure", "workflow": "procedure",
    "流程": "procedure", "步骤": "procedure", "方法": "procedure",
    "episode": "episode", "event": "episode", "meeting": "episode", "事件": "episode",
}  # fmt: skip
# JSON-lines fields read (each documented in docs/import.md); any other is reported as ignored
JSONL_FIELDS = {"text", "memory", "content", "type", "category", "categories", "metadata", "tags", "name",
                "description", "aliases", "importance", "confidence", "key", "project", "agent", "agent_id",
                "author", "user_id", "author_kind", "source", "said", "created_at", "id"}

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
POINTER = re.compile(r"^\s*[-*+]\s+\[[^\]]*\]\(([^)\s]+)\)\s*(?:[—–:-]+\s*(.*))?$")
OBSERVATION = re.compile(r"^\s*[-*+]\s+\[([^\]\[]+)\]\s+(\S.*)$")
RELATION = re.compile(r"^\s*[-*+]\s+([^\s\[\]()#][^\[\]()#]*?)\s+\[\[([^\]]+)\]\](.*)$")
HASHTAG = re.compile(r"(?<![\w&/#])#([\w][\w/\-]*)")


@dataclass
class Problem:
    """A file, or a line of one, that was not imported, and why."""

    path: str
    line: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message}

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass
class Found:
    """One item read from a source, before it is checked: the text and the fields it
    maps to; ``belongs`` is what, beside the text, makes it the item it is (its key)."""

    path: str
    line: int
    text: str
    type: str
    author_kind: str
    belongs: str
    author: str | None = None
    agent: str | None = None
    name: str | None = None
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    said: str | None = None
    importance: Any = None
    confidence: Any = None
    key: str | None = None
    project: str | None = None
    note: str | None = None  # said after the file and line in ``source`` (a JSON line's own source)


@dataclass
class Read:
    """What a source gave: its items, what could not be read, where it was read from."""

    root: str
    found: list[Found] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was read, or ignored, worth saying


# -- reading files of a source folder, never through a link out of it -------------------------
class Folder:
    """A source folder: files under it are listed and read without following a link out
    of it, never a FIFO or device, and never more than :data:`MAX_SOURCE_BYTES`."""

    def __init__(self, root: Path, problems: list[Problem], skip: Path | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self.problems = problems
        self.skip = os.path.realpath(skip) if skip is not None else None  # a folder never walked into

    def shown(self, path: Path) -> str:
        return str(path)

    def inside(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return real == str(self.root) or real.startswith(str(self.root).rstrip(os.sep) + os.sep)

    def markdown(self, folder: Path, recursive: bool = True, hidden: bool = False) -> Iterator[Path]:
        """The ``.md`` files under ``folder`` (sorted), not descending into links or (unless
        ``hidden``) folders whose name starts with a dot."""
        if not folder.is_dir() or not self.inside(folder):
            return
        for top, dirs, names in os.walk(folder, followlinks=False):
            dirs[:] = sorted(d for d in dirs if (hidden or not d.startswith(".")) and d not in ("node_modules",)
                             and os.path.realpath(Path(top) / d) != self.skip)
            for d in dirs:
                self.linked(Path(top) / d)
            for name in sorted(names):
                if name.lower().endswith(".md"):
                    yield Path(top) / name
            if not recursive:
                return

    def linked(self, path: Path) -> bool:
        """Whether ``path`` is a link to a folder (never walked into); one out of the source
        folder is named as not followed."""
        if not path.is_symlink():
            return False
        if not self.inside(path):
            self.problems.append(Problem(str(path), None, f"a link out of {self.root}: not followed"))
        return True

    def read(self, path: Path) -> str | None:
        """The file's text, or None with the reason added to :attr:`problems`."""
        problems = self.problems
        shown = self.shown(path)
        if undecodable(os.path.relpath(path, self.root)):  # its name could go into no item, commit or key
            problems.append(Problem(path_text(shown), None, "its name is not UTF-8 text: skipped"))
            return None
        if not self.inside(path):
            problems.append(Problem(shown, None, f"a link out of {self.root}: not followed"))
            return None
        try:
            fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            problems.append(Problem(shown, None, f"cannot be read ({exc.strerror}): skipped"))
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                problems.append(Problem(shown, None, "not a regular file: skipped"))
                return None
            if info.st_size > MAX_SOURCE_BYTES:
                problems.append(Problem(shown, None, f"is {info.st_size:,} bytes, more than an import reads "
                                                     f"({MAX_SOURCE_BYTES:,}): skipped; split it and import the parts"))
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(MAX_SOURCE_BYTES + 1)
        except OSError as exc:
            problems.append(Problem(shown, None, f"cannot be read ({exc.strerror}): skipped"))
            return None
        finally:
            os.close(fd)
        try:
            return files.decode(data, shown).lstrip("\ufeff").replace("\r\n", "\n").replace("\x00", "")
        except ParseError as exc:
            problems.append(Problem(shown, exc.line, f"{exc.message}: skipped"))
            return None


def read_document(folder: "Folder", path: Path, problems: list[Problem]):
    """The file read from ``folder`` as a Document (frontmatter optional), or None: not
    readable (said by the folder) or broken YAML (named with its line)."""
    text = folder.read(path)
    if text is None:
        return None
    try:
        return parse_document(text, str(path), require_frontmatter=False, fast=True)
    except ParseError as exc:
        problems.append(Problem(str(path), exc.line, f"{exc.message}: skipped"))
        return None


def blocks(lines: list[str], first: int) -> list[tuple[int, str, list[str]]]:
    """Markdown body lines (``lines[0]`` is file line ``first``) as blocks — a paragraph or
    a top-level list item with what is indented under it, a fenced block kept whole — each
    (line, text, the headings above it)."""
    out: list[tuple[int, str, list[str]]] = []
    heads: list[tuple[int, str]] = []
    cur: list[str] = []
    start = 0
    fence: str | None = None

    def close() -> None:
        nonlocal cur
        if cur and ITEM.match(cur[0]):  # a list item is its text: the marker goes
            cur[0] = ITEM.sub("", cur[0], count=1)
        text = "\n".join(cur).strip("\n")
        if text.strip():
            out.append((start, text, [h for _, h in heads]))
        cur = []

    for i, raw in enumerate(lines):
        line = raw.rstrip("\n").rstrip()
        n = first + i
        m = FENCE.match(line)
        if fence is not None:
            cur.append(line)
            if m and m.group(1) == fence:
                fence = None
            continue
        if m:
            if not cur:
                start = n
            cur.append(line)
            fence = m.group(1)
            continue
        h = HEADING.match(line)
        if h:
            close()
            level = len(h.group(1))
            heads = [x for x in heads if x[0] < level] + [(level, h.group(2))]
            continue
        if not line.strip():
            close()
            continue
        if ITEM.match(line) and cur:  # a new top-level item ends the one before
            close()
        if not cur:
            start = n
        cur.append(line)
    close()
    return out


def context_of(heads: list[str], text: str) -> str | None:
    """A description from the headings above a block and its first line."""
    if not heads:
        return None
    first = text.strip().splitlines()[0].strip().lstrip("-*+ ").strip()
    return notes.shorten(f"{' › '.join(heads)}: {first}", 120)


def vault_type(wanted: str | None, types: tuple[str, ...]) -> str:
    """``wanted`` (a word another tool uses) as one of this vault's types: itself, its
    mapping, else fact (else the vault's first type)."""
    word = str(wanted or "").strip().lower()
    for candidate in (word, TYPE_WORDS.get(word), "fact"):
        if candidate and candidate in types:
            return candidate
    return types[0]


def tag_of(raw: Any) -> str | None:
    """``raw`` as an Obsidian tag (characters a tag cannot hold become '-'), or None."""
    text = re.sub(r"[^\w/\-]+", "-", str(raw or "").strip().lstrip("#")).strip("-/")
    if not text or text.isdigit():
        return None
    return text


def tags_of(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [v for v in re.split(r"[,\s]+", values) if v]
    if not isinstance(values, (list, tuple)):
        return []
    return list(dict.fromkeys(t for t in (tag_of(v) for v in values) if t))


def name_of(raw: Any) -> str | None:
    """A name that can be an author's or an agent's as given, else made into one."""
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return check_name(str(raw).strip())
    except BadInput:
        return slugify(str(raw))


# -- the sources: each module of this package registers its reader --------------------------------
@dataclass(frozen=True)
class Source:
    """One source an import reads (as the index engines register, :mod:`vaultmem.index.registry`):
    its name, and ``read(where, types, human=, memory_dir=, vault_root=)`` → :class:`Read` —
    ``where`` the path given (None: the source's own default place), ``types`` the vault's
    note types, ``human`` who the user's own memory is by, ``memory_dir`` (only a source
    that ``takes_memory_dir``) where its memory folder is, ``vault_root`` the vault being
    imported into (a source inside it is refused)."""

    name: str
    read: Callable[..., Read]
    takes_memory_dir: bool = False


REGISTRY: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Make ``source`` importable by its name (each source module calls this once)."""
    REGISTRY[source.name] = source
    return source

