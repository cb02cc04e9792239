"""What one installation answers on one vault: every hit's id, score, coverage and snippet, as JSON.

    python benchmarks/same_answers.py VAULT > new.json
    env PYTHONPATH=OLD python benchmarks/same_answers.py VAULT > old.json
    cmp old.json new.json                 # a change meant only to be faster: no difference

    python benchmarks/same_answers.py --briefs COPY_A > new.json   # the five briefs, whole
    env PYTHONPATH=OLD python benchmarks/same_answers.py --briefs COPY_B > old.json

The queries of vaults.py (QUERIES), its five brief tasks and six with syntax (a date, OR,
a phrase and an exclusion, prefixes — one that begins no word), each at limits 10 and 30,
read as `vaultmem search` reads them (`query.parse`) and searched with `retrieve.search`
under the vault's ranking or `--ranking`; scores to nine decimals. Run
both installations on one vault (the index as one of them built it) to compare what they
answer, or on two vaults to compare two indexes — an updated one and one built afresh.
`--briefs`: instead, the brief of each of the five tasks for its role (its Markdown and
its items), as `vaultmem brief` makes it. A brief records what it recalled, which orders
the next one: give each installation its own copy of the vault.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

# vaultmem first: vaults.py puts this checkout on sys.path, and the installation measured is
# the one that runs this script (PYTHONPATH=OLD for another).
from vaultmem.index import Filters
from vaultmem.query import parse
from vaultmem.retrieve import search
from vaultmem.vault import Vault
from vaults import BRIEF_TASKS, QUERIES

SYNTAX = ["2024-05-03 部署", "redis OR kafka", "\"connection pool\" -postgres", "What did the frontend reviewer decide about caching?",
          "kafk* retry", "redis zzqx*"]


def answers(vault: Vault) -> dict[str, list]:
    """``"query|limit"`` → ``[id, score, coverage, snippet]`` of each hit, best first."""
    out = {}
    for q in [*QUERIES, *(task for _role, task in BRIEF_TASKS), *SYNTAX]:
        for limit in (10, 30):
            out[f"{q}|{limit}"] = [[h.doc.id, round(h.score, 9), round(h.coverage, 6), h.snippet]
                                   for h in search(vault.index, parse(q), Filters(), limit)]
    return out


def briefs(vault: Vault) -> dict[str, dict]:
    """``"role|task"`` → the brief's Markdown, items and layers."""
    out = {}
    for role, task in BRIEF_TASKS:
        b = vault.brief(role, task)
        out[f"{role}|{task}"] = {"markdown": b.markdown, "items": b.items, "layers": b.layers}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--ranking", choices=("learned", "rules"), help="instead of the vault's search.ranking")
    ap.add_argument("--briefs", action="store_true", help="the five tasks' briefs instead of the searches")
    args = ap.parse_args()
    if args.ranking:
        os.environ["VAULTMEM_SEARCH_RANKING"] = args.ranking
    vault = Vault(args.vault)
    vault.refresh_index()
    print(json.dumps(briefs(vault) if args.briefs else answers(vault), ensure_ascii=False, indent=0, default=str))


if __name__ == "__main__":
    main()
