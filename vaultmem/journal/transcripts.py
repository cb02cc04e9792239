"""A session's transcript read into turns, whatever its shape: Claude Code's JSON lines,
OpenAI-style messages, a JSON list of turns, or Markdown."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import limits
from ..errors import BadInput


MAX_TURN_CHARS = 20_000  # a turn's text in the journal; the rest stays in the transcript (said)
MAX_TOOL_CHARS = 160  # a tool call's or result's one-line summary
SHAPES = ("claude-code", "messages", "turns", "markdown")
SPEAKER_KEYS = ("speaker", "role", "author", "name", "from", "sender")
TEXT_KEYS = ("text", "content", "message", "body")
TIME_KEYS = ("time", "timestamp", "ts", "date", "created_at", "createdAt")
CLAUDE_TYPES = frozenset({"user", "assistant", "system", "summary", "attachment", "file-history-snapshot",
                           "queue-operation", "progress"})
MAIN_ARGS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt", "skill", "name")


@dataclass
class Turn:
    """One turn: its place in the transcript (``n``, from 1, stable while the transcript
    only grows), who spoke, what was said, when (ISO, as the transcript gives it) and
    where in the source (``L12`` a line, ``#3`` a message)."""

    n: int
    speaker: str
    text: str
    time: str | None = None
    where: str = ""


@dataclass
class Transcript:
    session: str
    source: str  # the file's name, or where the messages came from ("hermes")
    shape: str
    turns: list[Turn] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # 'FILE:LINE: why: skipped', a line each


def session_hash(session: str) -> str:
    """The 8 hex digits a session's block ids carry (its id may be long or odd)."""
    return hashlib.sha1(session.encode("utf-8")).hexdigest()[:8]


def turn_id(session: str, n: int) -> str:
    return f"j-{session_hash(session)}-{n}"


# -- reading transcripts ------------------------------------------------------------------------


def problem_at(source: str, line: int | None, message: str, hint: str | None = None) -> BadInput:
    return BadInput(f"{message}; nothing was filed", path=source, line=line,
                    hint=hint or "a transcript is Claude Code's JSON lines, a JSON list of messages or turns "
                                 "({role|speaker, content|text}), or Markdown lines 'Name: text' (docs/journal.md)")


def read(path: str | os.PathLike, session: str | None = None, max_bytes: int = 64 * 1024 * 1024) -> Transcript:
    """The transcript at ``path``, its shape found from its text. ``session``: its id
    (default: the one the transcript names, else the file's name without suffix)."""
    p = Path(path)
    name = str(path)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise BadInput(f"the transcript is {size:,} bytes; at most {max_bytes:,} are filed; nothing was filed",
                           path=name, hint="split it, or file the part that matters")
        data = p.read_bytes()
    except FileNotFoundError:
        raise BadInput("no such transcript", path=name, field="transcript") from None
    except IsADirectoryError:
        raise BadInput("is a folder, not a transcript", path=name, field="transcript") from None
    except OSError as exc:
        raise BadInput(f"cannot read the transcript: {exc.strerror or exc}", path=name, field="transcript") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise problem_at(name, line, "not UTF-8 text") from None
    return parse(text, name, session=session, default_session=p.stem)


def parse(text: str, source: str, session: str | None = None, default_session: str | None = None) -> Transcript:
    """A transcript's ``text`` (read from ``source``, named in errors) as turns."""
    text = text.lstrip("\ufeff")
    stripped = text.strip()
    if not stripped:
        raise problem_at(source, None, "the transcript is empty")
    first = stripped[0]
    if first in "[{":
        try:
            whole = limits.load_json(stripped)
        except ValueError as exc:
            whole = None
            head = stripped.split("\n", 1)[0]
            lines = _json_object(head) or (isinstance(exc, limits.TooDeep) and head != stripped and _too_deep(head))
            if first == "[" or not lines:  # one document, broken
                line = getattr(exc, "lineno", None)
                what = f"JSON {exc}" if isinstance(exc, limits.TooDeep) else f"not JSON ({getattr(exc, 'msg', exc)})"
                raise problem_at(source, line, what) from None
        one_line = isinstance(whole, dict) and not any(isinstance(whole.get(k), list) for k in
                                                        ("messages", "turns", "conversation")) and (
            whole.get("type") in CLAUDE_TYPES or any(k in whole for k in SPEAKER_KEYS))
        if whole is not None and not one_line:  # (one JSON line of a transcript is read as JSON lines)
            return _from_json(whole, text, source, session, default_session)
        return _from_json_lines(text, source, session, default_session)
    return _from_markdown(text, source, session or default_session or "session")


def _json_object(line: str) -> bool:
    """Whether ``line`` is a JSON object by itself (the first line of JSON lines)."""
    try:
        return isinstance(limits.load_json(line), dict)
    except ValueError:
        return False


def _too_deep(line: str) -> bool:
    """Whether ``line`` is JSON nested too deep (a JSON-lines transcript's line to skip)."""
    try:
        limits.load_json(line)
    except limits.TooDeep:
        return True
    except ValueError:
        return False
    return False


def from_messages(messages: Any, session: str, source: str = "messages") -> Transcript:
    """Chat messages as an agent runtime holds them (Hermes: ``{role, content,
    tool_calls}``) as a transcript; each turn's place is ``#<index>``."""
    if not isinstance(messages, list):
        raise problem_at(source, None, "the messages are not a list")
    t = Transcript(session=session, source=source, shape="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise problem_at(source, None, f"message {i} is not an object")
        turn = _object_turn(m, f"#{i}", source, None)
        if turn is not None:
            t.turns.append(turn)
    _number(t)
    return t


def _number(t: Transcript) -> None:
    for n, turn in enumerate(t.turns, 1):
        turn.n = n


def _from_json(whole: Any, text: str, source: str, session: str | None, default: str | None) -> Transcript:
    items, key = whole, None
    if isinstance(whole, dict):
        key = next((k for k in ("messages", "turns", "conversation") if isinstance(whole.get(k), list)), None)
        if key is None:
            raise problem_at(source, 1, "a JSON object without a list of 'messages' or 'turns'")
        items = whole[key]
        session = session or _scalar(whole.get("session_id") or whole.get("session") or whole.get("id"))
    if not isinstance(items, list):
        raise problem_at(source, 1, "JSON that is not a list of messages or turns")
    lines = _item_lines(text) if key is None else None
    t = Transcript(session=session or default or "session", source=Path(source).name, shape="messages")
    for i, item in enumerate(items):
        line = lines[i] if lines and i < len(lines) else None
        if not isinstance(item, dict):
            raise problem_at(source, line, f"item {i} is not an object")
        turn = _object_turn(item, f"L{line}" if line else f"#{i}", source, line)
        if turn is not None:
            t.turns.append(turn)
    if not any(isinstance(i, dict) and i.get("role") for i in items):
        t.shape = "turns"
    _number(t)
    return t


def _item_lines(text: str) -> list[int]:
    """The line each item of a top-level JSON list starts on."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    out = []
    ws = re.compile(r"[\s,]*")
    line, counted = 1, 0
    while True:
        pos = ws.match(text, pos).end()
        if pos >= len(text) or text[pos] == "]":
            return out
        line += text.count("\n", counted, pos)  # counted on from the last item: linear in the text
        counted = pos
        out.append(line)
        _obj, pos = decoder.raw_decode(text, pos)


def _from_json_lines(text: str, source: str, session: str | None, default: str | None) -> Transcript:
    entries: list[tuple[int, dict]] = []
    skipped: list[str] = []
    for n, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            entry = limits.load_json(raw)
        except limits.TooDeep as exc:
            # complete or not, it never reads: skipped, so the turns around it are filed (and
            # numbered the same each time the transcript is read)
            skipped.append(f"{source}:{n}: a line {exc}: skipped")
            continue
        except ValueError as exc:
            raise problem_at(source, n, f"a line that is not JSON ({getattr(exc, 'msg', exc)})",
                           hint="each line of a JSON-lines transcript is one JSON object") from None
        if not isinstance(entry, dict):
            raise problem_at(source, n, "a line that is not a JSON object")
        entries.append((n, entry))
    claude = any(e.get("type") in CLAUDE_TYPES and ("message" in e or "sessionId" in e or "uuid" in e)
                 for _n, e in entries)
    if claude:
        t = _from_claude(entries, source, session, default)
        t.skipped = skipped
        return t
    t = Transcript(session=session or default or "session", source=Path(source).name, shape="turns",
                   skipped=skipped)
    for n, entry in entries:
        if t.session == default and session is None and entry.get("session_id"):
            t.session = str(entry["session_id"])
        turn = _object_turn(entry, f"L{n}", source, n)
        if turn is not None:
            t.turns.append(turn)
    if any(e.get("role") for _n, e in entries):
        t.shape = "messages"
    _number(t)
    return t


def _scalar(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int)) and str(value).strip() else None


def _object_turn(obj: dict, where: str, source: str, line: int | None) -> Turn | None:
    """A message (``role``, ``content``, ``tool_calls``) or a turn (``speaker``, ``text``)
    as a turn; None for a system prompt or an empty message."""
    speaker = next((obj[k] for k in SPEAKER_KEYS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    has_text = any(k in obj for k in TEXT_KEYS) or "tool_calls" in obj
    if speaker is None or not has_text:
        missing = "a speaker (role, speaker, author …)" if speaker is None else "a text (content, text …)"
        raise problem_at(source, line, f"{'message ' + where if line is None else 'a line'} without {missing}")
    role = speaker.strip()
    if role == "system":
        return None
    content = next((obj[k] for k in TEXT_KEYS if k in obj), None)
    text, tools = _content(content)
    for call in obj.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            args = fn.get("arguments")
            try:
                args = limits.load_json(args) if isinstance(args, str) else args
            except ValueError:
                pass
            tools.append(tool_summary(str(fn.get("name") or "tool"), args))
    if role in ("tool", "function"):
        name = obj.get("name") or obj.get("tool_call_id") or "tool"
        text, tools = result_summary(str(name), text, False), []
        role = "tool"
    body = "\n".join(x for x in (text, *[f"→ {x}" for x in tools]) if x)
    if not body.strip():
        return None
    when = next((obj[k] for k in TIME_KEYS if isinstance(obj.get(k), (str, int, float)) and obj.get(k) != ""), None)
    return Turn(n=0, speaker=role, text=body, time=_iso(when), where=where)


def _content(content: Any) -> tuple[str, list[str]]:
    """(text, tool call summaries) of a message's content: a string, or a list of blocks."""
    if isinstance(content, str):
        return content.strip(), []
    texts, tools = [], []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use":
                tools.append(tool_summary(str(block.get("name") or "tool"), block.get("input")))
    return "\n".join(t.strip() for t in texts if t.strip()), tools


def _iso(value: Any) -> str | None:
    """A time as ISO text (epoch seconds or milliseconds too); None if it is none."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and re.match(r"\d{4}-\d{2}-\d{2}", value.strip()):
        return value.strip()
    return None


def tool_summary(name: str, args: Any) -> str:
    """One line for a tool call: its name and its main argument."""
    main = ""
    if isinstance(args, dict):
        key = next((k for k in MAIN_ARGS if isinstance(args.get(k), str) and args[k].strip()), None)
        main = args[key] if key else json.dumps(args, ensure_ascii=False, sort_keys=True)
    elif args not in (None, ""):
        main = str(args)
    return one_line(f"{name}: {main}" if main else name, MAX_TOOL_CHARS)


def result_summary(name: str, text: str, error: bool) -> str:
    """One line for a tool's result: the first line it printed and how long it was."""
    lines = [x for x in (text or "").splitlines() if x.strip()]
    head = lines[0] if lines else "(nothing)"
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return one_line(f"{'error from' if error else 'result of'} {name}: {head.strip()}", MAX_TOOL_CHARS - len(more)) + more


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _from_claude(entries: list[tuple[int, dict]], source: str, session: str | None, default: str | None) -> Transcript:
    """Claude Code's transcript: user and assistant entries of the main session (not a
    sub-agent's sidechain, not Claude Code's own meta entries or command echoes); an
    assistant message split over several entries is one turn; tool results are turns of
    their own, one line each."""
    t = Transcript(session=session or "", source=Path(source).name, shape="claude-code")
    tool_names: dict[str, str] = {}
    last_message_id = None
    for n, e in entries:
        if not t.session and isinstance(e.get("sessionId"), str) and e["sessionId"]:
            t.session = e["sessionId"]
        kind = e.get("type")
        if kind not in ("user", "assistant") or e.get("isSidechain") or e.get("isMeta") or e.get("isCompactSummary"):
            continue
        message = e.get("message") if isinstance(e.get("message"), dict) else {}
        content = message.get("content")
        when = _iso(e.get("timestamp"))
        if kind == "assistant":
            text, tools = _content(content)
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id"):
                    tool_names[str(block["id"])] = str(block.get("name") or "tool")
            body = "\n".join(x for x in (text, *[f"→ {x}" for x in tools]) if x)
            if not body:
                continue
            mid = message.get("id")
            if mid is not None and mid == last_message_id and t.turns and t.turns[-1].speaker == "assistant":
                t.turns[-1].text += "\n" + body
                continue
            last_message_id = mid
            t.turns.append(Turn(0, "assistant", body, when, f"L{n}"))
            continue
        last_message_id = None
        if isinstance(content, str):
            if content.strip() and not content.lstrip().startswith("<"):
                t.turns.append(Turn(0, "user", content.strip(), when, f"L{n}"))
            continue
        said = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                if block["text"].strip() and not block["text"].lstrip().startswith("<"):
                    said.append(block["text"].strip())
            elif block.get("type") == "tool_result":
                inner, _ = _content(block.get("content"))
                name = tool_names.get(str(block.get("tool_use_id")), "tool")
                t.turns.append(Turn(0, "tool", result_summary(name, inner, bool(block.get("is_error"))), when, f"L{n}"))
        if said:
            t.turns.append(Turn(0, "user", "\n".join(said), when, f"L{n}"))
    t.session = t.session or default or "session"
    _number(t)
    return t


# "Name: text", "**Name:** text", "- Name: text", "[10:02] Name: text", "2024-05-04 10:02 Name：text"
_MD_TURN = re.compile(r"^\s*(?:[-*]\s+)?(?:\[?(?P<time>(?:\d{4}-\d{2}-\d{2}[ T])?\d{1,2}:\d{2}(?::\d{2})?)\]?\s+)?"
                      r"(?:\*\*|__)?(?P<speaker>[^\s:：*_#>\[\]][^:：*_#>\[\]\n]{0,38}?)(?:\*\*|__)?\s*[:：]"
                      r"(?:\*\*|__)?\s*(?P<text>.*)$")


def _from_markdown(text: str, source: str, session: str) -> Transcript:
    """Markdown or plain text turns: a line ``Name: text`` (bold, listed or timed too)
    opens a turn and the lines after it continue it; a heading, a rule or frontmatter
    at the top is passed over. A line of text before the first turn is an error."""
    t = Transcript(session=session, source=Path(source).name, shape="markdown")
    lines = text.split("\n")
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
        if end is not None:
            start = end + 1
    current: Turn | None = None
    for i in range(start, len(lines)):
        raw = lines[i].rstrip()
        if not raw.strip() or raw.lstrip().startswith("#") or re.fullmatch(r"\s*(?:-{3,}|\*{3,}|_{3,})\s*", raw):
            continue
        m = _MD_TURN.match(raw)
        if m and len(m.group("speaker").split()) <= 4 and "://" not in raw[: m.end("speaker") + 3]:
            when = m.group("time")
            current = Turn(0, m.group("speaker").strip(), m.group("text").strip(),
                           when if when and "-" in when else None, f"L{i + 1}")
            if when and "-" not in when:
                current.where = f"L{i + 1}"
                current.text = f"[{when}] {current.text}".strip()
            t.turns.append(current)
            continue
        if current is None:
            raise problem_at(source, i + 1, "text before any turn (a turn starts with 'Name: text')")
        current.text = f"{current.text}\n{raw.strip()}".strip()
    if not t.turns:
        raise problem_at(source, None, "no turns found")
    _number(t)
    return t
