"""The ``vaultmem`` command line: a thin client of :class:`vaultmem.Vault`.

Each command parses its options, makes one library call and renders the result
(text for people, ``--json`` for programs). Command groups live in their own modules,
and a command's module is imported and its options built only when it runs (or when
help lists it): a ``vaultmem brief`` never pays for the other forty commands.

The command modules evaluate their annotations when they are imported (no ``from
__future__ import annotations``): typer reads a command's parameters twice as it builds
it, and evaluated each annotation string anew both times, which cost a cold ``search``
(17 parameters) ~3 ms more than evaluating them once at import.
"""

import importlib
from typing import Annotated

import click
import typer
from typer.core import TyperGroup

from ...errors import VaultmemError
from ._common import AsOpt, JsonOpt, Session, VaultOpt

# name → (module, attribute): a command function, or a typer app for a command group.
# Help lists them in this order.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("setup", "init"),
    "config": ("setup", "config_app"),
    "page": ("page", "app"),
    "remember": ("notes", "remember"),
    "forget": ("notes", "forget"),
    "conflicts": ("notes", "conflicts"),
    "gc": ("notes", "gc"),
    "restore": ("notes", "restore"),
    "compact": ("notes", "compact"),
    "links": ("notes", "links"),
    "timeline": ("notes", "timeline"),
    "doctor": ("notes", "doctor"),
    "stats": ("notes", "stats"),
    "index": ("recall", "index"),
    "search": ("recall", "search"),
    "brief": ("recall", "brief"),
    "dispatch": ("recall", "dispatch"),
    "eval": ("recall", "eval_"),
    "watch": ("recall", "watch"),
    "keys": ("coord", "keys_app"),
    "log": ("coord", "log_app"),
    "decide": ("coord", "decide"),
    "state": ("coord", "state_app"),
    "checkpoint": ("coord", "checkpoint_app"),
    "sync": ("coord", "sync"),
    "delegate": ("lifecycle", "delegate"),
    "harvest": ("lifecycle", "harvest"),
    "audit": ("lifecycle", "audit"),
    "ask": ("lifecycle", "ask"),
    "todo": ("lifecycle", "todo"),
    "history": ("lifecycle", "history"),
    "retain": ("review", "retain"),
    "review": ("review", "app"),
    "import": ("imports", "app"),
    "journal": ("journal", "app"),
    "skill": ("skill", "app"),
    "verify": ("preserve", "verify"),
    "migrate": ("preserve", "migrate"),
    "backup": ("preserve", "backup_app"),
    "mcp": ("serve", "mcp"),
    "hook": ("hook", "app"),
    "install": ("install", "install_app"),
    "uninstall": ("install", "uninstall_app"),
    "check": ("check", "check"),
}


def _build(name: str) -> click.Command:
    module, attr = COMMANDS[name]
    target = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
        return flowed(typer.main.get_command(holder).commands[name])  # type: ignore[attr-defined]
    holder.command(name)(target)
    return flowed(typer.main.get_command(holder))  # one command: the command itself


def flowed(command: click.Command) -> click.Command:
    """``command`` (and its subcommands) with help whose paragraphs flow: a docstring's
    line breaks inside a paragraph are spaces, so help wraps at the terminal's width
    instead of breaking mid-sentence. Blank lines still part paragraphs; a paragraph
    opened by a ``\\b`` line (click's mark) is kept line by line: a table, examples."""
    def flow(para: str) -> str:
        lines = para.strip("\n").splitlines()
        if lines and lines[0].strip() == "\b":
            return "\n".join(line.rstrip() for line in lines[1:])
        return " ".join(line.strip() for line in para.strip().splitlines())

    if command.help:
        command.help = "\n\n".join(flow(para) for para in command.help.strip().split("\n\n"))
    for sub in getattr(command, "commands", {}).values():
        flowed(sub)
    return command


class LazyGroup(TyperGroup):
    """The top-level group: builds a command from :data:`COMMANDS` when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS) + [n for n in self.commands if n not in COMMANDS]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            self.add_command(_build(name), name)
        return self.commands.get(name)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's main, but every usage error is answered as other errors are (on stdout
        as JSON with ``--json``) and a text argument may begin with a dash."""
        import sys

        from ._common import echo, hold_text_args, usage_error

        args = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in (args[: args.index("--")] if "--" in args else args)
        try:
            code = super().main(hold_text_args(args), prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # a group without its command: its help
            if not standalone_mode:
                raise
            from typer import rich_utils

            rich_utils.rich_format_error(exc)
            code = exc.exit_code
        except click.ClickException as exc:
            _hint_once(exc)
            if not standalone_mode:
                raise
            code = usage_error(exc, as_json)
        except click.Abort:
            if not standalone_mode:
                raise
            echo("aborted", err=True)
            code = 1
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return click.Group.resolve_command(self, ctx, args)
        except click.UsageError as exc:
            from difflib import get_close_matches  # only for this message

            if args and (matches := get_close_matches(args[0], self.list_commands(ctx))):
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise


def _hint_once(exc: click.ClickException) -> None:
    """A mistyped command's "Did you mean …?" said once: typer's groups (and
    :meth:`LazyGroup.resolve_command`) put it in the message, and click 8.4+ adds its own
    (``NoSuchCommand.possibilities``) when the message is formatted."""
    if getattr(exc, "possibilities", None) and "Did you mean" in getattr(exc, "message", ""):
        exc.possibilities = None  # type: ignore[misc]


app = typer.Typer(
    name="vaultmem",
    cls=LazyGroup,
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


def _print_version(value: bool) -> None:
    if value:
        from ... import __version__

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
    from ._common import given

    vault, as_ = given(vault), given(as_)
    launched = ctx.obj if isinstance(ctx.obj, Session) else Session()  # what main() was handed
    ctx.obj = Session(vault=vault, agent=as_, json=json_, ahead=launched.ahead)


def main(ahead=None, args: list[str] | None = None, prog_name: str | None = None) -> None:
    """Run the command line on ``args`` (by default the process's arguments; ``prog_name``,
    what usage lines call the program, by default as click finds it). ``ahead``: the walk
    the launcher started for the vault the command names (``vaultmem.walk.WalkAhead``),
    kept on the session for the vault it opens."""
    try:
        app(args=args, prog_name=prog_name, obj=Session(ahead=ahead))
    except (VaultmemError, OSError) as exc:  # raised outside any command (commands answer their own)
        import sys

        from .. import edge
        from ._common import report

        report(exc, "--json" in (sys.argv[1:] if args is None else args))
        sys.exit(edge.exit_code(exc))
