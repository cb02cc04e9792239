"""The one exception tree of vaultmem.

Every error a user can cause or meet is a :class:`VaultmemError`. Each carries a
message written for the user, optionally the file and line it is about and a hint
on what to do next, and the process exit code the CLI uses for it. Adapters (CLI,
hooks, MCP) translate these in one place; nothing else prints them.
"""

from __future__ import annotations

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


class StorageError(VaultmemError):
    """The operating system could not store a change (no space left, a read-only disk,
    a quota): nothing was changed, the files are as they were."""

    exit_code = 5
    kind = "storage_error"
