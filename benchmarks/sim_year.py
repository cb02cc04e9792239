"""A year of simulated use: does a vault stay within its caps, and do its briefs stay good?

Starts from the dev-set vault (benchmarks/devset: 77 answerable questions with their
notes) and lives through --days days. Each day it writes --per-day new notes (episodes
most, then facts, preferences, decisions, procedures; one in twenty with a key that an
earlier note has, so it supersedes it as ``remember`` would), recalls a handful — a few
of the day's own, and --asked of the dev-set questions, whose cited notes count as used
(what users keep asking about) — and at the end of each simulated month commits, runs
the real ``upkeep.gc`` at that date, refreshes the index and measures:

- active notes by type against ``forgetting.caps`` (set here: episode --cap-episode);
The year starts the day after the dev set's newest note, so its memory is current then.

- the dev set's brief coverage at 1,500 tokens: the share of answerable questions whose
  brief cites an expected note (the monthly measurement records no use of its own).

Notes are written as files (as an import or a sync would bring them) and committed once
a month, so a year of 100,000 notes runs in minutes; gc, the index and the brief are the
product's own.

    python benchmarks/sim_year.py --days 365 --per-day 274 --out benchmarks/results/sim-year.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench_devset import devset_queries, make_devset  # noqa: E402
from report import table  # noqa: E402
from timing import log, samples  # noqa: E402

from vaultmem import Vault, layout, pages, recall, upkeep, usage  # noqa: E402

TYPES = (("episode", 0.6), ("fact", 0.2), ("preference", 0.08), ("decision", 0.07), ("procedure", 0.05))
WORDS = ("deploy cache queue billing invoice sprint retro outage latency schema migration index replica "
         "frontend backend gateway token session review onboarding roadmap budget vendor contract").split()


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def stamp(day: dt.datetime) -> str:
    return day.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_note(root: Path, slug: str, type_: str, day: dt.datetime, rng: random.Random, key: str | None) -> None:
    """One note of the day, written as a file (local, not vaults.make_vault: the year needs
    notes dated day by day, of weighted types, keyed where they supersede)."""
    words = " ".join(rng.sample(WORDS, 5))
    meta = (f"---\nname: {slug}\ndescription: {words}\ntype: {type_}\nscope: global\n"
            f"importance: {rng.choice((0.3, 0.5, 0.5, 0.7, 0.9))}\ncreated: {stamp(day)}\nconfirmed: {stamp(day)}\n"
            f"status: active\n" + (f"key: {key}\n" if key else "") + "---\n")
    (root / "memories" / f"{slug}.md").write_text(f"{meta}On {day:%Y-%m-%d} the team talked about {words}.\n",
                                                  encoding="utf-8")


def supersede(root: Path, old: str, new: str, day: dt.datetime) -> None:
    """What notes.plan_add does to the note a keyed one supersedes, as files."""
    src = root / "memories" / f"{old}.md"
    text = src.read_text(encoding="utf-8").replace("status: active\n", "status: superseded\n", 1)
    text = text.replace("---\nOn ", f"archived: {stamp(day)}\narchived_from: memories/{old}\n"
                                     f"superseded_by: memories/{new}\n---\nOn ", 1)
    (root / layout.ARCHIVED_NOTES_DIR).mkdir(parents=True, exist_ok=True)
    (root / layout.ARCHIVED_NOTES_DIR / f"{old}.md").write_text(text, encoding="utf-8")
    src.unlink()


def coverage(v: Vault, queries: list[dict]) -> float:
    """Share of answerable dev-set questions whose 1,500-token brief cites an expected note."""
    hit = 0
    v.refresh_index()
    roles = pages.role_files(v.root)
    for q in queries:
        agent = q.get("agent") or "lee"
        page = layout.page_path(roles[agent]) if agent in roles else None
        made = recall.brief(v.root, v.config, v.index, [], agent, q["query"], 1500, pages.today(), page=page)
        cited = {i["path"] + (f"#^{i['entry_id']}" if i.get("entry_id") else "") for i in made.items}
        hit += bool(cited & set(q["expected"]))
    return hit / len(queries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--per-day", type=int, default=274)
    ap.add_argument("--asked", type=int, default=3, help="dev-set questions asked per simulated day")
    ap.add_argument("--cap-episode", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-gc", action="store_true", help="the peer: the same year without gc (nothing forgotten)")
    ap.add_argument("--out")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    queries = [q for q in devset_queries() if q.get("expected")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        make_devset(root)
        cfg = root / ".vaultmem" / "config.yaml"
        text = cfg.read_text(encoding="utf-8")
        if "forgetting:" not in text:
            text += "\nforgetting:\n  caps: {}\n"
        cfg.write_text(text.replace("  caps: {}", f"  caps:\n    episode: {args.cap_episode}"), encoding="utf-8")
        if not (root / ".git").exists():
            git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "-c", "user.name=sim", "-c", "user.email=sim@x", "commit", "-qm", "sim: the dev set, with caps")
        v = Vault.open(root)
        # the simulated year starts the day after the dev set's newest note: its memory is current then
        newest = max(str(meta.get("confirmed") or meta.get("created") or "")[:10] for _p, meta in dev_notes(root))
        start = dt.datetime.fromisoformat(newest).replace(hour=9, tzinfo=dt.timezone.utc) + dt.timedelta(days=1)
        keyed: list[tuple[str, str]] = []  # (key, slug of its active note)
        written = superseded = 0
        rows.append(("0", 0, *counts(root), 0, 0, round(coverage(v, queries), 3), 0.0))
        for d in range(1, args.days + 1):
            day = start + dt.timedelta(days=d)
            made = []
            for n in range(args.per_day):
                type_ = rng.choices([t for t, _ in TYPES], [w for _, w in TYPES])[0]
                slug = f"d{d:03d}-{n:04d}"
                key = None
                if type_ in ("fact", "preference") and keyed and rng.random() < 0.25:
                    i = rng.randrange(len(keyed))
                    key, old = keyed[i]
                    if (root / "memories" / f"{old}.md").exists():
                        supersede(root, old, slug, day)
                        superseded += 1
                    keyed[i] = (key, slug)
                elif type_ in ("fact", "preference") and rng.random() < 0.1:
                    key = f"k{d}.{n}"
                    keyed.append((key, slug))
                write_note(root, slug, type_, day, rng, key)
                made.append(f"memories/{slug}.md")
            written += args.per_day
            usage.record_use(root, rng.sample(made, min(5, len(made))), "search", when=day)
            for q in rng.sample(queries, args.asked):
                usage.record_use(root, [p for p in q["expected"] if p.startswith("memories/")], "brief",
                                 when=day)
            if d % 30 == 0 or d == args.days:
                git(root, "add", "-A")
                git(root, "-c", "user.name=sim", "-c", "user.email=sim@x", "commit", "-qm", f"sim: day {d}")
                v = Vault.open(root)
                plans = []  # what gc archived (a dry run archives nothing)
                gc_s = samples(lambda: plans.append(upkeep.gc(v, v.actor(None), now=day, dry_run=args.no_gc)[0]), 1,
                               warm=0)[0]
                archived = 0 if args.no_gc else len(plans[0].archive)
                rows.append((str(d // 30 if d % 30 == 0 else f"{d / 30:.1f}"), written, *counts(root), archived,
                             superseded, round(coverage(v, queries), 3), round(gc_s, 1)))
                log(str(rows[-1]))
    out = table(["month", "notes written", "active", "active episodes (cap)", "archived so far", "gc archived",
                 "superseded so far", "dev-set brief coverage", "gc (s)"],
                [[m, f"{w:,}", f"{act:,}", f"{ep:,} ({args.cap_episode:,})", f"{arch:,}", f"{gone:,}", f"{sup:,}",
                  f"{cov:.3f}", gcs] for m, w, act, ep, arch, gone, sup, cov, gcs in rows])
    print(out, end="")
    if args.out:
        Path(args.out).write_text(f"# A simulated year (benchmarks/sim_year.py)\n\n`python benchmarks/sim_year.py "
                                  f"--days {args.days} --per-day {args.per_day} --asked {args.asked} "
                                  f"{'--no-gc ' if args.no_gc else ''}"
                                  f"--cap-episode {args.cap_episode} --seed {args.seed}`\n\n{out}", encoding="utf-8")


def dev_notes(root: Path):
    from vaultmem.parse.document import parse_document, plain

    for p in sorted((root / "memories").glob("*.md")):
        doc = parse_document(p.read_text(encoding="utf-8"), p.name, require_frontmatter=False, fast=True)
        yield p, plain(doc.meta) or {}


def counts(root: Path) -> tuple[int, int, int]:
    """(active notes, active episodes, archived notes)."""
    types = Counter()
    for p in (root / "memories").glob("*.md"):
        head = p.read_text(encoding="utf-8")[:400]
        types["episode" if "type: episode" in head else "other"] += 1
    archive = root / layout.ARCHIVED_NOTES_DIR
    return sum(types.values()), types["episode"], len(list(archive.glob("*.md"))) if archive.is_dir() else 0


if __name__ == "__main__":
    main()
