"""Every size a caller gives, and its bounds, in one place.

How many hits, how many tokens, how long a query: these come from a person or an agent
through the CLI, the MCP server, the Python API or a hook, and each is checked here
against the same bounds before any work is done — refused with its field named and the
range it may take (``limit: is 1000000000; it must be 1–1,000 hits``). Unchecked, a search
for a billion hits asks the engine for room for a billion (tantivy aborts the process:
the MCP server with it), and a 10 MB query holds a one-client server for minutes.

JSON a caller sends is read here too (:func:`load_json`): nested past
:data:`MAX_JSON_DEPTH` levels it is refused as too deep, never a RecursionError.

The engines clamp what reaches them as well (:func:`engine_hits`): a safety net for a
caller that did not come through a checked edge, never the answer a caller sees.

Standard library and :mod:`vaultmem.errors` only: every stage may use it.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from .errors import BadInput


class Bound(NamedTuple):
    """What a size may be: ``lo`` to ``hi`` (inclusive), counted in ``unit``."""

    lo: int
    hi: int
    unit: str

    def text(self) -> str:
        return f"{self.lo:,}–{self.hi:,} {self.unit}"


# field (the library's name for the input) → its bounds. A brief's window and tokens go up
# to brief.window's own most (config: 10,000,000); a search's hits to what a person or an
# agent can read; the live log's count to what its files hold in a day of a busy team.
SIZES: dict[str, Bound] = {
    "limit": Bound(1, 1000, "hits"),
    "window": Bound(1, 10_000_000, "tokens"),
    "tokens": Bound(1, 10_000_000, "tokens"),
    "n": Bound(1, 10_000, "entries"),
    "rerank_depth": Bound(1, 200, "hits"),
}

# The most a query or a brief's task may be, in UTF-8 bytes: the most a memory note may
# be (memory.max_note_bytes at its highest, config.MAX_NOTE_BYTES) — a question is never
# longer than an answer. Beyond it a search costs seconds per megabyte, all of it spent
# on words no document is ranked by.
MAX_TEXT_BYTES = 256 * 1024

# What a result echoes of a query or task, at most (characters): enough to recognise it.
ECHO_CHARS = 1000

# What an engine is asked for at most, whatever reaches it (with the documents it holds:
# see the engines): room for this many hits costs a few megabytes, never more.
ENGINE_MAX_HITS = 100_000


def check(field: str, value):
    """``value`` if it is a whole number within the bounds of ``field`` (:data:`SIZES`);
    else :class:`BadInput` naming the field and its range. None passes (the default
    applies)."""
    if value is None:
        return None
    bound = SIZES[field]
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"is {value!r}; it must be a whole number, {bound.text()}", field=field)
    if value < bound.lo and bound.lo == 1:
        # below the range, the upper bound is beside the point
        raise BadInput(f"is {value}; it must be a positive number of {bound.unit}", field=field)
    if not bound.lo <= value <= bound.hi:
        raise BadInput(f"is {value}; it must be {bound.text()}", field=field)
    return value


def check_sizes(**sizes) -> None:
    """:func:`check` each keyword (field=value) given."""
    for field, value in sizes.items():
        check(field, value)


def check_text(field: str, text: str, most: int = MAX_TEXT_BYTES) -> str:
    """``text`` if it is at most ``most`` bytes in UTF-8 and text throughout
    (:func:`check_unicode`); else :class:`BadInput` naming ``field``. Costs nothing for
    an ASCII text that cannot be that long."""
    if isinstance(text, str) and not text.isascii():
        check_unicode(field, text)
    if not isinstance(text, str) or len(text) * 4 <= most:  # even four bytes a character fit
        return text
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > most:
        raise BadInput(f"the {field} is {_kb(size)}; at most {_kb(most)} are read, as for a memory note",
                       field=field, hint=f"shorten the {field}: its first words say what to look for")
    return text


def check_unicode(field: str, text: str) -> str:
    """``text`` if it is text throughout; else :class:`BadInput` naming ``field``: it holds
    a lone surrogate — a byte that was not UTF-8 (an argument from a terminal set to
    another encoding: Python hands it on so) or half an emoji — which no note, commit or
    index can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        shown = f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        raise BadInput(f"the {field} holds {shown}, which is not UTF-8 text (character {exc.start + 1})", field=field,
                       hint="give it as UTF-8: set the terminal to UTF-8 (LANG=C.UTF-8), or pass the text "
                            "in a file or on standard input") from None
    return text


def echoed(text: str, most: int = ECHO_CHARS) -> str:
    """What a result shows of ``text``: all of it, or its first ``most`` characters and
    an ellipsis."""
    return text if len(text) <= most else text[: most - 1] + "…"


def engine_hits(limit: int, held: int | None = None) -> int:
    """How many hits an engine is asked for: ``limit``, at most :data:`ENGINE_MAX_HITS`
    and — given ``held``, the documents the index holds — at most one more than those."""
    asked = max(0, min(int(limit), ENGINE_MAX_HITS))
    return asked if held is None else min(asked, max(0, held) + 1)


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KB ({n:,} bytes)"


# JSON nested deeper than this is not read: a transcript's or an import's line that deep is
# named and skipped (no real message nests past a few dozen levels; Python's parser gives
# out near a thousand, at a depth that depends on the stack it is called from)
MAX_JSON_DEPTH = 256


class TooDeep(ValueError):
    """JSON nested more than :data:`MAX_JSON_DEPTH` levels."""


def load_json(text: str | bytes) -> Any:
    """``json.loads(text)``, except that JSON nested more than :data:`MAX_JSON_DEPTH`
    levels raises :class:`TooDeep` (a ValueError) — never a RecursionError, and at the
    same depth wherever it is called from (the parser's own limit depends on the stack);
    and that a lone surrogate escaped in a string (``\\ud83d`` without its pair: JavaScript
    writes a cut emoji so) is U+FFFD: it is no text, and no note, commit or index could
    hold it. ``text`` may be UTF-8 bytes."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")  # a UnicodeDecodeError is a ValueError, as json's own errors are
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _deeper(value, MAX_JSON_DEPTH):
        raise TooDeep(f"nested more than {MAX_JSON_DEPTH} levels deep")
    if "\\u" in text and _LONE_ESCAPE.search(text):
        value = _without_lone_surrogates(value)
    return value


_LONE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a surrogate escaped: paired (an emoji) or alone


def _without_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate in its strings (keys too) replaced by U+FFFD."""
    def fixed(text: str) -> str:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

    if isinstance(value, str):
        return fixed(value)
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {fixed(k) if isinstance(k, str) else k: _without_lone_surrogates(v) for k, v in value.items()}
    return value


def _deeper(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests lists and objects more than ``limit`` levels (walked
    without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False
