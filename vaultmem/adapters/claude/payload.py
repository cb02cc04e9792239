"""A hook's input: the event's payload, which vault, who acts, and the environment
(its process's, or the one a warm server was sent with the request)."""

from __future__ import annotations

import contextvars
import datetime as _dt
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping

from ... import limits
from ...errors import BadInput, VaultmemError, VaultNotFound
from ...walk import ENV_VAULT, find_vault, is_vault
from .. import edge

if TYPE_CHECKING:  # imported when a hook opens the vault: SessionEnd, within its budget, never does
    from ...models import Actor
    from ...vault import Vault

ENV_AGENT = "VAULTMEM_AGENT"  # as vaultmem.vault.ENV_AGENT

EVENTS = ("SessionStart", "UserPromptSubmit", "SubagentStart", "SubagentStop", "PreCompact", "Stop", "SessionEnd")
ENV_PROJECT = "CLAUDE_PROJECT_DIR"
ENV_CONFIG_DIR = "CLAUDE_CONFIG_DIR"  # moves ~/.claude, where Claude Code keeps its transcripts
# the payload's paths each event reads (docs/safety.md, "What a hook reads"): only a Claude Code transcript
TRANSCRIPT_KEYS = {"SubagentStart": ("transcript_path",), "SubagentStop": ("agent_transcript_path",),
                   "PreCompact": ("transcript_path",), "Stop": ("transcript_path",),
                   "SessionEnd": ("transcript_path",)}
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024  # more than any payload Claude Code sends: read no further
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class HookError(VaultmemError):
    """The hook's input itself was wrong: a payload that is not JSON, an unknown event."""

    kind = "hook_input"


# A hook answered by a warm server (:func:`answer`) runs in the server's process, on its
# thread: the environment it reads is the hook's own, what it says is sent back, and the
# vault is the server's, already open.
HOOK_ENV: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("hook_env", default=None)
HOOK_SAID: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("hook_said", default=None)
HOOK_OPENER: contextvars.ContextVar[Callable[[Path], ContextManager[Vault]] | None] = contextvars.ContextVar(
    "hook_opener", default=None)
# what a hook's environment may say, sent to a warm server with the payload
ENV_KEYS = (ENV_PROJECT, ENV_CONFIG_DIR, ENV_AGENT, ENV_VAULT, "HOME")
ENV_WARM = "VAULTMEM_WARM"  # "off": every hook runs cold, whatever server is up
WARM_EVENTS = ("SessionStart", "UserPromptSubmit", "SubagentStart", "SubagentStop", "PreCompact", "Stop")


def environ() -> Mapping[str, str]:
    """The hook's environment: its process's, or the one a warm server was sent."""
    sent = HOOK_ENV.get()
    return os.environ if sent is None else sent


def secret_free(text: str) -> str:
    """``text`` with what reads like a secret replaced by a placeholder (an error may
    quote the payload it was given)."""
    try:
        from ...vault import without_secrets

        return without_secrets(text)
    except BaseException:  # noqa: BLE001 - the last word of a hook must not fail
        return text


def read_payload(stream, event: str | None) -> dict:
    """The hook's JSON payload: a JSON object, at most :data:`MAX_PAYLOAD_BYTES`."""
    if event not in EVENTS:
        raise HookError(f"unknown event {event!r}" if event else "no event given",
                        hint=f"events: {', '.join(EVENTS)}")
    raw = getattr(stream, "buffer", stream).read(MAX_PAYLOAD_BYTES + 1)
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise HookError(f"the {event} payload is larger than {MAX_PAYLOAD_BYTES // (1024 * 1024)} MB; not read")
    if not raw.strip():  # Claude Code always sends one: nothing to act on (never a checkpoint of nothing)
        raise HookError(f"no {event} payload on stdin; nothing done")
    try:
        payload = limits.load_json(raw)  # a lone surrogate (half an emoji) becomes U+FFFD
    except (UnicodeDecodeError, ValueError) as exc:
        raise HookError(f"the {event} payload on stdin is not JSON ({str(exc)[:80]})") from None
    except RecursionError:
        raise HookError(f"the {event} payload on stdin is not JSON this hook reads (nested too deeply)") from None
    if not isinstance(payload, dict):
        raise HookError(f"the {event} payload is not a JSON object")
    named = payload.get("hook_event_name")
    if named not in (None, "", event):
        raise HookError(f"the payload is for {named!r}, not {event}")
    return payload


def find_root(vault_opt, payload: dict) -> Path:
    """``--vault``, ``$VAULTMEM_VAULT``, then the nearest vault at or above
    ``$CLAUDE_PROJECT_DIR``, then at or above the payload's ``cwd``."""
    env = environ()
    if vault_opt not in (None, "") or env.get(ENV_VAULT):
        chosen = Path(str(vault_opt or env.get(ENV_VAULT))).expanduser()
        if is_vault(chosen):
            return chosen.resolve()
        from ...vault import locate

        return locate(vault_opt)  # which says why it is no vault
    starts = [(ENV_PROJECT, env.get(ENV_PROJECT)), ("the session's cwd", payload.get("cwd"))]
    tried = []
    for label, start in starts:
        if isinstance(start, str) and start and os.path.isdir(start):
            found = find_vault(start)
            if found is not None:
                return Path(found)
            tried.append(f"{start} ({label})")
    where = " or ".join(tried) if tried else "no project folder given"
    raise VaultNotFound(f"no vault at or above {where}",
                        hint=f"set {ENV_VAULT}, pass --vault to the hook command, or create one with 'vaultmem init'")


def acting(v: Vault, agent_opt: str | None) -> Actor:
    """Who the hook acts as: ``--as``, ``$VAULTMEM_AGENT``, ``hooks.claude.agent``, else
    the orchestrator. Always an agent."""
    name = agent_opt or environ().get(ENV_AGENT) or v.config.claude_agent or v.config.orchestrator
    return v.actor(name)


def role_name(agent_type: Any) -> str:
    """The vault role for a Claude Code ``agent_type``: the name itself (``code-reviewer``,
    ``Explore``); a plugin's ``plugin:agent`` as ``plugin-agent``. Checked as a role name
    (``../x`` is refused)."""
    from ...names import check_name

    if not isinstance(agent_type, str) or not agent_type.strip():
        raise BadInput("the payload names no agent_type", field="agent_type")
    return check_name(agent_type.strip().replace(":", "-"), "role name", field="agent_type")


def check_sizes(v: Vault, payload: dict) -> None:
    """Refuse a message larger than the vault's limit before anything is read or written."""
    limit = v.config.max_note_bytes
    for key in ("last_assistant_message", "prompt", "custom_instructions"):
        value = payload.get(key)
        if isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) > limit:
            raise BadInput(f"the payload's {key} is {len(value.encode('utf-8', 'surrogatepass')):,} bytes, "
                           f"more than the vault's memory.max_note_bytes ({limit:,}); nothing written", field=key)


def checked_id(payload: dict, key: str, required: bool = False) -> str | None:
    value = payload.get(key)
    if value in (None, "") and not required:
        return None
    if not isinstance(value, str) or not SAFE_ID.fullmatch(value):
        raise BadInput(f"the payload's {key} {str(value)[:60]!r} is not an id (letters, digits, . _ -)", field=key)
    return value


def say(line: str) -> None:
    """One line on stderr (sent back, for a hook a warm server runs), never an exception."""
    said = HOOK_SAID.get()
    if said is not None:
        said.append(edge.printable(line)[:2000])
        return
    try:
        sys.stderr.write(edge.printable(line)[:2000] + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
