"""The shared live-context log and the decision log: signed, append-only, per-agent files.

Layout: ``shared/log/<agent>.md`` (live context) and ``shared/decisions/<agent>.md``
(decisions), one entry per line (see :mod:`vaultmem.parse.logline`). Each agent appends
only to its own files, so clones merge through git without conflicts; readers merge the
files by (timestamp, agent, sequence), so every clone reads the same order.

Keys: ``vaultmem keys new AGENT`` writes an Ed25519 private key to
``.vaultmem/keys/<agent>.key`` (mode 0600, git-ignored) and the public key to
``shared/keys/<agent>.pub`` (committed). Later keys are introduced by a ``key-rotate``
entry signed with the current key; ``key-revoke`` retires one. Both take effect at their
place in the agent's chain (sequence numbers), never at the time an entry claims.

Appending: open with O_APPEND, take an exclusive ``flock`` on the file, read the agent's
last line (sequence number and hash for the chain), then write the whole line with one
``os.write``. A reader skips a last line without its newline, so it never sees a partial
entry; a writer killed mid-write leaves such a tail, which ``verify`` reports and
``repair`` cuts.

The package: :mod:`.entries` (read, append, repair, rotate; cursors), :mod:`.keys` (the
signing keys) and :mod:`.verify` (signatures, chains, key events, checkpoints' marks).
Syncing the logs between clones is :mod:`vaultmem.shared`'s.
"""

from .entries import (BLOCK, CURSOR_DIR, LOG_DIRS, MAX_ENTRY_BYTES, SHOWN, Appended, append, chain_hash, check_fields,
                      last_sequence, log_file, log_files, newest, now_stamp, parse_altered, read_cursor, read_entries,
                      read_shown, repair, rotate, save_cursor, tail_lines, wait_for_new)
from .keys import (KEYS_DIR, PRIVATE_DIR, initial_keys, key_id, load_private_key, new_private_key, public_key_line,
                   public_raw, save_private_key, verify_signature)
from .verify import KEY_NEEDLE, Checker, KeyTimeline, has_key_events, key_timeline, verify

__all__ = ["BLOCK", "CURSOR_DIR", "KEYS_DIR", "KEY_NEEDLE", "LOG_DIRS", "MAX_ENTRY_BYTES", "PRIVATE_DIR", "SHOWN",
           "Appended", "Checker", "KeyTimeline", "append", "chain_hash", "check_fields", "has_key_events",
           "initial_keys", "key_id", "key_timeline", "last_sequence", "load_private_key", "log_file", "log_files",
           "new_private_key", "newest", "now_stamp", "parse_altered", "public_key_line", "public_raw", "read_cursor",
           "read_entries", "read_shown", "repair", "rotate", "save_cursor", "save_private_key", "tail_lines",
           "verify", "verify_signature", "wait_for_new"]

