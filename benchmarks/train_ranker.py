"""Train the learned ranker (``vaultmem/ranker.py``) on the tune split, and measure it.

    python benchmarks/train_ranker.py cv     [--model linear|trees|all] [--features SET] [--out FILE.md]
    python benchmarks/train_ranker.py train  [--model linear|trees] [--to vaultmem/data/ranker.json]
    python benchmarks/train_ranker.py ablate [--model linear|trees] [--out FILE.md]
    … --similarity e5    with each candidate's similarity by that search.model as a feature
                         (train writes vaultmem/data/ranker-e5.json; needs the semantic extra)

What it learns from: every question of the **tune** split only — the conversational sets
(``benchmarks/devset/conv/tune``, English and Chinese, one note per turn and one per
session) and the fact-style dev set (``benchmarks/devset``) — each question's candidates as
the engine finds them (``retrieve.learned_candidates``: the first ``LEARNED_POOL``), a
candidate labelled 1 when it is the question's evidence. The holdout split is never read
here: ``bench_conv.py run --split holdout`` measures the shipped model once it is chosen.
The model trained ``--similarity e5`` orders searches whose semantic channel is e5
(``retrieve.fused_search``); the plain one, every other.

``cv`` holds out one conversation of each language at a time (six folds; the dev set's
queries are dealt to the folds in turn), trains on the rest and ranks the held-out
questions' candidates: Hit@1 / Hit@5 / MRR@10 beside the hand-set rules on the same
candidates. ``train`` fits the chosen model on all of the tune split and writes it as
plain data. ``ablate`` trains without each group of features in turn (cross-validated).

Needs the ``bench`` extra (scikit-learn, lightgbm): ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_conv  # noqa: E402
from bench_devset import devset_queries, first_rank, make_devset  # noqa: E402
from report import table  # noqa: E402

FOLDS = 6
# the groups of features an ablation leaves out, one at a time
GROUPS = {
    "engine score and rank": ("engine", "engine_log", "inv_rank"),
    "relevance (own text)": ("rel_own", "holds_word", "rel_text", "coverage", "title_share"),
    "neighbours' text": ("rel_near", "neighbour", "prev_rel", "next_rel"),
    "dates": ("date_asked", "date_match"),
    "question-shaped, reply": ("asks", "after_question"),
    "speaker named, addressed": ("speaker_named", "other_named", "second_person", "addressed"),
    "answer kind": ("answer_asked", "answer_missing"),
    "entry kind, own, length, age": ("own", "entry", "note", "length", "recency"),
    "similarity (with --similarity)": ("similarity", "has_similarity"),
}
UNUSED = ("similarity", "has_similarity")  # the lexical search scores no similarity


@dataclass
class Question:
    set: str  # e.g. conv-en-turn, devset
    fold: int
    qid: str
    kind: str
    expected: set
    ids: list = field(default_factory=list)  # the candidates' ids, in engine order
    rows: list = field(default_factory=list)
    rules: list = field(default_factory=list)  # ids in the hand-set rules' order
    leads: list = field(default_factory=list)  # whether each candidate may lead (ranker.answers_in_words)
    replies: dict = field(default_factory=dict)  # a turn that asks → its reply (ranker.answering_replies)

    def labels(self) -> list[int]:
        return [1 if i in self.expected else 0 for i in self.ids]


ENGINES = ("whoosh", "tantivy")


def collect(split: str = "tune", engines: tuple[str, ...] = ENGINES, similarity: str | None = None
            ) -> list[Question]:
    """Every question of ``split`` with its candidates' feature rows, once per engine in
    ``engines`` (their BM25 differs a little: a model trained on both ranks either). With
    ``similarity`` (a ``search.model``, e.g. ``e5``) each candidate's row also holds its
    cosine similarity to the question, as the semantic channel scores it."""
    import os

    out = []
    before = os.environ.get("VAULTMEM_INDEX_ENGINE")
    try:
        for engine in engines:
            os.environ["VAULTMEM_INDEX_ENGINE"] = engine
            for q in collect_one(split, similarity):
                q.set = f"{q.set}@{engine}" if len(engines) > 1 else q.set
                out.append(q)
    finally:
        if before is None:
            os.environ.pop("VAULTMEM_INDEX_ENGINE", None)
        else:
            os.environ["VAULTMEM_INDEX_ENGINE"] = before
    return out


def collect_one(split: str, similarity: str | None = None) -> list[Question]:
    """Every question of ``split`` with its candidates' feature rows, on the engine
    ``$VAULTMEM_INDEX_ENGINE`` names (with their similarity to the question by the model
    ``similarity`` names, when one is named)."""
    from vaultmem.index import Filters
    from vaultmem.ranker import answering_replies, answers_in_words
    from vaultmem.retrieve import learned_candidates, unit_weights
    from vaultmem.vault import Vault

    out: list[Question] = []
    with tempfile.TemporaryDirectory(prefix="train-ranker-") as tmp:
        for lang in bench_conv.LANGS:
            convs = [c["id"] for c in bench_conv.conversations(split, lang)]
            for layout in bench_conv.LAYOUTS:
                root = Path(tmp) / f"{lang}-{layout}"
                settings = {"search.semantic": "off"} if not similarity else {"search.model": similarity}
                queries = bench_conv.build(root, split, lang, layout, settings=settings, git=False)
                v = Vault.open(root)
                v.search("warm up", limit=1)
                if similarity:
                    v.index.sync_vectors()
                for q in queries:
                    conv = q["id"].rsplit("-q", 1)[0]
                    cands, rows, rules = learned_candidates(v.index, q["query"], Filters())
                    if similarity:
                        with_similarity(v.index, q["query"], Filters(), cands, rows)
                    out.append(Question(f"conv-{lang}-{layout}", convs.index(conv) % FOLDS, q["id"], q["kind"],
                                        set(q["expected"]), [c.doc.id for c in cands], rows, rules,
                                        [answers_in_words(c) for c in cands],
                                        answering_replies(cands, unit_weights(v.index, q["query"]))))
        if split == "tune":
            root = make_devset(Path(tmp) / "devset")
            queries = devset_queries()
            if similarity:
                bench_conv.set_config(root, {"search.model": similarity})
            v = Vault.open(root)
            v.search("warm up", limit=1)
            if similarity:
                v.index.sync_vectors()
            for n, q in enumerate(queries):
                cands, rows, rules = learned_candidates(v.index, q["query"], Filters(agent=q.get("agent")))
                if similarity:
                    with_similarity(v.index, q["query"], Filters(agent=q.get("agent")), cands, rows)
                out.append(Question("devset", n % FOLDS, q["id"], q["kind"], set(q.get("expected") or []),
                                    [c.doc.id for c in cands], rows, rules, [answers_in_words(c) for c in cands],
                                    answering_replies(cands, unit_weights(v.index, q["query"]))))
    return out


def with_similarity(store, question: str, filters, cands: list, rows: list[list[float]]) -> None:
    """Fill ``rows``' similarity slots: each candidate's cosine similarity to ``question``
    by the vault's semantic channel (left 0, "not scored", for one without a vector)."""
    from vaultmem.ranker import FEATURES

    _hits, sims = store.semantic_search(question, filters, 1, also=[c.doc.id for c in cands])
    at, has = FEATURES.index("similarity"), FEATURES.index("has_similarity")
    for c, row in zip(cands, rows):
        if c.doc.id in sims:
            row[at], row[has] = float(sims[c.doc.id]), 1.0


def columns(names: tuple[str, ...]) -> list[int]:
    from vaultmem.ranker import FEATURES

    return [FEATURES.index(n) for n in names]


def used_features(drop: tuple[str, ...] = (), similarity: bool = False) -> tuple[str, ...]:
    from vaultmem.ranker import FEATURES

    unused = () if similarity else UNUSED
    return tuple(f for f in FEATURES if f not in unused and f not in drop)


def fit(kind: str, questions: list[Question], names: tuple[str, ...], params: dict | None = None) -> dict:
    """A model (as ``vaultmem/data/ranker.json`` holds it) trained on ``questions``."""
    import numpy as np

    cols = columns(names)
    train = [q for q in questions if q.ids and any(q.labels())]
    x = np.array([[r[c] for c in cols] for q in train for r in q.rows], dtype=float)
    y = np.array([lab for q in train for lab in q.labels()])
    params = params or {}
    if kind == "linear":
        from sklearn.linear_model import LogisticRegression

        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale[scale == 0] = 1.0
        clf = LogisticRegression(C=params.get("C", 1.0), class_weight="balanced", max_iter=2000)
        clf.fit((x - mean) / scale, y)
        return {"kind": "linear", "features": list(names), "mean": mean.round(6).tolist(),
                "scale": scale.round(6).tolist(), "weights": clf.coef_[0].round(6).tolist(),
                "bias": round(float(clf.intercept_[0]), 6)}
    import lightgbm as lgb

    groups = [len(q.ids) for q in train]
    ranker = lgb.LGBMRanker(objective="lambdarank", n_estimators=params.get("trees", 100),
                            num_leaves=params.get("leaves", 7), learning_rate=params.get("rate", 0.05),
                            min_child_samples=params.get("min_child", 40), subsample=0.8, subsample_freq=1,
                            colsample_bytree=0.8, reg_lambda=1.0, random_state=7, verbose=-1,
                            lambdarank_truncation_level=10)
    ranker.fit(x, y, group=groups)
    return {"kind": "trees", "features": list(names), "trees": export_trees(ranker.booster_.dump_model())}


def export_trees(dump: dict) -> list[list]:
    """LightGBM's trees as flat node lists: ``[feature, threshold, left, right]`` or a
    leaf ``[value]`` (node 0 the root), the form :class:`vaultmem.ranker.Model` reads."""
    out = []
    for info in dump["tree_info"]:
        nodes: list = []

        def add(node) -> int:
            at = len(nodes)
            nodes.append(None)
            if "leaf_value" in node:
                nodes[at] = [round(node["leaf_value"], 6)]
                return at
            assert node["decision_type"] == "<=" and not node.get("default_left") is None
            left, right = add(node["left_child"]), add(node["right_child"])
            nodes[at] = [node["split_feature"], round(float(node["threshold"]), 6), left, right]
            return at

        add(info["tree_structure"])
        out.append(nodes)
    return out


def measure(questions: list[Question], orders: dict[str, list[str]]) -> dict:
    """Hit@1, Hit@5, MRR@10 of the answerable questions, by set, for ``orders`` (qid →
    ids best first)."""
    out: dict[str, dict] = {}
    for name in sorted({q.set for q in questions}) + ["all"]:
        qs = [q for q in questions if q.expected and (name == "all" or q.set == name)]
        firsts = [first_rank(orders[q.set + q.qid], q.expected) for q in qs]
        out[name] = {"n": len(qs),
                     "hit@1": sum(1 for r in firsts if r == 1) / len(qs),
                     "hit@5": sum(1 for r in firsts if r and r <= 5) / len(qs),
                     "mrr@10": sum(1 / r for r in firsts if r and r <= 10) / len(qs)}
    return out


def order_by(model: dict, q: Question) -> list[str]:
    """The candidates' ids as search orders them with ``model``: by its scores, those that
    may not lead (``ranker.answers_in_words``) after those that may, and the reply to a
    turn that asks the question just before that turn (``ranker.replies_first``)."""
    from vaultmem.ranker import Model
    from vaultmem.ranker import replies_first

    if len(q.leads) != len(q.ids):  # (zip would drop candidates without a word)
        raise ValueError(f"{q.qid}: {len(q.ids)} candidates but {len(q.leads)} lead flags")
    scores = Model(model).score(q.rows)
    order = sorted(range(len(q.ids)), key=lambda n: (not q.leads[n], -scores[n], q.ids[n]))
    return [q.ids[n] for n in replies_first(order, q.replies)[0]]


def cross_validate(questions: list[Question], kind: str, names: tuple[str, ...], params: dict | None = None
                   ) -> dict[str, list[str]]:
    orders = {}
    for fold in range(FOLDS):
        model = fit(kind, [q for q in questions if q.fold != fold], names, params)
        for q in questions:
            if q.fold == fold:
                orders[q.set + q.qid] = order_by(model, q)
    return orders


def figures(rows: list[tuple[str, dict]]) -> str:
    """``rows`` (a label, :func:`measure`'s figures) as a Markdown table: a column per set."""
    sets = list(rows[0][1])
    return table(["ranking", *(f"{s} (n={rows[0][1][s]['n']})" for s in sets)],
                 [[label, *(f"{m[s]['hit@1']:.3f} / {m[s]['hit@5']:.3f} / {m[s]['mrr@10']:.3f}" for s in sets)]
                  for label, m in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=("cv", "train", "ablate"))
    ap.add_argument("--model", choices=("linear", "trees", "all"), default="all",
                    help="for train and ablate: the first of them (trees unless linear is named)")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a model parameter (C, trees, "
                    "leaves, rate, min_child)")
    ap.add_argument("--engine", choices=(*ENGINES, "both"), default="both")
    ap.add_argument("--to", type=Path, help="where train writes the model (vaultmem/data/ranker.json, or "
                    "ranker-MODEL.json with --similarity)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--similarity", metavar="MODEL", help="also learn from each candidate's similarity to the "
                    "question by this search.model (e.g. e5; needs the semantic extra)")
    args = ap.parse_args(argv)
    if args.to is None:
        args.to = HERE.parent / "vaultmem" / "data" / (f"ranker-{args.similarity}.json" if args.similarity
                                                       else "ranker.json")
    params = {k: float(v) if "." in v else int(v) for k, _, v in (p.partition("=") for p in args.param)}
    questions = collect("tune", ENGINES if args.engine == "both" else (args.engine,), args.similarity)
    names = used_features(similarity=bool(args.similarity))
    lines = [f"# The learned ranker on the tune split ({args.cmd})", "",
             f"{sum(1 for q in questions if q.expected)} answerable questions; cells: Hit@1 / Hit@5 / MRR@10 over "
             f"each question's first {len(questions[0].ids) if questions else 0}-odd candidates; "
             f"{'six-fold cross-validation by conversation' if args.cmd != 'train' else 'trained on all'}.", ""]
    kinds = ("trees", "linear") if args.model == "all" else (args.model,)
    if args.cmd == "cv":
        rows = [("engine (BM25)", measure(questions, {q.set + q.qid: q.ids for q in questions})),
                ("rules (shipped before)", measure(questions, {q.set + q.qid: q.rules for q in questions}))]
        for kind in kinds:
            rows.append((f"learned, {kind}", measure(questions, cross_validate(questions, kind, names, params))))
        lines += figures(rows).splitlines()
    elif args.cmd == "ablate":
        kind = kinds[0]
        rows = [(f"learned, {kind}, every feature", measure(questions, cross_validate(questions, kind, names, params)))]
        for group, drop in GROUPS.items():
            rows.append((f"without {group}", measure(questions, cross_validate(
                questions, kind, used_features(drop, bool(args.similarity)), params))))
        lines += figures(rows).splitlines()
    else:
        kind = kinds[0]
        model = fit(kind, questions, names, params)
        model["trained_on"] = (f"tune split: conv tune (en, zh; turn, session) and the dev set, on "
                               f"{' and '.join(ENGINES if args.engine == 'both' else (args.engine,))}"
                               + (f", with {args.similarity}'s similarity" if args.similarity else ""))
        model["params"] = params
        args.to.parent.mkdir(parents=True, exist_ok=True)
        args.to.write_text(json.dumps(model, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
        lines.append(f"wrote {args.to} ({kind}, {len(model['features'])} features, {args.to.stat().st_size:,} bytes)")
        from vaultmem.ranker import write_compiled

        compiled = write_compiled(args.to)  # its trees as one function, shipped beside it
        if compiled is not None:
            lines.append(f"wrote {compiled} (the trees compiled: a search scores with them from its first)")
        lines += figures([("learned, in sample", measure(questions, {q.set + q.qid: order_by(model, q)
                                                                      for q in questions}))]).splitlines()
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
