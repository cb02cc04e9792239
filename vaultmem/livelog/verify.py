"""Verifying the logs: every signature, every chain, the key events of each agent in
order, and the checkpoints' marks against what the logs hold."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import files, layout
from ..errors import VaultmemError
from ..parse.logline import LineError, LogEntry, render
from .entries import BLOCK, LOG_DIRS, chain_hash, log_files, parse_altered, read_entries
from .keys import KEYS_DIR, initial_keys, key_id, verify_signature


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


def key_neighbourhood(path: Path) -> list[LogEntry]:
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
            entries = key_neighbourhood(path) if events else []
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
