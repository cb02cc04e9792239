"""Where everything lives in a vault: every vault-relative path, named once.

Every other module takes its paths from here, so a folder is renamed, swept or excluded
in one place. Standard library only (``os.path`` alone): the launcher imports
:mod:`vaultmem.walk`, which imports this.
"""

from __future__ import annotations

import os

# -- what people read and edit (committed) ------------------------------------------------
MEMORY_INDEX = "MEMORY.md"  # the always-loaded index of memory notes
AGENTS_DIR = "agents"  # one page per role: agents/<role>.md
MEMORIES_DIR = "memories"  # one fact per file: memories/<slug>.md
IDENTITY_DIR = "identity"  # identity/<agent>.md, part of that agent's brief
INBOX_DIR = "inbox"  # what agents want remembered, waiting for review
ARCHIVE_DIR = "archive"  # never deleted, only moved here
ARCHIVED_NOTES_DIR = f"{ARCHIVE_DIR}/{MEMORIES_DIR}"  # forgotten and superseded notes
ARCHIVED_INBOX_DIR = f"{ARCHIVE_DIR}/{INBOX_DIR}"  # decided inbox items
ARCHIVED_PAGES_DIR = f"{ARCHIVE_DIR}/{AGENTS_DIR}"  # compacted role-page entries: <role>-<year>.md
SHARED_DIR = "shared"
LOG_DIRS = {"live": f"{SHARED_DIR}/log", "decisions": f"{SHARED_DIR}/decisions"}  # signed, per agent
KEYS_DIR = f"{SHARED_DIR}/keys"  # public keys: <agent>.pub
DELEGATIONS_DIR = f"{SHARED_DIR}/delegations"  # d-<date>-<hex>.md
STATE_FILE = f"{SHARED_DIR}/project-state.md"
CHECKPOINT_DIR = "checkpoints"  # checkpoints/<agent>.md
JOURNAL_DIR = "journal"
WIKI_DIR = "wiki"
SKILLS_DIR = "skills"
GITATTRIBUTES = ".gitattributes"

# -- vaultmem's own folder ------------------------------------------------------------------
META_DIR = ".vaultmem"
CONFIG_PATH = f"{META_DIR}/config.yaml"  # committed; only a human changes it
WRITE_LOCK = f"{META_DIR}/write.lock"  # one writer at a time (an OS lock: freed when its process dies)
PRIVATE_KEYS_DIR = f"{META_DIR}/keys"  # private keys: <agent>.key, mode 0600, git-ignored
INDEX_DIR = f"{META_DIR}/index"  # derived: rebuilt on demand, git-ignored
INDEX_LOCK = f"{META_DIR}/index.lock"
# derived: the journal's own index (docs/journal.md), beside the generations (gen-*) of memory's
JOURNAL_INDEX_DIR = f"{INDEX_DIR}/journal"
JOURNAL_INDEX_LOCK = f"{META_DIR}/journal-index.lock"
INDEX_VECTORS = "vectors"  # inside each index generation (INDEX_DIR/gen-<n>/): the semantic channel's vectors
LOCAL_DIR = f"{META_DIR}/local"  # per-machine state and caches, git-ignored
# The Hermes memory provider's outbox: what a Hermes session handed over, kept here until it
# is in the vault (one folder per running provider; a dead one's folder is taken over)
HERMES_OUTBOX_DIR = f"{LOCAL_DIR}/hermes"
REDACT_KEY = f"{LOCAL_DIR}/redact.key"  # the key of secret placeholders' hashes
CURSOR_DIR = f"{LOCAL_DIR}/cursors"  # what each agent has read of the logs
KEY_EVENTS_CACHE = f"{LOCAL_DIR}/key-events.json"  # which live-log files hold rotations (a cache)
TXN_JOURNAL = f"{LOCAL_DIR}/txn.json"  # the write in progress (see vaultmem.transaction)
WATCH_HEARTBEAT = f"{LOCAL_DIR}/watch.json"
JOURNAL_CACHE = f"{LOCAL_DIR}/journal.json"  # which sessions each journal day file holds (a cache)  # a running watcher keeps it fresh
# the Claude Code hooks' own state (vaultmem.adapters.claude): per machine, never committed
CLAUDE_DIR = f"{LOCAL_DIR}/claude"
CLAUDE_SPOOL_DIR = f"{CLAUDE_DIR}/spool"  # session ends waiting to be filed: <ns>-<event>-<session>.json
CLAUDE_AGENTS_DIR = f"{CLAUDE_DIR}/agents"  # a started sub-agent's delegation: <agent_id>.json
CLAUDE_DRAIN_LOCK = f"{CLAUDE_DIR}/drain.lock"  # held by the process filing the spool
CLAUDE_DRAINER_PID = f"{CLAUDE_DIR}/drainer.pid"  # the background filer that runs now (or ran last)
CLAUDE_DRAIN_LOG = f"{CLAUDE_DIR}/drain.log"  # what a background filer could not do

# Folders vaultmem writes into, so where a killed writer may leave a temp file ("." is the top).
WRITABLE = (".", AGENTS_DIR, MEMORIES_DIR, IDENTITY_DIR, INBOX_DIR, ARCHIVE_DIR, ARCHIVED_NOTES_DIR,
            ARCHIVED_INBOX_DIR, ARCHIVED_PAGES_DIR, SHARED_DIR, *LOG_DIRS.values(), KEYS_DIR, DELEGATIONS_DIR,
            CHECKPOINT_DIR, JOURNAL_DIR, META_DIR, PRIVATE_KEYS_DIR, LOCAL_DIR, CURSOR_DIR)  # fmt: skip

# Never walked nor watched: git's and vaultmem's own folders, Obsidian's, and bulk trees.
IGNORED_DIRS = frozenset({".git", META_DIR, ".obsidian", ".trash", "node_modules"})

# -- names that are not UTF-8 --------------------------------------------------------------------
def undecodable(rel: str) -> bool:
    """Whether the vault path ``rel`` holds bytes that are not UTF-8 (a file named on
    another system, unpacked from an old archive): Python lists such a name with lone
    surrogates in their place, which no index, git message or JSON output can carry."""
    if rel.isascii():
        return False
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def path_text(rel: str) -> str:
    """``rel`` as text to show: each byte of its name that is not UTF-8 written ``\\xNN``
    (any other lone surrogate, which a Windows name may hold, by its UTF-8 bytes)."""
    try:
        raw = rel.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = rel.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


# -- links: what a vault path may lead to ----------------------------------------------------
LINK_OUT = "a symlink leading out of the vault"
LINK_PRIVATE = "a symlink leading into vaultmem's own folder or git's"
PRIVATE_DIRS = (".git", META_DIR)  # keys, caches, git objects: never reached through a link


def within(path: str, folder: str) -> bool:
    """Whether the absolute ``path`` is ``folder`` or inside it (by components)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def link_problem(root: str, literal: str, real: str) -> str | None:
    """Why the vault path ``literal`` (absolute, normalised, under the resolved ``root``),
    which really is at ``real``, may not be read: it leads out of the vault, or a link
    leads into ``.git/`` or ``.vaultmem/`` from outside them. None if it may be read (a
    link that stays inside the vault is followed)."""
    if not within(real, root):
        return LINK_OUT
    for name in PRIVATE_DIRS:
        private = os.path.join(root, name)
        if within(real, private) and not within(literal, private):
            return LINK_PRIVATE
    return None


# -- what kind of record a file is, by its top folder (the index's ``kind`` field) --------
KIND_BY_FOLDER = {
    MEMORIES_DIR: "note", AGENTS_DIR: "entry", IDENTITY_DIR: "identity", CHECKPOINT_DIR: "checkpoint",
    INBOX_DIR: "inbox", ARCHIVE_DIR: "archive", WIKI_DIR: "wiki", SKILLS_DIR: "skill", JOURNAL_DIR: "journal",
    SHARED_DIR: "shared",
}  # fmt: skip
# Folders whose files belong to one agent (named by the file): agents/<role>.md …
OWNED_FOLDERS = (AGENTS_DIR, IDENTITY_DIR, CHECKPOINT_DIR)

# What a brief may draw on: never the inbox (quarantine), the archive, or identities
# (the agent's own identity has its own part of the brief), nor the journal (the last
# resort: a brief falls back to it only when these hold nothing relevant).
BRIEF_KINDS = ("note", "entry", "decision", "wiki", "skill", "shared", "checkpoint", "doc")
# What an agent's search draws on unless it asks for kinds: not the inbox (items waiting
# for review, third-party ones quarantined among them) nor the archive (forgotten memory,
# rejected items), nor the journal.
AGENT_KINDS = (*BRIEF_KINDS, "log", "identity")
JOURNAL_KIND = "journal"  # read on purpose only (search --journal), or as a brief's last resort


SKILL_FILE = "SKILL.md"  # skills/<slug>/SKILL.md: a skill with its scripts beside it


def is_skill_file(rel: str) -> bool:
    """A skill's file: ``skills/<slug>/SKILL.md``, or a single ``skills/<slug>.md``."""
    parts = rel.split("/")
    return parts[0] == SKILLS_DIR and rel.endswith(".md") and (
        len(parts) == 2 or (len(parts) == 3 and parts[2] == SKILL_FILE))


def page_path(stem: str) -> str:
    return f"{AGENTS_DIR}/{stem}.md"


def page_archive_path(stem: str, year: int | str) -> str:
    """Where ``vaultmem compact`` moves a role page's entries of one year."""
    return f"{ARCHIVED_PAGES_DIR}/{stem}-{year}.md"


def note_path(slug: str) -> str:
    return f"{MEMORIES_DIR}/{slug}.md"


def note_ref(slug: str) -> str:
    """How MEMORY.md and frontmatter refer to a note: ``memories/<slug>`` (no suffix)."""
    return f"{MEMORIES_DIR}/{slug}"


def identity_path(agent: str) -> str:
    return f"{IDENTITY_DIR}/{agent}.md"


def inbox_path(iid: str) -> str:
    return f"{INBOX_DIR}/{iid}.md"


def archived_inbox_path(iid: str) -> str:
    return f"{ARCHIVED_INBOX_DIR}/{iid}.md"


def delegation_path(did: str) -> str:
    return f"{DELEGATIONS_DIR}/{did}.md"


def checkpoint_path(agent: str) -> str:
    return f"{CHECKPOINT_DIR}/{agent}.md"


def public_key_path(agent: str) -> str:
    return f"{KEYS_DIR}/{agent}.pub"


def private_key_path(agent: str) -> str:
    return f"{PRIVATE_KEYS_DIR}/{agent}.key"
