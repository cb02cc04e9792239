"""The :class:`Vault` facade: what opens a vault and routes to the domain modules.

It opens (:meth:`Vault.open`, :meth:`Vault.init`), says who acts, keeps the writer and the
index, and hands out the domain modules as grouped accessors — ``vault.pages``
(:class:`~vaultmem.pages.Pages`), ``vault.notes`` (:class:`~vaultmem.notes.Notes`),
``vault.inbox`` (the review gate), ``vault.journal``, ``vault.skills``, ``vault.shared``
(keys, logs, state, checkpoints, sync) and ``vault.lifecycle`` (dispatch, delegations,
harvest, audit) — and answers the two questions every agent asks: :meth:`Vault.search`
and :meth:`Vault.brief` (index → retrieve → brief). What a human does to keep a vault is
:mod:`vaultmem.upkeep` (doctor, verify, migrate, backups, gc, compact, restore); what a
human looks at, :mod:`vaultmem.views`. Adapters (CLI, watcher, MCP, hooks) call these and
render what they return; they never touch files or git themselves. Every change goes
through :class:`vaultmem.transaction.Writer`: one lock, one journal, one commit of exactly
the changed paths, nothing a kill can lose.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from . import files, layout, leftovers, recall, usage
from .config import Config, load_config, load_raw, parse_config, set_value
from .errors import BadInput, Busy, PermissionRefused, VaultNotFound, from_os_error
from .names import check_name
from .query import parse as parse_query  # noqa: F401  (re-exported for adapters: how a search's text reads)
from .walk import ENV_VAULT, find_vault, is_vault, watcher_alive

if TYPE_CHECKING:
    from .models import Actor, Change
    from .transaction import Writer

# re-exported for adapters: what a brief and an agent's search draw on
BRIEF_KINDS = layout.BRIEF_KINDS
AGENT_KINDS = layout.AGENT_KINDS
ENV_AGENT = "VAULTMEM_AGENT"


def locate(path: str | Path | None = None, cwd: Path | None = None) -> Path:
    """The vault to use: ``path`` if given, else ``$VAULTMEM_VAULT``, else the nearest
    folder at or above ``cwd`` that holds ``.vaultmem/config.yaml``."""
    from_env = path in (None, "") and bool(os.environ.get(ENV_VAULT))
    chosen = path if path not in (None, "") else os.environ.get(ENV_VAULT) or None
    if chosen is not None:
        root = Path(chosen).expanduser()
        if not is_vault(root):
            raise _not_a_vault(root, from_env)
        return root.resolve()
    try:
        found = find_vault(str(cwd) if cwd is not None else None)
        start = (cwd or Path.cwd()).resolve()
    except FileNotFoundError:  # the current folder was deleted under the shell
        raise VaultNotFound("the current folder no longer exists",
                            hint=f"cd into a vault, pass --vault PATH, or set {ENV_VAULT}") from None
    if found is not None:
        return Path(found)
    raise VaultNotFound(f"no vault at or above {start}",
                        hint=f"pass --vault PATH, set {ENV_VAULT}, or create one with 'vaultmem init PATH'")


def _not_a_vault(root: Path, from_env: bool) -> VaultNotFound:
    """Why the folder named (by the caller, or by ``$VAULTMEM_VAULT``) is no vault: it does
    not exist; it lies inside a vault (name that one: a vault nested in a vault is never
    what was meant); or it is a folder of its own, where ``init`` would make one."""
    named = f"{root} (from {ENV_VAULT})" if from_env else str(root)
    if not root.exists():
        return VaultNotFound(f"{named} does not exist", path=str(root),
                             hint="check the path; to create a vault there, give it to 'vaultmem init'")
    if not root.is_dir():
        return VaultNotFound(f"{named} is a file, not a vault folder", path=str(root))
    try:
        enclosing = find_vault(str(root))
    except OSError:
        enclosing = None
    if enclosing is not None:
        return VaultNotFound(f"{named} is inside the vault {enclosing}, not a vault itself", path=str(root),
                             hint=f"name the vault's own folder: {enclosing}")
    return VaultNotFound(f"{named} is not a vault (it has no {layout.CONFIG_PATH})", path=str(root),
                         hint=f"create one with 'vaultmem init {root}'")


def _refuse_in_a_starting_worker() -> None:
    """A vault opened while a worker process of an index rebuild is starting: Python's
    multiprocessing (spawn) runs the main script again in each worker, and a script that
    opens a vault without ``if __name__ == "__main__":`` would wait there for the index
    lock its own rebuild holds (300 s). Refused at once: the worker says why in one line and
    ends (no traceback: the process was only starting), and the rebuild goes on in the
    script's own process. The flag read is multiprocessing's own, set while a spawned
    process imports the main script (its ``spawn._check_not_importing_main`` reads it to
    refuse a new process there); it has no public name. Multiprocessing is loaded in such a
    worker: elsewhere this costs nothing. Only a worker of vaultmem's own build is refused
    (its parent names it after its own process id, and spawn sets the name before it
    imports the main script): a script's own pool of workers opens vaults as it likes."""
    import sys

    mp = sys.modules.get("multiprocessing")
    if mp is not None and getattr(mp.current_process(), "_inheriting", False) and \
            mp.current_process().name == f"vaultmem-index-worker-of-{os.getppid()}":  # index.build.WORKER_NAME
        sys.stderr.write("vaultmem: a vault was opened while a worker process was starting: the script runs again "
                         "in each worker of an index rebuild\n  hint: put the script's code under  "
                         'if __name__ == "__main__":  (Python\'s multiprocessing asks for it)\n')
        raise SystemExit(1)


class Vault:
    """One vault on disk. Open with :meth:`open` (finds it) or :meth:`init` (creates it)."""

    def __init__(self, root: Path, config: Config | None = None, ahead=None) -> None:
        _refuse_in_a_starting_worker()
        self.root = Path(root).resolve()
        try:  # per-machine state: a file or a link in its place goes before anything is read from it
            files.own_folder(self.root, layout.LOCAL_DIR)
        except OSError:
            pass  # a read-only vault: reads through a link are refused anyway
        # the walk the launcher started (vaultmem.walk.WalkAhead), if it walked this vault
        self._ahead = ahead if ahead is not None and ahead.root == str(self.root) else None
        self.config = config or load_config(self.root)
        self._index = None
        self._journal_index = None
        self._shared = None
        self._written: set[str] = set()  # files this process changed: indexed before the next answer
        self._changes = None  # a long-lived process's record of what changed (see follow_changes)
        self._stays_open = False  # a long-lived process (see stays_open)
        self._usage_held = False  # its usage records held and written together (see stays_open)
        self._writer: Writer | None = None
        self._writer_made = threading.Lock()

    @property
    def writer(self) -> Writer:
        """The one way this vault's files are written: made at the first write or tidy-up
        (a command that only reads never imports it), once for all threads."""
        if self._writer is None:
            with self._writer_made:
                if self._writer is None:
                    from .transaction import Writer

                    self._writer = Writer(self.root, self.config, on_write=self._about_to_write)
        return self._writer

    def _about_to_write(self, paths: list[str]) -> None:
        if self._ahead is not None:  # the launcher's walk, read before anything is written
            index, self._ahead = self.index, None
            index.before_writing()
        self._written.update(paths)

    # -- opening and creating ----------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path | None = None, ahead=None) -> Vault:
        """Open the vault (see :func:`locate`); settle what a killed writer left."""
        vault = cls(locate(path), ahead=ahead)
        vault.tidy()
        return vault

    @classmethod
    def init(cls, path: str | Path, lang: str | None = None, orchestrator: str | None = None,
             actor: Actor | None = None) -> tuple[Vault, Change]:
        """Create a vault from ``vault-template/`` (:func:`vaultmem.template.create`: files that
        already exist are kept; on an existing vault nothing changes and the Change says so)."""
        from . import template

        root, config, change = template.create(path, lang, orchestrator, actor)
        return cls(root, config), change

    # -- who acts ----------------------------------------------------------------------
    def actor(self, name: str | None = None) -> Actor:
        """The agent named by ``--as`` / ``$VAULTMEM_AGENT``, or the human when neither is set."""
        from . import gitstore
        from .models import Actor

        agent = self.agent_name(name)
        return gitstore.human_actor(self.root) if agent is None else Actor(agent, "agent")

    def agent_name(self, name: str | None = None) -> str | None:
        """The agent named by ``--as`` / ``$VAULTMEM_AGENT`` (checked), or None for the
        human — without asking git who the human is: a read needs no name."""
        name = name if name not in (None, "") else os.environ.get(ENV_AGENT) or None
        return None if name is None else check_name(name, "agent name")

    def tidy(self) -> int:
        """Settle a killed writer's journal and remove its temp files, if no writer is
        active; returns how many temp files went (see :meth:`Writer.tidy`)."""
        if not leftovers.anything_left(self.root):  # nearly always: no writer made, nor imported
            return 0
        return self.writer.tidy()

    # -- role pages ----------------------------------------------------------------------
    # -- memory notes ----------------------------------------------------------------------
    # -- preservation (vaultmem.preservation) --------------------------------------------------
    # -- settings ------------------------------------------------------------------------
    def config_values(self) -> dict:
        """The settings file as plain data, as written (``self.config`` is what they mean,
        defaults filled in)."""
        from .parse.document import plain

        return plain(load_raw(self.root))

    def set_config(self, dotted: str, value, actor: Actor) -> Change:
        """Change one setting. Only a human may: the config decides who the orchestrator is."""
        if not actor.is_human:
            raise PermissionRefused(f"agent {actor.name!r} may not change the vault's settings",
                                    hint="settings (the orchestrator among them) are changed by a human: "
                                         "run it as yourself, not as an agent")
        with self.writer.locked():
            new_text = set_value(files.read_vault_text(self.root, layout.CONFIG_PATH), dotted, value)
            message = f"config: set {dotted} = {value}"
            # settings are not memory, and keys such as safety.secrets read like secrets
            sha = self.writer.apply(actor, message, {layout.CONFIG_PATH: new_text}, unscanned=(layout.CONFIG_PATH,))
            self.config = self.writer.config = parse_config(new_text)
        from .models import Change

        return Change("config.set", [layout.CONFIG_PATH], sha, message, {"key": dotted, "value": value})

    # -- the domain modules that keep state of their own -----------------------------------
    @property
    def shared(self):
        """Keys, the signed live-context and decision logs, project state, checkpoints and
        git sync (see :mod:`vaultmem.shared`)."""
        if self._shared is None:
            from .shared import Shared

            self._shared = Shared(self)
        return self._shared

    @property
    def pages(self):
        """The role pages: roles, read, listing, ensure, add (see :class:`vaultmem.pages.Pages`)."""
        from .pages import Pages

        return Pages(self)

    @property
    def notes(self):
        """The memory notes: remember, read, forget (see :class:`vaultmem.notes.Notes`)."""
        from .notes import Notes

        return Notes(self)

    @property
    def journal(self):
        """The journal: add, consolidate, prune, days, may_read (see :class:`vaultmem.journal.Journal`)."""
        from .journal import Journal

        return Journal(self)

    @property
    def skills(self):
        """The skills: all, get, add (see :class:`vaultmem.skills.Skills`)."""
        from .skills import Skills

        return Skills(self)

    @property
    def inbox(self):
        """The review gate: retained facts and proposals waiting for a human (see
        :mod:`vaultmem.inbox`)."""
        from .inbox import Inbox

        return Inbox(self)

    @property
    def lifecycle(self):
        """Delegations and harvest, the audit, and ask / todo / history (see
        :mod:`vaultmem.lifecycle`)."""
        from .lifecycle import Lifecycle

        return Lifecycle(self)

    # -- recall: index, search, brief ------------------------------------------------------
    @property
    def index(self):
        """The vault's search index (derived data in ``.vaultmem/index/``)."""
        if self._index is None:
            from .index.store import IndexStore

            self._index = IndexStore(self.root, lock_timeout=self.config.index_lock_timeout,
                                     engine=self.config.index_engine, ahead=self._ahead,
                                     semantic=self.config.search_semantic, model=self.config.search_model,
                                     ranking=self.config.search_ranking, reranker=self.config.search_reranker,
                                     rerank_depth=self.config.rerank_depth)
            self._index.background_merges = self._stays_open
        return self._index

    def journal_store(self):
        if self._journal_index is None:
            from .index.store import IndexStore, files_indexed
            from .walk import PART_JOURNAL

            self._journal_index = IndexStore(self.root, lock_timeout=self.config.index_lock_timeout,
                                             engine=self.config.index_engine, part=PART_JOURNAL,
                                             sized_with=lambda: files_indexed(self.root))
            self._journal_index.background_merges = self._stays_open
        return self._journal_index

    @property
    def journal_index(self):
        """The journal's own index (``.vaultmem/index/journal/``: lexical, derived), brought
        up to date — unless another process is indexing it (then as it is). Only a search
        of the journal, ``ask`` or a brief's fallback opens it: memory's searches never
        pay for it."""
        store = self.journal_store()
        try:
            store.refresh(wait=0)
        except Busy:
            pass  # another process is indexing the journal: answer from it as it is
        except OSError as exc:
            raise from_os_error(exc, path=layout.JOURNAL_INDEX_DIR, writing=True) from None
        return store

    def watcher_alive(self, idle: bool = False) -> bool:
        """True while a ``vaultmem watch`` process keeps this vault's index fresh (with
        ``idle``: and has no changes waiting to be indexed)."""
        return watcher_alive(self.root, idle)

    def refresh_index(self, paths=None, wait: float | None = None, progress=None):
        """Index what changed since the last refresh (or just ``paths``): memory's index,
        and the journal's (its own: ``.vaultmem/index/journal/``), in one report."""
        from .walk import PART_JOURNAL, in_part

        report = self.index.refresh(paths=paths, wait=wait, progress=progress)
        journal = None if paths is None else [p for p in paths if in_part(p, PART_JOURNAL)]
        if journal is None or journal:
            report.merged(self.journal_store().refresh(paths=journal, wait=wait))
        return report

    def rebuild_index(self, progress=None, engine: str | None = None):
        """Build the index afresh beside the live one and swap it in (on ``engine``:
        whoosh, tantivy, or auto to choose by the vault's size); the journal's too."""
        report = self.index.rebuild(progress=progress, engine=engine)
        return report.merged(self.journal_store().rebuild(engine=engine))

    def index_status(self) -> dict:
        """The index as a search would answer from it (brought up to date first, as
        for a search): ``{"engine", "files", "problems", "semantic"}`` — the last
        whether the semantic channel can open, and why not (see
        :meth:`IndexStore.semantic_status`)."""
        return self._answer(lambda: {**self.index.status(), "semantic": self.index.semantic_status()})

    def sync_vectors(self, wait: float | None = None) -> dict:
        """Embed what changed since the semantic channel's vectors were made (see
        :meth:`IndexStore.vectors_report`)."""
        return self.index.vectors_report(wait=wait)

    def stays_open(self) -> None:
        """This process stays (the MCP server): a write that makes the search index merge
        its segments answers when its commit is done, and the merge finishes in a thread
        that holds the index lock until then — the next write of this process, and other
        processes' writes, wait for it as they would have (:class:`IndexStore`). The
        journal's index likewise. The usage records of its searches and briefs are held and
        appended together, at most a second later (:func:`usage.hold`). :meth:`close`
        waits for what is left and writes what is held."""
        self._stays_open = True
        if not self._usage_held:
            self._usage_held = True
            usage.hold(self.root)
        for store in (self._index, self._journal_index):
            if store is not None:
                store.background_merges = True

    def close(self) -> None:
        """Close the search indexes (memory's and the journal's), once the merges this
        process left running have ended; the usage records held are written."""
        for store in (self._index, self._journal_index):
            if store is not None:
                store.close()
        if self._usage_held:
            self._usage_held = False
            usage.release(self.root)

    def follow_changes(self, changes) -> None:
        """Let a long-lived process (the MCP server) say what changed in the vault, so
        that a search or brief re-reads only those files instead of walking the whole
        vault first. ``changes.changed()``: the vault-relative paths changed since its
        last call (empty: nothing), or None when it cannot vouch for that (then the
        vault is walked, as without it); ``changes.unsure()``: what it handed out could
        not be indexed, so the next call must walk."""
        self._changes = changes

    def _answer(self, make):
        """``make()``'s answer from an index brought up to date as
        :meth:`IndexStore.ready_to_answer` says (files this process changed first; with
        :meth:`follow_changes`, only what changed — the question of what changed asked
        before ``make()`` and its answer read after it, ``make()`` called again when that
        changed the index)."""
        settle = self.index.ready_to_answer(self._written, self._changes, lambda: self.watcher_alive(idle=True))
        try:
            made = make()
        except Exception:
            if settle():
                raise
            return make()
        except BaseException:  # an interrupt: the question is still answered (its marker removed)
            with contextlib.suppress(Exception):
                settle()
            raise
        return made if settle() else make()

    def search(self, query: str, agent: str | None = None, kinds: tuple[str, ...] = (),
               types: tuple[str, ...] = (), limit: int = 10, *, tags: tuple[str, ...] = (),
               statuses: tuple[str, ...] = (), author_kinds: tuple[str, ...] = (), since=None, until=None,
               where=(), syntax: bool = True, journal: bool = False, reader: str | None = None):
        """Ranked hits for ``query`` — plain words, ``"exact phrase"``, ``-word``,
        ``a OR b``, ``prefix*`` (see :mod:`vaultmem.query`). With ``agent``, only that
        agent's own memory plus global and shared memory are searched — never another
        role's page, and never the review inbox unless ``kinds`` names it. The filters
        narrow further, all together: ``tags`` (every one), ``statuses`` (naming
        ``superseded`` or ``archived`` includes them), ``author_kinds``, ``since``/``until``
        (ISO days, inclusive, on the document's date), ``where`` (``key=value`` texts or
        pairs a note's scalar frontmatter holds, compared as case-folded text). ``syntax``
        False: the query is plain words, quotes and dashes included (a question in natural
        language, as a brief's task is). ``journal``: search the journal instead (its
        turns are never part of a normal search): humans and the orchestrator only —
        ``reader`` is the agent asking, when it is not ``agent``. ``limit`` and the
        query's size are checked first (:mod:`vaultmem.limits`): out of range, BadInput
        names the field."""
        from . import limits

        limits.check_text("query", query)
        limits.check("limit", limit)
        if journal:
            kinds = (layout.JOURNAL_KIND,)
        if layout.JOURNAL_KIND in kinds:
            self.journal.may_read(reader or agent)
            if set(kinds) != {layout.JOURNAL_KIND}:
                raise BadInput("the journal is searched on its own: it has an index of its own", field="kinds",
                               hint="search the journal with --journal (or --kind journal alone), memory without it")
        agent = recall.check_query(query, agent, limit)
        narrowing = recall.check_filters(tags, statuses, author_kinds, since, until, where)
        if syntax:
            parse_query(query)  # a syntax error is bad input before the index is touched
        if layout.JOURNAL_KIND in kinds:
            hits = recall.search(self.journal_index, query, agent, kinds, types, limit, self.config.min_relevance,
                                 narrowing, syntax=syntax)
        else:
            hits = self._answer(lambda: recall.search(self.index, query, agent, kinds, types, limit,
                                                       self.config.min_relevance, narrowing, syntax=syntax))
        usage.record_use(self.root, [h.doc.id for h in hits if h.relevant], "search", question=query, agent=agent)
        return hits

    def brief(self, agent: str, task: str, window: int | None = None, ratio: float | None = None,
              tokens: int | None = None, project: str | None = None, asked: bool = True):
        """The briefing for ``agent`` before a session on ``task``, within
        ``min(ratio × window, tokens)`` tokens (see :mod:`vaultmem.brief`): its identity,
        its own page whole (the context of ``project``, or of the projects the task names,
        or of all), the relevant memory outside it, skills, the live log and the index.
        The task's size, ``window`` and ``tokens`` are checked first (:mod:`vaultmem.limits`).
        ``asked`` False: nothing is asked yet (a session's start) and ``task`` is a
        placeholder whose words alone are matched: an orchestrator's brief does not fall
        back to the journal when memory holds nothing on it, and no model reads it (the
        semantic channel, a re-ranker): it has no meaning to look for."""
        from . import gitstore, limits, pages
        from .brief import budget_for

        limits.check_text("task", task)
        limits.check_sizes(window=window, tokens=tokens)
        agent = recall.check_brief(agent, task)
        budget = budget_for(window if window is not None else self.config.brief_window,
                            ratio if ratio is not None else self.config.brief_ratio, tokens)
        unseen, failed = self.shared.unseen_for_brief(agent)

        def make():
            page = pages.role_files(self.root).get(agent)
            return recall.brief(self.root, self.config, self.index, unseen, agent, task,
                                budget, pages.today(), page=layout.page_path(page) if page is not None else None,
                                journal=(lambda: self.journal_index)
                                if asked and agent == self.config.orchestrator else None,
                                uncommitted=lambda paths: set(gitstore.uncommitted(self.root, paths)),
                                project=pages.clean_project(project) if project else None,
                                usage=lambda: usage.read_usage(self.root), read=asked)
        made = self._answer(make)
        for e in failed:  # never shown as if verified, and never dropped without a word
            made.warnings.append(f"{e.log_path}: entry {e.id} of {e.agent} does not check out ({e.problem}): "
                                 f"left out of the brief")
        # a recall confirms a note (forgetting.py): the nearest, which match nothing clearly, are not recalls
        cited = [i for i in made.items if not (made.no_memory and i["layer"] == "memory")]
        usage.record_use(self.root, [i.get("id") or i["path"] for i in cited], "brief", question=task, agent=agent)
        return made

    def evaluate(self, queries_path: str | Path, at: str | None = "HEAD", engine: str | None = None):
        """Run a retrieval evaluation on a frozen copy of this vault, indexed with
        ``engine`` (default: the vault's): (report, what was frozen)."""
        return recall.evaluate(self.root, self.config, queries_path, at, engine)

def without_secrets(text: str) -> str:
    """``text`` with every secret the detector finds replaced by a placeholder (for what
    an adapter says back: an error message that quotes its input); see
    :func:`vaultmem.guard.without_secrets`."""
    from . import guard

    return guard.without_secrets(text)
