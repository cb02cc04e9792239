"""Small value types shared by the pipeline stages and the facade.

Each has ``to_dict()`` giving the stable JSON shape the CLI prints with ``--json``.

The names below load on first use (PEP 562), as :mod:`vaultmem.parse`'s do: :mod:`.found`
holds what the index stores and a search finds, :mod:`.records` what the facade's reads and
writes hand back. A cold search makes only the first three classes: Python 3.11 takes
0.5–1.5 ms to make a dataclass (it compiles each one's methods), ~6 ms for the six a search
never uses.
"""

SECTIONS = ("context", "work", "subagents")
AUTHOR_KINDS = ("user", "agent", "third_party", "unknown")
SCOPES = ("global", "agent", "project")

# public name → the module of this package that defines it
_EXPORTS = {
    **dict.fromkeys(("IndexDoc", "Hit", "Hits"), "found"),
    **dict.fromkeys(("Actor", "Change", "Entry", "PageInfo", "NoteInfo", "NoteFields"), "records"),
}

__all__ = ["SECTIONS", "AUTHOR_KINDS", "SCOPES", "IndexDoc", "Hit", "Hits", "Actor", "Change", "Entry", "PageInfo",
           "NoteInfo", "NoteFields"]

TYPE_CHECKING = False  # not typing's: this package is imported by every command
if TYPE_CHECKING:
    from .found import Hit, Hits, IndexDoc
    from .records import Actor, Change, Entry, NoteFields, NoteInfo, PageInfo


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
