"""Memory notes: one fact per file in ``memories/``, each with its line in ``MEMORY.md``.

Plan functions here read the vault and return the writes a change needs (``{path: new
text or None}``) without writing anything; the facade (or the review gate) hands them to
:meth:`vaultmem.transaction.Writer.apply`. Call the plan functions with the write lock
held, so what they read is still true when the writes land.
"""

from __future__ import annotations

import datetime as _dt
import errno
import os
import re
import string
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from . import files, layout, limits
from .errors import BadInput, NameRefused, NotFound, VaultmemError
from .models import AUTHOR_KINDS, SCOPES, Actor, Change, NoteFields, NoteInfo
from .names import check_name, collision_key, slugify
from .parse import index_line, parse_note, render_note, set_note_fields, update_index
from .parse.document import parse_document, yaml_timestamp
from .transaction import Scrubber


def now():
    return yaml_timestamp(_dt.datetime.now(_dt.timezone.utc))


@dataclass
class NotePlan:
    """A new note, planned: its slug, its path and every write it takes."""

    slug: str
    path: str
    writes: dict[str, str | None]
    superseded: list[str] = field(default_factory=list)  # the notes it replaces ([[memories/…]])


# -- finding notes -----------------------------------------------------------------------------
def slugs(root: Path, folder: str = layout.MEMORIES_DIR) -> list[str]:
    """The notes of ``folder``, by slug. A file whose name is not UTF-8 is none of them: no
    change can name it (the index lists it as unread)."""
    try:
        names = os.listdir(root / folder)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []  # no folder, or one that may not be listed: none, as pathlib's glob finds none
    except OSError as exc:  # a failed listing is no empty folder: a free slug picked from it could be taken
        if exc.errno == errno.ELOOP:
            return []
        raise
    # a name's stem as pathlib gives it (".md" alone is its own stem)
    return sorted(n[:-3] if len(n) > 3 else n for n in names if n.endswith(".md") and not layout.undecodable(n))


_ASCII_CASE = str.maketrans(string.ascii_letters, string.ascii_uppercase + string.ascii_lowercase)


def holds_exactly(folder: Path, filename: str) -> bool:
    """Whether ``folder`` holds a file named exactly ``filename`` (an entry of the folder,
    by that spelling), answered with a few stats rather than a listing. On a file system
    that folds names (case, Unicode normalisation: macOS, Windows) a stat also finds the
    file under another spelling — the ASCII letters' case swapped (``x.MD`` for ``x.md``:
    one for one, where a full case swap may change a name's length, as ß to SS), or the
    name decomposed (NFD) — so there the listing decides, as before."""
    path = folder / filename
    try:
        if not path.is_file():
            return False
    except OSError:  # (not allowed to look: the listing and the read say what is wrong)
        return False
    for other in {filename.translate(_ASCII_CASE), unicodedata.normalize("NFD", filename)} - {filename}:
        try:
            if os.path.samefile(path, folder / other):  # the same file under another spelling: names fold
                return filename in os.listdir(folder)
        except OSError:
            continue
    return True


def resolve(root: Path, slug: str) -> str:
    """The existing note's slug (``memories/`` and ``.md`` may be given), or NotFound
    with the closest slugs as a hint (another spelling of the same name first)."""
    raw = (slug or "").strip().removeprefix(f"{layout.MEMORIES_DIR}/").removesuffix(".md")
    name = check_name(raw, "note slug")
    if holds_exactly(root / layout.MEMORIES_DIR, f"{name}.md"):
        return name  # a few stats: a vault of 50,000 notes is not listed to read one
    listed = slugs(root)
    if name in listed and not _dangling(root / layout.note_path(name)):
        return name  # a folder named like a note, a link that loops: reading it says what is wrong
    existing = [s for s in listed if s != name]
    close = [s for s in existing if collision_key(s) == collision_key(name)] or close_matches(name, existing)
    raise NotFound(f"no memory note {name!r} ({layout.note_path(name)})", field="slug",
                   hint=f"did you mean {', '.join(close)}?" if close else "list notes in MEMORY.md")


def _dangling(path: Path) -> bool:
    """A link to nothing (or through a file, as if it were a folder): no note at all."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def read(root: Path, slug: str) -> NoteInfo:
    rel = layout.note_path(resolve(root, slug))
    return parse_note(files.read_vault_text(root, rel), rel)


_KEY_LINE = re.compile(rb"^key:[ \t]*(.+?)[ \t]*$", re.M)


def same_key(root: Path, meta: dict) -> list[str]:
    """The active notes in ``memories/`` that hold the fact ``meta`` states: the same
    ``key`` in the same scope (agent and project alike) — what a new note with that key
    supersedes. Each file is read as bytes and parsed only when its frontmatter names the
    key: a remember in a vault of 10,000 notes reads them in tens of milliseconds
    (benchmarks/bench_forgetting.py). A note that cannot be parsed is left alone."""
    key = meta.get("key")
    folder = root / layout.MEMORIES_DIR
    if not key or not folder.is_dir():
        return []
    want = (meta.get("scope") or "global", meta.get("agent"), meta.get("project"))
    wanted = key.encode("utf-8")
    found = []
    for name in sorted(_frontmatter_names(folder, _KEY_LINE, lambda m: m.group(1).strip(b"'\"") == wanted)):
        rel = f"{layout.MEMORIES_DIR}/{name}"
        try:
            note = parse_note(files.read_vault_text(root, rel), rel)
        except VaultmemError:
            continue
        got = note.meta
        if str(got.get("key") or "") != key or str(got.get("status") or "active") != "active":
            continue
        scope = (str(got.get("scope") or "global"), got.get("agent"), got.get("project"))
        if scope == want:
            found.append(name.removesuffix(".md"))
    return found


def _frontmatter_names(folder: Path, pattern: re.Pattern, holds) -> list[str]:
    """The ``.md`` files in ``folder`` whose frontmatter has a line ``pattern`` matches
    and ``holds`` accepts: each file's head read with one system call (the frontmatter
    is whole in its first 4 KB, or it is read on to its closing line)."""
    out = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.endswith(".md"):
                continue
            try:
                fd = os.open(entry.path, os.O_RDONLY)
            except OSError:
                continue
            try:
                head = os.read(fd, 4096)
                while head.startswith(b"---") and b"\n---" not in head[3:] and (more := os.read(fd, 65536)):
                    head += more
            except OSError:
                continue
            finally:
                os.close(fd)
            end = head.find(b"\n---", 3) if head.startswith(b"---") else -1
            m = pattern.search(head, 0, end) if end > 0 else None
            if m and holds(m):
                out.append(entry.name)
    return out


def free_slug(base: str, taken: list[str]) -> str:
    """``base`` (made a safe name), or ``base-2``, ``base-3`` … — the first not taken."""
    try:
        base = check_name(base, "note name")
    except BadInput:
        base = f"note-{base}"[:60].strip("-.") or "note"
        base = check_name(base, "note name")
    keys = {collision_key(t) for t in taken}
    slug, n = base, 2
    while collision_key(slug) in keys:
        slug, n = f"{base}-{n}", n + 1
    return slug


# -- checking a new fact -----------------------------------------------------------------------
def prepare(text: str, actor: Actor, note: NoteFields, config, scrub: Scrubber,
            name_given: bool = True) -> tuple[dict, str]:
    """Check a fact and its provenance and scrub secrets from it: (frontmatter, body),
    nothing written. Raises BadInput naming the first bad field."""
    limits.check_unicode("text", text or "")
    body = scrub.text("text", (text or "").strip())
    if not body:
        raise BadInput("the fact to remember is empty", field="text", hint="give the fact as TEXT")
    if note.type not in config.note_types:
        raise BadInput(f"{note.type!r} is not a memory type of this vault", field="type",
                       hint=f"use one of {', '.join(config.note_types)}, "
                            f"or add it to memory.types in {layout.CONFIG_PATH}")
    importance = config.default_importance if note.importance is None else note.importance
    for label, value in (("importance", importance), ("confidence", note.confidence)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 <= value <= 1):
            raise BadInput(f"is {value!r}; it must be a number between 0 and 1", field=label)
    author_kind = note.author_kind or ("user" if actor.is_human else "agent")
    if author_kind not in AUTHOR_KINDS:
        raise BadInput(f"{author_kind!r} is not one of {', '.join(AUTHOR_KINDS)}",
                       field="author_kind")
    agent = check_name(note.agent, "agent name") if note.agent is not None else None
    scope = note.scope or ("agent" if agent else "project" if note.project else "global")
    if scope not in SCOPES:
        raise BadInput(f"{scope!r} is not one of {', '.join(SCOPES)}", field="scope")
    if scope == "agent" and not agent:
        raise BadInput("a note of scope agent needs the agent whose memory it is", field="agent")
    if scope == "project" and not note.project:
        raise BadInput("a note of scope project needs the project's name", field="project")
    key = note.key
    if key is not None and not re.fullmatch(r"[\w][\w.\-/]*", key):
        raise BadInput(f"{key!r} must be a dotted name such as backend.port", field="key")
    for name, value in (("key", key), ("project", note.project), ("said", note.said), ("author", note.author),
                        *(("tag", t) for t in note.tags)):
        scrub.refuse(name, value)
    clean_tags = [clean_tag(t) for t in note.tags]
    clean_aliases = [a.strip() for a in (scrub.text("alias", a) for a in note.aliases if a) if a.strip()]
    first_line = body.splitlines()[0].strip()
    # a name someone gives must be usable as it is (checked_name); one made from the text,
    # kept through a review edit (``name_given`` False), is a title like any other
    title = scrub.text("name", note.name.strip()) if note.name else shorten(first_line, 60)
    if note.name and name_given:
        title = checked_name(title)
    if not title:
        raise BadInput("is empty", field="name")
    desc = scrub.text("description", note.description.strip()) if note.description else shorten(first_line, 120)
    meta = {
        "name": title, "description": desc, "type": note.type, "scope": scope, "agent": agent,
        "project": note.project, "importance": importance,
        "confidence": note.confidence if note.confidence is not None else (1.0 if author_kind == "user" else 0.7),
        "author": check_name(note.author, "author") if note.author else actor.name, "author_kind": author_kind,
        "source": scrub.text("source", note.source or "cli"), "said": str(note.said) if note.said else None,
        "created": now(), "confirmed": now(), "aliases": clean_aliases, "tags": clean_tags, "status": "active",
        "key": key,
    }  # fmt: skip
    return meta, body


NAME_RULE = ("a note's name also makes its file name: letters and digits of any script, spaces and "
             "punctuation such as - _ . , ( ) are allowed; / \\ : * ? \" < > | # ^ [ ], control characters, "
             "'..', and a leading or trailing dot or space are not")


def checked_name(name: str) -> str:
    """A note's name as given (secrets already replaced), or NameRefused (field ``name``)
    when it could not be a file name as it is: a name that reads as a path
    (``../../escape``) is refused, not quietly turned into another one."""
    from . import guard  # its patterns only: the detectors load when text is scrubbed

    try:
        check_name(guard.PLACEHOLDER.sub("redacted", name), "note name", field="name")
    except NameRefused as exc:
        raise NameRefused(exc.message, hint=NAME_RULE, field="name") from None
    return name


# -- planning writes ---------------------------------------------------------------------------
def slug_text(name: str) -> str:
    """The text a note's slug is made from: a redaction placeholder in the name counts as
    its kind alone ('redacted github-token'). Its hash would be a run of hex in the slug,
    and slug and MEMORY.md line, read as one token, can look like a random key."""
    from . import guard

    return guard.PLACEHOLDER.sub(lambda m: " redacted " + m.group(0)[1:-1].split(":")[1] + " ", name)


def memory_index_text(root: Path) -> str:
    try:
        return files.read_vault_text(root, layout.MEMORY_INDEX)
    except FileNotFoundError:
        return ""


def plan_add(root: Path, meta: dict, body: str, supersede: str | None = None, actor: Actor | None = None,
             index_text: str | None = None, taken: list[str] = ()) -> NotePlan:
    """The new note, its MEMORY.md line and the notes it supersedes moved to the archive
    as superseded (``superseded_by`` on each, ``supersedes`` on the new one): the note
    ``supersede`` names (a REPLACE), and every active note with the same ``key`` in the
    same scope (:func:`same_key`) — a newer value of a fact replaces the older one
    rather than standing beside it. ``index_text`` and ``taken`` carry MEMORY.md and
    slugs planned earlier in the same commit."""
    slug = free_slug(slugify(slug_text(meta["name"])), [*slugs(root), *taken])
    rel = layout.note_path(slug)
    writes: dict[str, str | None] = {}
    remove = []
    olds = [resolve(root, supersede)] if supersede is not None else []
    olds += [name for name in same_key(root, meta) if name not in olds]
    if olds:
        refs = [layout.note_ref(old) for old in olds]
        meta = {**meta, "supersedes": refs[0] if len(refs) == 1 else refs}
    for old in olds:
        writes.update(plan_archive(root, old, actor, None, status="superseded",
                                   superseded_by=layout.note_ref(slug), index=False,
                                   taken=[p.rsplit("/", 1)[-1][:-3] for p in writes
                                          if p.startswith(f"{layout.ARCHIVED_NOTES_DIR}/")]))
        remove.append(layout.note_ref(old))
    if index_text is None:
        index_text = memory_index_text(root)
    writes[rel] = render_note(meta, body)
    writes[layout.MEMORY_INDEX] = update_index(index_text, layout.MEMORY_INDEX, remove=remove, add=[
        index_line(slug, meta["name"], meta["description"], meta["type"], meta.get("agent"))])
    return NotePlan(slug, rel, writes, [layout.note_ref(old) for old in olds])


def plan_archive(root: Path, name: str, actor: Actor | None, reason: str | None, status: str = "archived",
                 index: bool = True, taken: list[str] = (), archived: list[str] | None = None,
                 slug: str | None = None, **fields) -> dict[str, str | None]:
    """Move ``memories/<name>.md`` to the archive (the first key of the result) and,
    with ``index``, drop its MEMORY.md line. ``taken``: archive slugs planned earlier
    in the same commit; ``archived``: the archive's slugs, when the caller has listed
    them already; ``slug``: the archive slug, when the caller chose a free one (a GC of
    thousands keeps one set of the taken ones). The note records where it came from
    (``archived_from``), so ``restore`` puts it back there."""
    src = layout.note_path(name)
    if slug is None:
        existing = slugs(root, layout.ARCHIVED_NOTES_DIR) if archived is None else archived
        slug = free_slug(name, [*existing, *taken])
    dst = f"{layout.ARCHIVED_NOTES_DIR}/{slug}.md"
    updates = {"status": status, "archived_from": layout.note_ref(name), "archived": now(),
               "archived_by": actor.name if actor else None, **fields}
    if reason:
        updates["archive_reason"] = reason
    updates = {k: v for k, v in updates.items() if v is not None}
    writes: dict[str, str | None] = {
        dst: set_note_fields(files.read_vault_text(root, src), src, **updates), src: None}
    if index:
        index_text = memory_index_text(root)
        new_index = update_index(index_text, layout.MEMORY_INDEX, remove=[layout.note_ref(name)])
        if new_index != index_text:
            writes[layout.MEMORY_INDEX] = new_index
    return writes


_INDEX_LINK = re.compile(r"\[\[(memories/[^\]|#]+)")


def index_problems(root: Path) -> tuple[list[dict], list[dict]]:
    """MEMORY.md against the notes: (lines whose note is not an active note in
    ``memories/`` — ``line``, ``target`` —, active notes without a line — ``slug``,
    ``line``: the index line that would list it). Lines outside the generated block are
    a human's and not checked."""
    from .parse.document import plain

    text = memory_index_text(root)
    doc = parse_document(text, layout.MEMORY_INDEX, require_frontmatter=False)
    begin, end = _index_span(doc)
    listed: dict[str, int] = {}
    for i in range(begin + 1, end):
        for m in _INDEX_LINK.finditer(doc.content(i)):
            listed.setdefault(m.group(1).strip().removesuffix(".md"), i + 1)
    active: dict[str, dict] = {}
    for name in slugs(root):
        rel = layout.note_path(name)
        try:
            meta = plain(parse_document(files.read_vault_text(root, rel), rel, require_frontmatter=False,
                                        fast=True).meta) or {}
        except (VaultmemError, FileNotFoundError):
            meta = {}  # unreadable: listed or not, the parse check names it
        if str(meta.get("status") or "active") == "active":
            active[layout.note_ref(name)] = meta
    dangling = [{"line": n, "target": t} for t, n in sorted(listed.items(), key=lambda kv: kv[1]) if t not in active]
    missing = []
    for ref, meta in sorted(active.items()):
        if ref not in listed:
            slug = ref.removeprefix(f"{layout.MEMORIES_DIR}/")
            missing.append({"slug": slug, "line": index_line(
                slug, str(meta.get("name") or slug), str(meta.get("description") or ""), str(meta.get("type") or "fact"),
                meta.get("agent") if meta.get("scope") == "agent" else None)})
    return dangling, missing


def _index_span(doc) -> tuple[int, int]:
    from .parse.note import index_block

    span = index_block(doc)
    return span if span is not None else (len(doc.lines), len(doc.lines))


def plan_index_fix(root: Path, dangling: list[dict], missing: list[dict]) -> dict[str, str]:
    """MEMORY.md with the dangling lines removed and the missing ones added."""
    text = memory_index_text(root)
    return {layout.MEMORY_INDEX: update_index(text, layout.MEMORY_INDEX, remove=[d["target"] for d in dangling],
                                              add=[m["line"] for m in missing])}


ARCHIVE_FIELDS = ("archived", "archived_by", "archived_from", "archive_reason", "superseded_by", "gc_score")


def plan_restore(root: Path, name: str) -> tuple[dict[str, str | None], str, str, bool]:
    """Bring ``archive/memories/<name>.md`` back to where it was archived from, active,
    with its MEMORY.md line: (writes, the note's path, its slug, exact). ``exact``: the
    note is given back byte for byte as it was when it was archived (git holds that
    text, and the archived copy is unchanged since); else — the archived copy was edited,
    or the history is gone — the fields the archiving added are taken out again and its
    status made active, keeping every edit."""
    from . import gitstore

    raw = (name or "").strip().removeprefix(f"{layout.ARCHIVED_NOTES_DIR}/").removesuffix(".md")
    name = check_name(raw, "note slug")
    src = f"{layout.ARCHIVED_NOTES_DIR}/{name}.md"
    if not (root / src).is_file():
        archived = slugs(root, layout.ARCHIVED_NOTES_DIR)
        close = close_matches(name, archived)
        raise NotFound(f"no archived note {name!r} ({src})", field="slug",
                       hint=f"did you mean {', '.join(close)}?" if close else "archived notes are in archive/memories/")
    text = files.read_vault_text(root, src)
    info = parse_note(text, src)
    origin = str(info.meta.get("archived_from") or layout.note_ref(name))
    slug = check_name(origin.removeprefix(f"{layout.MEMORIES_DIR}/").removesuffix(".md"), "note slug")
    dst = layout.note_path(slug)
    if (root / dst).exists():
        raise BadInput(f"{dst} exists: the archived note would replace it", field="slug",
                       hint=f"rename or forget {dst} first; nothing was changed")
    exact = None
    added = gitstore.added_in(root, src)
    if added and gitstore.text_at(root, added, src) == text:
        exact = gitstore.text_at(root, f"{added}^", dst)
    if exact is None:
        restored = set_note_fields(text, src, status="active")
        doc = parse_document(restored, src, require_frontmatter=False)
        meta = doc.meta
        for key in ARCHIVE_FIELDS:
            if key in meta:
                del meta[key]
        doc.set_meta(meta)
        restored = doc.text()
    else:
        restored = exact
    meta = parse_note(restored, dst).meta
    line = index_line(slug, str(meta.get("name") or slug), str(meta.get("description") or ""),
                      str(meta.get("type") or "fact"), meta.get("agent") if meta.get("scope") == "agent" else None)
    index = update_index(memory_index_text(root), layout.MEMORY_INDEX, add=[line])
    return {dst: restored, src: None, layout.MEMORY_INDEX: index}, dst, slug, exact is not None


# -- small text helpers --------------------------------------------------------------------------
def close_matches(name: str, existing) -> list[str]:
    from difflib import get_close_matches  # only for an error message: not loaded by every command

    return get_close_matches(name, existing, n=3)


def clean_tag(tag: str) -> str:
    tag = tag.strip().lstrip("#")
    if not re.fullmatch(r"[\w/\-]+", tag) or tag.isdigit():
        raise BadInput(f"{tag!r} is not an Obsidian tag (letters, digits, '_', '-', '/'; not only digits)",
                       field="tags")
    return tag


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters; never cuts a word or token (a hash cut in two would
    read as something else) unless the text has no break to cut at."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if "redacted:" in text:  # a placeholder is kept whole or left out, never cut
        from . import guard

        for m in guard.PLACEHOLDER.finditer(text):
            if m.start() < limit - 1 < m.end():
                return (text[: m.start()].rstrip() or text[: limit - 1]) + "…"
    if re.match(r"[\w\-+/=.~]", text[limit - 1]) and re.search(r"[A-Za-z0-9_\-+/=.~]$", cut):
        cut = re.sub(r"[A-Za-z0-9_\-+/=.~]+$", "", cut) or cut
    return cut.rstrip() + "…"


class Notes:
    """A vault's memory notes, as ``vault.notes``: one remembered (a human's at once, an
    agent's through the review inbox), one read, one forgotten (archived)."""

    def __init__(self, vault) -> None:
        self.vault = vault

    def remember(self, text: str, actor: Actor, type: str, **fields) -> Change:
        """Write ``memories/<slug>.md`` and its line in MEMORY.md, as one commit — when a
        human says so (``fields``: see :class:`~vaultmem.models.NoteFields`). What an
        agent remembers is filed in the review inbox; a trusted agent's user-stated fact
        may pass at once."""
        scrub = self.vault.writer.scrubber()
        meta, body = prepare(text, actor, NoteFields(type=type, **fields), self.vault.config, scrub)
        if not actor.is_human:
            return self.vault.inbox.file(actor, [{"op": "add", "note": meta, "text": body}], scrub=scrub)
        with self.vault.writer.locked():
            plan = plan_add(self.vault.root, meta, body)
            message = f"remember: {meta['name']} ({plan.path})"
            if plan.superseded:
                message += f"; supersedes {', '.join(plan.superseded)} (key {meta['key']})"
            sha = self.vault.writer.apply(actor, message, plan.writes)
        return Change("remember", list(plan.writes), sha, message,
                      {"slug": plan.slug, "path": plan.path, "superseded": plan.superseded},
                      warnings=scrub.warnings())

    def read(self, slug: str) -> NoteInfo:
        return read(self.vault.root, slug)

    def forget(self, slug: str, actor: Actor, reason: str | None = None) -> Change:
        """Move a note to ``archive/memories/`` (status archived) and drop its MEMORY.md
        line — when a human says so; an agent's REMOVE goes to the review inbox."""
        scrub = self.vault.writer.scrubber()
        reason = scrub.text("reason", reason) if reason else reason
        name = resolve(self.vault.root, slug)
        if not actor.is_human:
            return self.vault.inbox.file(actor, [{"op": "remove", "target": layout.note_ref(name),
                                                  "text": reason or ""}], scrub=scrub)
        with self.vault.writer.locked():
            name = resolve(self.vault.root, slug)
            writes = plan_archive(self.vault.root, name, actor, reason)
            src, dst = layout.note_path(name), next(iter(writes))
            message = f"forget: {src} → {dst}" + (f" ({reason})" if reason else "")
            sha = self.vault.writer.apply(actor, message, writes)
        return Change("forget", list(writes), sha, message, {"slug": name, "archived_to": dst},
                      warnings=scrub.warnings())
