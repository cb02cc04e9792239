"""The server: one open vault, its index kept warm, tool calls one at a time under a lock,
file events followed, and the hooks' warm path."""

from __future__ import annotations

import contextlib
import gc
import inspect
import logging
import sys
import threading
from typing import Callable

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, ToolAnnotations

from ... import layout
from ...errors import NotFound, VaultmemError
from ...vault import Vault, without_secrets
from .. import edge
from .results import INSTRUCTIONS, call_error, error_result
from .schemas import flat
from .tools import register_tools
from .wire import front_streams

log = logging.getLogger("vaultmem.mcp")


CLOSE_WAIT = 30.0  # seconds a closing server waits for the call or hook in progress


class VaultServer(MCPServer):
    """An MCP server over one open vault. ``agent``: who its writes are by (``--as``;
    None: ``$VAULTMEM_AGENT``, else the human, as for the CLI)."""

    def __init__(self, vault: Vault | None, agent: str | None = None, watch: bool = False,
                 failure: BaseException | None = None, owns_process: bool = False) -> None:
        """``watch``: follow file-system events (:class:`ChangeMonitor`, Linux) so that a
        search or brief re-reads only the files that changed instead of walking the vault
        first; ``vaultmem mcp`` does. Stop it with :meth:`close`. ``vault`` None: the vault
        could not be opened (``failure`` says why) — the server still lists its tools, and
        every call is answered with that error. ``owns_process``: the server is the
        process (``vaultmem mcp``): after the first call on an open vault, what is alive
        then (the index, its manifest: ~100,000 objects at 50,000 notes) is frozen out of
        the garbage collector's full passes, each of which otherwise stalled a call ~30 ms
        every few hundred calls (:meth:`_settle_memory`)."""
        from ... import __version__

        super().__init__("vaultmem", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
        self.parameters: dict[str, tuple[str, ...]] = {}  # tool → its parameters' names, in order
        self._flat: dict[str, dict] | None = None  # tool → its output schema as published (list_tools)
        self.vault = vault
        self.agent = agent
        self.failure = failure
        if vault is not None:
            self.vault.actor(agent)  # a bad --as fails now, not at the first write
            vault.stays_open()
        self._settings = self._settings_stamp()
        self._lock = threading.Lock()  # tools run on worker threads: one call at a time
        self._owns_process = owns_process
        self._frozen: tuple | None = None  # (vault, its index's generation) when frozen (_settle_memory)
        self.monitor = None
        self.warm = None  # the hooks' warm path (listen_for_hooks)
        if watch and vault is not None:
            from ..watch import ChangeMonitor

            monitor = ChangeMonitor(vault.root)
            if monitor.start():
                self.monitor = monitor
                vault.follow_changes(monitor)
        register_tools(self)

    def listen_for_hooks(self) -> str | None:
        """Answer Claude Code's hooks for this vault on a Unix socket (:mod:`.warm`): a
        hook then runs here, on the open and watched vault, one call at a time with the
        tools. None, or why not (the hooks then run cold)."""
        if self.vault is None:
            return "no vault open"
        from .. import claude, warm

        root = self.vault.root.resolve()

        def answer(request: dict, ready) -> dict:
            @contextlib.contextmanager
            def opener(found):
                if found.resolve() != root:
                    raise warm.Declined("another vault")
                if not self._lock.acquire(timeout=warm.LOCK_WAIT):
                    raise warm.Declined("busy")
                try:
                    if not ready():
                        raise warm.Declined("the hook runs cold")
                    yield self.current()
                finally:
                    self._lock.release()

            return claude.answer(request, opener)

        server = warm.WarmServer(root, answer)
        why = server.start()
        if why is None:
            self.warm = server
        return why

    def close(self) -> None:
        """Stop following file-system events and answering hooks; the vault's index is closed."""
        if self.warm is not None:
            self.warm.stop()  # no new hook; one running now finishes before the index closes
            self.warm = None
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        if self.vault is not None:
            held = self._lock.acquire(timeout=CLOSE_WAIT)
            try:
                self.vault.close()
            finally:
                if held:
                    self._lock.release()
        if self._frozen is not None:  # what the server held may be collected again
            self._frozen = None
            gc.unfreeze()

    def _settings_stamp(self) -> tuple | None:
        if self.vault is None:
            return None
        try:
            st = (self.vault.root / layout.CONFIG_PATH).stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns

    def current(self) -> Vault:
        """The open vault, reopened when its settings file changed since the last call
        (``config set``, an edit, a pull): who is orchestrator, the memory types, the
        index engine are then as a fresh CLI process would read them. Otherwise the same
        Vault, its index kept open and warm."""
        if self.vault is None:
            raise self.failure or VaultmemError("no vault")
        stamp = self._settings_stamp()
        if stamp != self._settings:
            fresh = Vault(self.vault.root)  # a broken settings file is the call's error
            fresh.stays_open()
            self.vault.close()
            self.vault, self._settings = fresh, stamp
            if self.monitor is not None:
                self.monitor.unsure()  # the engine may have changed: the first refresh walks
                fresh.follow_changes(self.monitor)
        return self.vault

    def run_call(self, fn: Callable[[Vault], CallToolResult]) -> CallToolResult:
        """Run one tool's library call on the open vault; any error as a tool error."""
        with self._lock:
            try:
                result = fn(self.current())
            except Exception as exc:  # noqa: BLE001 - every error is answered, none escapes as a traceback
                return error_result(exc)
            self._settle_memory()
            return result

    def _settle_memory(self) -> None:
        """After the first call on an open vault (its index and manifest are loaded then):
        what the collector tracks is frozen — its full passes no longer walk it. The first
        time as it is (a full pass first would delay the first answer by as much as it
        saves later; what is garbage then stays, once). When the vault was opened again
        (its settings changed) or its index moved to a new generation (a rebuild), what was
        frozen is thawed and a full pass frees the vault or index replaced — a Whoosh
        searcher and its engine refer to each other, so only a full pass frees their open
        files — before what is alive is frozen again."""
        if not self._owns_process or self.vault is None:
            return
        now = (self.vault, self.vault.index.opened_generation())
        if self._frozen is not None and self._frozen[0] is now[0] and self._frozen[1] == now[1]:
            return
        thaw, self._frozen = self._frozen is not None, now  # (the replaced vault no longer held here)
        if thaw:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

    def read(self, fn: Callable[[Vault], str]) -> str:
        """A resource's text; a missing file as not found, any error without a traceback."""
        with self._lock:
            try:
                return fn(self.current())
            except NotFound as exc:
                raise ResourceNotFoundError(without_secrets(edge.one_line(exc))) from None
            except Exception as exc:  # noqa: BLE001
                if isinstance(edge.as_error(exc), edge.Unexpected):
                    log.error("unexpected error reading a resource", exc_info=exc)
                raise ResourceError(without_secrets(edge.one_line(exc))) from None

    async def get_prompt(self, name, arguments=None, context=None):
        """The prompt, or an invalid-params error that says what is missing — never a
        traceback on stderr (the SDK's own error for a missing argument is one)."""
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as exc:
            prompts = {p.name: p for p in await self.list_prompts()}
            if name not in prompts:
                message = f"no prompt {name!r}"
                hint = f"the prompts: {', '.join(prompts)} (list_prompts shows their arguments)"
            else:
                missing = [a.name for a in prompts[name].arguments or () if a.required and a.name not in (arguments or {})]
                message = f"{name}: " + (f"missing the argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
                                         if missing else str(exc))
                hint = "give every required argument (list_prompts shows them)"
            raise MCPError(INVALID_PARAMS, without_secrets(message), data={"hint": hint}) from None

    async def run_stdio_async(self) -> None:
        """Serve on stdio, on the launcher's front (:mod:`.mcp_front`, which answered the
        handshake) or a wire of its own: each line read once and handed to the SDK
        server, a line it could not read answered with a JSON-RPC error, not dropped
        (:func:`.wire.front_streams`). SIGINT or SIGTERM ends it as the end of stdin does:
        the calls read so far finish and their answers are written (for up to CLOSE_WAIT
        seconds), the server stops, exit code 0."""
        from .. import mcp_front

        front = mcp_front.current() or mcp_front.wire()
        front.serving()
        async with front_streams(front, CLOSE_WAIT) as (read_stream, write_stream):
            await self._lowlevel_server.run(read_stream, write_stream,
                                            self._lowlevel_server.create_initialization_options())

    async def list_tools(self):
        """The tools, each output schema published flat (:func:`schemas.flat`): what the
        SDK derives from the typed results, in the shape a client checks fastest."""
        tools = await super().list_tools()
        if self._flat is None:
            self._flat = {t.name: flat(t.output_schema) for t in tools if t.output_schema}
        return [t.model_copy(update={"output_schema": self._flat.get(t.name, t.output_schema)}) for t in tools]

    def tool_of(self, annotations: ToolAnnotations):
        """Register a tool (``self.tool``) and remember its parameters' names."""
        def register(fn):
            self.parameters[fn.__name__] = tuple(inspect.signature(fn).parameters)
            return self.tool(annotations=annotations)(fn)
        return register

    async def call_tool(self, name, arguments, context=None):
        known = self.parameters.get(name)
        unknown = [a for a in arguments or {} if known is not None and a not in known]
        if unknown:  # the SDK would drop them without a word: a misspelt filter would be ignored
            named = ", ".join(repr(without_secrets(a)) for a in unknown)
            return error_result(edge.UsageError(
                f"{name}: unknown argument{'s' if len(unknown) > 1 else ''} {named}", field=without_secrets(unknown[0]),
                hint=f"{name} takes: {', '.join(known)}"))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:  # unknown tool, or arguments that do not fit its schema
            return error_result(call_error(name, exc))


def serve(vault: Vault | None, agent: str | None = None, watch: bool = True,
          failure: BaseException | None = None) -> None:
    """Run the server on stdio until the client closes it (or SIGINT, SIGTERM). Logs go
    to stderr. ``watch``: follow file events between calls (see :class:`VaultServer`).
    ``vault`` None: the vault could not be opened (``failure``): each call says why."""

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="vaultmem mcp: %(levelname)s %(message)s")
    server = VaultServer(vault, agent, watch=watch, failure=failure, owns_process=True)
    if watch and (why := server.listen_for_hooks()) is not None and vault is not None:
        log.info("hooks run cold: %s", why)
    # the secret detector's plugins take ~0.2 s to import: load them now, beside the
    # handshake, rather than in the first call whose text could hold a secret
    threading.Thread(target=without_secrets, args=("ghp_" + "x1" * 18,), daemon=True).start()
    try:
        server.run("stdio")
    finally:
        from .. import mcp_front

        front = mcp_front.current()
        if front is not None:
            front.end()  # no worker thread is left waiting for a line
        server.close()
