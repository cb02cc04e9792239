"""Warm searches of one installation on one vault: median milliseconds per query.

    BEFORE/bin/python benchmarks/warm_search.py VAULT      # prints "SHORT_MS TASK_MS"

Run it alternately with two installations (each on its own copy of the vault, indexed by
itself) to compare them: six short queries at limit 10 and the five brief tasks of
vaults.py at limit 30, 15 rounds each, after one untimed round.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from timing import median, samples
from vaultmem.index import Filters
from vaultmem.retrieve import search
from vaultmem.vault import Vault

# After vaultmem: vaults.py puts this checkout first on sys.path, and the vaultmem measured
# stays the one imported above (the installation running this script).
from vaults import BRIEF_TASKS

SHORT = ["kafka retry", "postgres 索引", "react 组件 缓存", "deployment rollback", "证书轮换", "billing timeout"]
TASKS = [task for _role, task in BRIEF_TASKS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    args = ap.parse_args()
    v = Vault(args.vault)
    v.refresh_index()
    for q in SHORT + TASKS:  # the untimed round
        search(v.index, q, Filters(), 10)
    ms = []
    for queries, limit in ((SHORT, 10), (TASKS, 30)):  # 15 rounds, each query of a round timed alone
        ms.append(median([s for _ in range(15) for q in queries
                          for s in samples(lambda: search(v.index, q, Filters(), limit), 1, warm=0)]) * 1000)
    print(f"{ms[0]:.2f} {ms[1]:.2f}")


if __name__ == "__main__":
    main()
