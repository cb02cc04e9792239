"""Claude Code's memory: a project's auto memory (``MEMORY.md`` and its topic files),
``CLAUDE.md`` and ``.claude/agent-memory/<name>/``."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import BadInput, NotFound
from ..names import check_name
from .base import (CLAUDE_TYPES, Folder, Found, POINTER, Problem, Read, Source, blocks, context_of, read_document,
                   register, tags_of, vault_type)


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
                m = POINTER.match(line)
                target = (top / m.group(1)).resolve() if m and not re.match(r"\w+://", m.group(1)) else None
                if target is not None and target.suffix == ".md" and target.is_file():
                    hooks[str(target)] = (m.group(2) or "").strip()
                    kept.append("")  # a pointer: the topic file is the item
                else:
                    kept.append(line)
            index_lines = blocks(kept, 1)
    for line, text, heads in index_lines:
        kind = "agent" if role else "third_party"
        out.found.append(Found(str(index), line, text, vault_type("fact", types), kind,
                               f"{belongs}/MEMORY.md", author=role or "claude-code", agent=role,
                               description=context_of(heads, text), tags=["claude-code"]))
    for path in folder.markdown(top):
        if path == index:
            continue
        doc = read_document(folder, path, out.problems)
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
        out.found.append(Found(str(path), first, body, vault_type(vtype, types), kind,
                               f"{belongs}/{path.relative_to(top).as_posix()}", author=author, agent=role,
                               name=name, description=description,
                               tags=tags_of(["claude-code", f"claude-code/{ctype}" if ctype else None])))


def _claude_md(folder: Folder, path: Path, rel: str, types: tuple[str, ...], out: Read) -> None:
    """CLAUDE.md: the project's instructions, a document — one item per paragraph or
    list item, quarantined (third-party) like any document; ``@path`` imports are kept
    as text, never followed."""
    doc = read_document(folder, path, out.problems)
    if doc is None:
        return
    body = [x.rstrip("\n") for x in doc.lines[doc.body_start:]]
    for line, block, heads in blocks(body, doc.body_start + 1):
        out.found.append(Found(str(path), line, block, vault_type("procedure", types), "third_party", rel,
                               author="claude-code", description=context_of(heads, block),
                               tags=["claude-code", "claude-md"]))


def read(where: Path | None, types: tuple[str, ...], human: str | None = None, memory_dir: Path | None = None,
         vault_root: Path | None = None) -> Read:
    """This source's reader, as :class:`~.base.Source` calls it."""
    return read_claude_code(where, types, human, memory_dir)


register(Source("claude-code", read, takes_memory_dir=True))

