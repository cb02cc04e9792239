"""Page compaction: a role page's working memory and sub-agent records kept within a
budget, the oldest and least-recalled entries moved to ``archive/agents/<role>-<year>.md``
(``vaultmem compact``). Plan functions read the vault and return the writes; nothing is
written here (see :mod:`vaultmem.notes`).

A section (``work``, ``subagents``) is compacted when it holds more entries than
``forgetting.page_entries.<section>`` or more estimated tokens than
``forgetting.page_tokens``; it keeps half of each (or ``--keep N`` entries). Which entries
stay: the freshest — the later of an entry's own date and the day a brief or search last
recalled it (the local usage data :mod:`vaultmem.forgetting` keeps) — then the most
recalled, then the later on the page. Project context is never compacted.

Moved entries keep their lines byte for byte, block ids included, grouped by section and
month under ``## <section> YYYY-MM`` headings of the year's archive file. Each group
leaves one dated summary line on the page that links to its heading; a later compaction
of the same month updates that line. A link to a moved block (``[[agents/r#^m-…]]``)
still resolves: :mod:`vaultmem.links` follows it to the archive. Deterministic (the same
page, usage data and day give the same commit) and revertible (``git revert``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import files, layout, pages
from .analysis import estimate_tokens
from .errors import BadInput
from .parse import parse_document, parse_page
from .parse.page import HEADINGS, RolePage, entry_spans
from .usage import read_usage

SECTIONS = ("work", "subagents")
_SUMMARY = {"en": "compacted: {n} {noun} of {period} moved to [[{target}#{heading}]]",
            "zh": "已归档：{period} 的 {n} 条{noun}移至 [[{target}#{heading}]]"}
_NOUN = {("en", "work"): ("entry", "entries"), ("en", "subagents"): ("record", "records"),
         ("zh", "work"): ("记录", "记录"), ("zh", "subagents"): ("子Agent记录", "子Agent记录")}
_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}\s*\|\s*")
_SUMMARY_LINK = re.compile(r"\[\[(" + re.escape(layout.ARCHIVED_PAGES_DIR) + r"/[^\]#|]+)#([^\]|]+)\]\]")
_INTRO = {
    "en": ("# {name}: archived entries, {year}\n\nEntries that `vaultmem compact` moved from [[{page}]]. Their block "
           "ids are the page's own, so links to them still resolve; `git revert` of a compaction's commit puts them "
           "back.\n"),
    "zh": ("# {name} 归档记录 {year}\n\n由 `vaultmem compact` 从 [[{page}]] 移来的条目。块 id 保持不变，指向它们的链接"
           "仍可解析；对该次提交执行 `git revert` 即可放回。\n"),
}


@dataclass
class Moving:
    """One entry compaction moves, and why it was chosen."""

    id: str | None
    section: str
    line: int  # on the page, 1-based
    date: str | None
    uses: int
    last_used: str | None
    period: str  # YYYY-MM, or "undated"
    archive: str  # the file it goes to
    text: str  # its first line, shortened

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "section": self.section, "line": self.line, "date": self.date, "uses": self.uses,
                "last_used": self.last_used, "period": self.period, "archive": self.archive, "text": self.text}


@dataclass
class CompactPlan:
    role: str
    path: str
    sections: list[dict[str, Any]] = field(default_factory=list)
    moving: list[Moving] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    writes: dict[str, str | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "path": self.path, "sections": self.sections,
                "moving": [m.to_dict() for m in self.moving], "summaries": self.summaries,
                "archives": sorted(p for p in self.writes if p != self.path)}


def _short(text: str, limit: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _summary_target(text: str) -> tuple[str, str] | None:
    """The (archive file, heading) a summary line links to, or None for any other entry."""
    m = _SUMMARY_LINK.search(text)
    if m is None:
        return None
    text = _DATE_PREFIX.sub("", text)  # the date stays on a sub-agent section's line
    if m and (text.startswith("compacted:") or text.startswith("已归档：")):
        return m.group(1) + ".md", m.group(2)
    return None


def _heading(lang: str, section: str, period: str) -> str:
    return f"{HEADINGS[lang][section]} {period}"


def _block_id(path: str, section: str, period: str) -> str:
    """A summary line's block id: the same for the same page, section and month."""
    return "m-" + hashlib.sha256(f"{path}\0{section}\0{period}".encode()).hexdigest()[:6]


def budget_rows(root: Path, role: str, entries_budget: dict[str, int], tokens_budget: int) -> list[dict[str, Any]]:
    """Each compacted section of ``role``'s page against its budget (``vaultmem doctor``)."""
    return plan(root, role, entries_budget, tokens_budget, measure_only=True).sections


def plan(root: Path, role: str, entries_budget: dict[str, int], tokens_budget: int, keep: int | None = None,
         today: _dt.date | None = None, measure_only: bool = False) -> CompactPlan:
    """What compacting ``role``'s page would move, and the writes that do it (none when
    every section is within its budget). Call with the write lock held to apply them."""
    if keep is not None and keep < 0:
        raise BadInput(f"is {keep}; it must be 0 or more", field="keep")
    today = today or pages.today()
    page = pages.load(root, role)
    rel = page.path
    stem = rel.removeprefix(f"{layout.AGENTS_DIR}/").removesuffix(".md")
    usage = {} if measure_only else read_usage(root)
    out = CompactPlan(role=page.name, path=rel)
    lines = list(page.doc.lines)
    spans = {s: entry_spans(page, s) for s in SECTIONS}
    for section in SECTIONS:
        found = spans[section]
        summaries = [(e, a, b) for e, a, b in found if _summary_target(e.text)]
        movable = [(e, a, b) for e, a, b in found if not _summary_target(e.text)]
        cost = {id(e): estimate_tokens("".join(lines[a:b])) for e, a, b in found}
        total = sum(cost.values())
        limit = entries_budget[section]
        over = len(found) > limit or total > tokens_budget
        row = {"section": section, "entries": len(found), "tokens": total, "max_entries": limit,
               "max_tokens": tokens_budget, "over_budget": over, "moving": 0}
        out.sections.append(row)
        if measure_only:
            continue
        if keep is not None:
            want, room = keep, None
        elif over:
            want, room = limit // 2, tokens_budget // 2
        else:
            continue
        room_left = None if room is None else room - sum(cost[id(e)] for e, _a, _b in summaries)

        def rank(item: tuple[int, tuple]) -> tuple:
            n, (e, _a, _b) = item
            uses, last = usage.get(f"{rel}#^{e.id}", (0, "")) if e.id else (0, "")
            return (max(e.date or "", last[:10]), uses, n)

        ranked = sorted(enumerate(movable), key=rank, reverse=True)
        kept: set[int] = set()
        for n, (e, _a, _b) in ranked:
            if len(kept) >= want or (room_left is not None and cost[id(e)] > room_left):
                break
            kept.add(n)
            if room_left is not None:
                room_left -= cost[id(e)]
        for n, (e, _a, _b) in enumerate(movable):
            if n in kept:
                continue
            uses, last = usage.get(f"{rel}#^{e.id}", (0, None)) if e.id else (0, None)
            period = e.date[:7] if e.date else "undated"
            year = e.date[:4] if e.date else str(today.year)
            first = next((x for x in e.text.splitlines() if x.strip()), e.title or "")
            out.moving.append(Moving(e.id, section, e.line, e.date, uses, last, period,
                                     layout.page_archive_path(stem, year), _short(e.title or first)))
        row["moving"] = len(movable) - len(kept)
    if out.moving:
        out.writes = _writes(root, page, spans, out, today)
    return out


def _writes(root: Path, page: RolePage, spans: dict, out: CompactPlan, today: _dt.date) -> dict[str, str | None]:
    """The page without the moved entries, a summary line per moved group, and each
    archive file with the entries added under their group's heading."""
    lines, nl, lang, rel = list(page.doc.lines), page.doc.newline, page.lang, page.path
    by_line = {(m.section, m.line): m for m in out.moving}
    groups: dict[tuple[str, str, str], list[tuple[int, int]]] = {}  # (section, archive, period) → spans
    for section in SECTIONS:
        for e, a, b in spans[section]:
            m = by_line.get((section, e.line))
            if m:
                groups.setdefault((section, m.archive, m.period), []).append((a, b))
    # the archive files: each group's lines under its heading
    archive_texts: dict[str, str] = {}
    counts: dict[tuple[str, str, str], int] = {}
    for (section, archive, period), found in sorted(groups.items(), key=lambda kv: (kv[0][1], SECTIONS.index(kv[0][0]), kv[0][2])):
        text = archive_texts.get(archive)
        if text is None:
            try:
                text = files.read_vault_text(root, archive)
            except FileNotFoundError:
                text = _new_archive(page, archive, lang)
        heading = _heading(lang, section, period)
        block: list[str] = []
        for a, b in found:
            chunk = [x.rstrip("\r\n") for x in lines[a:b]]
            block += ([""] if section == "subagents" and block else []) + chunk
        text, counts[(section, archive, period)] = _add_to_archive(text, heading, section, block)
        archive_texts[archive] = text
    # the page: moved entries out, summary lines in (an earlier summary of the group updated)
    ops: list[tuple[int, int, list[str]]] = []
    existing = {}
    for section in SECTIONS:
        for e, a, b in spans[section]:
            target = _summary_target(e.text)
            if target:
                existing[(section, target[0], target[1])] = (a, b)
    record_summaries: list[str] = []  # new summary lines of the sub-agent records: before the first record
    for (section, archive, period), found in groups.items():
        heading = _heading(lang, section, period)
        n = counts[(section, archive, period)]
        one, many = _NOUN[(lang, section)]
        text = _SUMMARY[lang].format(n=n, noun=one if n == 1 else many, period=period,
                                     target=archive.removesuffix(".md"), heading=heading)
        line = f"- {today.isoformat()} | {text} ^{_block_id(rel, section, period)}"
        out.summaries.append({"section": section, "period": period, "archive": archive, "heading": heading,
                              "entries": n, "line": line})
        where = existing.get((section, archive, heading))
        if where:
            ops.append((where[0], where[1], [line]))
            ops += [(a, b, []) for a, b in found]
        elif section == "work":
            ops.append((found[0][0], found[0][1], [line]))
            ops += [(a, b, []) for a, b in found[1:]]
        else:
            record_summaries.append(line)
            ops += [(a, b, []) for a, b in found]
    if record_summaries:
        sec = page.sections["subagents"]
        first = min([a for _e, a, _b in spans["subagents"] if not _summary_target(_e.text)] + [sec.end])
        at = first
        while at > sec.start + 1 and not lines[at - 1].strip():
            at -= 1
        ops.append((at, at, record_summaries + ([""] if at == first < len(lines) else [])))
    page_text = ("\ufeff" if page.doc.bom else "") + "".join(_apply(lines, ops, nl))
    _check(page, page_text, out, archive_texts)
    return {rel: page_text, **archive_texts}


def _apply(lines: list[str], ops: list[tuple[int, int, list[str]]], nl: str) -> list[str]:
    """``lines`` with each op ``(a, b, new)`` applied — ``lines[a:b]`` replaced by ``new``
    (lines without endings), from the last op to the first, so each op's indices are
    the original ones; a removed entry takes the blank lines after it along when a blank
    line precedes it. In one pass: the lines after the op being applied are kept
    reversed in ``tail`` (its end is the next line), so an op costs what it removes and
    adds, not what follows it — a page of 150,000 entries loses 149,950 of them in a
    fraction of a second."""
    lines = list(lines)
    tail: list[str] = []  # the text after ``cursor`` as it now is, reversed
    cursor = len(lines)  # lines[:cursor] are still the original ones
    for a, b, new in sorted(ops, key=lambda op: (op[0], op[1]), reverse=True):
        if b <= cursor:
            tail.extend(reversed(lines[b:cursor]))
        else:  # an op reaching into what a later op left: drop that much of it
            del tail[len(tail) - (b - cursor):]
        cursor = b
        if not new and a > 0 and not lines[a - 1].strip():
            while tail and not tail[-1].strip():
                tail.pop()  # no run of blank lines where an entry was
                b += 1
        if a == b and a > 0 and not lines[a - 1].endswith(("\n", "\r")):
            lines[a - 1] += nl
        tail.extend(reversed([x + nl for x in new]))
        cursor = a
    tail.reverse()
    return lines[:cursor] + tail


def _new_archive(page: RolePage, archive: str, lang: str) -> str:
    from ruamel.yaml.comments import CommentedMap

    from .parse.document import dump_yaml

    year = archive.removesuffix(".md").rsplit("-", 1)[-1]
    meta = CommentedMap()
    meta["name"] = f"{page.name} · archive {year}"
    meta["type"] = "agent-archive"
    meta["role"] = page.name
    meta["page"] = f"[[{page.path.removesuffix('.md')}]]"
    meta["status"] = "archived"
    return (f"---\n{dump_yaml(meta)}---\n"
            + _INTRO[lang].format(name=page.name, year=year, page=page.path.removesuffix(".md")))


_H2 = re.compile(r"^##\s+(.*?)\s*#*\s*$")
_BLOCK_REF = re.compile(r"\^([A-Za-z0-9-]+)")  # each ``^id`` of a text: the ids it may hold


def _add_to_archive(text: str, heading: str, section: str, block: list[str]) -> tuple[str, int]:
    """``block`` appended under ``## heading`` (made at the end when missing): the new text
    and how many entries the heading now holds."""
    rows = text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    start = next((i for i, x in enumerate(rows) if (m := _H2.match(x)) and m.group(1) == heading), None)
    if start is None:
        while rows and not rows[-1].strip():
            rows.pop()
        rows += ["", f"## {heading}", *block]
        start = len(rows) - len(block) - 1
    else:
        end = next((i for i in range(start + 1, len(rows)) if rows[i].startswith("## ")), len(rows))
        at = end
        while at > start + 1 and not rows[at - 1].strip():
            at -= 1
        rows[at:at] = ([""] if section == "subagents" else []) + block
    end = next((i for i in range(start + 1, len(rows)) if rows[i].startswith("## ")), len(rows))
    under = rows[start + 1:end]
    if section == "subagents":
        n = sum(1 for x in under if x.startswith("### "))
    else:
        n = sum(1 for x in under if re.match(r"^[-*+]\s", x))
    return "\n".join(rows) + "\n", n


def _check(page: RolePage, page_text: str, out: CompactPlan, archive_texts: dict[str, str]) -> None:
    """The compacted page must parse with every kept entry as it was, and each moved
    entry's block id must be in its archive file: anything else is a bug, refused."""
    again = parse_page(page_text, page.path, stem=page.name)
    moved = {(m.section, m.line) for m in out.moving}
    before = [(e.section, e.id, e.text) for e in page.entries
              if (e.section, e.line) not in moved and not _summary_target(e.text)]
    after = [(e.section, e.id, e.text) for e in again.entries if not _summary_target(e.text)]
    problem = None if before == after else "the entries it keeps would not read back as they were"
    blocks = {path: set(_BLOCK_REF.findall(text)) for path, text in archive_texts.items()}  # one pass each
    for m in out.moving:
        if m.id and m.id not in blocks.get(m.archive, ()):
            problem = f"block ^{m.id} would not reach {m.archive}"
    for path, text in archive_texts.items():
        parse_document(text, path, require_frontmatter=True, fast=True)
    if problem:
        raise BadInput(f"compacting {page.path} stopped: {problem}; nothing was changed",
                       hint="edit the page so each entry is a list item or a ### record, then try again")
