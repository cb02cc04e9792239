"""The journal's day files: a session's turns filed by day (each once), the day's record
of what was decided, corrected and left in doubt, and the days pruned past
``journal.keep_days``."""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import files, layout, limits
from ..errors import VaultmemError
from ..parse.journal import DAY_FILE, RECORD_END, RECORD_START, TURN_ID, DayTurn, day_turns
from .transcripts import MAX_TURN_CHARS, Transcript, Turn, one_line, session_hash, turn_id


# -- the day files ------------------------------------------------------------------------------


def day_path(day: str) -> str:
    return f"{layout.JOURNAL_DIR}/{day}.md"


def day_of(turn: Turn, default: str) -> str:
    """The day a turn is filed under: the date its time gives, else ``default``."""
    if turn.time:
        m = re.match(r"(\d{4}-\d{2}-\d{2})", turn.time)
        if m:
            try:
                _dt.date.fromisoformat(m.group(1))
                return m.group(1)
            except ValueError:
                pass
    return default


def clock_of(turn: Turn) -> str:
    m = re.match(r"\d{4}-\d{2}-\d{2}[T ](\d{2}:\d{2}(?::\d{2})?)", turn.time or "")
    return m.group(1) if m else ""


def day_header(day: str, lang: str) -> str:
    title = f"日志 {day}" if lang == "zh" else f"Journal {day}"
    return f"---\ntype: journal\ndate: {day}\n---\n# {title}\n"


def clipped(text: str, source: str, where: str) -> str:
    """A turn's text cut to :data:`MAX_TURN_CHARS`, saying where the rest is — before it is
    scrubbed, so that a huge paste costs the scanner nothing and is never refused."""
    if len(text) <= MAX_TURN_CHARS:
        return text
    keep = MAX_TURN_CHARS - 300  # room for the note: a clipped text is never clipped again
    return text[:keep].rstrip() + f" … ({len(text) - keep:,} more characters in {source[:120]} {where[:40]})"


def render_turn(turn: Turn, session: str, source: str) -> str:
    """A turn as a list item: time, speaker, where it came from, the text (later lines
    indented under it, blank lines dropped), and its block id at the end."""
    text = turn.text
    lines = [x.rstrip() for x in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if x.strip()]
    lines = lines or ["(empty)"]
    clock = clock_of(turn)
    speaker = " ".join(turn.speaker.split()).replace("*", "")
    head = f"- **{clock + ' ' if clock else ''}{speaker}** · {turn.where} — {lines[0]}"
    body = [head] + [f"  {x}" for x in lines[1:]]
    body[-1] += f" ^{turn_id(session, turn.n)}"
    return "\n".join(body) + "\n"


def session_heading(t: Transcript, agent: str | None, first: Turn) -> str:
    """A session's section heading on a day, and the line that says where it came from."""
    clock = clock_of(first)[:5]
    who = f" · {agent}" if agent else ""
    session = " ".join(t.session.replace("·", "-").split())  # one line, and the heading's separator kept apart
    return (f"\n## {clock + ' · ' if clock else ''}session {session}{who}\n"
            f"source: {' '.join(t.source.split())} ({t.shape})\n\n")


@dataclass
class Filed:
    """What :func:`plan_add` would write: the day files (vault-relative → text), how many
    turns are new, and on which days."""

    writes: dict[str, str]
    added: int
    days: list[str]
    known: int  # turns of the session already in the journal


def filed_turns(root: Path, session: str) -> set[int]:
    """The turns of ``session`` already in the journal (their ``n``), from every day file.
    A per-machine cache (``.vaultmem/local/journal.json``: each day file's size, time and
    the session hashes it holds) keeps this to the day files that changed."""
    sh = session_hash(session)
    out: set[int] = set()
    for rel, sessions in journal_map(root).items():
        if sh in sessions:
            try:
                text = files.read_vault_text(root, rel)
            except (OSError, VaultmemError):  # unreadable (not UTF-8, a link out): as if it held nothing
                continue
            for line in text.splitlines():
                m = TURN_ID.search(line)
                if m and m.group(1) == sh:
                    out.add(int(m.group(2)))
    return out


def journal_map(root: Path) -> dict[str, list[str]]:
    """Each day file (vault-relative) and the session hashes it holds."""
    folder = root / layout.JOURNAL_DIR
    try:
        cache = limits.load_json(files.read_vault_text(root, layout.JOURNAL_CACHE))
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError, VaultmemError):
        cache = {}
    out: dict[str, list[str]] = {}
    fresh: dict[str, Any] = {}
    changed = False
    for p in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        if not DAY_FILE.match(p.name) or p.is_symlink():
            continue
        rel = f"{layout.JOURNAL_DIR}/{p.name}"
        try:
            st = p.stat()
        except OSError:
            continue
        stamp = [st.st_size, st.st_mtime_ns]
        seen = cache.get(rel)
        if isinstance(seen, dict) and seen.get("stamp") == stamp and isinstance(seen.get("sessions"), list):
            sessions = seen["sessions"]
        else:
            try:
                text = files.read_vault_text(root, rel)
            except (OSError, VaultmemError):  # unreadable: as if it held nothing, and looked at again
                continue
            sessions = sorted({m.group(1) for line in text.splitlines() if (m := TURN_ID.search(line))})
            changed = True
        fresh[rel] = {"stamp": stamp, "sessions": sessions}
        out[rel] = sessions
    if changed or set(fresh) != set(cache):  # a cache: if it cannot be written, the next call reads the files
        files.write_local(root, layout.JOURNAL_CACHE.rsplit("/", 1)[1], json.dumps(fresh, sort_keys=True))
    return out


def plan_add(root: Path, t: Transcript, agent: str | None, today: str, lang: str, scrub) -> Filed:
    """The day files with ``t``'s turns that are not in the journal yet, each under the
    day its time gives (``today`` for a turn without one), appended after the session's
    last filed turn on that day or in a new section at the end. ``scrub(field, text)``
    takes the secrets out of each text. Nothing is read but the journal."""
    known = filed_turns(root, t.session)
    new = [x for x in t.turns if x.n not in known]
    writes: dict[str, str] = {}
    days: list[str] = []
    by_day: dict[str, list[Turn]] = {}
    for turn in new:
        by_day.setdefault(day_of(turn, today), []).append(turn)
    session = scrub("session", t.session)
    source = scrub("source", t.source)
    sh = session_hash(t.session)
    for day, turns in sorted(by_day.items()):
        rel = day_path(day)
        path = root / rel
        text = files.read_vault_text(root, rel) if path.exists() else day_header(day, lang)
        rendered = "".join(render_turn(Turn(x.n, scrub("speaker", x.speaker[:200]),
                                            scrub("text", clipped(x.text, t.source, x.where)), x.time, x.where),
                                       t.session, source) for x in turns)
        lines = text.splitlines(keepends=True)
        last = max((i for i, line in enumerate(lines) if (m := TURN_ID.search(line)) and m.group(1) == sh), default=None)
        if last is None:
            shown = Transcript(session, source, t.shape)
            text = text.rstrip("\n") + "\n" + session_heading(shown, agent, turns[0]) + rendered
        else:
            if not lines[last].endswith("\n"):
                lines[last] += "\n"
            text = "".join(lines[: last + 1]) + rendered + "".join(lines[last + 1 :])
        writes[rel] = text
        days.append(day)
    return Filed(writes=writes, added=len(new), days=days, known=len(known))


# -- the day's record ----------------------------------------------------------------------------

_DOUBT = re.compile(r"\b(?:not sure|unsure|I think|maybe|perhaps|might be|unclear|I doubt|hard to say|"
                    r"I'm not certain)\b|不确定|可能|也许|大概|不清楚|好像|拿不准", re.I)
_CORRECTION = re.compile(r"^(?:no|nope|actually|wrong)\b[,!. ]|\bthat'?s (?:wrong|not right|incorrect)\b|"
                         r"\bit should be\b|\bis actually\b|\binstead\b|不对|其实|错了|应该是|不是.{1,40}而是", re.I)


def plan_consolidate(text: str, day: str, lang: str) -> str:
    """The day file with its record (made again from its turns): for each session, in
    the order it began, the request that opened it, what was decided or corrected, what
    was in doubt, the tools it used (and how many failed) and its last word — each a
    link to its turn, so the sequence and its causes can be followed."""
    from .. import sessions as said

    turns = day_turns(text)
    link = f"{day_path(day).removesuffix('.md')}#^"  # whole links: the record is read apart from its file too
    by_session: dict[str, list[DayTurn]] = {}
    for t in turns:
        by_session.setdefault(t.session, []).append(t)
    order = sorted(by_session, key=lambda s: (by_session[s][0].clock or "99", by_session[s][0].line))
    zh = lang == "zh"
    out = [RECORD_START, f"## {'当日记录' if zh else 'Day record'}", ""]
    if not order:
        out.append("（这一天没有会话）" if zh else "(no sessions this day)")
    for s in order:
        ts = by_session[s]
        span = "–".join(dict.fromkeys(x for x in (ts[0].clock[:5], ts[-1].clock[:5]) if x))
        who = f" ({ts[0].agent})" if ts[0].agent else ""
        asked = next((t for t in ts if t.speaker in ("user", "human") or t.speaker not in ("assistant", "tool")), None)
        head = f"- {span + ' · ' if span else ''}{'会话' if zh else 'session'} {s}{who}"
        if asked is not None:
            head += f"{'：' if zh else ': '}{one_line(asked.text, 140)} [[{link}{asked.id}]]"
        out.append(head)
        tools: dict[str, list[int]] = {}
        for t in ts:
            if t.speaker == "tool":
                m = re.match(r"(result of|error from) ([^:]+):", t.text)
                if m:
                    tools.setdefault(m.group(2), [0, 0])[0 if m.group(1) == "result of" else 1] += 1
                continue
            body = re.sub(r"(?m)^→ .*$", "", t.text)
            for kind, sentence in said.fact_candidates(body):
                label = {"decision": "决定" if zh else "decided", "preference": "偏好" if zh else "prefers",
                         "failure+fix": "修复" if zh else "fixed"}.get(kind)
                if kind == "fact" and _CORRECTION.search(sentence):
                    label = "更正" if zh else "corrected"
                if label:
                    out.append(f"  - {label}{'：' if zh else ': '}{one_line(sentence, 160)} [[{link}{t.id}]]")
            for sentence in said.sentences(body):
                if t.speaker != "tool" and _DOUBT.search(sentence) and not sentence.endswith(("?", "？")):
                    out.append(f"  - {'存疑' if zh else 'doubt'}{'：' if zh else ': '}{one_line(sentence, 160)} "
                               f"[[{link}{t.id}]]")
                    break
        if tools:
            parts = [f"{name} ×{ok + bad}" + (f" ({bad} {'失败' if zh else 'failed'})" if bad else "")
                     for name, (ok, bad) in sorted(tools.items())]
            out.append(f"  - {'工具' if zh else 'tools'}{'：' if zh else ': '}{', '.join(parts)}")
        last = next((t for t in reversed(ts) if t.speaker == "assistant"), None)
        if last is not None:
            out.append(f"  - {'最后' if zh else 'last word'}{'：' if zh else ': '}{one_line(last.text, 160)} "
                       f"[[{link}{last.id}]]")
    out.append(RECORD_END)
    record = "\n".join(out) + "\n"
    start, end = text.find(RECORD_START), text.find(RECORD_END)
    if start != -1 and end > start:  # made before: replaced
        return text[:start] + record + "\n" + text[end + len(RECORD_END):].lstrip("\n")
    lines = text.splitlines(keepends=True)
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), len(lines))
    return "".join(lines[:at]) + "\n" + record + "".join(lines[at:])


# -- retention ----------------------------------------------------------------------------------


def days(root: Path) -> list[str]:
    """The days the journal holds, oldest first."""
    folder = root / layout.JOURNAL_DIR
    return sorted(m.group(1) for p in (folder.iterdir() if folder.is_dir() else ()) if (m := DAY_FILE.match(p.name)))


def plan_prune(root: Path, keep_days: int, today: _dt.date) -> list[str]:
    """The day files older than ``keep_days`` before ``today`` (none when 0: kept forever)."""
    if not keep_days:
        return []
    cut = (today - _dt.timedelta(days=keep_days)).isoformat()
    return [day_path(d) for d in days(root) if d < cut]
