"""Shared coordination state on top of a vault: keys, the signed logs, decisions,
project state, checkpoints and git sync. Reached as ``vault.shared``.

Log appends are not git commits each (eight agents appending a thousand entries would
be eight thousand commits): the log files are committed by ``sync``, or by ``vaultmem
log commit``. Everything else here — public keys, project state, checkpoints — is a
mutation and is committed at once, authored by the acting agent.
"""

from __future__ import annotations

import datetime as _dt
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import files, gitstore, layout, limits, livelog
from .errors import BadInput, GitError, NotFound, PermissionRefused, VaultmemError, from_os_error
from .models import Actor, Change
from .names import check_name
from .parse.document import parse_document, plain, yaml_timestamp
from .parse.logline import LogEntry

STATE_FILE = layout.STATE_FILE
CHECKPOINT_DIR = layout.CHECKPOINT_DIR
UNSEEN_SCAN_LIMIT = 100_000  # unseen entries read per call at most
GITATTRIBUTES_LINES = tuple(f"{folder}/*.md merge=union -text" for folder in layout.LOG_DIRS.values())


@dataclass
class SyncReport:
    committed: str | None = None
    pulled: int = 0
    pushed: bool = False
    conflicts: list[str] = field(default_factory=list)
    findings: int = 0
    remote: str = ""
    branch: str = ""  # the remote branch synced with, e.g. origin/main

    def to_dict(self) -> dict:
        return {"committed": self.committed, "pulled": self.pulled, "pushed": self.pushed,
                "conflicts": self.conflicts, "verify_findings": self.findings, "remote": self.remote,
                "branch": self.branch}


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class Shared:
    def __init__(self, vault) -> None:
        self.vault = vault
        self.root: Path = vault.root
        self._keys: dict[str, object] = {}  # private keys loaded in this process

    def _agent(self, actor: Actor) -> str:
        if actor.is_human:
            raise BadInput("this needs an agent to act as (or set VAULTMEM_AGENT)", field="as",
                           hint="log entries, decisions and checkpoints are signed or owned by an agent")
        return actor.name

    # -- keys --------------------------------------------------------------------------------
    def new_key(self, agent: str, actor: Actor) -> Change:
        agent = check_name(agent, "agent name")
        if not actor.is_human and actor.name not in (agent, self.vault.config.orchestrator):
            raise PermissionRefused(f"agent {actor.name!r} may not create keys for {agent!r}",
                                    hint="an agent creates its own key; the orchestrator or a human may too")
        pub_rel = layout.public_key_path(agent)
        if (self.root / pub_rel).exists() or (self.root / layout.private_key_path(agent)).exists():
            raise BadInput(f"agent {agent!r} already has a key",
                           hint=f"to replace it, sign the change with the old one: vaultmem keys rotate {agent}")
        private = livelog.new_private_key()
        line = livelog.public_key_line(private)
        with self.vault.writer.locked():
            try:
                livelog.save_private_key(self.root, agent, private)
            except OSError as exc:
                raise from_os_error(exc, path=layout.private_key_path(agent), writing=True) from None
            try:
                sha = self.vault.writer.apply(actor, f"keys: public key of {agent}", {pub_rel: line + "\n"},
                                              unscanned=(pub_rel,))
            except BaseException:
                (self.root / layout.private_key_path(agent)).unlink(missing_ok=True)
                raise
        kid = line.split()[2]
        return Change("keys.new", [pub_rel], sha, f"created key {kid} for {agent}",
                      {"agent": agent, "kid": kid, "public": pub_rel,
                       "private": layout.private_key_path(agent)})

    def rotate_key(self, agent: str, actor: Actor) -> dict:
        agent = check_name(agent, "agent name")
        if not actor.is_human and actor.name != agent:
            raise PermissionRefused(f"agent {actor.name!r} may not rotate {agent!r}'s key")
        entry, kid = livelog.rotate(self.root, agent)
        self._keys.pop(agent, None)
        return {"agent": agent, "kid": kid, "entry": entry.to_dict()}

    def revoke_key(self, agent: str, kid: str, actor: Actor, reason: str = "") -> LogEntry:
        """Retire one of ``agent``'s keys (say, a leaked one after a rotation), in an entry
        signed with its current key: entries signed with it after this one in the agent's
        chain fail ``verify``, whatever time they claim; so do decisions past the decision
        log's end now (``dseq``)."""
        agent = check_name(agent, "agent name")
        if not actor.is_human and actor.name != agent:
            raise PermissionRefused(f"agent {actor.name!r} may not revoke {agent!r}'s keys")
        current = livelog.key_id(livelog.public_raw(livelog.load_private_key(self.root, agent)))
        if kid == current:
            raise BadInput(f"{kid} is the key {agent} signs with now", field="kid",
                           hint=f"rotate first (vaultmem keys rotate {agent}), then revoke the old key")
        scrub = self.vault.writer.scrubber()
        reason = scrub.text("reason", reason)
        entry = livelog.append(self.root, "live", agent, "keys", "key-revoke",
                               f"{agent} revokes key {kid}" + (f": {reason}" if reason else ""),
                               extra={"kid": kid, "dseq": livelog.last_sequence(self.root, "decisions", agent)}).entry
        entry.warnings = scrub.warnings()
        return entry

    # -- the logs ------------------------------------------------------------------------------
    def append(self, actor: Actor, channel: str, type_: str, summary: str, body: str = "",
               ref: str | None = None, log: str = "live", extra: dict | None = None) -> LogEntry:
        """Sign and append one entry; it records what this agent has read so far (its
        high-water marks), so a truncated log of another agent can be detected."""
        agent = self._agent(actor)
        scrub = self.vault.writer.scrubber()
        summary = scrub.text("summary", summary)
        body = scrub.text("body", body, self.vault.config.max_log_body_bytes, "log.max_body_bytes")
        for what, value in (("channel", channel), ("type", type_), ("ref", ref)):
            scrub.refuse(what, value)
        if not (self.root / livelog.KEYS_DIR / f"{agent}.pub").exists():
            raise NotFound(f"agent {agent!r} has no key in this vault",
                           hint=f"create one first: vaultmem keys new {agent}")
        hw = {a: s for a, s in livelog.read_cursor(self.root, agent).items() if a != agent}
        if agent not in self._keys:
            self._keys[agent] = livelog.load_private_key(self.root, agent)
        entry = livelog.append(self.root, log, agent, channel, type_, summary, body, ref=ref, extra=extra,
                               hw=hw, private=self._keys[agent]).entry
        entry.warnings = scrub.warnings()
        return entry

    def tail(self, n: int = 20, agent: str | None = None, channel: str | None = None, type_: str | None = None,
             since: str | None = None, unseen_as: Actor | None = None, log: str = "live") -> list[LogEntry]:
        """The newest entries; with ``unseen_as``, only other agents' entries that agent
        has not read yet — and they are marked read."""
        limits.check("n", n)
        since_key = _since(since) if since else None
        if unseen_as is None:
            return self._checked(livelog.newest(self.root, log, n, agent=agent, channel=channel, type_=type_,
                                                since=since_key))
        me = self._agent(unseen_as)
        cursor = livelog.read_cursor(self.root, me)
        shown_before = livelog.read_shown(self.root, me)
        unseen = [e for e in livelog.newest(self.root, log, UNSEEN_SCAN_LIMIT, agent=agent, after=cursor, exclude=me)
                  if e.seq not in shown_before.get(e.agent, ())]
        wanted = [e for e in unseen if (not channel or e.channel == channel) and (not type_ or e.type == type_)
                  and (not since_key or e.ts >= since_key)]
        shown = wanted[:n]  # the oldest n: what is not shown now stays unseen
        if shown:
            # the mark moves past an entry only when every earlier entry of that agent was
            # shown; entries shown beyond a hidden one are remembered, not shown twice
            for e in shown:
                shown_before.setdefault(e.agent, set()).add(e.seq)
            for who, seqs in shown_before.items():
                mark = cursor.get(who, 0)
                while mark + 1 in seqs:
                    mark += 1
                cursor[who] = mark
            livelog.save_cursor(self.root, me, cursor, shown_before)
        return self._checked(shown)

    def _checked(self, entries: list[LogEntry]) -> list[LogEntry]:
        """Each entry with its ``problem`` set when its author, line or key does not check
        out, so that what is shown is never presented as verified when it is not."""
        return livelog.Checker(self.root).mark(entries)

    def unseen_for_brief(self, agent: str, n: int = 5) -> tuple[list[LogEntry], list[LogEntry]]:
        """The newest entries of other agents that ``agent`` has not read (not marked read),
        and those left out because they do not check out (a forged or revoked signature)."""
        entries = livelog.newest(self.root, "live", n * 4, after=livelog.read_cursor(self.root, agent), exclude=agent)
        checked = self._checked(entries)
        return [e for e in checked if not e.problem][-n:], [e for e in checked if e.problem]

    def find(self, ref: str, log: str = "live") -> LogEntry:
        who, _, seq = ref.partition("#")
        if not who or not seq.isdigit():
            raise BadInput(f"{ref!r} is not an entry id", field="entry", hint="entry ids look like ella#12 (agent#sequence)")
        path = livelog.log_files(self.root, log).get(who)
        if path is not None:
            for e in livelog.read_entries(path)[0]:
                if e.seq == int(seq):
                    return e
        raise NotFound(f"no entry {ref} in the {log} log", hint="list entries with: vaultmem log tail")

    def ack(self, actor: Actor, ref: str, note: str = "") -> LogEntry:
        target = self.find(ref)
        agent = self._agent(actor)
        if target.agent == agent:
            raise BadInput("an agent acknowledges other agents' entries, not its own")
        cursor = livelog.read_cursor(self.root, agent)
        cursor[target.agent] = max(cursor.get(target.agent, 0), target.seq)
        livelog.save_cursor(self.root, agent, cursor, livelog.read_shown(self.root, agent))
        summary = note.strip() or f"ack {ref}: {target.summary[:80]}"
        return self.append(actor, target.channel, "ack", summary, ref=ref)

    def decide(self, actor: Actor, decision: str, why: str, supersedes: str | None = None,
               channel: str = "decisions") -> tuple[LogEntry, LogEntry]:
        """A signed decision-log entry (when, who, decision, rationale), noted in the live log."""
        if not (why or "").strip():
            raise BadInput("a decision needs its rationale", field="why")
        if supersedes:
            self.find(supersedes, log="decisions")
        d = self.append(actor, channel, "decision", decision, body=why.strip(), ref=supersedes, log="decisions")
        live = self.append(actor, channel, "decision", decision, ref=f"decisions:{d.id}")
        return d, live

    def verify(self) -> tuple[list[dict], dict]:
        return livelog.verify(self.root, checkpoint_marks=self._checkpoint_marks())

    def repair(self) -> list[dict]:
        return livelog.repair(self.root)

    def commit_logs(self, actor: Actor) -> str | None:
        paths = [f"{livelog.LOG_DIRS[log]}/{p.name}" for log in livelog.LOG_DIRS
                 for p in livelog.log_files(self.root, log).values()]
        if not paths:
            return None
        with self.vault.writer.locked():
            return gitstore.commit(self.root, paths, "log: record new entries", actor,
                                   self.vault.config.lock_timeout)

    # -- project state -------------------------------------------------------------------------
    def state(self) -> dict:
        path = self.root / STATE_FILE
        if not path.exists():
            return {"text": "", "updated_by": None, "updated": None, "path": STATE_FILE}
        doc = parse_document(files.read_vault_text(self.root, STATE_FILE), STATE_FILE, require_frontmatter=False)
        meta = plain(doc.meta) if doc.meta is not None else {}
        text = "".join(doc.lines[doc.body_start:]).strip("\n")
        return {"text": text, "updated_by": meta.get("updated_by"), "updated": meta.get("updated"),
                "path": STATE_FILE}

    def set_state(self, text: str, actor: Actor) -> Change:
        if not text.strip():
            raise BadInput("the project state is empty", field="text", hint="give the new state as TEXT or on stdin")
        scrub = self.vault.writer.scrubber()
        text = scrub.text("project state", text)
        from .parse.note import render_note

        meta = {"type": "project-state", "updated_by": actor.name, "updated": yaml_timestamp(_utc_now())}
        new = render_note(meta, text)
        with self.vault.writer.locked():
            sha = self.vault.writer.apply(actor, f"state: project state updated by {actor.name}", {STATE_FILE: new})
        return Change("state.set", [STATE_FILE], sha, "project state updated", {"updated_by": actor.name},
                      warnings=scrub.warnings())

    # -- checkpoints ------------------------------------------------------------------------------
    def save_checkpoint(self, actor: Actor, text: str = "", task: str | None = None, step: str | None = None,
                        next_steps: list[str] = ()) -> Change:
        from .parse.note import render_note

        agent = self._agent(actor)
        if not (text.strip() or task or step or next_steps):
            raise BadInput("the checkpoint is empty", field="text",
                           hint="give the task, the step, next steps or the working context")
        scrub = self.vault.writer.scrubber()
        text, task, step = scrub.text("checkpoint", text or ""), scrub.text("task", task), scrub.text("step", step)
        next_steps = [scrub.text("next step", n) for n in next_steps]
        rel = layout.checkpoint_path(agent)
        seen = livelog.read_cursor(self.root, agent)
        meta = {"type": "checkpoint", "agent": agent, "task": task, "step": step,
                "next": list(next_steps) or None, "saved": yaml_timestamp(_utc_now()), "seen": seen or None}
        with self.vault.writer.locked():
            sha = self.vault.writer.apply(actor, f"checkpoint: {agent}" + (f" — {step}" if step else ""),
                                          {rel: render_note(meta, text or "")})
        return Change("checkpoint.save", [rel], sha, f"saved {rel}", {"agent": agent, "path": rel},
                      warnings=scrub.warnings())

    def checkpoint(self, agent: str) -> dict:
        agent = check_name(agent, "agent name")
        rel = layout.checkpoint_path(agent)
        path = self.root / rel
        if not path.exists():
            raise NotFound(f"agent {agent!r} has no checkpoint ({rel})",
                           hint=f"save one with: vaultmem checkpoint save --as {agent}")
        doc = parse_document(files.read_vault_text(self.root, rel), rel, require_frontmatter=False)
        meta = plain(doc.meta) if doc.meta is not None else {}
        saved = meta.get("saved")
        age = None
        if saved:
            try:
                moment = _dt.datetime.fromisoformat(str(saved).replace("Z", "+00:00"))
                age = (_utc_now() - moment).total_seconds()
            except ValueError:
                age = None
        fresh = self.vault.config.checkpoint_fresh_minutes * 60
        return {"agent": agent, "path": rel, "task": meta.get("task"), "step": meta.get("step"),
                "next": meta.get("next") or [], "saved": saved, "age_seconds": age,
                "stale": age is None or age > fresh, "text": "".join(doc.lines[doc.body_start:]).strip("\n")}

    def _checkpoint_marks(self) -> dict[str, dict[str, int]]:
        out = {}
        folder = self.root / CHECKPOINT_DIR
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            try:
                doc = parse_document(files.read_vault_text(self.root, f"{CHECKPOINT_DIR}/{path.name}"), path.name, require_frontmatter=False,
                                     fast=True)
            except (VaultmemError, OSError, UnicodeDecodeError):
                continue
            seen = (doc.meta or {}).get("seen") if isinstance(doc.meta, dict) else None
            if isinstance(seen, dict):
                out[path.stem] = {str(k): int(v) for k, v in seen.items() if str(v).isdigit()}
        return out

    # -- git sync -------------------------------------------------------------------------------
    def sync(self, actor: Actor, remote: str = "origin") -> SyncReport:
        """Commit new log entries, pull (merge) the remote branch this one tracks (else the
        one of the same name), push. Only the remote moved: a fast-forward; only this side:
        a push; both: a merge commit. Log files merge by union (every line is unique), so
        they never conflict; any other conflict is reported with the files named and the
        merge is undone. A log that does not verify after the merge is not pushed (the
        findings are named). A push that loses a race with another clone is retried:
        fetch, merge, push again, up to ``SYNC_ATTEMPTS`` times. Holds the write lock: no
        vaultmem change lands in the middle of a merge."""
        with self.vault.writer.locked():
            return self._sync(actor, remote)

    def _sync(self, actor: Actor, remote: str) -> SyncReport:
        report = SyncReport(remote=remote)
        root = str(self.root)

        def git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
            name, email = actor.git_identity()
            env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
                   "GIT_COMMITTER_EMAIL": email, "GIT_MERGE_AUTOEDIT": "no", "PATH": _path()}
            r = subprocess.run(["git", "-c", "core.quotepath=off", "-C", root, *args], capture_output=True,
                               text=True, env=env)
            if check and r.returncode != 0:
                raise GitError(f"git {args[0]} failed: {(r.stderr or r.stdout).strip()}", path=root)
            return r

        if git("remote", "get-url", remote, check=False).returncode != 0:
            raise NotFound(f"the vault has no git remote {remote!r}, so nothing was synced; new log entries "
                           f"stay uncommitted until a sync or 'vaultmem log commit' records them",
                           hint=f"add one: git -C {root} remote add {remote} URL; or record the entries now "
                                f"with: vaultmem log commit")
        branch = git("rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
        if branch == "HEAD":
            raise GitError("sync needs a branch, but HEAD is detached; nothing was synced", path=root,
                           hint=f"check out the branch to sync: git -C {root} switch main")
        target, tracked = self._upstream(git, remote, branch)
        report.branch = f"{remote}/{target}"
        self._ensure_gitattributes(actor)
        report.committed = self.commit_logs(actor)
        upstream = f"{remote}/{target}"
        verified_at = None  # the commit last verified: a retry that merged nothing need not verify again
        for attempt in range(1, SYNC_ATTEMPTS + 1):
            fetched = git("fetch", "--quiet", remote, check=False)
            if fetched.returncode != 0:
                if attempt < SYNC_ATTEMPTS and _raced(fetched.stderr):
                    _backoff(attempt)
                    continue
                raise GitError(f"git fetch failed: {(fetched.stderr or fetched.stdout).strip()}", path=root)
            if git("rev-parse", "--verify", "--quiet", upstream, check=False).returncode == 0:
                behind = int(git("rev-list", "--count", f"HEAD..{upstream}").stdout.strip() or 0)
                if behind:
                    # a fast-forward when only the remote moved: a merge commit there would be
                    # new on this side alone, so clones syncing in turn would never meet
                    merged = git("merge", "--no-edit", "--ff", upstream, check=False)
                    if merged.returncode != 0:
                        conflicts = git("diff", "--name-only", "--diff-filter=U").stdout.split()
                        git("merge", "--abort", check=False)
                        report.conflicts = conflicts
                        raise GitError(
                            "sync stopped: these files changed on both sides and need a human: "
                            + (", ".join(conflicts) or (merged.stderr or merged.stdout).strip()),
                            path=root, hint="merge them by hand (git merge), then run vaultmem sync again")
                    report.pulled += behind
            elif not tracked:
                others = [b for b in git("branch", "-r", "--format=%(refname:short)").stdout.split()
                          if b.startswith(f"{remote}/") and b != f"{remote}/HEAD" and b != remote]
                if others:  # pushing would start a branch nobody else syncs with
                    names = ", ".join(others)
                    raise GitError(f"the remote {remote!r} has no branch {target!r} (it has {names}), and "
                                   f"{branch!r} tracks none of them; nothing was pushed", path=root,
                                   hint=f"tell git which one to sync with: git -C {root} branch "
                                        f"--set-upstream-to={others[0]} {branch}, then sync again")
            now = git("rev-parse", "HEAD").stdout.strip()
            if now != verified_at:
                findings = self.verify()[0]
                report.findings = len(findings)
                if findings:
                    raise _unverified(findings, report, root)
                verified_at = now
            pushed = git("push", "--quiet", remote, f"HEAD:refs/heads/{target}", check=False)
            if pushed.returncode == 0:
                report.pushed = True
                break
            if attempt == SYNC_ATTEMPTS or not _raced(pushed.stderr):
                raise GitError(f"git push failed after {attempt} attempts: {pushed.stderr.strip()}", path=root,
                               hint="run vaultmem sync again" if _raced(pushed.stderr) else None)
            _backoff(attempt)  # another clone pushed first: fetch, merge and push again
        return report

    @staticmethod
    def _upstream(git, remote: str, branch: str) -> tuple[str, bool]:
        """The remote branch ``branch`` syncs with: the one it tracks on ``remote``, else
        the one of the same name. Also whether it is tracked."""
        tracked_remote = git("config", f"branch.{branch}.remote", check=False).stdout.strip()
        merge = git("config", f"branch.{branch}.merge", check=False).stdout.strip()
        if tracked_remote == remote and merge.startswith("refs/heads/"):
            return merge.removeprefix("refs/heads/"), True
        return branch, False

    def _ensure_gitattributes(self, actor: Actor) -> None:
        path = self.root / layout.GITATTRIBUTES
        text = files.read_vault_text(self.root, layout.GITATTRIBUTES) if path.exists() else ""
        missing = [line for line in GITATTRIBUTES_LINES if line not in text.splitlines()]
        if missing:
            new = text + ("" if not text or text.endswith("\n") else "\n") + "\n".join(missing) + "\n"
            self.vault.writer.apply(actor, "sync: merge log files line by line (union)", {layout.GITATTRIBUTES: new})


SYNC_ATTEMPTS = 12  # fetch + merge + push rounds while other clones keep pushing first
# git's words for a push that lost a race: the remote moved, or its ref was locked by another push
_RACE_MARKERS = ("cannot lock ref", "fetch first", "non-fast-forward", "Unable to create", "failed to update ref",
                 "incorrect old value")


def _raced(stderr: str) -> bool:
    return any(m in (stderr or "") for m in _RACE_MARKERS)


def _backoff(attempt: int) -> None:
    import random
    import time

    time.sleep(random.uniform(0.02, 0.1) * min(attempt, 6))  # jitter: racing clones spread out


def _one_line(text: str) -> str:
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in str(text))


def _unverified(findings: list[dict], report: SyncReport, root: str) -> VaultmemError:
    shown = "; ".join(f"{_one_line(f['path'])}:{f['line'] or '-'}: {_one_line(f['agent'])}#"
                      f"{f['seq'] if f['seq'] is not None else '?'} {f['kind']}" for f in findings[:5])
    more = f" and {len(findings) - 5} more" if len(findings) > 5 else ""
    pulled = f"{report.pulled} commits were pulled and merged, but " if report.pulled else ""
    return VaultmemError(
        f"{pulled}the log does not verify ({len(findings)} findings: {shown}{more}), so it was not pushed",
        path=root,
        hint="see each finding with 'vaultmem log verify'; a cut-off last entry is fixed by 'vaultmem log repair'; "
             "an edited or forged entry needs a human: restore the file from git history "
             "(git log -p -- FILE), commit, then sync again")


def _path() -> str:
    import os

    return os.environ.get("PATH", "/usr/bin:/bin")


def _since(value: str) -> str:
    """A since value (ISO date/time, or 30m / 2h / 3d ago) as a sortable UTC string."""
    import re

    m = re.fullmatch(r"(\d+)([smhd])", value.strip())
    if m:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        moment = _utc_now() - _dt.timedelta(seconds=int(m.group(1)) * unit)
    else:
        try:
            moment = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise BadInput(f"{value!r} is not a time", field="since",
                           hint="use 2026-05-08, 2026-05-08T10:00Z or 30m/2h/3d")
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_dt.timezone.utc)
    return moment.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
