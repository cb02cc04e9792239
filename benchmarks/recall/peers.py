"""The peers vaultmem's index is measured beside, once per size on the same documents:
SQLite FTS5 (BM25, tokens from ``vaultmem.analysis.tokens``) and a brute-force scan of
the files."""

from __future__ import annotations

import heapq
import json
import sqlite3
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from vaults import QUERIES

from vaultmem.analysis import query_tokens, tokens
from vaultmem.errors import ParseError
from vaultmem.parse.records import records
from vaultmem.walk import scan

from .common import SCAN_BUDGET


def _doc_rows(root: Path) -> tuple[list[tuple], float]:
    """The same docs the index holds (records() of every file), pre-tokenised."""
    t = time.perf_counter()
    rows = []
    for rel in sorted(scan(root)):
        try:
            docs = records(rel, (root / rel).read_text(encoding="utf-8"))
        except (ParseError, UnicodeDecodeError):
            continue
        for d in docs:
            rows.append((d.id, d.path, d.kind, d.status or "active", " ".join(tokens(d.title)),
                         " ".join(tokens(d.text)), " ".join(tokens(" ".join(d.aliases))), " ".join(tokens(d.near)),
                         json.dumps(asdict(d), ensure_ascii=False)))
    return rows, time.perf_counter() - t


class Fts5:
    """SQLite FTS5 over the same docs; BM25 with Whoosh's field weights and default filters."""

    def __init__(self, root: Path) -> None:
        rows, self.parse_s = _doc_rows(root)
        t = time.perf_counter()
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, path UNINDEXED, kind UNINDEXED, "
                        "status UNINDEXED, title, body, aliases, near, doc UNINDEXED, tokenize='unicode61')")
        with self.db:
            self.db.executemany("INSERT INTO docs VALUES (?,?,?,?,?,?,?,?,?)", rows)
            self.db.execute("INSERT INTO docs(docs) VALUES('optimize')")
        self.insert_s = time.perf_counter() - t
        self.build_s = self.parse_s + self.insert_s
        self.docs = len(rows)
        page_count = self.db.execute("PRAGMA page_count").fetchone()[0]
        self.bytes = page_count * self.db.execute("PRAGMA page_size").fetchone()[0]

    def search(self, query: str, limit: int = 10) -> list[str]:
        terms = query_tokens(query)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self.db.execute(
            "SELECT doc, bm25(docs, 0, 0, 0, 0, 2.0, 1.0, 1.5, 0.5) AS s FROM docs WHERE docs MATCH ? "
            "AND kind NOT IN ('inbox', 'archive') AND status NOT IN ('archived', 'superseded') "
            "ORDER BY s LIMIT ?", (match, limit)).fetchall()
        return [json.loads(doc)["id"] for doc, _s in rows]


def scan_search(root: Path, rels: list[str], query: str, limit: int = 10) -> list[str]:
    """No index: read every file, tokenise it, count the query's terms; best ``limit``."""
    terms = query_tokens(query)
    scored = []
    for rel in rels:
        try:
            counts = Counter(tokens((root / rel).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
        score = sum(counts[t] for t in terms)
        if score:
            scored.append((score, rel))
    return [rel for _s, rel in heapq.nlargest(limit, scored)]


def bench_scan(root: Path) -> dict:
    """Seconds of the scan per query, until the queries run out or SCAN_BUDGET is spent
    (three at least)."""
    rels = sorted(scan(root))
    took, started = [], time.perf_counter()
    for q in QUERIES:
        t = time.perf_counter()
        scan_search(root, rels, q)
        took.append(time.perf_counter() - t)
        if time.perf_counter() - started > SCAN_BUDGET and len(took) >= 3:
            break
    return {"times": took, "queries": len(took)}
