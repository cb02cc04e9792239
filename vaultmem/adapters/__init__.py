"""What the adapters of vaultmem share — the CLI, the watcher, agent-runtime hooks, an
MCP server: each is a thin client of :class:`vaultmem.Vault`, and each answers its caller
through :mod:`vaultmem.adapters.edge`, the one place where a library error becomes an
exit code, a JSON error or a line for people.

Nothing here imports typer or click: an adapter that has neither uses it as it is.
"""
