"""The ``MemoryProvider`` itself: prefetch, sync_turn, delegations, pre-compress
checkpoints, session ends and the tools, over the facade."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ... import files, journal, layout, limits
from ...errors import BadInput, Busy, NotFound, PermissionRefused, SecretRefused, VaultmemError, VaultNotFound
from ...names import check_name
from ...parse.page import SUBAGENT_FIELDS
from ...sessions import FIELDS, MAX_FACT_CHARS
from ...vault import Vault, without_secrets
from .. import edge
from .outbox import Outbox
from .settings import (CHECKPOINT_CHARS, DEFAULTS, MAX_RESULT_CHARS, NAME, SETTINGS_FILE, WRITING_CONTEXTS, agent_name,
                       checked_settings, find_vault, hermes_home, load_settings)
from .texts import (checkpoint_of, error_json, facts_in, facts_in_messages, first_line, now, record_fields, scrubbed,
                    split_task, today)
from .tools import TOOLS


try:  # Hermes's own interface, when Hermes is installed beside vaultmem
    from agent.memory_provider import MemoryProvider as _Base  # type: ignore[import-not-found]
except Exception:  # noqa: BLE001 - not installed (or another package's "agent"): a plain class
    _Base = object  # type: ignore[assignment,misc]

log = logging.getLogger("vaultmem.hermes")

# How long the writer waits for a busy vault's write lock at a time (git.lock_timeout if
# that is shorter), and at most between tries. Between tries, what came in meanwhile goes
# to the outbox: a provider killed while another process holds the vault loses no turn
# handed over more than about twice this before.
LOCK_TRY = 0.25


# -- the provider ---------------------------------------------------------------------------------

class VaultmemProvider(_Base):  # type: ignore[misc,valid-type]
    """A vault as Hermes's external memory provider. Every hook answers the host and
    never raises into it; a failure is a log line (and, for a tool, a JSON error)."""

    def __init__(self) -> None:
        self._home: Path | None = None
        self._settings: dict[str, Any] = dict(DEFAULTS)
        self._problem: VaultmemError | None = None  # why the provider cannot serve (no vault …)
        self._vault: Vault | None = None  # reads and tool calls (the host's thread)
        self._root: Path | None = None
        self._agent = "hermes"
        self._session = ""
        self._context = "primary"
        self._platform = "cli"
        self._user = "user"
        self._lock = threading.RLock()  # one tool call or prefetch at a time on the reader vault
        self._jobs: queue.Queue = queue.Queue()
        self._ahead: list = []  # a control job taken off the queue while spilling, done next
        self._spilled: list[Path] = []  # outbox files written while the vault was busy, done next
        self._worker: threading.Thread | None = None
        self._outbox: Outbox | None = None
        self._stamp: tuple | None = None
        self._turns = 0
        self._closed = False  # shut down: hooks hand over nothing more
        self._stopping = False  # the bounded wait is over: a busy vault is not waited for
        self._idle = threading.Condition()
        self._waited_out = False  # a bounded wait for the writer already ran out (the vault is busy)

    # -- identity and availability ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return NAME

    def is_available(self) -> bool:
        """Whether a vault is found (settings, ``$VAULTMEM_VAULT``, ``$HERMES_HOME/vault``):
        files only, no network, never an exception."""
        try:
            home = hermes_home(self._home)
            find_vault(load_settings(home), home)
            return True
        except Exception as exc:  # noqa: BLE001
            log.info("vaultmem provider not available: %s", edge.one_line(exc))
            return False

    # -- the session -------------------------------------------------------------------------------
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Find and open the vault; start the writer (not for a subagent, cron or flush
        context, which write nothing) and take over what providers that are gone left
        in their outbox. Called again, it first shuts the earlier session's writer down."""
        if self._worker is not None:
            self.shutdown()
            self._worker, self._outbox, self._jobs = None, None, queue.Queue()
        self._closed = self._stopping = self._waited_out = False
        try:
            self._session = str(session_id or "")
            self._context = str(kwargs.get("agent_context") or "primary")
            self._platform = str(kwargs.get("platform") or "cli")
            self._home = hermes_home(kwargs.get("hermes_home"))
            user = kwargs.get("user_name") or kwargs.get("user_id")
            if user:
                try:
                    self._user = check_name(str(user), "author")
                except BadInput:
                    self._user = "user"
            self._settings = load_settings(self._home)
            self._agent = agent_name(self._settings)
            self._root = find_vault(self._settings, self._home)
            self._vault = Vault.open(self._root)
            self._vault.actor(self._agent)
            self._stamp = self._settings_stamp()
            self._problem = None
        except Exception as exc:  # noqa: BLE001 - the host goes on without memory
            self._problem = edge.as_error(exc)
            self._vault = None
            log.warning("vaultmem provider: %s", edge.one_line(exc))
            return
        if self.writes:
            try:
                self._outbox = Outbox.create(self._root)
            except OSError as exc:
                self._problem = edge.as_error(exc)
                log.warning("vaultmem provider cannot keep its outbox: %s", edge.one_line(exc))
                return
            self._worker = threading.Thread(target=self._run, name="vaultmem-writer", daemon=True)
            self._worker.start()
            self._jobs.put(("adopt", {}))

    @property
    def writes(self) -> bool:
        """Whether this context writes: a primary agent's does; a subagent's, a cron job's
        and a memory flush's do not."""
        return self._context in WRITING_CONTEXTS and self._platform != "cron"

    def on_session_switch(self, new_session_id: str, *, parent_session_id: str = "", reset: bool = False,
                          **kwargs: Any) -> None:
        """Later turns belong to ``new_session_id`` (Hermes calls on_session_end first when
        the old session really ends)."""
        if new_session_id:
            self._session = str(new_session_id)
            if reset:
                self._turns = 0

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        return None

    def system_prompt_block(self) -> str:
        """Facts about the memory for the system prompt: short, no instructions."""
        if self._vault is None:
            return ""
        try:
            with self._lock:
                v = self._current()
                pages = len(v.pages.roles())
            lines = [f"Team memory (vaultmem): the vault at {v.root}, role pages {pages}."]
            if not self.writes:
                lines.append(f"This {self._context} context reads the vault and writes nothing to it.")
            elif self._agent == v.config.orchestrator:
                lines.append(f"This agent is {self._agent}, the vault's orchestrator: it writes role pages; "
                             "memory notes it remembers wait in the review inbox for a human.")
            else:
                lines.append(f"This agent is {self._agent}; what it writes waits in the review inbox for a human "
                             f"(the orchestrator is {v.config.orchestrator}).")
            lines.append("Each turn begins with a brief from the vault, fenced as reference data. The tools "
                         "search_memory, read_page, read_note, remember, page_add, log_append, log_tail and "
                         "review_list reach the vault.")
            lines.append(f"A delegated task is recorded on the page of the role named by a first line "
                         f"'role: NAME' of its goal, else on {self._settings['delegation_role']!r}.")
            return "\n".join(lines)
        except Exception as exc:  # noqa: BLE001
            log.warning("vaultmem system prompt block: %s", edge.one_line(exc))
            return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """The brief of this agent for the turn's message, within ``brief_tokens``."""
        if self._vault is None or not (query or "").strip():
            return ""
        try:
            limits.check_text("task", query)  # before its secrets are looked for: that costs by the byte
            with self._lock:
                b = self._current().brief(self._agent, without_secrets(query), tokens=self._settings["brief_tokens"])
            return b.markdown
        except Exception as exc:  # noqa: BLE001
            log.warning("vaultmem prefetch: %s", edge.one_line(exc))
            return ""

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        return None  # prefetch is fast enough on the open vault

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: list[dict[str, Any]] | None = None) -> None:
        """Hand the turn to the writer and return at once."""
        if self._worker is None or self._closed:
            return
        self._turns += 1
        self._jobs.put(("turn", {"session": session_id or self._session, "user": str(user_content or ""),
                                 "assistant": str(assistant_content or ""), "n": self._turns, "said": now()}))

    def on_memory_write(self, action: str, target: str, content: str, metadata: dict | None = None) -> None:
        """What Hermes's built-in memory tool adds is proposed for the vault at session end."""
        if self._worker is None or self._closed or action != "add" or not (content or "").strip():
            return
        kind = "preference" if target == "user" else "fact"
        self._jobs.put(("facts", {"session": self._session, "said": now(), "source": "hermes memory tool",
                                  "facts": [{"type": kind, "text": " ".join(content.split())[:MAX_FACT_CHARS],
                                             "author_kind": "agent"}]}))

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        """A sub-agent finished: its delegation and record are written by the writer."""
        if self._worker is None or self._closed:
            return
        self._jobs.put(("delegation", {"task": str(task or ""), "result": str(result or ""),
                                       "child": str(child_session_id or ""), "session": self._session}))

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """A checkpoint of the working context about to be compressed (saved by the
        writer); its text is returned for the compression summary. The facts said in
        those messages are kept for the session's retention proposal."""
        if self._worker is None or self._closed or not isinstance(messages, list) or not messages:
            return ""
        try:
            cp = checkpoint_of(messages)
            self._jobs.put(("checkpoint", {"session": self._session, **cp}))
            self._jobs.put(("facts", {"session": self._session, "said": now(), "facts": facts_in_messages(messages)}))
            path = layout.checkpoint_path(self._agent)
            return without_secrets(f"vaultmem checkpoint ({path}): task: {cp['task'] or '-'}; {cp['step']}.\n"
                                   f"{cp['text']}")[:CHECKPOINT_CHARS]
        except Exception as exc:  # noqa: BLE001
            log.warning("vaultmem pre-compress: %s", edge.one_line(exc))
            return ""

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Propose what the session said that is worth keeping (the review inbox), then
        wait a bounded time for the writer; what is not done yet stays in the outbox."""
        if self._worker is None or self._closed:
            return
        if isinstance(messages, list) and messages and self._vault is not None and self._vault.config.journal_hooks:
            self._jobs.put(("journal", {"session": self._session, "day": today(), "messages": messages}))
        self._jobs.put(("session-end", {"session": self._session, "said": now(),
                                        "facts": facts_in_messages(messages)}))
        self.flush(self._settings["flush_timeout"])

    def shutdown(self) -> None:
        """Wait (bounded) for the writer; keep in the outbox whatever it has not done."""
        if self._closed:
            return
        self._closed = True
        if self._worker is not None:
            self._jobs.put(("final", {}))  # facts of turns handed over after the session's end
            done = self.flush(0.2 if self._waited_out else self._settings["flush_timeout"])
            self._stopping = True
            if not done:
                log.warning("vaultmem provider: the vault is busy; what is not written yet stays in %s for the "
                            "next session", layout.HERMES_OUTBOX_DIR)
            self._spill()  # what the writer has not taken yet goes to the outbox, not into thin air
            self._jobs.put(("stop", {}))  # the writer lets go of the outbox as it stops (_release)
            self._worker.join(max(0.5, self._settings["flush_timeout"]) if done else 0.5)
        else:
            self._release()

    def _release(self) -> None:
        """Let go of the outbox folder (the next provider adopts what it holds) and the
        index: done by the writer as it stops, so a writer that outlives shutdown's wait
        (a busy machine) still hands its folder over before its process ends."""
        if self._outbox is not None:
            self._outbox.close()
        if self._vault is not None:
            try:
                self._vault.close()
            except Exception:  # noqa: BLE001
                pass

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the writer has done everything handed to it (True), or ``timeout``
        seconds have passed (False)."""
        if self._worker is None:
            return True
        with self._idle:
            done = self._idle.wait_for(lambda: self._jobs.unfinished_tasks == 0 and not self._spilled, timeout)
        self._waited_out = self._waited_out or not done
        return done

    def backup_paths(self) -> list[str]:
        return []

    # -- settings (hermes memory setup) -------------------------------------------------------------
    def get_config_schema(self) -> list[dict[str, Any]]:
        return [
            {"key": "vault", "description": "The vault folder (empty: $VAULTMEM_VAULT, else $HERMES_HOME/vault)",
             "default": ""},
            {"key": "agent", "description": "The vault agent Hermes writes as (empty: $VAULTMEM_AGENT, else hermes)",
             "default": ""},
            {"key": "delegation_role", "description": "The role page a delegated task is recorded on, unless its "
                                                      "goal starts with 'role: NAME'", "default": "subagent"},
            {"key": "brief_tokens", "description": "Token budget of the brief given before each turn",
             "default": "2000"},
            {"key": "log_turns", "description": "A signed live-log line per turn (needs the agent's key)",
             "default": "true", "choices": ["true", "false"]},
        ]

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        """Write the settings to ``$HERMES_HOME/vaultmem.json`` (keys not listed in the
        schema are left out; the values are checked first)."""
        home = Path(hermes_home).expanduser()
        path = home / SETTINGS_FILE
        current: dict[str, Any] = {}
        if path.is_file():
            try:
                current = json.loads(path.read_text(encoding="utf-8-sig"))
            except (OSError, ValueError):
                current = {}
        merged = {**(current if isinstance(current, dict) else {}),
                  **{k: v for k, v in (values or {}).items() if k in DEFAULTS}}
        checked_settings({**DEFAULTS, **merged}, path)
        home.mkdir(parents=True, exist_ok=True)
        files.atomic_write(path, json.dumps(merged, ensure_ascii=False, indent=2) + "\n", mode=0o600)

    # -- tools ----------------------------------------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [dict(name=n, description=t.description, parameters=t.parameters()) for n, t in TOOLS.items()]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run one tool; the answer is a JSON string: ``{"success": true, …}`` or
        ``{"success": false, "error": "…", "type", "message", "hint", "field", "path", "line"}``."""
        try:
            tool = TOOLS.get(tool_name)
            if tool is None:
                raise edge.UsageError(f"there is no tool {tool_name!r}", field="tool",
                                      hint=f"the tools: {', '.join(TOOLS)}")
            clean = tool.check(args)
            if tool_name == "remember" and not clean.get("source"):
                clean["source"] = f"hermes session {self._session or '-'}"
            if self._vault is None:
                raise self._problem or VaultNotFound("the vaultmem provider was not initialized")
            if tool.writes and not self.writes:
                raise PermissionRefused(f"this {self._context} context writes nothing to the vault",
                                        hint="only the primary agent's session writes")
            with self._lock:
                v = self._current()
                data = tool.run(v, v.actor(self._agent), **clean)
            return edge.json_text({"success": True, **data}, indent=None)
        except Exception as exc:  # noqa: BLE001 - every error is answered, none escapes as a traceback
            return error_json(exc)

    # -- inside -----------------------------------------------------------------------------------------
    def _settings_stamp(self) -> tuple | None:
        try:
            st = (self._root / layout.CONFIG_PATH).stat()
        except (OSError, TypeError):
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _current(self) -> Vault:
        """The open vault, reopened when its settings changed (as the MCP server does)."""
        stamp = self._settings_stamp()
        if stamp != self._stamp:
            fresh = Vault(self._root)
            try:
                self._vault.close()
            except Exception:  # noqa: BLE001
                pass
            self._vault, self._stamp = fresh, stamp
        return self._vault

    def _spill(self) -> None:
        """Put what the writer has not taken from the queue into the outbox as it is
        (secrets replaced), for the next provider."""
        while True:
            try:
                kind, data = self._jobs.get_nowait()
            except queue.Empty:
                return
            try:
                if kind not in ("stop", "adopt", "final") and self._outbox is not None:
                    for k, d in self._prepare(self._vault, kind, data):
                        self._outbox.put(k, d)
            except Exception as exc:  # noqa: BLE001
                log.error("vaultmem provider lost a %s: %s", kind, edge.one_line(exc))
            finally:
                self._jobs.task_done()

    def _run(self) -> None:
        """The writer: each piece of work goes to the outbox first, then into the vault."""
        try:
            writer = Vault(self._root)
            writer.writer.lock_wait = LOCK_TRY  # its own retries (_do) wait; the queue spills between them
        except Exception as exc:  # noqa: BLE001
            log.error("vaultmem writer cannot open the vault: %s", edge.one_line(exc))
            writer = None
        while True:
            kind, data = self._ahead.pop(0) if self._ahead else self._jobs.get()
            try:
                if kind == "stop":
                    self._release()
                    return
                if writer is None:
                    continue
                if kind == "adopt":
                    self._adopt(writer)
                elif kind == "final":
                    # (shutting down with the vault busy: the kept facts wait in the outbox and
                    # are filed with their session's end by the next provider, in one proposal)
                    if not self._stopping:
                        self._retain_left(writer, self._outbox.folder)
                else:
                    paths = [self._outbox.put(k, d) for k, d in self._prepare(writer, kind, data)]
                    self._carry_out(writer, paths)
                while self._spilled:  # what came in while the vault was busy, in order
                    self._carry_out(writer, [self._spilled.pop(0)])
            except Exception as exc:  # noqa: BLE001
                log.error("vaultmem writer: %s", edge.one_line(exc), exc_info=not isinstance(exc, VaultmemError))
            finally:
                self._jobs.task_done()
                with self._idle:
                    self._idle.notify_all()

    def _prepare(self, v: Vault, kind: str, data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The outbox files for a piece of work, their texts scrubbed of secrets."""
        scrub = self._scrubber(v)
        if kind == "turn":
            facts = facts_in(data["user"], "user") + facts_in(data["assistant"], "agent")
            out = [("facts", {"session": data["session"], "said": data["said"], "facts": scrubbed(scrub, facts)})]
            summary = first_line(data["assistant"]) or first_line(data["user"])
            if self._settings["log_turns"] and summary and (self._root / layout.public_key_path(self._agent)).exists():
                try:
                    out.append(("log", {"summary": scrub(f"turn {data['n']}: {summary}")}))
                except SecretRefused as exc:
                    log.warning("vaultmem provider left a turn out of the live log: %s", edge.one_line(exc))
            return [o for o in out if o[0] != "facts" or o[1]["facts"]]
        if kind in ("facts", "session-end"):
            return [(kind, {**data, "facts": scrubbed(scrub, data.get("facts") or [])})]
        if kind == "journal":  # the session's messages as turns, secrets replaced whatever safety.secrets says
            t = journal.from_messages(data["messages"], data["session"], source="hermes")
            redact = v.writer.scrubber()
            redact.mode, redact.max_bytes = "redact", 1 << 62
            turns = [{"n": x.n, "speaker": redact.text("speaker", x.speaker[:200]),
                      "text": redact.text("text", journal.clipped(x.text, t.source, x.where)),
                      "time": x.time, "where": x.where} for x in t.turns]
            return [(kind, {"session": t.session, "source": t.source, "shape": t.shape, "day": data["day"],
                            "turns": turns})] if turns else []
        if kind == "checkpoint":
            return [(kind, {**data, "text": scrub(data["text"]), "task": scrub(data["task"]),
                            "step": scrub(data["step"])})]
        if kind == "delegation":
            role, task = split_task(data["task"], self._settings["delegation_role"] or "subagent")
            fields = record_fields(data["result"])
            result = " ".join(data["result"].split())
            if len(result) > MAX_RESULT_CHARS:
                result = (result[:MAX_RESULT_CHARS] + f" … (shortened from {len(result):,} characters; the whole "
                          f"result is in Hermes session {data['child'] or 'of the sub-agent'})")
            return [(kind, {"role": role, "task": scrub(" ".join(task.split())[:2000]), "child": data["child"],
                            "fields": {k: scrub(text[:4000]) for k, text in fields.items()}, "result": scrub(result),
                            "session": data["session"]})]
        raise ValueError(f"unknown work {kind!r}")

    @staticmethod
    def _scrubber(v: Vault) -> Callable[[str], str]:
        """Text with its secrets replaced as the vault replaces them (its key, its
        placeholders), for what the outbox keeps — or refused (``SecretRefused``) when the
        vault is set to ``safety.secrets: reject``, as the CLI refuses it; never refused
        for its size here (the vault's call checks that)."""

        def scrub(text: str) -> str:
            if not text:
                return text
            return v.writer.scrubber().text("text", text, max_bytes=1 << 62)

        return scrub

    def _carry_out(self, v: Vault, paths: list[Path]) -> None:
        for path in paths:
            self._do(v, path)

    def _do(self, v: Vault, path: Path) -> None:
        """Carry out one outbox file, then remove it. The vault busy (another process
        holds its lock): try again, never give up. Work the vault refuses: the file moves
        to ``failed/`` beside it, with the reason, and the refusal is logged."""
        job = json.loads(path.read_text(encoding="utf-8"))
        kind = job["kind"]
        if kind == "facts":
            return  # kept for the session's retention proposal
        actor = v.actor(self._agent)
        attempt = 0
        while True:
            try:
                if kind == "log":
                    v.shared.append(actor, self._settings["channel"] or "general", "status", job["summary"])
                elif kind == "checkpoint":
                    v.shared.save_checkpoint(actor, job["text"], task=job["task"] or None, step=job["step"] or None)
                elif kind == "delegation":
                    self._harvest(v, actor, job, path)
                elif kind == "journal":
                    t = journal.Transcript(job["session"], job["source"], job["shape"],
                                           [journal.Turn(**x) for x in job["turns"]])
                    v.journal.add(t, actor, agent=self._agent, day=job["day"])
                elif kind == "session-end":
                    self._retain(v, actor, job, path.parent, upto=path)
                break
            except Busy:
                attempt += 1
                if not self._wait_busy(v, attempt):
                    return  # shutting down: the file stays for the next provider
            except Exception as exc:  # noqa: BLE001 - refused (or a bug): kept aside, never retried forever
                self._failed(path, exc)
                return
        path.unlink(missing_ok=True)

    def _wait_busy(self, v: Vault, attempt: int) -> bool:
        """The vault was busy: what came in meanwhile goes to the outbox (a kill loses
        nothing), then a pause before the next try, longer as tries fail, never over
        LOCK_TRY. False when the provider is shutting down."""
        self._spill_waiting(v)
        if self._stopping:
            return False
        threading.Event().wait(min(0.05 * attempt, LOCK_TRY))
        self._spill_waiting(v)
        return not self._stopping

    def _spill_waiting(self, v: Vault) -> None:
        """While the vault is busy: write the work waiting in the queue to the outbox (in
        order, secrets replaced), to be carried out after the job at hand. A control job
        (stop, adopt, final) stops the spill and is done next, in its turn."""
        while not self._ahead:
            try:
                kind, data = self._jobs.get_nowait()
            except queue.Empty:
                return
            if kind in ("stop", "adopt", "final"):
                self._ahead.append((kind, data))  # still unfinished: the writer's loop marks it done
                return
            try:
                self._spilled += [self._outbox.put(k, d) for k, d in self._prepare(v, kind, data)]
            except Exception as exc:  # noqa: BLE001
                log.error("vaultmem writer: %s", edge.one_line(exc), exc_info=not isinstance(exc, VaultmemError))
            finally:
                self._jobs.task_done()

    def _failed(self, path: Path, exc: BaseException) -> None:
        log.error("vaultmem provider could not write %s: %s", path.name, edge.one_line(exc))
        folder = path.parent / "failed"
        folder.mkdir(exist_ok=True)
        data = json.loads(path.read_text(encoding="utf-8"))
        data["error"] = edge.error_dict(exc)
        files.atomic_write(folder / path.name, json.dumps(data, ensure_ascii=False), mode=0o600)
        path.unlink(missing_ok=True)

    def _retain(self, v: Vault, actor, job: dict, folder: Path, upto: Path | None = None,
                session: str | None = None) -> None:
        """File the session's facts (those kept from its turns and compressions, and the
        session end's own) as one retention proposal; then drop the kept files."""
        session = session if session is not None else job.get("session") or ""
        kept = [p for p in sorted(folder.glob("*-facts.json")) if upto is None or p.name < upto.name]
        facts, seen, used = [], set(), []
        for p in kept:
            data = json.loads(p.read_text(encoding="utf-8"))
            if (data.get("session") or "") != session:
                continue
            used.append(p)
            facts += [(f, data.get("said"), data.get("source")) for f in data.get("facts") or []]
        facts += [(f, job.get("said"), None) for f in job.get("facts") or []]
        items = []
        types = v.config.note_types
        for fact, said, source in facts:
            text = " ".join(str(fact.get("text") or "").split())
            key = text.lower()
            if not text or key in seen:
                continue
            seen.add(key)
            type_ = fact.get("type") if fact.get("type") in types else ("fact" if "fact" in types else types[0])
            who = fact.get("author_kind") if fact.get("author_kind") in ("user", "agent") else "unknown"
            items.append({"type": type_, "text": text, "author_kind": who,
                          "author": self._user if who == "user" else actor.name,
                          "source": source or f"hermes session {session or '-'}", "said": said})
        if items:
            v.inbox.retain(actor, json.dumps(items, ensure_ascii=False), f"hermes session {session or '-'}",
                           session=session or None)
        for p in used:
            p.unlink(missing_ok=True)

    def _harvest(self, v: Vault, actor, job: dict, path: Path) -> None:
        """The delegation under its role and its record: harvested when the result states
        all four elements (through the gate: the orchestrator writes the page, another
        agent's record waits in the inbox); otherwise the delegation stays pending and
        the result waits in the inbox for a human, with what is missing said. The
        delegation made is noted in the job's outbox file: a try after a busy vault (or
        the next provider, after a kill) goes on with it and never delegates twice."""
        role, task, fields = job["role"], job["task"] or "(the task was not given)", job["fields"]
        if job.get("delegated"):
            self._record(v, actor, job, job["delegated"]["id"], job["delegated"]["role"], task, fields)
            return
        try:
            change, _brief = v.lifecycle.delegate(role, task, actor, tokens=200)
        except (BadInput, NotFound, PermissionRefused) as exc:  # no page it may create, a name refused
            text = f"Sub-agent result (role {role}: {exc.message}; task: {task}): {job['result'] or '(empty)'}"
            types = v.config.note_types
            item = {"type": "episode" if "episode" in types else ("fact" if "fact" in types else types[0]),
                    "text": text, "author_kind": "agent", "author": actor.name,
                    "source": f"hermes sub-agent session {job.get('child') or '-'}"}
            v.inbox.retain(actor, json.dumps([item], ensure_ascii=False), "hermes delegation",
                           session=job.get("session") or None)
            return
        did, role = change.details["id"], change.details["role"]
        job["delegated"] = {"id": did, "role": role}
        Outbox.rewrite(path, job)
        self._record(v, actor, job, did, role, task, fields)

    def _record(self, v: Vault, actor, job: dict, did: str, role: str, task: str, fields: dict) -> None:
        """A made delegation's record: harvested, or its result filed for a human."""
        record = {"task": task, **fields}
        missing = [k for k in FIELDS if not str(record.get(k) or "").strip()]
        if not missing and job["task"]:
            v.lifecycle.harvest(role, did, record, actor, automated=True)
            return
        named = ", ".join(f"{k} ({SUBAGENT_FIELDS[k][1].lower()})" for k in missing) or "task"
        text = (f"sub-agent result for delegation {did} (not harvested: it states no {named}; "
                f"task: {task}): {job['result'] or '(empty)'}")
        scrub = v.writer.scrubber()
        text = scrub.text("entry text", text)
        v.inbox.file(actor, [{"op": "page-add", "role": role, "section": "work", "project": None, "text": text}],
                     session=job.get("session") or None, scrub=scrub)

    def _retain_left(self, v: Vault, folder: Path) -> bool:
        """File the facts kept in ``folder`` that no session end has filed yet, one
        retention proposal per session. False when the vault stayed busy (they stay)."""
        sessions = {json.loads(p.read_text(encoding="utf-8")).get("session") or ""
                    for p in folder.glob("*-facts.json")}
        deadline = time.monotonic() + v.config.lock_timeout  # the vault's own wait, in tries of LOCK_TRY
        for session in sorted(sessions):
            while True:
                try:
                    self._retain(v, v.actor(self._agent), {"session": session, "facts": []}, folder, session=session)
                except Busy:
                    if not self._wait_busy(v, 1) or time.monotonic() >= deadline:
                        return False
                    continue
                except Exception as exc:  # noqa: BLE001 - refused: kept aside with the reason
                    for p in folder.glob("*-facts.json"):
                        self._failed(p, exc)
                break
        return True

    def _adopt(self, v: Vault) -> None:
        """Carry out what providers that are gone left in their outbox: their work in
        order, their sessions' kept facts as retention proposals."""
        for folder in Outbox.orphans(v.root, self._outbox.folder if self._outbox else None):
            for tmp in folder.glob(".*"):
                if tmp.name != ".gitignore":
                    tmp.unlink(missing_ok=True)
            for path in sorted(p for p in folder.glob("*.json") if p.name[:8].isdigit()):
                if path.exists():
                    self._do(v, path)
            if not self._retain_left(v, folder):
                return  # the vault is busy: the next provider tries again
            if not any(folder.glob("*.json")):
                for p in folder.iterdir():
                    if p.is_file():
                        p.unlink(missing_ok=True)
                try:
                    folder.rmdir()
                except OSError:
                    pass
