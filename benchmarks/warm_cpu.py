"""The CPU of many warm searches or briefs in one process, timed from outside.

    python benchmarks/ab.py -n 9 --vs "env PYTHONPATH=OTHER python benchmarks/warm_cpu.py COPY served-search 400" \\
        -- python benchmarks/warm_cpu.py VAULT served-search 400

and the same pair with COUNT 0 (the process's start, the vault's opening): ``(A - A0) /
COUNT`` is one call's CPU, every thread of the process included (the file-event
observer's too). Summed over hundreds of calls, CPU drifts less than a per-call wall clock
on a shared machine; ``warm_search.py`` gives the per-call medians instead.

KIND:

- ``search`` / ``task``: ``retrieve.search`` on the live index, as ``warm_search.py`` calls
  it — its six short queries at limit 10, or its five brief tasks at limit 30, in turn
  (``VAULTMEM_SEARCH_RANKING=rules`` for the hand-set rules);
- ``served-search`` / ``served-brief``: ``Vault.search`` and ``Vault.brief`` on a vault
  that follows file events (a ``ChangeMonitor``, as ``vaultmem mcp`` runs it): the same
  short queries, or the five role and task pairs of ``vaults.BRIEF_TASKS``.

Each checkout on its own copy of the vault, indexed by itself.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vaultmem.index import Filters
from vaultmem.retrieve import search
from vaultmem.vault import Vault

# After vaultmem: vaults.py puts this checkout first on sys.path, and the vaultmem measured
# stays the one imported above (the installation running this script).
from vaults import BRIEF_TASKS
from warm_search import SHORT, TASKS

KINDS = ("search", "task", "served-search", "served-brief")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("count", type=int, help="calls after one untimed round (0: the start alone)")
    args = ap.parse_args()
    if args.kind in ("search", "task"):
        v = Vault(args.vault)
        v.refresh_index()
        queries, limit = (SHORT, 10) if args.kind == "search" else (TASKS, 30)
        for q in queries:
            search(v.index, q, Filters(), limit)
        for n in range(args.count):
            search(v.index, queries[n % len(queries)], Filters(), limit)
        return
    from vaultmem.adapters.watch import ChangeMonitor

    v = Vault.open(args.vault)
    v.stays_open()
    monitor = ChangeMonitor(v.root)
    if monitor.start():
        v.follow_changes(monitor)
    try:
        for n in range(args.count + 1):  # the first: untimed in the figure (it is in COUNT 0's too)
            if args.kind == "served-search":
                v.search(SHORT[n % len(SHORT)])
            else:
                role, task = BRIEF_TASKS[n % len(BRIEF_TASKS)]
                v.brief(role, task=task)
    finally:
        monitor.stop()
        v.close()


if __name__ == "__main__":
    main()
