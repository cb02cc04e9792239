"""A LangGraph ``BaseStore`` over a vault: a graph's long-term memory, through the review gate.

Give it to a graph as its store (``graph.compile(store=VaultStore(VAULT, agent="ella"))``)
and the nodes' ``store.get / search / put / delete / list_namespaces`` read and propose
vault memory. Two kinds of namespace exist (docs/sdk-backends.md has the whole table):

- ``("memories",)`` — the memory notes, keyed by slug (``memories/<key>.md``). The value
  is ``{"text": …, "type": …, "name": …, …}``: the note's text and its properties. A
  ``put`` proposes a new note named ``key`` (or, when the note exists, its
  replacement); ``value=None`` (``delete``) proposes forgetting it. Another agent's own
  notes (``agent:`` someone else) are not in it.
- ``("agents", ROLE)`` — a role page's entries, keyed by block id (``m-…``); the acting
  agent's own page (the orchestrator sees every page). A ``put`` adds an entry (``page
  add``) under a key of the vault's choosing; entries are never rewritten or deleted.

Every write is the acting agent's, exactly as the CLI's ``remember`` / ``forget`` /
``page add`` by an agent: a proposal in ``inbox/`` that waits for a human (the
orchestrator's page entries are written at once, as ``page add`` does). So a ``get``
right after a ``put`` still answers the approved memory. ``search`` with a ``query`` is
vaultmem's search (either index engine), scoped to what the agent may see; without one,
it lists. Errors are :class:`vaultmem.errors.VaultmemError` — what was wrong and a
hint; nothing is written — and secrets in what is put are replaced by placeholders.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Iterable
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        PutOp,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # vaultmem itself needs none of it
    raise ImportError(f"the LangGraph store needs langgraph ({exc}): pip install 'vaultmem[langgraph]'") from exc

from .. import layout, limits
from ..errors import BadInput, NotFound, PermissionRefused, VaultmemError
from ..models import NoteInfo
from ..names import check_name, slugify
from ..vault import Vault, without_secrets
from .sdk import vault_and_agent

NOTES = ("memories",)
PAGES = "agents"
SHAPES = "(\"memories\",) for memory notes, (\"agents\", ROLE) for a role page's entries"
# what a note's value may hold besides its text: the properties a proposal may carry
NOTE_FIELDS = ("type", "name", "description", "tags", "aliases", "importance", "confidence", "scope", "project")
ENTRY_FIELDS = ("section", "project")
TEXT_KEYS = ("text", "content", "memory", "data")  # where LangGraph code keeps the text


class VaultStore(BaseStore):
    """A LangGraph store over a vault, acting as ``agent`` (else ``$VAULTMEM_AGENT``;
    never as the human: a graph's writes always go through the review gate). ``vault``:
    a path, an open :class:`Vault`, or None to find it as the CLI does. ``note_type``:
    the memory type of a put that names none."""

    supports_ttl = False

    def __init__(self, vault: str | os.PathLike | Vault | None = None, agent: str | None = None,
                 note_type: str = "fact") -> None:
        self.root, self.agent = vault_and_agent(vault, agent, "the store")
        self.note_type = note_type
        self.last_changes: list = []  # what the last batch's puts filed or wrote (vaultmem Changes)

    # -- BaseStore -----------------------------------------------------------------------------
    def batch(self, ops: Iterable[Any]) -> list[Any]:
        """Run ``ops`` in order on the vault as it is now (its settings read afresh)."""
        v = Vault(self.root)
        self.last_changes = []
        out = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(v, op))
            elif isinstance(op, SearchOp):
                out.append(self._search(v, op))
            elif isinstance(op, PutOp):
                out.append(self._put(v, op))
            elif isinstance(op, ListNamespacesOp):
                out.append(self._list(v, op))
            else:
                raise BadInput(f"{type(op).__name__} is not a store operation (GetOp, SearchOp, PutOp, "
                               "ListNamespacesOp)")
        return out

    async def abatch(self, ops: Iterable[Any]) -> list[Any]:
        """:meth:`batch` on a worker thread (the vault's write lock keeps writers apart)."""
        from anyio.to_thread import run_sync

        return await run_sync(self.batch, list(ops))

    # -- namespaces --------------------------------------------------------------------------------
    def _sees_all(self, v: Vault) -> bool:
        return self.agent == v.config.orchestrator

    def _roles(self, v: Vault) -> list[str]:
        roles = v.pages.roles()
        return roles if self._sees_all(v) else [r for r in roles if r == self.agent]

    def _namespaces(self, v: Vault) -> list[tuple[str, ...]]:
        return sorted([NOTES, *((PAGES, r) for r in self._roles(v))])

    def _where(self, v: Vault, namespace: tuple[str, ...]) -> str | None:
        """The role of an ``("agents", ROLE)`` namespace this agent may see, None for the
        notes' namespace; anything else refused."""
        namespace = tuple(namespace)
        if namespace == NOTES:
            return None
        if len(namespace) == 2 and namespace[0] == PAGES:
            try:
                role = check_name(namespace[1], "role name")
            except VaultmemError as exc:
                why = exc.message.rpartition(" is refused: ")[2]
                raise BadInput(f"the namespace {_shown(namespace)} is refused: {why}", field="namespace") from None
            if role not in v.pages.roles():
                raise NotFound(f"there is no role page for {_shown(role)} (namespace {_shown(namespace)})",
                               hint="a role page is created by its role's first dispatch")
            if role not in self._roles(v):
                raise PermissionRefused(f"the namespace {_shown(namespace)} is another role's page, "
                                        "not this agent's memory")
            return role
        raise BadInput(f"the namespace {_shown(namespace)} is not in a vault", field="namespace",
                       hint=f"namespaces are {SHAPES}")

    # -- reading ---------------------------------------------------------------------------------
    def _note_item(self, v: Vault, info: NoteInfo, cls=Item, score: float | None = None) -> Item:
        meta = info.meta
        value = {"text": info.body.strip("\n"),
                 **{k: _plain(meta[k]) for k in ("name", "description", "type", "scope", "agent", "project",
                                                 "tags", "aliases", "importance", "confidence", "author",
                                                 "author_kind", "source", "status", "key")
                    if meta.get(k) not in (None, "", [])}}
        mtime = _mtime(v, info.path)
        created, updated = _when(meta.get("created"), mtime), _when(meta.get("confirmed"), mtime)
        args = dict(namespace=NOTES, key=info.slug, value=value, created_at=created, updated_at=updated)
        return SearchItem(**args, score=score) if cls is SearchItem else Item(**args)

    def _entries(self, v: Vault, role: str) -> list[tuple[dict, Any]]:
        page = v.pages.read(role)
        mtime = _mtime(v, page.path)
        out = []
        for e in page.entries:
            if not e.id:
                continue
            value = {k: x for k, x in e.to_dict().items() if k not in ("id", "line")}
            value["text"] = e.text
            out.append((value, _when(e.date, mtime), e.id))
        return out

    def _entry_item(self, role: str, value: dict, when, key: str, cls=Item, score: float | None = None) -> Item:
        args = dict(namespace=(PAGES, role), key=key, value=value, created_at=when, updated_at=when)
        return SearchItem(**args, score=score) if cls is SearchItem else Item(**args)

    def _visible(self, v: Vault, info: NoteInfo) -> bool:
        owner = info.meta.get("agent")
        return owner in (None, "", self.agent) or self._sees_all(v)

    def _read_note(self, v: Vault, key: str) -> NoteInfo | None:
        slug = _slug(key)
        if not os.path.lexists(v.root / layout.note_path(slug)):
            return None
        info = v.notes.read(slug)  # a broken file is its reader's error, with file and line
        return info if self._visible(v, info) else None

    def _get(self, v: Vault, op: GetOp) -> Item | None:
        role = self._where(v, op.namespace)
        if role is None:
            info = self._read_note(v, op.key)
            return self._note_item(v, info) if info is not None else None
        for value, when, key in self._entries(v, role):
            if key == op.key:
                return self._entry_item(role, value, when, key)
        return None

    def _search(self, v: Vault, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        spaces = [ns for ns in self._namespaces(v) if ns[:len(prefix)] == prefix]
        if not spaces:
            return []
        want_notes = NOTES in spaces
        roles = [ns[1] for ns in spaces if ns[0] == PAGES]
        found: list[SearchItem] = []
        if op.query:
            kinds = (("note",) if want_notes else ()) + (("entry",) if roles else ())
            # room for what the filter drops, within what a search may be asked for
            wanted = min(max(1, op.offset + op.limit) * 3 + 10, limits.SIZES["limit"].hi)
            # a store's query is natural language (LangGraph's semantic search): plain words
            hits = v.search(op.query, agent=None if self._sees_all(v) else self.agent, kinds=kinds, limit=wanted,
                            syntax=False)
            pages: dict[str, dict] = {}
            for hit in hits:
                d = hit.doc
                if d.kind == "note" and want_notes:
                    info = self._read_note(v, d.path.rsplit("/", 1)[-1].removesuffix(".md"))
                    if info is not None:
                        found.append(self._note_item(v, info, SearchItem, hit.score))
                elif d.kind == "entry" and d.entry_id:
                    role = d.path.rsplit("/", 1)[-1].removesuffix(".md")
                    if role not in roles:
                        continue
                    if role not in pages:
                        pages[role] = {key: (value, when) for value, when, key in self._entries(v, role)}
                    if d.entry_id in pages[role]:
                        value, when = pages[role][d.entry_id]
                        found.append(self._entry_item(role, value, when, d.entry_id, SearchItem, hit.score))
        else:
            if want_notes:
                folder = v.root / layout.MEMORIES_DIR
                for p in sorted(folder.glob("*.md")) if folder.is_dir() else []:
                    try:
                        info = v.notes.read(p.stem)
                    except VaultmemError:
                        continue  # a file that cannot be read is not listed (get names its problem)
                    if self._visible(v, info):
                        found.append(self._note_item(v, info, SearchItem))
            for role in roles:
                found += [self._entry_item(role, value, when, key, SearchItem)
                          for value, when, key in self._entries(v, role)]
        if op.filter:
            found = [i for i in found if _matches(i.value, op.filter)]
        return found[op.offset:op.offset + op.limit]

    def _list(self, v: Vault, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = [ns for ns in self._namespaces(v)
                  if all(_condition(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            spaces = sorted({ns[:op.max_depth] for ns in spaces})
        return spaces[op.offset:op.offset + op.limit]

    # -- writing: each a proposal ------------------------------------------------------------------
    def _put(self, v: Vault, op: PutOp) -> None:
        role = self._where(v, op.namespace)
        actor = v.actor(self.agent)
        if role is not None:
            if op.value is None:
                raise BadInput("a role page's entries are never deleted", field="value",
                               hint="a human edits the page; an agent adds an entry that corrects it")
            if op.key in {key for _, _, key in self._entries(v, role)}:
                raise BadInput(f"the entry {op.key} exists: a role page's entries are never rewritten",
                               field="key", hint="put a new entry (any new key) that corrects it")
            text, fields = _value(op.value, ENTRY_FIELDS)
            change = v.pages.add(role, text, actor, section=fields.get("section") or "work",
                                 project=fields.get("project"))
            self.last_changes.append(change)
            return None
        slug = _slug(op.key)
        info = self._read_note(v, slug)
        if os.path.lexists(v.root / layout.note_path(slug)) and info is None:
            raise PermissionRefused(f"memories/{slug}.md is another agent's own memory, not this agent's")
        mine = [i for i in v.inbox.items("pending") if i.proposed_by == self.agent]
        if op.value is None:
            if info is None:
                return None  # nothing to forget: as for any store, deleting what is not there does nothing
            if any(i.op == "remove" and i.meta.get("target") == layout.note_ref(slug) for i in mine):
                return None  # already proposed
            change = v.notes.forget(slug, actor, reason=f"deleted through the LangGraph store by {self.agent}")
            self.last_changes.append(change)
            return None
        text, fields = _value(op.value, NOTE_FIELDS)
        if info is None:
            same = [i for i in mine if i.op == "add" and slugify(str((i.meta.get("note") or {}).get("name") or ""))
                    == slug]
            if any(i.text == text.strip() for i in same):
                return None  # this very proposal already waits for review
            if same:
                raise BadInput(f"memories/{slug}.md is already proposed (inbox item {same[0].id}) and waits for "
                               "review: it cannot be changed until a human decides it", field="key")
            change = v.notes.remember(text, actor, fields.pop("type", None) or self.note_type,
                                      name=fields.pop("name", slug), source=f"LangGraph store {NOTES[0]}/{slug}",
                                      **_note_kwargs(fields))
        else:
            if any(i.meta.get("target") == layout.note_ref(slug) for i in mine):
                raise BadInput(f"a proposal about memories/{slug}.md already waits for review", field="key",
                               hint="a second one waits until a human decides the first")
            meta = info.meta
            fact: dict[str, Any] = {"op": "replace", "target": slug, "text": text,
                                    "type": fields.get("type") or meta.get("type"),
                                    "name": fields.get("name") or meta.get("name") or slug,
                                    "author_kind": "agent", "source": f"LangGraph store {NOTES[0]}/{slug}"}
            for key in ("scope", "agent", "project", "key", "importance", "tags", "aliases", "description"):
                if fields.get(key) not in (None, "", []):
                    fact[key] = fields[key]
                elif key not in ("description",) and meta.get(key) not in (None, "", []):
                    fact[key] = _plain(meta[key])
            change = v.inbox.retain(actor, json.dumps([fact], ensure_ascii=False, default=str),
                                    f"LangGraph store {NOTES[0]}/{slug}")
        self.last_changes.append(change)
        return None


# -- helpers ------------------------------------------------------------------------------------
def _shown(x: Any) -> str:
    """A value an error quotes: a secret in it replaced, a long one cut."""
    text = without_secrets(repr(x))
    return text if len(text) <= 200 else text[:197] + "..."


def _slug(key: str) -> str:
    """A note's key: its slug exactly (so the approved note is at the key it was put under)."""
    try:
        name = check_name(str(key), "key", field="key")
    except VaultmemError as exc:
        why = exc.message.rpartition(" is refused: ")[2]
        raise BadInput(f"the key {_shown(key)} is refused: {why}", field="key", hint=exc.hint) from None
    if slugify(name) != name:
        suggest = f"use {slugify(name)!r}: " if without_secrets(name) == name else ""
        raise BadInput(f"the key {_shown(name)} is not a note's slug", field="key",
                       hint=f"{suggest}lower case, words joined by '-' (a uuid is fine)")
    return name


def _value(value: Any, allowed: tuple[str, ...]) -> tuple[str, dict]:
    """The text of a put's value and its other fields, each one vaultmem keeps."""
    if not isinstance(value, dict):
        raise BadInput("a value is a mapping with the text under 'text'", field="value")
    keys = [k for k in TEXT_KEYS if k in value]
    if len(keys) != 1 or not isinstance(value[keys[0]], str):
        raise BadInput("the value needs its text, as a string, under one of " + ", ".join(map(repr, TEXT_KEYS)),
                       field="text")
    fields = {k: x for k, x in value.items() if k != keys[0]}
    unknown = sorted(set(map(str, fields)) - set(allowed))
    if unknown:
        raise BadInput(f"the value's field(s) {', '.join(unknown)} are not kept by a vault", field=unknown[0],
                       hint=f"besides the text: {', '.join(allowed)}")
    return value[keys[0]], fields


def _note_kwargs(fields: dict) -> dict:
    out = dict(fields)
    for key, name in (("tags", "tags"), ("aliases", "aliases")):
        if key in out:
            x = out[key]
            out[name] = [str(t) for t in x] if isinstance(x, list) else [str(x)]
    return out


def _plain(x: Any) -> Any:
    if isinstance(x, (_dt.date, _dt.datetime)):
        return x.isoformat()
    if isinstance(x, list):
        return [_plain(i) for i in x]
    return x


def _mtime(v: Vault, rel: str) -> _dt.datetime:
    try:
        return _dt.datetime.fromtimestamp((v.root / rel).stat().st_mtime, _dt.timezone.utc)
    except OSError:
        return _dt.datetime.now(_dt.timezone.utc)


def _when(x: Any, default: _dt.datetime) -> _dt.datetime:
    """A frontmatter time (or date) as an aware datetime; ``default`` when there is none."""
    if isinstance(x, _dt.datetime):
        return x if x.tzinfo else x.replace(tzinfo=_dt.timezone.utc)
    if isinstance(x, _dt.date):
        return _dt.datetime(x.year, x.month, x.day, tzinfo=_dt.timezone.utc)
    if isinstance(x, str) and x:
        try:
            return _when(_dt.datetime.fromisoformat(x.replace("Z", "+00:00")), default)
        except ValueError:
            return default
    return default


OPS = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
       "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def _matches(value: dict, filter: dict) -> bool:
    """LangGraph's filter: each key equal to its value, or ``{"$gt": …}`` and the like."""
    for key, want in filter.items():
        have = value.get(key)
        if isinstance(want, dict) and want and all(k in OPS for k in want):
            try:
                if not all(OPS[k](have, x) for k, x in want.items()):
                    return False
            except TypeError:
                return False
        elif have != want and not (isinstance(have, list) and want in have):
            return False
    return True


def _condition(c: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(c.path)
    if len(path) > len(ns):
        return False
    part = ns[:len(path)] if c.match_type == "prefix" else ns[len(ns) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part))
