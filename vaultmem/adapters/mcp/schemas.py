"""What each tool returns: its output schema, as typed dictionaries the SDK publishes."""

from __future__ import annotations

from typing import Any, Optional, Union

from typing_extensions import TypedDict


# -- what each tool returns (its output schema) -------------------------------------------------
# The structured result of each tool, as the CLI's --json gives it: the fields a model can
# rely on are declared (the SDK publishes them as the tool's outputSchema and checks each
# result against them); a result may carry more. Every result may add ``warnings`` (what
# was done, but with a caveat) and ``problems`` (files that could not be read).

Many = Optional[Union[str, list[str]]]  # a filter: one value or several


def many(value: str | list[str] | None) -> tuple[str, ...]:
    """A filter's values: one string is one value."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


class Problem(TypedDict, total=False):
    """A file that could not be read."""
    path: str
    line: Optional[int]
    message: str


class Common(TypedDict, total=False):
    warnings: list[str]
    problems: list[Problem]


class ChangeOut(Common, total=False):
    """A write: what it did and the commit that holds it (none when nothing changed)."""
    action: str
    changed: bool
    commit: Optional[str]
    paths: list[str]
    message: str


class Hit(TypedDict, total=False):
    """One search hit: its source file, entry id (an entry's), snippet and score; its id
    where the path and entry id do not make it; a field without a value is left out."""
    path: str
    id: str
    kind: str
    entry_id: Optional[str]
    title: Optional[str]
    agent: Optional[str]
    section: Optional[str]
    type: Optional[str]
    date: Optional[str]
    score: float
    snippet: str
    relevance: float
    relevant: bool
    channel: str


class BriefOut(Common, total=False):
    """A brief: its Markdown (what the sub-agent is given), the sources its lines cite by layer, its size in tokens;
    ``no_memory`` when nothing outside the role's page clearly matches the task (its memory lines are the nearest)."""
    agent: str
    task: str
    budget: int
    tokens: int
    markdown: str
    cites: dict[str, list[str]]
    layers: dict[str, dict[str, int]]
    page: Optional[str]
    identity_included: bool
    live_entries: int
    index_lines: int
    index_total: int
    no_memory: bool


class DispatchOut(BriefOut, total=False):
    """The role's brief, and whether its page was created by this dispatch."""
    page_created: bool
    commit: Optional[str]


class SearchOut(Common, total=False):
    """Ranked hits; ``no_memory`` when nothing relevant was found; the query's parse when
    it used the query syntax, and the filters in effect."""
    query: str
    hits: list[Hit]
    relevant: int
    no_memory: bool
    min_relevance: float
    parsed: Optional[dict[str, Any]]
    filters: dict[str, Any]


class Entry(TypedDict, total=False):
    """A page entry: its block id, date, text and link."""
    id: Optional[str]
    section: str
    text: str
    date: Optional[str]
    line: int
    link: Optional[str]
    title: Optional[str]
    fields: dict[str, str]


class PageOut(Common, total=False):
    """A role page: properties and entries by section (context, work, subagents)."""
    name: str
    path: str
    lang: str
    frontmatter: dict[str, Any]
    sections: dict[str, list[Entry]]
    extra_sections: list[Any]


class NoteOut(Common, total=False):
    """A memory note: its frontmatter and text."""
    slug: str
    path: str
    frontmatter: dict[str, Any]
    body: str


class InboxItem(TypedDict, total=False):
    """A review-inbox item: what is proposed, by whom, its status and flags."""
    id: str
    path: str
    op: str
    status: str
    proposed_by: str
    proposed: str
    session: Optional[str]
    quarantined: bool
    flags: list[str]
    summary: str
    text: str
    note: dict[str, Any]


class ProposedOut(ChangeOut, total=False):
    """A write through the review gate: the inbox items filed (an agent's) and counts by outcome."""
    items: list[InboxItem]
    pending: int
    approved: int
    flagged: int
    quarantined: int
    slug: str
    path: str


class PageAddOut(ChangeOut, total=False):
    """The entry added to the role's page (or the inbox item that holds it for review)."""
    role: str
    entry: Entry
    items: list[InboxItem]


class ReviewOut(Common, total=False):
    """The review inbox's items of a status."""
    status: str
    items: list[InboxItem]


class IndexStatus(TypedDict, total=False):
    engine: str
    files: int
    problems: int
    semantic: dict[str, Any]


class StatsOut(Common, total=False):
    """The vault at a glance."""
    vault: str
    notes: int
    pages: int
    inbox_pending: int
    index: IndexStatus
    orchestrator: Optional[str]
    acting_as: str


class LogEntry(Common, total=False):
    """A signed log entry: agent#seq id, when, channel, type, summary, body, the entry it answers."""
    id: str
    log: str
    agent: str
    ts: str
    seq: int
    channel: str
    type: str
    summary: str
    body: str
    ref: Optional[str]
    kid: Optional[str]


class TailOut(Common, total=False):
    """Log entries, oldest first."""
    entries: list[LogEntry]


class DelegateOut(ChangeOut, total=False):
    """The pending delegation's id and the sub-agent's brief."""
    id: str
    role: str
    path: str
    page_created: bool
    next: str
    brief: BriefOut


class HarvestOut(ChangeOut, total=False):
    """The sub-agent record written (or filed for review) and the delegation closed."""
    role: str
    delegation: str
    entry: Entry
    link: str
    items: list[InboxItem]


class DecideOut(Common, total=False):
    """The decision-log entry and its note in the live log."""
    decision: LogEntry
    live: LogEntry


class CheckpointOut(Common, total=False):
    """An agent's working-context checkpoint."""
    agent: str
    path: str
    task: Optional[str]
    step: Optional[str]
    next: list[str]
    saved: Optional[str]
    age_seconds: Optional[float]
    stale: bool
    text: str


# -- the schemas as published -------------------------------------------------------------------


def flat(schema: dict) -> dict:
    """An output schema as it is published: the same constraints, in the shape a client
    checks fastest. pydantic writes each optional field as ``anyOf`` of two types and each
    nested model as a ``$ref``; a validator such as jsonschema makes a sub-validator for
    every branch and every reference, for each field of each hit (a brief's 60 items, when
    it carried them whole: several milliseconds a call in the SDK's own client). Here a reference is inlined
    (a schema that refers to itself keeps its references) and ``anyOf`` of bare types is
    one ``type`` list."""
    defs = schema.get("$defs", {})

    def walk(node, seen: frozenset):
        if isinstance(node, list):
            return [walk(x, seen) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        name = ref.rsplit("/", 1)[-1]
        if len(node) == 1 and ref.startswith("#/$defs/") and name in defs and name not in seen:
            return walk(defs[name], seen | {name})
        out = {k: walk(v, seen) for k, v in node.items() if k != "$defs"}
        alts = out.get("anyOf")
        if isinstance(alts, list) and all(isinstance(a, dict) and list(a) == ["type"] and isinstance(a["type"], str)
                                          for a in alts):
            del out["anyOf"]
            out["type"] = [a["type"] for a in alts]
        return out

    inlined = walk(schema, frozenset())
    if "$ref" in str(inlined):  # a recursive definition: its references need the definitions
        inlined["$defs"] = defs
    return inlined
