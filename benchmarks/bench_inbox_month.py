"""A simulated month of sessions through the review gate (issue 29): how big the inbox
grows, with and without repeats joining the item already waiting, and how many items a
human must read.

Each session proposes a few facts through ``Vault.inbox.retain`` — what Claude Code's
Stop/SessionEnd hooks and ``vaultmem retain`` call — in one commit of a real git vault.
The facts are drawn so that a realistic share repeats: most of a team's sessions touch
the same few dozen facts (the port, the package manager, the deploy day), each said in
its own words now and then (case, punctuation, a word more), and the rest are new. A
fact's ground truth travels with it, so wrong joins (two facts made one item) and missed
ones (one fact filed as two waiting items) are counted, not assumed.

Two months are run on the same draw:

- **no review**: nobody decides anything all month;
- **review every N days** (``review.nudge_days``, default 3): a human approves every
  waiting item, group by group (``review approve --session S``: one commit a group), so
  that later repeats of what was approved are held by memory and not filed at all.

Without merging, every proposal is an item (today's gate files each one; the hooks only
leave out a fact repeated within one session, and the simulation draws none), so the
figures without merging are the proposals counted, not a second run.

    .venv/bin/python benchmarks/bench_inbox_month.py [--days 30] [--per-day 20] [--out benchmarks/results/inbox-month.md]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import table  # noqa: E402
from vaultmem import Vault  # noqa: E402

SERVICES = ["billing", "search", "auth", "gateway", "ledger", "mailer", "reports", "catalog", "checkout", "profile",
            "media", "notifier", "scheduler", "export", "import", "audit", "metrics", "admin", "pricing", "inventory"]
TEMPLATES = [
    "The {s} service listens on port {n}",
    "The {s} service keeps its logs for {n} days",
    "The {s} team deploys on day {n} of the sprint",
    "The {s} database is backed up every {n} hours",
    "The {s} service times out after {n} seconds",
    "The {s} queue retries a failed job {n} times",
]
HOT = 60  # the team's recurring facts
HOT_SHARE = 0.6  # of a session's proposals, the share drawn from them (the rest are new facts)
REWORD = 0.3  # of the repeats, the share said in other words


def fact_text(rng: random.Random, n: int) -> str:
    template = TEMPLATES[n % len(TEMPLATES)]
    return template.format(s=SERVICES[(n // len(TEMPLATES)) % len(SERVICES)], n=100 + n)


def reworded(text: str, rng: random.Random) -> str:
    return rng.choice([text.lower(), text + ".", text.upper()[:1] + text[1:] + "!", text.replace("The ", "Our ", 1),
                       text + ", as agreed"])


def draw(days: int, per_day: int, seed: int = 29) -> list[list[tuple[int, str]]]:
    """Each session's proposals: (the fact's ground truth, its text)."""
    rng = random.Random(seed)
    # the recurring facts, most said often, some rarely (a Zipf-like popularity)
    weights = [1 / (k + 1) ** 0.8 for k in range(HOT)]
    fresh = HOT
    sessions = []
    for _ in range(days * per_day):
        picked: list[tuple[int, str]] = []
        for _ in range(rng.choice([2, 3, 3, 4])):
            if rng.random() < HOT_SHARE:
                n = rng.choices(range(HOT), weights)[0]
                if any(f == n for f, _ in picked):
                    continue  # the hooks leave out a fact repeated within one session
                text = fact_text(rng, n)
                picked.append((n, reworded(text, rng) if rng.random() < REWORD else text))
            else:
                picked.append((fresh, fact_text(rng, fresh)))
                fresh += 1
        sessions.append(picked)
    return sessions


def month(sessions: list[list[tuple[int, str]]], per_day: int, review_every: float | None, root: Path) -> dict:
    v, _ = Vault.init(root, lang="en", orchestrator="orch")
    agent, human = v.actor("claude"), v.actor(None)
    truth: dict[str, int] = {}  # item id → fact
    note_truth: dict[str, int] = {}  # note path → fact
    wrong = held = joined = filed = 0
    read = 0  # items a human read to decide them (each once, a joined one once)
    largest = 0
    commits = 0
    started = time.perf_counter()
    last_review = 0
    for k, picked in enumerate(sessions):
        day = k // per_day
        facts = [{"type": "fact", "text": text, "author": "user", "author_kind": "user"} for _, text in picked]
        change = v.inbox.retain(agent, json.dumps(facts), "Stop hook", session=f"s-{k:04d}")
        commits += change.commit is not None
        d = change.details
        special = {j["position"]: ("joined", j["id"]) for j in d["joined"]}
        special.update({h["position"]: ("held", h["note"]) for h in d["held"]})
        new = iter(d["items"])
        for position, (fact, _) in enumerate(picked, 1):
            how, where = special.get(position, ("filed", None))
            if how == "filed":
                truth[next(new)["id"]] = fact
                filed += 1
            elif how == "joined":
                joined += 1
                wrong += truth[where] != fact
            else:
                held += 1
                wrong += note_truth.get(where, fact) != fact
        largest = max(largest, sum(1 for _ in (root / "inbox").glob("i-*.md")))
        if review_every is not None and (k + 1) % per_day == 0 and day + 1 - last_review >= review_every:
            last_review = day + 1
            waiting = v.inbox.items(fast=True)
            read += len(waiting)
            for session in sorted({str(i.meta.get("session")) for i in waiting}):
                done = v.inbox.decide_group(human, True, session=session)
                commits += 1
                for x in done.details["decided"]:
                    note_truth[x["result"]] = truth[x["id"]]
    waiting = v.inbox.items(fast=True)
    if review_every is None:
        read = len(waiting)
    else:
        read += len(waiting)  # what still waits at the month's end is read at the next review
    # missed joins: one fact waiting as two or more items
    by_fact: dict[int, int] = {}
    for i in waiting:
        by_fact[truth[i.id]] = by_fact.get(truth[i.id], 0) + 1
    return {"proposals": sum(len(p) for p in sessions), "filed": filed, "joined": joined, "held": held,
            "wrong_joins": wrong, "missed_joins": sum(n - 1 for n in by_fact.values() if n > 1),
            "waiting_at_end": len(waiting), "largest_inbox": largest, "items_read": read, "commits": commits,
            "seconds": round(time.perf_counter() - started, 1),
            "most_seen": max((int(i.meta.get("seen") or 1) for i in waiting), default=0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--per-day", type=int, default=20)
    ap.add_argument("--review-every", type=float, default=3, help="days between a human's reviews")
    ap.add_argument("--out", default=None, help="write the results table (Markdown) here")
    args = ap.parse_args()
    sessions = draw(args.days, args.per_day)
    proposals = sum(len(p) for p in sessions)
    distinct = len({f for p in sessions for f, _ in p})
    repeats = proposals - distinct
    reworded_n = sum(1 for p in sessions for f, t in p if f < HOT and t != fact_text(None, f))
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        rows["no review"] = month(sessions, args.per_day, None, Path(tmp) / "a")
        rows[f"review every {args.review_every:g} days"] = month(sessions, args.per_day, args.review_every,
                                                                  Path(tmp) / "b")
    without = {name: r["proposals"] if name == "no review" else "—" for name, r in rows.items()}  # the inbox unmerged
    results = table(
        ["month", "proposals", "items filed", "joined a waiting item", "held by memory (not filed)", "wrong joins",
         "missed joins", "inbox at the end, merged / without", "largest inbox, merged / without",
         "items a human reads, merged / without", "most-seen item", "commits", "seconds"],
        [[name, r["proposals"], r["filed"], r["joined"], r["held"], r["wrong_joins"], r["missed_joins"],
          f"{r['waiting_at_end']} / {without[name]}", f"{r['largest_inbox']} / {without[name]}",
          f"{r['items_read']} / {r['proposals']}", r["most_seen"], r["commits"], r["seconds"]]
         for name, r in rows.items()])
    lines = [
        "# A month of sessions through the review gate",
        "",
        f"`benchmarks/bench_inbox_month.py --days {args.days} --per-day {args.per_day} --review-every "
        f"{args.review_every:g}`: {args.days * args.per_day} sessions, {proposals} proposed facts "
        f"({distinct} distinct; {repeats} repeats = {repeats / proposals:.0%} of proposals, "
        f"{reworded_n} of them in other words). Each session files its facts through `Vault.inbox.retain` "
        "(what the Stop/SessionEnd hooks call), one commit each, in a real git vault. A session proposes 2–4 "
        f"facts; {HOT_SHARE:.0%} of them are drawn from {HOT} recurring team facts (Zipf-like: a few are said "
        f"in many sessions), {REWORD:.0%} of those reworded (case, punctuation, a word more); the rest are new.",
        "",
        "Without merging, every proposal is an item (the gate as it was: one item a proposal), so those columns "
        "are the proposals counted.",
        "",
        results,
        "Without merging and with a review every few days, the inbox holds what was proposed since the last review; "
        "the human still reads every proposal once (the last column). 'Largest inbox' without merging is shown for "
        "the month with no review (every proposal waits).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    print(json.dumps(rows, indent=1), file=sys.stderr)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
