"""A big role page (issue 28, point 8): parsing, indexing, the brief's page layer and
compaction stay linear in the page's size. Nothing here is timed: the tests check what
a big page gives (the same records as before, the newest entries in a brief and how many
it left out, every block id through a compaction) and count the work the brief's page
layer does (``benchmarks/bench_bigpage.py`` measures the seconds)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from vaultmem.brief import BriefParts, build_brief
from vaultmem.parse.records import records
from vaultmem.recall import page_layer

REL = "agents/kafka.md"
HEAD = """---
name: kafka
category: streaming
first_used: 2026-01-02
projects: [alpha, beta]
tags: [agent-memory]
type: agent-page
---
# kafka agent memory

## Project context
<!-- per project -->
- a bullet under no project ^c-none

### alpha
- alpha runs three brokers ^c-a1
- alpha keeps seven days of data
  and compacts its topics ^c-a2

### beta
- beta has one broker ^c-b1

## Working memory
<!-- lessons -->
"""


def _day(i: int) -> str:
    k = (i * 7919) % 360  # dates scattered over the page, not in page order
    return f"2026-{1 + k // 30:02d}-{1 + k % 28:02d}"


def big_page(n: int, relevant_at: int | None = None) -> str:
    """A page of ``n`` working-memory entries in every shape a human or vaultmem writes
    (continuation lines, blank lines, no id, no date, an id on another line, a code
    fence), and ``n // 50`` sub-agent records; entry ``relevant_at`` mentions the task's
    words (consumer lag)."""
    out = [HEAD]
    for i in range(n):
        what = "consumer lag grew on topic orders" if i == relevant_at else f"entry {i}: partition {i % 13} rebalanced"
        if i % 97 == 5:
            out.append(f"- {what} (undated) ^m-{i:06x}\n")
        elif i % 89 == 3:
            out.append(f"- {_day(i)} | {what}\n")  # no block id
        elif i % 83 == 7:
            out.append(f"- {_day(i)} | {what} ^m-{i:06x}\n  and a second line\n\n  after a blank line\n")
        elif i % 79 == 11:
            out.append(f"- {_day(i)} | {what} ^m-{i:06x}\n  ```\n  ## not a heading\n  ```\n")
        elif i % 73 == 13:
            out.append(f"- {_day(i)} | {what}\n  the id is on the first line? no: here ^m-{i:06x}\n")
        else:
            out.append(f"- {_day(i)} | {what} ^m-{i:06x}\n")
        if i % 211 == 0:
            out.append("\n")
    out.append("\n## Sub-agent records\n<!-- harvested -->\n")
    for r in range(n // 50):
        out.append(f"\n### {_day(r * 3)} review {r}\n- **Task**: check shard {r}\n- **Conclusion**: fine\n"
                   f"- **Output**: report {r}\n- **Key decision**: keep it ^r-{r:06x}\n")
    return "".join(out)


FIELDS = ("id", "path", "kind", "text", "title", "agent", "section", "status", "author_kind", "importance",
          "date", "days", "near", "entry_id", "project", "line")


def digest(docs) -> str:
    rows = [[getattr(d, f) for f in FIELDS] for d in docs]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


# the records of big_page(3000) as vaultmem gave them before the page was parsed in one
# pass with documents made on demand (commit 9eb9f57)
RECORDS_3000 = "c9d41f6804e4b11ce11825b6bb07462f165e514ae9eed5b3ca78e0914393d9ac"


def test_a_page_of_3000_entries_gives_the_same_records_as_before():
    docs = records(REL, big_page(3000))
    assert len(docs) == 3000 + 3000 // 50 + 4
    assert digest(docs) == RECORDS_3000


def test_a_brief_of_a_big_page_makes_only_the_entries_it_shows():
    """The page layer orders a page of 20,000 entries from its parsed entries and makes a
    hit (a document with its neighbours' text) only of those the brief reads: a small
    budget makes a few dozen, whatever the page's size; they are the newest, the task's
    relevant entry first, and the brief says how many it left out."""
    n = 20000
    text = big_page(n)
    today = dt.date(2026, 12, 31)
    own = page_layer(REL, text, [], "tune the brokers", None, 0.5, today, room=300)
    assert len(own) == n + n // 50 + 4
    brief = build_brief(BriefParts(agent="kafka", task="tune the brokers", page=own, page_path=REL), 1500)
    shown = brief.layers["page"]["shown"]
    assert 0 < shown < 60
    assert own.made <= shown + 2, f"{own.made} entries made into documents for {shown} shown"
    left = len(own) - shown
    assert f"… {left:,} more entries of this page not shown" in brief.markdown or \
        f"… {left} more entries of this page not shown" in brief.markdown
    # the newest first: project context, then the latest days of working memory and records
    work = [it for it in brief.items if it["section"] in ("work", "subagents")]
    newest = max(_day(i) for i in range(n) if i % 97 != 5)
    assert work and work[0]["date"] == newest
    assert [it["date"] for it in work] == sorted((it["date"] for it in work), reverse=True)


def test_the_page_layer_still_orders_the_whole_page():
    """Made lazily or not, the order is the page's own: the context of the projects the
    task names (and entries under none), then dated entries newest first — equal days by
    how often each was recalled, then the later line — undated ones last."""
    text = big_page(600)
    today = dt.date(2026, 12, 31)
    docs = {d.id: d for d in records(REL, text)}
    recalled = {"agents/kafka.md#^m-000001": (5, "2026-12-30")}
    own = page_layer(REL, text, [], "size alpha's brokers", None, 0.5, today, room=10, usage=lambda: recalled)
    got = [h.doc.id for h in own]
    assert own.made == len(got)
    kept = [d for d in docs.values() if d.section != "context" or d.project in (None, "alpha")]
    assert sorted(got) == sorted(d.id for d in kept)

    def key(d):
        ordinal = dt.date.fromisoformat(d.date).toordinal() if d.date else 0
        return ({"context": 0}.get(d.section, 1), -ordinal, -recalled.get(d.id, (0, ""))[0], -d.line)

    assert got == [d.id for d in sorted(kept, key=key)]


def _vm(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VAULTMEM_AGENT", "VAULTMEM_VAULT")}
    return subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _big_vault(root: Path, n: int, relevant_at: int | None = None) -> Path:
    r = subprocess.run([sys.executable, "-m", "vaultmem", "init", str(root), "--lang", "en"], capture_output=True,
                       text=True, env={k: v for k, v in os.environ.items() if k != "VAULTMEM_AGENT"}, check=False)
    assert r.returncode == 0, r.stderr
    page = root / REL
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(big_page(n, relevant_at), encoding="utf-8")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@x"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "a big page"], check=True, capture_output=True)
    return page


def test_the_brief_of_a_big_page_shows_the_relevant_then_newest_and_says_what_it_left_out(tmp_path):
    root = tmp_path / "v"
    _big_vault(root, 3000, relevant_at=1234)
    r = _vm(root, "--json", "brief", "kafka", "--task", "why did consumer lag grow", "--tokens", "900")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    page = [it for it in out["items"] if it["layer"] == "page"]
    shown, of = out["layers"]["page"]["shown"], out["layers"]["page"]["of"]
    assert shown == len(page) and of == 3000 + 60 + 4
    assert f"… {of - shown:,} more entries of this page not shown" in out["markdown"] or \
        f"… {of - shown} more entries of this page not shown" in out["markdown"]
    # shown grouped by section, each group best first: the entries the task's search found
    # relevant (the one that says it, then its neighbours), then the newest
    work = [it for it in page if it["section"] == "work"]
    flags = [bool(it.get("relevant")) for it in work]
    assert flags == sorted(flags, reverse=True) and work[0]["entry_id"] == f"m-{1234:06x}"
    dated = [it["date"] for it in work if not it.get("relevant")]
    assert dated and dated == sorted(dated, reverse=True)
    assert dated[0] == max(_day(i) for i in range(3000) if i % 97 != 5)


def test_compacting_a_big_page_keeps_every_block_id(tmp_path):
    root = tmp_path / "v"
    page = _big_vault(root, 3000)
    ids_before = re.findall(r"\^([mr]-[0-9a-f]{6})\b", page.read_text(encoding="utf-8"))
    r = _vm(root, "--json", "compact", "kafka", "--keep", "20", "--dry-run")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert page.read_text(encoding="utf-8") == big_page(3000)  # a dry run changes nothing
    r = _vm(root, "--json", "compact", "kafka", "--keep", "20")
    assert r.returncode == 0, r.stderr
    done = json.loads(r.stdout)
    assert len(done["moving"]) == len(plan["moving"]) > 3000 - 40
    archives = [root / a for a in done["archives"]]
    texts = [page.read_text(encoding="utf-8")] + [a.read_text(encoding="utf-8") for a in archives]
    summaries = {re.search(r"\^(m-[0-9a-f]{6})$", s["line"]).group(1) for s in done["summaries"]}
    ids_after = [i for t in texts for i in re.findall(r"\^([mr]-[0-9a-f]{6})\b", t) if i not in summaries]
    assert sorted(ids_after) == sorted(ids_before)  # every block id once: on the page or in its archive
    moved = {m["id"] for m in done["moving"] if m["id"]}
    on_page = set(re.findall(r"\^([mr]-[0-9a-f]{6})\b", texts[0])) - summaries
    assert not moved & on_page and moved | on_page == set(ids_before)
    r = _vm(root, "--json", "page", "show", "kafka")
    assert r.returncode == 0, r.stderr  # the compacted page parses
