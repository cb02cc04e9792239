"""A journal day file (``journal/YYYY-MM-DD.md``) read back: its turns, each with its
block id and the session it is under (pure: text in, values out). The format is
written by :mod:`vaultmem.journal`:

    ## 09:14 · session 3f2a… · claude-code
    source: 3f2a….jsonl (claude-code)

    - **09:14:02 user** · L12 — the first line of what was said
      a later line ^j-3f2a9c1d-1

and a day's record between :data:`RECORD_START` and :data:`RECORD_END`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
TURN_ID = re.compile(r"\^j-([0-9a-f]{8})-(\d+)\s*$")
RECORD_START = "<!-- vaultmem:day-record -->"
RECORD_END = "<!-- /vaultmem:day-record -->"


@dataclass
class DayTurn:
    id: str  # the block id, without ^
    session: str
    agent: str | None
    speaker: str
    clock: str
    where: str
    text: str
    line: int


_HEAD = re.compile(r"^## (?:(\d{2}:\d{2}(?::\d{2})?) · )?session (.+?)(?: · ([^·]+))?\s*$")
_ITEM = re.compile(r"^- \*\*(?:(\d{2}:\d{2}(?::\d{2})?) )?(.+?)\*\* · (\S*) — ?(.*)$")


def day_turns(text: str) -> list[DayTurn]:
    """The turns of a day file, in file order, each with the session it is under. An
    item whose block id is missing (edited away) is no turn."""
    out: list[DayTurn] = []
    session, agent = "", None
    current: DayTurn | None = None
    for n, line in enumerate(text.splitlines(), 1):
        head = _HEAD.match(line)
        if head:
            session, agent, current = head.group(2).strip(), (head.group(3) or "").strip() or None, None
            continue
        item = _ITEM.match(line)
        if item:
            current = DayTurn("", session, agent, item.group(2), item.group(1) or "", item.group(3), item.group(4), n)
        elif current is not None and line.startswith("  "):
            current.text += "\n" + line[2:]
        else:
            current = None
            continue
        m = TURN_ID.search(current.text)
        if m:
            current.id = f"j-{m.group(1)}-{m.group(2)}"
            current.text = current.text[: m.start()].rstrip()
            out.append(current)
            current = None
    return out
