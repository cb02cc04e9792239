"""``vaultmem skill add / list / show``: the vault's procedural memory."""

from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, session, stdin_text

app = typer.Typer(help="Skills: how-tos and scripts for recurring tasks (skills/<slug>/SKILL.md). A brief names "
                       "the ones relevant to its task, one line each with a link.", no_args_is_help=True)


@app.command("add")
@handles_errors
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The skill's name.", show_default=False)],
    description: Annotated[str, typer.Option(help="What it does, in a line (what a brief shows).", show_default=False)],
    when: Annotated[Optional[str], typer.Option(help="When to use it, in a line.")] = None,
    file: Annotated[Optional[str], typer.Option(help="Its steps: a Markdown file, or '-' for standard input.")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Write a new skill, skills/<slug>/SKILL.md, one commit. Humans only.

    \b
    Example:
      vaultmem skill add "Release a hotfix" --description "Cut, test and ship a hotfix branch" \\
        --when "a production bug needs a fix before the next release" --file hotfix.md
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    text = ""
    if file == "-":
        text = stdin_text()
    elif file is not None:
        from pathlib import Path

        from ...errors import BadInput

        try:
            text = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}", field="file") from None
    change = v.skills.add(name, description, v.actor(s.agent), when_to_use=when, text=text)
    s.emit(change, lambda c: f"added skill {c.details['name']}: {c.details['path']} (commit {c.commit[:8]})")


@app.command("list")
@handles_errors
def list_(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Every skill: its name, what it does, when to use it, and its file. A skill file that
    cannot be read is named with its line."""
    s = session(ctx, vault, as_, json_)
    found, problems = s.open().skills.all()
    s.emit((found, problems), render.skills,
           data={"skills": [k.to_dict() for k in found], "problems": problems})
    if problems:
        raise typer.Exit(1)


@app.command("show")
@handles_errors
def show(ctx: typer.Context, name: Annotated[str, typer.Argument(help="The skill's name or slug.", show_default=False)],
         vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Print a skill whole: its name, description, when to use it, and its steps."""
    s = session(ctx, vault, as_, json_)
    found = s.open().skills.get(name)
    s.emit(found, render.skill, data=found.to_dict(text=True))
