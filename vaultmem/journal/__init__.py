"""The journal: what was said in each session, as it happened, one file a day.

The last-resort layer of the design (seed 003's high-fidelity episodic archive): a
session's transcript is filed into ``journal/YYYY-MM-DD.md`` — who said what, in order,
tool calls summarised, each turn a list item with a block id (``^j-<session hash>-<n>``)
and where it came from (the session, the file and its line). It is indexed but kept out
of normal search and briefs; a brief for the orchestrator falls back to it only when the
normal layers have nothing relevant (``recall.brief``).

- :func:`read` / :func:`from_messages`: a transcript — Claude Code's JSON lines, a list
  of chat messages (Hermes, OpenAI style), JSON turns, or Markdown ``Name: text`` lines —
  as :class:`Transcript`. A line that is not JSON, or a shape none of these is, raises
  :class:`~vaultmem.errors.BadInput` naming the file and line: nothing is half-imported.
- :func:`plan_add`: the day files with the turns not filed before (a session added twice
  changes nothing; a session that grew gains its new turns only).
- :func:`plan_consolidate`: the day's record at the top of a day file — each session in
  time order with its request, decisions and corrections, doubts, tools and last word.
- :func:`plan_prune`: the day files older than the retention policy.

Pure functions over text, except where the vault's files are read (``root``); the
facade (:class:`vaultmem.vault.Vault`) writes and commits.

The package: :mod:`.transcripts` (reading a transcript into turns) and :mod:`.days` (the
day files, the day's record, retention).
"""

from ..parse.journal import DAY_FILE, RECORD_END, RECORD_START, TURN_ID, DayTurn, day_turns
from .book import Journal
from .days import Filed, clipped, day_path, days, filed_turns, plan_add, plan_consolidate, plan_prune, render_turn
from .transcripts import (MAX_TOOL_CHARS, MAX_TURN_CHARS, SHAPES, Transcript, Turn, from_messages, parse, read,
                          result_summary, session_hash, tool_summary, turn_id)

__all__ = ["DAY_FILE", "MAX_TOOL_CHARS", "MAX_TURN_CHARS", "RECORD_END", "RECORD_START", "SHAPES", "TURN_ID", "DayTurn",
           "Filed", "Journal", "Transcript", "Turn", "clipped", "day_path", "day_turns", "days", "filed_turns", "from_messages",
           "parse", "plan_add", "plan_consolidate", "plan_prune", "read", "render_turn", "result_summary",
           "session_hash", "tool_summary", "turn_id"]

