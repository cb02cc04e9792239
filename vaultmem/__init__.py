"""vaultmem: memory for teams of AI agents, kept as Markdown in a git-backed Obsidian vault.

The public Python API is the :class:`Vault` facade and the exception tree in
:mod:`vaultmem.errors`; the CLI, hooks and other adapters are thin clients of it.

The names below are loaded on first use (PEP 562), so that importing one small module
of the package — the CLI launcher's :mod:`vaultmem.walk` — does not load them all.
"""

from __future__ import annotations

__version__ = "0.1.0"

# public name → the module that defines it
_EXPORTS = {
    **dict.fromkeys(("BadInput", "Busy", "GitError", "NameRefused", "NotFound", "ParseError", "PermissionRefused",
                     "SecretRefused", "UnsafePath", "VaultmemError", "VaultNotFound"), "errors"),
    **dict.fromkeys(("Actor", "Change", "Entry", "NoteInfo", "PageInfo"), "models"),
    **dict.fromkeys(("Vault", "locate"), "vault"),
}

__all__ = [
    "Actor", "BadInput", "Busy", "Change", "Entry", "GitError", "NameRefused", "NoteInfo", "NotFound",
    "PageInfo", "ParseError", "PermissionRefused", "SecretRefused", "UnsafePath", "Vault", "VaultNotFound", "VaultmemError",
    "__version__", "locate",
]  # fmt: skip

TYPE_CHECKING = False  # not typing's: importing typing would cost the launcher ~5 ms
if TYPE_CHECKING:
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


def __getattr__(name: str):
    import importlib

    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    elif name.isidentifier() and not name.startswith("_"):  # a submodule, as ``vaultmem.errors`` after ``import vaultmem``
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'vaultmem' has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module 'vaultmem' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
