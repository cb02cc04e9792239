"""From vault files to searchable records (:class:`IndexDoc`): pure, text in, docs out.

- ``memories/*.md``: one doc per note (its frontmatter gives type, scope, importance…);
- ``agents/*.md``: one doc per entry — working-memory line, project-context bullet,
  sub-agent record — each with the text of its neighbours (±2 in the same section) as a
  low-weight ``near`` field;
- ``identity/*.md``, ``checkpoints/*.md``: one doc, owned by the agent the file names;
- ``inbox/``, ``archive/``: indexed but marked, so recall can keep them out of briefs;
- ``skills/<slug>/SKILL.md`` (or ``skills/<slug>.md``): one doc per skill, its description
  and when to use it as aliases;
- ``journal/YYYY-MM-DD.md``: one doc per turn, with its session, place and speaker, and
  its neighbours in the session as ``near`` (and one for the day's record);
- everything else (wiki, shared …): one doc per ``##`` section.

``MEMORY.md`` is not indexed: the brief loads it whole.
"""

from __future__ import annotations

import re
import threading
import unicodedata

from .. import layout
from ..errors import ParseError
from ..models import IndexDoc
from .document import parse_document, plain
from .journal import DAY_FILE, RECORD_END, RECORD_START, day_turns
from .page import parse_page

NEAR = 2  # neighbours on each side folded into an entry's ``near`` field
_FOLDER_KIND = layout.KIND_BY_FOLDER
SKIP = {layout.MEMORY_INDEX}


def kind_of(rel: str) -> str:
    top = rel.split("/", 1)[0] if "/" in rel else ""
    return _FOLDER_KIND.get(top, "doc")


def _stem(rel: str) -> str:
    return unicodedata.normalize("NFC", rel.rsplit("/", 1)[-1].removesuffix(".md"))


def _float(value, default: float) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return default
    return min(1.0, max(0.0, f)) if f == f else default


def _str_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def records(rel: str, text: str) -> list[IndexDoc]:
    """The docs of one vault file. Raises ParseError for a file that cannot be read as
    its folder's format says (a broken role page); callers report it and go on."""
    if rel in SKIP or not rel.endswith(".md"):
        return []
    if rel.startswith(tuple(f"{d}/" for d in layout.LOG_DIRS.values())) and rel.count("/") == 2:
        return _log_records(rel, text)
    kind = kind_of(rel)
    if kind == "entry" and rel.count("/") == 1:
        return _page_records(rel, text)
    if kind == "entry":
        kind = "doc"  # a file in a role's sub-folder: not a page, but still the role's own
    owner = _owner(rel)
    doc = parse_document(text, rel, require_frontmatter=False, fast=True)
    meta = plain(doc.meta) if doc.meta is not None else {}
    body = "".join(doc.lines[doc.body_start :]).replace("\r\n", "\n").strip()
    if kind in ("note", "inbox", "archive") or meta.get("type") in ("fact", "preference", "decision"):
        doc = _note_record(rel, kind, meta, body)
        doc.agent = owner or doc.agent
        return [doc]
    if kind == "journal" and rel.count("/") == 1 and DAY_FILE.match(rel.split("/")[1]):
        return _journal_records(rel, text)
    if kind == "skill" and layout.is_skill_file(rel):
        return [_skill_record(rel, meta, body)]
    if kind in ("identity", "checkpoint") and rel.count("/") == 1:
        return [IndexDoc(id=rel, path=rel, kind=kind, text=body, title=str(meta.get("name") or _stem(rel)),
                         agent=_stem(rel), status="active")]
    docs = _section_records(rel, kind, meta, body)
    for d in docs:
        d.agent = owner or d.agent
    return docs


OWNED = layout.OWNED_FOLDERS


def _owner(rel: str) -> str | None:
    """The agent a file belongs to by where it is: ``agents/<role>/…``,
    ``identity/<agent>…``, ``checkpoints/<agent>…`` (a role's sub-folder is its own)."""
    parts = rel.split("/")
    if len(parts) >= 2 and parts[0] in OWNED:
        return unicodedata.normalize("NFC", parts[1].removesuffix(".md"))
    return None


def _note_record(rel: str, kind: str, meta: dict, body: str) -> IndexDoc:
    agent = meta.get("agent")
    scope = str(meta.get("scope") or ("agent" if agent else "global"))
    agent = agent if scope == "agent" else None
    status = str(meta.get("status") or "active")
    if kind == "archive" and status not in ("archived", "superseded"):
        status = "archived"  # whatever it says, a note in the archive is not active; superseded stays so
    created = meta.get("confirmed") or meta.get("created")
    # the conversation it is part of: its session, or else what was said at the same
    # moment from the same source (an import that dates each turn by its session)
    session = meta.get("session")
    if session in (None, "") and meta.get("said") not in (None, ""):
        session = f"said:{meta.get('source') or ''}:{meta['said']}"
    return IndexDoc(
        id=rel, path=rel, kind=kind, text=body,
        title=str(meta.get("name") or _stem(rel)),
        agent=str(agent) if agent else None,
        type=str(meta["type"]) if meta.get("type") else None,
        status=status,
        author_kind=str(meta.get("author_kind") or "unknown"),
        importance=_float(meta.get("importance"), 0.5),
        date=str(created)[:10] if created else None,
        aliases=_str_list(meta.get("aliases")) + _str_list(meta.get("description")),
        key=str(meta["key"]) if meta.get("key") else None,
        project=str(meta["project"]) if meta.get("project") else None,
        session=str(session) if session not in (None, "") and not isinstance(session, (list, dict)) else None,
        turn=_number(meta.get("turn")),
        days=_days(meta.get("said"), meta.get("created"), meta.get("date")),
        speaker=str(speaker) if (speaker := meta.get("speaker") or meta.get("author")) else None,
        tags=_str_list(meta.get("tags")), meta=scalars(meta),
    )  # fmt: skip


def scalars(meta: dict) -> dict[str, str]:
    """Each scalar frontmatter value as text (``--where key=value`` compares it): strings,
    numbers, booleans (``true``/``false``), dates (ISO); lists, maps and empty values are
    left out."""
    import datetime as dt

    out = {}
    for key, value in meta.items():
        if type(value) is str:  # most values: one test, not four (a build reads every note's)
            if value:
                out[str(key)] = value
        elif isinstance(value, bool):
            out[str(key)] = "true" if value else "false"
        elif isinstance(value, (dt.date, dt.datetime)):
            out[str(key)] = value.isoformat()
        elif isinstance(value, (str, int, float)) and value != "":
            out[str(key)] = str(value)
    return out


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if f == f else None


def _days(*values) -> list[str]:
    """The distinct ISO days among frontmatter dates (a datetime's day), in order."""
    out = []
    for value in values:
        day = str(value)[:10] if value not in (None, "") else ""
        if _ISO_DAY.fullmatch(day) and day not in out:
            out.append(day)
    return out


_ISO_DAY = re.compile(r"\d{4}-\d\d-\d\d")


def session_neighbours(docs: list[IndexDoc]) -> list[int]:
    """Give each note of a session (``session`` in its frontmatter: the turns of one
    conversation) the text of its ``NEAR`` neighbours on each side, ordered by ``turn``
    (then day and id), as its ``near`` field — what page entries get from their section.
    Neighbours are the active notes of the same session and the same owner.
    ``docs``: every document of those sessions (others are left alone). Returns the
    positions of the documents whose ``near`` changed."""
    groups: dict[tuple, list[int]] = {}
    for n, d in enumerate(docs):
        # one owner's active notes only: a note scoped to a role never lends its text to a
        # note every role can find, and a superseded or archived one lends it to none
        if d.session and d.kind == "note" and d.status not in ("archived", "superseded"):
            groups.setdefault((d.session, d.agent), []).append(n)
    changed = []
    for members in groups.values():
        members.sort(key=lambda n: (docs[n].turn is None, docs[n].turn or 0.0, docs[n].days[:1], docs[n].id))
        for k, n in enumerate(members):
            around = members[max(0, k - NEAR): k] + members[k + 1: k + 1 + NEAR]
            near = " \n".join(docs[m].text for m in around)
            if near != docs[n].near:
                docs[n].near = near
                changed.append(n)
    return changed


class PageDocs:
    """A role page's entries as index documents, each made only when asked for: one
    pass parses the page (:func:`parse_page`), and :meth:`doc` makes the document of
    one entry — its text, and its neighbours' as ``near`` — in time independent of the
    page's size. The brief's page layer orders a page of 150,000 entries from the parsed
    entries alone and makes documents only of those it shows (``made`` counts them)."""

    def __init__(self, rel: str, text: str, keep: bool = False) -> None:
        """``keep``: use and keep the page's last parse while its text is the same
        (:func:`page_docs`, a brief's: an index build reads each page once)."""
        self.rel, self.role = rel, _stem(rel)
        self.page = _parsed_page(rel, text, self.role) if keep else parse_page(text, rel, stem=self.role, fast=True)
        self.entries = self.page.entries  # in page order
        # section → the positions of its entries, in page order (sections as they first appear)
        self.sections: dict[str, list[int]] = {}
        self._at: list[int] = []  # each entry's place in its section's list
        for n, e in enumerate(self.entries):
            same = self.sections.setdefault(e.section, [])
            self._at.append(len(same))
            same.append(n)
        self.made = 0  # documents made so far

    def __len__(self) -> int:
        return len(self.entries)

    def doc_id(self, n: int) -> str:
        e = self.entries[n]
        return f"{self.rel}#^{e.id}" if e.id else f"{self.rel}#L{e.line}"

    def body(self, n: int) -> str:
        """The searchable text of entry ``n``: a sub-agent record's four fields, else its text."""
        e = self.entries[n]
        if e.section == "subagents":
            f = e.fields or {}
            return "\n".join(v for v in (f.get("task"), f.get("conclusion"), f.get("output"),
                                          f.get("decision")) if v) or e.text
        return e.text

    def doc(self, n: int) -> IndexDoc:
        """The document of entry ``n`` (page order), with the text of its ``NEAR``
        neighbours on each side in its section."""
        e, k = self.entries[n], self._at[n]
        same = self.sections[e.section]
        neighbours = [self.entries[m] for m in same[max(0, k - NEAR) : k] + same[k + 1 : k + 1 + NEAR]]
        self.made += 1
        return IndexDoc(
            id=self.doc_id(n), path=self.rel, kind="entry", text=self.body(n), title=e.title or (e.project or ""),
            agent=self.role, section=e.section, status="active", author_kind="agent", importance=0.5, date=e.date,
            days=_days(e.date), near=" \n".join(x.text for x in neighbours), entry_id=e.id, project=e.project,
            line=e.line,
        )  # fmt: skip


# A warm process (the MCP server) briefs the same roles again and again: each page's last
# parse is kept while its text is the same (~0.6 ms a brief for a 4.5 KB page). The pages
# kept hold up to PARSED_CHARS characters of text in all, the least recently read dropped
# first (a page's parse takes ~10 bytes a character: ~10 MB at most); a page larger than
# that (150,000 entries) is parsed each time, as it is read each time. What is kept is
# only read: each PageDocs makes its own documents (and counts them, ``made``).
PARSED_CHARS = 1 << 20
_parsed: dict[str, tuple[str, object]] = {}
_parsed_lock = threading.Lock()


def _parsed_page(rel: str, text: str, stem: str):
    with _parsed_lock:
        kept = _parsed.pop(rel, None)
        if kept is not None and kept[0] == text:
            _parsed[rel] = kept  # read last: dropped last
            return kept[1]
    page = parse_page(text, rel, stem=stem, fast=True)
    if len(text) <= PARSED_CHARS:
        with _parsed_lock:
            _parsed.pop(rel, None)
            _parsed[rel] = (text, page)
            held = sum(len(t) for t, _p in _parsed.values())
            while held > PARSED_CHARS:
                held -= len(_parsed.pop(next(iter(_parsed)))[0])
    return page


def page_docs(rel: str, text: str) -> PageDocs:
    """A role page (``agents/<role>.md``) parsed once, its documents made on demand
    (:class:`PageDocs`), the parse kept while the text is the same. Raises ParseError as
    :func:`records` does."""
    return PageDocs(rel, text, keep=True)


def _page_records(rel: str, text: str) -> list[IndexDoc]:
    """One doc per entry, grouped by section (in the order the sections first appear),
    each section in page order."""
    docs = PageDocs(rel, text)
    return [docs.doc(n) for same in docs.sections.values() for n in same]


def _log_records(rel: str, text: str) -> list[IndexDoc]:
    """One doc per entry of a live-context or decision log (shared: owned by no agent)."""
    from .logline import entry_text, readable_entries

    kind = "decision" if rel.startswith(f"{layout.LOG_DIRS['decisions']}/") else "log"
    out = []
    for n, e in readable_entries(text):
        out.append(IndexDoc(
            id=f"{rel}#{e.agent}-{e.seq}", path=rel, kind=kind, text=entry_text(e),
            title=f"{e.agent} {e.type} #{e.channel}", section=e.channel, type=e.type, author_kind="agent",
            importance=0.7 if kind == "decision" else 0.4, date=e.ts[:10], line=n, days=_days(e.ts),
        ))  # fmt: skip
    return out


def _skill_record(rel: str, meta: dict, body: str) -> IndexDoc:
    """A skill is one document: its name the title, its description and when to use it
    the aliases (what a task's words meet first), its text the body."""
    parts = rel.split("/")
    name = str(meta.get("name") or (parts[1] if len(parts) == 3 else _stem(rel)))
    said = [str(meta[k]) for k in ("description", "when_to_use", "when") if meta.get(k)]
    return IndexDoc(id=rel, path=rel, kind="skill", text=body, title=name, aliases=said + _str_list(meta.get("aliases")),
                    status=str(meta.get("status") or "active"), author_kind=str(meta.get("author_kind") or "unknown"),
                    importance=_float(meta.get("importance"), 0.5), date=str(meta.get("created") or "")[:10] or None,
                    tags=_str_list(meta.get("tags")), meta=scalars(meta))


def _journal_records(rel: str, text: str) -> list[IndexDoc]:
    """One doc per turn of a journal day file, with its session, place and speaker, and
    its neighbours in the session (±``NEAR``) as the ``near`` field; and one for the day's
    record, when it has one."""
    day = DAY_FILE.match(rel.split("/")[1]).group(1)
    turns = day_turns(text)
    by_session: dict[str, list] = {}
    for t in turns:
        by_session.setdefault(t.session, []).append(t)
    out = []
    for session, ts in by_session.items():
        for n, t in enumerate(ts):
            neighbours = ts[max(0, n - NEAR) : n] + ts[n + 1 : n + 1 + NEAR]
            out.append(IndexDoc(
                id=f"{rel}#^{t.id}", path=rel, kind="journal", text=t.text,
                title=f"{day} {t.clock} {t.speaker}".replace("  ", " "), section=session, status="active",
                author_kind="user" if t.speaker in ("user", "human") else "agent", importance=0.2, date=day,
                days=[day], session=session, turn=float(t.id.rsplit("-", 1)[1]), speaker=t.speaker,
                near=" \n".join(x.text for x in neighbours), entry_id=t.id, line=t.line,
            ))  # fmt: skip
    start, end = text.find(RECORD_START), text.find(RECORD_END)
    if start != -1 and end > start:
        record = text[start + len(RECORD_START) : end].strip()
        out.append(IndexDoc(id=f"{rel}#record", path=rel, kind="journal", text=record, title=f"{day} record",
                            section="record", status="active", author_kind="agent", importance=0.3, date=day,
                            days=[day]))
    return out


_H2 = re.compile(r"^##\s+(.*)$", re.M)


def _section_records(rel: str, kind: str, meta: dict, body: str) -> list[IndexDoc]:
    title = str(meta.get("name") or meta.get("title") or _stem(rel))
    parts = _H2.split(body)
    chunks = [(None, parts[0])] + [(parts[i], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]
    out = []
    for n, (heading, chunk) in enumerate(chunks):
        chunk = chunk.strip()
        if not chunk and heading is None:
            continue
        out.append(IndexDoc(
            id=rel if n == 0 else f"{rel}#{n}", path=rel, kind=kind, text=chunk or heading or "",
            title=f"{title} — {heading}" if heading else title, section=heading,
            agent=str(meta["agent"]) if meta.get("agent") else None,
            status=str(meta.get("status") or "active"),
            author_kind=str(meta.get("author_kind") or "unknown"),
            importance=_float(meta.get("importance"), 0.3),
            date=str(meta.get("created") or meta.get("date") or "")[:10] or None,
            aliases=_str_list(meta.get("aliases")), days=_days(meta.get("created"), meta.get("date")),
            tags=_str_list(meta.get("tags")), meta=scalars(meta),
        ))  # fmt: skip
    return out


__all__ = ["records", "kind_of", "session_neighbours", "page_docs", "PageDocs", "ParseError"]
