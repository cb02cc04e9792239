"""The Claude API's memory tool (``memory_20250818``) over a vault, through its review gate.

A Claude API agent that is given this tool keeps its memory in the vault instead of a
folder of its own: what it writes is a proposal in the review inbox, exactly as
``vaultmem remember`` by an agent, and becomes memory — a reviewed, committed note —
only when a human (or, for page entries, the orchestrator) approves it. Use it as the
SDK's own tools are used::

    from anthropic import Anthropic
    from vaultmem.adapters.anthropic_memory import VaultMemoryTool

    memory = VaultMemoryTool("/home/me/team-memory", agent="ella")
    runner = Anthropic().beta.messages.tool_runner(
        model=..., max_tokens=..., messages=[...], tools=[memory])

What the paths under ``/memories`` are (docs/sdk-backends.md has the whole table):

- ``/memories/<slug>.md`` — the memory note ``memories/<slug>.md``: ``view`` shows its
  text; ``create`` proposes a new note named ``<slug>``; ``str_replace`` and ``insert``
  propose a replacement note with the edited text; ``delete`` proposes forgetting it
  (the note moves to the archive when approved); ``rename`` proposes the same text
  under the new name. The slug must be its own slug (lower case, words joined by
  ``-``), so that the approved note is at the path the agent wrote.
- ``/memories/agents/<role>.md`` — the role page ``agents/<role>.md``, the acting
  agent's own (the orchestrator sees every page): ``view`` shows it; ``insert`` adds an
  entry (``page add``: dated, with a block id, in its Work section — through the gate);
  nothing else changes a page here.
- ``view /memories`` lists the approved notes this agent may see (not another agent's
  own notes) and, marked ``pending review``, the agent's own proposals still waiting,
  so that it does not propose them again. Another agent's proposals are not shown.

Nothing else is a memory path: ``..``, ``.``, empty or hidden components, a NUL, a
folder under ``/memories`` other than ``agents``, a file that is not ``.md``, a path
outside ``/memories``; a file that is a link leading out of the vault is refused by the
vault's own reader. Every refusal is a :class:`ToolError` (``is_error`` for the model)
carrying the library's message and hint, with any secret it quotes replaced; nothing is
written. Secrets in what the agent writes are replaced by placeholders, as everywhere.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as exc:  # vaultmem itself needs none of it
    raise ImportError(f"the memory tool needs the anthropic SDK ({exc}): pip install 'vaultmem[anthropic]'") from exc

from .. import files, layout
from ..errors import BadInput, NotFound, PermissionRefused, UnsafePath, VaultmemError
from ..models import NoteInfo
from ..names import check_name, slugify
from ..vault import Vault, without_secrets
from . import edge
from .sdk import vault_and_agent

log = logging.getLogger("vaultmem.anthropic_memory")

ROOT = "/memories"
PAGES = "agents"  # /memories/agents/<role>.md: role pages
LINE_WIDTH = 6  # line numbers as the SDK's reference tool shows them
SHAPES = (f"{ROOT}/<name>.md for a memory note (a lower-case slug: coffee-order.md), "
          f"{ROOT}/{PAGES}/<role>.md for a role page")
# the fields of each command, as the memory_20250818 tool sends them
COMMANDS = {"view": {"path": str}, "create": {"path": str, "file_text": str},
            "str_replace": {"path": str, "old_str": str, "new_str": str},
            "insert": {"path": str, "insert_line": int, "insert_text": str},
            "delete": {"path": str}, "rename": {"old_path": str, "new_path": str}}


@dataclass(frozen=True)
class Target:
    """What a memory path names: the ``root`` folder, the ``pages`` folder, a ``note``
    (``name``: its slug) or a ``page`` (``name``: its role)."""

    kind: str
    path: str
    name: str | None = None


def shown(path: str) -> str:
    """``path`` as an answer may quote it: control characters escaped, a long one cut."""
    text = path if path.isprintable() else path.encode("unicode_escape").decode("ascii")
    return text if len(text) <= 200 else text[:197] + "..."


def target(path: str) -> Target:
    """The vault thing a memory path names, or BadInput / UnsafePath saying why there is none."""
    where = shown(path)

    def refuse(why: str, cls=BadInput) -> VaultmemError:
        return cls(f"the path {where} is refused: {why}", hint=f"memory paths are {SHAPES}")

    if "\x00" in path:
        raise refuse("it holds a NUL character", UnsafePath)
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise refuse(f"every memory path starts with {ROOT}/", UnsafePath)
    rest = path[len(ROOT) + 1:]
    rest = rest[:-1] if rest.endswith("/") else rest
    parts = rest.split("/") if rest else []
    for part in parts:
        if part in ("", ".", ".."):
            raise refuse(f"it has a {part or 'empty'!r} component" if part else "it has an empty component",
                         UnsafePath if part == ".." else BadInput)
    if not parts:
        return Target("root", ROOT)
    if parts == [PAGES]:
        return Target("pages", f"{ROOT}/{PAGES}")
    if len(parts) == 2 and parts[0] == PAGES and parts[1].endswith(".md"):
        return Target("page", f"{ROOT}/{PAGES}/{parts[1]}", _name(parts[1][:-3], "role name", refuse))
    if len(parts) > 1:
        raise refuse(f"vault memory is flat: there are no folders under {ROOT} but {PAGES}/")
    if not parts[0].endswith(".md"):
        raise refuse("memory files are Markdown, named <name>.md")
    slug = _name(parts[0][:-3], "memory file name", refuse)
    if slugify(slug) != slug:
        # the suggestion only for a name that holds no secret (lower-cased, a detector may miss it)
        suggest = f"use {ROOT}/{slugify(slug)}.md; " if without_secrets(slug) == slug else ""
        raise BadInput(f"the path {where} is refused: a memory note's file is named by its slug",
                       hint=f"{suggest}memory paths are {SHAPES}")
    return Target("note", f"{ROOT}/{slug}.md", slug)


def _name(raw: str, what: str, refuse) -> str:
    try:
        return check_name(raw, what)
    except VaultmemError as exc:
        raise refuse(exc.message) from None


def _size(n: int) -> str:
    """A size as the SDK's reference tool writes it: 0B, 512B, 1.5K, 2M."""
    if n == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((n.bit_length() - 1) // 10, len(units) - 1)
    value = n / (1024 ** i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def _lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _numbered(lines: list[str], start: int = 1) -> str:
    return "\n".join(f"{str(n).rjust(LINE_WIDTH)}\t{line}" for n, line in enumerate(lines, start))


@dataclass
class Waiting:
    """This agent's own proposals still waiting for review, by the memory path they touch."""

    new: dict[str, Any] = field(default_factory=dict)  # path -> item: a note it would create
    change: dict[str, Any] = field(default_factory=dict)  # path -> item: a change to an existing note
    delete: dict[str, Any] = field(default_factory=dict)  # path -> item: forgetting an existing note
    entries: dict[str, list] = field(default_factory=dict)  # page path -> items: entries it proposed

    def about(self, path: str) -> Any:
        return self.change.get(path) or self.delete.get(path)


class VaultMemoryTool(BetaAbstractMemoryTool):
    """The ``memory_20250818`` tool over a vault, acting as ``agent`` (else
    ``$VAULTMEM_AGENT``; never as the human: a Claude API agent's writes always go
    through the review gate). ``vault``: a path, an open :class:`Vault`, or None to
    find it as the CLI does. ``note_type``: the memory type of the notes it proposes
    (one of the vault's ``memory.types``)."""

    def __init__(self, vault: str | os.PathLike | Vault | None = None, agent: str | None = None,
                 note_type: str = "fact", *, cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self.root, self.agent = vault_and_agent(vault, agent, "the memory tool")
        self.note_type = note_type

    # -- the SDK's entry point ----------------------------------------------------------------
    def call(self, input: object) -> str:
        """What the tool runner calls with the model's ``input``: checked, then run."""
        return self._answer(lambda v: self._run(v, _checked(input)))

    def _run(self, v: Vault, command: dict) -> str:
        return getattr(self, f"_{command['command']}")(v, command)

    def _answer(self, fn: Callable[[Vault], str]) -> str:
        """``fn`` on the vault as it is now (its settings read afresh: a broken settings
        file is every command's error); any error as a ToolError, secrets replaced."""
        try:
            return fn(Vault(self.root))
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - the model gets an error result, never a traceback
            err = edge.as_error(exc)
            if isinstance(err, edge.Unexpected):
                log.error("unexpected error in the memory tool", exc_info=exc)
            raise ToolError(without_secrets(edge.error_text(err))) from None

    # -- the six commands, as BetaAbstractMemoryTool declares them ------------------------------
    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._answer(lambda v: self._view(v, _as_dict(command)))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._answer(lambda v: self._create(v, _as_dict(command)))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._answer(lambda v: self._str_replace(v, _as_dict(command)))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._answer(lambda v: self._insert(v, _as_dict(command)))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._answer(lambda v: self._delete(v, _as_dict(command)))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._answer(lambda v: self._rename(v, _as_dict(command)))

    def clear_all_memory(self) -> str:
        raise ToolError("the vault's memory is never cleared in bulk: each note is forgotten by a proposal "
                        "(delete /memories/<name>.md) that a human approves")

    # -- who sees what ---------------------------------------------------------------------------
    def _sees_all(self, v: Vault) -> bool:
        return self.agent == v.config.orchestrator

    def _sees_note(self, v: Vault, info: NoteInfo) -> bool:
        """Another agent's own notes (``agent:`` someone else) are not this agent's memory."""
        owner = info.meta.get("agent")
        return owner in (None, "", self.agent) or self._sees_all(v)

    def _roles(self, v: Vault) -> list[str]:
        roles = v.pages.roles()
        return roles if self._sees_all(v) else [r for r in roles if r == self.agent]

    def _waiting(self, v: Vault) -> Waiting:
        out = Waiting()
        for item in v.inbox.items("pending"):
            if item.proposed_by != self.agent:
                continue
            note = item.meta.get("note") if isinstance(item.meta.get("note"), dict) else {}
            old = str(item.meta.get("target") or "").removeprefix(f"{layout.MEMORIES_DIR}/")
            if item.op == "add" and note.get("name"):
                out.new.setdefault(f"{ROOT}/{slugify(str(note['name']))}.md", item)
            elif item.op == "replace" and old:
                out.change.setdefault(f"{ROOT}/{old}.md", item)
                new = slugify(str(note.get("name") or old))
                if new != old:  # a rename: the new name is a note it would create
                    out.new.setdefault(f"{ROOT}/{new}.md", item)
            elif item.op == "remove" and old:
                out.delete.setdefault(f"{ROOT}/{old}.md", item)
            elif item.op == "page-add" and item.meta.get("role"):
                out.entries.setdefault(f"{ROOT}/{PAGES}/{item.meta['role']}.md", []).append(item)
        return out

    def _note(self, v: Vault, t: Target) -> NoteInfo | None:
        """The approved note at ``t`` (None if there is none); one this agent may not see
        is refused; one that cannot be read is the reader's error (file and line)."""
        if not os.path.lexists(v.root / layout.note_path(t.name)):
            return None
        info = v.notes.read(t.name)
        if not self._sees_note(v, info):
            raise PermissionRefused(f"{t.path} is {info.meta.get('agent')}'s own memory, not this agent's")
        return info

    def _page(self, v: Vault, t: Target):
        if t.name not in v.pages.roles():
            raise NotFound(f"the path {t.path} does not exist: {t.name} has no role page",
                           hint="a role page is created by its role's first dispatch")
        if t.name not in self._roles(v):
            raise PermissionRefused(f"{t.path} is another role's page, not this agent's memory")
        return v.pages.read(t.name)

    # -- view ---------------------------------------------------------------------------------
    def _view(self, v: Vault, c: dict) -> str:
        t = target(c["path"])
        waiting = self._waiting(v)
        if t.kind in ("root", "pages"):
            rows = self._listing(v, waiting, pages_only=t.kind == "pages")
            folder = v.root / (layout.AGENTS_DIR if t.kind == "pages" else layout.MEMORIES_DIR)
            size = folder.lstat().st_size if folder.is_dir() else 0
            lines = [f"{_size(size)}\t{t.path}", *rows]
            return (f"Here're the files and directories up to 2 levels deep in {t.path}, excluding hidden items:\n"
                    + "\n".join(lines))
        notes: list[str] = []
        if t.kind == "page":
            info = self._page(v, t)
            text = files.read_vault_text(v.root, info.path)
            mine = waiting.entries.get(t.path, [])
            if mine:
                notes.append(f"Your proposed entr{'y' if len(mine) == 1 else 'ies'} for this page "
                             f"({', '.join(i.id for i in mine)}) wait{'s' if len(mine) == 1 else ''} for review "
                             "and {} not shown.".format("is" if len(mine) == 1 else "are"))
        else:
            info = self._note(v, t)
            if info is not None:
                text = info.body
                item = waiting.about(t.path)
                if item is not None:
                    what = "deleting it" if t.path in waiting.delete else "a change to it"
                    notes.append(f"Your proposal of {what} (inbox item {item.id}) waits for a human's review; "
                                 "until then this is the approved memory.")
            elif t.path in waiting.new:
                item = waiting.new[t.path]
                text = item.text
                notes.append(f"PENDING REVIEW: this file is your proposal (inbox item {item.id}, filed "
                             f"{item.meta.get('proposed')}), not yet memory; a human decides it.")
            else:
                raise NotFound(f"the path {t.path} does not exist", hint=f"view {ROOT} lists the memory files")
        lines = _lines(text)
        start, end = _view_range(c.get("view_range"), len(lines))
        body = _numbered(lines[start - 1:end], start)
        return "\n".join([*notes, f"Here's the content of {t.path} with line numbers:", body]).rstrip("\n")

    def _listing(self, v: Vault, waiting: Waiting, pages_only: bool) -> list[str]:
        rows: list[tuple[str, str]] = []
        if not pages_only:
            seen: set[str] = set()
            folder = v.root / layout.MEMORIES_DIR
            for p in sorted(folder.glob("*.md")) if folder.is_dir() else []:
                path = f"{ROOT}/{p.name}"
                try:
                    info = v.notes.read(p.stem)
                except VaultmemError as exc:
                    rows.append((path, f"-\t{path} (cannot be read: {edge.one_line(exc).removeprefix('error: ')})"))
                    continue
                if not self._sees_note(v, info):
                    continue
                seen.add(path)
                mark = ""
                item = waiting.about(path)
                if item is not None:
                    what = "delete it" if path in waiting.delete else "change it"
                    mark = f" (your proposal to {what} waits for review: {item.id})"
                rows.append((path, f"{_size(len(info.body.encode('utf-8')))}\t{path}{mark}"))
            for path, item in waiting.new.items():
                if path not in seen:
                    rows.append((path, f"{_size(len(item.text.encode('utf-8')))}\t{path} "
                                       f"(pending review: your proposal {item.id}, not yet memory)"))
        roles = self._roles(v)
        if roles or pages_only:
            folder = v.root / layout.AGENTS_DIR
            if not pages_only:
                size = folder.lstat().st_size if folder.is_dir() else 0
                rows.append((f"{ROOT}/{PAGES}", f"{_size(size)}\t{ROOT}/{PAGES}/"))
            for role in roles:
                path = f"{ROOT}/{PAGES}/{role}.md"
                rel = layout.page_path(role)
                size = (v.root / rel).stat().st_size if files.may_read(v.root, rel) else 0
                mine = waiting.entries.get(path, [])
                mark = (f" ({len(mine)} proposed entr{'y waits' if len(mine) == 1 else 'ies wait'} for review)"
                        if mine else "")
                rows.append((path + "~", f"{_size(size)}\t{path}{mark}"))
        return [row for _, row in sorted(rows)]

    # -- writes: each a proposal ---------------------------------------------------------------
    def _create(self, v: Vault, c: dict) -> str:
        t = target(c["path"])
        if t.kind != "note":
            return self._page_refused(v, t, "create")
        waiting = self._waiting(v)
        if self._note(v, t) is not None:
            raise BadInput(f"File {t.path} already exists",
                           hint="str_replace or insert propose a change to it; view shows it")
        if t.path in waiting.new:
            raise BadInput(f"{t.path} is already proposed (inbox item {waiting.new[t.path].id}) and waits "
                           "for a human's review; it needs no second proposal")
        change = v.notes.remember(c["file_text"], v.actor(self.agent), self.note_type, name=t.name,
                            source=f"memory tool {t.path}")
        return _said(change, f"Proposed {t.path} as a memory note")

    def _editable(self, v: Vault, t: Target) -> NoteInfo:
        """The approved note at ``t`` that a proposal may change, or why not."""
        info = self._note(v, t)
        waiting = self._waiting(v)
        if info is None:
            if t.path in waiting.new:
                raise BadInput(f"{t.path} is your proposal (inbox item {waiting.new[t.path].id}), waiting for "
                               "review: it cannot be changed or withdrawn until a human decides it")
            raise NotFound(f"the path {t.path} does not exist", hint=f"view {ROOT} lists the memory files")
        item = waiting.about(t.path)
        if item is not None:
            raise BadInput(f"your proposal about {t.path} (inbox item {item.id}) already waits for review: "
                           "a second one waits until a human decides it")
        return info

    def _str_replace(self, v: Vault, c: dict) -> str:
        t = target(c["path"])
        if t.kind != "note":
            return self._page_refused(v, t, "str_replace")
        info = self._editable(v, t)
        old, new = c["old_str"], c["new_str"]
        if old == "":
            raise BadInput("old_str is empty: give the text to replace", field="old_str")
        count = info.body.count(old)
        if count == 0:
            raise BadInput(f"No replacement was performed, old_str `{shown(old)}` did not appear verbatim in "
                           f"{t.path}.")
        if count > 1:
            at, lines = 0, []
            while (at := info.body.find(old, at)) != -1:
                lines.append(str(info.body[:at].count("\n") + 1))
                at += 1
            raise BadInput(f"No replacement was performed. Multiple occurrences of old_str `{shown(old)}` in "
                           f"lines: {', '.join(lines)}. Please ensure it is unique")
        text = info.body.replace(old, new, 1)
        change = self._replace(v, info, t, text)
        line = info.body[:info.body.find(old)].count("\n")
        filed = (change.details.get("items") or [{}])[0].get("text")
        after = _lines(filed if isinstance(filed, str) else "")  # as filed: secrets already replaced
        lo, hi = max(0, line - 2), min(len(after), line + 3 + new.count("\n"))
        return (_said(change, f"Proposed a change to {t.path}")
                + "\nThe proposed text around the change (with line numbers):\n" + _numbered(after[lo:hi], lo + 1))

    def _insert(self, v: Vault, c: dict) -> str:
        t = target(c["path"])
        if t.kind == "page":
            self._page(v, t)
            change = v.pages.add(t.name, c["insert_text"], v.actor(self.agent))
            if change.action == "propose":
                head = f"Proposed an entry for {t.path}"
            else:
                entry = change.details.get("entry") or {}
                head = f"Added the entry ^{entry.get('id')} to {t.path}"
            return (_said(change, head) + "\nA role page's entries are appended to its Work section, dated, each "
                    "with a block id: insert_line is not used.")
        if t.kind != "note":
            return self._page_refused(v, t, "insert")
        info = self._editable(v, t)
        lines = _lines(info.body)
        at = c["insert_line"]
        if at < 0 or at > len(lines):
            raise BadInput(f"Invalid `insert_line` parameter: {at}. It should be within the range "
                           f"[0, {len(lines)}].", field="insert_line")
        lines.insert(at, c["insert_text"].rstrip("\n"))
        return _said(self._replace(v, info, t, "\n".join(lines)), f"Proposed a change to {t.path}")

    def _delete(self, v: Vault, c: dict) -> str:
        t = target(c["path"])
        if t.kind != "note":
            return self._page_refused(v, t, "delete")
        self._editable(v, t)
        change = v.notes.forget(t.name, v.actor(self.agent), reason=f"deleted through the memory tool by {self.agent}")
        return _said(change, f"Proposed deleting {t.path} (approved, the note moves to the archive)")

    def _rename(self, v: Vault, c: dict) -> str:
        old, new = target(c["old_path"]), target(c["new_path"])
        for t in (old, new):
            if t.kind != "note":
                return self._page_refused(v, t, "rename")
        info = self._editable(v, old)
        if self._note(v, new) is not None or new.path in self._waiting(v).new:
            raise BadInput(f"The destination {new.path} already exists")
        change = self._replace(v, info, old, info.body, name=new.name)
        return _said(change, f"Proposed renaming {old.path} to {new.path}")

    def _page_refused(self, v: Vault, t: Target, command: str) -> str:
        if t.kind == "root":
            raise BadInput(f"{command} cannot act on the {ROOT} folder itself", hint=f"memory paths are {SHAPES}")
        if t.kind == "page" and command == "create" and t.name not in v.pages.roles():
            raise BadInput(f"{t.path}: a role page is created by its role's first dispatch, not here")
        raise BadInput(f"{t.path}: a role page keeps its entries; the memory tool only adds one (insert), "
                       "which waits for review as any agent's entry does" if t.kind == "page" else
                       f"{command} cannot act on {t.path}, the folder of role pages")

    def _replace(self, v: Vault, info: NoteInfo, t: Target, text: str, name: str | None = None):
        """A proposal that the note ``info`` be replaced by one with ``text`` (and ``name``),
        keeping its type, scope and other fields: the review gate's REPLACE."""
        meta = info.meta
        fact: dict[str, Any] = {"op": "replace", "target": info.slug, "type": meta.get("type"), "text": text,
                                "name": name or meta.get("name") or info.slug, "author_kind": "agent",
                                "source": f"memory tool {t.path}"}
        for key in ("scope", "agent", "project", "key", "importance"):
            if meta.get(key) not in (None, ""):
                fact[key] = meta[key]
        for key in ("tags", "aliases"):
            if isinstance(meta.get(key), list) and meta[key]:
                fact[key] = [str(x) for x in meta[key]]
        return v.inbox.retain(v.actor(self.agent), json.dumps([fact], ensure_ascii=False, default=str),
                              f"memory tool {t.path}")


class VaultAsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`VaultMemoryTool` for the SDK's async client and runner: each command runs
    the sync tool on a worker thread (the vault's write lock keeps writers apart)."""

    def __init__(self, vault: str | os.PathLike | Vault | None = None, agent: str | None = None,
                 note_type: str = "fact", *, cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self.sync = VaultMemoryTool(vault, agent, note_type)
        self.root, self.agent = self.sync.root, self.sync.agent

    async def _thread(self, fn, *args) -> str:
        from anyio.to_thread import run_sync

        return await run_sync(fn, *args)

    async def call(self, input: object) -> str:
        return await self._thread(self.sync.call, input)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._thread(self.sync.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._thread(self.sync.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._thread(self.sync.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._thread(self.sync.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._thread(self.sync.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._thread(self.sync.rename, command)

    async def clear_all_memory(self) -> str:
        return self.sync.clear_all_memory()


# -- helpers ------------------------------------------------------------------------------------
def _checked(input: object) -> dict:
    """The model's input as a command: a known command with each of its fields, of its type."""
    if not isinstance(input, dict):
        raise BadInput("a memory command is an object with a command field")
    name = input.get("command")
    if name not in COMMANDS:
        raise BadInput(f"{shown(str(name))!r} is not a memory command ({', '.join(COMMANDS)})", field="command")
    out = {"command": name}
    for key, kind in COMMANDS[name].items():
        value = input.get(key)
        if value is None:
            raise BadInput(f"{name}: {key} is missing", field=key)
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise BadInput(f"{name}: {key} must be a whole number", field=key)
        if kind is str and not isinstance(value, str):
            raise BadInput(f"{name}: {key} must be text", field=key)
        out[key] = value
    if name == "view":
        out["view_range"] = input.get("view_range")
    return out


def _as_dict(command: Any) -> dict:
    """A command object (the SDK's model, or a dict) as a checked dict."""
    if isinstance(command, dict):
        return _checked(command)
    data = command.model_dump() if hasattr(command, "model_dump") else dict(vars(command))
    return _checked(data)


def _view_range(raw: Any, n: int) -> tuple[int, int]:
    """The first and last line to show (1-based, inclusive) of ``n`` lines."""
    if raw is None:
        return 1, n
    if (not isinstance(raw, (list, tuple)) or len(raw) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) for x in raw)):
        raise BadInput("view_range must be two line numbers, [first, last] (last -1: to the end)",
                       field="view_range")
    first, last = raw
    last = n if last == -1 else last
    if first < 1 or (n and first > n) or last < first - 1 or last > n:
        raise BadInput(f"view_range {list(raw)} is outside the file's lines 1 to {n}", field="view_range")
    return first, last


def _said(change, head: str) -> str:
    """What a write answers: where its proposal waits (or what it wrote), and each secret it
    replaced."""
    items = change.details.get("items") or []
    waiting = [i for i in items if i.get("status") == "pending"]
    if change.action in ("propose",) and waiting:
        ids = ", ".join(i["id"] for i in waiting)
        text = (f"{head}: inbox item {ids}, waiting for a human's review. Until it is approved it is not memory "
                f"(view {ROOT} marks it); there is no need to propose it again.")
    elif change.action == "propose":
        text = f"{head}: approved at once and committed ({', '.join(i.get('result') or '' for i in items)})."
    else:
        text = f"{head}: committed ({', '.join(change.paths)})."
    for w in change.warnings:
        text += f"\nNote: {w}"
    return text
