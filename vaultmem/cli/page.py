"""``vaultmem page …``: role-agent pages (agents/<role>.md)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ._common import AsOpt, JsonOpt, VaultOpt, described, handles_errors, read_text_arg, session

app = typer.Typer(
    help="Role-agent pages: one page per role, created on the role's first dispatch.",
    no_args_is_help=True,
)

RoleArg = Annotated[str, typer.Argument(help="Role name, e.g. 前端审查 or code-reviewer.", show_default=False)]


@app.command("ensure")
@handles_errors
def ensure(
    ctx: typer.Context,
    role: RoleArg,
    category: Annotated[Optional[str], typer.Option(help="Role category for a new page, e.g. 前端开发.")] = None,
    project: Annotated[Optional[str], typer.Option(help="Project this dispatch is for; added to the page's projects.")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Create agents/ROLE.md on first dispatch (never before); on an existing page only add --project.

    Example: vaultmem page ensure 前端审查 --category 前端开发 --project web --as lee
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.ensure_page(role, v.actor(s.agent), category=category, project=project)
    d = change.details
    if d["created"]:
        human = f"created {d['path']}" + (f" (commit {change.commit[:8]})" if change.commit else "")
    elif d["project_added"]:
        human = f"{d['path']} exists; added project {project} (commit {change.commit[:8]})"
    else:
        human = f"{d['path']} exists; nothing changed"
    s.emit(change.to_dict(), human)


@app.command("add")
@handles_errors
def add(
    ctx: typer.Context,
    role: RoleArg,
    text: Annotated[str, typer.Argument(help="The entry text ('-' reads standard input).", show_default=False)],
    section: Annotated[str, typer.Option(help="work: a dated working-memory entry; context: a project-context bullet.")] = "work",
    project: Annotated[Optional[str], typer.Option(help="Project heading for --section context (default: the page's only project).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Append an entry with a stable block id (^m-…) to a role page.

    Example: vaultmem page add 前端审查 "用户偏好React.memo而非useMemo" --as lee
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.add_entry(role, read_text_arg(text), v.actor(s.agent), section=section, project=project)
    s.emit(change.to_dict(), described(change, lambda: f"added {change.details['entry']['link']} "
                                                       f"(commit {change.commit[:8]})"))


@app.command("show")
@handles_errors
def show(ctx: typer.Context, role: RoleArg, vault: VaultOpt = None, as_: AsOpt = None,
         json_: JsonOpt = False) -> None:
    """Print a role page, parsed: its properties and each entry with its block id."""
    s = session(ctx, vault, as_, json_)
    info = s.open().read_page(role)
    s.emit(info.to_dict(), lambda: render_page(info))


@app.command("list")
@handles_errors
def list_(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """List the roles that have a page (only roles that were ever dispatched)."""
    s = session(ctx, vault, as_, json_)
    rows = s.open().list_pages()

    def human() -> str:
        if not rows:
            return "no role pages yet (a page is created on a role's first dispatch)"
        out = []
        for r in rows:
            if not r["ok"]:
                out.append(f"{r['role']}  BROKEN: {r['problem']}")
                continue
            n = r["entries"]
            projects = ", ".join(r["projects"]) or "-"
            out.append(f"{r['role']}  [{r['category'] or '-'}]  first used {r['first_used']}  projects: {projects}"
                       f"  entries: {n['context']} context, {n['work']} work, {n['subagents']} sub-agent")
        return "\n".join(out)

    s.emit({"pages": rows}, human)


def render_page(info) -> str:
    from ..parse import HEADINGS

    meta = info.meta
    out = [f"{info.name} — {info.path}",
           f"category: {meta.get('category') or '-'} · first used: {meta.get('first_used') or '-'} · "
           f"projects: {', '.join(info.projects) or '-'}"]
    for key in ("context", "work", "subagents"):
        out += ["", f"## {HEADINGS[info.lang][key]}"]
        entries = [e for e in info.entries if e.section == key]
        if not entries:
            out.append("  (empty)")
        project = None
        for e in entries:
            if key == "context" and e.project != project:
                project = e.project
                out.append(f"### {project or '(no project)'}")
            eid = f"^{e.id}" if e.id else "(no id)"
            if key == "subagents":
                out.append(f"  {eid}  {e.date or ''} {e.title or ''}".rstrip())
                for field, value in (e.fields or {}).items():
                    out.append(f"      {field}: {value}")
            else:
                text = e.text.replace("\n", "\n      ")
                out.append(f"  {eid}  " + (f"{e.date} | " if e.date else "") + text)
    if info.extra_sections:
        out += ["", "other sections: " + ", ".join(info.extra_sections)]
    return "\n".join(out)
