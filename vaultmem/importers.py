"""Importers: another tool's memory, read into proposals for the review gate.

A team moving in brings what its tools remembered. Each source is read into items —
one fact, rule or block of text each, with the file and line it came from — and every
item goes through the review gate exactly as a retained fact does (``vault.inbox.file``):
checked and scrubbed of secrets by :func:`vaultmem.notes.prepare`, third-party ones
quarantined and instruction-like ones flagged by the inbox, nothing memory until
someone decides. Sources (``docs/import.md`` says how each maps):

- ``claude-code``: a project's auto memory (``MEMORY.md`` and its topic files, with their
  ``type:`` user / feedback / project / reference), ``CLAUDE.md`` and
  ``.claude/agent-memory/<name>/`` (that role's memory);
- ``hermes``: Hermes Agent's ``MEMORY.md`` and ``USER.md``, entries separated by ``§``;
- ``basic-memory``: a folder of Markdown notes, observations ``- [category] text #tag
  (context)`` and relations ``- relation_type [[Target]]`` kept as text and links;
- ``jsonl``: one JSON object per line (a mem0 export, or anything else).

Every item carries a stable key (``[import <16 hex>]`` at the end of its ``source``),
made from what it says and where it belongs, never from where it sits in the file: an
item already filed — waiting, approved or rejected — is recognised and not filed again.
A file or line that cannot be read (broken frontmatter, a line that is not JSON, bytes
that are not UTF-8, a link out of the source folder, a text over the vault's size limit)
is named with its line and skipped; the rest is imported, and nothing in the source is
ever changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from . import files, gitstore, guard, layout, limits, notes
from .errors import BadInput, NotFound, ParseError, VaultmemError
from .models import AUTHOR_KINDS, Actor, Change, NoteFields
from .names import check_name, slugify
from .parse.document import parse_document
from .parse.wikilink import LINK

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

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_POINTER = re.compile(r"^\s*[-*+]\s+\[[^\]]*\]\(([^)\s]+)\)\s*(?:[—–:-]+\s*(.*))?$")
_OBSERVATION = re.compile(r"^\s*[-*+]\s+\[([^\]\[]+)\]\s+(\S.*)$")
_RELATION = re.compile(r"^\s*[-*+]\s+([^\s\[\]()#][^\[\]()#]*?)\s+\[\[([^\]]+)\]\](.*)$")
_HASHTAG = re.compile(r"(?<![\w&/#])#([\w][\w/\-]*)")


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


def _document(folder: "Folder", path: Path, problems: list[Problem]):
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


def _blocks(lines: list[str], first: int) -> list[tuple[int, str, list[str]]]:
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
        if cur and _ITEM.match(cur[0]):  # a list item is its text: the marker goes
            cur[0] = _ITEM.sub("", cur[0], count=1)
        text = "\n".join(cur).strip("\n")
        if text.strip():
            out.append((start, text, [h for _, h in heads]))
        cur = []

    for i, raw in enumerate(lines):
        line = raw.rstrip("\n").rstrip()
        n = first + i
        m = _FENCE.match(line)
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
        h = _HEADING.match(line)
        if h:
            close()
            level = len(h.group(1))
            heads = [x for x in heads if x[0] < level] + [(level, h.group(2))]
            continue
        if not line.strip():
            close()
            continue
        if _ITEM.match(line) and cur:  # a new top-level item ends the one before
            close()
        if not cur:
            start = n
        cur.append(line)
    close()
    return out


def _context(heads: list[str], text: str) -> str | None:
    """A description from the headings above a block and its first line."""
    if not heads:
        return None
    first = text.strip().splitlines()[0].strip().lstrip("-*+ ").strip()
    return notes.shorten(f"{' › '.join(heads)}: {first}", 120)


def _vault_type(wanted: str | None, types: tuple[str, ...]) -> str:
    """``wanted`` (a word another tool uses) as one of this vault's types: itself, its
    mapping, else fact (else the vault's first type)."""
    word = str(wanted or "").strip().lower()
    for candidate in (word, TYPE_WORDS.get(word), "fact"):
        if candidate and candidate in types:
            return candidate
    return types[0]


def _tag(raw: Any) -> str | None:
    """``raw`` as an Obsidian tag (characters a tag cannot hold become '-'), or None."""
    text = re.sub(r"[^\w/\-]+", "-", str(raw or "").strip().lstrip("#")).strip("-/")
    if not text or text.isdigit():
        return None
    return text


def _tags(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [v for v in re.split(r"[,\s]+", values) if v]
    if not isinstance(values, (list, tuple)):
        return []
    return list(dict.fromkeys(t for t in (_tag(v) for v in values) if t))


def _name(raw: Any) -> str | None:
    """A name that can be an author's or an agent's as given, else made into one."""
    if raw is None or str(raw).strip() == "":
        return None
    try:
        return check_name(str(raw).strip())
    except BadInput:
        return slugify(str(raw))


# -- Claude Code ------------------------------------------------------------------------------
def claude_memory_dir(project: Path) -> Path:
    """Where Claude Code keeps the project's auto memory: ``~/.claude/projects/<the
    project's absolute path, every character not a letter or digit made '-'>/memory``
    (``$CLAUDE_CONFIG_DIR`` in place of ``~/.claude``)."""
    base = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "projects"
    name = re.sub(r"[^a-zA-Z0-9]", "-", str(project))
    exact = base / name / "memory"
    if exact.is_dir() or len(name) <= 200:
        return exact
    # a long path is cut at 200 characters and given a hash suffix: find it by its start
    for candidate in sorted(base.glob(f"{name[:200]}*")) if base.is_dir() else []:
        if (candidate / "memory").is_dir():
            return candidate / "memory"
    return exact


def read_claude_code(path: Path | None, types: tuple[str, ...], human: str | None,
                     memory_dir: Path | None = None) -> Read:
    project = Path(path if path is not None else os.environ.get("CLAUDE_PROJECT_DIR") or Path.cwd()).expanduser()
    if not project.is_dir():
        raise NotFound(f"{project} is not a folder", path=str(project),
                       hint="give the project folder (where CLAUDE.md and .claude/ are)")
    project = Path(os.path.realpath(project))
    only_memory = memory_dir is None and (project / "MEMORY.md").is_file() and not (
        (project / "CLAUDE.md").exists() or (project / ".claude").is_dir())
    if only_memory:
        auto = project
    else:
        auto = Path(os.path.realpath(memory_dir.expanduser())) if memory_dir is not None else claude_memory_dir(project)
    out = Read(str(project))
    if memory_dir is not None and not auto.is_dir():
        raise NotFound(f"{auto} is not a folder", path=str(auto), hint="give Claude Code's memory folder, which "
                                                                       "holds MEMORY.md")
    read_any = False
    if auto.is_dir():
        read_any = True
        out.notes.append(f"auto memory: {auto}")
        _claude_memory(Folder(auto, out.problems), auto, "memory", None, types, human, out)
    if not only_memory:
        folder = Folder(project, out.problems)
        for rel in ("CLAUDE.md", ".claude/CLAUDE.md"):
            if (project / rel).is_file() or (project / rel).is_symlink():
                read_any = True
                _claude_md(folder, project / rel, rel, types, out)
        for holder in (".claude/agent-memory", ".claude/agent-memory-local"):
            top = project / holder
            if not top.is_dir() or not folder.inside(top):
                continue
            for sub in sorted(p for p in top.iterdir() if p.is_dir()):
                if folder.linked(sub):
                    continue
                read_any = True
                try:
                    role = check_name(sub.name, "role name")
                except BadInput as exc:
                    out.problems.append(Problem(str(sub), None, f"{exc.message}: skipped"))
                    continue
                _claude_memory(folder, sub, f"{holder}/{sub.name}", role, types, human, out)
    if not read_any:
        raise NotFound(f"no Claude Code memory for {project}: no CLAUDE.md, no .claude/agent-memory/, "
                       f"and no auto memory at {auto}", path=str(project),
                       hint="give the project folder, or name the memory folder itself")
    return out


def _claude_memory(folder: Folder, top: Path, belongs: str, role: str | None, types: tuple[str, ...],
                   human: str | None, out: Read) -> None:
    """A memory folder: ``MEMORY.md`` (an index of topic files; lines that are not
    pointers are items of their own) and the topic files, one item each."""
    hooks: dict[str, str] = {}
    index = top / "MEMORY.md"
    index_lines: list[tuple[int, str, list[str]]] = []
    if index.is_file() or index.is_symlink():
        text = folder.read(index)
        if text is not None:
            kept = []
            for line in text.split("\n"):
                m = _POINTER.match(line)
                target = (top / m.group(1)).resolve() if m and not re.match(r"\w+://", m.group(1)) else None
                if target is not None and target.suffix == ".md" and target.is_file():
                    hooks[str(target)] = (m.group(2) or "").strip()
                    kept.append("")  # a pointer: the topic file is the item
                else:
                    kept.append(line)
            index_lines = _blocks(kept, 1)
    for line, text, heads in index_lines:
        kind = "agent" if role else "third_party"
        out.found.append(Found(str(index), line, text, _vault_type("fact", types), kind,
                               f"{belongs}/MEMORY.md", author=role or "claude-code", agent=role,
                               description=_context(heads, text), tags=["claude-code"]))
    for path in folder.markdown(top):
        if path == index:
            continue
        doc = _document(folder, path, out.problems)
        if doc is None:
            continue
        meta = doc.meta if isinstance(doc.meta, dict) else {}
        nested = meta.get("metadata") if isinstance(meta.get("metadata"), dict) else {}
        ctype = str(meta.get("type") or nested.get("type") or "").strip().lower()
        body = "\n".join(x.rstrip("\n") for x in doc.lines[doc.body_start:]).strip()
        if not body:
            continue
        first = doc.body_start + 1 + next(i for i, x in enumerate(doc.lines[doc.body_start:]) if x.strip())
        vtype, kind = CLAUDE_TYPES.get(ctype, ("fact", "third_party"))
        if role and kind == "third_party":
            kind = "agent"  # the role's own notes about its work
        author = (human if kind == "user" else None) or role or "claude-code"
        name = str(meta.get("name") or "").strip() or None
        description = str(meta.get("description") or "").strip() or hooks.get(str(path.resolve())) or None
        out.found.append(Found(str(path), first, body, _vault_type(vtype, types), kind,
                               f"{belongs}/{path.relative_to(top).as_posix()}", author=author, agent=role,
                               name=name, description=description,
                               tags=_tags(["claude-code", f"claude-code/{ctype}" if ctype else None])))


def _claude_md(folder: Folder, path: Path, rel: str, types: tuple[str, ...], out: Read) -> None:
    """CLAUDE.md: the project's instructions, a document — one item per paragraph or
    list item, quarantined (third-party) like any document; ``@path`` imports are kept
    as text, never followed."""
    doc = _document(folder, path, out.problems)
    if doc is None:
        return
    body = [x.rstrip("\n") for x in doc.lines[doc.body_start:]]
    for line, block, heads in _blocks(body, doc.body_start + 1):
        out.found.append(Found(str(path), line, block, _vault_type("procedure", types), "third_party", rel,
                               author="claude-code", description=_context(heads, block),
                               tags=["claude-code", "claude-md"]))


# -- Hermes -----------------------------------------------------------------------------------
def hermes_dir(path: Path | None) -> Path:
    """Hermes' memories folder: ``PATH`` (or its ``memories/``), else
    ``$HERMES_HOME/memories``, else ``~/.hermes/memories``."""
    base = Path(path if path is not None else os.environ.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()
    return base / "memories" if (base / "memories").is_dir() else base


def read_hermes(path: Path | None, types: tuple[str, ...], human: str | None) -> Read:
    """``MEMORY.md`` (the agent's notes: third-party facts) and ``USER.md`` (the user's
    profile: user-stated preferences), entries separated by a line holding only ``§``."""
    top = hermes_dir(path)
    top = Path(os.path.realpath(top)) if top.is_dir() else top
    if not top.is_dir():
        raise NotFound(f"{top} is not a folder", path=str(top),
                       hint="give Hermes' home (~/.hermes) or its memories/ folder")
    out = Read(str(Path(os.path.realpath(top))))
    folder = Folder(top, out.problems)
    wanted = {"MEMORY.md": ("fact", "third_party"), "USER.md": ("preference", "user")}
    present = [name for name in wanted if (top / name).exists() or (top / name).is_symlink()]
    if not present:
        raise NotFound(f"no MEMORY.md or USER.md in {top}", path=str(top),
                       hint="give Hermes' home (~/.hermes) or its memories/ folder")
    for name in present:
        vtype, kind = wanted[name]
        text = folder.read(top / name)
        if text is None:
            continue
        pos = 0
        for part in text.split(HERMES_DELIMITER):
            entry = part.strip()
            if entry:
                offset = pos + (len(part) - len(part.lstrip()))
                line = text.count("\n", 0, offset) + 1
                out.found.append(Found(str(top / name), line, entry, _vault_type(vtype, types), kind, name,
                                       author=(human if kind == "user" else None) or "hermes",
                                       tags=["hermes", f"hermes/{name[:-3].lower()}"]))
            pos += len(part) + len(HERMES_DELIMITER)
    return out


# -- basic-memory -----------------------------------------------------------------------------
def read_basic_memory(path: Path | None, types: tuple[str, ...], vault_root: Path | None = None) -> Read:
    """A project folder of notes: each observation one item (its category the type, its
    ``#tags`` tags, the text as written); a note's relations one item of links; the rest
    of its text one item per paragraph. All third-party: a document, until a human reads it."""
    if path is None:
        raise BadInput("give the basic-memory project folder", field="path",
                       hint="vaultmem import basic-memory ~/basic-memory")
    top = Path(path).expanduser()
    if not top.is_dir():
        raise NotFound(f"{top} is not a folder", path=str(top), hint="give the basic-memory project folder")
    real = Path(os.path.realpath(top))
    out = Read(str(real))
    vault = Path(os.path.realpath(vault_root)) if vault_root is not None else None
    if vault is not None and (real == vault or vault in real.parents):
        raise BadInput(f"{top} is inside the vault {vault}: its notes are this vault's own", field="path",
                       hint="give the basic-memory project folder")
    if vault is not None and real in vault.parents:
        out.notes.append(f"the vault itself ({vault}) is not read")
    folder = Folder(top, out.problems, skip=vault)
    count = 0
    for note in folder.markdown(folder.root):
        count += 1
        doc = _document(folder, note, out.problems)
        if doc is None:
            continue
        _basic_note(doc, note, note.relative_to(folder.root).as_posix(), types, out)
    if not count:
        raise NotFound(f"no Markdown notes in {top}", path=str(top), hint="give the basic-memory project folder")
    return out


def _basic_note(doc, note: Path, rel: str, types: tuple[str, ...], out: Read) -> None:
    meta = doc.meta if isinstance(doc.meta, dict) else {}
    title = str(meta.get("title") or note.stem).strip()
    note_tags = _tags(meta.get("tags"))
    body = [x.rstrip("\n") for x in doc.lines[doc.body_start:]]
    first = doc.body_start + 1
    relations: list[tuple[int, str]] = []
    rest: list[str] = []
    fence = None
    for i, line in enumerate(body):
        n = first + i
        m = _FENCE.match(line)
        if fence is not None or m:
            if fence is None:
                fence = m.group(1)
            elif m and m.group(1) == fence:
                fence = None
            rest.append(line)
            continue
        obs = _OBSERVATION.match(line)
        if obs and obs.group(1).strip() not in ("", "x", "X") and not line.lstrip()[2:].startswith("[["):
            category, content = obs.group(1).strip(), _unlinked(obs.group(2).strip())
            tags = _tags(["basic-memory", category, *_HASHTAG.findall(content), *note_tags])
            out.found.append(Found(str(note), n, content, _vault_type(category, types), "third_party",
                                   f"{rel}#{category}", author="basic-memory",
                                   description=notes.shorten(f"{title}: {content}", 120), tags=tags))
            rest.append("")
            continue
        rel_m = _RELATION.match(line)
        if rel_m:
            relations.append((n, _unlinked(f"- {rel_m.group(1).strip()} [[{rel_m.group(2).strip()}]]"
                                           f"{rel_m.group(3).rstrip()}")))
            rest.append("")
            continue
        h = _HEADING.match(line)
        if h and h.group(2).strip().lower() in (title.lower(), "observations", "relations"):
            rest.append("")  # the note's own title, and the headings of its semantic sections
            continue
        rest.append(_unlinked(line))
    if relations:
        text = "\n".join([f"{_unlinked(title)}:", *(r for _, r in relations)])
        out.found.append(Found(str(note), relations[0][0], text, _vault_type("fact", types), "third_party",
                               f"{rel}#relations", author="basic-memory", name=f"{title} — relations",
                               description=notes.shorten(f"{title}: links to "
                                                         + ", ".join(r.split("[[", 1)[1].split("]]")[0]
                                                                     for _, r in relations), 120),
                               tags=_tags(["basic-memory", *note_tags]), aliases=[]))
    for line, block, heads in _blocks(rest, first):
        out.found.append(Found(str(note), line, block, _vault_type(str(meta.get("type") or "fact"), types),
                               "third_party", rel, author="basic-memory",
                               description=notes.shorten(f"{' › '.join([title, *heads])}: "
                                                         f"{block.strip().splitlines()[0]}", 120),
                               tags=_tags(["basic-memory", *note_tags])))


def _unlinked(line: str) -> str:
    """A basic-memory line with each ``[[link]]`` in it as code: it names a basic-memory
    entity, not a file of the vault, so as a link it would lead nowhere once approved
    (and fail ``doctor``'s "links resolve"); as code it stays readable, as written."""
    parts = re.split(r"(`[^`\n]*`)", line)  # code already: left as it is
    for n in range(0, len(parts), 2):
        parts[n] = LINK.sub(lambda m: f"`` {m.group(0)} ``" if "`" in m.group(0) else f"`{m.group(0)}`", parts[n])
    return "".join(parts)


# -- JSON lines -------------------------------------------------------------------------------
def read_jsonl(path: Path | None, types: tuple[str, ...]) -> Read:
    """One JSON object per line (a JSON list, or mem0's ``{"results": [...]}``, is read
    too); a line that is not JSON, not an object, or has no text is named and skipped."""
    if path is None:
        raise BadInput("give the JSON lines file", field="path", hint="vaultmem import jsonl export.jsonl")
    file = Path(os.path.abspath(Path(path).expanduser()))
    if not file.exists() and not file.is_symlink():
        raise NotFound(f"no file {file}", path=str(file))
    if file.is_dir():
        raise NotFound(f"{file} is a folder, not a JSON lines file", path=str(file))
    out = Read(str(file))
    folder = Folder(file.parent, out.problems)
    text = folder.read(file)
    if text is None:
        return out
    ignored: dict[str, int] = {}
    records: list[tuple[int, Any, str | None]] = []  # (line, value, problem)
    stripped = text.strip()
    whole = None
    if stripped[:1] == "[" or (stripped[:1] == "{" and "\n{" not in stripped):
        try:
            whole = limits.load_json(stripped)
        except ValueError:  # not JSON as a whole, or nested too deep: read line by line
            whole = None
    if isinstance(whole, dict):  # mem0's get_all: {"results": [...]}; a lone object is a line like any
        whole = next((whole[k] for k in ("results", "memories", "items") if isinstance(whole.get(k), list)), None)
    if isinstance(whole, list):
        records = [(n, v, None) for n, v in enumerate(whole, 1)]
        where = "item"
    else:
        where = "line"
        for n, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                records.append((n, limits.load_json(line), None))
            except json.JSONDecodeError as exc:
                records.append((n, None, f"not JSON ({exc.msg}, column {exc.colno}): skipped"))
            except ValueError as exc:  # nested too deep
                records.append((n, None, f"{exc}: skipped"))
    for n, value, problem in records:
        shown_line = n if where == "line" else None
        if problem is None and not isinstance(value, dict):
            problem = f"a JSON {type(value).__name__}, not an object: skipped"
        if problem is None:
            found, problem = _json_item(value, str(file), n, types, ignored)
            if found is not None:
                out.found.append(found)
        if problem is not None:
            out.problems.append(Problem(str(file), shown_line, problem if where == "line" else f"item {n}: {problem}"))
    if ignored:
        out.notes.append(guard.without_secrets(
            "fields not imported: " + ", ".join(f"{k} ({v}×)" for k, v in sorted(ignored.items()))))
    return out


def _json_item(obj: dict, file: str, n: int, types: tuple[str, ...], ignored: dict) -> tuple[Found | None, str | None]:
    text = next((obj[k] for k in ("text", "memory", "content") if isinstance(obj.get(k), str) and obj[k].strip()),
                None)
    if text is None:
        return None, "no text (give text, memory or content): skipped"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    for k in obj:
        if k not in JSONL_FIELDS:
            ignored[k] = ignored.get(k, 0) + 1
    categories = obj.get("categories") if isinstance(obj.get("categories"), list) else []
    wanted = obj.get("type") or meta.get("type") or obj.get("category") or (categories[0] if categories else None)
    vtype = _vault_type(wanted if isinstance(wanted, str) else None, types)
    kind = str(obj.get("author_kind") or "third_party")
    if kind not in AUTHOR_KINDS:
        return None, f"author_kind {kind!r} is not one of {', '.join(AUTHOR_KINDS)}: skipped"
    tags = _tags(["jsonl", *(_tags(obj.get("tags")) or []), *_tags(meta.get("tags")), *_tags(categories),
                  *([wanted] if isinstance(wanted, str) and wanted.strip().lower() != vtype else [])])
    agent = _name(obj.get("agent") or obj.get("agent_id"))
    said = obj.get("said") or obj.get("created_at")
    given_source = obj.get("source")

    def opt(key: str) -> Any:
        value = obj.get(key)
        return None if value in (None, "") else value

    return Found(file, n, text.strip(), vtype, kind, f"{agent or ''}#{obj.get('id') or ''}",
                 author=_name(obj.get("author") or obj.get("user_id")) or agent or "jsonl", agent=agent,
                 name=str(opt("name")) if opt("name") is not None else None,
                 description=str(opt("description")) if opt("description") is not None else None,
                 tags=tags, aliases=[str(a) for a in obj.get("aliases") or [] if a] if isinstance(
                     obj.get("aliases"), list) else [],
                 said=str(said) if said not in (None, "") else None, importance=opt("importance"),
                 confidence=opt("confidence"), key=str(opt("key")) if opt("key") is not None else None,
                 project=str(opt("project")) if opt("project") is not None else None,
                 note=str(given_source) if given_source not in (None, "") else None), None


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
    """Read a source (one of :data:`SOURCES`) into items, nothing checked or written."""
    where = Path(path) if path not in (None, "") else None
    if source == "claude-code":
        return read_claude_code(where, types, human, Path(memory_dir) if memory_dir not in (None, "") else None)
    if memory_dir not in (None, ""):
        raise BadInput("a memory folder is named only for claude-code", field="memory_dir")
    if source == "hermes":
        return read_hermes(where, types, human)
    if source == "basic-memory":
        return read_basic_memory(where, types, vault_root)
    if source == "jsonl":
        return read_jsonl(where, types)
    raise BadInput(f"{source!r} is not a source vaultmem imports", field="source",
                   hint=f"one of {', '.join(SOURCES)}")


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
