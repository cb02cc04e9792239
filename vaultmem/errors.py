"""The one exception tree of vaultmem.

Every error a user can cause or meet is a :class:`VaultmemError`. Each carries a
message written for the user, optionally the file and line it is about and a hint
on what to do next, and the process exit code the CLI uses for it. Adapters (CLI,
hooks, MCP) translate these in one place; nothing else prints them.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class VaultmemError(Exception):
    """Base of every error vaultmem raises on purpose."""

    exit_code = 1
    kind = "error"

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        hint: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.hint = hint
        # Which input was wrong, as the library names it (``agent``, ``importance``,
        # ``text``): an adapter turns it into its own word for it (the CLI: ``--agent``,
        # MCP: the tool parameter). Messages never spell an adapter's flags.
        self.field = field

    def where(self) -> str | None:
        """``file:line`` (or just the file) this error is about, if any."""
        if self.path is None:
            return None
        return f"{self.path}:{self.line}" if self.line else self.path

    def to_dict(self) -> dict:
        return {
            "type": self.kind,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "hint": self.hint,
            "field": self.field,
        }

    def __str__(self) -> str:
        parts = [self.message]
        if self.field:  # messages leave the input's name to whoever shows them
            parts.insert(0, f"{self.field}: ")
        where = self.where()
        if where:
            parts.insert(0, f"{where}: ")
        text = "".join(parts)
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class BadInput(VaultmemError):
    """An argument or option the user gave cannot be used as it is."""

    exit_code = 2
    kind = "bad_input"


class NameRefused(BadInput):
    """A role, agent or note name cannot safely become a file name."""

    kind = "name_refused"


class SecretRefused(BadInput):
    """The input holds a secret and the vault is set to refuse such writes."""

    kind = "secret_refused"


class VaultNotFound(VaultmemError):
    """No vault where one was expected."""

    kind = "vault_not_found"


class NotFound(VaultmemError):
    """A page, note or entry that was asked for does not exist."""

    kind = "not_found"


class ParseError(VaultmemError):
    """A vault file cannot be read as its format says (broken YAML, missing section...)."""

    kind = "parse_error"


class PermissionRefused(VaultmemError):
    """The acting agent may not make this change (sovereignty rules)."""

    exit_code = 3
    kind = "permission_refused"


class UnsafePath(VaultmemError):
    """A write would land outside the vault (traversal or a symlink leading out)."""

    exit_code = 3
    kind = "unsafe_path"


class Busy(VaultmemError):
    """Another process holds a lock for longer than we are willing to wait."""

    exit_code = 4
    kind = "busy"


class GitError(VaultmemError):
    """git refused or failed to record a change; the files were restored."""

    kind = "git_error"


class ModelUnavailable(VaultmemError):
    """The configured embedding model cannot be used (its library missing, its folder
    absent or not loading): search answers from the lexical index alone and says why."""

    kind = "model_unavailable"


class StorageError(VaultmemError):
    """The operating system could not store a change (no space left, a read-only disk,
    a quota): nothing was changed, the files are as they were."""

    exit_code = 5
    kind = "storage_error"


_EDQUOT = getattr(errno, "EDQUOT", None)
# Only a write meets these: the OSError is a write's whatever the caller knows.
_WRITE_ONLY = {errno.ENOSPC, errno.EROFS, errno.EFBIG} | ({_EDQUOT} if _EDQUOT else set())
# The disk is full: said plainly, with what to do.
_FULL = {errno.ENOSPC: ("no space left on device", "free some space on that disk, then run the command again")}
if _EDQUOT:
    _FULL[_EDQUOT] = ("disk quota exceeded", "free some space or ask for a larger quota, then run the command again")
_WRITE_HINTS = {
    errno.EROFS: "the file system is mounted read-only: keep the vault on a writable disk",
    errno.EACCES: "check who may write that file and its folder",
    errno.EPERM: "check who may write that file and its folder",
}


def _filename(exc: OSError) -> str | None:
    name = exc.filename
    if name is None or isinstance(name, int):  # an fd names no file
        return None
    return os.fsdecode(name)


def from_os_error(exc: OSError, *, path: str | os.PathLike | None = None,
                  writing: bool | None = None) -> VaultmemError:
    """An OSError as an error a user can act on (the library's own writes and the
    adapters' edge both use it). ``path`` is the file it is about (default: the OSError's own file name) and
    ``writing`` whether it came from a write (default: its errno is one only a write
    meets — no space, a quota, a read-only disk, a file too large).

    No space or quota → ``StorageError("no space left on device while writing PATH")``;
    any other failed write → ``StorageError("cannot write PATH: <the system's reason>")``;
    anything else → a plain error (exit 1) naming the file and the reason."""
    shown = str(os.fspath(path)) if path is not None else _filename(exc)
    if writing is None:
        writing = exc.errno in _WRITE_ONLY
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in _FULL:
        what, hint = _FULL[exc.errno]
        return StorageError(f"{what} while writing {shown}" if shown else what, path=shown, hint=hint)
    if writing:
        return StorageError(f"cannot write {shown}: {reason}" if shown else f"cannot write: {reason}",
                            path=shown, hint=_WRITE_HINTS.get(exc.errno))
    return VaultmemError(f"cannot access {shown}: {reason}" if shown else reason, path=shown)
