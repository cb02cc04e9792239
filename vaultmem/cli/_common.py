"""What every command shares: the global options, opening the vault, output, errors.

Library errors are translated to user messages here and nowhere else: people get
``error: file:line: message`` and a hint on stderr, programs (``--json``) get
``{"error": {...}}`` on stdout; either way the exit code is the error's own.
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from ..errors import VaultmemError

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
        from ..vault import Vault

        self.opened = Vault.open(self.vault, ahead=self.ahead)
        return self.opened

    def warnings(self) -> list[str]:
        """What the command kept out of the vault (secrets replaced by placeholders)."""
        found = self.opened.redactions if self.opened is not None else []
        return [f"redacted a {f.type} in the {f.field}: stored as {f.placeholder}" for f in found]

    def emit(self, data: Any, human: str | Callable[[], str]) -> None:
        warnings = self.warnings()
        if self.json:
            if warnings and isinstance(data, dict):
                data = {**data, "warnings": warnings}
            typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
        else:
            text = human() if callable(human) else human
            if text:
                typer.echo(text)
            for warning in warnings:
                typer.echo(f"warning: {warning}", err=True)


def proposed(change) -> str:
    """How a change that went to the review inbox reads for a person."""
    lines = []
    for item in change.details["items"]:
        if item["status"] == "approved":
            lines.append(f"{item['id']}: approved at once (trusted agent, user-stated) → {item['result']}")
            continue
        marks = (["quarantined: third-party"] if item["quarantined"] else []) + \
            ([f"flagged: {'; '.join(item['flags'])}"] if item["flags"] else [])
        lines.append(f"{item['id']}: {item['op']} {item['summary']} — waiting for review"
                     + (f" ({', '.join(marks)})" if marks else ""))
    pending = change.details["pending"]
    if pending:
        lines.append(f"filed in inbox/ (commit {change.commit[:8]}); a reviewer decides with: "
                     f"vaultmem review show ID / approve ID / reject ID --reason …")
    return "\n".join(lines)


def described(change, done: Callable[[], str]) -> str | Callable[[], str]:
    """``done`` for a change that was made, :func:`proposed` for one filed for review."""
    return (lambda: proposed(change)) if change.action == "propose" else done


def session(ctx: typer.Context, vault: Path | None, as_: str | None, json_: bool) -> Session:
    base: Session = ctx.find_root().obj or Session()
    return Session(
        vault=vault if vault is not None else base.vault,
        agent=as_ if as_ is not None else base.agent,
        json=json_ or base.json,
        ahead=base.ahead,
    )


def report(exc: VaultmemError, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"error": exc.to_dict()}, ensure_ascii=False, indent=2))
        return
    where = exc.where()
    lines = [f"error: {where + ': ' if where else ''}{exc.message}"]
    if exc.hint:
        lines.append(f"  hint: {exc.hint}")
    typer.echo("\n".join(lines), err=True)


def handles_errors(fn: Callable) -> Callable:
    """Run a command; turn a VaultmemError into a message and the error's exit code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except VaultmemError as exc:
            ctx = kwargs.get("ctx")
            base = ctx.find_root().obj if ctx is not None and ctx.find_root().obj else Session()
            report(exc, bool(kwargs.get("json_")) or base.json)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None

    return wrapper


def read_text_arg(value: str) -> str:
    """TEXT arguments: '-' reads standard input."""
    return sys.stdin.read() if value == "-" else value
