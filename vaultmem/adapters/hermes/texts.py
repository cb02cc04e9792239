"""What a conversation hands over: facts said in it, a sub-agent's record, a checkpoint of
the working context, and an error as the JSON a tool answers."""

from __future__ import annotations

import datetime as _dt
import logging
import re
from typing import Any, Callable

from ...errors import SecretRefused
from ...sessions import fact_candidates, report_fields, without_code
from ...guard import without_instructions
from ...vault import without_secrets
from .. import edge
from .settings import CHECKPOINT_CHARS, MAX_TURN_TEXT

log = logging.getLogger("vaultmem.hermes")


# -- what is worth keeping: facts said in a conversation ----------------------------------------

def facts_in(text: str, kind: str) -> list[dict[str, str]]:
    """The sentences of ``text`` that state something lasting (:func:`vaultmem.sessions.fact_candidates`),
    as retain items without author: ``{"type", "text", "author_kind": kind}``. Everything
    found is only proposed: a human decides in the review inbox."""
    return [{"type": type_, "text": sentence, "author_kind": kind}
            for type_, sentence in fact_candidates((text or "")[:MAX_TURN_TEXT])]


def message_text(message: Any) -> str:
    """The text of an OpenAI-style message's ``content`` (a string, or a list of parts)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def facts_in_messages(messages: Any) -> list[dict[str, str]]:
    """Facts said by the user (``author_kind: user``) and the assistant (``agent``);
    tool output is left out (it is third-party text, not what anyone said)."""
    out = []
    for m in messages if isinstance(messages, list) else []:
        role = m.get("role") if isinstance(m, dict) else None
        if role in ("user", "assistant"):
            out += facts_in(message_text(m), "user" if role == "user" else "agent")
    return out


# -- a sub-agent's result: the four elements of its record ------------------------------------

_ROLE_LINE = re.compile(r"^\s*(?:role|角色)\s*[:：]\s*(\S[^\n]*?)\s*$", re.I | re.M)


def split_task(task: str, default_role: str) -> tuple[str, str]:
    """(role, task): a first ``role: NAME`` line of the delegated goal names the role (and
    is not part of the task); else ``default_role``."""
    task = task or ""
    m = _ROLE_LINE.search(task)
    if m and not task[:m.start()].strip():
        return m.group(1).strip(), (task[:m.start()] + task[m.end():]).strip()
    return default_role, task.strip()


def record_fields(result: str) -> dict[str, str]:
    """The conclusion, output and key decision a sub-agent's result states under a label
    (``Conclusion: …``, ``**Files created:** …``, ``## Decision`` with lines below it, 结论：…;
    :func:`vaultmem.sessions.report_fields`); the first of each. An element not stated is
    absent: nothing is guessed. The task is the delegated goal's, never the result's."""
    return {k: v for k, v in report_fields(result).items() if k != "task"}


def scrubbed(scrub: Callable[[str], str], facts: list[dict]) -> list[dict]:
    """The facts with their secrets replaced; in a vault that rejects secrets, a fact
    holding one is left out (and logged), the others are kept."""
    out = []
    for f in facts:
        text = str(f.get("text") or "")
        if not text.strip():
            continue
        try:
            out.append({**f, "text": scrub(text)})
        except SecretRefused as exc:
            log.warning("vaultmem provider left a fact out: %s", edge.one_line(exc))
    return out


def today() -> str:
    """The local day (a Hermes message carries no time: its session's turns are filed under it)."""
    return _dt.datetime.now().astimezone().date().isoformat()


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def first_line(text: str, limit: int = 160) -> str:
    for line in without_code(text).splitlines():
        line = " ".join(line.split()).strip(" -*>#")
        if line:
            return line if len(line) <= limit else line[:limit - 1] + "…"
    return ""


def checkpoint_of(messages: list[dict[str, Any]]) -> dict[str, str]:
    """A checkpoint of the messages about to be compressed: the task (the last request
    of the user), the step reached, and the last exchanges, shortened."""
    said = [(m.get("role"), " ".join(message_text(m).split())) for m in messages
            if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    said = [(r, t) for r, t in said if t]
    users = [t for r, t in said if r == "user"]
    task = users[-1][:300] if users else ""
    lines, size = [], 0
    for role, text in reversed(said):
        line = f"- {role}: {text[:600]}"
        if size + len(line) > CHECKPOINT_CHARS - 500:
            break
        lines.append(line)
        size += len(line)
    step = f"context compression of {len(messages)} messages"
    # copied from the conversation into a checkpoint no review gates: instruction-like lines left out
    return {"task": without_instructions(task)[0], "step": step,
            "text": without_instructions("\n".join(reversed(lines)))[0]}


def error_json(exc: BaseException) -> str:
    """A library error as the JSON a Hermes tool answers with: ``error`` (one line, with
    its hint) for Hermes's display, and the error's fields; nothing that reads like a
    secret is repeated."""
    err = edge.as_error(exc)
    if isinstance(err, edge.Unexpected):
        log.error("unexpected error in a vaultmem tool", exc_info=exc)
    data = {k: without_secrets(v) if isinstance(v, str) else v for k, v in edge.error_dict(err).items()}
    return edge.json_text({"success": False, "error": without_secrets(edge.one_line(err)), **data}, indent=None)
