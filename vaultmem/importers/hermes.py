"""Hermes Agent's ``MEMORY.md`` and ``USER.md``, entries separated by ``§``."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import NotFound
from .base import Folder, Found, HERMES_DELIMITER, Read, Source, register, vault_type


# -- Hermes -----------------------------------------------------------------------------------
def hermes_dir(path: Path | None) -> Path:
    """Hermes' memories folder: ``PATH`` (or its ``memories/``), else
    ``$HERMES_HOME/memories``, else ``~/.hermes/memories``."""
    base = Path(path if path is not None else os.environ.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()
    return base / "memories" if (base / "memories").is_dir() else base


def read_hermes(path: Path | None, types: tuple[str, ...], human: str | None) -> Read:
    """``MEMORY.md`` (the agent's notes: third-party facts) and ``USER.md`` (the user's
    profile: user-stated preferences), entries separated by a line holding only ``§``."""
    top = hermes_dir(path)
    top = Path(os.path.realpath(top)) if top.is_dir() else top
    if not top.is_dir():
        raise NotFound(f"{top} is not a folder", path=str(top),
                       hint="give Hermes' home (~/.hermes) or its memories/ folder")
    out = Read(str(Path(os.path.realpath(top))))
    folder = Folder(top, out.problems)
    wanted = {"MEMORY.md": ("fact", "third_party"), "USER.md": ("preference", "user")}
    present = [name for name in wanted if (top / name).exists() or (top / name).is_symlink()]
    if not present:
        raise NotFound(f"no MEMORY.md or USER.md in {top}", path=str(top),
                       hint="give Hermes' home (~/.hermes) or its memories/ folder")
    for name in present:
        vtype, kind = wanted[name]
        text = folder.read(top / name)
        if text is None:
            continue
        pos = 0
        for part in text.split(HERMES_DELIMITER):
            entry = part.strip()
            if entry:
                offset = pos + (len(part) - len(part.lstrip()))
                line = text.count("\n", 0, offset) + 1
                out.found.append(Found(str(top / name), line, entry, vault_type(vtype, types), kind, name,
                                       author=(human if kind == "user" else None) or "hermes",
                                       tags=["hermes", f"hermes/{name[:-3].lower()}"]))
            pos += len(part) + len(HERMES_DELIMITER)
    return out


def read(where: Path | None, types: tuple[str, ...], human: str | None = None, memory_dir: Path | None = None,
         vault_root: Path | None = None) -> Read:
    """This source's reader, as :class:`~.base.Source` calls it."""
    return read_hermes(where, types, human)


register(Source("hermes", read))

