"""Registration: the entry point Hermes calls, and the plugin folder Hermes 0.19 loads
(``python -m vaultmem.adapters.hermes install``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ... import files
from .provider import VaultmemProvider
from .settings import NAME, hermes_home


# -- registration ----------------------------------------------------------------------------------

def register(ctx: Any) -> None:
    """Hermes's plugin entry point: ``ctx.register_memory_provider(VaultmemProvider())``."""
    ctx.register_memory_provider(VaultmemProvider())


PLUGIN_INIT = '''"""vaultmem, the team's memory vault, as this Hermes profile's MemoryProvider.

Written by vaultmem (python -m vaultmem.adapters.hermes install): the provider is
vaultmem.adapters.hermes, from the vaultmem package installed beside Hermes.
"""
from vaultmem.adapters.hermes import register  # register(ctx): ctx.register_memory_provider(...)
'''
PLUGIN_YAML = "name: vaultmem\ndescription: Team memory in a git-backed Markdown vault (vaultmem)\n"


def install_plugin(home: str | os.PathLike | None = None) -> Path:
    """Write ``$HERMES_HOME/plugins/vaultmem/`` (``__init__.py`` loading this module,
    ``plugin.yaml``), where Hermes 0.19 looks for memory providers; the folder."""
    folder = hermes_home(home) / "plugins" / NAME
    folder.mkdir(parents=True, exist_ok=True)
    files.atomic_write(folder / "__init__.py", PLUGIN_INIT)
    files.atomic_write(folder / "plugin.yaml", PLUGIN_YAML)
    return folder


def main(argv: list[str] | None = None) -> int:
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "install" or len(args) > 2:
        sys.stderr.write("usage: python -m vaultmem.adapters.hermes install [HERMES_HOME]\n")
        return 2
    folder = install_plugin(args[1] if len(args) == 2 else None)
    sys.stdout.write(f"wrote {folder}: set memory.provider: vaultmem in {folder.parent.parent / 'config.yaml'}\n")
    return 0
