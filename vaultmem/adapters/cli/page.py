"""``vaultmem page …``: role-agent pages (agents/<role>.md)."""

from functools import partial
from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, read_text_arg, session

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
    change = v.pages.ensure(role, v.actor(s.agent), category=category, project=project)
    s.emit(change, partial(render.page_ensure, project=project))


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
    change = v.pages.add(role, read_text_arg(text), v.actor(s.agent), section=section, project=project)
    s.emit(change, render.page_add)


@app.command("show")
@handles_errors
def show(ctx: typer.Context, role: RoleArg, vault: VaultOpt = None, as_: AsOpt = None,
         json_: JsonOpt = False) -> None:
    """Print a role page, parsed: its properties and each entry with its block id."""
    s = session(ctx, vault, as_, json_)
    info = s.open().pages.read(role)
    s.emit(info, render.page)


@app.command("list")
@handles_errors
def list_(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """List the roles that have a page (only roles that were ever dispatched)."""
    s = session(ctx, vault, as_, json_)
    rows = s.open().pages.listing()

    s.emit(rows, render.page_list, data={"pages": rows})
