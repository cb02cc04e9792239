"""An inbox item as a file: its fields, how it is parsed and rendered, what a retain file
holds, and what changed in an item since it was filed."""

from __future__ import annotations

import datetime as _dt
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from .. import guard, layout, limits
from ..errors import BadInput, ParseError
from ..parse.document import parse_document, plain, yaml_timestamp
from ..parse.note import render_note


INBOX_DIR = layout.INBOX_DIR
ARCHIVE_DIR = layout.ARCHIVED_INBOX_DIR
NOTE_OPS = ("add", "replace", "remove")
PAGE_OPS = ("page-add", "harvest")
RETAIN_KEYS = {"op", "type", "text", "author", "author_kind", "source", "said", "when", "name", "description",
               "aliases", "tags", "key", "importance", "confidence", "scope", "agent", "project", "target"}
UNLIMITED = 1 << 62  # a size no text reaches: what is only archived (a rejection) has no limit
EDITABLE = ("text", "type", "name", "description", "aliases", "tags", "key", "importance")
FLAT = {"note": "note_", "fields": "field_"}  # nested mappings, stored as prefixed flat keys
# who filed an item, when, and who said what it holds: vaultmem never changes these after
# filing (a review edit keeps them), so they are read from the filing commit
PROVENANCE = ("proposed_by", "proposed", "session", "quarantined")
NOTE_PROVENANCE = ("author", "author_kind", "source", "said", "confidence")
NOT_FILED = "no commit by vaultmem filed it"
# a repeat: the same text once case, width and punctuation are set aside, or as many of
# the same index terms as the brief's near-duplicates share (vaultmem.brief)
SAME_TERMS = 0.8
SCOPE_KEYS = ("scope", "agent", "project")  # a note held or waiting for the same readers
MAX_SESSIONS = 50  # the sessions a joined item names (the newest); ``seen`` counts them all
JOIN_KEYS = ("seen", "sessions", "seen_by", "first_seen", "last_seen")


def nested_fields(meta: dict) -> dict:
    """An item's frontmatter with its flat ``note_…`` / ``field_…`` keys gathered back into
    the ``note`` / ``fields`` mappings (an item in the previous format has them nested)."""
    for key, prefix in FLAT.items():
        if isinstance(meta.get(key), dict):
            continue
        flat = {k[len(prefix):]: meta.pop(k) for k in [k for k in meta if str(k).startswith(prefix)]}
        if flat:
            meta[key] = flat
    return meta


ITEM_DATES = ("proposed", "reviewed", "note_created", "note_confirmed", "first_seen", "last_seen")  # written as yaml_timestamp writes them


def render_item(meta: dict, text: str) -> str:
    """An item's file: the ``note`` and ``fields`` mappings flattened to prefixed keys; its
    dates in the one form (an item read back holds them as text)."""
    flat = flat_meta(meta)
    return render_note({k: yaml_timestamp(v) if k in ITEM_DATES and v is not None else v for k, v in flat.items()},
                       text)


def now_stamp() -> str:
    return yaml_timestamp(_dt.datetime.now(_dt.timezone.utc))


def text_flags(text: str, note: dict | None, fields: dict | None, title: str | None = None) -> list[str]:
    """Instruction-like phrases anywhere in what an item would write."""
    note = note if isinstance(note, dict) else {}
    fields = fields if isinstance(fields, dict) else {}
    return guard.instruction_flags("\n".join(
        [text or "", str(note.get("name") or ""), str(note.get("description") or ""), title or "",
         *(str(a) for a in note.get("aliases") or []), *(str(v) for v in (fields or {}).values())]))


@dataclass
class Item:
    """One inbox item as stored."""

    id: str
    path: str
    op: str
    status: str
    meta: dict[str, Any]
    text: str
    flags: list[str] = field(default_factory=list)

    @property
    def quarantined(self) -> bool:
        return bool(self.meta.get("quarantined"))

    @property
    def proposed_by(self) -> str:
        return str(self.meta.get("proposed_by") or "")

    def summary(self) -> str:
        note = self.meta.get("note") or {}
        if self.op == "unreadable":
            return f"cannot be read: {self.meta.get('problem')}"
        if self.op in ("add", "replace"):
            what = f"{note.get('type')}: {note.get('name')}"
        elif self.op == "remove":
            what = f"remove {self.meta.get('target')}"
        else:
            what = f"{self.meta.get('role')}: {' '.join(self.text.split())[:60]}"
        return what

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "op": self.op, "status": self.status,
                "proposed_by": self.proposed_by, "proposed": self.meta.get("proposed"),
                "session": self.meta.get("session"), "quarantined": self.quarantined, "flags": self.flags,
                "summary": self.summary(), "text": self.text,
                **{k: self.meta[k] for k in ("note", "target", "role", "section", "project", "delegation",
                                             "fields", "reviewed_by", "reviewed", "reason", "result",
                                             "changed_after_filing", "filed_in", "changed_since_filed",
                                             *JOIN_KEYS)
                   if self.meta.get(k) is not None}}


@dataclass
class Filed:
    """Whether a waiting item is as vaultmem filed it: ``changed`` says why not (None if it
    is); ``commit`` is the commit that filed it (None if none did). For an item changed
    since, ``provenance`` is its provenance as filed (flat keys: ``proposed_by``,
    ``quarantined``, ``flags``, ``note_author_kind`` …; None when no commit filed it),
    ``fields`` names the fields that differ from what vaultmem wrote, and ``now`` holds
    the provenance fields among them as the file has them now."""

    changed: str | None
    commit: str | None
    provenance: dict[str, Any] | None = None
    fields: list[str] = field(default_factory=list)
    now: dict[str, Any] = field(default_factory=dict)


def parse_item(source: str, rel: str, fast: bool = False) -> Item:
    """An item from the text of its file (``rel`` names it in errors; ``fast``: read
    only, with the index's YAML reader)."""
    doc = parse_document(source, rel, require_frontmatter=True, fast=fast)
    meta = nested_fields(plain(doc.meta)) if isinstance(doc.meta, dict) else {}
    if meta.get("type") != "inbox-item" or meta.get("op") not in NOTE_OPS + PAGE_OPS:
        raise ParseError("this is not an inbox item (type: inbox-item and an op are needed)", path=rel, line=1)
    text = "".join(doc.lines[doc.body_start:]).replace("\r\n", "\n").strip("\n")
    return Item(str(meta.get("id") or rel.rsplit("/", 1)[-1][:-3]), rel, meta["op"], str(meta.get("status")),
                meta, text, [str(f) for f in meta.get("flags") or []])


def changed_fields(state: Filed) -> dict[str, Any]:
    """What a decided item records of a change made after it was filed (nothing if none)."""
    if not state.changed:
        return {}
    return {"changed_after_filing": state.changed, "filed_in": state.commit,
            **({"changed_since_filed": state.fields} if state.provenance is not None else {})}


def flat_meta(meta: dict) -> dict[str, Any]:
    """An item's frontmatter with its ``note`` / ``fields`` mappings as prefixed keys."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if key in FLAT and isinstance(value, dict):
            out.update({f"{FLAT[key]}{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def item_differences(now: Item, filed: Item, last: Item) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """How an item differs from what vaultmem wrote: (the fields that differ, its
    provenance as filed, the changed provenance fields as they are now). ``filed`` is the
    item as its filing commit holds it, ``last`` as the newest vaultmem commit holds it (a
    review edit may have changed its text and so its flags, never who proposed or said it)."""
    flat_now, flat_filed, flat_last = flat_meta(now.meta), flat_meta(filed.meta), flat_meta(last.meta)
    keys = [*PROVENANCE, *(f"{FLAT['note']}{k}" for k in NOTE_PROVENANCE if filed.op in ("add", "replace"))]
    provenance = {k: flat_filed.get(k) for k in keys}
    # the flags as vaultmem wrote them, and any the text as it is now would raise
    flags = [*last.flags, *(f for f in text_flags(now.text, now.meta.get("note"), now.meta.get("fields"),
                                              now.meta.get("title")) if f not in last.flags)]
    provenance["flags"] = flags
    changed = [k for k in keys if flat_now.get(k) != provenance[k]]
    changed += ["flags"] if set(now.flags) != set(flags) else []
    changed += [k for k in sorted(set(flat_now) | set(flat_last)) if k not in provenance
                and flat_now.get(k) != flat_last.get(k)]
    changed += ["text"] if now.text != last.text else []
    shown_now = {k: (now.flags if k == "flags" else flat_now.get(k)) for k in changed if k in provenance}
    return sorted(changed), provenance, shown_now


def instant_of(when: Any) -> _dt.datetime | None:
    """An item's time (``proposed``) as an aware datetime, None if it is no time."""
    try:
        at = _dt.datetime.fromisoformat(str(when).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=_dt.timezone.utc)


def day_before(when: Any) -> str | None:
    """An ISO time a day before ``when`` (an item's ``proposed``), None if it is no time."""
    try:
        at = _dt.datetime.fromisoformat(str(when).replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=_dt.timezone.utc)
    return (at - _dt.timedelta(days=1)).astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def position_of(meta: dict) -> int:
    value = str(meta.get("position") or 0)
    return int(value) if value.isdigit() else 0


def opt_text(raw: dict, key: str) -> str | None:
    value = raw.get(key)
    return None if value is None or value == "" else str(value)


def new_item_id(taken: set[str]) -> str:
    while True:
        iid = f"i-{_dt.datetime.now(_dt.timezone.utc):%Y%m%d}-{secrets.token_hex(3)}"
        if iid not in taken:
            taken.add(iid)
            return iid


def load_items(text: str, source_name: str) -> tuple[list, list[int | None]]:
    """The items of a retain file and the line each starts on (None for JSON)."""
    stripped = text.lstrip("\ufeff").strip()
    if not stripped:
        raise BadInput("there is nothing to retain: the input is empty", path=source_name)
    if stripped[0] in "[{":
        try:
            data = limits.load_json(stripped)  # a lone surrogate (half an emoji) becomes U+FFFD
            lines: list | None = None
        except limits.TooDeep as exc:
            raise BadInput(f"the input is {exc}", path=source_name) from None
        except json.JSONDecodeError:
            data, lines = None, []
    else:
        data, lines = None, []
    if lines is not None:
        from ..parse.document import load_yaml

        try:
            data = load_yaml(stripped, source_name, first_line=1, what="YAML of the retained items",
                             hint="give a list of items: '- type: fact' / '  text: …'")
        except ParseError as exc:
            raise BadInput(exc.message, path=exc.path, line=exc.line, hint=exc.hint) from None
    if isinstance(data, dict) and "items" in data:
        data = data["items"]
    if not isinstance(data, list):
        raise BadInput("the input must be a list of items (or a mapping with items:)", path=source_name, line=1,
                       hint="- type: fact\n    text: the backend listens on 8080\n    author: alice\n    author_kind: user")
    if lines is None:
        starts = [None] * len(data)
    else:
        starts = []
        for n in range(len(data)):
            try:
                starts.append(data.lc.item(n)[0] + 1)
            except (AttributeError, KeyError, TypeError):
                starts.append(None)
    return [plain(d) if isinstance(d, dict) else d for d in data], starts
