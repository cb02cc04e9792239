"""``vaultmem verify / migrate / backup``: preservation — the format, upgrades, backups."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, session

backup_app = typer.Typer(help="Backups: the whole history in a git bundle, the private keys apart (docs/preservation.md).",
                         no_args_is_help=True)


@handles_errors
def verify(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Check everything the design relies on, after an upgrade or a restore: exit 0 when it all holds, 1 when not.

    The format version (an older one: run 'vaultmem migrate'), the config, every file
    parsing (pages, notes, the journal), MEMORY.md against the notes, links and block ids,
    the index on this analyzer, the logs' signatures and chains, no secret in uncommitted
    files, the journal's markers (each turn once), the skills. Example: vaultmem verify
    """
    s = session(ctx, vault, as_, json_)
    from ... import upkeep

    report = upkeep.verify(s.open())
    s.emit(report, render.vault_verified, data={k: v for k, v in report.items() if k != "skipped_files"})
    if not report["ok"]:
        raise typer.Exit(1)


@handles_errors
def migrate(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; change nothing.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Bring a vault made by an older vaultmem to this one's format, in one commit.

    Each step is listed in the commit's message; review it with 'git show', undo it with
    'git revert'. Humans only; a file it would write must have no uncommitted edit.
    Example: vaultmem migrate --dry-run
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    from ... import upkeep

    change = upkeep.migrate(v, v.actor(s.agent), dry_run=dry_run)
    s.emit(change, render.migrated)


@backup_app.command("create")
@handles_errors
def backup_create(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The bundle to write (a new file).", show_default=False)],
    keys: Annotated[Optional[Path], typer.Option("--keys", help="Also write the private signing keys to this new file (mode 0600): keep it apart from the bundle.")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Write the vault's whole history to a git bundle; its keys apart, with --keys.

    Example: vaultmem backup create ~/backups/team-memory.bundle --keys ~/private/team-memory-keys.tgz
    """
    s = session(ctx, vault, as_, json_)
    from ... import upkeep

    made = upkeep.backup_create(s.open(), path, keys=keys)
    s.emit(made, render.backup_made)


@backup_app.command("verify")
@handles_errors
def backup_verify(ctx: typer.Context,
                  path: Annotated[Path, typer.Argument(help="The bundle.", show_default=False)],
                  json_: JsonOpt = False) -> None:
    """Restore a backup into a temporary folder and run 'vaultmem verify' on it: exit 0 when it passes."""
    from ... import upkeep

    s = session(ctx, None, None, json_)
    report = upkeep.backup_verify(path)
    s.emit(report, render.backup_verified)
    if not report["ok"]:
        raise typer.Exit(1)


@backup_app.command("restore")
@handles_errors
def backup_restore(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The bundle.", show_default=False)],
    dest: Annotated[Path, typer.Argument(help="The vault to make: a new or empty folder.", show_default=False)],
    keys: Annotated[Optional[Path], typer.Option("--keys", help="The private keys' file 'backup create --keys' wrote.")] = None,
    json_: JsonOpt = False,
) -> None:
    """Make a vault at DEST from a backup (and its keys), then verify it: exit 0 when it passes.

    Example: vaultmem backup restore team-memory.bundle ~/team-memory --keys team-memory-keys.tgz
    """
    from ... import upkeep

    s = session(ctx, None, None, json_)
    report = upkeep.backup_restore(path, dest, keys=keys)
    s.emit(report, render.backup_restored)
    if not report["ok"]:
        raise typer.Exit(1)
