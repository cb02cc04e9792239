"""The provider's settings (``$HERMES_HOME/vaultmem.json``), its vault and the agent it acts as."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ...errors import BadInput, VaultNotFound
from ...names import check_name
from ...vault import ENV_AGENT, locate
from ...walk import ENV_VAULT, is_vault


NAME = "vaultmem"
ENTRY_POINT_GROUP = "hermes_agent.memory_providers"
SETTINGS_FILE = "vaultmem.json"  # in $HERMES_HOME, written by save_config
DEFAULT_VAULT = "vault"  # $HERMES_HOME/vault, when nothing else names one
DEFAULTS: dict[str, Any] = {
    "vault": "",  # the vault folder ('' = $VAULTMEM_VAULT, else $HERMES_HOME/vault)
    "agent": "",  # who the provider writes as ('' = $VAULTMEM_AGENT, else hermes)
    "delegation_role": "subagent",  # the role a delegation is recorded under, unless its task names one
    "brief_tokens": 2000,  # the budget of the brief prefetched for each turn
    "log_turns": True,  # a signed live-log line per turn (when the agent has a key)
    "channel": "general",  # the live-log channel of those lines
    "flush_timeout": 10.0,  # seconds shutdown / session end wait for the writer
}
WRITING_CONTEXTS = ("primary", "")  # agent_context values that write; subagent, cron, flush do not
MAX_TURN_TEXT = 64 * 1024  # of each side of a turn, what is read for facts
MAX_RESULT_CHARS = 4000  # of a sub-agent's result kept in an inbox item when it could not be harvested
CHECKPOINT_CHARS = 6000
LOCK_NAME = "owner.lock"


# -- settings and the vault -----------------------------------------------------------------

def hermes_home(given: str | os.PathLike | None = None) -> Path:
    """The active Hermes home: ``given`` (the ``hermes_home`` Hermes passes), else
    ``$HERMES_HOME``, else Hermes's own answer when it is installed, else ``~/.hermes``."""
    if given:
        return Path(given).expanduser()
    if os.environ.get("HERMES_HOME"):
        return Path(os.environ["HERMES_HOME"]).expanduser()
    try:
        from hermes_constants import get_hermes_home  # type: ignore[import-not-found]

        return Path(get_hermes_home())
    except Exception:  # noqa: BLE001 - Hermes not installed
        return Path("~/.hermes").expanduser()


def load_settings(home: Path) -> dict[str, Any]:
    """The provider's settings: the defaults, then ``memory.vaultmem`` in Hermes's
    ``config.yaml``, then ``$HERMES_HOME/vaultmem.json`` (what ``hermes memory setup``
    saves). A file that cannot be read is an error naming it."""
    out = dict(DEFAULTS)
    cfg = home / "config.yaml"
    if cfg.is_file():
        import yaml

        try:
            data = yaml.safe_load(cfg.read_text(encoding="utf-8-sig")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            line = getattr(getattr(exc, "problem_mark", None), "line", None)
            raise BadInput(f"cannot read Hermes's settings: {' '.join(str(exc).split())[:200]}", path=str(cfg),
                           line=line + 1 if line is not None else None,
                           hint="fix the YAML of that file") from None
        section = ((data.get("memory") or {}) if isinstance(data, dict) else {}).get(NAME)
        if isinstance(section, dict):
            out.update({k: v for k, v in section.items() if k in DEFAULTS})
    own = home / SETTINGS_FILE
    if own.is_file():
        try:
            data = json.loads(own.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise BadInput(f"cannot read the vaultmem provider's settings: {exc}", path=str(own),
                           hint="fix the JSON of that file, or write it again with: hermes memory setup") from None
        if not isinstance(data, dict):
            raise BadInput("the vaultmem provider's settings must be a JSON object", path=str(own))
        out.update({k: v for k, v in data.items() if k in DEFAULTS})
    return checked_settings(out, own)


def checked_settings(s: dict[str, Any], where: Path) -> dict[str, Any]:
    def number(key: str, low: float, high: float, kind=float):
        value = s[key]
        try:
            value = kind(value)
        except (TypeError, ValueError):
            raise BadInput(f"is {s[key]!r}; it must be a number", field=key, path=str(where)) from None
        if not low <= value <= high:
            raise BadInput(f"is {value}; it must be from {low} to {high}", field=key, path=str(where))
        return value

    s["brief_tokens"] = number("brief_tokens", 100, 200_000, int)
    s["flush_timeout"] = number("flush_timeout", 0, 600)
    if isinstance(s["log_turns"], str):
        s["log_turns"] = s["log_turns"].strip().lower() in ("1", "true", "yes", "on")
    s["log_turns"] = bool(s["log_turns"])
    for key in ("vault", "agent", "delegation_role", "channel"):
        s[key] = "" if s[key] is None else str(s[key]).strip()
    return s


def find_vault(settings: dict[str, Any], home: Path) -> Path:
    """The vault: the ``vault`` setting, else ``$VAULTMEM_VAULT``, else ``$HERMES_HOME/vault``."""
    if settings.get("vault"):
        raw = settings["vault"].replace("${HERMES_HOME}", str(home)).replace("$HERMES_HOME", str(home))
        return locate(Path(raw).expanduser())
    if os.environ.get(ENV_VAULT):
        return locate(None)
    candidate = home / DEFAULT_VAULT
    if is_vault(candidate):
        return candidate.resolve()
    raise VaultNotFound(f"no vault for Hermes: no vault setting, no {ENV_VAULT}, and {candidate} is not a vault",
                        hint=f"name one in {home / SETTINGS_FILE} ({{\"vault\": \"PATH\"}}), set {ENV_VAULT}, "
                             f"or create one there: vaultmem init {candidate}")


def agent_name(settings: dict[str, Any]) -> str:
    return check_name(settings.get("agent") or os.environ.get(ENV_AGENT) or "hermes", "agent name", field="agent")
