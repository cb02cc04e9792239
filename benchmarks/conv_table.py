"""Per-kind tables from saved ``bench_conv.py run --json`` results.

    python benchmarks/conv_table.py DIR SPLIT     # DIR holds SPLIT-<ranking>-<mode>.json files

Each file is one run's JSON (``--json`` output); its name says the ranking (rules, learned)
and the mode (lex, hyb, e5, e5ranker). Prints, per language and layout, Hit@1/Hit@5 per question kind
for every file present, the brief's evidence coverage with its gate / with it open on the
'all' row, and search and brief false hits on the no-answer row.
"""

import json
import sys
from pathlib import Path

# e5: e5 fused by RRF after the order; e5ranker: ordered by the ranker trained on e5's similarity
ORDER = ("rules-lex", "rules-hyb", "rules-e5", "learned-lex", "learned-hyb", "learned-e5", "learned-e5ranker")


def main(folder: str, split: str) -> None:
    runs = {p.stem.removeprefix(f"{split}-"): json.loads(p.read_text()) for p in Path(folder).glob(f"{split}-*.json")}
    for layout in ("turn", "session"):
        for lang in ("en", "zh"):
            per = {c: r for c in ORDER if c in runs for r in runs[c] if r["lang"] == lang and r["layout"] == layout}
            if not per:
                continue
            cols = list(per)
            print(f"\n{split} {lang} {layout}: Hit@1/Hit@5 per kind  [" + " | ".join(cols) + "]")
            first = per[cols[0]]
            for k in ["all", *first["by_kind"]]:
                cells = []
                for c in cols:
                    m = per[c]["metrics"] if k == "all" else per[c]["by_kind"][k]
                    if k == "no-answer":
                        cells.append(f"false {m['false_hits']:.2f} brief {m['brief_false_hits']:.2f}/{m['open_false_hits']:.2f}")
                    else:
                        cells.append(f"{m['hit@1']:.3f}/{m['hit@5']:.3f}"
                                     + (f" br {m['brief_coverage']:.3f}/{m['open_coverage']:.3f}" if k == "all" else ""))
                n = (first["metrics"] if k == "all" else first["by_kind"][k])["questions"]
                print(f"  {k:12} n={n:3} " + " | ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
