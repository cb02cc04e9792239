"""Importers: another tool's memory, read into proposals for the review gate.

A team moving in brings what its tools remembered. Each source is read into items —
one fact, rule or block of text each, with the file and line it came from — and every
item goes through the review gate exactly as a retained fact does (``vault.inbox.file``):
checked and scrubbed of secrets by :func:`vaultmem.notes.prepare`, third-party ones
quarantined and instruction-like ones flagged by the inbox, nothing memory until
someone decides. Sources (``docs/import.md`` says how each maps):

- ``claude-code``: a project's auto memory (``MEMORY.md`` and its topic files, with their
  ``type:`` user / feedback / project / reference), ``CLAUDE.md`` and
  ``.claude/agent-memory/<name>/`` (that role's memory);
- ``hermes``: Hermes Agent's ``MEMORY.md`` and ``USER.md``, entries separated by ``§``;
- ``basic-memory``: a folder of Markdown notes, observations ``- [category] text #tag
  (context)`` and relations ``- relation_type [[Target]]`` kept as text and links;
- ``jsonl``: one JSON object per line (a mem0 export, or anything else).

Every item carries a stable key (``[import <16 hex>]`` at the end of its ``source``),
made from what it says and where it belongs, never from where it sits in the file: an
item already filed — waiting, approved or rejected — is recognised and not filed again.
A file or line that cannot be read (broken frontmatter, a line that is not JSON, bytes
that are not UTF-8, a link out of the source folder, a text over the vault's size limit)
is named with its line and skipped; the rest is imported, and nothing in the source is
ever changed.

The package: one module per source (:mod:`.claude_code`, :mod:`.hermes`,
:mod:`.basic_memory`, :mod:`.jsonl`), each registering a :class:`~.base.Source` — a name
and a reader — as the index engines register; :mod:`.base` holds what they share, and
:mod:`.filing` reads the registered source and files what it held.
"""

from . import basic_memory, claude_code, hermes, jsonl  # noqa: F401  (each registers its source)
from .base import REGISTRY, SOURCES, Found, Problem, Read, Source, register
from .claude_code import claude_memory_dir
from .filing import filed_keys, read, run

__all__ = ["REGISTRY", "SOURCES", "Found", "Problem", "Read", "Source", "claude_memory_dir", "filed_keys", "read",
           "register", "run"]

