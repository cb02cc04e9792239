"""What supersession by key and the conflicts report cost as a vault grows.

For each size: a vault of N notes (one in ten with a key, a few with values that
disagree) committed once; then, timed (median of --repeat runs, wall clock):

- ``same_key``: finding the active notes a new keyed note supersedes (``notes.same_key``,
  what every ``remember --key`` and every approved keyed ADD pays), next to
  ``slugs``: listing the notes folder, which every remember already paid before;
- ``remember --key``: the whole write through the facade, in this process (git commit
  included), next to ``remember``: the same write of a note without a key;
- ``conflicts``: ``views.conflicts(vault)``, the whole report;
- ``gc --dry-run``: ``upkeep.gc(vault, dry_run=True)`` a year later (every note scored; the
  episodes' share falls below the cut);
- ``doctor``: ``upkeep.doctor(vault)``, every check, the index already built (a first build
  is the index's cost, docs/benchmarks.md).

    python benchmarks/bench_forgetting.py --sizes 1000 10000 --repeat 5
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from report import table  # noqa: E402
from timing import log, median, samples  # noqa: E402
from vaultmem import Vault, notes, upkeep, views  # noqa: E402


def make(root: Path, n: int) -> Vault:
    """A vault of ``n`` notes committed once: one in ten keyed (ten notes a key, their
    ports disagreeing), of five types in turn. Local, not vaults.make_vault: the scenario
    needs keys, and values that disagree under one key."""
    v, _ = Vault.init(root, lang="en", orchestrator="orch")
    mem = root / "memories"
    for i in range(n):
        key = f"key: service{i // 10}.port\n" if i % 10 == 0 else ""
        type_ = ("fact", "episode", "preference", "decision", "procedure")[i % 5]
        mem.joinpath(f"note-{i:06d}.md").write_text(
            f"---\nname: note {i}\ntype: {type_}\nscope: global\nimportance: 0.5\n"
            f"created: 2026-01-01T00:00:00Z\nconfirmed: 2026-01-01T00:00:00Z\nstatus: active\n{key}---\n"
            f"Service {i} runs build {700000 + i} on port {8000 + i % 1000} with the team's usual settings.\n",
            encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@x", "commit", "-qm",
                    "bench notes"], check=True, capture_output=True)
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    few = max(1, args.repeat // 2)  # runs of the whole-vault reads
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            v = make(Path(tmp) / "v", n)
            meta = {"key": "service5.port", "scope": "global"}
            slugs = median(samples(lambda: notes.slugs(v.root), args.repeat, warm=0))
            same = median(samples(lambda: notes.same_key(v.root, meta), args.repeat, warm=0))
            actor = v.actor(None)
            count = iter(range(10**6))
            plain = median(samples(lambda: v.notes.remember(f"service 6 noted {next(count)}", actor, "fact"),
                                   args.repeat, warm=0))
            remember = median(samples(lambda: v.notes.remember(f"service 5 moved to port {9000 + next(count)}", actor,
                                                               "fact", key="service5.port"), args.repeat, warm=0))
            reports = []  # each run's report, kept for what it found
            conflicts = median(samples(lambda: reports.append(views.conflicts(v)), few, warm=0))
            later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=365)
            plans = []
            gc_dry = median(samples(lambda: plans.append(upkeep.gc(v, actor, dry_run=True, now=later)[0]), few,
                                    warm=0))
            v.refresh_index()
            doctor = median(samples(lambda: upkeep.doctor(v), few, warm=0))
            rows.append([f"{n:,}", f"{slugs * 1000:.1f}", f"{same * 1000:.1f}", f"{plain * 1000:.0f}",
                         f"{remember * 1000:.0f}", f"{conflicts:.2f}", len(reports[-1].conflicts), f"{gc_dry:.2f}",
                         f"{len(plans[-1].archive):,}", f"{doctor:.2f}"])
            log(" | ".join(map(str, rows[-1])))  # the table is printed at the end
    print(table(["notes", "slugs (ms)", "same_key (ms)", "remember (ms)", "remember --key (ms)", "conflicts (s)",
                 "conflicts found", "gc --dry-run (s)", "would archive", "doctor (s)"], rows), end="")


if __name__ == "__main__":
    main()
