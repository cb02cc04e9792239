"""Ablation of vaultmem's retrieval choices on the dev set.

    /tmp/venv/bin/python benchmarks/ablation.py [--out benchmarks/results/ablation.md] [--repeat 20]

Builds the dev-set vault once (benchmarks/devset/make_vault.py) into a temporary folder
and runs ``Vault.evaluate`` on it once per variant. Each variant is applied by
monkeypatching the installed package for the duration of its run only (nothing in
``vaultmem/`` is edited):

* the tokenizer: ``vaultmem.analysis.tokens`` and every module that imported it by
  name (``vaultmem.index.fields.tokens``, ``vaultmem.brief.tokens``).
  ``analysis.query_tokens`` and ``analysis.coverage`` call the module-global ``tokens``,
  so ``vaultmem.retrieve`` (which imported ``query_tokens``/``coverage``/``highlight`` by
  name) follows the patch; ``highlight`` only builds the snippet, which the metrics do
  not read. ``ANALYZER_VERSION`` is changed too (in ``analysis`` and ``index.manifest``);
* the fields: ``FIELDS`` (read by the Whoosh engine's ``schema()`` and ``search()``) and
  ``fields_of`` (what is indexed), in ``vaultmem.index.fields`` and where the Whoosh
  engine imported them by name;
* the BM25F parameters: ``WhooshEngine._get_searcher``.

``Vault.evaluate`` runs in-process on the Whoosh engine (the variants patch Whoosh's
scoring) and rebuilds a fresh index in a temporary copy each time, so every variant gets
its own index. To prove the patches reached that code path,
the script records what was actually indexed and searched during each run (number of
documents, number of distinct terms, whether single CJK characters were indexed, the
field boosts of the schema, the K1/B of the searcher) and checks it against the variant.
The baseline is run first and again last: the two must be identical, so the patches
did not leak.

It also times tokenizing every dev-set text (what indexing and querying tokenize) with
the shipped bigrams and with jieba, and the start-up cost of a fresh interpreter that
imports jieba and loads its dictionary versus one that imports vaultmem.analysis.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_conv import fmt  # noqa: E402
from bench_devset import QUERIES, make_devset  # noqa: E402
from report import RESULTS, code_version, machine, table, write_json  # noqa: E402
from timing import log, median, samples  # noqa: E402

import vaultmem.analysis as analysis  # noqa: E402
import vaultmem.brief as brief  # noqa: E402
import vaultmem.index.fields as fl  # noqa: E402
import vaultmem.index.manifest as manifest  # noqa: E402
import vaultmem.index.whoosh_engine as we  # noqa: E402
import vaultmem.retrieve as retrieve  # noqa: E402
from vaultmem.vault import Vault  # noqa: E402

SHIPPED_FIELDS = fl.FIELDS
SHIPPED_FIELDS_FN = fl.fields_of
SHIPPED_GET_SEARCHER = we.WhooshEngine._get_searcher
SHIPPED_TOKENS = analysis.tokens
SHIPPED_VERSION = analysis.ANALYZER_VERSION
SHIPPED_K1, SHIPPED_B = 0.9, 0.4

KINDS = ("cjk-substring", "cross-language", "inflection", "paraphrase")


# -- tokenizers --------------------------------------------------------------------------


def _jieba():
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def make_tokens(cjk: str = "bigram", latin: str = "stem+stop"):
    """A drop-in replacement for ``analysis.tokens``.

    cjk: ``bigram`` (shipped), ``jieba`` (``jieba.cut_for_search`` on each CJK run) or
    ``uni+bi`` (every character and every overlapping bigram of a run).
    latin: ``stem+stop`` (shipped: stopwords dropped, Snowball stem), ``fold`` (case-fold
    only, stopwords kept), ``stem`` (stemmed, stopwords kept) or ``fold+stop``
    (case-fold only, stopwords dropped).
    """
    if cjk == "jieba":
        jb = _jieba()

        def cjk_terms(run: str) -> list[str]:
            return [w for w in jb.cut_for_search(run) if w.strip()]
    elif cjk == "uni+bi":

        def cjk_terms(run: str) -> list[str]:
            return list(run) + ([run[i : i + 2] for i in range(len(run) - 1)] if len(run) > 1 else [])
    else:
        cjk_terms = analysis._cjk_grams

    drop_stop = latin in ("stem+stop", "fold+stop")
    do_stem = latin in ("stem+stop", "stem")
    stop, stem, normalize = analysis.STOPWORDS, analysis.stem, analysis.normalize

    def tokens(text: str) -> list[str]:
        out: list[str] = []
        flat = normalize(text)
        for start, end, is_cjk in analysis.spans(flat):
            piece = flat[start:end]
            if is_cjk:
                out.extend(cjk_terms(piece))
            elif not (drop_stop and piece in stop):
                out.append(stem(piece) if do_stem else piece)
        return out

    return tokens


# -- variants ----------------------------------------------------------------------------


@dataclass
class Variant:
    name: str
    note: str
    cjk: str = "bigram"
    latin: str = "stem+stop"
    near: float | None = 0.5  # None: the near field is left empty
    k1: float = SHIPPED_K1
    b: float = SHIPPED_B
    group: str = ""

    @property
    def fields(self):
        boost = 0.0 if self.near is None else self.near
        return tuple((n, boost if n == "near" else w) for n, w in SHIPPED_FIELDS)


VARIANTS = [
    Variant("baseline", "as shipped: CJK bigrams, stem + stopwords, near ×0.5, K1 0.9 B 0.4", group="baseline"),
    Variant("cjk-jieba", "CJK runs via jieba.cut_for_search", cjk="jieba", group="CJK"),
    Variant("cjk-uni+bi", "CJK unigrams + bigrams", cjk="uni+bi", group="CJK"),
    Variant("latin-fold", "no stemming, stopwords kept (case-fold only)", latin="fold", group="Latin"),
    Variant("latin-stem-keepstop", "stemming, stopwords kept", latin="stem", group="Latin"),
    Variant("latin-fold-dropstop", "no stemming, stopwords dropped (extra: separates the two effects)",
            latin="fold+stop", group="Latin"),
    Variant("near-empty", "no near field (indexed empty)", near=None, group="near"),
    Variant("near-0", "near boost 0.0 (terms indexed, weight 0: near-only matches still returned, score 0)",
            near=0.0, group="near"),
    Variant("near-1.0", "near boost 1.0", near=1.0, group="near"),
    Variant("bm25-defaults", "BM25F defaults K1 1.2, B 0.75", k1=1.2, b=0.75, group="BM25"),
]


@dataclass
class Probe:
    """What actually happened inside the evaluation's code path."""

    docs: int = 0
    terms: set = field(default_factory=set)
    near_nonempty: int = 0
    schema_boosts: dict = field(default_factory=dict)
    searchers: list = field(default_factory=list)


@contextlib.contextmanager
def applied(v: Variant, probe: Probe):
    tok = SHIPPED_TOKENS if (v.cjk, v.latin) == ("bigram", "stem+stop") else make_tokens(v.cjk, v.latin)
    version = SHIPPED_VERSION if v.name == "baseline" else f"ablation-{v.name}"

    def fields_fn(doc):
        out = SHIPPED_FIELDS_FN(doc)
        if v.near is None:
            out["near"] = ""
        probe.docs += 1
        probe.near_nonempty += bool(out["near"])
        for name, _w in SHIPPED_FIELDS:
            probe.terms.update(out[name].split())
        return out

    def get_searcher(self):
        from whoosh.scoring import BM25F

        if self._searcher is None:
            self._searcher = self.ix.searcher(weighting=BM25F(B=v.b, K1=v.k1))
            probe.searchers.append((self._searcher.weighting.K1, self._searcher.weighting.B))
            probe.schema_boosts.update({n: self.ix.schema[n].format.field_boost for n, _ in SHIPPED_FIELDS})
        elif not self._searcher.up_to_date():
            self._searcher = self._searcher.refresh()
        return self._searcher

    new = {
        (analysis, "tokens"): tok, (fl, "tokens"): tok, (brief, "tokens"): tok,
        (analysis, "ANALYZER_VERSION"): version, (manifest, "ANALYZER_VERSION"): version,
        (fl, "FIELDS"): v.fields, (we, "FIELDS"): v.fields,
        (fl, "fields_of"): fields_fn, (we, "fields_of"): fields_fn, (we.WhooshEngine, "_get_searcher"): get_searcher,
    }
    saved = {(obj, name): getattr(obj, name) for obj, name in new}
    for (obj, name), value in new.items():
        setattr(obj, name, value)
    try:
        yield tok
    finally:
        for (obj, name), value in saved.items():
            setattr(obj, name, value)


def check_probe(v: Variant, tok, probe: Probe) -> list[str]:
    problems = []
    if probe.docs == 0:
        problems.append("no document went through the patched fields_of")
    if not probe.searchers or any(s != (v.k1, v.b) for s in probe.searchers):
        problems.append(f"searcher K1/B {probe.searchers} != {(v.k1, v.b)}")
    want = dict(v.fields)
    if any(abs(probe.schema_boosts.get(n, -1) - w) > 1e-9 for n, w in want.items()):
        problems.append(f"schema boosts {probe.schema_boosts} != {want}")
    if (v.near is None) != (probe.near_nonempty == 0):
        problems.append(f"{probe.near_nonempty} docs with a non-empty near field")
    singles = sum(1 for t in probe.terms if analysis.is_cjk_char(t))
    if v.cjk == "uni+bi" and singles < 500:
        problems.append(f"only {singles} single CJK characters indexed")
    # The query side: retrieve's names must reach the patched tokenizer.
    probe_text = "Reviews of the 服务端口配置"
    if retrieve.query_tokens(probe_text) != list(dict.fromkeys(tok(probe_text))):
        problems.append("retrieve.query_tokens does not use the patched tokenizer")
    return problems


# -- evaluation --------------------------------------------------------------------------


def run_variant(vault_dir: Path, v: Variant) -> dict:
    probe = Probe()
    with applied(v, probe) as tok:
        t0 = time.perf_counter()
        report, _frozen = Vault(vault_dir).evaluate(QUERIES, at=None, engine="whoosh")
        seconds = time.perf_counter() - t0
        problems = check_probe(v, tok, probe)
    if report.problems:
        problems += [f"metric invariant: {p}" for p in report.problems]
    ranks = {r["id"]: r["first_rank"] for r in report.details}
    false_hits = {r["id"] for r in report.details if r["false_hit"]}
    return {"variant": v, "metrics": report.metrics, "by_kind": report.by_kind, "ranks": ranks,
            "false_hits": false_hits, "answerable": report.answerable, "no_answer": report.no_answer,
            "docs": probe.docs, "terms": len(probe.terms), "seconds": seconds, "problems": problems}


def compare(base: dict, other: dict) -> dict:
    """Per-query changes against the baseline."""
    out = {"hit1+": 0, "hit1-": 0, "hit5+": 0, "hit5-": 0, "rank_better": 0, "rank_worse": 0}
    for qid, r0 in base["ranks"].items():
        r1 = other["ranks"][qid]
        a, b = r0 or 99, r1 or 99  # None: not in the top 10
        out["rank_better"] += b < a
        out["rank_worse"] += b > a
        out["hit1+"] += a > 1 and b == 1
        out["hit1-"] += a == 1 and b > 1
        out["hit5+"] += a > 5 and b <= 5
        out["hit5-"] += a <= 5 and b > 5
    out["fh+"] = len(other["false_hits"] - base["false_hits"])
    out["fh-"] = len(base["false_hits"] - other["false_hits"])
    return out


# -- timing ------------------------------------------------------------------------------


def devset_texts(vault_dir: Path) -> list[str]:
    """Every text the indexer and the queries tokenize: title, body, aliases and near of
    every index document, and every query."""
    from vaultmem.evaluate import load_queries
    from vaultmem.parse.records import records

    texts = []
    for path in sorted(vault_dir.rglob("*.md")):
        rel = path.relative_to(vault_dir).as_posix()
        if rel.startswith(".vaultmem/"):
            continue
        for d in records(rel, path.read_text(encoding="utf-8")):
            texts += [d.title, d.text, " ".join(d.aliases), d.near]
    texts += [q.query for q in load_queries(QUERIES.read_text(encoding="utf-8"), str(QUERIES))]
    return [t for t in texts if t]


def time_tokenizers(texts: list[str], repeat: int) -> list[dict]:
    """Interleaved (one pass of each tokenizer per round) so that machine noise hits all
    alike; every tokenizer first makes one untimed pass (stem cache, jieba's dictionary)."""
    fns = [("bigrams (shipped)", SHIPPED_TOKENS), ("jieba.cut_for_search", make_tokens("jieba")),
           ("unigrams + bigrams", make_tokens("uni+bi"))]
    counts = {label: sum(len(fn(t)) for t in texts) for label, fn in fns}
    times: dict[str, list[float]] = {label: [] for label, _ in fns}
    def pass_over(fn) -> None:  # each text's tokens dropped at once, as a caller would
        for t in texts:
            fn(t)

    for _ in range(repeat):
        for label, fn in fns:
            times[label] += samples(lambda: pass_over(fn), rounds=1, warm=0)
    return [{"label": label, "best": min(times[label]), "median": median(times[label]),
             "tokens": counts[label]} for label, _ in fns]


def time_startup(repeat: int) -> list[dict]:
    """The wall time of a fresh interpreter running each command: median and min of
    ``repeat`` runs (jieba's first load, with no dictionary cache, once)."""
    def measure(code: str, env=None, n=repeat) -> list[float]:
        return samples(lambda: subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env),
                       rounds=n, warm=0)

    rows = [("`python -c pass` (interpreter only)", measure("pass")),
            ("`import vaultmem.analysis as a; a.tokens('测试')`",
             measure("import vaultmem.analysis as a; a.tokens('测试')")),
            ("`import vaultmem.analysis as a; a.tokens('测试 reviews')` (loads snowball too)",
             measure("import vaultmem.analysis as a; a.tokens('测试 reviews')")),
            ("`import jieba` (module only, dictionary not loaded)", measure("import jieba"))]
    with tempfile.TemporaryDirectory(prefix="ablation-jieba-") as tmp:
        env = dict(os.environ, TMPDIR=tmp)  # jieba keeps its dictionary cache in the temp dir
        first = measure("import jieba; jieba.initialize()", env=env, n=1)
        rows.append(("`import jieba; jieba.initialize()` — first run, no dictionary cache", first))
        rows.append(("`import jieba; jieba.initialize()` — dictionary cache present",
                     measure("import jieba; jieba.initialize()", env=env)))
    return [{"label": label, "median": median(t), "min": min(t), "n": len(t)} for label, t in rows]


# -- report ------------------------------------------------------------------------------


def metrics_table(results: list[dict]) -> str:
    """Each run's figures, and its Hit@5 per kind with the count of queries it found."""
    def per_kind(m: dict) -> str:
        return f"{fmt(m['hit@5'])} ({round(m['hit@5'] * m['queries'])}/{m['queries']})"

    overall = ("hit@1", "hit@5", "mrr@10", "recall@5", "recall@10", "false_hit_rate")
    return table(["variant", *overall, *(f"hit@5 {k}" for k in KINDS)],
                 [[f"`{r['label']}`", *(fmt(r["metrics"][k]) for k in overall),
                   *(per_kind(r["by_kind"][k]) for k in KINDS)] for r in results])


def delta_table(base: dict, results: list[dict]) -> str:
    """Each run's per-query changes against ``base``."""
    rows = []
    for r in results:
        c = compare(base, r)
        rows.append([f"`{r['label']}`", r["variant"].note, f"+{c['hit1+']} / −{c['hit1-']}",
                     f"+{c['hit5+']} / −{c['hit5-']}", f"{c['rank_better']} / {c['rank_worse']}",
                     f"+{c['fh+']} / −{c['fh-']}", r["terms"], f"{r['seconds']:.1f}"])
    return table(["variant", "what", "hit@1 gained / lost", "hit@5 gained / lost", "first rank better / worse",
                  "false hits new / gone", "distinct terms", "eval s"], rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "ablation.md")
    ap.add_argument("--repeat", type=int, default=20, help="repetitions of the timing runs (default 20)")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--summary", type=Path, help="also write the raw numbers as JSON here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="vaultmem-ablation-") as tmp:
        vault_dir = make_devset(Path(tmp) / "devset-vault")
        results = []
        for v in VARIANTS + [VARIANTS[0]]:
            r = run_variant(vault_dir, v)
            r["label"] = v.name if not results or v.name != "baseline" else "baseline (re-run last)"
            log(f"{r['label']:<28} hit@1 {fmt(r['metrics']['hit@1'])} hit@5 {fmt(r['metrics']['hit@5'])} "
                f"mrr@10 {fmt(r['metrics']['mrr@10'])} fhr {fmt(r['metrics']['false_hit_rate'])} "
                f"docs {r['docs']} terms {r['terms']} {r['seconds']:.1f}s")
            for p in r["problems"]:
                log(f"  PROBLEM: {p}")
            results.append(r)
        base, rerun = results[0], results[-1]
        leak = base["ranks"] != rerun["ranks"] or base["metrics"] != rerun["metrics"]
        texts = devset_texts(vault_dir)
        tok_rows = start_rows = []
        if not args.no_timing:
            tok_rows = time_tokenizers(texts, args.repeat)
            start_rows = time_startup(max(5, args.repeat // 2))

    problems = [f"{r['label']}: {p}" for r in results for p in r["problems"]]
    if leak:
        problems.append("the baseline re-run differs from the first baseline run: a patch leaked")
    chars = sum(len(t) for t in texts)
    cjk_chars = sum(sum(1 for ch in t if analysis.is_cjk_char(ch)) for t in texts)
    seen = machine(packages=("jieba",))

    out = [
        "# Retrieval ablation on the dev set",
        "",
        f"Date: {seen['date']} · Python {seen['python']} · jieba {seen['jieba']} · dev set: "
        f"{base['answerable'] + base['no_answer']} queries ({base['answerable']} answerable, {base['no_answer']} "
        f"no-answer), {base['docs']} index documents · source: commit {code_version()}.",
        "",
        "Reproduce (from the repository root):",
        "",
        "```sh",
        "/tmp/venv/bin/python benchmarks/ablation.py            # writes benchmarks/results/ablation.md",
        "```",
        "",
        "Each variant is a monkeypatch applied inside the script around an in-process "
        "`Vault(dir).evaluate(benchmarks/devset/queries.yaml, at=None)`, which rebuilds a fresh index in a "
        "temporary copy of the vault (the same path as `vaultmem eval … --at \"\"`). The script checks, for each "
        "run, that the patched tokenizer, field boosts and K1/B were the ones actually used to index and "
        "search, and re-runs the baseline last to show that nothing leaked"
        + (" (it matched)." if not leak else " (**it did not match**)."),
        "",
        "## Metrics",
        "",
        "Hit@5 per kind also gives the count of queries. One query is 0.013 of the 77 answerable queries, "
        "1/15 = 0.067 of the false-hit rate, and 0.071–0.125 of a per-kind Hit@5.",
        "",
        *metrics_table(results).splitlines(),
        "",
        "## Per-query changes against the baseline",
        "",
        *delta_table(base, results[1:-1]).splitlines(),
        "",
    ]
    if tok_rows:
        ref = tok_rows[0]["best"]
        out += [
            "## Tokenization speed",
            "",
            f"All dev-set texts that indexing and querying tokenize (title, body, aliases and near of every "
            f"index document, plus the queries): {len(texts)} texts, {chars} characters, {cjk_chars} of them CJK. "
            f"Best and median of {args.repeat} interleaved runs, warm (jieba's dictionary already loaded).",
            "",
            *table(["tokenizer", "best ms", "median ms", "tokens", "relative"],
                   [[r["label"], f"{r['best'] * 1e3:.1f}", f"{r['median'] * 1e3:.1f}", r["tokens"],
                     f"{r['best'] / ref:.2f}×"] for r in tok_rows]).splitlines(),
            "",
            "## Start-up cost (fresh interpreter)",
            "",
            "Wall time of `python -c …` in a new process (OS file cache warm). Importing `vaultmem.analysis` "
            "imports the whole `vaultmem` package (its `__init__` loads `Vault`). jieba builds its dictionary "
            "cache in the temp dir on first use; the script points `TMPDIR` at an empty folder to measure "
            "that first run once, then the cached case.",
            "",
            *table(["command", "median ms", "min ms", "runs"],
                   [[r["label"], f"{r['median'] * 1e3:.0f}", f"{r['min'] * 1e3:.0f}", r["n"]]
                    for r in start_rows]).splitlines(),
            "",
        ]
    out += ["## Conclusions", "", "<!-- conclusions -->", ""]
    if problems:
        out += ["## Problems", ""] + [f"- {p}" for p in problems] + [""]

    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(out)
    if args.out.exists():  # keep hand-written conclusions across re-runs
        old = args.out.read_text(encoding="utf-8")
        if "## Conclusions" in old:
            kept = old.split("## Conclusions", 1)[1].split("\n## ", 1)[0]
            text = text.replace("\n<!-- conclusions -->\n", kept.rstrip("\n").lstrip("\n").join(["\n", "\n"]), 1)
    args.out.write_text(text, encoding="utf-8")
    if args.summary:
        write_json(args.summary, [{
            "label": r["label"], "metrics": r["metrics"], "by_kind": r["by_kind"], "ranks": r["ranks"],
            "false_hits": sorted(r["false_hits"]), "terms": r["terms"], "problems": r["problems"],
        } for r in results] + [{"tokenize": tok_rows, "startup": start_rows}])
    log(f"wrote {args.out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
