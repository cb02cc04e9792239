"""``.vaultmem/config.yaml``: read once, at the edge, and handed down as :class:`Config`.

The file is loaded and saved with ruamel.yaml's round-trip mode, so a user's comments
and key order survive :func:`save_config`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import BadInput, ParseError
from .files import atomic_write, read_text
from .parse.document import dump_yaml, load_yaml

CONFIG_PATH = ".vaultmem/config.yaml"
DEFAULT_TYPES = ("preference", "decision", "fact", "failure+fix", "procedure", "episode")


@dataclass(frozen=True)
class Config:
    lang: str = "en"
    orchestrator: str = "orchestrator"
    lock_timeout: float = 10.0
    note_types: tuple[str, ...] = DEFAULT_TYPES
    default_importance: float = 0.5
    raw: Any = field(default=None, compare=False, repr=False)


def _get(raw: Any, dotted: str, default: Any = None) -> Any:
    node = raw
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def parse_config(text: str, path: str = CONFIG_PATH) -> Config:
    raw = load_yaml(text, path, first_line=1)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParseError("the config is not a set of 'key: value' settings", path=path, line=1)

    def bad(key: str, why: str) -> ParseError:
        line = None
        try:
            line = raw.lc.key(key.split(".")[0])[0] + 1
        except Exception:
            pass
        return ParseError(f"the setting '{key}' {why}", path=path, line=line)

    lang = str(_get(raw, "lang", "en"))
    if lang not in ("zh", "en"):
        raise bad("lang", f"is {lang!r}; it must be zh or en")
    orchestrator = _get(raw, "orchestrator", "orchestrator")
    if not orchestrator or not isinstance(orchestrator, str):
        raise bad("orchestrator", "must name the orchestrator agent")
    try:
        timeout = float(_get(raw, "git.lock_timeout", 10))
    except (TypeError, ValueError):
        raise bad("git.lock_timeout", "must be a number of seconds") from None
    types = _get(raw, "memory.types", list(DEFAULT_TYPES))
    if not isinstance(types, list) or not types:
        raise bad("memory.types", "must be a non-empty list of type names")
    try:
        importance = float(_get(raw, "memory.default_importance", 0.5))
    except (TypeError, ValueError):
        raise bad("memory.default_importance", "must be a number from 0 to 1") from None
    return Config(
        lang=lang,
        orchestrator=str(orchestrator),
        lock_timeout=timeout,
        note_types=tuple(str(t) for t in types),
        default_importance=importance,
        raw=raw,
    )


def load_config(root: Path) -> Config:
    path = root / CONFIG_PATH
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise ParseError("the vault has no config file", path=CONFIG_PATH,
                         hint="run 'vaultmem init' in the vault to restore it") from None
    return parse_config(text, CONFIG_PATH)


def set_value(text: str, dotted: str, value: Any, path: str = CONFIG_PATH) -> str:
    """Return the config text with one setting changed; comments and order are kept."""
    raw = load_yaml(text, path, first_line=1)
    if not isinstance(raw, dict):
        raise ParseError("the config is not a set of 'key: value' settings", path=path, line=1)
    node = raw
    parts = dotted.split(".")
    for part in parts[:-1]:
        if part not in node:
            from ruamel.yaml.comments import CommentedMap

            node[part] = CommentedMap()
        node = node[part]
        if not isinstance(node, dict):
            raise BadInput(f"'{dotted}' cannot be set: '{part}' is not a group of settings")
    node[parts[-1]] = value
    new_text = dump_yaml(raw)
    parse_config(new_text, path)  # refuse a value that makes the config invalid
    return new_text


def save_config(root: Path, text: str) -> None:
    atomic_write(root / CONFIG_PATH, text)
