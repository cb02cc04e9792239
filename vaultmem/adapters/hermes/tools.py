"""The provider's tools (OpenAI function format), mirroring the MCP server's: the same
facade calls, the same review gate."""

from __future__ import annotations

from typing import Any, Callable

from ...errors import BadInput
from ...vault import Vault, without_secrets
from .. import edge


# -- the tools ---------------------------------------------------------------------------------------

class Tool:
    """One tool: its description, its parameters (name → (JSON type, description,
    default or REQUIRED)), whether it writes, and the facade call it makes."""

    def __init__(self, description: str, params: dict[str, tuple], run: Callable[..., dict], writes: bool):
        self.description = description
        self.params = params
        self.run = run
        self.writes = writes

    def parameters(self) -> dict[str, Any]:
        props = {}
        for name, (kind, desc, default) in self.params.items():
            schema: dict[str, Any] = {"type": kind, "description": desc}
            if kind == "array":
                schema["items"] = {"type": "string"}
            if default is not REQUIRED and default is not None:
                schema["default"] = default
            props[name] = schema
        return {"type": "object", "properties": props,
                "required": [n for n, (_k, _d, default) in self.params.items() if default is REQUIRED]}

    def check(self, args: Any) -> dict[str, Any]:
        """The arguments, checked against the parameters (a usage error names the first
        one at fault, without repeating its value)."""
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise edge.UsageError("the arguments must be an object", field="arguments")
        unknown = sorted(set(map(str, args)) - set(self.params))
        if unknown:
            raise edge.UsageError(f"unknown parameter {unknown[0]!r}", field=unknown[0],
                                  hint=f"the parameters: {', '.join(self.params)}")
        out = {}
        for name, (kind, _desc, default) in self.params.items():
            value = args.get(name)
            if value is None:
                if default is REQUIRED:
                    raise edge.UsageError("is required", field=name)
                out[name] = default
                continue
            ok = {"string": isinstance(value, str),
                  "integer": isinstance(value, int) and not isinstance(value, bool),
                  "number": isinstance(value, (int, float)) and not isinstance(value, bool),
                  "boolean": isinstance(value, bool),
                  "array": isinstance(value, list) and all(isinstance(x, str) for x in value)}[kind]
            if not ok:
                wanted = {"array": "a list of strings"}.get(kind, f"a {kind}")
                raise edge.UsageError(f"must be {wanted}", field=name)
            out[name] = value
        return out


REQUIRED = object()


def _search(v: Vault, actor, query, agent, limit, kind, type) -> dict:
    hits = v.search(query, agent=agent, kinds=tuple(kind or ()), types=tuple(type or ()), limit=limit)
    return _with(hits, hits.handed(without_secrets(query)))


def _with(result, data: dict) -> dict:
    warnings = list(dict.fromkeys(getattr(result, "warnings", None) or []))
    if warnings:
        data["warnings"] = warnings
    if getattr(result, "skipped_files", None):
        data["problems"] = result.skipped_files
    return data


def _read_page(v: Vault, actor, role) -> dict:
    return v.pages.read(role).to_dict()


def _read_note(v: Vault, actor, slug) -> dict:
    return v.notes.read(slug).to_dict()


def _remember(v: Vault, actor, text, type, name, description, importance, tag, key, scope, author_kind,
              source) -> dict:
    change = v.notes.remember(text, actor, type, name=name, description=description, importance=importance,
                        tags=tag or [], key=key, scope=scope, author_kind=author_kind, source=source)
    return change.to_dict()


def _page_add(v: Vault, actor, role, text, section, project) -> dict:
    return v.pages.add(role, text, actor, section=section, project=project).to_dict()


def _log_append(v: Vault, actor, summary, channel, type, body) -> dict:
    e = v.shared.append(actor, channel, type, summary, body or "")
    return _with(e, e.to_dict())


def _log_tail(v: Vault, actor, n, unseen, agent, channel, type, since) -> dict:
    entries = v.shared.tail(n, agent=agent, channel=channel, type_=type, since=since,
                            unseen_as=actor if unseen else None)
    return {"entries": [e.to_dict() for e in entries]}


def _review_list(v: Vault, actor, status) -> dict:
    if status not in ("pending", "approved", "rejected", "all"):
        raise BadInput(f"{status!r} is not pending, approved, rejected or all", field="status")
    return {"status": status, "items": v.inbox.listing(status)}  # what vaultmem filed, a change since marked


TOOLS: dict[str, Tool] = {
    "search_memory": Tool(
        "Search the team's vault memory (Chinese, English or both): ranked hits, each with its source, entry "
        "id, a snippet and its score. With agent: only that role's own page and memory plus global and shared "
        "memory.",
        {"query": ("string", "what to look for", REQUIRED),
         "agent": ("string", "search as this role (its page, global and shared memory)", None),
         "limit": ("integer", "how many hits at most", 10),
         "kind": ("array", "only these kinds: note, entry, identity, wiki, skill, journal, shared, checkpoint", None),
         "type": ("array", "only notes of these types", None)},
        _search, writes=False),
    "read_page": Tool(
        "A role's page in the vault (agents/ROLE.md), parsed: its properties and each entry with its block id, "
        "by section (context, work, subagents).",
        {"role": ("string", "the role's name", REQUIRED)}, _read_page, writes=False),
    "read_note": Tool(
        "A memory note of the vault (memories/SLUG.md): its frontmatter and its text.",
        {"slug": ("string", "the note's slug", REQUIRED)}, _read_note, writes=False),
    "remember": Tool(
        "Propose a lasting fact for the vault's memory (a memory note and its MEMORY.md line). It waits in the "
        "review inbox until a human approves it; secrets in it are replaced by placeholders.",
        {"text": ("string", "the fact, in a sentence or two", REQUIRED),
         "type": ("string", "preference, decision, fact, failure+fix, procedure or episode", REQUIRED),
         "name": ("string", "a short title", None), "description": ("string", "one line for the index", None),
         "importance": ("number", "0 to 1", None), "tag": ("array", "tags", None),
         "key": ("string", "a key such as backend.port: a newer fact with the same key supersedes", None),
         "scope": ("string", "global, agent or project", None),
         "author_kind": ("string", "who stated it: user, agent, third_party or unknown", None),
         "source": ("string", "where it comes from (a session, a file)", None)},
        _remember, writes=True),
    "page_add": Tool(
        "Add an entry with a stable block id to a role's page: section work (a dated working-memory entry) or "
        "context (a project-context bullet, under project). Only the orchestrator writes a page directly; "
        "another agent's entry waits in the review inbox.",
        {"role": ("string", "the role's name", REQUIRED), "text": ("string", "what was learned", REQUIRED),
         "section": ("string", "work or context", "work"), "project": ("string", "the project (context)", None)},
        _page_add, writes=True),
    "log_append": Tool(
        "Append a signed entry to the team's shared live log: one line on what happened (needs the agent's key).",
        {"summary": ("string", "one line", REQUIRED), "channel": ("string", "the channel", "general"),
         "type": ("string", "status, question, answer, handoff …", "status"),
         "body": ("string", "details", None)},
        _log_append, writes=True),
    "log_tail": Tool(
        "The newest entries of the shared live log, oldest first. With unseen: only other agents' entries "
        "this agent has not read, which are then marked read.",
        {"n": ("integer", "how many", 20), "unseen": ("boolean", "only entries not read yet", False),
         "agent": ("string", "only this agent's", None), "channel": ("string", "only this channel", None),
         "type": ("string", "only this type", None), "since": ("string", "2026-05-08, 30m, 2h, 3d", None)},
        _log_tail, writes=False),
    "review_list": Tool(
        "The vault's review inbox: what waits for a human's decision (status pending), or decided items.",
        {"status": ("string", "pending, approved, rejected or all", "pending")}, _review_list, writes=False),
}
# log_tail with unseen marks entries read (per-machine state, not the vault's memory): a read here
