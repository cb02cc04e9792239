"""The review gate itself: filing proposals, retaining a session's facts, listing, and
deciding — approve, reject, edit — in one commit by the decider."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from .. import files, gitstore, layout, lifecycle, notes, pages
from ..errors import BadInput, NotFound, ParseError, PermissionRefused, VaultmemError
from ..models import Actor, Change, NoteFields
from ..transaction import Scrubber
from .items import (ARCHIVE_DIR, EDITABLE, FLAT, Filed, INBOX_DIR, Item, JOIN_KEYS, NOTE_OPS, NOT_FILED, PAGE_OPS,
                    RETAIN_KEYS, UNLIMITED, changed_fields, day_before, instant_of, item_differences, load_items,
                    new_item_id, now_stamp, opt_text, parse_item, position_of, render_item, text_flags)
from .sameness import Known, joined_item


class Inbox:
    def __init__(self, vault) -> None:
        self.vault = vault
        self.root = vault.root
        self.config = vault.config

    # -- filing ------------------------------------------------------------------------------
    def file(self, actor: Actor, proposals: list[dict], session: str | None = None,
             what: str | None = None, scrub: Scrubber | None = None) -> Change:
        """File proposals (dicts: op, text and the op's fields; notes already prepared
        with :func:`vaultmem.notes.prepare`, their input scrubbed by ``scrub``) as inbox
        items, in one commit by ``actor``. A trusted agent's user-stated ADD is approved
        in the same commit.

        A fact is filed once: an ADD that memory already holds (an active note of the same
        or near-equal text, for the same readers) is not filed (``held``); one equal or
        near-equal to an ADD already waiting joins that item (``joined``: its ``seen``
        count, ``sessions``, ``first_seen`` / ``last_seen`` updated in this commit) instead
        of filing another. No commit when nothing is left to write."""
        scrub = scrub or self.vault.writer.scrubber()
        session = scrub.text("session", session) if session else None
        with self.vault.writer.locked():
            taken = set(self._ids())
            writes: dict[str, str | None] = {}
            out, joined, held = [], [], []
            known = Known(self)
            for position, proposal in enumerate(proposals, 1):
                iid = new_item_id(taken)
                meta = {"type": "inbox-item", "id": iid, "op": proposal["op"], "status": "pending",
                        "proposed_by": actor.name, "proposed": now_stamp(), "session": session,
                        "position": position if len(proposals) > 1 else None}
                for k in ("target", "role", "section", "project", "delegation", "title", "note", "fields"):
                    if proposal.get(k) is not None:
                        meta[k] = proposal[k]
                note = proposal.get("note") or {}
                meta["quarantined"] = note.get("author_kind") == "third_party"
                flags = text_flags(proposal.get("text") or "", note, proposal.get("fields"), proposal.get("title"))
                meta["flags"] = flags
                item = Item(iid, f"{INBOX_DIR}/{iid}.md", proposal["op"], "pending", meta,
                            proposal.get("text") or "", flags)
                if item.op == "add" and (holder := known.held(item)):
                    held.append({"text": item.text, "note": holder, "position": position})
                    continue
                auto = (proposal["op"] == "add" and actor.name in self.config.trusted_agents
                        and note.get("author_kind") == "user" and not flags and not item.quarantined
                        and (not note.get("agent") or actor.name == self.config.orchestrator))
                if auto:
                    done, result, _ = self._perform(item, actor, writes)
                    writes.update(done)
                    archived = {**meta, "status": "approved", "reviewed_by": "auto (review.trusted_agents)",
                                "reviewed": now_stamp(), "result": result}
                    writes[f"{ARCHIVE_DIR}/{iid}.md"] = render_item(archived, item.text)
                    out.append({**item.to_dict(), "status": "approved", "result": result,
                                "path": f"{ARCHIVE_DIR}/{iid}.md"})
                    known.noted(item, result)
                elif item.op == "add" and (into := known.waiting_twin(item)) is not None:
                    merged = joined_item(into, session, actor.name)
                    writes[merged.path] = render_item(merged.meta, merged.text)
                    known.replace(into, merged)
                    joined.append({"id": merged.id, "seen": merged.meta["seen"], "session": session,
                                   "position": position})
                else:
                    writes[item.path] = render_item(meta, item.text)
                    out.append(item.to_dict())
                    known.filing(item)
            pending = [o for o in out if o["status"] == "pending"]
            approved = [o for o in out if o["status"] == "approved"]
            for j in joined:  # the item as written holds the count
                for o in out:
                    if o["id"] == j["id"]:
                        o.update({k: v for k, v in known.item(j["id"]).to_dict().items() if k in JOIN_KEYS})
            details = {"items": out, "pending": len(pending), "approved": len(approved),
                       "flagged": sum(1 for o in out if o["flags"]),
                       "quarantined": sum(1 for o in out if o["quarantined"]),
                       "joined": joined, "held": held}
            if not writes:
                message = (f"nothing filed: memory already holds {'it' if len(held) == 1 else 'all ' + str(len(held))}"
                           if held else "nothing filed")
                return Change("propose", [], None, message, details, warnings=scrub.warnings())
            what = what or (f"{len(out)} items" if len(out) != 1 else f"{out[0]['op']} {out[0]['id']}")
            message = f"inbox: {actor.name} proposes {what}" + (f" (session {session})" if session else "")
            if approved:
                message += f"; {len(approved)} approved at once (trusted agent, user-stated)"
            body = [f"- {o['id']}: filed" for o in pending]
            body += [f"- {j['id']}: seen again (seen {j['seen']} times)" for j in joined]
            body += [f"- not filed, memory already holds it: {h['note']}" for h in held]
            if joined or held:
                message += "\n\n" + "\n".join(body)
            sha = self.vault.writer.apply(actor, message, writes)
        return Change("propose", list(writes), sha, message, details, warnings=scrub.warnings())

    def retain(self, actor: Actor, text: str, source_name: str, session: str | None = None) -> Change:
        """File the facts an agent curated at the end of a session: a YAML/JSON list of
        {type, text, author, author_kind, source, …} (or a mapping with ``items:``). Every
        item is checked before any is filed; a bad one is named with its line."""
        items, lines = load_items(text, source_name)
        scrub = self.vault.writer.scrubber()
        proposals = []
        for n, (raw, line) in enumerate(zip(items, lines), 1):
            try:
                proposals.append(self._retained(raw, actor, session, scrub))
            except (BadInput, NotFound) as exc:  # the item's own field names what was wrong
                named = f"{exc.field}: " if exc.field else ""  # the item's field, not an option
                raise BadInput(f"item {n}: {named}{exc.message}", path=source_name, line=line,
                               hint=exc.hint) from None
        if not proposals:
            raise BadInput("there is nothing to retain: the list is empty", path=source_name)
        what = f"{len(proposals)} retained item{'' if len(proposals) == 1 else 's'}"
        return self.file(actor, proposals, session=session, what=what, scrub=scrub)

    def _retained(self, raw: Any, actor: Actor, session: str | None, scrub: Scrubber) -> dict:
        if not isinstance(raw, dict):
            raise BadInput("an item must be a mapping (type, text, author, author_kind, source …)")
        unknown = sorted(set(map(str, raw)) - RETAIN_KEYS)
        if unknown:
            raise BadInput(f"unknown field(s) {', '.join(unknown)}", hint=f"fields: {', '.join(sorted(RETAIN_KEYS))}")
        op = str(raw.get("op") or "add").lower()
        if op not in NOTE_OPS:
            raise BadInput(f"{op!r} is not add, replace or remove", field="op")
        text = raw.get("text")
        if not isinstance(text, (str, int, float)) or not str(text).strip():
            if op != "remove":
                raise BadInput("is missing", field="text", hint="text: the fact, in a sentence")
            text = ""
        target = None
        if op in ("replace", "remove"):
            if not raw.get("target"):
                raise BadInput(f"is needed for op {op}: the slug of the note it {op}s", field="target")
            try:
                target = layout.note_ref(notes.resolve(self.root, str(raw["target"])))
            except NotFound as exc:  # the item's own field names the note
                raise NotFound(exc.message, hint=exc.hint, field="target") from None
        if op == "remove":
            return {"op": "remove", "target": target, "text": scrub.text("text", str(text))}
        if not raw.get("type"):
            raise BadInput("is missing", field="type",
                           hint=f"type: one of {', '.join(self.config.note_types)}")

        def strings(key: str) -> list[str]:
            value = raw.get(key) or []
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list):
                raise BadInput("must be a list", field=key)
            return [str(v) for v in value]

        said = raw.get("said", raw.get("when"))
        given = {k: opt_text(raw, k) for k in ("name", "description", "key", "scope", "agent", "project", "author",
                                           "author_kind", "source")}
        fields = NoteFields(
            type=str(raw["type"]), importance=raw.get("importance"), confidence=raw.get("confidence"),
            tags=strings("tags"), aliases=strings("aliases"), said=str(said) if said is not None else None,
            **{**given, "author_kind": given["author_kind"] or "unknown",
               "source": given["source"] or (f"session {session}" if session else "retain")})
        meta, body = notes.prepare(str(text), actor, fields, self.config, scrub)
        return {"op": op, "note": meta, "text": body, "target": target}

    # -- reading -----------------------------------------------------------------------------
    def _ids(self) -> list[str]:
        return [p.stem for folder in (INBOX_DIR, ARCHIVE_DIR) if (self.root / folder).is_dir()
                for p in (self.root / folder).glob("i-*.md")]

    def _read(self, rel: str, fast: bool = False) -> Item:
        return parse_item(files.read_vault_text(self.root, rel), rel, fast)

    def items(self, status: str = "pending", fast: bool = False) -> list[Item]:
        """Items waiting (``pending``), decided (``approved``/``rejected``) or ``all``;
        a file that cannot be read is listed as a problem item, not skipped. ``fast``:
        to count or compare, not to write back (read with the index's YAML reader, about
        14 times faster)."""
        folders = {"pending": [INBOX_DIR], "approved": [ARCHIVE_DIR], "rejected": [ARCHIVE_DIR]}.get(
            status, [INBOX_DIR, ARCHIVE_DIR])
        out = []
        for folder in folders:
            path = self.root / folder
            for p in sorted(path.glob("*.md")) if path.is_dir() else []:
                rel = f"{folder}/{p.name}"
                try:
                    item = self._read(rel, fast)
                except VaultmemError as exc:
                    item = Item(p.stem, rel, "unreadable", "problem", {"problem": str(exc)}, "")
                if status in ("all", item.status) or (status == "pending" and folder == INBOX_DIR):
                    out.append(item)
        return sorted(out, key=lambda i: (str(i.meta.get("proposed") or ""), position_of(i.meta), i.id))

    def overdue(self, days: float | None = None) -> int:
        """How many items have waited longer than ``days`` (default ``review.nudge_days``)
        since they were filed (as ``vaultmem stats`` counts them: an item whose filing
        time cannot be read is not counted)."""
        days = self.config.nudge_days if days is None else days
        cut = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(days=days)
        return sum(1 for i in self.items(fast=True) if (at := instant_of(i.meta.get("proposed"))) is not None
                   and at < cut)

    @staticmethod
    def nudge_line(count: int, days: float) -> str | None:
        """What the orchestrator's session brief says of ``count`` items overdue."""
        if not count:
            return None
        return (f"{count} item{' has' if count == 1 else 's have'} waited over {days:g} day{'' if days == 1 else 's'}"
                " for review: vaultmem review")

    def get(self, iid: str) -> Item:
        iid = (iid or "").strip().removesuffix(".md").rsplit("/", 1)[-1]
        for folder in (INBOX_DIR, ARCHIVE_DIR):
            rel = f"{folder}/{iid}.md"
            if (self.root / rel).is_file():
                return self._read(rel)
        pending = [i.id for i in self.items()]
        raise NotFound(f"no inbox item {iid!r}",
                       hint=f"waiting: {', '.join(pending[:5])}" if pending else "the inbox is empty")

    def filed(self, item: Item, dirty: set[str] | None = None) -> Filed:
        """Whether a waiting item is exactly what vaultmem filed (or a vaultmem edit made
        of it since): its file as last committed, every commit that touched it vaultmem's
        filing, a ``review: edit`` or a later filing the same fact joined (``seen``), and
        its provenance as the filing commit holds it.
        ``dirty``: the paths known to differ from their last commit (None: ask git)."""
        commits = self._history(item)  # newest first
        first = commits[-1] if commits else None
        if first is None or not first[2].startswith(f"inbox: {first[1]} proposes "):
            return Filed(NOT_FILED, None)
        changed, vouched = None, first[0]  # vouched: the newest version vaultmem wrote
        for sha, author, subject, email in reversed(commits[:-1]):
            # a review edit by one who may decide the item, or a later filing by whoever
            # proposed the same fact again (a join)
            edit = subject == f"review: edit {item.id}" and self._may_have_edited(author, email, item)
            if not edit and not subject.startswith(f"inbox: {author} proposes "):
                changed = f"commit {sha[:12]} by {author} changed it: {subject}"
                break
            vouched = sha
        edited = item.path in dirty if dirty is not None else bool(gitstore.uncommitted(self.root, [item.path]))
        if changed is None and edited:
            changed = "the file differs from what vaultmem committed: it was edited outside vaultmem"
        if changed is None and vouched == first[0]:  # the file is what the filing commit holds
            return Filed(None, first[0]) if item.proposed_by == first[1] else Filed(NOT_FILED, None)
        filed = self._at(first[0], item.path)
        if filed is None or filed.proposed_by != first[1]:  # vaultmem files as the one who proposes
            return Filed(NOT_FILED, None)
        last = filed if vouched == first[0] else (self._at(vouched, item.path) or filed)
        fields, provenance, now = item_differences(item, filed, last)
        if fields and changed is None:  # a vaultmem edit never changes who filed it, nor its flags by hand
            changed = f"its provenance differs from what vaultmem filed ({', '.join(fields)})"
        return Filed(changed, first[0], provenance, fields, now) if changed else Filed(None, first[0])

    def _may_have_edited(self, author: str, email: str, item: Item) -> bool:
        """Whether a ``review: edit`` commit's author is one vaultmem lets edit ``item``:
        a human, or the orchestrator where it may decide (an agent never runs a review
        edit, so such a subject by another agent is a hand-made commit)."""
        if not email.endswith(lifecycle.AGENT_EMAIL):
            return True
        return author == self.config.orchestrator and (item.op in PAGE_OPS or self.config.orchestrator_approves)

    def _history(self, item: Item) -> list[tuple[str, str, str, str]]:
        """The commits that touched the item's file, newest first, back to its filing."""
        # vaultmem's filing creates the file (ids are new), so the walk may stop a day
        # before the item says it was filed; a later date (a hand edit) only hides the
        # filing commit, so then the whole history is walked
        since = day_before(item.meta.get("proposed"))
        commits = gitstore.path_history(self.root, item.path, since)
        if since and (not commits or not commits[-1][2].startswith(f"inbox: {commits[-1][1]} proposes ")):
            commits = gitstore.path_history(self.root, item.path)
        return commits

    def _at(self, commit: str, rel: str) -> Item | None:
        """The item as ``commit`` holds it, None if it holds no readable item there."""
        source = gitstore.text_at(self.root, commit, rel)
        try:
            return parse_item(source, rel) if source is not None else None
        except VaultmemError:
            return None

    def describe(self, item: Item, dirty: set[str] | None = None) -> dict[str, Any]:
        """:meth:`Item.to_dict`, and for a waiting item changed after it was filed, why
        (``changed_after_filing``), the commit that filed it (``filed_in``), the fields
        that differ from what vaultmem wrote (``changed_since_filed``; None when no commit
        filed it) and, in place of what the file now says, its provenance as filed
        (``proposed_by``, ``quarantined``, ``flags``, the note's ``author_kind`` …), the
        values now under ``as_changed``."""
        out = item.to_dict()
        if item.path.startswith(f"{INBOX_DIR}/") and item.op != "unreadable":
            state = self.filed(item, dirty)
            if state.changed:
                out.update(changed_after_filing=state.changed, filed_in=state.commit)
                shown = self._as_filed(item, state)
                out.update({k: v for k, v in shown.to_dict().items() if k in ("proposed_by", "proposed", "session",
                                                                              "quarantined", "flags", "note")})
                out.update(changed_since_filed=state.fields if state.provenance is not None else None,
                           as_changed=state.now)
        return out

    def listing(self, status: str = "pending") -> list[dict[str, Any]]:
        """:meth:`describe` of each of :meth:`items` (``review list``): what vaultmem filed,
        with what was changed since marked."""
        found = self.items(status)
        waiting = [i.path for i in found if i.path.startswith(f"{INBOX_DIR}/") and i.op != "unreadable"]
        dirty = set(gitstore.uncommitted(self.root, waiting)) if waiting else set()
        return [self.describe(i, dirty) for i in found]

    @staticmethod
    def _as_filed(item: Item, state: Filed) -> Item:
        """The item with its provenance as vaultmem filed it (what it says otherwise, as it
        is now). An item no commit filed has no provenance anyone vouches for: its note's
        author is of an unknown kind (third-party stays third-party)."""
        if not state.changed:
            return item
        meta = dict(item.meta)
        note = dict(meta["note"]) if isinstance(meta.get("note"), dict) else None
        if state.provenance is None:
            if note is not None and note.get("author_kind") != "third_party":
                note["author_kind"] = "unknown"
            flags = item.flags
        else:
            for key, value in state.provenance.items():
                if key.startswith(FLAT["note"]):
                    if note is not None:
                        note[key[len(FLAT["note"]):]] = value
                else:
                    meta[key] = value
            flags = list(meta.get("flags") or [])
        if note is not None:
            meta["note"] = note
        meta["flags"] = flags
        return Item(item.id, item.path, item.op, item.status, meta, item.text, flags)

    def _check_filed(self, actor: Actor, item: Item) -> Filed:
        """An agent decides only an item as vaultmem filed it; a human decides any."""
        state = self.filed(item)
        if state.changed and not actor.is_human:
            seen = f"; what was filed: git show {state.commit[:12]}:{item.path}" if state.commit else ""
            raise PermissionRefused(f"{item.path} was changed after it was filed; a human must review it "
                                    f"({state.changed})", path=item.path,
                                    hint=f"a human decides it: vaultmem review show {item.id}{seen}")
        return state

    def _pending(self, iid: str) -> Item:
        item = self.get(iid)
        if item.path.startswith(ARCHIVE_DIR):
            raise BadInput(f"item {item.id} was already {item.status} by {item.meta.get('reviewed_by')}",
                           path=item.path)
        return item

    # -- deciding ----------------------------------------------------------------------------
    def may_decide(self, actor: Actor, item: Item) -> None:
        if actor.is_human:
            return
        note = item.meta.get("note") if isinstance(item.meta.get("note"), dict) else {}
        # read from the text as well as the fields: a field is easier to rewrite than a fact
        flags = item.flags or text_flags(item.text, note, item.meta.get("fields"), item.meta.get("title"))
        if item.quarantined or note.get("author_kind") == "third_party":
            why = "it is third-party content (quarantined until a human promotes it)"
        elif flags:
            why = f"it reads like an instruction ({'; '.join(flags)})"
        elif actor.name == item.proposed_by:
            why = "an agent does not decide on its own proposal"
        elif actor.name == self.config.orchestrator and (item.op in PAGE_OPS or self.config.orchestrator_approves):
            return
        else:
            why = ("only a human or the orchestrator decides role-page proposals" if item.op in PAGE_OPS else
                   "only a human decides memory items (review.orchestrator_approves lets the orchestrator)")
        raise PermissionRefused(f"agent {actor.name!r} may not decide {item.id}: {why}",
                                hint="a human decides it: run 'vaultmem review' as yourself, not as an agent")

    def _edited(self, item: Item, edits: dict[str, Any], actor: Actor, scrub: Scrubber) -> Item:
        """The item with a reviewer's edits (checked and scrubbed like new input)."""
        edits = {k: v for k, v in edits.items() if v not in (None, [], ())}
        if not edits:
            return item
        unknown = set(edits) - set(EDITABLE)
        if unknown:
            raise BadInput(f"cannot edit {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
        meta = dict(item.meta)
        text = item.text
        if item.op in ("add", "replace"):
            note = dict(meta["note"])
            if "text" in edits:  # a new text gets a name and description of its own, unless given
                note = {**note, "name": None, "description": None}
            fields = NoteFields.of(note, **{k: v for k, v in edits.items() if k != "text"})
            note_meta, text = notes.prepare(str(edits.get("text", item.text)), actor, fields, self.config, scrub,
                                            name_given="name" in edits)
            meta["note"] = note_meta
        elif set(edits) - {"text"}:
            raise BadInput(f"a {item.op} item has only its text to edit", field=sorted(set(edits) - {"text"})[0])
        elif "text" in edits:
            if item.op == "harvest":
                raise BadInput("a sub-agent record is not edited here: reject it and harvest again", field="text")
            text = scrub.text("text", str(edits["text"]).strip())
            if not text and item.op != "remove":
                raise BadInput("the text is empty", field="text")
        meta["edited_by"] = actor.name
        meta["flags"] = text_flags(text, meta.get("note"), meta.get("fields"), meta.get("title"))
        return Item(item.id, item.path, item.op, item.status, meta, text, meta["flags"])

    def _clean(self, item: Item, scrub: Scrubber, rejecting: bool = False) -> Item:
        """The item with its text and fields scrubbed again: a waiting item is a file
        anyone can edit in Obsidian, so what approval writes is checked like new input.
        ``rejecting``: only archived, never memory — no size limit, so any item can be
        turned down."""
        meta = dict(item.meta)
        if isinstance(meta.get("note"), dict):
            note = dict(meta["note"])
            for key in ("name", "description", "source"):
                if note.get(key):
                    note[key] = scrub.text(key, str(note[key]))
            note["aliases"] = [scrub.text("alias", str(a)) for a in note.get("aliases") or []]
            for key in ("key", "project", "said", "author", "agent"):
                scrub.refuse(key, note.get(key))
            for tag in note.get("tags") or []:
                scrub.refuse("tag", tag)
            meta["note"] = note
        if isinstance(meta.get("fields"), dict):
            meta["fields"] = {k: scrub.text(k, str(x)) for k, x in meta["fields"].items()}
        if meta.get("title"):
            meta["title"] = scrub.text("title", str(meta["title"]))
        for key in ("target", "role", "project", "delegation"):
            scrub.refuse(key, meta.get(key))
        text = scrub.text("text", item.text, max_bytes=UNLIMITED if rejecting else None)
        return Item(item.id, item.path, item.op, item.status, meta, text, item.flags)

    def edit(self, iid: str, actor: Actor, **edits: Any) -> Change:
        """Change a waiting item (its text, type, name …) without deciding it."""
        scrub = self.vault.writer.scrubber()
        with self.vault.writer.locked():
            item = self._pending(iid)
            state = self._check_filed(actor, item)
            self.may_decide(actor, item)
            item = self._as_filed(item, state)  # a human's edit writes back what was filed
            new = self._edited(item, edits, actor, scrub)
            self.may_decide(actor, new)
            if new is item:
                raise BadInput("nothing to edit", hint=f"give one of: {', '.join(EDITABLE)}")
            message = f"review: edit {item.id}"
            sha = self.vault.writer.apply(actor, message, {item.path: render_item(new.meta, new.text)})
        return Change("review.edit", [item.path], sha, message, {"item": new.to_dict()}, warnings=scrub.warnings())

    def approve(self, iid: str, actor: Actor, **edits: Any) -> Change:
        """Perform the item's operation (with any edits) and archive it, as one commit."""
        scrub = self.vault.writer.scrubber()
        with self.vault.writer.locked():
            item = self._pending(iid)
            state = self._check_filed(actor, item)  # an agent stops here if it was changed
            self.may_decide(actor, item)
            item = self._as_filed(item, state)  # the provenance vaultmem filed, whatever the file says now
            item = self._clean(self._edited(item, edits, actor, scrub), scrub)
            self.may_decide(actor, item)  # an edit may have made it instruction-like
            writes, result, what = self._perform(item, actor, {})
            archived = {**item.meta, "status": "approved", "reviewed_by": actor.name, "reviewed": now_stamp(),
                        "result": result}
            changed = changed_fields(state)
            archived.update(changed)
            writes[item.path] = None
            writes[layout.archived_inbox_path(item.id)] = render_item(archived, item.text)
            knowingly = ", as changed after it was filed" if state.changed else ""
            message = f"review: approve {item.id} ({item.op} proposed by {item.proposed_by}{knowingly}) → {what}"
            sha = self.vault.writer.apply(actor, message, writes, rescrubbed=(item.path,))
        warnings = scrub.warnings() + ([f"{item.path} was changed after it was filed ({state.changed}): "
                                        "approved as it is now"] if state.changed else [])
        return Change("review.approve", list(writes), sha, message,
                      {"id": item.id, "op": item.op, "result": result,
                       "archived_to": layout.archived_inbox_path(item.id), **changed}, warnings=warnings)

    def reject(self, iid: str, actor: Actor, reason: str) -> Change:
        """Archive the item as rejected, with the reason; nothing else changes."""
        reason = " ".join((reason or "").split())
        if not reason:
            raise BadInput("a rejection needs its reason", field="reason")
        scrub = self.vault.writer.scrubber()
        reason = scrub.text("reason", reason)
        with self.vault.writer.locked():
            try:
                item = self._pending(iid)
            except ParseError as exc:
                return self._reject_unreadable(iid, actor, reason, exc, scrub)
            self.may_decide(actor, item)
            state = self.filed(item)
            item = self._clean(self._as_filed(item, state), scrub, rejecting=True)  # a file anyone can edit
            archived = {**item.meta, "status": "rejected", "reviewed_by": actor.name, "reviewed": now_stamp(),
                        "reason": reason, **changed_fields(state)}
            dst = layout.archived_inbox_path(item.id)
            message = f"review: reject {item.id} ({item.op} proposed by {item.proposed_by}): {reason}"
            sha = self.vault.writer.apply(actor, message, {item.path: None, dst: render_item(archived, item.text)},
                                          rescrubbed=(item.path,))
        return Change("review.reject", [item.path, dst], sha, message, {"id": item.id, "reason": reason,
                                                                        "archived_to": dst}, warnings=scrub.warnings())

    def selected(self, session: str | None = None, flagged: bool = False) -> list[Item]:
        """The waiting items of a group: filed in ``session`` (its filing session) and/or
        ``flagged`` as instruction-like (as filed, or by the text as it is now). Files that
        cannot be read as items are left out: a human rejects each by its name."""
        out = []
        for listed in self.items(fast=True):
            if listed.op == "unreadable" or (session is not None and listed.meta.get("session") != session):
                continue
            try:
                item = self.get(listed.id)  # read as it will be archived
            except VaultmemError:
                continue
            if flagged:
                shown = self._as_filed(item, self.filed(item))
                if not (shown.flags or item.flags or text_flags(item.text, item.meta.get("note"), item.meta.get("fields"),
                                                            item.meta.get("title"))):
                    continue
            out.append(item)
        return out

    def decide_group(self, actor: Actor, approve: bool, session: str | None = None, flagged: bool = False,
                     reason: str | None = None) -> Change:
        """Approve or reject every waiting item of a group (:meth:`selected`) in one commit
        by a human, whose message lists each item. Each is decided as :meth:`approve` /
        :meth:`reject` decide one; if one cannot be carried out, none is."""
        if not actor.is_human:
            raise PermissionRefused(f"agent {actor.name!r} may not decide a group of items: only a human does",
                                    hint="an agent decides one item at a time, where it may: vaultmem review approve ID")
        if session is None and not flagged:
            raise BadInput("a group needs --session or --flagged", field="session")
        verb = "approve" if approve else "reject"
        if not approve:
            reason = " ".join((reason or "").split())
            if not reason:
                raise BadInput("a rejection needs its reason", field="reason")
        scrub = self.vault.writer.scrubber()
        reason = scrub.text("reason", reason) if reason else None
        group = " and ".join([*([f"session {session}"] if session is not None else []),
                              *(["flagged"] if flagged else [])])
        with self.vault.writer.locked():
            items = self.selected(session, flagged)
            if not items:
                raise NotFound(f"no waiting item is in the group ({group})",
                               hint="see the groups: vaultmem review")
            writes: dict[str, str | None] = {}
            decided, lines, rescrubbed, left = [], [], [], []
            for item in items:
                state = self.filed(item)
                shown = self._as_filed(item, state)
                if approve and (shown.quarantined or shown.flags or item.flags or state.changed):
                    # what reads like an instruction, or was changed after it was filed, is
                    # approved one by one, read first — never swept in with its session
                    left.append(item.id)
                    continue
                if approve:
                    shown = self._clean(shown, scrub)
                    done, result, what = self._perform(shown, actor, writes)
                    writes.update(done)
                    archived = {**shown.meta, "status": "approved", "reviewed_by": actor.name, "reviewed": now_stamp(),
                                "result": result, **changed_fields(state)}
                    lines.append(f"- {item.id}: {item.op} proposed by {shown.proposed_by} → {what}")
                    entry = {"id": item.id, "op": item.op, "result": result}
                else:
                    shown = self._clean(shown, scrub, rejecting=True)
                    archived = {**shown.meta, "status": "rejected", "reviewed_by": actor.name, "reviewed": now_stamp(),
                                "reason": reason, **changed_fields(state)}
                    lines.append(f"- {item.id}: {item.op} proposed by {shown.proposed_by}")
                    entry = {"id": item.id, "op": item.op}
                knowingly = " (changed after it was filed: decided as it is now)" if state.changed else ""
                lines[-1] += knowingly
                writes[item.path] = None
                writes[layout.archived_inbox_path(item.id)] = render_item(archived, shown.text)
                rescrubbed.append(item.path)
                decided.append({**entry, "archived_to": layout.archived_inbox_path(item.id), **changed_fields(state)})
            n = len(decided)
            why_left = (f"{len(left)} item(s) of the group read like an instruction or were changed after they were "
                        f"filed; approve each after reading it: vaultmem review show ID ({', '.join(left)})")
            if not decided:
                raise PermissionRefused(f"nothing approved: {why_left}",
                                        hint="reject them as a group: vaultmem review reject --flagged --reason …")
            message = (f"review: {verb} {n} item{'' if n == 1 else 's'} ({group})" + (f": {reason}" if reason else "")
                       + "\n\n" + "\n".join(lines))
            sha = self.vault.writer.apply(actor, message, writes, rescrubbed=tuple(rescrubbed))
        return Change(f"review.{verb}", list(writes), sha, message,
                      {"decided": decided, "group": group, "left": left, **({"reason": reason} if reason else {})},
                      warnings=scrub.warnings() + ([why_left] if left else []))

    def _reject_unreadable(self, iid: str, actor: Actor, reason: str, problem: ParseError, scrub: Scrubber) -> Change:
        """A waiting file that is not a readable item (broken by hand): a human may still
        reject it; it moves to the archive as it is."""
        name = (iid or "").strip().removesuffix(".md").rsplit("/", 1)[-1]
        rel, dst = layout.inbox_path(name), layout.archived_inbox_path(name)
        if not (self.root / rel).is_file():
            raise problem
        if not actor.is_human:
            raise PermissionRefused(f"agent {actor.name!r} may not decide {name}: the file cannot be read as an item",
                                    hint="a human fixes or rejects it: run 'vaultmem review reject' as yourself, not as an agent")
        message = f"review: reject unreadable {rel}: {reason}"
        raw = scrub.text("text", files.read_vault_text(self.root, rel), max_bytes=UNLIMITED)
        sha = self.vault.writer.apply(actor, message, {rel: None, dst: raw}, rescrubbed=(rel,))
        return Change("review.reject", [rel, dst], sha, message, {"id": name, "reason": reason, "archived_to": dst},
                      warnings=scrub.warnings())

    def _perform(self, item: Item, actor: Actor, pending: dict[str, str | None]) -> tuple[dict, str, str]:
        try:
            return self._perform_op(item, actor, pending)
        except NotFound as exc:
            raise NotFound(f"{item.id} cannot be carried out: {exc.message}", path=item.path,
                           hint=f"what it refers to has gone; reject it: vaultmem review reject {item.id} --reason …"
                           ) from None

    def _perform_op(self, item: Item, actor: Actor, pending: dict[str, str | None]) -> tuple[dict, str, str]:
        """The writes that carry out an item: (writes, result link, what). ``pending``
        holds writes planned earlier in the same commit (MEMORY.md may be among them)."""
        root = self.root
        if item.op in ("add", "replace"):
            meta = {**item.meta["note"], "created": notes.now(), "confirmed": notes.now(),
                    "proposed_by": item.proposed_by, "approved_by": actor.name, "inbox": item.id}
            target = str(item.meta["target"]) if item.op == "replace" else None
            plan = notes.plan_add(root, meta, item.text, index_text=pending.get(layout.MEMORY_INDEX),
                                  supersede=target, actor=actor,
                                  taken=[p.rsplit("/", 1)[-1][:-3] for p in pending
                                         if p.startswith(f"{layout.MEMORIES_DIR}/")])
            also = plan.superseded[1:] if target else plan.superseded  # what its key replaces, beside the target
            return plan.writes, plan.path, ((f"replaces {target} with " if target else "") + plan.path
                                            + (f", supersedes {', '.join(also)} (same key)" if also else ""))
        if item.op == "remove":
            name = notes.resolve(root, str(item.meta.get("target")))
            writes = notes.plan_archive(root, name, actor, item.text or None)
            dst = next(iter(writes))
            return writes, dst, f"{layout.note_ref(name)} archived"
        if item.op == "page-add":
            writes, entry, what = pages.plan_entry(root, pages.resolve(root, str(item.meta["role"])), item.text,
                                                   str(item.meta.get("section") or "work"), item.meta.get("project"))
            rel = next(iter(writes))
            link = f"[[{rel.removesuffix('.md')}#^{entry.id}]]"
            return writes, link, f"{what} {link}"
        # harvest
        writes, link, _ = lifecycle.plan_harvest(root, pages.resolve(root, str(item.meta["role"])),
                                                 str(item.meta["delegation"]), dict(item.meta["fields"]), actor,
                                                 item.meta.get("title"))
        return writes, link, f"sub-agent record {link}"
