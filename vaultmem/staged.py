"""What the next commit of a vault records, checked before git records it.

The pre-commit hook (``hooks/git/pre-commit``, installed by ``vaultmem install
git-hooks``) runs ``vaultmem check --staged``, which calls :func:`check`. It reads the
index git prepared for the commit (``GIT_INDEX_FILE`` in a hook: with ``git commit
--only``, as vaultmem commits, that index holds HEAD plus the paths being committed) and
HEAD, and finds:

- **frontmatter** that does not parse in a staged Markdown file (the file and the line
  of the YAML error, as the index would meet it) — but in the template folders Obsidian's
  Templates and Templater plugins are set to, whose notes hold placeholders
  (``created: {{date}}``) that become YAML only when a template is applied;
- **a rewritten log**: a staged live-log or decision-log file whose committed lines are
  not all still there, unchanged and first (the logs are append-only), or that is
  deleted; and new entries that do not verify — signature, author, chain, sequence —
  checked by :func:`vaultmem.livelog.verify` over the staged logs and keys. A fork
  (two entries of one agent with one sequence number, from two clones) is no error:
  verify reports it and both entries are kept;
- **secrets** in the lines a commit adds (the detectors of :mod:`vaultmem.guard`, as the
  write path uses them): in every staged text file but public keys and the vault's
  settings (high entropy by nature) and the code of Obsidian's plugins and themes
  (``.obsidian/`` files but its ``*.json`` settings), and in the text of new log entries
  (their signatures and hashes are not secrets). Binary files and files over
  :data:`MAX_FILE_BYTES` (attachments) are not read.

Read-only: no lock is taken (inside a hook git holds ``index.lock`` for the commit) and
nothing in the vault is written; the staged logs are verified from a scratch copy in a
temporary folder outside the vault, removed afterwards.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import files, gitstore, guard, layout, livelog
from .errors import ParseError, VaultmemError
from .parse.document import parse_document
from .parse.logline import LineError, entry_text, parse_line

LOG_FOLDERS = tuple(layout.LOG_DIRS.values())
MAX_SECRETS_PER_FILE = 5  # a file full of keys is named once per key, up to this many
BINARY_PROBE = 8192  # a NUL byte in this many first bytes: not text
MAX_FILE_BYTES = 8 * 1024 * 1024  # larger staged files (attachments) are not read


@dataclass
class StagedCheck:
    """What :func:`check` found: how many staged files it looked at, and each problem
    (``path``, ``line`` — None for a whole file —, ``kind``, ``message``)."""

    checked: int = 0
    problems: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"ok": self.ok, "checked": self.checked, "problems": self.problems}


def _problem(path: str, line: int | None, kind: str, message: str) -> dict:
    return {"path": path, "line": line, "kind": kind, "message": message}


def is_log(rel: str) -> bool:
    """Whether ``rel`` is a live-log or decision-log file (``shared/log/<agent>.md`` …)."""
    folder, _, name = rel.rpartition("/")
    return folder in LOG_FOLDERS and name.endswith(".md")


OBSIDIAN_DIR = ".obsidian/"


def _unscanned(rel: str) -> bool:
    """Files whose text is high-entropy by nature and holds no secret: public keys and
    the vault's settings (as :meth:`vaultmem.transaction.Writer.apply` leaves them), and
    the code of Obsidian's plugins and themes (minified scripts, styles with embedded
    fonts: their settings, ``*.json``, where a plugin keeps a token, are scanned)."""
    if rel.startswith(OBSIDIAN_DIR):
        return not rel.endswith(".json")
    return rel == layout.CONFIG_PATH or (rel.startswith(f"{layout.KEYS_DIR}/") and rel.endswith(".pub"))


def _text(data: bytes) -> str | None:
    """``data`` as text, or None for a binary file (a NUL byte near the start) or one
    that is not UTF-8."""
    if b"\0" in data[:BINARY_PROBE]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# Obsidian's template folders, by the plugin that names them: their notes hold placeholders
# ('created: {{date}}') that are no YAML until a template is applied
TEMPLATE_SETTINGS = {".obsidian/templates.json": "folder",
                     ".obsidian/plugins/templater-obsidian/data.json": "templates_folder"}


def template_folders(root: Path) -> list[str]:
    """The vault's template folders, as Obsidian's Templates and Templater plugins name
    them in their settings (read from the vault, never through a link)."""
    import json

    found = []
    for rel, key in TEMPLATE_SETTINGS.items():
        try:
            folder = json.loads(files.read_bytes(root, rel)).get(key)
        except (OSError, ValueError, AttributeError, VaultmemError):
            continue
        if isinstance(folder, str) and folder.strip("/ "):
            found.append(folder.strip("/ ") + "/")
    return found


def check(root: Path) -> StagedCheck:
    """Check what the next commit of the vault at ``root`` records (see the module)."""
    head_exists = gitstore.has_commit(root)
    changes = gitstore.staged_changes(root, head_exists)
    ids = {("staged", p): sha for p, sha in gitstore.staged_ids(root, [p for s, p in changes if s != "D"]).items()}
    ids |= {("committed", p): sha for p, sha in
            gitstore.committed_ids(root, [p for s, p in changes if s != "A"], head_exists).items()}
    # a log is read whatever its size: its lines must all be there
    blobs = gitstore.read_blobs(root, ids, MAX_FILE_BYTES, whole=[key for key in ids if is_log(key[1])])
    staged = {p: data for (side, p), data in blobs.items() if side == "staged"}
    committed = {p: data for (side, p), data in blobs.items() if side == "committed"}
    result = StagedCheck(checked=len(changes))
    grown: dict[str, int] = {}  # staged log → how many of its lines HEAD already had
    templates = template_folders(root)
    for status, rel in changes:
        if is_log(rel):
            found = _append_only(rel, committed.get(rel), None if status == "D" else staged.get(rel))
            result.problems += found
            if not found and status != "D" and rel in staged:
                grown[rel] = (committed.get(rel) or b"").count(b"\n")
                result.problems += _entry_secrets(rel, staged[rel], grown[rel])
            continue
        if status == "D" or rel not in staged:
            continue
        text = _text(staged[rel])
        if text is None:
            if rel.endswith(".md"):
                result.problems.append(_problem(rel, None, "encoding", "the file is not UTF-8 text"))
            continue
        if rel.endswith(".md") and not any(rel.startswith(t) for t in templates):
            try:
                parse_document(text, rel, require_frontmatter=False, fast=True)
            except ParseError as exc:
                result.problems.append(_problem(rel, exc.line, "frontmatter", exc.message))
        if not _unscanned(rel):
            result.problems += _secrets(rel, text, _text(committed.get(rel, b"")) or "")
    if grown:
        result.problems += _chain_problems(root, grown)
    return result


def _secrets(rel: str, text: str, before: str) -> list[dict]:
    """A problem for each line ``text`` adds to ``before`` that holds a secret (a secret
    broken over a line break next to an added line counts too)."""
    old = set(before.replace("\r", "").split("\n"))
    added = {n for n, line in enumerate(text.split("\n"), 1) if line.rstrip("\r") not in old}
    if not added:
        return []
    kinds: dict[int, list[str]] = {}
    for n, kind in guard.secret_lines(text, added):
        kinds.setdefault(n, []).append(kind)
    return [_problem(rel, n, "secret", f"the line holds a secret ({', '.join(found)}): a secret must not be "
                                       f"committed (git history keeps it even after the file changes)")
            for n, found in list(kinds.items())[:MAX_SECRETS_PER_FILE]]


def _append_only(rel: str, old: bytes | None, new: bytes | None) -> list[dict]:
    """The log file ``rel`` may only grow: what HEAD holds (``old``) must start what is
    staged (``new``; None when the file is deleted)."""
    if new is None:
        if old is None:
            return []
        return [_problem(rel, None, "log-deleted", "the log file is deleted; the logs are append-only (entries are "
                                                   "never changed or removed: a later entry corrects an earlier one)")]
    if old is None or new.startswith(old):
        return []
    if old.startswith(new):
        first = new.count(b"\n") + 1
        return [_problem(rel, first, "log-truncated", f"the lines from line {first} on are removed; the logs are "
                                                      f"append-only (entries are never removed)")]
    for n, (was, now) in enumerate(zip(old.split(b"\n"), new.split(b"\n")), 1):
        if was != now:
            return [_problem(rel, n, "log-rewritten", "the line differs from the last commit; the logs are "
                                                      "append-only (entries are never changed: a later entry "
                                                      "corrects an earlier one)")]
    return []  # pragma: no cover - one of the cases above holds


def _entry_secrets(rel: str, data: bytes, old_lines: int) -> list[dict]:
    """A problem for each new entry of the log ``rel`` whose text holds a secret."""
    out = []
    for n, raw in enumerate(data.split(b"\n")[old_lines:], old_lines + 1):
        try:
            e = parse_line(raw.decode("utf-8", "replace").rstrip("\r"), n)
        except LineError:
            continue  # not an entry: verify names it
        found = sorted({kind for _line, kind in guard.secret_lines(entry_text(e))})
        if found:
            out.append(_problem(rel, n, "secret", f"the entry holds a secret ({', '.join(found)}): a secret must "
                                                  f"not be committed"))
    return out[:MAX_SECRETS_PER_FILE]


def _chain_problems(root: Path, grown: dict[str, int]) -> list[dict]:
    """What :func:`vaultmem.livelog.verify` finds on the new lines of the staged logs in
    ``grown`` (log → its lines in HEAD), verified over every staged log and key."""
    ids = gitstore.staged_ids(root, [*LOG_FOLDERS, layout.KEYS_DIR])
    blobs = gitstore.read_blobs(root, ids)
    with tempfile.TemporaryDirectory(prefix="vaultmem-check-") as scratch:
        for rel, data in blobs.items():
            target = Path(scratch, rel)
            os.makedirs(target.parent, exist_ok=True)
            target.write_bytes(data)
        findings, _counts = livelog.verify(Path(scratch))
    out = []
    for f in findings:
        path, line = f["path"], f.get("line")
        if path in grown and f["kind"] != "forked" and (line or 0) > grown[path]:
            seq = f" (entry {f['agent']}#{f['seq']})" if f.get("seq") is not None else ""
            out.append(_problem(path, line, f"log-{f['kind']}", f"{f['message']}{seq}"))
    return out
