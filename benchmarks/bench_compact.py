"""What `vaultmem compact` and `vaultmem stats` cost.

compact: a role page with --entries working-memory lines (a dated lesson each, two
hundred a month) and a tenth as many sub-agent records, compacted to its default budget
(keep 50 lessons and 15 records): the dry run (plan and the page rewritten in memory,
checked by re-parsing) and the real run (plus the commit). stats: a vault of --notes
notes (bench_forgetting's) with one page, read whole.

    python benchmarks/bench_compact.py --entries 1000 5000 --notes 1000 10000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_forgetting import make  # noqa: E402

from report import table  # noqa: E402
from timing import log, median, samples  # noqa: E402
from vaultmem import Vault, upkeep, views  # noqa: E402


def page_vault(root: Path, n: int) -> Vault:
    """A vault whose one role page holds ``n`` lessons and ``n // 10`` sub-agent records,
    committed (local: vaults.make_vault's pages hold a few dozen entries each)."""
    v, _ = Vault.init(root, lang="en", orchestrator="orch")
    subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), "page", "ensure", "frontend"],
                   check=True, capture_output=True)
    path = root / "agents" / "frontend.md"
    text = path.read_text(encoding="utf-8")
    lessons = "".join(f"- 2026-{1 + (i // 200) % 12:02d}-{1 + i % 28:02d} | lesson {i}: cache keys need a version "
                      f"prefix ^m-{i:06x}\n" for i in range(n))
    records = "".join(f"\n### 2026-{1 + (i // 20) % 12:02d}-{1 + i % 28:02d} review {i}\n- **Task**: check {i}\n"
                      f"- **Conclusion**: fine\n- **Output**: report {i}\n- **Key decision**: keep it "
                      f"^r-{i:06x}\n" for i in range(n // 10))
    text = text.replace("while working -->\n", "while working -->\n" + lessons)
    text = text.replace("under this role -->\n", "under this role -->\n" + records)
    path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "page"],
                   check=True, capture_output=True)
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--notes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    compacts = []
    for n in args.entries:
        dry, real, moved, size = [], [], 0, 0
        for _ in range(args.repeat):  # a fresh page each time: the real run moves its entries out
            with tempfile.TemporaryDirectory() as tmp:
                v = page_vault(Path(tmp) / "v", n)
                size = (v.root / "agents" / "frontend.md").stat().st_size
                actor = v.actor(None)
                dry += samples(lambda: upkeep.compact(v, "frontend", actor, dry_run=True), 1, warm=0)
                plans = []
                real += samples(lambda: plans.append(upkeep.compact(v, "frontend", actor)[0]), 1, warm=0)
                moved = len(plans[0].moving)
        compacts.append([f"{n:,}", f"{size / 1024:.0f}", f"{median(dry):.2f}", f"{median(real):.2f}", f"{moved:,}"])
        log(" | ".join(compacts[-1]))
    print(table(["page entries", "page KB", "compact --dry-run (s)", "compact (s)", "moved"], compacts))
    stats = []
    for n in args.notes:
        with tempfile.TemporaryDirectory() as tmp:
            v = make(Path(tmp) / "v", n)
            v.refresh_index()
            stats.append([f"{n:,}", f"{median(samples(lambda: views.stats(v), args.repeat, warm=0)):.2f}"])
    print(table(["notes", "stats (s)"], stats), end="")


if __name__ == "__main__":
    main()
