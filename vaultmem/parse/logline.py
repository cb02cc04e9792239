"""One signed log entry as one line of Markdown. Pure: fields ↔ text, no keys, no I/O.

A line reads well in Obsidian and carries its machine fields in an HTML comment::

    - 2026-05-08T10:00:01Z · **lee** · #general · decision — Use PostgreSQL<br>because… <!-- vm1 {...} -->

The visible part is derived from the fields, so editing one byte of either part is
detected (the fields are signed; the visible part must equal their rendering). Each
line is whole — its own newline, a unique nonce — so git's union merge can neither
split an entry nor collapse two entries into one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..layout import LOG_DIRS

MARK = " <!-- vm1 "
END = " -->"
DOMAIN = "vaultmem-log/1\n"
CHANNEL = re.compile(r"[\w][\w.\-/]{0,63}", re.UNICODE)
TYPE = re.compile(r"[\w][\w.+\-]{0,63}", re.UNICODE)


@dataclass
class LogEntry:
    log: str  # "live" or "decisions"
    agent: str
    ts: str  # UTC, ISO 8601 with microseconds and Z
    seq: int
    prev: str  # line hash of the agent's previous entry in this log ("" for the first)
    nonce: str
    channel: str
    type: str
    summary: str
    body: str = ""
    hw: dict[str, int] = field(default_factory=dict)  # other agents' entries seen: agent → seq
    ref: str | None = None  # the entry acknowledged / superseded (agent#seq)
    extra: dict[str, Any] = field(default_factory=dict)
    kid: str = ""
    sig: str = ""
    line: str = ""  # the raw line as read (without its newline)
    lineno: int = 0
    # what appending it kept out of the log (secrets replaced by placeholders), for the user
    warnings: list[str] = field(default_factory=list, compare=False, repr=False)
    # set when shown (log tail, the brief): why the entry does not check out, None if it does
    problem: str | None = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> str:
        return f"{self.agent}#{self.seq}"

    @property
    def log_path(self) -> str:
        return f"{LOG_DIRS[self.log]}/{self.agent}"

    def fields(self) -> dict[str, Any]:
        d = {"v": 1, "log": self.log, "a": self.agent, "ts": self.ts, "seq": self.seq, "prev": self.prev,
             "n": self.nonce, "c": self.channel, "t": self.type, "s": self.summary, "kid": self.kid}
        if self.body:
            d["b"] = self.body
        if self.hw:
            d["hw"] = dict(sorted(self.hw.items()))
        if self.ref:
            d["ref"] = self.ref
        if self.extra:
            d["x"] = self.extra
        return d

    def payload(self) -> bytes:
        """The bytes that are signed: every field but the signature, canonical JSON."""
        return (DOMAIN + json.dumps(self.fields(), sort_keys=True, separators=(",", ":"),
                                    ensure_ascii=False)).encode("utf-8")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "log": self.log, "agent": self.agent, "ts": self.ts, "seq": self.seq,
                "channel": self.channel, "type": self.type, "summary": self.summary, "body": self.body,
                "ref": self.ref, "extra": self.extra or None, "hw": self.hw or None, "kid": self.kid,
                **({"problem": self.problem} if self.problem else {})}


def _esc(text: str) -> str:
    """Escaped for the visible part: HTML metacharacters, and every line break or other
    control character, so that no content can start a line of its own when rendered."""
    import html

    out = html.escape(text, quote=False).replace("\r\n", "\n").replace("\n", "<br>")
    return "".join(ch if ord(ch) >= 32 and ord(ch) != 127 else f"&#{ord(ch)};" for ch in out)


def visible(e: LogEntry) -> str:
    head = f"- {e.ts[:19]}Z · **{_esc(e.agent)}** · #{e.channel} · {_esc(e.type)}"
    ref = f" ↩ {_esc(e.ref)}" if e.ref else ""
    body = f"<br>{_esc(e.body)}" if e.body else ""
    return f"{head}{ref} — {_esc(e.summary)}{body}"


def render(e: LogEntry) -> str:
    """The entry's line (without newline). ``>`` is escaped inside the JSON, so the
    comment can never be closed early by content."""
    data = dict(e.fields(), sig=e.sig)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    blob = blob.replace(">", "\\u003e").replace("<", "\\u003c")
    return f"{visible(e)}{MARK}{blob}{END}"


def line_hash(line: str) -> str:
    import hashlib

    return hashlib.sha256(line.encode("utf-8")).hexdigest()[:32]


class LineError(ValueError):
    pass


def parse_line(line: str, lineno: int = 0) -> LogEntry:
    """Read one line back. Raises LineError when it is not a whole, well-formed entry
    (``verify`` reports that as an edited or damaged line)."""
    start = line.rfind(MARK)
    if start < 0 or not line.endswith(END):
        raise LineError("no machine fields (the entry's comment is missing or damaged)")
    try:
        data = json.loads(line[start + len(MARK) : -len(END)])
    except ValueError:
        raise LineError("the machine fields are not valid JSON") from None
    try:
        entry = LogEntry(
            log=str(data["log"]), agent=str(data["a"]), ts=str(data["ts"]), seq=int(data["seq"]),
            prev=str(data["prev"]), nonce=str(data["n"]), channel=str(data["c"]), type=str(data["t"]),
            summary=str(data["s"]), body=str(data.get("b", "")),
            hw={str(k): int(v) for k, v in (data.get("hw") or {}).items()},
            ref=str(data["ref"]) if data.get("ref") else None, extra=dict(data.get("x") or {}),
            kid=str(data["kid"]), sig=str(data["sig"]), line=line, lineno=lineno,
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError):
        raise LineError("the machine fields are incomplete") from None
    if data.get("v") != 1:
        raise LineError(f"unknown entry version {data.get('v')!r}")
    return entry


def entry_text(e: LogEntry) -> str:
    """Plain text of an entry, for search and briefs."""
    return e.summary + (f" — {e.body}" if e.body else "")


def readable_entries(text: str):
    """``(line number, entry)`` for each line of a log file that reads as an entry; blank
    and unreadable lines are passed over (``verify`` is what reports them)."""
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield n, parse_line(line, n)
        except LineError:
            continue
