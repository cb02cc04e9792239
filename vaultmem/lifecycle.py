"""Sub-agent delegations and their harvest, the audit, and seed 000's management modes
(ask, todo, history). Reached as ``vault.lifecycle``.

A delegation is one file, ``shared/delegations/<id>.md`` (frontmatter: role, task, who
delegated, when, status). ``harvest`` writes the sub-agent's record — task, conclusion,
output, key decision, all four required — into the role page's sub-agent records and
closes the delegation, in one commit. Sub-agents never get a page of their own.
"""

from __future__ import annotations

import datetime as _dt
import re
import secrets
from typing import Any

from . import files, gitstore, guard, layout, limits, pages
from .errors import BadInput, NotFound, VaultmemError
from .models import Actor, Change
from .parse.document import parse_document, plain, yaml_timestamp
from .parse.note import render_note, set_note_fields
from .parse.page import SUBAGENT_FIELDS, add_subagent_record
from .patterns import Lazy

DELEGATIONS_DIR = layout.DELEGATIONS_DIR
FIELDS = ("task", "conclusion", "output", "decision")
# An open item says that work is still to do. Some words say so wherever they stand: an
# unchecked box, TODO / FIXME, 待办, 未解决 / 未完成 (unsolved, unfinished), 遗留问题 (an
# issue left over). Others only as a label that opens the entry or one of its clauses —
# "后续：补基准", "Follow-up: …", "pending: …", "blocked on …" — since in a lesson they are
# advice or past events: "…，后续审查重点关注" (look at it in later reviews), "清理了遗留代码"
# (legacy code, cleaned up), "the request stayed pending until …", "CSP blocked …".
OPEN_ANYWHERE = r"\[ \]|\bTODO\b|\bFIXME\b|待办|未解决|未完成|遗留问题|\bopen questions?\b"
OPEN_LABEL = (r"(?:^|[，,。.；;：:！!？?(（]\s*)(?:后续|遗留|下一步|follow[- ]?ups?|next steps?|pending|blocked|todo)"
              r"\s*(?:[：:]|(?<=blocked) (?:on|by)\b)")
OPEN_ITEM = Lazy(f"{OPEN_ANYWHERE}|{OPEN_LABEL}", re.IGNORECASE)  # for the audit only: compiled there
AGENT_EMAIL = "@agents.vaultmem.invalid"


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class Lifecycle:
    def __init__(self, vault) -> None:
        self.vault = vault
        self.root = vault.root

    # -- delegations -----------------------------------------------------------------------
    def dispatch(self, role: str, task: str, actor: Actor, category: str | None = None,
                 project: str | None = None, window: int | None = None, ratio: float | None = None,
                 tokens: int | None = None):
        """Seed 000's dispatch: create the role's page on first use, then brief it. The
        task's size, ``window`` and ``tokens`` are checked first: a dispatch refused
        writes nothing. (page Change, Brief)."""
        limits.check_text("task", task)
        limits.check_sizes(window=window, tokens=tokens)
        change = self.vault.pages.ensure(role, actor, category=category, project=project)
        brief = self.vault.brief(change.details["role"], task, window=window, ratio=ratio, tokens=tokens,
                                 project=project)
        return change, brief

    def delegate(self, role: str, task: str, actor: Actor, window: int | None = None,
                 tokens: int | None = None) -> tuple[Change, Any]:
        """Record a pending delegation under ``role`` and brief its sub-agent with the
        role's memory (the role's page is created on first use)."""
        limits.check_sizes(window=window, tokens=tokens)  # before anything is written
        if not task.strip():
            raise BadInput("the task is empty", field="task", hint="say what the sub-agent is to do")
        scrub = self.vault.writer.scrubber()
        task = scrub.text("task", task)
        page = self.vault.pages.ensure(role, actor)
        role = page.details["role"]
        did = f"d-{_now():%Y%m%d}-{secrets.token_hex(3)}"
        rel = f"{DELEGATIONS_DIR}/{did}.md"
        meta = {"type": "delegation", "id": did, "role": role, "status": "pending", "delegated_by": actor.name,
                "created": yaml_timestamp(_now())}
        with self.vault.writer.locked():
            sha = self.vault.writer.apply(actor, f"delegate: {did} to a sub-agent of {role}",
                                          {rel: render_note(meta, task)})
        brief = self.vault.brief(role, task, window=window, tokens=tokens)
        return Change("delegate", [rel], sha, f"delegation {did} pending",
                      {"id": did, "role": role, "path": rel, "page_created": page.details["created"]},
                      warnings=[*page.warnings, *scrub.warnings()]), brief

    def delegations(self, role: str | None = None, status: str | None = None) -> list[dict]:
        return delegations(self.root, role, status)

    def harvest(self, role: str, delegation: str, fields: dict[str, str], actor: Actor,
                title: str | None = None, automated: bool = False) -> Change:
        """Write the sub-agent's record (all four elements) into the role page and close
        the delegation, as one commit. Nothing is written when anything is missing. From
        an agent other than the orchestrator, when the record reads like an instruction,
        or when a hook or provider harvests it (``automated``) and ``review.auto_harvest``
        is off, the record is filed in the review inbox instead."""
        missing = [k for k in FIELDS if not str(fields.get(k) or "").strip()]
        if missing:
            names = ", ".join(f"{k} ({SUBAGENT_FIELDS[k][0]})" for k in missing)
            raise BadInput(f"the sub-agent record lacks: {names}", field=missing[0],
                           hint="give all four: task, conclusion, output, decision (or them as JSON/YAML on stdin)")
        if not re.fullmatch(r"d-\d{8}-[0-9a-f]{6}", delegation or ""):
            raise BadInput(f"{delegation!r} is not a delegation id", field="delegation",
                           hint="ids look like d-20260508-3fa2c1")
        scrub = self.vault.writer.scrubber()
        clean = {k: scrub.text(k, " ".join(str(fields[k]).split())) for k in FIELDS}
        title = scrub.text("title", " ".join(title.split())) if title else None
        with self.vault.writer.locked():
            name = pages.resolve(self.root, role)
            plan_harvest(self.root, name, delegation, clean, actor, title)  # refuse bad input before proposing
            flags = guard.instruction_flags("\n".join([*clean.values(), title or ""]))
            unattended = automated and not self.vault.config.auto_harvest  # no one read the report yet
            propose = not actor.is_human and (actor.name != self.vault.config.orchestrator or flags or unattended)
            if not propose:
                writes, link, entry = plan_harvest(self.root, name, delegation, clean, actor, title)
                rel_p = next(iter(writes))
                message = f"harvest: {delegation} into {rel_p} ^{entry.id}"
                sha = self.vault.writer.apply(actor, message, writes)
                return Change("harvest", list(writes), sha, message,
                              {"role": name, "delegation": delegation, "entry": entry.to_dict(rel_p), "link": link},
                              warnings=scrub.warnings())
        text = "\n".join(f"- {SUBAGENT_FIELDS[k][1]}: {clean[k]}" for k in FIELDS)
        return self.vault.inbox.file(actor, [{"op": "harvest", "role": name, "delegation": delegation,
                                              "fields": clean, "title": title, "text": text}], scrub=scrub)

    # -- audit -------------------------------------------------------------------------------
    def audit(self, max_age_hours: float | None = None) -> dict:
        """What needs a human: old pending delegations, inbox items waiting, commits to role
        pages by agents other than the orchestrator, notes without provenance."""
        max_age = self.vault.config.delegation_max_age_hours if max_age_hours is None else max_age_hours
        now = _now()
        stale = []
        for d in self.delegations(status="pending"):
            try:
                created = _dt.datetime.fromisoformat(str(d["created"]).replace("Z", "+00:00"))
            except ValueError:
                created = now
            age = (now - created).total_seconds() / 3600
            if age >= max_age:
                stale.append({**d, "age_hours": round(age, 1)})
        inbox = [{k: d.get(k) for k in ("id", "path", "op", "proposed_by", "proposed", "summary", "flags",
                                        "quarantined", "changed_since_filed")}
                 for d in self.vault.inbox.listing()]  # as vaultmem filed them, a change since marked
        orchestrator = self.vault.config.orchestrator
        foreign = [c for c in gitstore.log(self.root, layout.AGENTS_DIR, max_count=2000)
                   if c["email"].endswith(AGENT_EMAIL) and c["author"] != orchestrator]
        unsourced = []
        folder = self.root / layout.MEMORIES_DIR
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            rel = layout.note_path(path.stem)
            try:
                doc = parse_document(files.read_vault_text(self.root, rel), rel, require_frontmatter=False, fast=True)
            except VaultmemError as exc:  # broken YAML (with its line), a folder, not UTF-8: said as such
                unsourced.append({"path": rel, "missing": [], "problem": exc.message, "line": exc.line})
                continue
            meta = doc.meta if isinstance(doc.meta, dict) else {}
            missing = [k for k in ("author", "author_kind", "source", "created") if not meta.get(k)]
            if missing:
                unsourced.append({"path": rel, "missing": missing})
        return {"stale_delegations": stale, "inbox": inbox, "foreign_page_commits": foreign,
                "notes_without_provenance": unsourced, "max_age_hours": max_age,
                "clean": not (stale or inbox or foreign or unsourced)}

    # -- management modes (seed 000) -------------------------------------------------------------
    def ask(self, role: str, question: str, limit: int = 5, asker: Actor | None = None):
        """Quick Q&A about a role's memory: what its brief draws on — its own entries and
        notes, and global and shared memory (never another role's page) — most relevant to
        the question, its own first when they match as well. Returns the search's hits. The
        question is plain words (no query syntax: its quotes and dashes are text). When
        none of them is relevant and ``asker`` may read the journal (a human, the default,
        or the orchestrator), the journal's relevant turns follow them, and the hits say
        the journal was searched (``journal_searched``)."""
        name = pages.resolve(self.root, role)
        hits = self.vault.search(question, agent=name, kinds=layout.BRIEF_KINDS, limit=limit, syntax=False)
        reader = None if asker is None or asker.is_human else asker.name
        hits.journal_searched = False
        if not any(h.relevant for h in hits) and reader in (None, self.vault.config.orchestrator):
            turns = self.vault.search(question, journal=True, reader=reader, limit=limit, syntax=False)
            hits.extend(h for h in turns if h.relevant)
            hits.journal_searched = True
        return hits

    def todo(self, role: str) -> dict:
        """Open items recorded for a role — entries that say work is still to do (see
        :data:`OPEN_ITEM`: an unchecked box, TODO, 待办, 未解决, 遗留问题, or a label such as
        "后续：" or "Follow-up:") — and its delegations not yet harvested."""
        name = pages.resolve(self.root, role)
        info = self.vault.pages.read(name)
        items = [e.to_dict(info.path) for e in info.entries if OPEN_ITEM.search(e.text)]
        return {"role": name, "items": items, "pending_delegations": self.delegations(role=name, status="pending")}

    def history(self, role: str, diffs: bool = False, max_count: int = 50) -> list[dict]:
        """The page's git history: who changed what, when (with ``diffs``: the changes)."""
        limits.check("n", max_count)
        name = pages.resolve(self.root, role)
        rel = pages.page_rel(self.root, name)
        commits = gitstore.log(self.root, rel, max_count=max_count)
        if diffs:
            for c in commits:
                c["diff"] = gitstore.show(self.root, c["commit"], rel)
        return commits


def delegations(root, role: str | None = None, status: str | None = None) -> list[dict]:
    """The delegations recorded (of ``role``, with ``status``), oldest id first."""
    folder = root / DELEGATIONS_DIR
    out = []
    for path in sorted(folder.glob("d-*.md")) if folder.is_dir() else []:
        rel = f"{DELEGATIONS_DIR}/{path.name}"
        try:
            doc = parse_document(files.read_vault_text(root, rel), rel, require_frontmatter=True, fast=True)
        except VaultmemError:
            continue
        meta = plain(doc.meta)
        item = {"id": meta.get("id") or path.stem, "role": meta.get("role"), "status": meta.get("status"),
                "delegated_by": meta.get("delegated_by"), "created": meta.get("created"),
                "task": "".join(doc.lines[doc.body_start:]).strip(), "path": rel,
                "record": meta.get("record")}
        if (role is None or item["role"] == role) and (status is None or item["status"] == status):
            out.append(item)
    return out


def plan_harvest(root, name: str, delegation: str, clean: dict[str, str], actor: Actor,
                 title: str | None) -> tuple[dict[str, str | None], str, Any]:
    """The role page with the sub-agent's record added and the delegation closed
    (nothing written): (writes, link, entry). Call with the lock held."""
    rel_d = layout.delegation_path(delegation)
    path_d = root / rel_d
    if not path_d.exists():
        pending = [d["id"] for d in delegations(root, name, "pending")]
        waiting = (f"pending under {name}: {', '.join(pending)}" if pending else f"{name} has no pending delegation")
        raise NotFound(f"no delegation {delegation} ({waiting})",
                       hint=f"the role's pending delegations, fresh ones too: vaultmem todo {name}")
    text_d = files.read_vault_text(root, rel_d)
    meta = plain(parse_document(text_d, rel_d).meta)
    if meta.get("role") != name:
        raise BadInput(f"delegation {delegation} was made under {meta.get('role')!r}, not {name!r}")
    if meta.get("status") != "pending":
        raise BadInput(f"delegation {delegation} is already {meta.get('status')}",
                       hint=f"its record is {meta.get('record')}" if meta.get("record") else None)
    page = pages.load(root, name)
    heading = " ".join((title or clean["task"]).split())[:60]
    new_page, entry = add_subagent_record(page, _now().astimezone().date(), heading, clean)
    rel_p = page.path
    link = f"[[{rel_p.removesuffix('.md')}#^{entry.id}]]"
    new_d = set_note_fields(text_d, rel_d, status="harvested", harvested=yaml_timestamp(_now()),
                            harvested_by=actor.name, record=link)
    return {rel_p: new_page, rel_d: new_d}, link, entry
