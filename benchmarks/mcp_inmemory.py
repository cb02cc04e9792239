"""A warm MCP search and brief through the SDK's in-memory client: median milliseconds.

    BEFORE/bin/python benchmarks/mcp_inmemory.py VAULT      # prints "SEARCH_MS BRIEF_MS"

One ``VaultServer(vault, watch=True)`` (as ``vaultmem mcp`` serves: file events followed)
in one in-memory SDK ``Client`` session: ``search_memory`` and ``brief`` (a fixed query and
task), ``--calls`` timed calls each after five untimed ones. No pipes: what the library,
the SDK's server and its client cost. Run it alternately with two installations
(``PYTHONPATH=WORKTREE``) on the same indexed vault to compare them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def main() -> None:
    import anyio
    from mcp import Client

    from vaultmem import Vault
    from vaultmem.adapters.mcp import VaultServer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--query", default="kafka retry")
    ap.add_argument("--role", default="前端审查")
    ap.add_argument("--task", default="react 组件 缓存")
    args = ap.parse_args()
    server = VaultServer(Vault.open(args.vault), watch=True)

    async def run() -> list[float]:
        async with Client(server) as client:
            await client.list_tools()
            out = []
            for tool, arguments in (("search_memory", {"query": args.query}),
                                    ("brief", {"agent": args.role, "task": args.task})):
                for _ in range(5):
                    await client.call_tool(tool, arguments)
                took = []
                for _ in range(args.calls):
                    t = time.perf_counter()
                    await client.call_tool(tool, arguments)
                    took.append(time.perf_counter() - t)
                out.append(statistics.median(took) * 1000)
            return out

    try:
        search_ms, brief_ms = anyio.run(run)
    finally:
        server.close()
    print(f"{search_ms:.2f} {brief_ms:.2f}")


if __name__ == "__main__":
    main()
