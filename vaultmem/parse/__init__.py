"""Parse stage: pure functions from vault text to values and back (no I/O).

The names below load on first use (PEP 562): reading the config needs only the
frontmatter reader (:mod:`.document`), not the page, note and journal parsers a cold
search never calls.
"""

from __future__ import annotations

# public name → the module of this package that defines it
_EXPORTS = {
    **dict.fromkeys(("Document", "parse_document", "plain"), "document"),
    **dict.fromkeys(("index_line", "parse_note", "render_note", "set_note_fields", "update_index"), "note"),
    **dict.fromkeys(("HEADINGS", "RolePage", "add_context_entry", "add_project", "add_work_entry", "new_page_text",
                     "parse_page"), "page"),
}

__all__ = [
    "Document", "parse_document", "plain",
    "index_line", "parse_note", "render_note", "set_note_fields", "update_index",
    "HEADINGS", "RolePage", "add_context_entry", "add_project", "add_work_entry", "new_page_text", "parse_page",
]  # fmt: skip

TYPE_CHECKING = False  # not typing's: this package is imported by every command
if TYPE_CHECKING:
    from .document import Document, parse_document, plain
    from .note import index_line, parse_note, render_note, set_note_fields, update_index
    from .page import (HEADINGS, RolePage, add_context_entry, add_project, add_work_entry, new_page_text,
                       parse_page)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
