"""The fact-style dev set, searched and briefed: what search ranks, and what a brief cites
with its relevance gate and without it.

    python benchmarks/bench_devset.py [--ranking rules|learned|both] [--engine whoosh|tantivy] [--out FILE.md]

For each of the 92 queries of ``benchmarks/devset/queries.yaml``: ``search(query, agent=…,
limit=10)`` (Hit@1, Hit@5, Hit@10, MRR@10, false hits: a no-answer query with a relevant hit)
and ``brief(agent or the orchestrator, query, tokens=1500)`` — covers when it cites an
expected item, a false hit when it cites any memory for a no-answer query — once as
configured and once with ``brief.min_relevance`` 0 (the gate open). A scoped query briefs its
role, whose page the brief always holds; the others brief the orchestrator, who has none.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ruamel.yaml import YAML

HERE = Path(__file__).resolve().parent
BRIEF_TOKENS = 1500


def run(ranking: str, engine: str) -> dict:
    from vaultmem.vault import Vault

    queries = YAML(typ="safe").load((HERE / "devset" / "queries.yaml").read_text(encoding="utf-8"))["queries"]
    os.environ["VAULTMEM_INDEX_ENGINE"] = engine
    os.environ["VAULTMEM_SEARCH_RANKING"] = ranking
    with tempfile.TemporaryDirectory(prefix="devset-") as tmp:
        root = Path(tmp) / "vault"
        subprocess.run([sys.executable, str(HERE / "devset" / "make_vault.py"), str(root)], check=True,
                       capture_output=True)
        subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
        vault = Vault.open(root)
        opened = Vault(root, config=dataclasses.replace(vault.config, brief_min_relevance=0.0))
        rows = []
        for q in queries:
            expected = set(q.get("expected") or [])
            agent = q.get("agent")
            hits = vault.search(q["query"], agent=agent, syntax=False)
            ids = [h.doc.id for h in hits]
            first = next((n for n, i in enumerate(ids, 1) if i in expected), None)
            who = agent or vault.config.orchestrator
            gated = [i.get("id") for i in vault.brief(who, q["query"], tokens=BRIEF_TOKENS).items]
            open_ = [i.get("id") for i in opened.brief(who, q["query"], tokens=BRIEF_TOKENS).items]
            rows.append({"kind": q["kind"], "answerable": bool(expected), "first": first,
                         "false": not expected and bool(hits.relevant),
                         "covers": bool(expected & set(gated)), "cites": bool(gated),
                         "open_covers": bool(expected & set(open_)), "open_cites": bool(open_)})
    return summarise(rows)


def summarise(rows: list[dict]) -> dict:
    def mean(xs):
        return round(sum(xs) / len(xs), 3) if xs else None

    out = {}
    for kind in ["all", *sorted({r["kind"] for r in rows})]:
        sub = [r for r in rows if kind == "all" or r["kind"] == kind]
        ans = [r for r in sub if r["answerable"]]
        none = [r for r in sub if not r["answerable"]]
        out[kind] = {
            "n": len(sub),
            "hit@1": mean([r["first"] == 1 for r in ans]), "hit@5": mean([bool(r["first"] and r["first"] <= 5) for r in ans]),
            "hit@10": mean([bool(r["first"]) for r in ans]),
            "mrr@10": mean([1 / r["first"] if r["first"] else 0 for r in ans]),
            "false_hits": mean([r["false"] for r in none]),
            "brief_coverage": mean([r["covers"] for r in ans]), "brief_false_hits": mean([r["cites"] for r in none]),
            "open_coverage": mean([r["open_covers"] for r in ans]), "open_false_hits": mean([r["open_cites"] for r in none]),
        }  # fmt: skip
    return out


COLUMNS = ("hit@1", "hit@5", "hit@10", "mrr@10", "false_hits", "brief_coverage", "brief_false_hits", "open_coverage",
           "open_false_hits")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranking", choices=("rules", "learned", "both"), default="both")
    ap.add_argument("--engine", choices=("whoosh", "tantivy"), default="whoosh")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    rankings = ("rules", "learned") if args.ranking == "both" else (args.ranking,)
    lines = [f"# The dev set: search, and the brief with and without its gate ({args.engine})", "",
             "brief: 1,500 tokens; open_*: the same brief with brief.min_relevance 0.", "",
             "| ranking | kind | n | " + " | ".join(COLUMNS) + " |", "|---|---|---|" + "---|" * len(COLUMNS)]
    for ranking in rankings:
        for kind, m in run(ranking, args.engine).items():
            lines.append(f"| {ranking} | {kind} | {m['n']} | "
                         + " | ".join("—" if m[c] is None else f"{m[c]:.3f}" for c in COLUMNS) + " |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
