"""Per-kind tables from saved ``bench_conv.py run --json`` results.

    python benchmarks/conv_table.py DIR SPLIT     # DIR holds SPLIT-<ranking>-<mode>.json files

Each file is one run's JSON (``--json`` output); its name says the ranking (rules, learned)
and the mode (lex, hyb, e5, e5ranker). Prints, per language and layout, Hit@1/Hit@5 per question kind
for every file present, the brief's evidence coverage with its gate / with it open on the
'all' row, and search and brief false hits on the no-answer row.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_conv import LANGS, LAYOUTS, fmt  # noqa: E402

# e5: e5 fused by RRF after the order; e5ranker: ordered by the ranker trained on e5's similarity
ORDER = ("rules-lex", "rules-hyb", "rules-e5", "learned-lex", "learned-hyb", "learned-e5", "learned-e5ranker")


def cell(m: dict, kind: str) -> str:
    """One run's figures for ``kind`` (``all``: every question, with the brief's coverage)."""
    if kind == "no-answer":
        return f"false {m['false_hits']:.2f} brief {m['brief_false_hits']:.2f}/{m['open_false_hits']:.2f}"
    brief = f" br {fmt(m['brief_coverage'])}/{fmt(m['open_coverage'])}" if kind == "all" else ""
    return f"{fmt(m['hit@1'])}/{fmt(m['hit@5'])}{brief}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="the folder of SPLIT-<ranking>-<mode>.json files")
    ap.add_argument("split", help="the split whose files to read (tune, holdout)")
    args = ap.parse_args(argv)
    runs = {p.stem.removeprefix(f"{args.split}-"): json.loads(p.read_text())
            for p in args.dir.glob(f"{args.split}-*.json")}
    for layout in LAYOUTS:
        for lang in LANGS:
            per = {c: r for c in ORDER if c in runs for r in runs[c] if r["lang"] == lang and r["layout"] == layout}
            if not per:
                continue
            cols = list(per)
            print(f"\n{args.split} {lang} {layout}: Hit@1/Hit@5 per kind  [" + " | ".join(cols) + "]")
            first = per[cols[0]]
            for k in ["all", *first["by_kind"]]:
                figures = {c: per[c]["metrics"] if k == "all" else per[c]["by_kind"][k] for c in cols}
                n = figures[cols[0]]["questions"]
                print(f"  {k:12} n={n:3} " + " | ".join(cell(figures[c], k) for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
