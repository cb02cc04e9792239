"""Role pages: ``agents/<role>.md``, created on a role's first dispatch, with its three
sections (project context, working memory, sub-agent records).

Plan functions read the vault and return the writes a change needs, nothing written;
call them with the write lock held (see :mod:`vaultmem.notes`).
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from . import files, layout
from .errors import BadInput, NotFound, PermissionRefused, VaultmemError
from .models import Actor, Change, Entry, PageInfo
from .names import check_name, check_new_name, collision_key
from .notes import close_matches
from .parse import RolePage, add_context_entry, add_project, add_work_entry, new_page_text, parse_page


def today() -> _dt.date:
    return _dt.datetime.now().astimezone().date()


def may_write(actor: Actor, role: str, orchestrator: str) -> None:
    """Sovereignty: only the orchestrator (and humans) write a role's page and memory."""
    if actor.is_human or actor.name == orchestrator:
        return
    raise PermissionRefused(
        f"agent {actor.name!r} may not write the memory of role {role!r}: only the orchestrator "
        f"{orchestrator!r} writes role pages and role memory",
        hint="send the change to the orchestrator; humans can edit the page in Obsidian",
    )


def role_files(root: Path) -> dict[str, str]:
    """NFC role name → the page's file stem as stored (macOS may store it NFD)."""
    import unicodedata

    # one listing, each entry's kind from it (no stat but for a link): every brief asks
    try:
        listing = os.scandir(root / layout.AGENTS_DIR)
    except OSError:  # none, not a folder, unreadable, a link that loops: no pages (as a glob)
        return {}
    with listing:
        stems = [os.path.splitext(e.name)[0] for e in listing if e.name.endswith(".md") and _page_file(e)]
    return {unicodedata.normalize("NFC", stem): stem for stem in stems}


def _page_file(entry: os.DirEntry) -> bool:
    """A file, or a link (even dangling, or looping: its brief says it cannot be read)."""
    try:
        return entry.is_file() or entry.is_symlink()
    except OSError:
        return entry.is_symlink()


def roles(root: Path) -> list[str]:
    return sorted(role_files(root))


def resolve(root: Path, role: str) -> str:
    """The existing role's exact name, or NotFound with the closest names as a hint."""
    name = check_name(role, "role name")
    existing = roles(root)
    if name in existing:
        return name
    same = [r for r in existing if collision_key(r) == collision_key(name)]
    close = same or close_matches(name, existing)
    raise NotFound(
        f"no page for role {name!r} ({layout.page_path(name)})", field="role",
        hint=(f"did you mean {', '.join(close)}? " if close else "")
        + f"a page is created on first dispatch: vaultmem page ensure {name}",
    )


def page_rel(root: Path, role: str) -> str:
    return layout.page_path(role_files(root).get(role, role))


def load(root: Path, role: str) -> RolePage:
    rel = page_rel(root, role)
    return parse_page(files.read_vault_text(root, rel), rel, stem=role)


def listing(root: Path) -> list[dict]:
    """Every role that has a page, with its counts (or the problem that stops reading it)."""
    out = []
    for role in roles(root):
        row = {"role": role, "path": page_rel(root, role)}
        try:
            info = load(root, role).info()
        except VaultmemError as exc:
            row.update(ok=False, problem=str(exc))
        else:
            counts = {s: sum(1 for e in info.entries if e.section == s) for s in ("context", "work", "subagents")}
            row.update(ok=True, name=info.name, category=info.meta.get("category"),
                       first_used=info.meta.get("first_used"), projects=info.projects, entries=counts)
        out.append(row)
    return out


def clean_project(project: str | None) -> str | None:
    if project is None:
        return None
    project = " ".join(project.split())
    if not project:
        raise BadInput("is empty", field="project")
    if any(ch in project for ch in "[]#^|\n"):
        raise BadInput(f"{project!r} may not contain [ ] # ^ | (they break Obsidian links)",
                       field="project")
    return project


def plan_entry(root: Path, name: str, text: str, section: str, project: str | None
               ) -> tuple[dict[str, str | None], Entry, str]:
    """The page text with the entry added: ({path: text}, entry, what it is)."""
    if section not in ("work", "context"):
        raise BadInput(f"is {section!r}; it must be work or context", field="section")
    rel = page_rel(root, name)
    page = load(root, name)
    if section == "work":
        new_text, entry = add_work_entry(page, text, today())
        what = "working-memory entry"
    else:
        if project is None:
            if len(page.projects) != 1:
                raise BadInput("a project-context entry needs its project", field="project",
                               hint=f"this page's projects: {', '.join(page.projects) or 'none yet'}")
            project = page.projects[0]
        if add_project(page, project):
            page = parse_page(page.doc.text(), rel, stem=name)
        new_text, entry = add_context_entry(page, project, text)
        what = f"project-context entry ({project})"
    return {rel: new_text}, entry, what


def plan_ensure(root: Path, name: str, actor: Actor, config, category: str | None, project: str | None
                ) -> tuple[dict[str, str | None], str, dict]:
    """A new page for ``name`` (its first dispatch), or ``project`` added to its page:
    (writes — empty when nothing changes, message, details)."""
    rel = page_rel(root, name)
    details = {"role": name, "path": rel, "created": False, "project_added": False}
    if files.inside(root, rel).exists():
        page = load(root, name)
        if project is None or not add_project(page, project):
            return {}, f"{rel} exists; nothing changed", details
        may_write(actor, name, config.orchestrator)
        details["project_added"] = True
        return {rel: page.doc.text()}, f"page: add project {project} to {rel}", details
    may_write(actor, name, config.orchestrator)
    text = new_page_text(name, config.lang, category, project, today())
    parse_page(text, rel)  # the template itself must parse
    details.update(created=True, project_added=project is not None)
    return {rel: text}, f"page: create {rel} on first dispatch", details


class Pages:
    """A vault's role pages, as ``vault.pages``: which roles there are, a page read, a page
    made on first dispatch, an entry added — through the vault's writer, the review gate
    before it (another agent's entry is filed in the inbox instead)."""

    def __init__(self, vault) -> None:
        self.vault = vault

    def roles(self) -> list[str]:
        return roles(self.vault.root)

    def read(self, role: str) -> PageInfo:
        return load(self.vault.root, resolve(self.vault.root, role)).info()

    def listing(self) -> list[dict]:
        return listing(self.vault.root)

    def ensure(self, role: str, actor: Actor, category: str | None = None,
               project: str | None = None) -> Change:
        """Create ``agents/<role>.md`` on first use; on an existing page only add ``project``."""
        scrub = self.vault.writer.scrubber()
        project = clean_project(project)
        scrub.refuse("project", project)
        category = scrub.text("category", category) if category else category
        with self.vault.writer.locked():
            name = check_new_name(role, roles(self.vault.root), "role name")
            writes, message, details = plan_ensure(self.vault.root, name, actor, self.vault.config, category, project)
            sha = self.vault.writer.apply(actor, message, writes) if writes else None
        return Change("page.ensure", [details["path"]], sha, message, details, warnings=scrub.warnings())

    def add(self, role: str, text: str, actor: Actor, section: str = "work",
            project: str | None = None) -> Change:
        """Append a dated working-memory entry, or a project-context bullet, with a block id.
        Only the orchestrator (or a human) writes a role page: another agent's entry, or
        one that reads like an instruction, is filed in the review inbox instead."""
        scrub = self.vault.writer.scrubber()
        project = clean_project(project)
        scrub.refuse("project", project)
        text = scrub.text("entry text", text)
        with self.vault.writer.locked():
            name = resolve(self.vault.root, role)
            plan_entry(self.vault.root, name, text, section, project)  # refuse bad input before proposing
        from . import guard

        if not actor.is_human and (actor.name != self.vault.config.orchestrator or guard.instruction_flags(text)):
            return self.vault.inbox.file(actor, [{"op": "page-add", "role": name, "section": section,
                                                  "project": project, "text": text}], scrub=scrub)
        with self.vault.writer.locked():
            writes, entry, what = plan_entry(self.vault.root, name, text, section, project)
            rel = next(iter(writes))
            message = f"page: add {what} ^{entry.id} to {rel}"
            sha = self.vault.writer.apply(actor, message, writes)
        return Change("page.add", [rel], sha, message, {"role": name, "entry": entry.to_dict(rel)},
                      warnings=scrub.warnings())
