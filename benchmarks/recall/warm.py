"""Searches in a warm process, on the engine set by ``using_engine``: the engine alone,
``retrieve.search`` (+ snippets), the public ``vault.search`` (+ a freshness check) and
the brief-sized task queries — and FTS5 answering the same queries."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from vaults import BRIEF_TASKS, QUERIES

from vaultmem import Vault
from vaultmem.analysis import query_tokens
from vaultmem.index import Filters
from vaultmem.index.store import IndexStore
from vaultmem.retrieve import search as retrieve_search

from .peers import Fts5


def _timed_queries(searches: dict, rounds: int = 3) -> dict:
    """Warm latencies of each ``search(query, filters, limit)`` of ``searches``: the 30
    queries (top 10) and the five brief task texts (top 30), each once to warm up, then
    ``rounds`` times; the searches take turns on each query, so none gains from going later."""
    work = [(q, 10, "query") for q in QUERIES] + [(task, 30, "task") for _role, task in BRIEF_TASKS]
    for q, limit, _kind in work:
        for search in searches.values():
            search(q, Filters(), limit)
    out = {name: {"query": [], "task": []} for name in searches}
    for _ in range(rounds):
        for q, limit, kind in work:
            for name, search in searches.items():
                t = time.perf_counter()
                search(q, Filters(), limit)
                out[name][kind].append(time.perf_counter() - t)
    return out


def bench_fts5_warm(fts: Fts5) -> dict:
    """FTS5's warm latencies: the 30 queries (``warm``) and the task texts (``task``)."""
    got = _timed_queries({"fts5": lambda q, _f, limit: fts.search(q, limit)})["fts5"]
    return {"warm": got["query"], "task": got["task"]}


def bench_warm(root: Path, fts: Fts5 | None, rounds: int = 3) -> dict:
    """In-process latencies on the engine set by ``using_engine``: the engine alone
    (``IndexStore.search``), ``retrieve.search`` (+ snippets), the public
    ``vault.search`` (+ a freshness check), and the brief-sized task queries; and the
    top-10 overlap with FTS5."""
    from vaultmem.vault import BRIEF_KINDS

    store = IndexStore(root)
    vault = Vault.open(root)
    got = _timed_queries({"engine": lambda q, f, limit: store.search(query_tokens(q), f, limit),
                          "retrieve": lambda q, f, limit: retrieve_search(store, q, f, limit)}, rounds)
    engine, retrieve = got["engine"], got["retrieve"]
    vault_t = []
    for q in QUERIES[:10]:  # the public API: runs a freshness check (a full refresh) first
        t = time.perf_counter()
        vault.search(q, limit=10)
        vault_t.append(time.perf_counter() - t)
    task_retrieve = []  # as Vault.brief asks: role filter, brief kinds, top 30
    for _ in range(rounds):
        for role, task in BRIEF_TASKS:
            t = time.perf_counter()
            retrieve_search(store, task, Filters(agent=role, kinds=BRIEF_KINDS), 30)
            task_retrieve.append(time.perf_counter() - t)
    overlap = []
    if fts is not None:
        for q in QUERIES:
            ids = {d.id for d, _s in store.search(query_tokens(q), Filters(), 10)}
            overlap.append(len(ids & set(fts.search(q))) / max(1, min(10, len(ids))))
    store.close()
    vault.index.close()
    return {"engine": engine["query"], "retrieve": retrieve["query"], "vault": vault_t,
            "overlap": statistics.mean(overlap) if overlap else None, "task_engine": engine["task"],
            "task_retrieve": task_retrieve,
            "task_terms": statistics.mean(len(query_tokens(t)) for _r, t in BRIEF_TASKS)}
