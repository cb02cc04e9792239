"""What the SDK backends share (the Claude API memory tool in ``anthropic_memory.py``, the
LangGraph store in ``langgraph_store.py``): the vault they open and the agent they act as.

Neither SDK is needed here, so a backend's argument errors read the same with or without it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import BadInput
from ..vault import ENV_AGENT, Vault, locate


def vault_and_agent(vault: str | os.PathLike | Vault | None, agent: str | None, what: str) -> tuple[Path, str]:
    """(the vault's root, the agent's name) for a backend (``what``: "the store", "the
    memory tool"). ``vault``: a path, an open :class:`Vault`, or None to find it as the CLI
    does; ``agent``: the name, else ``$VAULTMEM_AGENT`` — checked as an agent of the vault,
    and required: a backend never acts as the human, so its writes go through the review gate."""
    root = vault.root if isinstance(vault, Vault) else locate(vault)
    opened = Vault(root)
    name = agent if agent not in (None, "") else os.environ.get(ENV_AGENT) or None
    if name is None:
        raise BadInput(f"{what} writes as an agent, whose writes wait for review: name it",
                       field="agent", hint=f"give agent=NAME, or set ${ENV_AGENT}")
    return root, opened.actor(name).name
