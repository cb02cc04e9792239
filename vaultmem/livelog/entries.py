"""The logs' entries: read (newest first, from the end of a file), appended (signed,
chained, under a lock), repaired, rotated; and what each agent has seen."""

from __future__ import annotations

import base64
import datetime as _dt
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .. import files, layout
from ..errors import BadInput, VaultmemError, from_os_error
from ..names import check_name
from ..parse.logline import CHANNEL, TYPE, LineError, LogEntry, line_hash, parse_line, render
from .keys import key_id, load_private_key, new_private_key, public_raw, save_private_key


LOG_DIRS = layout.LOG_DIRS


CURSOR_DIR = layout.CURSOR_DIR
MAX_ENTRY_BYTES = 256 * 1024
BLOCK = 64 * 1024


# -- reading -------------------------------------------------------------------------------


def log_file(root: Path, log: str, agent: str) -> Path:
    return files.inside(root, f"{LOG_DIRS[log]}/{agent}.md")


def log_files(root: Path, log: str) -> dict[str, Path]:
    folder = root / LOG_DIRS[log]
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.md"))
            if files.may_read(root, f"{LOG_DIRS[log]}/{p.name}")}  # never a link leading out


def tail_lines(path: Path, want: int | None = None) -> Iterator[str]:
    """Whole lines from the end of a file, newest first, reading backwards in blocks. A
    last line without its newline (a write in progress, or a torn tail) is skipped."""
    with open(path, "rb") as fh:
        pos = fh.seek(0, os.SEEK_END)
        buf = b""
        found_end = False
        count = 0
        block = 4096  # most lines are short: start small, then read larger blocks
        while pos > 0:
            step = min(block, pos)
            block = min(block * 4, BLOCK)
            pos -= step
            fh.seek(pos)
            buf = fh.read(step) + buf
            if not found_end:
                nl = buf.rfind(b"\n")
                if nl < 0:
                    continue  # all torn so far
                buf, found_end = buf[:nl], True
            parts = buf.split(b"\n")
            buf = parts[0]  # may begin before this block: kept for the next one
            for part in reversed(parts[1:]):
                part = part.rstrip(b"\r")  # a clone may have turned line ends into CRLF
                if part:
                    yield part.decode("utf-8", errors="replace")
                    count += 1
                    if want is not None and count >= want:
                        return
        if found_end and buf.rstrip(b"\r"):
            yield buf.rstrip(b"\r").decode("utf-8", errors="replace")


def parse_altered(text: str, lineno: int = 0) -> LogEntry:
    """``parse_line``, also for a line that only gained or lost white space at its ends:
    the entry is read (its ``line`` is the text as found, so it shows as edited) rather
    than lost, and the entries after it are not reported missing."""
    try:
        return parse_line(text, lineno)
    except LineError:
        if text.strip() == text:
            raise
        e = parse_line(text.strip(), lineno)
        e.line = text
        return e


def chain_hash(e: LogEntry) -> str:
    """What the next entry's ``prev`` holds: the hash of this entry's line as written
    (its fields rendered), so an altered visible part is an edit of that line only."""
    return line_hash(render(e))


def read_entries(path: Path) -> tuple[list[LogEntry], list[dict]]:
    """Every entry of one file in file order, and the lines that could not be read. A
    file written with CRLF line ends (an editor on another system) reads as well; a line
    whose end differs from the file's others gained or lost a carriage return."""
    entries, problems = [], []
    data = path.read_bytes()
    lines = data.split(b"\n")
    torn = lines.pop()  # text after the last newline: "" when the file ends cleanly
    whole = [raw for raw in lines if raw.strip()]
    crlf = sum(raw.endswith(b"\r") for raw in whole) * 2 > len(whole)
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        text = (raw[:-1] if raw.endswith(b"\r") else raw).decode("utf-8", errors="replace")
        try:
            e = parse_altered(text, n)
        except LineError as exc:
            problems.append({"line": n, "message": str(exc)})
            continue
        entries.append(e)
        if raw.endswith(b"\r") != crlf:
            problems.append({"line": n, "seq": e.seq, "kind": "edited",
                             "message": "a carriage return was added at the end of the line" if not crlf
                             else "the line lost the carriage return the file's other lines end with"})
    if torn:
        problems.append({"line": len(lines) + 1, "message": "the last entry is cut off (a write did not finish)",
                         "kind": "truncated"})
    return entries, problems


def newest(root: Path, log: str = "live", n: int = 20, agent: str | None = None, channel: str | None = None,
           type_: str | None = None, since: str | None = None, after: dict[str, int] | None = None,
           exclude: str | None = None) -> list[LogEntry]:
    """The newest ``n`` matching entries across agents, oldest first, read from the end
    of each file. ``after`` (agent → seq) keeps only entries past those high-water marks."""
    picked: list[LogEntry] = []
    for who, path in log_files(root, log).items():
        if (agent and who != agent) or (exclude and who == exclude):
            continue
        count = 0
        for line in tail_lines(path):
            try:
                e = parse_altered(line)  # a line with added white space is shown, marked by the check
            except LineError:
                continue
            if after is not None and e.seq <= after.get(who, 0):
                break
            if since and e.ts < since:
                break
            if (channel and e.channel != channel) or (type_ and e.type != type_):
                continue
            if e.agent != who:
                e.problem = f"claims to be {e.agent}'s entry but sits in {who}'s file"
            picked.append(e)
            count += 1
            if count >= n:
                break
    picked.sort(key=lambda e: (e.ts, e.agent, e.seq))
    return picked[-n:]


# -- cursors: what an agent has seen ---------------------------------------------------------


SHOWN = "#shown"  # in a cursor file: entries past an agent's mark already shown (never a name)


def cursor_file(root: Path, agent: str) -> dict:
    try:
        data = json.loads(files.read_bytes(root, f"{CURSOR_DIR}/{agent}.json"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, VaultmemError):
        return {}


def read_cursor(root: Path, agent: str) -> dict[str, int]:
    """What ``agent`` has read: other agent → the sequence number read up to."""
    out = {}
    for k, v in cursor_file(root, agent).items():
        if k != SHOWN:
            try:
                out[str(k)] = int(v)
            except (TypeError, ValueError):
                continue
    return out


def read_shown(root: Path, agent: str) -> dict[str, set[int]]:
    """Entries past the marks that were already shown (a filtered --unseen showed them)."""
    raw = cursor_file(root, agent).get(SHOWN) or {}
    return {str(k): {int(x) for x in v} for k, v in raw.items() if isinstance(v, list)}


def save_cursor(root: Path, agent: str, cursor: dict[str, int], shown: dict[str, set[int]] | None = None) -> None:
    data: dict = dict(cursor)
    extra = {k: sorted(x for x in v if x > cursor.get(k, 0)) for k, v in (shown or {}).items()}
    extra = {k: v for k, v in extra.items() if v}
    if extra:
        data[SHOWN] = extra
    files.atomic_write(files.inside(root, f"{CURSOR_DIR}/{agent}.json"), json.dumps(data, ensure_ascii=False))


# -- appending -------------------------------------------------------------------------------


def now_stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def check_fields(channel: str, type_: str, summary: str, body: str) -> None:
    if not CHANNEL.fullmatch(channel or ""):
        raise BadInput(f"{channel!r} must be a word such as general or backend/db", field="channel")
    if not TYPE.fullmatch(type_ or ""):
        raise BadInput(f"{type_!r} must be a word such as status, question, decision or handoff", field="type")
    if not summary or not summary.strip():
        raise BadInput("is empty", hint="give a one-line summary of the turn", field="summary")
    if "\n" in summary or "\r" in summary:
        raise BadInput("must be one line", hint="put the details in the body", field="summary")
    for label, text in (("summary", summary), ("body", (body or "").replace("\r\n", "\n"))):
        bad = next((ch for ch in text if (ord(ch) < 32 and ch not in "\n\t") or ord(ch) == 127), None)
        if bad is not None:
            raise BadInput(f"holds the control character U+{ord(bad):04X}", field=label,
                           hint="a lone carriage return or escape sequence could forge another line on display")


@dataclass
class Appended:
    entry: LogEntry
    path: str
    bytes: int
    extra: dict = field(default_factory=dict)


def append(root: Path, log: str, agent: str, channel: str, type_: str, summary: str, body: str = "",
           ref: str | None = None, extra: dict | None = None, hw: dict[str, int] | None = None,
           private=None, fsync: bool = True) -> Appended:
    """Sign and append one entry to ``agent``'s file of ``log``."""
    agent = check_name(agent, "agent name")
    check_fields(channel, type_, summary, body)
    private = private or load_private_key(root, agent)
    kid = key_id(public_raw(private))
    path = log_file(root, log, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            raise VaultmemError(f"{LOG_DIRS[log]}/{agent}.md ends with a cut-off entry",
                                path=f"{LOG_DIRS[log]}/{agent}.md",
                                hint="run 'vaultmem log repair' to cut it back to the last whole entry")
        last = next(tail_lines(path, want=1), None)
        seq, prev = 1, ""
        if last is not None:
            try:
                last_entry = parse_altered(last)
            except LineError:
                raise VaultmemError(f"the last entry of {LOG_DIRS[log]}/{agent}.md cannot be read",
                                    path=f"{LOG_DIRS[log]}/{agent}.md",
                                    hint="run 'vaultmem log verify' to see what happened to it") from None
            seq, prev = last_entry.seq + 1, chain_hash(last_entry)
        eol = "\r\n" if size >= 2 and os.pread(fd, 2, size - 2) == b"\r\n" else "\n"  # keep a CRLF file CRLF
        entry = LogEntry(log=log, agent=agent, ts=now_stamp(), seq=seq, prev=prev, nonce=os.urandom(8).hex(),
                         channel=channel, type=type_, summary=summary.strip(),
                         body=(body or "").replace("\r\n", "\n").strip("\n"),
                         hw=dict(hw or {}), ref=ref, extra=dict(extra or {}), kid=kid)
        entry.sig = base64.b64encode(private.sign(entry.payload())).decode()
        entry.line = render(entry)
        data = (entry.line + eol).encode("utf-8")
        if len(data) > MAX_ENTRY_BYTES:
            raise BadInput(f"the entry is {len(data)} bytes; at most {MAX_ENTRY_BYTES} fit in one entry",
                           hint="keep the body short and link to a file instead")
        view = memoryview(data)
        try:
            while view:  # one write; a short write (rare) is completed, still under the lock
                view = view[os.write(fd, view):]
            if fsync:
                os.fsync(fd)
        except OSError as exc:  # a full disk: cut what was written, so no torn entry blocks the next append
            os.ftruncate(fd, size)
            raise from_os_error(exc, path=f"{LOG_DIRS[log]}/{agent}.md", writing=True) from None
        return Appended(entry, f"{LOG_DIRS[log]}/{agent}.md", len(data))
    finally:
        os.close(fd)  # closing releases the flock


def repair(root: Path) -> list[dict]:
    """Cut every log file's torn tail back to its last whole entry."""
    cut = []
    for log in LOG_DIRS:
        for agent, path in log_files(root, log).items():
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if not size or os.pread(fd, 1, size - 1) == b"\n":
                    continue
                data = os.pread(fd, size, 0)
                keep = data.rfind(b"\n") + 1
                os.ftruncate(fd, keep)
                os.fsync(fd)
                cut.append({"path": f"{LOG_DIRS[log]}/{agent}.md", "removed_bytes": size - keep,
                            "kept_bytes": keep})
            finally:
                os.close(fd)
    return cut


def last_sequence(root: Path, log: str, agent: str) -> int:
    """The sequence number of ``agent``'s last whole entry in ``log`` (0 if none)."""
    path = log_files(root, log).get(agent)
    for line in tail_lines(path) if path is not None else ():
        try:
            return parse_line(line).seq
        except LineError:
            continue
    return 0


def rotate(root: Path, agent: str) -> tuple[LogEntry, str]:
    """A new key for ``agent``, announced by an entry signed with the current one. The
    entry records where the agent's decision log stands (``dseq``): the new key signs the
    decisions after that one."""
    old = load_private_key(root, agent)
    new = new_private_key()
    raw = public_raw(new)
    done = append(root, "live", agent, "keys", "key-rotate", f"{agent} rotates to key {key_id(raw)}",
                  extra={"public": base64.b64encode(raw).decode(), "kid": key_id(raw),
                         "dseq": last_sequence(root, "decisions", agent)}, private=old)
    save_private_key(root, agent, new)
    return done.entry, key_id(raw)


def wait_for_new(root: Path, log: str, offsets: dict[str, int], interval: float = 0.2) -> Iterator[LogEntry]:
    """Follow: yield entries appended after ``offsets`` (agent → byte size), forever."""
    while True:
        found = []
        for agent, path in log_files(root, log).items():
            start = offsets.get(agent, 0)
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue
            if size <= start:
                continue
            with open(path, "rb") as fh:
                fh.seek(start)
                chunk = fh.read(size - start)
            whole = chunk[: chunk.rfind(b"\n") + 1]
            offsets[agent] = start + len(whole)
            for raw in whole.split(b"\n"):
                if raw.strip():
                    try:
                        e = parse_line(raw.rstrip(b"\r").decode("utf-8", errors="replace"))
                    except LineError:
                        continue
                    if e.agent != agent:
                        e.problem = f"claims to be {e.agent}'s entry but sits in {agent}'s file"
                    found.append(e)
        found.sort(key=lambda e: (e.ts, e.agent, e.seq))
        yield from found
        if not found:
            time.sleep(interval)
