"""Setting up: ``init`` (a new vault) and ``config`` (show or change its settings)."""

from functools import partial
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, session


@handles_errors
def init(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Folder for the new vault (created if missing).", show_default=False)],
    lang: Annotated[Optional[str], typer.Option(help="Language of headings: zh or en. [default: en]")] = None,
    orchestrator: Annotated[Optional[str], typer.Option(help="The agent allowed to write role pages.")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Create a vault: folders, MEMORY.md, identity, config, .gitignore, git repo.

    On an existing vault nothing changes. Example: vaultmem init ~/team-memory --lang zh --orchestrator lee
    """
    from ...vault import Vault

    s = session(ctx, vault, as_, json_)
    actor = None
    if s.agent:
        from ...models import Actor
        from ...names import check_name

        actor = Actor(check_name(s.agent, "agent name", field="actor"))
    v, change = Vault.init(path, lang=lang, orchestrator=orchestrator, actor=actor)
    from ..install import record_vaultmem

    record_vaultmem(v.root)  # which vaultmem the Claude Code plugin's launcher runs, when PATH has none
    s.emit(change, render.init)


config_app = typer.Typer(help="Show or change .vaultmem/config.yaml (comments and key order are kept).",
                         no_args_is_help=True)


@config_app.command("show")
@handles_errors
def config_show(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Print the vault's settings."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    path = v.root / ".vaultmem" / "config.yaml"
    s.emit(v.config_values(), lambda _values: render.config_file(path.read_text(encoding="utf-8")))


@config_app.command("set")
@handles_errors
def config_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Dotted setting name, e.g. orchestrator or git.lock_timeout.")],
    value: Annotated[str, typer.Argument(help="New value, read as YAML (10 is a number, [a, b] a list).")],
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Change one setting; the rest of the file, comments included, stays as it was."""
    from ...parse.document import load_yaml

    s = session(ctx, vault, as_, json_)
    v = s.open()
    parsed = load_yaml(f"v: {value}", "VALUE", first_line=1)["v"]
    change = v.set_config(key, parsed, v.actor(s.agent))
    s.emit(change, partial(render.config_set, typed=value))
