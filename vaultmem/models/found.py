"""What the index holds and a search finds: :class:`IndexDoc`, :class:`Hit`, :class:`Hits`."""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import fields as _fields
from typing import Any


@dataclass
class IndexDoc:
    """One searchable unit: a memory note, one role-page entry, or a section of another
    vault file. ``id`` is what search results and evaluations cite: the note's path, or
    ``agents/<role>.md#^<entry id>`` for an entry (``#L<line>`` when it has no id)."""

    id: str
    path: str
    kind: str
    text: str
    title: str = ""
    agent: str | None = None
    section: str | None = None
    type: str | None = None
    status: str = "active"
    author_kind: str = "unknown"
    importance: float = 0.5
    date: str | None = None
    aliases: list[str] = field(default_factory=list)
    near: str = ""
    entry_id: str | None = None
    project: str | None = None
    line: int | None = None
    key: str | None = None
    tags: list[str] = field(default_factory=list)
    # a note's scalar frontmatter, as text (``--where key=value`` filters on it)
    meta: dict[str, str] = field(default_factory=dict)
    # the conversation a note belongs to (frontmatter ``session``) and its place in it
    # (``turn``): notes of one session are each other's neighbours (the ``near`` field)
    session: str | None = None
    turn: float | None = None
    days: list[str] = field(default_factory=list)  # ISO days it is dated by (said, created…): date terms
    speaker: str | None = None  # who said it (a note's speaker or author): not what it is about

    def plain(self) -> dict:
        """Its fields as a dict JSON takes, in their order (they are flat: ``asdict``'s deep
        copy costs many times as much, and an index build makes one per document)."""
        return {name: self.__dict__[name] for name in _INDEX_DOC_FIELDS}

    @classmethod
    def from_plain(cls, data: dict) -> "IndexDoc":
        """The doc :meth:`plain` gave ``data`` of (an index's stored copy, read back):
        every field and nothing else is taken as it is, without ``__init__``'s matching
        of keywords (a third of the cost of reading a hit); any other dict goes through
        ``__init__``, and fails as it would."""
        if len(data) != len(_INDEX_DOC_FIELDS) or data.keys() != _INDEX_DOC_KEYS:
            return cls(**data)
        doc = cls.__new__(cls)
        doc.__dict__.update(data)
        return doc

    @property
    def link(self) -> str:
        target = self.path.removesuffix(".md")
        if self.entry_id:
            return f"[[{target}#^{self.entry_id}]]"
        return f"[[{target}]]"


_INDEX_DOC_FIELDS = tuple(f.name for f in _fields(IndexDoc))
_INDEX_DOC_KEYS = frozenset(_INDEX_DOC_FIELDS)


class _MadeWhenRead:
    """A dataclass field given as its value or as a function that makes it: made at its
    first reading. A brief ranks 60 hits and shows a few of them: the others' snippets
    are never highlighted."""

    def __set_name__(self, owner, name: str) -> None:
        self.key = f"_{name}"

    def __get__(self, obj, owner=None):
        if obj is None:
            return ""  # the field's default
        value = obj.__dict__.get(self.key, "")  # (a Hit made without __init__: the default)
        if callable(value):
            value = obj.__dict__[self.key] = value()
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.key] = value


@dataclass
class Hit:
    """A search result: the document, its engine score, the share of query terms it
    holds (``coverage``), and a highlighted snippet (given as a function: made when
    first read)."""

    doc: IndexDoc
    score: float
    coverage: float = 0.0
    snippet: str = _MadeWhenRead()
    rank_score: float | None = None
    # which ranking found it: "lexical", "semantic" or "both" (hybrid search fuses them)
    channel: str = "lexical"
    similarity: float | None = None  # cosine similarity to the query (semantic channel)
    # its meaning is close to the query's: similarity at least the model's ``relevant_at``
    close: bool = False
    semantic_rank: int | None = None  # its place in the semantic channel's ranking (1: most similar)
    relevant: bool | None = None  # whether it passes the relevance cut (None: not judged)
    # how much of the query it answers, 0..1: its terms weighted by rarity (retrieve.search)
    relevance: float | None = None
    via: str | None = None  # the link of the hit it was found through (a brief's one hop of links)
    rerank: float | None = None  # the cross-encoder's logit, when search.reranker re-ordered it

    def to_dict(self) -> dict[str, Any]:
        d = self.doc
        out = {"id": d.id, "path": d.path, "kind": d.kind, "entry_id": d.entry_id, "link": d.link,
               "title": d.title, "agent": d.agent, "section": d.section, "type": d.type, "date": d.date,
               "score": round(self.score, 4), "coverage": round(self.coverage, 3), "snippet": self.snippet,
               "channel": self.channel}
        out.update(self._given("similarity", "relevance", "relevant", "rank_score", "via", "rerank"))
        return out

    _PLACES = {"similarity": 4, "relevance": 3, "rank_score": 4, "rerank": 4}  # each figure's rounding as shown

    def _given(self, *names: str) -> dict[str, Any]:
        """Those of the hit's optional fields ``names`` that it has, in that order, each
        figure rounded as shown."""
        out = {}
        for name in names:
            value = getattr(self, name)
            if value is not None:
                out[name] = round(value, self._PLACES[name]) if name in self._PLACES else value
        return out

    def handed(self) -> dict[str, Any]:
        """The hit as an agent is handed it (the MCP and Hermes tools): :meth:`to_dict`
        without what its other fields make — ``link``, and ``id`` where it is the path (a
        note) or the path, ``#^`` and the entry id (an entry with a block id); a live-log
        line's ``#agent-seq``, an entry's ``#L`` line, a section's ``#n`` keep it — without
        ``coverage`` and ``rank_score`` (ranking's), a field without a value, and the
        channel when it is the lexical one. An agent reads every character of it."""
        d = self.doc
        out = {"path": d.path}
        if d.id != (f"{d.path}#^{d.entry_id}" if d.entry_id else d.path):
            out["id"] = d.id
        out["kind"] = d.kind
        for key, value in (("entry_id", d.entry_id), ("title", d.title), ("agent", d.agent), ("section", d.section),
                           ("type", d.type), ("date", d.date)):
            if value:
                out[key] = value
        out["score"] = round(self.score, 4)
        out["snippet"] = self.snippet
        out.update(self._given("relevance", "relevant"))
        if self.channel != "lexical":
            out["channel"] = self.channel
        out.update(self._given("similarity", "via", "rerank"))
        return out


class Hits(list):
    """Search hits, best first — a list — with what the search could not draw on:
    ``skipped_files``, the index's problem (``path``, ``line``, ``message``) for each file
    in the search's scope that could not be read (broken YAML, a missing section), so it
    was not searched; and ``warnings``, why a search could find nothing (a query of common
    words only, say)."""

    def __init__(self, hits=(), skipped_files=(), warnings=()) -> None:
        super().__init__(hits)
        warnings = [*warnings, *(w for w in getattr(hits, "warnings", ()) if w not in warnings)]  # the search's own
        self.skipped_files: list[dict[str, Any]] = list(skipped_files)
        self.warnings: list[str] = list(warnings)
        self.parsed: dict[str, Any] | None = None  # the query as its syntax was read (Query.to_dict)
        self.filters: dict[str, Any] | None = None  # every filter the search applied
        self.min_relevance: float | None = None  # the relevance cut the hits were judged by

    @property
    def relevant(self) -> list[Hit]:
        """The hits that pass the relevance cut."""
        return [h for h in self if h.relevant]

    @property
    def no_memory(self) -> bool:
        """Whether nothing relevant was found: no hit passes the relevance cut ("no memory
        of this"), though some may share a word with the query."""
        return not self.relevant

    def to_dict(self, query: str) -> dict[str, Any]:
        """The JSON of a search: the query, the hits, how many pass the relevance cut and
        whether none does."""
        out = {"query": query, "hits": [h.to_dict() for h in self], "relevant": len(self.relevant),
               "no_memory": self.no_memory, "min_relevance": self.min_relevance}
        if self.parsed is not None and self.parsed.get("text") == query:  # a query shown redacted: not its terms
            out["parsed"] = self.parsed
        if self.filters is not None:
            out["filters"] = self.filters
        return out

    def handed(self, query: str) -> dict[str, Any]:
        """The search as an agent is handed it (the MCP and Hermes tools; Claude Code gives
        its model a tool's structured content, not its text): :meth:`to_dict` with each hit
        :meth:`Hit.handed`, the query's parse only when it used the query syntax (a phrase,
        ``-word``, ``OR``, ``prefix*``), and only the filters in effect."""
        out = {"query": query, "hits": [h.handed() for h in self], "relevant": len(self.relevant),
               "no_memory": self.no_memory, "min_relevance": self.min_relevance}
        if self.parsed is not None and self.parsed.get("syntax") and self.parsed.get("text") == query:
            out["parsed"] = self.parsed
        filters = {k: v for k, v in (self.filters or {}).items() if v not in (None, "", [], ())}
        if filters:
            out["filters"] = filters
        return out
