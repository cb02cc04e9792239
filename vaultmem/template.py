"""The files a new vault starts with: ``vault-template/`` (shipped inside the package)."""

from __future__ import annotations

import string
from pathlib import Path

from . import files, layout
from .config import set_value
from .errors import NotFound


def template_root() -> Path:
    """``vault-template/``: inside the installed package, or at the source checkout's top."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_vault_template", here.parent / "vault-template"):
        if (candidate / "common").is_dir():
            return candidate
    raise NotFound("the vault template is missing from this installation",
                   hint="reinstall vaultmem (pip install -e . from the project folder)")  # pragma: no cover


def plan(lang: str, orchestrator: str) -> dict[str, str]:
    """Every file of a new vault in ``lang`` whose orchestrator is ``orchestrator``:
    {vault-relative path: text}."""
    tpl = template_root()
    common = tpl / "common"
    planned = {src.relative_to(common).as_posix(): files.read_text(src)
               for src in sorted(common.rglob("*")) if src.is_file()}
    planned[layout.MEMORY_INDEX] = files.read_text(tpl / lang / "MEMORY.md")
    identity = string.Template(files.read_text(tpl / lang / "identity.md"))
    planned[layout.identity_path(orchestrator)] = identity.safe_substitute(agent=orchestrator)
    text = set_value(planned[layout.CONFIG_PATH], "lang", lang)
    planned[layout.CONFIG_PATH] = set_value(text, "orchestrator", orchestrator)
    return planned
