"""What a model is handed by ``search_memory``: the size of each result's structured content
(what Claude Code gives the model, as JSON) beside its text content.

    python benchmarks/mcp_handed.py VAULT [--query Q ...] [--limit 10]

A ``vaultmem mcp`` server is started on VAULT and asked each query once over bare JSON-RPC
lines (``jsonrpc.LineClient``); for each, and in all, the structured content dumped as
compact JSON and the text content, in characters and in the brief's own token estimate
(``vaultmem.analysis.estimate_tokens``). Run it under two checkouts (``PYTHONPATH``) to
compare shapes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from jsonrpc import LineClient

QUERIES = ["kafka retry", "react 组件 缓存", "部署 端口", "redis ttl timeout", "nginx 超时 配置"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("vault")
    p.add_argument("--query", action="append",
                   help="a query to ask (repeatable; default: five of the benchmark vaults')")
    p.add_argument("--limit", type=int, default=10, help="hits a search (default 10)")
    args = p.parse_args(argv)
    from vaultmem.analysis import estimate_tokens

    if not os.path.isdir(args.vault):
        p.error(f"{args.vault} is not a folder")

    # the vault by its absolute path, from a neutral folder: `python -m` puts its folder ahead of PYTHONPATH
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", os.path.abspath(args.vault)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tempfile.gettempdir())
    client = LineClient(proc, "mcp-handed")
    total = [0, 0, 0, 0, 0]
    try:
        print("| query | hits | structured chars | structured tokens | text chars | text tokens |")
        print("|---|---|---|---|---|---|")
        for query in args.query or QUERIES:
            result = client.call("search_memory", {"query": query, "limit": args.limit})["result"]
            handed = json.dumps(result.get("structuredContent"), ensure_ascii=False, separators=(",", ":"))
            text = "\n".join(c.get("text", "") for c in result["content"])
            row = [len(result["structuredContent"]["hits"]), len(handed), estimate_tokens(handed), len(text),
                   estimate_tokens(text)]
            total = [a + b for a, b in zip(total, row)]
            print(f"| {query} | " + " | ".join(str(x) for x in row) + " |")
        print("| all | " + " | ".join(str(x) for x in total) + " |")
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
