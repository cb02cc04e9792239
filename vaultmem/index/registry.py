"""The index engines, by name: each engine module registers itself here, and the rest of
the index stage looks engines up by name (choosing one, opening one, building on one).

Registering imports nothing heavy: an engine module imports its search library only when
an index is opened, so listing the engines costs a few module imports. The built-in
engines are the modules in :data:`BUILTIN`; another engine (a semantic one, say) joins by
calling :func:`register` — its module added to :data:`BUILTIN`, or imported before use.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

BUILTIN = ("whoosh_engine", "tantivy_engine")  # modules of this package that register an engine
LEGACY_ENGINE = "whoosh"  # the engine of a manifest written before manifests named one


class EngineSpec(NamedTuple):
    """How to find, choose and open one engine (a named tuple, not a dataclass: every
    command that opens an index makes this class, and a dataclass takes ~0.7 ms to make).

    ``open(gen_dir, create)``: the engine of one index generation (its files go where the
    engine likes inside ``gen_dir``). ``library``: the module whose presence makes the
    engine available. ``auto_from_files``: under ``index.engine: auto``, the vault size
    (Markdown files) from which this engine is preferred — auto takes the available engine
    with the largest threshold the vault has reached, and moves an automatic index up to
    it as the vault grows, never back down. ``install_hint``: what to do when it is missing."""

    name: str
    open: Callable[[Path, bool], object]
    library: str
    auto_from_files: int = 0
    install_hint: str = ""
    # the engine indexes a document from its prepared fields alone (``SearchEngine.write``'s
    # ``prepared``), never reading the document: a rebuild's workers need not send it whole
    prepared_only: bool = False

    def available(self) -> bool:
        return importlib.util.find_spec(self.library) is not None


_ENGINES: dict[str, EngineSpec] = {}
_loaded = False


def register(spec: EngineSpec) -> EngineSpec:
    """Make an engine known by its name (a second registration of a name replaces the first)."""
    _ENGINES[spec.name] = spec
    return spec


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN:
            importlib.import_module(f"{__package__}.{module}")


def names() -> tuple[str, ...]:
    """The registered engines: the built-in ones in :data:`BUILTIN`'s order (regardless of
    which engine module was imported first), then the others in registration order."""
    _load()
    builtin = [m.removesuffix("_engine") for m in BUILTIN]
    return tuple(sorted(_ENGINES, key=lambda n: builtin.index(n) if n in builtin else len(builtin)))


def get(name: str) -> EngineSpec:
    """The engine called ``name``; KeyError if none is."""
    _load()
    return _ENGINES[name]


def known(name: str | None) -> bool:
    _load()
    return name in _ENGINES


def choices(extra: str = "auto") -> str:
    """'whoosh, tantivy or auto': the names an engine setting accepts, for messages."""
    return ", ".join(names()) + f" or {extra}"


def auto_choice(n_files: int) -> str:
    """The engine ``auto`` builds on for a vault of ``n_files`` Markdown files."""
    fit = [s for s in (get(n) for n in names()) if s.auto_from_files <= n_files and s.available()]
    if not fit:
        return LEGACY_ENGINE
    return max(fit, key=lambda s: s.auto_from_files).name


def auto_upgrade(live: str, n_files: int) -> str | None:
    """The engine an automatic index on ``live`` should move to at ``n_files`` files (one
    with a higher threshold that the vault has now reached), else None."""
    target = auto_choice(n_files)
    if target == live or not known(live):
        return None
    return target if get(target).auto_from_files > get(live).auto_from_files else None


def open_engine(name: str, gen_dir: Path, create: bool = False):
    """Open (or with ``create``, make) the engine ``name`` of one generation folder."""
    return get(name).open(Path(gen_dir), create)
