"""vaultmem as a Hermes Agent memory provider (``memory.provider: vaultmem``).

Hermes (``hermes-agent``) keeps one external memory provider beside its built-in
MEMORY.md / USER.md: an object implementing its ``MemoryProvider`` interface
(``agent/memory_provider.py``), driven by its ``MemoryManager``
(``agent/memory_manager.py``). This module is that object for a vault:

- ``prefetch(query)`` → the brief of the provider's agent for the turn (budgeted);
- ``sync_turn`` → never blocks: the turn goes to a background writer, which keeps what
  is worth keeping — the lasting facts said in it, spooled for the session's retention
  proposal, and a signed live-log line when the agent has a key;
- ``on_delegation(task, result)`` → a delegation under the role named in the task and
  its harvest (task, conclusion, output, key decision) from the sub-agent's result;
  what cannot be found in it goes to the review inbox, nothing is made up;
- ``on_pre_compress(messages)`` → a checkpoint of the working context, whose text is
  returned for the compression summary;
- ``on_session_end(messages)`` → a retention proposal in the review inbox
  (``inbox.retain``: ``author_kind`` by who said it, ``source`` the session);
- tools (OpenAI function format) mirroring the MCP server's: ``search_memory``,
  ``read_page``, ``read_note``, ``remember``, ``page_add``, ``log_append``, ``log_tail``,
  ``review_list`` — the same facade calls, the same review gate. A result is a JSON
  string; a library error is a JSON error (message, hint, field), never a traceback.

The provider acts as one agent of the vault (``agent`` in its settings, else
``$VAULTMEM_AGENT``, else ``hermes``) — never as the human: what it writes passes the
review gate as any agent's does. A sub-agent, cron or flush context (``agent_context``)
reads and writes nothing.

Nothing a session hands over is lost: the writer first puts each piece of work in an
outbox file (``.vaultmem/local/hermes/<instance>/``, secrets already replaced), then
into the vault, then drops the file. ``shutdown`` waits a bounded time; what is still
waiting stays in the outbox, and the next provider to start on that vault carries it
out. The outbox of a provider still running is never touched (its owner holds a lock).

Registration: ``register(ctx)`` → ``ctx.register_memory_provider(VaultmemProvider())``,
published in the entry point group ``hermes_agent.memory_providers``. Hermes 0.19
finds providers in ``$HERMES_HOME/plugins/<name>/`` only: :func:`install_plugin`
(``python -m vaultmem.adapters.hermes install``) writes the two-line folder that loads
this module there. vaultmem imports and works without ``hermes-agent``: the class
subclasses Hermes's ``MemoryProvider`` only when it is importable.

The package, one module per concern: :mod:`.provider` (the provider), :mod:`.outbox` (what
a session handed over, until it is in the vault), :mod:`.tools` (the tools), :mod:`.texts`
(what a conversation hands over), :mod:`.settings` (settings, vault, agent) and
:mod:`.install` (registration and the plugin folder).
"""

from .install import PLUGIN_INIT, PLUGIN_YAML, install_plugin, main, register
from .outbox import Outbox
from .provider import VaultmemProvider
from .settings import DEFAULT_VAULT, ENTRY_POINT_GROUP, NAME, SETTINGS_FILE, hermes_home, load_settings
from .texts import checkpoint_of, facts_in, facts_in_messages, record_fields, split_task
from .tools import TOOLS, Tool

__all__ = ["DEFAULT_VAULT", "ENTRY_POINT_GROUP", "NAME", "PLUGIN_INIT", "PLUGIN_YAML", "SETTINGS_FILE", "TOOLS", "Outbox",
           "Tool", "VaultmemProvider", "checkpoint_of", "facts_in", "facts_in_messages", "hermes_home",
           "install_plugin", "load_settings", "main", "record_fields", "register", "split_task"]

