"""Ablation of recall's ranking choices on the conversational dev sets.

    python benchmarks/ablation_conv.py [--split tune|holdout] [--engine whoosh|tantivy]
                                       [--variant NAME ...] [--out FILE.md]

Each variant changes one choice for the duration of its run by setting a module constant
of the installed package (nothing in ``vaultmem/`` is edited), then runs
``bench_conv.run_one`` — a fresh vault and index per run — for both languages and both
layouts (one note per turn, one per session), lexical channel only. The shipped settings
run first and again last: the two rows must be equal, or a patch leaked and the script
fails. Tune on ``--split tune`` only; ``holdout`` is for reporting.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_conv  # noqa: E402
from report import table  # noqa: E402
from timing import log  # noqa: E402

import vaultmem.analysis as analysis  # noqa: E402
import vaultmem.index.fields as fields  # noqa: E402
import vaultmem.index.tantivy_engine as tantivy_engine  # noqa: E402
import vaultmem.index.whoosh_engine as whoosh_engine  # noqa: E402
import vaultmem.parse.records as records  # noqa: E402
import vaultmem.retrieve as retrieve  # noqa: E402

MODULES = {"retrieve": retrieve, "records": records, "fields": fields, "analysis": analysis}
SHIPPED_FIELDS = fields.FIELDS


def _set_fields(value) -> None:
    """The field weights, everywhere they were read at import."""
    fields.FIELDS = whoosh_engine.FIELDS = value
    tantivy_engine.WEIGHTS = {**dict(value), "chars": 1.0}


@contextlib.contextmanager
def patched(changes: dict):
    saved = {}
    try:
        for key, value in changes.items():
            if key == "FIELDS":
                saved[key] = fields.FIELDS
                _set_fields(value)
            else:
                module, name = key.split(".")
                saved[key] = getattr(MODULES[module], name)
                setattr(MODULES[module], name, value)
        yield
    finally:
        for key, value in saved.items():
            if key == "FIELDS":
                _set_fields(value)
            else:
                module, name = key.split(".")
                setattr(MODULES[module], name, value)


def weights(**changed) -> tuple:
    return tuple((name, changed.get(name, boost)) for name, boost in SHIPPED_FIELDS)


VARIANTS = {
    "shipped": {},
    "no session neighbours": {"records.NEAR": 0},
    "neighbours ±1": {"records.NEAR": 1},
    "near weight 0.3": {"FIELDS": weights(near=0.3)},
    "near weight 1.0": {"FIELDS": weights(near=1.0)},
    "title 1.0, aliases 0.5": {"FIELDS": weights(title=1.0, aliases=0.5)},
    "speaker's name at near weight": {"fields.SPEAKER": "near"},
    "speaker's name left out": {"fields.SPEAKER": "strip"},
    "no date boost": {"retrieve.DATE_BOOST": 0.0},
    "date boost 2": {"retrieve.DATE_BOOST": 2.0},
    "no question demotion, no reply credit": {"retrieve.ASKING": 1.0, "retrieve.REPLY_CREDIT": 0.0},
    "question demotion 0.6, no reply credit": {"retrieve.ASKING": 0.6, "retrieve.REPLY_CREDIT": 0.0},
}
COLUMNS = ("hit@1", "hit@5", "mrr@10", "recall@5", "false_hits", "brief_coverage")


def rows_of(name: str, split: str, engine: str) -> list[list]:
    """The table's rows of variant ``name``: one per language and layout with data."""
    out = []
    with patched(VARIANTS[name]):
        for lang in bench_conv.LANGS:
            for layout in bench_conv.LAYOUTS:
                r = bench_conv.run_one(split, lang, layout, "lexical", engine, {})
                if not r.available:
                    continue
                m = bench_conv.metrics(r.rows)
                out.append([name, lang, layout, m["questions"], *(bench_conv.fmt(m[c]) for c in COLUMNS)])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=bench_conv.SPLITS, default="tune")
    ap.add_argument("--engine", choices=("whoosh", "tantivy"), default="whoosh")
    ap.add_argument("--variant", action="append", choices=list(VARIANTS), help="only these (repeatable)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    names = ["shipped", *[v for v in (args.variant or VARIANTS) if v != "shipped"]]
    rows = []
    for name in names:
        got = rows_of(name, args.split, args.engine)
        log(f"{name}: {len(got)} vaults measured")
        rows += got
    text = (f"# Ablation on the conversational dev sets ({args.split} split, {args.engine}, lexical)\n\n"
            + table(["variant", "lang", "layout", "questions", *COLUMNS], rows))
    print(text, end="")
    if rows_of("shipped", args.split, args.engine) != [r for r in rows if r[0] == "shipped"]:
        print("the shipped settings gave other figures at the end: a patch leaked", file=sys.stderr)
        return 1
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
