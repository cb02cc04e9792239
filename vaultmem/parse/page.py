"""Role pages (``agents/<role>.md``): parse, and edit by inserting lines.

The format (seed 000): frontmatter ``name, category, first_used, projects, tags,
type: agent-page``; a ``# <role> …`` title; three ``##`` sections — project context
(``### <project>`` blocks of bullets), working memory (``- YYYY-MM-DD | text ^m-id``
lines) and sub-agent records (``### <date> <title>`` blocks with four bullets). Headings
may be Chinese or English; other sections and text a human added are kept untouched.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from dataclasses import dataclass, field

from ..errors import BadInput, ParseError
from ..models import Entry, PageInfo
from .document import Document, parse_document, plain

HEADINGS = {
    "zh": {"context": "项目上下文", "work": "工作记忆", "subagents": "子Agent记录"},
    "en": {"context": "Project context", "work": "Working memory", "subagents": "Sub-agent records"},
}
TITLE = {"zh": "# {name} Agent 记忆", "en": "# {name} agent memory"}
SECTION_COMMENTS = {
    "zh": {
        "context": "<!-- 与该Agent相关的项目背景、技术栈、用户在此项目上的偏好 -->",
        "work": "<!-- Agent在工作过程中积累的经验、教训、模式认知 -->",
        "subagents": "<!-- 通过delegate创建的子Agent的工作回收记录 -->",
    },
    "en": {
        "context": "<!-- Per project: stack, the user's preferences, key constraints -->",
        "work": "<!-- Lessons, findings and patterns this agent learned while working -->",
        "subagents": "<!-- Results harvested from sub-agents delegated under this role -->",
    },
}
SUBAGENT_FIELDS = {
    "task": ("任务", "Task"),
    "conclusion": ("结论", "Conclusion"),
    "output": ("产出", "Output"),
    "decision": ("关键决策", "Key decision"),
}


def _fold(heading: str) -> str:
    return re.sub(r"[\s\-_]+", "", heading).casefold()


_SECTION_BY_HEADING = {
    _fold(text): (key, lang) for lang, table in HEADINGS.items() for key, text in table.items()
}
_SECTION_BY_HEADING[_fold("Subagent records")] = ("subagents", "en")
_SECTION_BY_HEADING[_fold("子代理记录")] = ("subagents", "zh")
_FIELD_BY_LABEL = {_fold(label): key for key, labels in SUBAGENT_FIELDS.items() for label in labels}

_H = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^[-*+]\s+(.*)$")
_BLOCK_ID = re.compile(r"\s+\^([A-Za-z0-9-]+)\s*$")
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})\s*\|\s*(.*)$", re.S)
_FIELD = re.compile(r"^\*\*(.+?)\*\*\s*[:：]?\s*(.*)$", re.S)
_RECORD_TITLE = re.compile(r"^(\d{4}-\d{2}-\d{2})\s+(.*)$")


@dataclass
class Section:
    key: str | None  # context | work | subagents, or None for a section we don't know
    heading: str
    start: int  # index of the heading line
    end: int  # index one past the section's last line


@dataclass
class RolePage:
    doc: Document
    name: str
    lang: str
    sections: dict[str, Section]
    extra_sections: list[str] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.doc.path

    @property
    def projects(self) -> list[str]:
        value = self.doc.meta.get("projects")  # a list, or a single project written as text
        if value is None:
            return []
        if isinstance(value, (list, tuple)):
            return [str(x) for x in value]
        return [str(value)]

    def info(self) -> PageInfo:
        return PageInfo(
            name=self.name,
            path=self.path,
            meta=plain(self.doc.meta),
            lang=self.lang,
            entries=list(self.entries),
            extra_sections=list(self.extra_sections),
        )

    def ids(self) -> set[str]:
        return {e.id for e in self.entries if e.id}


def parse_page(text: str, path: str, stem: str | None = None, fast: bool = False) -> RolePage:
    """Parse a role page. Raises ParseError naming the file and line for broken YAML,
    a missing or duplicated section. ``fast``: read-only (for indexing)."""
    doc = parse_document(text, path, require_frontmatter=True, fast=fast)
    fenced = doc.fenced()
    sections: list[Section] = []
    for i in doc.body_lines():
        if fenced[i]:
            continue
        m = _H.match(doc.content(i))
        if m and len(m.group(1)) == 2:
            key, _lang = _SECTION_BY_HEADING.get(_fold(m.group(2)), (None, None))
            if sections:
                sections[-1].end = i
            sections.append(Section(key, m.group(2), i, len(doc.lines)))
    known: dict[str, Section] = {}
    langs = []
    for s in sections:
        if s.key is None:
            continue
        if s.key in known:
            raise ParseError(
                f"the section '## {s.heading}' appears twice (first on line {known[s.key].start + 1})",
                path=path,
                line=s.start + 1,
                hint="merge the two sections into one",
            )
        known[s.key] = s
        langs.append(_SECTION_BY_HEADING[_fold(s.heading)][1])
    lang = max(set(langs), key=langs.count) if langs else "en"
    for key in ("context", "work", "subagents"):
        if key not in known:
            zh, en = HEADINGS["zh"][key], HEADINGS["en"][key]
            raise ParseError(
                f"the page has no '## {HEADINGS[lang][key]}' section",
                path=path,
                line=len(doc.lines) or 1,
                hint=f"add a heading line '## {zh}' (or '## {en}'); vaultmem keeps its entries under it",
            )
    name = doc.meta.get("name")
    page = RolePage(
        doc=doc,
        name=str(name) if name else (stem or path.rsplit("/", 1)[-1].removesuffix(".md")),
        lang=lang,
        sections=known,
        extra_sections=[s.heading for s in sections if s.key is None],
    )
    for key in ("context", "work", "subagents"):
        page.entries.extend(_entries(doc, known[key], fenced))
    page.entries.sort(key=lambda e: e.line)
    return page


def _items(doc: Document, start: int, end: int, fenced: list[bool]):
    """Yield (first line index, index one past its last line, joined text) of each
    top-level list item in [start, end)."""
    i = start
    while i < end:
        content = doc.content(i)
        m = None if fenced[i] else _ITEM.match(content)
        if not m:
            i += 1
            continue
        first, parts = i, [m.group(1)]
        i += 1
        while i < end:
            line = doc.content(i)
            if line.strip() and line[:1] in (" ", "\t"):
                parts.append(line.strip())
                i += 1
                continue
            if not line.strip():  # a blank line continues the item if an indented line follows
                j = i
                while j < end and not doc.content(j).strip():
                    j += 1
                if j < end and doc.content(j)[:1] in (" ", "\t"):
                    parts.extend([""] * (j - i))
                    i = j
                    continue
            break
        yield first, i, "\n".join(parts)


def _split_id(text: str) -> tuple[str, str | None]:
    """Take the block id off an item: Obsidian puts it at the end of the item's last
    line; a human may have put it at the end of another line."""
    lines = text.split("\n")
    for n in [len(lines) - 1, *range(len(lines) - 1)]:
        m = _BLOCK_ID.search(lines[n])
        if m:
            lines[n] = lines[n][: m.start()]
            return "\n".join(lines), m.group(1)
    return text, None


def _subheadings(doc: Document, sec: Section, fenced: list[bool]) -> list[tuple[int, str]]:
    out = []
    for i in range(sec.start + 1, sec.end):
        m = None if fenced[i] else _H.match(doc.content(i))
        if m and len(m.group(1)) == 3:
            out.append((i, m.group(2)))
    return out


def _entries(doc: Document, sec: Section, fenced: list[bool]) -> list[Entry]:
    subs = _subheadings(doc, sec, fenced)
    bounds = [(sec.start + 1, subs[0][0] if subs else sec.end, None)]
    for n, (i, title) in enumerate(subs):
        bounds.append((i + 1, subs[n + 1][0] if n + 1 < len(subs) else sec.end, title))
    out: list[Entry] = []
    for start, end, sub in bounds:
        if sec.key == "subagents" and sub is not None:
            out.append(_record(doc, start, end, sub, fenced))
            continue
        for first, _end, raw in _items(doc, start, end, fenced):
            text, eid = _split_id(raw)
            entry = Entry(section=sec.key, text=text.strip(), line=first + 1, id=eid, project=sub)
            if sec.key == "work":
                m = _DATED.match(entry.text)
                if m:
                    entry.date, entry.text = m.group(1), m.group(2).strip()
            out.append(entry)
    return out


def _record(doc: Document, start: int, end: int, title: str, fenced: list[bool]) -> Entry:
    fields: dict[str, str] = {}
    eid = None
    lines = []
    for _first, _end, raw in _items(doc, start, end, fenced):
        text, found = _split_id(raw)
        eid = eid or found
        lines.append(text.strip())
        m = _FIELD.match(text.strip())
        if m:
            label = m.group(1).strip().rstrip(":：")
            key = _FIELD_BY_LABEL.get(_fold(label))
            if key:
                fields[key] = m.group(2).strip()
    if eid is None:  # an id on a line of its own after the record
        for i in range(start, end):
            m = re.fullmatch(r"\s*\^([A-Za-z0-9-]+)\s*", doc.content(i))
            if m:
                eid = m.group(1)
                break
    m = _RECORD_TITLE.match(title)
    return Entry(
        section="subagents",
        text="\n".join(lines),
        line=start,  # the heading's line (1-based: heading index + 1)
        id=eid,
        date=m.group(1) if m else None,
        title=m.group(2) if m else title,
        fields=fields,
    )


def entry_spans(page: RolePage, section: str) -> list[tuple[Entry, int, int]]:
    """Each entry of one section (``work`` or ``subagents``) with the lines it takes:
    ``(entry, start, end)``, 0-based, ``end`` one past its last non-blank line — a list
    item with its continuation lines, a sub-agent record from its ``###`` heading on.
    In page order; what compaction moves whole."""
    doc, sec = page.doc, page.sections[section]
    fenced = doc.fenced()
    subs = _subheadings(doc, sec, fenced)
    bounds = [(sec.start + 1, subs[0][0] if subs else sec.end, None)]
    for n, (i, title) in enumerate(subs):
        bounds.append((i + 1, subs[n + 1][0] if n + 1 < len(subs) else sec.end, title))
    by_line = {e.line: e for e in page.entries if e.section == section}
    out = []
    for start, end, sub in bounds:
        if section == "subagents" and sub is not None:
            if start in by_line:  # a record's line is its heading's (1-based: heading index + 1)
                out.append((by_line[start], start - 1, _insert_point(doc, start, end)))
            continue
        for first, stop, _raw in _items(doc, start, end, fenced):
            if first + 1 in by_line:
                out.append((by_line[first + 1], first, _insert_point(doc, first, stop)))
    return out


# -- creating and editing ---------------------------------------------------------------


def new_entry_id(taken: set[str]) -> str:
    while True:
        eid = "m-" + os.urandom(3).hex()
        if eid not in taken:
            return eid


def new_page_text(name: str, lang: str, category: str | None, project: str | None, today: _dt.date) -> str:
    """The text of a fresh role page in the vault's language."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    from .document import dump_yaml

    meta = CommentedMap()
    meta["name"] = name
    meta["category"] = category or ""
    meta["first_used"] = today
    meta["projects"] = CommentedSeq([project] if project else [])
    tags = CommentedSeq(["agent-memory"])
    tags.fa.set_flow_style()
    meta["tags"] = tags
    meta["type"] = "agent-page"
    lines = ["---", dump_yaml(meta).rstrip("\n"), "---", TITLE[lang].format(name=name), ""]
    for key in ("context", "work", "subagents"):
        lines += [f"## {HEADINGS[lang][key]}", SECTION_COMMENTS[lang][key], ""]
    return "\n".join(lines)


def _check_text(text: str, what: str = "entry text") -> list[str]:
    lines = [x.rstrip() for x in text.strip().splitlines()]
    if not lines or not lines[0]:
        raise BadInput(f"the {what} is empty", hint="give the text to record", field="text")
    return lines


def _insert_point(doc: Document, start: int, end: int) -> int:
    """Index just after the last non-blank line of [start, end) (at least ``start``)."""
    i = end
    while i > start and not doc.content(i - 1).strip():
        i -= 1
    return i


def _insert_block(doc: Document, at: int, block: list[str], next_start: int) -> None:
    if at < len(doc.lines) and at == next_start:
        block = block + [""]  # keep a blank line before the next heading
    doc.insert_lines(at, block)


def _as_item(lines: list[str], eid: str, prefix: str = "") -> list[str]:
    head = [f"- {prefix}{lines[0]}"] + [f"  {x}" if x else "" for x in lines[1:]]
    head[-1] += f" ^{eid}"
    return head


def _verified(page: RolePage, entry: Entry) -> str:
    """The edited page's text, after checking it still parses with the new entry whole
    in its section (text that would break the page is refused, not written)."""
    text = page.doc.text()
    try:
        again = parse_page(text, page.path)
    except ParseError as exc:
        again, why = None, exc.message
    else:
        found = [e for e in again.entries if e.id == entry.id]
        ok = len(found) == 1 and found[0].section == entry.section and found[0].text == entry.text
        why = "" if ok else "the entry would not read back as written"
    if again is None or why:
        raise BadInput(
            f"this text would break the structure of {page.path}: {why}", field="text",
            hint="close any ``` code fence in the text, and avoid lines that look like Markdown headings",
        )
    return text


def add_work_entry(page: RolePage, text: str, day: _dt.date) -> tuple[str, Entry]:
    """Append ``- YYYY-MM-DD | text ^m-id`` to working memory; return new text and entry."""
    lines = _check_text(text)
    eid = new_entry_id(page.ids())
    sec = page.sections["work"]
    at = _insert_point(page.doc, sec.start + 1, sec.end)
    _insert_block(page.doc, at, _as_item(lines, eid, f"{day.isoformat()} | "), sec.end)
    entry = Entry("work", "\n".join(x.strip() for x in lines).strip(), at + 1, eid, date=day.isoformat())
    return _verified(page, entry), entry


def add_context_entry(page: RolePage, project: str, text: str) -> tuple[str, Entry]:
    """Append a bullet under ``### project`` in project context (creating the block)."""
    lines = _check_text(text)
    eid = new_entry_id(page.ids())
    doc, sec = page.doc, page.sections["context"]
    fenced = doc.fenced()
    subs = _subheadings(doc, sec, fenced)
    match = next((n for n, (_i, t) in enumerate(subs) if _fold(t) == _fold(project)), None)
    if match is None:
        at = _insert_point(doc, sec.start + 1, sec.end)
        block = ([""] if at > sec.start + 1 else []) + [f"### {project}"] + _as_item(lines, eid)
        _insert_block(doc, at, block, sec.end)
        line = at + len(block) - len(lines) + 1
    else:
        start = subs[match][0] + 1
        end = subs[match + 1][0] if match + 1 < len(subs) else sec.end
        at = _insert_point(doc, start, end)
        _insert_block(doc, at, _as_item(lines, eid), end)
        line = at + 1
    entry = Entry("context", "\n".join(x.strip() for x in lines).strip(), line, eid, project=project)
    return _verified(page, entry), entry


def add_subagent_record(page: RolePage, day: _dt.date, title: str, fields: dict[str, str]) -> tuple[str, Entry]:
    """Append a ``### <date> <title>`` block with the four bullets (task, conclusion,
    output, key decision) to the sub-agent records. The block id is on a line of its own
    after the bullets, a blank line between: Obsidian's id of the whole list, so that a
    link to the record shows all four bullets (at the end of the last bullet it would name
    the key decision alone). Records written with the id on the last bullet read the same."""
    eid = new_entry_id(page.ids())
    sec = page.sections["subagents"]
    lang_index = 0 if page.lang == "zh" else 1
    colon = "：" if page.lang == "zh" else ": "
    bullets = [f"- **{SUBAGENT_FIELDS[k][lang_index]}**{colon}{' '.join(fields[k].split())}"
               for k in ("task", "conclusion", "output", "decision")]
    at = _insert_point(page.doc, sec.start + 1, sec.end)
    head = ([""] if at > sec.start + 1 else []) + [f"### {day.isoformat()} {' '.join(title.split())}"]
    block = head + bullets + ["", f"^{eid}"]
    _insert_block(page.doc, at, block, sec.end)
    entry = Entry("subagents", "", at + len(head), eid, date=day.isoformat(), title=" ".join(title.split()),
                  fields={k: " ".join(fields[k].split()) for k in ("task", "conclusion", "output", "decision")})
    text = page.doc.text()
    again = parse_page(text, page.path)
    found = [e for e in again.entries if e.id == eid]
    if len(found) != 1 or found[0].fields != entry.fields:
        raise BadInput(f"this record would break the structure of {page.path}",
                       hint="avoid Markdown headings and code fences in the fields")
    entry.text, entry.line = found[0].text, found[0].line
    return text, entry


def add_project(page: RolePage, project: str) -> bool:
    """Add ``project`` to the frontmatter's ``projects`` list; False if already there.

    A block list gets one new line after its last item (nothing else in the frontmatter
    is re-emitted); other shapes are rewritten through ruamel.yaml's round trip."""
    from ruamel.yaml.comments import CommentedSeq

    if project in page.projects:
        return False
    doc, meta = page.doc, page.doc.meta
    current = meta.get("projects")
    if isinstance(current, CommentedSeq) and current and not current.fa.flow_style() and _append_line(doc, current, project):
        current.append(project)
        return True
    if isinstance(current, list):
        current.append(project)
    else:
        meta["projects"] = CommentedSeq(([str(current)] if current not in (None, "") else []) + [project])
    doc.set_meta(meta)
    return True


def _append_line(doc: Document, seq, value: str) -> bool:
    """Insert ``- value`` after the last item of a block sequence, matching its indent."""
    from .document import dump_yaml

    last_line, col = seq.lc.item(len(seq) - 1)
    index = 1 + last_line  # frontmatter starts at file line 2 (index 1)
    prefix = doc.content(index)[: col]
    if not prefix.rstrip().endswith("-") or not all(isinstance(x, str) and "\n" not in x for x in seq):
        return False
    item = dump_yaml([value]).rstrip("\n")  # "- value", quoted if YAML needs it
    if "\n" in item:
        return False
    doc.insert_lines(index + 1, [prefix[: prefix.rstrip().rindex("-")] + item])
    return True
