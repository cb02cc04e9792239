"""Skills: the vault's procedural memory — how-tos and scripts for recurring tasks.

A skill is ``skills/<slug>/SKILL.md`` (the folder may hold its scripts beside it), or a
single ``skills/<slug>.md``, with ``SKILL.md``-style frontmatter: ``name``, ``description``
(what it does), ``when_to_use``. The index makes one document of each (kind ``skill``); a
brief names the skills relevant to its task, one line each with a link, never their text
(``brief.build_brief``): the agent opens the one it needs.

- :func:`read_all`: every skill, with the files that could not be read (file and line).
- :func:`find`: one skill by name or slug.
- :func:`plan_add`: the file of a new skill (nothing written).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import files, layout
from .errors import BadInput, NotFound, PermissionRefused, VaultmemError
from .models import Actor, Change
from .names import check_name, check_new_name, slugify
from .parse.document import dump_yaml, parse_document, plain, yaml_timestamp

SKILL_FILE = layout.SKILL_FILE


@dataclass
class Skill:
    name: str
    path: str  # vault-relative
    description: str = ""
    when_to_use: str = ""
    text: str = ""  # the body, below the frontmatter
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def link(self) -> str:
        return f"[[{self.path.removesuffix('.md')}]]"

    def to_dict(self, text: bool = False) -> dict[str, Any]:
        out = {"name": self.name, "path": self.path, "link": self.link, "description": self.description,
               "when_to_use": self.when_to_use}
        return {**out, "text": self.text} if text else out


def skill_of(rel: str, text: str) -> Skill:
    """The skill a file holds (ParseError: broken frontmatter, with its line)."""
    doc = parse_document(text, rel, require_frontmatter=False, fast=True)
    meta = plain(doc.meta) if isinstance(doc.meta, dict) else {}
    parts = rel.split("/")
    default = parts[1] if len(parts) == 3 else parts[1].removesuffix(".md")
    return Skill(name=str(meta.get("name") or default), path=rel,
                 description=" ".join(str(meta.get("description") or "").split()),
                 when_to_use=" ".join(str(meta.get("when_to_use") or meta.get("when") or "").split()),
                 text="".join(doc.lines[doc.body_start:]).strip(), meta=meta)


def read_all(root: Path) -> tuple[list[Skill], list[dict]]:
    """Every skill of the vault, by name; and each skill file that could not be read
    (``{"path", "line", "message"}``)."""
    folder = root / layout.SKILLS_DIR
    rels = []
    for p in sorted(folder.iterdir()) if folder.is_dir() else []:
        if p.name.startswith("."):
            continue
        if p.is_dir() and (p / SKILL_FILE).exists():
            rels.append(f"{layout.SKILLS_DIR}/{p.name}/{SKILL_FILE}")
        elif p.suffix == ".md":
            rels.append(f"{layout.SKILLS_DIR}/{p.name}")
    out, problems = [], []
    for rel in rels:
        try:
            out.append(skill_of(rel, files.read_vault_text(root, rel)))
        except VaultmemError as exc:
            problems.append({"path": rel, "line": exc.line, "message": exc.message})
    return sorted(out, key=lambda s: s.name.casefold()), problems


def find(root: Path, name: str) -> Skill:
    """The skill called ``name`` (its name or its slug, any case)."""
    skills, problems = read_all(root)
    want = name.casefold()
    for s in skills:
        slug = s.path.split("/")[1].removesuffix(".md")
        if want in (s.name.casefold(), slug.casefold()):
            return s
    known = ", ".join(s.name for s in skills)
    raise NotFound(f"no skill {name!r}", hint=f"the skills: {known}" if known else
                   "there are no skills yet: 'vaultmem skill add NAME --description …' writes one"
                   + (f" ({len(problems)} skill file(s) could not be read: vaultmem skill list)" if problems else ""))


def plan_add(root: Path, name: str, description: str, when_to_use: str | None, body: str, author: str,
             created: Any) -> tuple[str, str]:
    """(path, text) of a new skill ``skills/<slug>/SKILL.md``. A name that is taken (or
    collides with one by case or width) is refused."""
    skills, _ = read_all(root)
    name = check_new_name(name, [s.name for s in skills], "skill name", field="name")
    if any(s.name == name for s in skills):
        raise BadInput(f"there is a skill {name!r} already ({next(s.path for s in skills if s.name == name)})",
                       field="name", hint="edit its file, or choose another name")
    if not description.strip():
        raise BadInput("a skill needs a description: what it does, in a line", field="description")
    slug = slugify(name)
    taken = {p.name.removesuffix(".md") for p in (root / layout.SKILLS_DIR).iterdir()} \
        if (root / layout.SKILLS_DIR).is_dir() else set()
    base, n = slug, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    meta = {"name": name, "description": " ".join(description.split()), "type": "skill", "author": author,
            "created": created}
    if when_to_use and when_to_use.strip():
        meta["when_to_use"] = " ".join(when_to_use.split())
    text = f"---\n{dump_yaml(meta)}---\n\n{body.strip()}\n" if body.strip() else f"---\n{dump_yaml(meta)}---\n"
    return f"{layout.SKILLS_DIR}/{slug}/{SKILL_FILE}", text


class Skills:
    """A vault's skills, as ``vault.skills``: all of them, one by name, one added (humans only)."""

    def __init__(self, vault) -> None:
        self.vault = vault

    def all(self):
        """Every skill (``skills/<slug>/SKILL.md``, ``skills/<slug>.md``), by name, and the
        skill files that could not be read (``{"path", "line", "message"}``)."""
        return read_all(self.vault.root)

    def get(self, name: str):
        """One skill, by its name or slug (NotFound names the others)."""
        return find(self.vault.root, name)

    def add(self, name: str, description: str, actor: Actor, when_to_use: str | None = None,
            text: str = "") -> Change:
        """Write a new skill, ``skills/<slug>/SKILL.md``, in one commit: ``name``, what it
        does (``description``), ``when_to_use``, and its steps (``text``), secrets
        replaced. Humans only: a skill is followed, not only read, so an agent's how-to is
        proposed for review instead (``retain`` with type procedure)."""
        if not actor.is_human:
            raise PermissionRefused(f"agent {actor.name!r} may not add a skill: a skill is followed, not only read",
                                    hint="propose it for a human's review: vaultmem retain (type procedure)")
        scrub = self.vault.writer.scrubber()
        name = check_name(name, "skill name", field="name")
        scrub.refuse("name", name)
        description = scrub.text("description", description) or ""
        when_to_use = scrub.text("when_to_use", when_to_use) if when_to_use else None
        text = scrub.text("text", text) or ""
        with self.vault.writer.locked():
            path, content = plan_add(self.vault.root, name, description, when_to_use, text, actor.name,
                                     yaml_timestamp(_dt.datetime.now(_dt.timezone.utc)))
            message = f"skill: add {name}"
            sha = self.vault.writer.apply(actor, message, {path: content})
        return Change("skill add", [path], sha, message, {"name": name, "path": path}, warnings=scrub.warnings())
