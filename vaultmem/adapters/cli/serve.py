"""``vaultmem mcp``: serve the vault to an agent runtime over MCP (stdio)."""

import typer

from ...errors import VaultmemError
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, report, session


@handles_errors
def mcp(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False,
        watch: bool = typer.Option(True, "--watch/--no-watch",
                                   help="Follow file events (Linux) so that a search or brief re-reads only the "
                                        "files that changed; --no-watch walks the vault before each one, as the "
                                        "CLI does (for a vault on a network drive another machine edits)"),
        claude: bool = typer.Option(False, "--claude",
                                    help="Act as a Claude Code session's agent, as 'vaultmem hook claude' does: "
                                         "--as, else $VAULTMEM_AGENT, else the setting hooks.claude.agent, else "
                                         "the orchestrator — never as the human (whose writes skip review). "
                                         "'vaultmem install claude' and the plugin start the server so.")) -> None:
    """Run an MCP server on standard input and output for an agent runtime (Claude Code,
    Claude Desktop, Cursor, Hermes …) until it closes the connection.

    The server keeps the vault and its index open between calls. Its writes are by --as
    (or $VAULTMEM_AGENT), so an agent's facts and page entries wait in the review inbox,
    as with every other command. Logs go to standard error; standard output carries the
    protocol only. Between calls it follows the vault's file events (Linux), so each
    search or brief re-reads only what changed; --no-watch walks the vault first instead.
    See docs/mcp.md.

    Example: claude mcp add vaultmem -- /path/to/vaultmem mcp --vault /path/to/vault --as lee
    """
    from ..mcp_front import current

    s = session(ctx, vault, as_, json_)
    try:
        v = s.open()  # a missing vault or a bad --as is said here
        agent = v.actor(s.agent).name if s.agent else None
        if claude:
            from ..claude import acting

            agent = acting(v, s.agent).name
    except VaultmemError as exc:
        if current() is None:  # no handshake answered yet: the error ends the command
            raise
        # the launcher's front has answered the handshake: the error is said on stderr now,
        # and to each tool call, until the client closes the connection
        from .. import edge
        from ..mcp import serve

        report(exc, False, ctx)
        serve(None, failure=exc)
        raise typer.Exit(edge.exit_code(exc)) from None
    from ..mcp import serve

    serve(v, agent, watch=watch)
    if current() is not None:
        # the server has stopped and closed the vault: what is left is the interpreter's
        # teardown of the SDK's modules (~0.1 s), which a host stopping its servers with
        # SIGINT (Claude Code) would wait out — end at once, with what was written flushed
        import os
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
