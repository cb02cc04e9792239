"""What a session's text holds worth keeping, read one way for every agent runtime.

- :func:`report_fields`: the four elements of a sub-agent's labelled report (task,
  conclusion, output, key decision), in English or Chinese, plain, bold, in a list or
  under a heading. An element the report does not state is absent: nothing is guessed.
- :func:`fact_candidates`: the sentences in which someone states something lasting — a
  preference, a decision, a correction, a failure and its fix, a fact to remember —
  found by their words (there is no language model here), each with the note type it
  suggests. Only proposals: a human decides each in the review inbox.

Pure: text in, text out; standard library only, the patterns compiled on first use (a
hook that reads no report never pays for them).
"""

from __future__ import annotations

import functools
import re

from .patterns import Lazy

FIELDS = ("task", "conclusion", "output", "decision")

# each element's own names, as the sub-agent record writes them (vaultmem.parse.page's
# SUBAGENT_FIELDS), and the short forms beside them
LABELS: dict[str, tuple[str, ...]] = {
    "task": ("task", "任务"),
    "conclusion": ("conclusion", "结论"),
    "output": ("output", "产出", "输出"),
    "decision": ("key decision", "decision", "关键决策", "决策"),
}
# other words a report uses for them (Hermes asks its sub-agents for "what you found,
# files created or modified")
SYNONYMS: dict[str, tuple[str, ...]] = {
    "task": (),
    "conclusion": ("conclusions", "result", "results", "finding", "findings", "outcome", "outcomes",
                   "what i found", "what i found or accomplished", "found", "accomplished", "summary", "发现", "结果"),
    "output": ("outputs", "deliverable", "deliverables", "files", "files created", "files modified", "files changed",
               "files created or modified", "files created modified", "artifacts", "artefacts", "文件"),
    "decision": ("decisions", "key decisions", "decided", "决定"),
}

MAX_FACT_CHARS = 500  # a fact's text is cut to this
MIN_FACT_CHARS = 8  # shorter is no statement
# The sentences that state something lasting (English and Chinese), by the note type
# they suggest; the first type whose words a sentence holds is its type.
FACT_MARKERS: tuple[tuple[str, str], ...] = (
    ("preference", (
        r"\bI (?:prefer|like|want|always|never|usually|hate)\b|\bwe (?:prefer|always|never|usually)\b"
        r"|\b(?:i|we) (?:like|want|don't want|do not want)\b"
        r"|\bplease (?:always|never|don't|do not)\b|^(?:always|never|don't ever)\b|\bfrom now on\b"
        r"|我(?:更)?(?:喜欢|偏好|希望|习惯|讨厌)|以后|总是|永远不要|不要再|请始终|请不要")),
    ("decision", (
        r"\b(?:we|I)(?:'ve| have)? (?:decided|agreed|chose|chosen|settled on)\b"
        r"|\blet'?s (?:go with|use|keep|stick with)\b|\bwe(?:'ll| will) use\b"
        r"|\bthe decision is\b|\bdecision\s*[:：]|决定|就用|定了|定下来|采用|选定")),
    ("failure+fix", (
        r"\b(?:root cause|the fix (?:is|was)|fixed (?:it|by)|workaround)\b|根本原因|修复了|解决办法")),
    ("fact", (
        r"^(?:no|nope|actually|wrong)\b[,!. ]|\bthat'?s (?:wrong|not right|incorrect)\b|\bit should be\b"
        r"|\bis actually\b|不对|其实|错了|应该是|不是.{1,40}而是"
        r"|\b(?:remember that|note that|keep in mind|fyi|for the record)\b|记住|注意[:：]")),
)

_FENCE = Lazy(r"```.*?(?:```|$)", re.S)
_SENTENCE_END = Lazy(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？；])")
# a label and its text on one line: "Conclusion: …", "**Task:** …", "- 结论：…", "## Decision: …"
_LABEL_LINE = Lazy(r"^\s*(?P<mark>(?:#{1,6}|[-*+>]|\d+[.)])\s*)?(?P<bold>\*\*|__)?(?P<label>[^:：*_\n]{1,40}?)"
                         r"(?:\*\*|__)?\s*[:：](?:(?:\*\*|__)(?=\s|$))?\s*(?P<rest>.*)$")
# a heading that is a label, its text on the lines below: "## Findings"
_HEADING = Lazy(r"^\s*#{1,6}\s+(?:\*\*|__)?(?P<label>[^\n]{1,40}?)(?:\*\*|__)?\s*[:：]?\s*$")


def without_code(text: str) -> str:
    """``text`` with its fenced code blocks (```` ``` ````) blanked: what is in code is not said."""
    return _FENCE.sub(" ", text or "")


def fold(label: str) -> str:
    """A label as it is looked up: lower case, runs of anything but letters and digits one space."""
    return " ".join(re.sub(r"[^\w]+", " ", label.lower()).split())


@functools.lru_cache(maxsize=2)
def _label_words(synonyms: bool) -> dict[str, str]:
    words = {fold(w): key for key, ws in LABELS.items() for w in ws}
    if synonyms:
        words.update({fold(w): key for key, ws in SYNONYMS.items() for w in ws})
    return words


def report_fields(text: str, synonyms: bool = True) -> dict[str, str]:
    """The elements a report states under a label, by :data:`FIELDS` key: a label's text
    runs from the label to the end of its paragraph (a blank line, the next label or a
    heading ends it); a label alone on its line, or a heading that is a label, takes the
    lines below it. The first statement of an element counts; code blocks are not read.
    ``synonyms``: also the other words of :data:`SYNONYMS` (``Findings:``, ``Files
    created:``); without, only each element's own names (:data:`LABELS`)."""
    words = _label_words(bool(synonyms))
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in without_code(text).splitlines():
        m = _LABEL_LINE.match(line)
        h = None if m else _HEADING.match(line)
        key = words.get(fold((m or h).group("label"))) if (m or h) else None
        if key is not None:
            current = None if "".join(found.get(key, ())).strip() else key
            if current:
                rest = m.group("rest").rstrip() if m else ""
                if m and m.group("bold"):
                    rest = rest.removesuffix(m.group("bold"))
                found[current] = [rest]
            continue
        if h or (m and (m.group("mark") or "").strip().startswith("#")):
            current = None  # another heading ends the element
            continue
        if current and line.strip():
            found[current].append(line.strip().lstrip("-*+> \t"))
        elif current and "".join(found[current]).strip():
            current = None  # a blank line after some text ends it
    out = {k: " ".join(" ".join(v).split()).strip(" *") for k, v in found.items()}
    return {k: out[k] for k in FIELDS if out.get(k)}


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (English and Chinese ends, one a line at most), whitespace
    folded and list or quote marks taken off; code blocks and runs too long to be one
    sentence (over twice :data:`MAX_FACT_CHARS`) are left out."""
    out = []
    for raw in _SENTENCE_END.split(without_code(text)):
        sentence = " ".join((raw or "").split()).strip(" -*>#")
        if sentence and len(sentence) <= 2 * MAX_FACT_CHARS:
            out.append(sentence)
    return out


@functools.lru_cache(maxsize=1)
def _markers() -> tuple[tuple[str, re.Pattern], ...]:
    return tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in FACT_MARKERS)


def fact_candidates(text: str) -> list[tuple[str, str]]:
    """(note type, sentence) for each sentence of ``text`` that states something lasting
    by the words of :data:`FACT_MARKERS`, in order, each cut to :data:`MAX_FACT_CHARS`.
    A question states nothing: a sentence ending in ``?`` or ``？`` is not one."""
    out = []
    for sentence in sentences(text):
        if len(sentence) < MIN_FACT_CHARS or sentence.endswith(("?", "？")):
            continue
        for kind, pattern in _markers():
            if pattern.search(sentence):
                out.append((kind, sentence[:MAX_FACT_CHARS]))
                break
    return out
