"""``vaultmem mcp``: the vault as a stdio MCP server (the official ``mcp`` SDK, 2.x).

One process keeps one :class:`vaultmem.Vault` — and its search index — open between
calls: that is its speed over a fresh CLI process. It stays correct while files change
under it (an edit in Obsidian, a ``git pull``, another process's commit): every search
and brief first refreshes what changed, as the CLI does.

Each tool is one library call, as each CLI command is: the same names for its
parameters as the command's arguments, the same review gate (the server acts as the
agent given by ``--as``, or ``$VAULTMEM_AGENT``, else as the human), the same readable
text (the CLI's renderers) beside structured output (the CLI's ``--json`` shape). A
library error becomes an MCP tool error (``is_error``) whose text carries its message,
hint and field, from :mod:`vaultmem.adapters.edge` — never a traceback, and never a secret
it was given. Logs go to stderr: stdout carries the protocol only.

The package: :mod:`.server` (the server, its vault and lock, the hooks' warm path),
:mod:`.tools` (each tool a call of the facade), :mod:`.schemas` (what each returns),
:mod:`.results` (an answer or an error) and :mod:`.wire` (the lines a client sends, the
answers written back).
"""

from .results import INSTRUCTIONS, error_result
from .server import CLOSE_WAIT, VaultServer, serve
from .wire import front_streams, rejection

__all__ = ["CLOSE_WAIT", "INSTRUCTIONS", "VaultServer", "error_result", "front_streams", "rejection", "serve"]

