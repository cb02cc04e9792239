"""``vaultmem journal add / consolidate / prune / days``: the journal of sessions."""

from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, session

app = typer.Typer(help="The journal: each session as it happened, one file a day (journal/YYYY-MM-DD.md), "
                       "searched only on purpose (search --journal) or as a brief's last resort.",
                  no_args_is_help=True)

DayOpt = Annotated[Optional[str], typer.Option("--date", help="The day, YYYY-MM-DD (default: today).", show_default=False)]


@app.command("add")
@handles_errors
def add(
    ctx: typer.Context,
    transcript: Annotated[str, typer.Argument(help="The transcript: Claude Code's JSONL, a JSON list of messages or turns, or Markdown 'Name: text' lines.", show_default=False)],
    session_id: Annotated[Optional[str], typer.Option("--session", help="The session's id (default: the one the transcript names, else its file name).")] = None,
    agent: Annotated[Optional[str], typer.Option(help="The agent or runtime whose session it was (shown in the journal).")] = None,
    date: DayOpt = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """File a session's transcript into the journal, one commit.

    Each turn goes under the day its time gives (--date, default today, for turns without
    one), as a list item with its speaker, where it came from (file line) and a block id;
    tool calls and results are summarised in a line; secrets become placeholders. Adding
    the same session again changes nothing; a session that grew gains its new turns. A
    line that is not JSON, or a shape vaultmem does not know, is reported with file and
    line, and nothing is filed; a line nested more than 256 levels deep is named and
    skipped, and the other turns are filed.

    \b
    Examples:
      vaultmem journal add ~/.claude/projects/myapp/3f2a….jsonl --agent claude-code
      vaultmem journal add chat.md --session standup-0412 --date 2026-04-12
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.journal.add(transcript, v.actor(s.agent), session=session_id, agent=agent, day=date)
    s.emit(change, render.journal_added)


@app.command("consolidate")
@handles_errors
def consolidate(ctx: typer.Context, date: DayOpt = None, vault: VaultOpt = None, as_: AsOpt = None,
                json_: JsonOpt = False) -> None:
    """Write the day's record at the top of its journal file, one commit.

    For each session in the order it began: the request that opened it, what was decided
    or corrected, what was in doubt, the tools it used (and how many failed) and its last
    word, each linked to its turn. Made again each time it runs. Humans and the
    orchestrator only. Example: vaultmem journal consolidate --date 2026-12-01
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.journal.consolidate(v.actor(s.agent), day=date)
    s.emit(change, render.journal_consolidated)


@app.command("prune")
@handles_errors
def prune(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say which days would go; change nothing.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Remove the day files older than journal.keep_days (0, the default: keep forever).

    One commit; git history keeps what it removes. Humans only.
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.journal.prune(v.actor(s.agent), dry_run=dry_run)
    s.emit(change, render.journal_pruned)


@app.command("days")
@handles_errors
def days(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """List the days the journal holds, oldest first."""
    s = session(ctx, vault, as_, json_)
    found = s.open().journal.days()
    s.emit(found, lambda d: "\n".join(d) if d else "the journal is empty", data={"days": found})
