"""Retrieval evaluation: queries with expected answers → Hit@k, MRR@10, Recall@k and the
false-hit rate on no-answer queries, with the metric invariants checked on every run.

Pure apart from :func:`snapshot`, which freezes a vault (its last commit, or a copy of
the folder) so that a measurement does not drift while the live vault changes.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import BadInput, ParseError, VaultmemError
from .models import Hit

K = (1, 5, 10)


@dataclass
class Query:
    id: str
    query: str
    expected: list[str]
    agent: str | None = None
    kind: str | None = None


@dataclass
class EvalReport:
    queries: int = 0
    answerable: int = 0
    no_answer: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    details: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self, details: bool = False) -> dict[str, Any]:
        out = {"queries": self.queries, "answerable": self.answerable, "no_answer": self.no_answer,
               "metrics": self.metrics, "by_kind": self.by_kind, "invariant_problems": self.problems}
        if details:
            out["details"] = self.details
        return out


def load_queries(text: str, path: str) -> list[Query]:
    """Read a queries file: ``queries: [{id, query, expected: [...], agent?, kind?}]``;
    ``expected: []`` marks a no-answer query."""
    from .parse.document import load_yaml

    data = load_yaml(text, path, first_line=1, what="YAML in the queries file",
                     hint="see docs/recall.md for the queries file format")
    items = data.get("queries") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ParseError("the queries file has no 'queries:' list", path=path, line=1,
                         hint="write queries: followed by items with query and expected")
    out, seen = [], set()
    for n, item in enumerate(items):
        line = None
        try:
            line = items.lc.item(n)[0] + 1
        except Exception:
            pass
        if not isinstance(item, dict) or not str(item.get("query") or "").strip():
            raise ParseError(f"query #{n + 1} has no 'query' text", path=path, line=line)
        expected = item.get("expected", [])
        if expected is None:
            expected = []
        if isinstance(expected, str):
            expected = [expected]
        if not isinstance(expected, list):
            raise ParseError(f"query #{n + 1}: 'expected' must be a list of note paths or entry ids",
                             path=path, line=line)
        qid = str(item.get("id") or f"q{n + 1}")
        if qid in seen:
            raise ParseError(f"the query id {qid!r} appears twice", path=path, line=line)
        seen.add(qid)
        out.append(Query(id=qid, query=str(item["query"]), expected=[str(e).lstrip("./") for e in expected],
                         agent=str(item["agent"]) if item.get("agent") else None,
                         kind=str(item["kind"]) if item.get("kind") else None))
    return out


def _matches(hit_id: str, hit_path: str, expected: str) -> bool:
    return hit_id == expected or ("#" not in expected and hit_path == expected)


def _rank_of(hits: list[Hit], expected: list[str]) -> list[int]:
    """1-based ranks (within the results) of the hits that answer the query."""
    return [n for n, h in enumerate(hits, 1) if any(_matches(h.doc.id, h.doc.path, e) for e in expected)]


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _metrics(rows: list[dict[str, Any]]) -> dict[str, float]:
    answerable = [r for r in rows if r["expected"]]
    no_answer = [r for r in rows if not r["expected"]]
    m: dict[str, float] = {}
    for k in K:
        m[f"hit@{k}"] = _mean([1.0 if r["first_rank"] and r["first_rank"] <= k else 0.0 for r in answerable])
    m["mrr@10"] = _mean([1.0 / r["first_rank"] if r["first_rank"] and r["first_rank"] <= 10 else 0.0
                         for r in answerable])
    for k in (5, 10):
        m[f"recall@{k}"] = _mean([r[f"found@{k}"] / len(r["expected"]) for r in answerable])
    m["false_hit_rate"] = _mean([1.0 if r["false_hit"] else 0.0 for r in no_answer])
    return m


def check_invariants(m: dict[str, float]) -> list[str]:
    """Hit@1 ≤ MRR@10 ≤ Hit@1 + (Hit@10 − Hit@1)/2 (with rounding slack)."""
    eps = 1e-3
    problems = []
    if m["hit@1"] > m["mrr@10"] + eps:
        problems.append(f"Hit@1 {m['hit@1']} > MRR@10 {m['mrr@10']}")
    upper = m["hit@1"] + (m["hit@10"] - m["hit@1"]) / 2
    if m["mrr@10"] > upper + eps:
        problems.append(f"MRR@10 {m['mrr@10']} > Hit@1 + (Hit@10 - Hit@1)/2 = {round(upper, 4)}")
    return problems


def evaluate(queries: list[Query], run: Callable[[Query], list[Hit]],
             relevant: Callable[[Hit, str], bool]) -> EvalReport:
    """Run every query (``run`` returns its top 10 hits) and compute the metrics."""
    rows = []
    for q in queries:
        hits = run(q)[:10]
        ranks = _rank_of(hits, q.expected)
        rows.append({
            "id": q.id, "query": q.query, "kind": q.kind, "agent": q.agent, "expected": q.expected,
            "first_rank": ranks[0] if ranks else None,
            "found@5": len({e for e in q.expected for h in hits[:5] if _matches(h.doc.id, h.doc.path, e)}),
            "found@10": len({e for e in q.expected for h in hits[:10] if _matches(h.doc.id, h.doc.path, e)}),
            "false_hit": (not q.expected) and bool(hits) and relevant(hits[0], q.query),
            "results": [h.doc.id for h in hits],
        })  # fmt: skip
    report = EvalReport(queries=len(rows), answerable=sum(1 for r in rows if r["expected"]),
                        no_answer=sum(1 for r in rows if not r["expected"]), details=rows)
    report.metrics = _metrics(rows)
    for kind in sorted({r["kind"] for r in rows if r["kind"]}):
        subset = [r for r in rows if r["kind"] == kind]
        report.by_kind[kind] = _metrics(subset)
        report.by_kind[kind]["queries"] = len(subset)
    report.problems = check_invariants(report.metrics) if report.answerable else []
    return report


def snapshot(root: Path, dest: Path, at: str | None = "HEAD") -> str:
    """Freeze the vault into ``dest``: the files of commit ``at`` when the vault is a git
    repository (``at=None``: the working tree as it is), else a copy of the folder. The
    derived index is never copied. Returns what was frozen."""
    dest.mkdir(parents=True, exist_ok=True)
    if at and (root / ".git").exists():
        try:
            sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", f"{at}^{{commit}}"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        except subprocess.CalledProcessError:
            raise BadInput(f"{at!r} is not a commit of {root}", field="at") from None
        archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", sha],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return f"commit {sha[:12]}"
    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).resolve()
        if here == root.resolve():
            return {".git"} & set(names)
        if here == (root / ".vaultmem").resolve():  # derived and private data only
            return {n for n in names if n in ("index", "local", "keys") or n.endswith(".lock")}
        return set()

    try:
        shutil.copytree(root, dest, symlinks=True, ignore=ignore, dirs_exist_ok=True)  # a link stays a link
    except OSError as exc:
        raise VaultmemError(f"cannot copy {root} for the evaluation: {exc}") from None
    return "working tree copy"
