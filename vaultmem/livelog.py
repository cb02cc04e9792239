"""The shared live-context log and the decision log: signed, append-only, per-agent files.

Layout: ``shared/log/<agent>.md`` (live context) and ``shared/decisions/<agent>.md``
(decisions), one entry per line (see :mod:`vaultmem.parse.logline`). Each agent appends
only to its own files, so clones merge through git without conflicts; readers merge the
files by (timestamp, agent, sequence), so every clone reads the same order.

Keys: ``vaultmem keys new AGENT`` writes an Ed25519 private key to
``.vaultmem/keys/<agent>.key`` (mode 0600, git-ignored) and the public key to
``shared/keys/<agent>.pub`` (committed). Later keys are introduced by a ``key-rotate``
entry signed with the current key; ``key-revoke`` retires one. Both take effect at their
place in the agent's chain (sequence numbers), never at the time an entry claims.

Appending: open with O_APPEND, take an exclusive ``flock`` on the file, read the agent's
last line (sequence number and hash for the chain), then write the whole line with one
``os.write``. A reader skips a last line without its newline, so it never sees a partial
entry; a writer killed mid-write leaves such a tail, which ``verify`` reports and
``repair`` cuts.
"""

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

from . import files, layout
from .errors import BadInput, NotFound, VaultmemError, from_os_error
from .names import check_name
from .parse.logline import CHANNEL, TYPE, LineError, LogEntry, line_hash, parse_line, render

LOG_DIRS = layout.LOG_DIRS
KEYS_DIR = layout.KEYS_DIR
PRIVATE_DIR = layout.PRIVATE_KEYS_DIR
CURSOR_DIR = layout.CURSOR_DIR
MAX_ENTRY_BYTES = 256 * 1024
BLOCK = 64 * 1024


# -- keys ----------------------------------------------------------------------------------


def key_id(public_raw: bytes) -> str:
    import hashlib

    return hashlib.sha256(public_raw).hexdigest()[:16]


def public_raw(private) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _private_raw(private) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    return private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())


def new_private_key():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate()


def save_private_key(root: Path, agent: str, private) -> Path:
    """Write ``agent``'s private key (mode 0600) into the git-ignored keys folder. A
    failed write (say, a full disk) leaves no key and no temp file behind."""
    path = files.inside(root, layout.private_key_path(agent))
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    files.ensure_gitignore(path.parent, "# private signing keys: never committed\n*\n")
    files.atomic_write(path, base64.b64encode(_private_raw(private)) + b"\n", mode=0o600)
    return path


def load_private_key(root: Path, agent: str):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = root / PRIVATE_DIR / f"{agent}.key"
    try:
        raw = base64.b64decode(files.read_bytes(root, f"{PRIVATE_DIR}/{agent}.key").strip())
        return Ed25519PrivateKey.from_private_bytes(raw)
    except FileNotFoundError:
        raise NotFound(f"agent {agent!r} has no private key on this machine ({PRIVATE_DIR}/{agent}.key)",
                       hint=f"create one with: vaultmem keys new {agent}") from None
    except ValueError:
        raise VaultmemError(f"the private key {PRIVATE_DIR}/{agent}.key is damaged", path=str(path)) from None


def public_key_line(private) -> str:
    raw = public_raw(private)
    created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"ed25519 {base64.b64encode(raw).decode()} {key_id(raw)} {created}"


def initial_keys(root: Path) -> dict[str, tuple[str, bytes]]:
    """Each agent's first public key, from ``shared/keys/<agent>.pub``: agent → (kid, raw)."""
    out = {}
    folder = root / KEYS_DIR
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.pub")):
        if not files.may_read(root, f"{KEYS_DIR}/{path.name}"):
            continue  # a link leading out of the vault is no key of this team
        try:
            first = path.read_text(encoding="utf-8").split("\n", 1)[0].split()
            raw = base64.b64decode(first[1])
        except (OSError, IndexError, ValueError):
            continue
        out[path.stem] = (key_id(raw), raw)
    return out


def verify_signature(public_raw: bytes, entry: LogEntry) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(base64.b64decode(entry.sig, validate=True),
                                                              entry.payload())
        return True
    except (InvalidSignature, ValueError):
        return False


# -- reading -------------------------------------------------------------------------------


def log_file(root: Path, log: str, agent: str) -> Path:
    return files.inside(root, f"{LOG_DIRS[log]}/{agent}.md")


def log_files(root: Path, log: str) -> dict[str, Path]:
    folder = root / LOG_DIRS[log]
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.md"))
            if files.may_read(root, f"{LOG_DIRS[log]}/{p.name}")}  # never a link leading out


def _tail_lines(path: Path, want: int | None = None) -> Iterator[str]:
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
        for line in _tail_lines(path):
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


def _cursor_file(root: Path, agent: str) -> dict:
    try:
        data = json.loads(files.read_bytes(root, f"{CURSOR_DIR}/{agent}.json"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, VaultmemError):
        return {}


def read_cursor(root: Path, agent: str) -> dict[str, int]:
    """What ``agent`` has read: other agent → the sequence number read up to."""
    out = {}
    for k, v in _cursor_file(root, agent).items():
        if k != SHOWN:
            try:
                out[str(k)] = int(v)
            except (TypeError, ValueError):
                continue
    return out


def read_shown(root: Path, agent: str) -> dict[str, set[int]]:
    """Entries past the marks that were already shown (a filtered --unseen showed them)."""
    raw = _cursor_file(root, agent).get(SHOWN) or {}
    return {str(k): {int(x) for x in v} for k, v in raw.items() if isinstance(v, list)}


def save_cursor(root: Path, agent: str, cursor: dict[str, int], shown: dict[str, set[int]] | None = None) -> None:
    data: dict = dict(cursor)
    extra = {k: sorted(x for x in v if x > cursor.get(k, 0)) for k, v in (shown or {}).items()}
    extra = {k: v for k, v in extra.items() if v}
    if extra:
        data[SHOWN] = extra
    files.atomic_write(files.inside(root, f"{CURSOR_DIR}/{agent}.json"), json.dumps(data, ensure_ascii=False))


# -- appending -------------------------------------------------------------------------------


def _now() -> str:
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
        last = next(_tail_lines(path, want=1), None)
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
        entry = LogEntry(log=log, agent=agent, ts=_now(), seq=seq, prev=prev, nonce=os.urandom(8).hex(),
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


# -- verifying -------------------------------------------------------------------------------


@dataclass
class KeyTimeline:
    """One agent's keys along its own live-log chain. A key is valid for the live entries
    after the one that introduced it (sequence ``live_from``) and before the one that
    revoked it (``live_until``); for decision-log entries, the rotation or revocation
    records how far the agent's decision log went then (``dec_from`` / ``dec_until``;
    entries written before that mark existed fall back to timestamps). Order comes from
    the chain, never from the time an entry claims: a leaked key cannot back-date its way
    past its revocation."""

    keys: dict[str, bytes] = field(default_factory=dict)
    live_from: dict[str, int] = field(default_factory=dict)
    live_until: dict[str, int] = field(default_factory=dict)
    dec_from: dict[str, tuple[int | None, str]] = field(default_factory=dict)
    dec_until: dict[str, tuple[int | None, str]] = field(default_factory=dict)

    def problem(self, e: LogEntry) -> tuple[str, str] | None:
        """None if ``e``'s key is valid at its place in the chain, else (kind, message)."""
        kid = e.kid
        if kid not in self.keys:
            return "unknown-key", f"signed with a key not valid for {e.agent}: {kid}"
        if e.log == "live":
            if e.seq <= self.live_from[kid]:
                return "unknown-key", f"signed with the key {kid}, introduced only at {e.agent}#{self.live_from[kid]}"
            if kid in self.live_until and e.seq >= self.live_until[kid]:
                return "revoked-key", (f"signed with the key {kid}, revoked at {e.agent}#{self.live_until[kid]} "
                                       f"(whatever time the entry claims)")
            return None
        start = self.dec_from.get(kid)
        if start is not None and ((start[0] is not None and e.seq <= start[0]) or (start[0] is None
                                                                                  and e.ts < start[1])):
            return "unknown-key", f"signed with the key {kid}, introduced after this decision-log entry"
        end = self.dec_until.get(kid)
        if end is not None and ((end[0] is not None and e.seq > end[0]) or (end[0] is None and e.ts >= end[1])):
            return "revoked-key", f"signed with the key {kid}, revoked when {e.agent}'s decision log ended at " + (
                f"sequence {end[0]}" if end[0] is not None else end[1])
        return None


def key_timeline(agent: str, initial: tuple[str, bytes] | None, entries: list[LogEntry]) -> KeyTimeline:
    """The agent's keys from its live log (``entries``, as read). A rotation or revocation
    counts only if it is signed with a key valid at its place in the chain and its line is
    intact; a rotation must also sit in the chain itself — the only entry with its
    sequence number, linked to the entry before and by the entries after — so a leaked
    key can neither announce a key of its own after its revocation nor slip one into the
    history before it (that would be a second entry with an old number: a fork)."""
    tl = KeyTimeline()
    if initial is not None:
        tl.keys[initial[0]] = initial[1]
        tl.live_from[initial[0]] = 0
    mine = [e for e in entries if e.agent == agent and e.log == "live"]
    by_seq: dict[int, list[LogEntry]] = {}
    for e in mine:
        by_seq.setdefault(e.seq, []).append(e)
    events = sorted((e for e in mine if e.type in ("key-rotate", "key-revoke")), key=lambda e: e.seq)
    for e in events:
        if tl.problem(e) is not None or not verify_signature(tl.keys[e.kid], e):
            continue  # (an altered visible part changes no signed field: verify reports it as edited)
        if len({x.nonce for x in by_seq[e.seq]}) > 1:
            if e.type == "key-rotate":
                continue  # a fork: another entry holds this place in the chain
        dseq = e.extra.get("dseq")
        dmark = (int(dseq) if isinstance(dseq, int) and not isinstance(dseq, bool) else None, e.ts)
        if e.type == "key-rotate" and e.extra.get("public"):
            before = by_seq.get(e.seq - 1, [])
            linked = (e.prev == "" if e.seq == 1 else len(before) == 1 and e.prev == chain_hash(before[0]))
            if not linked or any(x.prev != chain_hash(e) for x in by_seq.get(e.seq + 1, [])):
                continue
            try:
                raw = base64.b64decode(str(e.extra["public"]), validate=True)
            except ValueError:
                continue
            kid = key_id(raw)
            if kid not in tl.keys:
                tl.keys[kid], tl.live_from[kid], tl.dec_from[kid] = raw, e.seq, dmark
        elif e.type == "key-revoke" and e.extra.get("kid") and str(e.extra["kid"]) != e.kid:
            kid = str(e.extra["kid"])
            if kid not in tl.live_until or e.seq < tl.live_until[kid]:
                tl.live_until[kid], tl.dec_until[kid] = e.seq, dmark
    return tl


KEY_NEEDLE = b'"t":"key-'


def has_key_events(path: Path, cache: dict | None = None) -> bool:
    """Whether a live-log file may hold a rotation or revocation (a byte search). With
    ``cache`` (file name → what an earlier search saw), a file that only grew since is
    searched from where that search ended: a log is appended to, so a tail stays fast at
    any length. (The cache is only a shortcut for showing entries; ``verify`` reads all.)"""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            start, known = 0, (cache or {}).get(path.name)
            if isinstance(known, dict) and known.get("ino") == st.st_ino and 32 <= known.get("size", 0) <= st.st_size:
                fh.seek(known["size"] - 32)
                if fh.read(32).hex() == known.get("tail"):
                    if known.get("events"):
                        return True
                    start = known["size"] - len(KEY_NEEDLE)
            fh.seek(start)
            found, tail = False, b""
            while chunk := fh.read(BLOCK * 16):
                if KEY_NEEDLE in tail + chunk:
                    found = True
                    break
                tail = chunk[-len(KEY_NEEDLE):]
            if cache is not None and st.st_size >= 32:
                fh.seek(st.st_size - 32)
                cache[path.name] = {"ino": st.st_ino, "size": st.st_size, "tail": fh.read(32).hex(), "events": found}
            return found
    except OSError:
        return False


def _key_neighbourhood(path: Path) -> list[LogEntry]:
    """What :func:`key_timeline` needs of a live-log file, without parsing all of it: its
    rotations and revocations and every entry numbered one before, the same as or one
    after one of them — found by byte search, each candidate line then parsed (a match in
    a visible part is parsed and dropped for its real fields)."""
    import re

    data = path.read_bytes()
    data = data[: data.rfind(b"\n") + 1]  # a cut-off last line is not read
    found: dict[int, LogEntry] = {}  # line start → entry

    def entry_at(pos: int) -> LogEntry | None:
        start = data.rfind(b"\n", 0, pos) + 1
        if start not in found:
            end = data.index(b"\n", pos)
            raw = data[start:end]
            try:
                found[start] = parse_altered((raw[:-1] if raw.endswith(b"\r") else raw).decode("utf-8", "replace"),
                                             data.count(b"\n", 0, start) + 1)
            except LineError:
                return None
        return found[start]

    wanted: set[int] = set()
    for m in re.finditer(rb'"t":"key-', data):
        e = entry_at(m.start())
        if e is not None and e.type in ("key-rotate", "key-revoke"):
            wanted.update((e.seq - 1, e.seq, e.seq + 1))
    for m in re.finditer(rb'"seq":(\d{1,18}),"sig":"', data):
        if int(m.group(1)) in wanted:
            entry_at(m.start())
    return [e for _start, e in sorted(found.items()) if e.seq in wanted]


class Checker:
    """Checks single entries as they are shown (``log tail``, the brief): written by the
    agent whose file holds it, its line intact, signed with a key valid at its place in
    that agent's chain. (Sequence gaps, forks and truncation need the whole log: ``verify``.)"""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.initial = initial_keys(root)
        self._timelines: dict[str, KeyTimeline] = {}
        try:  # never through a link, never from a pipe (files.open_inside)
            cache = json.loads(files.read_bytes(root, layout.KEY_EVENTS_CACHE))
        except (OSError, ValueError, VaultmemError):
            cache = {}
        self._cache: dict = cache if isinstance(cache, dict) else {}

    def timeline(self, agent: str) -> KeyTimeline:
        if agent not in self._timelines:
            path = log_files(self.root, "live").get(agent)
            before = dict(self._cache.get(path.name) or {}) if path is not None else None
            events = path is not None and has_key_events(path, self._cache)
            if path is not None and self._cache.get(path.name) != before:
                # a read-only vault: the next tail searches again
                files.write_local(self.root, Path(layout.KEY_EVENTS_CACHE).name, json.dumps(self._cache))
            entries = _key_neighbourhood(path) if events else []
            self._timelines[agent] = key_timeline(agent, self.initial.get(agent), entries)
        return self._timelines[agent]

    def problem(self, e: LogEntry) -> str | None:
        if e.line and e.line != render(e):
            return "the line differs from its signed fields"
        tl = self.timeline(e.agent)
        found = tl.problem(e)
        if found is not None:
            return found[1]
        if not verify_signature(tl.keys[e.kid], e):
            return "the signature does not match (the entry was edited)"
        return None

    def mark(self, entries: list[LogEntry]) -> list[LogEntry]:
        """Set each entry's ``problem`` (None when it checks out)."""
        for e in entries:
            e.problem = e.problem or self.problem(e)
        return entries


def verify(root: Path, checkpoint_marks: dict[str, dict[str, int]] | None = None) -> tuple[list[dict], dict]:
    """Check every signature, chain and high-water mark of both logs. Returns the findings
    (each naming log, agent, sequence number, line and what is wrong) and counts."""
    findings: list[dict] = []
    initial = initial_keys(root)
    kid_owner = {kid: agent for agent, (kid, _raw) in initial.items()}
    read = {log: {agent: read_entries(path) for agent, path in log_files(root, log).items()} for log in LOG_DIRS}
    timelines: dict[str, KeyTimeline] = {}
    for agent in set(read["live"]) | set(read["decisions"]) | set(initial):
        live = read["live"].get(agent, ([], []))[0]
        timelines[agent] = key_timeline(agent, initial.get(agent), live)
        for kid in timelines[agent].keys:
            kid_owner.setdefault(kid, agent)
    # where each entry belongs: the first copy in its own agent's file of its own log (or,
    # if no copy sits there, the first one read); every other copy is the replay
    home: dict[str, tuple[str, str, int]] = {}
    for log in LOG_DIRS:
        for agent, (entries, _problems) in read[log].items():
            for e in entries:
                here = (log, agent, e.lineno)
                if e.nonce not in home or ((e.log, e.agent) == (log, agent)
                                           and home[e.nonce][:2] != (e.log, e.agent)):
                    home[e.nonce] = here
    last_seq: dict[tuple[str, str], int] = {}
    last_line: dict[tuple[str, str], int] = {}
    marks: list[tuple[str, str, str, int]] = []  # (log, source, agent, seq seen)
    total = 0

    def find(kind: str, log: str, agent: str, message: str, seq: int | None = None, line: int | None = None):
        findings.append({"kind": kind, "log": log, "agent": agent, "seq": seq, "line": line,
                         "path": f"{LOG_DIRS[log]}/{agent}.md", "message": message})

    for log in LOG_DIRS:
        for agent, (entries, problems) in read[log].items():
            for p in problems:
                find(p.get("kind", "unreadable"), log, agent, p["message"], seq=p.get("seq"), line=p["line"])
            timeline = timelines.get(agent, KeyTimeline())
            expect, prev_line, seen_seq = 1, None, {}
            for e in entries:
                total += 1
                where = dict(seq=e.seq, line=e.lineno)
                if agent not in initial:
                    find("unknown-key", log, agent, f"no public key for {agent!r} in {KEYS_DIR}/", **where)
                if e.line != render(e):
                    find("edited", log, agent, "the line differs from its signed fields (visible text or JSON)",
                         **where)
                if e.agent != agent or e.log != log:
                    find("wrong-author", log, agent,
                         f"entry claims to be {e.agent!r}'s {e.log} entry but sits in {agent!r}'s {log} file", **where)
                key_problem = timeline.problem(e) if e.agent == agent else ("unknown-key", "")
                if key_problem is None:
                    if not verify_signature(timeline.keys[e.kid], e):
                        find("bad-signature", log, agent, "the signature does not match (the entry was edited)",
                             **where)
                elif key_problem[0] == "revoked-key":
                    find("revoked-key", log, agent, key_problem[1], **where)
                elif e.kid in kid_owner and kid_owner[e.kid] != agent:
                    find("forged-author", log, agent,
                         f"signed with {kid_owner[e.kid]!r}'s key, but claims to be {agent!r}", **where)
                else:
                    find("unknown-key", log, agent, key_problem[1] or f"signed with a key not valid for {agent}: "
                                                                     f"{e.kid}", **where)
                if home[e.nonce] != (log, agent, e.lineno):
                    h_log, h_agent, h_line = home[e.nonce]
                    find("replayed", log, agent, f"a copy of the entry at {LOG_DIRS[h_log]}/{h_agent}.md:{h_line} "
                                                 f"(the same nonce)", **where)
                if e.seq in seen_seq and e.nonce != seen_seq[e.seq]:
                    find("forked", log, agent, f"two different entries with sequence {e.seq}: {agent} wrote on two "
                                               f"clones from the same point; both are kept", **where)
                elif e.seq < expect:
                    kind = "duplicated" if e.seq == expect - 1 and prev_line is not None else "reordered"
                    find(kind, log, agent, f"sequence {e.seq} after {expect - 1}: entries out of order or repeated",
                         **where)
                elif e.seq > expect:
                    find("deleted", log, agent, f"sequence jumps from {expect - 1} to {e.seq}: "
                                                f"{e.seq - expect} entries missing", **where)
                elif prev_line is not None and e.prev != prev_line:
                    find("chain-broken", log, agent, "does not follow the previous entry (one was removed or "
                                                     "replaced before it)", **where)
                elif prev_line is None and e.prev:
                    find("deleted", log, agent, "the first entries of this log are missing", **where)
                seen_seq.setdefault(e.seq, e.nonce)
                expect = max(expect, e.seq + 1)
                prev_line = chain_hash(e)
                last_line[(log, agent)] = e.lineno
                for other, seq in e.hw.items():
                    marks.append(("live", e.id, other, seq))
                if e.ref and e.ref.startswith("decisions:"):
                    who, _, num = e.ref.removeprefix("decisions:").partition("#")
                    if num.isdigit():
                        marks.append(("decisions", e.id, who, int(num)))
            last_seq[(log, agent)] = expect - 1
    for owner, hw in (checkpoint_marks or {}).items():
        for other, seq in hw.items():
            marks.append(("live", f"checkpoint of {owner}", other, seq))
    # one finding per truncated log, from the mark that saw furthest
    furthest: dict[tuple[str, str], tuple[int, str, int]] = {}  # → (seen, source, how many marks say so)
    for log, source, other, seen in marks:
        if seen > last_seq.get((log, other), 0):
            best = furthest.get((log, other))
            count = best[2] + 1 if best else 1
            furthest[(log, other)] = (seen, source, count) if not best or seen > best[0] else (*best[:2], count)
    for (log, other), (seen, source, count) in furthest.items():
        have = last_seq.get((log, other), 0)
        others = f" (and {count - 1} more entries or checkpoints)" if count > 1 else ""
        find("truncated", log, other, f"{other}'s {log} log ends at sequence {have}, but {source}{others} saw it up "
                                      f"to {seen}: {seen - have} later entries are missing",
             seq=have, line=last_line.get((log, other)))
    agents = {a for _l, a in last_seq}
    return findings, {"entries": total, "agents": len(agents)}


def last_sequence(root: Path, log: str, agent: str) -> int:
    """The sequence number of ``agent``'s last whole entry in ``log`` (0 if none)."""
    path = log_files(root, log).get(agent)
    for line in _tail_lines(path) if path is not None else ():
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
