"""Claude Code's transcripts (JSON lines): which files a hook may read, and what they say."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import limits
from ...errors import BadInput
from .payload import ENV_CONFIG_DIR, environ

if TYPE_CHECKING:  # imported when a hook opens the vault: SessionEnd, within its budget, never does
    pass

SHAPE_LINES = 16  # the first lines of a file read to know it for a transcript
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024  # a transcript is read up to this much (the start of it)
TAIL_BYTES = 512 * 1024  # what "the transcript's tail" means (PreCompact, the task of a sub-agent)

# -- transcripts (Claude Code's JSON lines) ---------------------------------------------------------------
#
# What a hook reads (docs/safety.md, "What a hook reads"): a path a payload names is read only
# when it is a Claude Code transcript of the session, so that a hook never files /etc/passwd, a
# key, or another project's conversation into the vault (where sync would push it).


def projects_folders() -> list[str]:
    """Claude Code's transcript folders, as real paths: ``$CLAUDE_CONFIG_DIR/projects``
    when that is set, and ``~/.claude/projects`` (a ``~/.claude`` linked elsewhere, as a
    dotfiles repository does, is followed)."""
    out: list[str] = []
    env = environ()
    starts = [env.get(ENV_CONFIG_DIR)]
    try:
        home = env.get("HOME") if env is not os.environ else None
        starts.append(str(Path(home or Path.home()) / ".claude"))
    except RuntimeError:  # no home directory known
        pass
    for start in starts:
        if isinstance(start, str) and start:
            real = os.path.realpath(os.path.join(os.path.expanduser(start), "projects"))
            if real not in out and os.path.isdir(real):
                out.append(real)
    return out


def project_folder_names(*folders: Any) -> set[str]:
    """The names Claude Code may give the transcript folder of a session started in one of
    ``folders``: the path with every character that is not an ASCII letter or digit made
    ``-`` (as Claude Code does; older versions only replaced ``/`` and ``.``: both are
    taken), for the path as given and as resolved."""
    names = set()
    for folder in folders:
        if not isinstance(folder, str) or not os.path.isabs(folder):
            continue
        for p in {os.path.normpath(folder), os.path.realpath(folder)}:
            # a character outside the BMP is two UTF-16 units, each made '-' by Claude Code
            names.add("".join(c if c.isascii() and c.isalnum() else "-" * (1 + (ord(c) > 0xFFFF)) for c in p))
            names.add(p.replace("/", "-").replace(".", "-"))
    return names


def _above(folder: Any) -> list[str]:
    """The folders above ``folder`` (an absolute path), nearest first."""
    if not isinstance(folder, str) or not os.path.isabs(folder):
        return []
    out, here = [], os.path.normpath(folder)
    while (up := os.path.dirname(here)) != here:
        out.append(up)
        here = up
    return out


def open_regular(path: Any):
    """``path`` opened for reading in binary if it is a regular file: never through a
    symbolic link at its end, never a FIFO or a device (opened without waiting, then
    checked). Raises OSError, or ValueError for anything else."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError("not a path")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def transcript_file(path: Any, key: str, cwd: Any = None, project_dir: Any = None) -> str | None:
    """``path`` if it is a Claude Code transcript a hook may read; None when the payload
    names none or nothing is there (nothing to read). Anything else raises BadInput
    (field ``key``), so that the hook files nothing and says why in one line:

    - a regular file named ``*.jsonl``, not a symbolic link, not a FIFO or a device;
    - inside a project folder of Claude Code's transcript folder (:func:`projects_folders`),
      its real path compared with the folder's;
    - inside the session's own project folder when one is there — the folder named for
      ``project_dir`` (``$CLAUDE_PROJECT_DIR``) or ``cwd`` — or one named for a folder
      above ``cwd`` (a session started higher up); when neither is there (a name Claude
      Code shortened), any project folder;
    - its first lines (:data:`SHAPE_LINES`) JSON objects with a ``type``, one of them with
      a ``sessionId`` or ``uuid``: the shape of Claude Code's transcript lines."""
    if path is None or path == "":
        return None
    shown = str(path)[:200]

    def refuse(why: str, hint: str | None = None) -> BadInput:
        return BadInput(f"{shown!r} {why}; nothing read, nothing filed", field=key,
                        hint=hint or "a hook reads only Claude Code's own transcripts (docs/safety.md)")

    if not isinstance(path, str) or "\0" in path or not os.path.isabs(path):
        raise refuse("is not an absolute path")
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # nothing there: nothing read (as a transcript not written yet)
    except OSError as exc:
        raise refuse(f"cannot be looked at ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        raise refuse("is a symbolic link, not a transcript")
    if not stat.S_ISREG(st.st_mode):
        raise refuse("is not a regular file")
    if not path.endswith(".jsonl"):
        raise refuse("is not a transcript (*.jsonl)")
    real = os.path.realpath(path)
    roots = projects_folders()
    place = next(((root, rel[0]) for root in roots
                  if len(rel := Path(os.path.relpath(real, root)).parts) >= 2 and rel[0] not in ("..", ".")), None)
    if place is None:
        where = " or ".join(roots) if roots else "~/.claude/projects (none here)"
        raise refuse(f"is not inside Claude Code's transcript folder ({where})")

    def there(names: set[str]) -> set[tuple[str, str]]:
        return {(root, n) for root in roots for n in names if os.path.isdir(os.path.join(root, n))}

    own = there(project_folder_names(project_dir, cwd))
    if own and place not in own | there(project_folder_names(*_above(cwd))):
        raise refuse(f"is not inside this session's project folder ({', '.join(sorted(n for _, n in own))})",
                     hint="the transcript of another project is not filed into this vault")
    try:
        fh = open_regular(path)
    except (OSError, ValueError) as exc:
        raise refuse(f"cannot be read as a regular file ({getattr(exc, 'strerror', None) or exc})") from None
    budget, seen, found = MAX_TRANSCRIPT_BYTES, 0, False
    with fh:
        for n in range(1, SHAPE_LINES + 1):
            raw = fh.readline(budget)
            budget -= len(raw)
            if not raw.endswith(b"\n"):
                break  # the end, a line still being written, or more than is read: not judged
            if not raw.strip():
                continue
            try:
                entry = limits.load_json(raw)
            except (ValueError, RecursionError):
                raise refuse(f"is not a Claude Code transcript (line {n} is not JSON it reads)") from None
            if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
                raise refuse(f"is not a Claude Code transcript (line {n} is no transcript entry)")
            seen += 1
            found = found or any(isinstance(entry.get(k), str) for k in ("sessionId", "uuid"))
    if not found:
        raise refuse("is not a Claude Code transcript (no line with a type and a sessionId or uuid)"
                     if seen else "is not a Claude Code transcript (no complete JSON line)")
    return path


def read_transcript(path: Any, tail: bool = False) -> list[tuple[int | None, dict]]:
    """The entries of a transcript as (line number, entry); ``tail``: only the last
    :data:`TAIL_BYTES` (line numbers then unknown). A missing or unreadable transcript
    has no entries; a line that is not JSON is passed over."""
    try:
        with open_regular(path) as fh:
            if tail:
                size = os.fstat(fh.fileno()).st_size
                fh.seek(max(0, size - TAIL_BYTES))
                data = fh.read(TAIL_BYTES)
                lines = data.split(b"\n")[1:] if size > TAIL_BYTES else data.split(b"\n")
                numbered: list[tuple[int | None, bytes]] = [(None, ln) for ln in lines]
            else:
                data = fh.read(MAX_TRANSCRIPT_BYTES)
                numbered = list(enumerate(data.split(b"\n"), 1))
    except (OSError, ValueError):
        return []
    out = []
    for n, raw in numbered:
        if not raw.strip():
            continue
        try:
            entry = limits.load_json(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict):
            out.append((n, entry))
    return out


def _texts(entry: dict) -> tuple[str | None, list[str], list[dict]]:
    """(role, text blocks, tool_use blocks) of one transcript entry."""
    message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
    role = message.get("role") or entry.get("type")
    content = message.get("content")
    if isinstance(content, str):
        return role, [content], []
    texts, uses = [], []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            uses.append(block)
    return role, texts, uses


def user_texts(entries, sidechains: bool = False) -> list[tuple[int | None, str]]:
    """What the user typed: user entries with text (not tool results, not Claude Code's own
    meta entries or command echoes; not a sub-agent's, unless ``sidechains``)."""
    out = []
    for n, entry in entries:
        if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
            continue
        if entry.get("isSidechain") and not sidechains:
            continue
        role, texts, _ = _texts(entry)
        text = "\n".join(t for t in texts if not t.lstrip().startswith("<")).strip()
        if role == "user" and text:
            out.append((n, text))
    return out


def assistant_texts(entries, sidechains: bool = False) -> list[tuple[int | None, str]]:
    out = []
    for n, entry in entries:
        if entry.get("type") != "assistant" or (entry.get("isSidechain") and not sidechains):
            continue
        _, texts, _ = _texts(entry)
        text = "\n".join(texts).strip()
        if text:
            out.append((n, text))
    return out


def last_assistant_text(path: Any) -> str | None:
    found = assistant_texts(read_transcript(path, tail=True), sidechains=True)
    return found[-1][1] if found else None


def first_user_text(path: Any) -> str | None:
    """The first thing said to a sub-agent: its task (the delegation message)."""
    try:
        with open_regular(path) as fh:
            for n, raw in enumerate(fh, 1):
                if n > 200:
                    break
                try:
                    entry = limits.load_json(raw)
                except (ValueError, RecursionError):
                    continue
                found = user_texts([(n, entry)], sidechains=True) if isinstance(entry, dict) else []
                if found:
                    return found[0][1]
    except (OSError, ValueError):
        return None
    return None


def task_from_parent(path: Any, agent_type: Any, claimed: set) -> tuple[str, str] | None:
    """The task the main session gave a sub-agent of ``agent_type``: the prompt of the
    newest Task/Agent tool call for it in the session's transcript not claimed by another
    sub-agent; (prompt, tool_use id)."""
    for _, entry in reversed(read_transcript(path, tail=True)):
        if entry.get("type") != "assistant":
            continue
        for use in reversed(_texts(entry)[2]):
            args = use.get("input") if isinstance(use.get("input"), dict) else {}
            kind = args.get("subagent_type") or "general-purpose"
            if use.get("name") in ("Task", "Agent") and kind == agent_type and use.get("id") not in claimed:
                prompt = args.get("prompt") or args.get("description")
                if isinstance(prompt, str) and prompt.strip():
                    return " ".join(prompt.split())[:2000], str(use.get("id") or "")
    return None
