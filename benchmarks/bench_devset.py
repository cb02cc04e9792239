"""The fact-style dev set, searched and briefed: what search ranks, and what a brief cites
with its relevance gate and without it.

    python benchmarks/bench_devset.py [--ranking rules|learned|both] [--engine whoosh|tantivy]
                                      [--set KEY=VALUE ...] [--out FILE.md]

For each of the 92 queries of ``benchmarks/devset/queries.yaml``: ``search(query, agent=…,
limit=10)`` (Hit@1, Hit@5, Hit@10, MRR@10, false hits: a no-answer query with a relevant hit)
and ``brief(agent or the orchestrator, query, tokens=1500)`` — covers when it cites an
expected item, a false hit when it cites any memory for a no-answer query — once as
configured and once with ``brief.min_relevance`` 0 (the gate open). A scoped query briefs its
role, whose page the brief always holds; the others brief the orchestrator, who has none.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_conv import fmt, load, mean, parse_sets, set_config, with_settings  # noqa: E402
from report import table  # noqa: E402

MAKE_VAULT = HERE / "devset" / "make_vault.py"
QUERIES = HERE / "devset" / "queries.yaml"
BRIEF_TOKENS = 1500
COLUMNS = ("hit@1", "hit@5", "hit@10", "mrr@10", "false_hits", "brief_coverage", "brief_false_hits",
           "brief_matched_false", "open_coverage", "open_false_hits")


def make_devset(root: Path, builder: Path = MAKE_VAULT) -> Path:
    """``root``, made the dev-set vault by ``builder`` (benchmarks/devset/make_vault.py)."""
    subprocess.run([sys.executable, str(builder), str(root)], check=True, capture_output=True)
    return root


def devset_queries() -> list[dict]:
    """The dev set's queries (benchmarks/devset/queries.yaml), as plain data."""
    return load(QUERIES)["queries"]


def first_rank(order: list[str], expected: set) -> int | None:
    """The rank (from 1) of the first id of ``order`` that is ``expected``; None when none is."""
    return next((n for n, i in enumerate(order, 1) if i in expected), None)


def run(ranking: str, engine: str, settings: dict | None = None) -> dict:
    """Every query searched and briefed on a fresh dev-set vault (with ``settings``, config
    keys, written into it): :func:`summarise`'s figures."""
    from vaultmem.vault import Vault

    os.environ["VAULTMEM_INDEX_ENGINE"] = engine
    os.environ["VAULTMEM_SEARCH_RANKING"] = ranking
    with tempfile.TemporaryDirectory(prefix="devset-") as tmp:
        root = make_devset(Path(tmp) / "vault")
        if settings:
            set_config(root, settings)
        subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
        vault = Vault.open(root)
        opened = Vault(root, config=with_settings(vault.config, brief_min_relevance=0.0))
        rows = []
        for q in devset_queries():
            expected = set(q.get("expected") or [])
            agent = q.get("agent")
            hits = vault.search(q["query"], agent=agent, syntax=False)
            who = agent or vault.config.orchestrator
            brief = vault.brief(who, q["query"], tokens=BRIEF_TOKENS)
            gated = [i.get("id") for i in brief.items]
            open_ = [i.get("id") for i in opened.brief(who, q["query"], tokens=BRIEF_TOKENS).items]
            rows.append({"kind": q["kind"], "answerable": bool(expected),
                         "first": first_rank([h.doc.id for h in hits], expected),
                         "false": not expected and bool(hits.relevant),
                         "covers": bool(expected & set(gated)), "cites": bool(gated),
                         # it says memory matched (a brief before its no_memory: it cites any)
                         "matched": not getattr(brief, "no_memory", not gated),
                         "open_covers": bool(expected & set(open_)), "open_cites": bool(open_)})
    return summarise(rows)


def summarise(rows: list[dict]) -> dict:
    """Per kind of query, and for "all": the search's hits and false hits, the brief's
    coverage and false hits, gated and open."""
    def rate(xs: list) -> float | None:
        return mean(xs, places=3)

    out = {}
    for kind in ["all", *sorted({r["kind"] for r in rows})]:
        sub = [r for r in rows if kind == "all" or r["kind"] == kind]
        ans = [r for r in sub if r["answerable"]]
        none = [r for r in sub if not r["answerable"]]
        out[kind] = {
            "n": len(sub),
            "hit@1": rate([r["first"] == 1 for r in ans]), "hit@5": rate([bool(r["first"] and r["first"] <= 5) for r in ans]),
            "hit@10": rate([bool(r["first"]) for r in ans]),
            "mrr@10": rate([1 / r["first"] if r["first"] else 0 for r in ans]),
            "false_hits": rate([r["false"] for r in none]),
            "brief_coverage": rate([r["covers"] for r in ans]), "brief_false_hits": rate([r["cites"] for r in none]),
            "brief_matched_false": rate([r["matched"] for r in none]),
            "open_coverage": rate([r["open_covers"] for r in ans]), "open_false_hits": rate([r["open_cites"] for r in none]),
        }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranking", choices=("rules", "learned", "both"), default="both")
    ap.add_argument("--engine", choices=("whoosh", "tantivy"), default="whoosh")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any config key")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    settings = parse_sets(args.set, ap.error)
    rankings = ("rules", "learned") if args.ranking == "both" else (args.ranking,)
    rows = [[ranking, kind, m["n"], *(fmt(m[c]) for c in COLUMNS)]
            for ranking in rankings for kind, m in run(ranking, args.engine, settings).items()]
    text = (f"# The dev set: search, and the brief with and without its gate ({args.engine})\n\n"
            f"brief: 1,500 tokens; open_*: the same brief with brief.min_relevance 0; settings: {settings or 'defaults'}.\n\n"
            + table(["ranking", "kind", "n", *COLUMNS], rows))
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
