"""The files a new vault starts with: ``vault-template/`` (shipped inside the package)."""

from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

from . import files, gitstore, layout
from .config import Config, load_config, parse_config, set_values
from .errors import BadInput, NotFound
from .models import Actor, Change
from .names import check_name
from .walk import is_vault


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
    return dict(_planned(lang, orchestrator))


@lru_cache(maxsize=4)
def _planned(lang: str, orchestrator: str) -> tuple[tuple[str, str], ...]:
    """:func:`plan`, made once a process for each language and orchestrator: the template
    ships with the package, and setting two values in its commented config takes
    ruamel.yaml ~30 ms."""
    tpl = template_root()
    common = tpl / "common"
    planned = {src.relative_to(common).as_posix(): files.read_text(src)
               for src in sorted(common.rglob("*")) if src.is_file()}
    planned[layout.MEMORY_INDEX] = files.read_text(tpl / lang / "MEMORY.md")
    identity = string.Template(files.read_text(tpl / lang / "identity.md"))
    planned[layout.identity_path(orchestrator)] = identity.safe_substitute(agent=orchestrator)
    planned[layout.CONFIG_PATH] = set_values(planned[layout.CONFIG_PATH], [("lang", lang), ("orchestrator", orchestrator)])
    return tuple(planned.items())


def create(path: str | Path, lang: str | None = None, orchestrator: str | None = None,
           actor: Actor | None = None) -> tuple[Path, Config, Change]:
    """A new vault at ``path`` from ``vault-template/`` (files that already exist are kept),
    committed by ``actor`` (default: the human, as git knows them): its root, its settings
    and the Change. On an existing vault nothing changes and the Change says so."""
    root = Path(path).expanduser()
    if is_vault(root):
        root = root.resolve()
        config = load_config(root)
        message = f"{root} is already a vault (lang {config.lang}, orchestrator {config.orchestrator}); nothing changed"
        ignored = [f"--{k} {v}" for k, v in (("lang", lang), ("orchestrator", orchestrator))
                   if v is not None and v != getattr(config, k)]
        if ignored:
            message += f"; {' and '.join(ignored)} ignored (change settings with 'vaultmem config set')"
        return root, config, Change("init", [], None, message, {"created": False, "root": str(root)})
    lang = lang or "en"
    if lang not in ("zh", "en"):
        raise BadInput(f"the language is {lang!r}; it must be zh or en", field="lang")
    orchestrator = check_name(orchestrator or "orchestrator", "orchestrator name")
    if root.exists() and not root.is_dir():
        raise BadInput(f"{root} exists and is not a folder", path=str(root))
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    written = []
    for rel, text in plan(lang, orchestrator).items():
        target = files.inside(root, rel)
        if not target.exists():
            files.atomic_write(target, text)
            written.append(rel)
    gitstore.init_repo(root)
    actor = actor or gitstore.human_actor(root)
    config = parse_config(files.read_vault_text(root, layout.CONFIG_PATH))
    message = f"vaultmem: create vault (lang {lang}, orchestrator {orchestrator})"
    sha = gitstore.commit(root, written, message, actor, config.lock_timeout)
    return root, config, Change("init", written, sha, message,
                                {"created": True, "root": str(root), "lang": lang, "orchestrator": orchestrator})
