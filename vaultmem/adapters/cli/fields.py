"""The CLI's word for each input the library names.

A library error says which input was wrong by the library's name for it
(``VaultmemError.field``: ``importance``, ``agent``, ``text``, ``tags`` …) and leaves the
flags to the adapters. The CLI names what the user typed, found in this order:

1. :data:`COMMAND_FLAGS`: a command whose word for a field is its own (``log append``
   calls the acting agent ``--as``);
2. :data:`FLAGS`: a field every command that has it spells otherwise (``tags`` is the
   repeatable ``--tag``), if the command that ran has that flag;
3. the command's own parameter of that name (``type`` is the option ``type_``): an
   option by its flag (``--importance``, ``-n``), a positional argument by its metavar
   (``text`` → ``TEXT``);
4. none, if the command has no such input (a field of a file it read, say): the error
   is shown with the library's name;

and when the command is not known, ``--field-with-dashes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# field → flag, wherever a command has that flag
FLAGS: dict[str, str] = {
    "tags": "--tag",  # one tag a flag, repeatable
    "aliases": "--alias",
    "kinds": "--kind",
    "types": "--type",
    "statuses": "--status",
    "author_kinds": "--author-kind",
    "actor": "--as",  # the agent making the change
    "limit": "-n",
    "max_count": "-n",
    "next_steps": "--next",
    "max_age_hours": "--max-age",
    "max_age": "--max-age",
}

# the acting agent, in commands that take no other agent
_ACTOR_IS_AGENT = {"agent": "--as"}

# command as typed → field → what the user typed for it
COMMAND_FLAGS: dict[str, dict[str, str]] = {
    "log append": _ACTOR_IS_AGENT,
    "log ack": {**_ACTOR_IS_AGENT, "summary": "--note"},  # the ack's summary is the note
    "log commit": _ACTOR_IS_AGENT,
    "keys revoke": {"summary": "--reason"},  # the revoking entry's summary holds the reason
    "decide": {**_ACTOR_IS_AGENT, "summary": "--decision", "body": "--why"},  # a decision-log entry
    "state set": _ACTOR_IS_AGENT,
    "checkpoint save": {**_ACTOR_IS_AGENT, "text": "FILE"},  # the working context, from FILE or stdin
    "sync": _ACTOR_IS_AGENT,
    "review show": {"item": "ITEM_ID", "id": "ITEM_ID"},
    "review approve": {"item": "ITEM_ID", "id": "ITEM_ID"},
    "review edit": {"item": "ITEM_ID", "id": "ITEM_ID"},
    "review reject": {"item": "ITEM_ID", "id": "ITEM_ID"},
}


def default_flag(field: str) -> str:
    """``author_kind`` → ``--author-kind``."""
    return "--" + field.replace("_", "-")


def _spelled(param: Any) -> str:
    """How the user types a click parameter: a positional argument by its metavar, an
    option by its long flag (its short one if it has none)."""
    if getattr(param, "param_type_name", "") == "argument":
        return param.human_readable_name
    opts = list(getattr(param, "opts", []))
    return next((o for o in opts if o.startswith("--")), opts[0] if opts else default_flag(param.name))


def option_for(field: str, command: str | None = None, params: Iterable[Any] | None = None) -> str | None:
    """What the user typed for the library's ``field`` in ``command`` (``"remember"``,
    ``"log append"``), given that command's click parameters; None if it has no such
    input. Without ``params`` (no command known): the mapping, else ``--field``."""
    own = COMMAND_FLAGS.get(command or "", {}).get(field)
    if own:
        return own
    if params is None:
        return FLAGS.get(field) or default_flag(field)
    params = list(params)
    shared = FLAGS.get(field)
    if shared and any(shared in getattr(p, "opts", ()) for p in params):
        return shared
    for p in params:
        if p.name in (field, f"{field}_"):  # typer's name for a flag that is a Python word: type_
            return _spelled(p)
    return None
