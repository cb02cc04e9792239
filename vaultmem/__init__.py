"""vaultmem: memory for teams of AI agents, kept as Markdown in a git-backed Obsidian vault.

The public Python API is the :class:`Vault` facade and the exception tree in
:mod:`vaultmem.errors`; the CLI, hooks and other adapters are thin clients of it.
"""

from .errors import (
    BadInput,
    Busy,
    GitError,
    NameRefused,
    NotFound,
    ParseError,
    PermissionRefused,
    SecretRefused,
    UnsafePath,
    VaultmemError,
    VaultNotFound,
)
from .models import Actor, Change, Entry, NoteInfo, PageInfo
from .vault import Vault, locate

__version__ = "0.1.0"

__all__ = [
    "Actor", "BadInput", "Busy", "Change", "Entry", "GitError", "NameRefused", "NoteInfo", "NotFound",
    "PageInfo", "ParseError", "PermissionRefused", "SecretRefused", "UnsafePath", "Vault", "VaultNotFound", "VaultmemError",
    "__version__", "locate",
]  # fmt: skip
