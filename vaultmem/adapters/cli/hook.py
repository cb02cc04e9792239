"""``vaultmem hook claude EVENT``: Claude Code's hooks (see :mod:`vaultmem.adapters.claude`)."""

from typing import Annotated, Optional

import typer

from ._common import AsOpt, JsonOpt, VaultOpt, given, session

app = typer.Typer(help="Hooks for agent runtimes: read the runtime's event on stdin, always exit 0. See docs/hooks.md.",
                  no_args_is_help=True)


@app.command("claude", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def claude(
    ctx: typer.Context,
    event: Annotated[Optional[str], typer.Argument(
        help="SessionStart, UserPromptSubmit, SubagentStart, SubagentStop, PreCompact, Stop or SessionEnd.",
        show_default=False)] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Run a Claude Code hook: the event's JSON payload on standard input, what Claude Code
    adds to the context (hookSpecificOutput.additionalContext) on standard output. Always
    exits 0: an error is one line on standard error and the session goes on.

    The vault: --vault, $VAULTMEM_VAULT, else the nearest vault above $CLAUDE_PROJECT_DIR,
    else above the session's folder. The hook acts as --as, $VAULTMEM_AGENT, the setting
    hooks.claude.agent, else the vault's orchestrator; an agent that is not the
    orchestrator only proposes. See docs/hooks.md.

    Example (in .claude/settings.json): vaultmem hook claude SessionStart
    """
    s = session(ctx, given(vault), given(as_), json_)
    from ..claude import main

    raise typer.Exit(main(given(event), s.vault, s.agent, extra=list(ctx.args)))
