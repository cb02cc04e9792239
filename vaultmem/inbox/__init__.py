"""The review gate: ``inbox/`` holds what agents want remembered until someone decides.

Every change of memory an agent asks for — ADD (``retain``, ``remember``), REPLACE,
REMOVE (``forget``), and entries or sub-agent records for a role page it may not write —
becomes one inbox item, ``inbox/<id>.md``: the proposed operation and its provenance in
the frontmatter, the text as the body, readable and editable in Obsidian. Reached as
``vault.inbox``.

Deciding is one commit by the decider: approval performs the operation (the note and
its ``MEMORY.md`` line, the superseding note, the archived note, the page entry, the
sub-agent record) and moves the item to ``archive/inbox/`` marked approved; rejection
moves it there with the reason. Who may decide:

- a human: every item;
- the orchestrator: role-page proposals, and memory-note items when
  ``review.orchestrator_approves`` is set — never its own items, never quarantined
  (third-party) or instruction-flagged ones: those wait for a human.

The one way around the gate: ``review.trusted_agents`` may file user-stated facts (ADD,
``author_kind: user``, nothing flagged) that are approved at once — the item is still
archived, so the trail stays. Confidence plays no part in any of this.

Items are never retrieved into a brief (the brief draws on memory, not ``inbox/``).

An item is a file anyone can edit, so an agent's decision never rests on the fields as
they stand: it rests on what vaultmem filed. The item must be in the working copy as
vaultmem committed it, and every commit that touched it must be vaultmem's — the filing
(``inbox: <proposer> proposes …``, by the proposer) or a ``review: edit <id>``. An item
changed any other way (edited by hand, committed with plain git, or written without
being filed) goes back to a human, who approves it as it is now, knowingly: the approval
says so, and the outside edit is committed first as unattributed
(:data:`vaultmem.transaction.UNATTRIBUTED`), never as the human's. The gate also reads
quarantine and flags from the text itself, not only from the fields.

The note's fields are stored flat (``note_type``, ``note_name`` …; a harvest's sub-agent
fields as ``field_task`` …) so that Obsidian's properties view shows them; items written
with a nested ``note:`` / ``fields:`` mapping (the previous format) are read as well.

The package: :mod:`.gate` (the :class:`Inbox` that files and decides), :mod:`.items` (an
item as a file) and :mod:`.sameness` (when two proposals say the same fact).
"""

from .gate import Inbox
from .items import ARCHIVE_DIR, EDITABLE, INBOX_DIR, NOTE_OPS, PAGE_OPS, PROVENANCE, Filed, Item
from .sameness import Sameness, same_fact

__all__ = ["ARCHIVE_DIR", "EDITABLE", "INBOX_DIR", "NOTE_OPS", "PAGE_OPS", "PROVENANCE", "Filed", "Inbox", "Item",
           "Sameness", "same_fact"]

