"""Forgetting: each active note's retention score — from its importance, its age and how
often it was recalled (:mod:`vaultmem.usage`) — and the notes GC moves to the archive.
Reached as ``upkeep.gc`` / ``upkeep.restore``; the formula and its defaults are in docs/forgetting.md.

    score = decay × (1 − USE_WEIGHT) × importance + decay × USE_WEIGHT × usage
    decay = 0.5 ^ (days since it was last confirmed or recalled / the type's half-life)
    usage = min(1, log2(1 + recalls) / log2(1 + USE_SATURATION))

A note whose score falls below ``forgetting.min_score`` is archived; so is an expired one
(``expires`` in the past) and, per type, what exceeds ``forgetting.caps`` (the lowest
scores first). A ``pinned`` note, and one whose ``expires`` lies ahead, is kept whatever
its score. A type whose half-life is ``never`` does not decay.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import files, gitstore, layout, notes
from .errors import VaultmemError
from .models import Change
from .names import collision_key
from .parse import update_index
from .parse.document import parse_document, plain
from .usage import read_usage

USE_WEIGHT = 0.4  # the share of the score that use earns; importance earns the rest
USE_SATURATION = 8  # recalls at which use counts in full
DEFAULT_HALF_LIFE_DAYS = 180.0  # a type the config does not name
HALF_LIVES = {"episode": 30.0, "fact": 365.0, "failure+fix": 365.0, "preference": 730.0, "decision": 730.0,
              "procedure": None}
MIN_SCORE = 0.1


@dataclass(frozen=True)
class Policy:
    """What GC keeps: half-lives by type (days; None: never decays), the score below
    which a note goes, and caps by type (active notes at most)."""

    half_lives: dict[str, float | None] = field(default_factory=lambda: dict(HALF_LIVES))
    min_score: float = MIN_SCORE
    caps: dict[str, int] = field(default_factory=dict)

    def half_life(self, type_: str | None) -> float | None:
        return self.half_lives.get(type_ or "", DEFAULT_HALF_LIFE_DAYS)


@dataclass
class Score:
    """One note's retention score and its parts (``to_dict`` is what ``gc --json`` shows)."""

    slug: str
    path: str
    type: str | None
    importance: float
    last_seen: str | None  # the latest of confirmed, created and its last recall (ISO)
    age_days: float
    half_life_days: float | None
    decay: float
    recalls: int
    usage: float
    score: float
    verdict: str = "keep"  # keep | archive
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"slug": self.slug, "path": self.path, "type": self.type, "score": round(self.score, 4),
                "verdict": self.verdict, "reason": self.reason,
                "parts": {"importance": self.importance, "last_seen": self.last_seen,
                          "age_days": round(self.age_days, 1), "half_life_days": self.half_life_days,
                          "decay": round(self.decay, 4), "recalls": self.recalls, "usage": round(self.usage, 4)}}


@dataclass
class GcPlan:
    """What a GC run would do: ``archive`` and ``keep`` (scores, lowest first), the notes
    left alone (``skipped``: a human's uncommitted edit) and the files that could not be
    read (``skipped_files``)."""

    archive: list[Score]
    keep: list[Score]
    skipped: list[dict[str, Any]] = field(default_factory=list)
    skipped_files: list[dict[str, Any]] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict, repr=False)  # path → the text scored

    def to_dict(self) -> dict[str, Any]:
        return {"archive": [s.to_dict() for s in self.archive], "keep": len(self.keep),
                "skipped": self.skipped,
                "kept": [s.to_dict() for s in self.keep]}


# -- scores --------------------------------------------------------------------------------------
def instant(value) -> _dt.datetime | None:
    """A frontmatter date or time as an aware datetime (a date is its midnight, UTC)."""
    if value in (None, ""):
        return None
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day, tzinfo=_dt.timezone.utc)
    text = str(value).strip().replace("Z", "+00:00")
    try:
        got = _dt.datetime.fromisoformat(text)
    except ValueError:
        try:
            day = _dt.date.fromisoformat(text[:10])
        except ValueError:
            return None
        got = _dt.datetime(day.year, day.month, day.day)
    return got if got.tzinfo else got.replace(tzinfo=_dt.timezone.utc)


def _number(value, default: float) -> float:
    try:
        got = float(value)
    except (TypeError, ValueError):
        return default
    return min(1.0, max(0.0, got)) if math.isfinite(got) else default


def score(slug: str, meta: dict, now: _dt.datetime, use: tuple[int, str] | None, policy: Policy) -> Score:
    """The retention score of the note ``memories/<slug>.md`` (see the module docstring)."""
    type_ = str(meta["type"]) if meta.get("type") else None
    importance = _number(meta.get("importance"), 0.5)
    recalls, last_use = use or (0, "")
    seen = [t for t in (instant(meta.get("confirmed")), instant(meta.get("created")), instant(last_use)) if t]
    last = max(seen) if seen else None
    age = max(0.0, (now - last).total_seconds() / 86400) if last else 0.0
    half = policy.half_life(type_)
    decay = 1.0 if half is None else 0.5 ** (age / half)
    usage = min(1.0, math.log2(1 + recalls) / math.log2(1 + USE_SATURATION))
    value = decay * ((1 - USE_WEIGHT) * importance + USE_WEIGHT * usage)
    return Score(slug, layout.note_path(slug), type_, importance, last.strftime("%Y-%m-%dT%H:%M:%SZ") if last else None,
                 age, half, decay, recalls, usage, value)


def plan(root: Path, policy: Policy, now: _dt.datetime | None = None, protected: frozenset[str] = frozenset()
         ) -> GcPlan:
    """Score every active note in ``memories/`` and decide: ``protected`` paths (a
    human's uncommitted edit) are left alone and listed as skipped."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    usage = read_usage(root)
    folder = root / layout.MEMORIES_DIR
    archive: list[Score] = []
    keep: list[Score] = []
    held: list[Score] = []  # kept whatever their score: pinned, expiring later
    skipped: list[dict[str, Any]] = []
    unread: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".md")) if folder.is_dir() else []
    for name in names:
        rel = f"{layout.MEMORIES_DIR}/{name}"
        slug = name.removesuffix(".md")
        try:
            text = files.read_vault_text(root, rel)
            doc = parse_document(text, rel, require_frontmatter=False, fast=True)  # read-only: the fast parser
            meta = plain(doc.meta) if doc.meta is not None else {}
        except VaultmemError as exc:
            unread.append({"path": rel, "line": exc.line, "message": exc.message})
            continue
        except (FileNotFoundError, NotADirectoryError):
            continue
        if str(meta.get("status") or "active") != "active":
            continue
        if rel in protected:
            skipped.append({"path": rel, "reason": "it has an uncommitted edit: commit it (or undo it) first"})
            continue
        s = score(slug, meta, now, usage.get(rel), policy)
        texts[rel] = text
        expires = instant(meta.get("expires"))
        if meta.get("pinned") is True:
            s.reason = "pinned"
            held.append(s)
        elif expires is not None and expires <= now:
            s.verdict, s.reason = "archive", f"expired on {expires.date().isoformat()}"
            archive.append(s)
        elif expires is not None:
            s.reason = f"expires on {expires.date().isoformat()}"
            held.append(s)
        elif s.score < policy.min_score:
            s.verdict = "archive"
            s.reason = (f"score {s.score:.3f} < {policy.min_score:g} ({s.type or 'untyped'}, "
                        f"{s.age_days:.0f} days since last seen, half-life {s.half_life_days:g} days, "
                        f"{s.recalls} recalls)")
            archive.append(s)
        else:
            s.reason = f"score {s.score:.3f} ≥ {policy.min_score:g}"
            keep.append(s)
    # caps: per type, the lowest scores beyond the cap go (pinned and expiring-later ones count, never go)
    for type_, cap in sorted(policy.caps.items()):
        mine = sorted((s for s in keep if s.type == type_), key=lambda s: (s.score, s.slug))
        room = cap - sum(1 for s in held if s.type == type_)
        over = len(mine) - max(0, room)
        for s in mine[:max(0, over)]:
            s.verdict, s.reason = "archive", f"over the cap of {cap} {type_} notes (score {s.score:.3f})"
            archive.append(s)
            keep.remove(s)
    archive.sort(key=lambda s: (s.score, s.slug))
    keep = sorted(keep + held, key=lambda s: (s.score, s.slug))
    return GcPlan(archive, keep, skipped, unread, texts)


def plan_writes(root: Path, going: list[Score], actor) -> dict[str, str | None]:
    """The writes of one GC commit: each note of ``going`` moved to the archive (status
    archived, its score and reason recorded), and their MEMORY.md lines removed at once."""
    writes: dict[str, str | None] = {}
    taken = {collision_key(slug) for slug in notes.slugs(root, layout.ARCHIVED_NOTES_DIR)}  # one set, kept up to date
    for s in going:
        slug, n = s.slug, 2
        while collision_key(slug) in taken:
            slug, n = f"{s.slug}-{n}", n + 1
        taken.add(collision_key(slug))
        writes.update(notes.plan_archive(root, s.slug, actor, f"gc: {s.reason}", index=False, slug=slug,
                                         gc_score=round(s.score, 4)))
    index_text = notes.memory_index_text(root)
    new_index = update_index(index_text, layout.MEMORY_INDEX, remove=[layout.note_ref(s.slug) for s in going])
    if new_index != index_text:
        writes[layout.MEMORY_INDEX] = new_index
    return writes


def collect(root: Path, writer, plan: GcPlan, actor) -> tuple[GcPlan, Change | None]:
    """Carry out ``plan`` in one commit by ``actor``, under the vault's write lock
    (``writer``: the transaction's). The plan was made without the lock — scoring tens of
    thousands of notes takes seconds, and agents write meanwhile — so each note is moved
    only if its text is still the text that was scored and it holds no uncommitted edit;
    one that changed is left for the next run (listed in ``plan.skipped``)."""
    with writer.locked():
        changed = set(gitstore.changed_under(root, layout.MEMORIES_DIR))
        going = []
        for s in plan.archive:
            try:
                same = files.read_vault_text(root, s.path) == plan.texts[s.path]
            except (FileNotFoundError, VaultmemError):
                same = False
            if same and s.path not in changed:
                going.append(s)
            else:
                plan.skipped.append({"path": s.path, "reason": "it changed while gc ran: left for the next run"})
        plan.archive = going
        if not going:
            return plan, None
        writes = plan_writes(root, going, actor)
        lines = "\n".join(f"- {s.path} score {s.score:.4f}: {s.reason}" for s in going)
        message = f"gc: archive {len(going)} note{'s' if len(going) != 1 else ''}\n\n{lines}"
        sha = writer.apply(actor, message, writes)
    return plan, Change("gc", list(writes), sha, message.splitlines()[0], {"archived": len(going)})
