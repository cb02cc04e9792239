"""Warm searches with query syntax and filters at N notes, per engine: median ms.

    python benchmarks/bench_query.py [N] [--vault DIR]

Builds the benchmarks' synthetic vault (vaults.make_vault: N notes, default 10,000; kept
in DIR if given and reused), indexes it on each engine, then times 15 rounds of each
query after one untimed round: plain words (the baseline), a phrase, an exclusion, OR,
prefixes (short, long, CJK; and the prefix lookup alone) and each filter.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import table  # noqa: E402
from timing import median, samples  # noqa: E402
from vaults import make_vault  # noqa: E402

from vaultmem import Vault  # noqa: E402
from vaultmem.index import Filters  # noqa: E402
from vaultmem.index.store import IndexStore  # noqa: E402
from vaultmem.query import MAX_EXPANSIONS, parse  # noqa: E402
from vaultmem.retrieve import search  # noqa: E402

CASES = [
    ("plain", "redis 缓存 timeout", Filters()),
    ("phrase zh", '"用户反馈页面卡顿"', Filters()),
    ("phrase zh, topic+suffix", '"缓存策略"', Filters()),
    ("phrase, terms common, rarely in a row", '"timeout kubernetes"', Filters()),
    ("phrase en", '"connection pool"', Filters()),
    ("exclusion", "redis 缓存 -kafka", Filters()),
    ("or", "redis OR kafka 缓存", Filters()),
    ("prefix short", "re*", Filters()),
    ("prefix long", "deploy*", Filters()),
    ("prefix zh", "缓*", Filters()),
    ("--tag", "缓存 超时", Filters(tags=("redis",))),
    ("--since/--until", "缓存 超时", Filters(since="2025-03-01", until="2025-03-31")),
    ("--author-kind", "缓存 超时", Filters(author_kinds=("user",))),
    ("--where", "缓存 超时", Filters(where=(("type", "decision"),))),
    ("--status", "缓存 超时", Filters(statuses=("superseded",))),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=10_000)
    ap.add_argument("--vault", type=Path)
    args = ap.parse_args()
    root = args.vault or Path(tempfile.mkdtemp(prefix="vaultmem-query-")) / "vault"
    if not (root / "memories").is_dir():
        make_vault(root, args.n)
    Vault.open(root)
    rows = {}  # engine → {figure: cell}
    for engine in ("whoosh", "tantivy"):
        store = IndexStore(root, engine=engine, env=False)
        build = samples(lambda: store.rebuild(engine=engine), 1, warm=0)[0]
        prefix = median(samples(lambda: store.terms_with_prefix("re", MAX_EXPANSIONS)))  # 15 rounds after one
        row = {"build_s": f"{build:.1f}", "prefix lookup re*": f"{prefix * 1000:.2f}"}
        for name, text, filters in CASES:
            q = parse(text)
            row[name] = f"{median(samples(lambda: search(store, q, filters, 10))) * 1000:.2f}"
            row[name + " hits"] = len(search(store, q, filters, 10))
        store.close()
        rows[engine] = row
    print(f"{args.n} notes in {root}")
    print(table(["", *rows], [[k, *(r[k] for r in rows.values())] for k in rows["whoosh"]]), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
