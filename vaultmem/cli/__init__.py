"""The ``vaultmem`` command line: a thin client of :class:`vaultmem.Vault`.

Each command parses its options, makes one library call and renders the result
(text for people, ``--json`` for programs). Command groups live in their own modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import coord, lifecycle, notes, page, recall, review
from ._common import AsOpt, JsonOpt, Session, VaultOpt, handles_errors, session

app = typer.Typer(
    name="vaultmem",
    help=(
        "Memory for teams of AI agents, kept as Markdown in a git-backed Obsidian vault.\n\n"
        "Start with 'vaultmem init PATH', then 'vaultmem page ensure ROLE' on a role's first dispatch, "
        "'vaultmem page add ROLE TEXT' for what it learned and 'vaultmem remember TEXT --type T' for facts. "
        "Every change is a git commit authored by the acting agent (--as)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(page.app, name="page")
app.command("remember")(notes.remember)
app.command("forget")(notes.forget)
app.command("index")(recall.index)
app.command("search")(recall.search)
app.command("brief")(recall.brief)
app.command("dispatch")(recall.dispatch)
app.command("eval")(recall.eval_)
app.command("watch")(recall.watch)
app.add_typer(coord.keys_app, name="keys")
app.add_typer(coord.log_app, name="log")
app.command("decide")(coord.decide)
app.add_typer(coord.state_app, name="state")
app.add_typer(coord.checkpoint_app, name="checkpoint")
app.command("sync")(coord.sync)
app.command("delegate")(lifecycle.delegate)
app.command("harvest")(lifecycle.harvest)
app.command("audit")(lifecycle.audit)
app.command("ask")(lifecycle.ask)
app.command("todo")(lifecycle.todo)
app.command("history")(lifecycle.history)
app.command("retain")(review.retain)
app.add_typer(review.app, name="review")


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def main_options(
    ctx: typer.Context,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """Global options; each command accepts them too."""
    ctx.obj = Session(vault=vault, agent=as_, json=json_)


@app.command("init")
@handles_errors
def init(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Folder for the new vault (created if missing).", show_default=False)],
    lang: Annotated[Optional[str], typer.Option(help="Language of headings: zh or en. [default: en]")] = None,
    orchestrator: Annotated[Optional[str], typer.Option(help="The agent allowed to write role pages.")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Create a vault from vault-template/: folders, MEMORY.md, identity, config, .gitignore, git repo.

    On an existing vault nothing changes. Example: vaultmem init ~/team-memory --lang zh --orchestrator lee
    """
    from ..vault import Vault

    s = session(ctx, vault, as_, json_)
    actor = None
    if s.agent:
        from ..models import Actor
        from ..names import check_name

        actor = Actor(check_name(s.agent, "agent name"))
    _v, change = Vault.init(path, lang=lang, orchestrator=orchestrator, actor=actor)
    d = change.details
    if d["created"]:
        human = (f"created vault {d['root']} (lang {d['lang']}, orchestrator {d['orchestrator']}), "
                 f"{len(change.paths)} files, commit {change.commit[:8] if change.commit else '-'}")
    else:
        human = change.message
    s.emit(change.to_dict(), human)


config_app = typer.Typer(help="Show or change .vaultmem/config.yaml (comments and key order are kept).",
                         no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
@handles_errors
def config_show(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Print the vault's settings."""
    from ..parse.document import plain

    s = session(ctx, vault, as_, json_)
    v = s.open()
    s.emit(plain(v.config.raw), lambda: (v.root / ".vaultmem" / "config.yaml").read_text(encoding="utf-8").rstrip())


@config_app.command("set")
@handles_errors
def config_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Dotted setting name, e.g. orchestrator or git.lock_timeout.")],
    value: Annotated[str, typer.Argument(help="New value, read as YAML (10 is a number, [a, b] a list).")],
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Change one setting; the rest of the file, comments included, stays as it was."""
    from ..parse.document import load_yaml

    s = session(ctx, vault, as_, json_)
    v = s.open()
    parsed = load_yaml(f"v: {value}", "VALUE", first_line=1)["v"]
    change = v.set_config(key, parsed, v.actor(s.agent))
    s.emit(change.to_dict(), f"set {key} = {value}" + (f" (commit {change.commit[:8]})" if change.commit else ""))


def main() -> None:
    app()
