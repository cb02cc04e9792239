"""Wikilinks in Markdown text: ``[[target]]``, ``[[target|shown]]``, ``[[target#Heading]]``,
``[[target#^block-id]]`` (``![[…]]`` embeds too). Links inside code — fenced blocks and
`inline code` — are not links. Pure: resolving a target to a file is
:mod:`vaultmem.links`' (Obsidian's way) or the brief's (one hop, :mod:`vaultmem.recall`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

LINK = re.compile(r"!?\[\[([^\[\]|#]*)(#\^?[^\[\]|]*)?(?:\|([^\[\]]*))?\]\]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def wikilinks(text: str) -> Iterator[tuple[int, str, str | None, str]]:
    """``(line number, target, anchor or None, the link as written)`` for each wikilink."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in LINK.finditer(_INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)):
            yield n, m.group(1).strip(), m.group(2) or None, m.group(0)
