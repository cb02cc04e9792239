"""``vaultmem hook claude EVENT``: Claude Code's hooks, on the :class:`vaultmem.Vault` facade.

Claude Code runs the hook with the event's JSON payload on stdin. Whatever happens — no
vault, broken YAML in the vault, a payload that is not JSON, an unknown event, a bug —
the hook exits 0 and says what went wrong in one line on stderr (``vaultmem hook: …``):
memory never blocks a session (as :func:`vaultmem.adapters.edge.fail_open`, and the line
never repeats a secret the payload held).

Which vault: ``--vault``, ``$VAULTMEM_VAULT``, else the nearest vault at or above
``$CLAUDE_PROJECT_DIR``, else at or above the payload's ``cwd``. Who acts: ``--as``,
``$VAULTMEM_AGENT``, the setting ``hooks.claude.agent``, else the vault's orchestrator —
the main Claude Code session is the orchestrator of its sub-agents. The hook always
acts as an agent, never as the human, so the review gate holds exactly as through the
CLI: an agent that is not the orchestrator only proposes.

The events (docs/hooks.md says what each reads, writes and prints):

- ``SessionStart``: the brief of the session's agent (``agent_type``, else the acting
  agent), with its checkpoint when the session resumes (``source`` resume or compact)
  and the checkpoint is fresh, as ``additionalContext`` within ``hooks.claude.max_chars``.
- ``UserPromptSubmit`` (with ``hooks.claude.prompt_log: true``): other agents' live-log
  entries the agent has not seen, marked seen; nothing when there are none.
- ``SubagentStart``: a delegation of the task to the role ``agent_type`` (its page
  created on first dispatch) and its brief, for the sub-agent's context.
- ``SubagentStop``: a harvest of ``last_assistant_message`` (labelled lines: Task /
  任务, Conclusion / 结论, Output / 产出, Decision / 关键决策) into the role's page; a
  message without all four goes to the review inbox for a human, never made up.
- ``PreCompact``: a checkpoint of the working context, for the resumed session.
- ``Stop`` / ``SessionEnd``: the session's candidate facts (what the user stated as a
  preference, decision or correction; labelled conclusions and decisions) filed with
  ``inbox.retain``, each once per session, and the transcript's new turns filed into the
  journal (``journal.hooks``; docs/journal.md). SessionEnd writes a small spool file under
  ``.vaultmem/local/claude/spool/`` and files it from a detached process; a spool a
  killed filer left is filed by the next hook.

The package, one module per concern: :mod:`.hook` (the command line, a warm server asked
first, the event handled), :mod:`.payload` (the payload, which vault, who acts, the
environment), :mod:`.events` (what each event does), :mod:`.spool` (session ends filed by
one filer at a time), :mod:`.records` (per-machine records of started sub-agents) and
:mod:`.transcripts` (which files a hook may read, and what they say).
"""

from .events import HANDLERS, fit
from .hook import STOP_WAIT, answer, ask_warm, cli_main, command_line, handle, main
from .payload import (ENV_AGENT, ENV_CONFIG_DIR, ENV_KEYS, ENV_PROJECT, ENV_WARM, EVENTS, WARM_EVENTS, HookError,
                      acting, environ, find_root, read_payload)
from .spool import drain, pending_spools, spool
from .transcripts import transcript_file

__all__ = ["ENV_AGENT", "ENV_CONFIG_DIR", "ENV_KEYS", "ENV_PROJECT", "ENV_WARM", "EVENTS", "HANDLERS", "STOP_WAIT",
           "WARM_EVENTS", "HookError", "acting", "answer", "ask_warm", "cli_main", "command_line", "drain", "environ",
           "find_root", "fit", "handle", "main", "pending_spools", "read_payload", "spool", "transcript_file"]
