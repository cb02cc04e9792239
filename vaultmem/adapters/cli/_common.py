"""What every command shares: the global options, opening the vault, output, errors.

A command is: options → one library call → ``Session.emit(result, renderer)``, with a
renderer from :mod:`.render`. Errors are answered by :mod:`vaultmem.adapters.edge`, the
one place every adapter shares: people get ``error: file:line: --flag: message`` and a
hint on stderr, programs (``--json``) get ``{"error": {...}}`` on stdout; either way the
exit code is the error's own. What the CLI adds is its word for the input that was wrong
(:mod:`.fields`).
"""

from __future__ import annotations

import copy
import errno
import functools
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import click
import typer

from .. import edge
from ...errors import BadInput, PermissionRefused, VaultmemError
from .fields import option_for

VaultOpt = Annotated[
    Optional[Path],
    typer.Option("--vault", help="The vault folder. Default: $VAULTMEM_VAULT, else the nearest vault above the current folder.",
                 show_default=False),
]
AsOpt = Annotated[
    Optional[str],
    typer.Option("--as", help="The agent making the change (git author). Default: $VAULTMEM_AGENT, else you, the human.",
                 show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print stable JSON on stdout instead of text.")]


@dataclass
class Session:
    """The global options, merged: a command's own flags win over the group's."""

    vault: Path | None = None
    agent: str | None = None
    json: bool = False
    opened: Any = field(default=None, repr=False)
    ahead: Any = field(default=None, repr=False)  # the launcher's walk (walk.WalkAhead), if any

    def open(self):
        from ...vault import Vault

        self.opened = Vault.open(self.vault, ahead=self.ahead)
        return self.opened

    def warnings(self, result: Any = None) -> list[str]:
        """What the command kept out of the vault (secrets replaced by placeholders), as
        the result it emits says: its ``warnings`` (each part's, for a tuple of results)."""
        parts = result if isinstance(result, tuple) else (result,)
        found = [w for part in parts for w in (getattr(part, "warnings", None) or [])]
        return list(dict.fromkeys(found))  # a decision and its live-log note may say the same

    def proposal_note(self, result: Any) -> str | None:
        """For a change filed for review only because ``VAULTMEM_AGENT`` made the command an
        agent's (no ``--as``): why it waits, and how to act as yourself."""
        agent = acting_agent(self.agent)
        parts = result if isinstance(result, tuple) else (result,)
        if agent is None or agent[1] != ENV_AGENT or not any(getattr(p, "action", None) == "propose" for p in parts):
            return None
        return (f"{ENV_AGENT}={agent[0]} is set, so this ran as agent {agent[0]} and waits for review; "
                f"to act as yourself, unset {ENV_AGENT}")

    def skipped(self, result: Any = None) -> list[dict]:
        """The files a read could not draw on, as the result it emits says (a search's
        hits, a brief: their ``skipped_files``), each once."""
        parts = result if isinstance(result, tuple) else (result,)
        found = {p["path"]: p for part in parts for p in (getattr(part, "skipped_files", None) or [])}
        return list(found.values())

    def emit(self, result: Any, render: Callable[[Any], str] | str, *, data: Any = None) -> None:
        """Print ``result``: ``render(result)`` for people (a ``str`` as it is), its
        ``to_dict()`` with ``--json`` (or ``data``, when the JSON is not the result's own),
        its warnings (``warning: …`` lines on stderr, or a ``"warnings"`` key) and the
        files it skipped (a line each on stderr, at most :data:`MAX_SKIPPED_LINES`, or a
        ``"problems"`` list)."""
        if data is None:
            data = result.to_dict() if hasattr(result, "to_dict") else result
        warnings = self.warnings(result)
        skipped = self.skipped(result)
        if self.json:
            if isinstance(data, dict):
                if warnings:
                    data = {**data, "warnings": warnings}
                if skipped or any(hasattr(part, "skipped_files") for part in
                                  (result if isinstance(result, tuple) else (result,))):
                    data = {**data, "problems": skipped}
            echo_json(data)
        else:
            text = render(result) if callable(render) else render
            if text:
                echo(text)
            for warning in warnings:
                echo(f"warning: {warning}", err=True)
            if (note := self.proposal_note(result)) is not None:
                echo(f"note: {note}", err=True)
            for line in skipped_lines(skipped, warnings):
                echo(line, err=True)


def echo(text: str, err: bool = False) -> None:
    """Print a line for people — the one way the CLI prints text. What vault files hold
    (a note's escape sequences, a bidi override) is shown, never obeyed by the terminal:
    :func:`vaultmem.adapters.edge.printable`."""
    typer.echo(edge.printable(text), err=err)


def echo_json(data: Any, indent: int | None = 2) -> None:
    """Print ``data`` as JSON on stdout (:func:`vaultmem.adapters.edge.json_text`)."""
    typer.echo(edge.json_text(data, indent))


MAX_SKIPPED_LINES = 10


def skipped_lines(skipped: list[dict], warnings: list[str]) -> list[str]:
    """One ``warning: FILE:LINE: …`` line per file a read skipped (not those a warning
    already names), at most :data:`MAX_SKIPPED_LINES`, then how many more there are."""
    left = [p for p in skipped if not any(p["path"] in w for w in warnings)]
    lines = []
    for p in left[:MAX_SKIPPED_LINES]:
        where = edge.plain_name(p["path"]) + (f":{p['line']}" if p.get("line") else "")
        said = "indexed in part" if p.get("partial") else "cannot be read, not searched"
        lines.append(f"warning: {where}: {said}: {' '.join(str(p['message']).split())}")
    if len(left) > MAX_SKIPPED_LINES:
        lines.append(f"warning: … and {len(left) - MAX_SKIPPED_LINES} more files cannot be read "
                     f"('vaultmem index' lists them all)")
    return lines


def session(ctx: typer.Context, vault: Path | None, as_: str | None, json_: bool) -> Session:
    base: Session = ctx.find_root().obj or Session()
    return Session(
        vault=vault if vault is not None else base.vault,
        agent=as_ if as_ is not None else base.agent,
        json=json_ or base.json,
        ahead=base.ahead,
    )


def command_name(ctx: click.Context | None) -> str | None:
    """The command as typed, without the program: ``remember``, ``log append``."""
    if ctx is None:
        return None
    names = []
    while ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names)) or None


def option(exc: VaultmemError, ctx: click.Context | None = None) -> str | None:
    """The CLI's word for the input ``exc`` is about (its ``field``): the flag or argument
    of the command that ran, as :func:`.fields.option_for` finds it."""
    if exc.field is None:
        return None
    params = ctx.command.params if ctx is not None and ctx.command is not None else None
    return option_for(exc.field, command_name(ctx), params)


ENV_AGENT = "VAULTMEM_AGENT"


def acting_agent(flag: str | None) -> tuple[str, str] | None:
    """Who a command acted as, and where that came from: (name, ``"--as"``) when the flag
    named the agent, (name, ``"VAULTMEM_AGENT"``) when the environment did; None for the
    human (as :meth:`vaultmem.Vault.actor` decides)."""
    if flag:
        return flag, "--as"
    from_env = os.environ.get(ENV_AGENT)
    return (from_env, ENV_AGENT) if from_env else None


def as_yourself(agent: tuple[str, str]) -> str:
    """How to run a command as the human instead of the agent it ran as."""
    name, source = agent
    if source == ENV_AGENT:
        return (f"{ENV_AGENT}={name} is set, so this ran as agent {name}: to act as yourself, "
                f"unset it (unset {ENV_AGENT}) or run 'env -u {ENV_AGENT} vaultmem …'")
    return f"this ran as agent {name} (--as {name}): to act as yourself, run it without --as"


def with_agent_hint(err: VaultmemError, agent: tuple[str, str] | None) -> VaultmemError:
    """A refusal of what an agent may not do, with how to act as yourself added to its
    hint — naming --as or VAULTMEM_AGENT, whichever made the command an agent's."""
    if agent is None or not isinstance(err, PermissionRefused):
        return err
    told = copy.copy(err)
    told.hint = f"{err.hint}; {as_yourself(agent)}" if err.hint else as_yourself(agent)
    return told


def report(exc: BaseException, as_json: bool, ctx: click.Context | None = None, flag: str | None = None,
           agent: tuple[str, str] | None = None) -> None:
    """Tell the user about ``exc`` (a VaultmemError, or an OSError the edge words), on
    stdout as JSON or on stderr as text. ``flag``: the option it is about, when the error
    has no field (a usage error). ``agent``: who the command acted as, and where that
    came from (:func:`acting_agent`), for a refusal's hint."""
    err = with_agent_hint(edge.as_error(exc), agent)
    flag = option(err, ctx) or flag
    if as_json:
        data = {"error": edge.error_dict(err, option=flag)}
        echo_json({"error": {k: without_secrets(v) if isinstance(v, str) else v for k, v in data["error"].items()}})
    else:
        echo(without_secrets(edge.error_text(err, flag)), err=True)


def without_secrets(text: str) -> str:
    """An error message never repeats a secret it was given (a key passed where a type
    or a number was wanted): what the detector finds is replaced by its placeholder."""
    from ...vault import without_secrets as scrubbed

    return scrubbed(given(text))


def usage_error(exc: click.ClickException, as_json: bool) -> int:
    """Report a usage error click found (a missing option, a value of the wrong type, an
    unknown option or command) as every other error is reported — ``{"error": …}`` on
    stdout with ``--json``, ``error: …`` and a hint on stderr otherwise; its exit code (2)."""
    ctx = getattr(exc, "ctx", None)
    param = getattr(exc, "param", None)
    flag = getattr(exc, "option_name", None)  # an unknown option, one without its value
    if param is not None:
        flag = param.opts[0] if isinstance(param, click.Option) and param.opts else param.human_readable_name
    hint = "run the command with --help to see its arguments and options"
    if ctx is not None:
        usage = ctx.get_usage().replace("Usage: ", "", 1).strip()
        hint = f"usage: {usage}; see '{ctx.command_path} --help'"
    report(edge.UsageError(exc.format_message(), hint=hint), as_json, None, flag if as_json else None)
    return exc.exit_code


# -- text arguments that begin with a dash ------------------------------------------------------
# A fact may begin with '-' ("-----BEGIN …", "- a list item"): click would read it as an
# unknown option (and quote it back in its error). An argument that cannot be an option's
# name — it has a space or a newline in it, or three dashes — is held back under a token
# while click parses, and each command gets it back (:func:`handles_errors`).
_OPTION_NAME = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_-]*")
_TOKEN = f"@vaultmem:text:{os.urandom(6).hex()}:"
_held: dict[str, str] = {}


def hold_text_args(args: list[str]) -> list[str]:
    """``args`` with every argument that starts with '-' but is no option (see above)
    replaced by a token; everything after ``--`` as it is."""
    out = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + list(args[i:])
        if len(arg) > 1 and arg.startswith("-") and not _OPTION_NAME.fullmatch(arg.split("=", 1)[0]):
            token = f"{_TOKEN}{len(_held)}"
            _held[token] = arg
            arg = token
        out.append(arg)
    return out


def given(value: Any) -> Any:
    """``value`` (a parameter's, or a message) with every held argument back in it."""
    if isinstance(value, str) and _TOKEN in value:
        return re.sub(re.escape(_TOKEN) + r"\d+", lambda m: _held.get(m.group(), m.group()), value)
    if isinstance(value, (list, tuple)):
        return type(value)(given(v) for v in value)
    if isinstance(value, Path) and _TOKEN in str(value):
        return Path(given(str(value)))
    return value


def handles_errors(fn: Callable) -> Callable:
    """Run a command; turn a VaultmemError, or an OSError the library did not expect, into
    a message and the error's exit code — never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        kwargs = {k: given(v) for k, v in kwargs.items()}
        try:
            return fn(*args, **kwargs)
        except (VaultmemError, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                raise  # the reader went away (| head): click ends quietly
            ctx = kwargs.get("ctx")
            base = ctx.find_root().obj if ctx is not None and ctx.find_root().obj else Session()
            agent = acting_agent(kwargs.get("as_") or base.agent)
            report(exc, bool(kwargs.get("json_")) or base.json, ctx, agent=agent)
            raise typer.Exit(edge.exit_code(exc)) from None
        except KeyboardInterrupt:
            echo("interrupted", err=True)
            raise typer.Exit(edge.INTERRUPTED) from None

    return wrapper


def read_text_arg(value: str) -> str:
    """TEXT arguments: '-' reads standard input."""
    return stdin_text() if value == "-" else value


def stdin_text() -> str:
    """Standard input, read whole as UTF-8 text (whatever the locale; line ends as text
    mode gives them: a CRLF or a CR is a newline); a byte that is not UTF-8 is refused
    with its line (no note or commit could hold it)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream put in its place (a test's, an embedding program's)
        text = sys.stdin.read()
    else:
        data = stream.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise BadInput(f"standard input holds byte 0x{data[exc.start]:02x}, which is not UTF-8 text "
                           f"(line {line})", hint="give the text as UTF-8 (most editors and terminals do by default)"
                           ) from None
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    from ...limits import check_unicode

    return check_unicode("standard input", text)
