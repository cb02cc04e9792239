"""Parse stage: pure functions from vault text to values and back (no I/O)."""

from .document import Document, parse_document, plain
from .note import index_line, parse_note, render_note, set_note_fields, update_index
from .page import HEADINGS, RolePage, add_context_entry, add_project, add_work_entry, new_page_text, parse_page

__all__ = [
    "Document", "parse_document", "plain",
    "index_line", "parse_note", "render_note", "set_note_fields", "update_index",
    "HEADINGS", "RolePage", "add_context_entry", "add_project", "add_work_entry", "new_page_text", "parse_page",
]  # fmt: skip
