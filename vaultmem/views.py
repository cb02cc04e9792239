"""What a human looks at, read-only, over the facade: memory that disagrees with itself
(``conflicts``), the vault at a glance (``stats``), one file's links both ways
(``links``), and what happened in order (``timeline``). The CLI's commands of those
names call these."""

from __future__ import annotations

from . import conflicts as conflicts_module
from . import layout, pages, recall
from . import links as links_module
from . import stats as stats_module
from . import timeline as timeline_module
from .errors import BadInput
from .names import check_name
from .vault import Vault


def conflicts(vault: Vault, min_sources: int | None = None):
    """Memory that disagrees with itself, for a human to settle (:mod:`vaultmem.conflicts`):
    active notes with one key and different values, and a note's code or number that
    at least ``min_sources`` other sources hold in one variant. Nothing is changed."""
    if min_sources is not None and min_sources < 1:
        raise BadInput(f"is {min_sources}; it must be 1 or more", field="min_sources")
    return conflicts_module.find(vault.root, conflicts_module.MIN_SOURCES if min_sources is None else min_sources)


def stats(vault: Vault) -> dict:
    """The vault at a glance (:mod:`vaultmem.stats`): notes by type and status, role
    pages' sizes and budgets, what waits for a human, log entries per agent, the index's
    size, and the recall hit rate, repeated-question rate and correction rate."""
    waiting = {"inbox": len(vault.inbox.items()),
               "delegations": len(vault.lifecycle.delegations(status="pending"))}
    out = stats_module.collect(vault.root, vault.config, waiting)
    out["index"]["engine"] = vault.index.status()["engine"]
    return out


def links(vault: Vault, name: str) -> dict:
    """The wikilinks of one file (a note's slug, a role, a path) and the links to it
    from every other file, resolved as Obsidian resolves them (:mod:`vaultmem.links`):
    ``{"path", "outgoing", "backlinks", "skipped_files"}``, broken links with their problem."""
    path, found = links_module.find(vault.root, name)
    return {"path": path, "outgoing": [x.to_dict() for x in found.links_from(path)],
            "backlinks": [x.to_dict() for x in found.backlinks(path)], "skipped_files": found.unread}


def timeline(vault: Vault, role: str | None = None, since: str | None = None) -> dict:
    """Role-page entries, decisions, log entries and notes in the order they happened
    (:mod:`vaultmem.timeline`): ``{"events", "skipped_files"}``; ``role`` narrows to one
    role's own, ``since`` (an ISO day) to what came after."""
    if role is not None:
        name = check_name(role, "role name")
        # a role with a page, or an agent that signs the logs (it has a public key) but has no page
        role = name if (vault.root / layout.KEYS_DIR / f"{name}.pub").is_file() else pages.resolve(vault.root, name)
    if since is not None:
        since = recall.check_filters(since=since)["since"]
    found, unread = timeline_module.events(vault.root, role, since)
    return {"role": role, "since": since, "events": [e.to_dict() for e in found], "skipped_files": unread}
