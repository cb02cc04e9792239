"""The entry point: a hook's command line, asked of a warm server first, else run here;
the event handled once its vault is open."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager

from ...errors import VaultmemError
from ...walk import walk_ahead
from .. import edge, warm
from .events import HANDLERS
from .payload import (ENV_KEYS, ENV_PROJECT, ENV_WARM, HOOK_ENV, HOOK_OPENER, HOOK_SAID, MAX_PAYLOAD_BYTES,
                      TRANSCRIPT_KEYS, WARM_EVENTS, HookError, acting, check_sizes, checked_id, environ, find_root,
                      read_payload, role_name, say, secret_free)
from .spool import drain, pending_spools, spawn_drainer, spool
from .transcripts import transcript_file

if TYPE_CHECKING:  # imported when a hook opens the vault: SessionEnd, within its budget, never does
    from ...vault import Vault

STOP_WAIT = 5.0  # seconds Stop waits for another filer before leaving its spool to it
BRIEFING_EVENTS = frozenset({"SessionStart", "SubagentStart"})  # the events that answer with a brief

# -- the entry point ---------------------------------------------------------------------------


def main(event: str | None, vault: str | os.PathLike | None = None, agent: str | None = None,
         stdin=None, stdout=None, extra: list[str] | None = None) -> int:
    """Run one hook: read the payload from ``stdin``, act, print what Claude Code adds to
    the context on ``stdout``. Returns 0, always; an error is one line on stderr."""
    def run() -> int:
        if extra:
            raise HookError(f"unexpected arguments {' '.join(map(repr, extra))}",
                            hint="the hook is run as: vaultmem hook claude EVENT [--vault V] [--as A]")
        payload = read_payload(stdin if stdin is not None else sys.stdin, event)
        out = handle(str(event), payload, vault, agent)
        if out:
            (stdout or sys.stdout).write(out + "\n")
            (stdout or sys.stdout).flush()
        return 0

    try:
        return run()
    except warm.Declined:
        raise  # a warm server leaves it to the cold path: nothing was done
    except BaseException as exc:  # noqa: BLE001 - a hook fails open, whatever happened
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            return 0
        say(f"vaultmem hook: {secret_free(edge.one_line(exc))}; ignored, the session goes on")
        return 0


def command_line(argv: list[str]) -> tuple[str | None, str | None, str | None, list[str]] | None:
    """``[--vault V] [--as A] [--json] hook claude EVENT [--vault V] [--as A] [--json]`` read
    without the CLI toolkit (a hook's process starts in a few tens of milliseconds):
    (event, vault, agent, anything else given). None when this is not a Claude hook
    command line, or asks for help: the CLI answers those."""
    vault = agent = event = None
    words, extra = [], []
    args = iter(argv)
    for arg in args:
        if arg in ("-h", "--help"):
            return None
        if arg in ("--vault", "--as"):
            value = next(args, None)
            if value is None:
                extra.append(arg)
            elif arg == "--vault":
                vault = value
            else:
                agent = value
        elif arg.startswith("--vault="):
            vault = arg[len("--vault="):]
        elif arg.startswith("--as="):
            agent = arg[len("--as="):]
        elif arg == "--json":
            continue
        elif len(words) < 2 and not arg.startswith("-"):
            words.append(arg)
        elif len(words) == 2 and event is None and not arg.startswith("-"):
            event = arg
        else:
            extra.append(arg)
    if words != ["hook", "claude"]:
        return None
    return event, vault, agent, extra


def cli_main(argv: list[str]) -> int | None:
    """``vaultmem hook claude …`` as the launcher runs it; None: not this command (the
    CLI takes it). Asked of a warm server first (:func:`ask_warm`), else run here."""
    parsed = command_line(argv)
    if parsed is None:
        return None
    event, vault, agent, extra = parsed
    stdin = None
    if event in WARM_EVENTS and not extra and os.environ.get(ENV_WARM) != "off":
        try:
            raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        except (OSError, ValueError, AttributeError):  # no stdin: the cold path says so, and exits 0
            return main(event, vault, agent, extra=extra)
        answered = ask_warm(event, vault, agent, raw)
        if answered is not None:
            return answered
        stdin = io.BytesIO(raw)
    return main(event, vault, agent, stdin=stdin, extra=extra)


def ask_warm(event: str, vault_opt: str | None, agent_opt: str | None, raw: bytes) -> int | None:
    """Run the hook in a warm ``vaultmem mcp`` of its vault (:mod:`.warm`): print what it
    printed and return its exit code; None when there is none to ask, or it did not
    take the hook (then the hook runs here, as if it had not been asked)."""
    try:
        payload = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_PAYLOAD_BYTES else None
        if not isinstance(payload, dict):
            return None
        root = find_root(vault_opt, payload)
    except (ValueError, RecursionError, VaultmemError, OSError):
        return None  # said by the cold path, which reads it again
    env = {k: os.environ[k] for k in ENV_KEYS if k in os.environ}
    # the vault as this process found it (a relative --vault is this process's, not the server's)
    answer = warm.ask(root, {"event": event, "vault": str(root), "as": agent_opt, "env": env,
                             "payload": raw.decode("utf-8")})
    if answer is None:
        return None
    if answer["stdout"]:
        sys.stdout.write(answer["stdout"])
        sys.stdout.flush()
    for line in answer["stderr"]:
        say(str(line))
    return 0  # a hook always exits 0 (the server's main() does too)


def answer(request: dict, opener: Callable[[Path], ContextManager[Vault]]) -> dict:
    """One hook run by a warm server, as :func:`main` runs it: ``request`` as
    :func:`ask_warm` sends it; ``opener(root)`` gives the server's open vault for the
    root the hook resolves to (holding the server's lock while the hook acts) or raises
    :class:`warm.Declined` — then nothing was done. What the hook printed: ``stdout``,
    ``stderr`` (its lines) and ``code``."""
    env = request.get("env")
    event, payload = request.get("event"), request.get("payload")
    if not isinstance(env, dict) or not isinstance(payload, str) or event not in WARM_EVENTS:
        raise warm.Declined("not a hook request")
    said: list[str] = []
    out = io.StringIO()
    tokens = (HOOK_ENV.set({str(k): str(v) for k, v in env.items()}), HOOK_SAID.set(said), HOOK_OPENER.set(opener))
    try:
        code = main(event, request.get("vault") or None, request.get("as") or None,
                    stdin=io.BytesIO(payload.encode("utf-8", "surrogatepass")), stdout=out)
    finally:
        for var, token in zip((HOOK_ENV, HOOK_SAID, HOOK_OPENER), tokens):
            var.reset(token)
    return {"stdout": out.getvalue(), "stderr": said, "code": code}


def handle(event: str, payload: dict, vault_opt=None, agent_opt: str | None = None) -> str | None:
    """Act on one event; the text for stdout (JSON), or None."""
    for key in ("session_id", "agent_id"):  # ids name local files: checked whatever the event
        checked_id(payload, key)
    if payload.get("agent_type") not in (None, ""):
        role_name(payload["agent_type"])
    if agent_opt:
        from ...names import check_name

        check_name(agent_opt, "agent name", field="as")
    for key in TRANSCRIPT_KEYS.get(event, ()):  # before anything is read or written
        transcript_file(payload.get(key), key, payload.get("cwd"), environ().get(ENV_PROJECT))
    root = find_root(vault_opt, payload)
    if event == "SessionEnd":  # within its ~1.5 s: a spool file and a detached filer, nothing more
        spool(root, event, payload, agent_opt)
        spawn_drainer(root)
        return None
    opener = HOOK_OPENER.get()
    if opener is not None:  # a warm server's vault, under its lock
        with opener(root) as v:
            return act(event, payload, v, root, agent_opt)
    # the freshness check's walk, in a child while this process imports and writes
    ahead = walk_ahead(str(Path(root).resolve())) if event in BRIEFING_EVENTS else None
    from ...vault import Vault

    return act(event, payload, Vault.open(root, ahead=ahead), root, agent_opt)


def act(event: str, payload: dict, v: Vault, root: Path, agent_opt: str | None) -> str | None:
    """What :func:`handle` does once the vault is open."""
    actor = acting(v, agent_opt)
    check_sizes(v, payload)
    leftovers = pending_spools(root)
    if event in ("SessionStart", "UserPromptSubmit", "SubagentStart"):
        if leftovers:  # what a killed filer left: filed in the background, not on this event's time
            spawn_drainer(root)
        return HANDLERS[event](v, actor, payload)
    if event == "Stop":
        spool(root, event, payload, agent_opt)
        # within the hook's installed timeout (10 s): when another filer holds the spool
        # that long, this turn's spool stays for it or for the next hook
        drain(root, wait=STOP_WAIT, vault=v)
        return None
    out = HANDLERS[event](v, actor, payload)
    if leftovers:
        drain(root, wait=0, vault=v)
    return out
