"""The :class:`Vault` facade: every operation a user or agent performs on a vault.

Adapters (CLI, hooks, MCP, watcher) call these methods and render what they return;
they never touch files or git themselves. A mutation here is: take the vault's write
lock, read and parse what it changes (refusing bad input before writing anything),
write each file atomically, and commit exactly those files as the acting agent. If
writing or committing fails, the files are put back as they were.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import string
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from . import files, gitstore
from .config import Config, load_config, load_raw, parse_config, set_value
from .errors import BadInput, Busy, NotFound, PermissionRefused, SecretRefused, VaultmemError, VaultNotFound
from .models import AUTHOR_KINDS, SCOPES, Actor, Change, NoteInfo, PageInfo
from .names import check_name, check_new_name, collision_key, slugify
from .parse import (
    RolePage,
    add_context_entry,
    add_project,
    add_work_entry,
    index_line,
    new_page_text,
    parse_note,
    parse_page,
    render_note,
    set_note_fields,
    update_index,
)
from .parse.document import yaml_timestamp
from .walk import CONFIG_PATH, ENV_VAULT, find_vault, is_vault, watcher_alive

if TYPE_CHECKING:
    from .guard import Finding

AGENTS_DIR = "agents"
MEMORIES_DIR = "memories"
ARCHIVE_DIR = "archive"
IDENTITY_DIR = "identity"
MEMORY_INDEX = "MEMORY.md"
WRITE_LOCK = ".vaultmem/write.lock"
# Folders vaultmem writes into (where a killed write may leave a temp file).
WRITABLE = [AGENTS_DIR, MEMORIES_DIR, IDENTITY_DIR, "inbox", ARCHIVE_DIR, f"{ARCHIVE_DIR}/{MEMORIES_DIR}",
            "shared", "shared/delegations", "shared/keys", "checkpoints", "journal", ".vaultmem"]  # fmt: skip
REDACT_KEY = ".vaultmem/local/redact.key"
TIDY_STAMPS = "tidy.bin"  # in .vaultmem/local/: folders' mtimes when they held no temp file
# What a brief may draw on: never the inbox (quarantine), the archive, or identities
# (the agent's own identity has its own part of the brief).
BRIEF_KINDS = ("note", "entry", "decision", "wiki", "skill", "journal", "shared", "checkpoint", "doc")
# What an agent's search draws on unless it asks for kinds: not the inbox (items waiting
# for review, third-party ones quarantined among them) nor the archive (forgotten memory,
# rejected items).
AGENT_KINDS = (*BRIEF_KINDS, "log", "identity")
ENV_AGENT = "VAULTMEM_AGENT"


def template_root() -> Path:
    """``vault-template/``: inside the installed package, or at the source checkout's top."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_vault_template", here.parent / "vault-template"):
        if (candidate / "common").is_dir():
            return candidate
    raise NotFound("the vault template is missing from this installation",
                   hint="reinstall vaultmem (pip install -e . from the project folder)")  # pragma: no cover


def locate(path: str | Path | None = None, cwd: Path | None = None) -> Path:
    """The vault to use: ``path`` if given, else ``$VAULTMEM_VAULT``, else the nearest
    folder at or above ``cwd`` that holds ``.vaultmem/config.yaml``."""
    chosen = path if path not in (None, "") else os.environ.get(ENV_VAULT) or None
    if chosen is not None:
        root = Path(chosen).expanduser()
        if not is_vault(root):
            raise VaultNotFound(
                f"{root} is not a vault (it has no {CONFIG_PATH})",
                path=str(root),
                hint=f"create one with 'vaultmem init {root}'",
            )
        return root.resolve()
    try:
        found = find_vault(str(cwd) if cwd is not None else None)
        start = (cwd or Path.cwd()).resolve()
    except FileNotFoundError:  # the current folder was deleted under the shell
        raise VaultNotFound("the current folder no longer exists",
                            hint=f"cd into a vault, pass --vault PATH, or set {ENV_VAULT}") from None
    if found is not None:
        return Path(found)
    raise VaultNotFound(
        f"no vault at or above {start}",
        hint=f"pass --vault PATH, set {ENV_VAULT}, or create one with 'vaultmem init PATH'",
    )


def _today() -> _dt.date:
    return _dt.datetime.now().astimezone().date()


def _now():
    return yaml_timestamp(_dt.datetime.now(_dt.timezone.utc))


class Vault:
    """One vault on disk. Open with :meth:`open` (finds it) or :meth:`init` (creates it)."""

    def __init__(self, root: Path, config: Config | None = None, ahead=None) -> None:
        self.root = Path(root).resolve()
        # the launcher's walk (walk.WalkAhead) is good only for the vault it walked
        self._ahead = ahead if ahead is not None and ahead.root == str(self.root) else None
        self.config = config or load_config(self.root)
        self._index = None
        self._shared = None
        self._written: set[str] = set()  # files this process changed: indexed before the next answer
        self.redactions: list[Finding] = []  # secrets this process kept out of the vault

    # -- opening and creating ----------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path | None = None, ahead=None) -> Vault:
        """Open the vault (see :func:`locate`) and remove temp files of killed writers."""
        vault = cls(locate(path), ahead=ahead)
        vault.tidy()
        return vault

    @classmethod
    def init(cls, path: str | Path, lang: str | None = None, orchestrator: str | None = None,
             actor: Actor | None = None) -> tuple[Vault, Change]:
        """Create a vault from ``vault-template/`` (files that already exist are kept).
        On an existing vault nothing changes and the Change says so."""
        root = Path(path).expanduser()
        if is_vault(root):
            vault = cls(root)
            message = (f"{vault.root} is already a vault (lang {vault.config.lang}, orchestrator "
                       f"{vault.config.orchestrator}); nothing changed")
            ignored = [f"--{k} {v}" for k, v in (("lang", lang), ("orchestrator", orchestrator))
                       if v is not None and v != getattr(vault.config, k)]
            if ignored:
                message += f"; {' and '.join(ignored)} ignored (change settings with 'vaultmem config set')"
            return vault, Change("init", [], None, message, {"created": False, "root": str(vault.root)})
        lang = lang or "en"
        if lang not in ("zh", "en"):
            raise BadInput(f"--lang is {lang!r}; it must be zh or en")
        orchestrator = check_name(orchestrator or "orchestrator", "orchestrator name")
        if root.exists() and not root.is_dir():
            raise BadInput(f"{root} exists and is not a folder", path=str(root))
        root.mkdir(parents=True, exist_ok=True)
        root = root.resolve()
        tpl = template_root()
        common = tpl / "common"
        planned = {src.relative_to(common).as_posix(): files.read_text(src)
                   for src in sorted(common.rglob("*")) if src.is_file()}
        planned[MEMORY_INDEX] = files.read_text(tpl / lang / "MEMORY.md")
        identity = string.Template(files.read_text(tpl / lang / "identity.md"))
        planned[f"{IDENTITY_DIR}/{orchestrator}.md"] = identity.safe_substitute(agent=orchestrator)
        text = set_value(planned[CONFIG_PATH], "lang", lang)
        planned[CONFIG_PATH] = set_value(text, "orchestrator", orchestrator)
        written = []
        for rel, text in planned.items():
            target = files.inside(root, rel)
            if not target.exists():
                files.atomic_write(target, text)
                written.append(rel)
        gitstore.init_repo(root)
        actor = actor or gitstore.human_actor(root)
        config = parse_config(files.read_text(root / CONFIG_PATH))
        vault = cls(root, config)
        message = f"vaultmem: create vault (lang {lang}, orchestrator {orchestrator})"
        sha = gitstore.commit(root, written, message, actor, config.lock_timeout)
        return vault, Change("init", written, sha, message,
                             {"created": True, "root": str(root), "lang": lang, "orchestrator": orchestrator})

    # -- who acts ----------------------------------------------------------------------
    def actor(self, name: str | None = None) -> Actor:
        """The agent named by ``--as`` / ``$VAULTMEM_AGENT``, or the human when neither is set."""
        name = name if name not in (None, "") else os.environ.get(ENV_AGENT) or None
        if name is None:
            return gitstore.human_actor(self.root)
        return Actor(check_name(name, "agent name"), "agent")

    def _may_write_role(self, actor: Actor, role: str) -> None:
        """Sovereignty: only the orchestrator (and humans) write a role's page and memory."""
        if actor.is_human or actor.name == self.config.orchestrator:
            return
        raise PermissionRefused(
            f"agent {actor.name!r} may not write the memory of role {role!r}: only the orchestrator "
            f"{self.config.orchestrator!r} writes role pages and role memory",
            hint="send the change to the orchestrator; humans can edit the page in Obsidian",
        )

    # -- safety: secrets never reach a file ------------------------------------------------
    def _redaction_key(self) -> bytes:
        """The key of placeholder hashes: local to this machine's copy (never committed)."""
        path = files.inside(self.root, REDACT_KEY)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            import secrets as _secrets

            path.parent.mkdir(parents=True, exist_ok=True)
            files.atomic_write(path, _secrets.token_hex(32))
            return path.read_bytes()

    def _scrub(self, field: str, text: str) -> str:
        """``text`` with its secrets replaced by placeholders (remembered in
        :attr:`redactions`), or SecretRefused when the vault sets ``safety.secrets: reject``."""
        from . import guard  # only when text is written: its detectors cost time to load

        if not text or not guard.might_hold_secret(text):
            return text
        clean, found = guard.scrub(text, field, self._redaction_key())
        if found and self.config.secrets == "reject":
            kinds = ", ".join(sorted({f.type for f in found}))
            raise SecretRefused(f"the {field} holds a secret ({kinds}); nothing was written",
                                hint="remove it (keep secrets in a secret manager and write where it lives), "
                                     "or set safety.secrets: redact to store a placeholder instead")
        self.redactions.extend(found)
        return clean

    def _refuse_secret(self, field: str, value) -> None:
        """Names and ids (tags, keys, projects, channels, refs …) cannot hold a placeholder:
        a secret there is refused whatever ``safety.secrets`` says."""
        from . import guard

        if not value or not guard.might_hold_secret(str(value)):
            return
        _, found = guard.scrub(str(value), field, self._redaction_key())
        if found:
            raise SecretRefused(f"the {field} holds a secret ({found[0].type}); nothing was written",
                                hint=f"the {field} is a name, not a place for a secret: choose another")

    def _check_no_secrets(self, writes: dict[str, str | None], before: dict[str, str | None]) -> None:
        """The last line of defence: no line this write adds to a file may hold a secret.
        Every input is scrubbed where it enters; this catches a path that forgot to. A
        line is not added if the file had it before, or (for a move into ``archive/``) if
        a file this write deletes had it."""
        from . import guard

        deleted = set()
        for rel, text in writes.items():
            if text is None:
                deleted.update((before.get(rel) or "").splitlines())
        for rel, text in writes.items():
            old = set((before.get(rel) or "").splitlines())
            if rel.startswith(f"{ARCHIVE_DIR}/"):
                old |= deleted
            for n, line in enumerate((text or "").splitlines(), 1):
                if line in old or not guard.might_hold_secret(line):
                    continue
                _, found = guard.scrub(line, rel, self._redaction_key())
                if found:
                    raise VaultmemError(f"refusing to write a {found[0].type} that was not scrubbed",
                                        path=rel, line=n, hint="this is a vaultmem bug: please report it")

    def _check_drafts(self, drafts: list[str]) -> None:
        """A human's uncommitted edits are committed before an agent's change to the same
        file (see :meth:`_apply`); a secret in them would reach git history that way."""
        from . import guard

        for rel in drafts:
            path = self.root / rel
            if not path.is_file():
                continue
            old = set((gitstore.committed_text(self.root, rel) or "").splitlines())
            for n, line in enumerate(files.read_text(path, rel).splitlines(), 1):
                if line in old or not guard.might_hold_secret(line):
                    continue
                _, found = guard.scrub(line, rel, self._redaction_key())
                if found:
                    raise SecretRefused(
                        f"your uncommitted edit holds a {found[0].type}; vaultmem would have to commit it "
                        f"before this change, so nothing was written", path=rel, line=n,
                        hint="remove the secret from the file (or commit it yourself, knowingly), then retry")

    # -- the write path ----------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        from filelock import FileLock, Timeout

        lock_path = files.inside(self.root, WRITE_LOCK)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(lock_path), timeout=self.config.lock_timeout)
        try:
            lock.acquire()
        except Timeout:
            raise Busy(f"another vaultmem process has been writing this vault for {self.config.lock_timeout:g}s",
                       path=WRITE_LOCK, hint="retry in a moment") from None
        try:
            files.sweep_temp_files(self.root, WRITABLE)
            yield
        finally:
            lock.release()

    def tidy(self) -> int:
        """Remove temp files left by killed writers if no writer is active; returns how many.

        Cheap when there is none, as nearly always: a folder is listed only if its mtime
        moved since it was last found clean (``.vaultmem/local/tidy.bin``; a temp file's
        creation moves it), and the write lock is taken only when one was found. Writers
        sweep every folder under their lock anyway."""
        folders = [".", *WRITABLE]
        stamps = {}
        for rel in folders:
            try:
                stamps[rel] = os.stat(self.root / rel).st_mtime_ns
            except OSError:
                continue
        try:
            clean = files.unpack((self.root / files.LOCAL_DIR / TIDY_STAMPS).read_bytes())
        except OSError:
            clean = {}
        if not isinstance(clean, dict):
            clean = {}
        look = [rel for rel, mtime in stamps.items() if clean.get(rel) != mtime]
        if not look:
            return 0
        if not files.find_temp_files(self.root, look):
            settled = time.time_ns() - 2_000_000_000  # a change in the same clock tick could hide behind a fresh stamp
            files.write_local(self.root, TIDY_STAMPS, files.pack({rel: m for rel, m in stamps.items() if m < settled}))
            return 0
        from filelock import FileLock, Timeout

        lock = FileLock(str(self.root / WRITE_LOCK), timeout=0)
        try:
            with lock:
                return len(files.sweep_temp_files(self.root, WRITABLE))
        except (Timeout, OSError):
            return 0

    def _apply(self, actor: Actor, message: str, writes: dict[str, str | None],
               unscanned: tuple[str, ...] = ()) -> str | None:
        """Write (text) or delete (None) each vault-relative path, then commit them as
        one commit. Restores every file if a write or the commit fails. Every added line
        is checked for secrets, except in ``unscanned`` paths (public keys: high entropy
        by nature, and no secret)."""
        targets = {rel: files.inside(self.root, rel) for rel in writes}
        drafts = [] if actor.is_human else gitstore.uncommitted(self.root, list(writes))
        self._check_drafts(drafts)
        if drafts:
            # A human's unsaved-to-git edits of these files are theirs: commit them as the
            # human first, so the agent's commit (and git blame) holds only its own change.
            human = gitstore.human_actor(self.root)
            gitstore.commit(self.root, drafts, f"vaultmem: record {human.name}'s uncommitted edits to "
                            f"{', '.join(drafts)} before a change by {actor.name}", human, self.config.lock_timeout)
        before: dict[str, str | None] = {}
        for rel, target in targets.items():
            before[rel] = files.read_text(target) if target.exists() else None
        self._check_no_secrets({k: v for k, v in writes.items() if k not in unscanned}, before)
        done: list[str] = []
        if self._ahead is not None:
            self._ahead.drop()  # a walk started before these writes cannot vouch for the index
        try:
            for rel, text in writes.items():
                if text is None:
                    files.remove(targets[rel])
                else:
                    files.atomic_write(targets[rel], text)
                done.append(rel)
            self._written.update(writes)
            return gitstore.commit(self.root, list(writes), message, actor, self.config.lock_timeout)
        except BaseException:
            for rel in done:
                if before[rel] is None:
                    targets[rel].unlink(missing_ok=True)
                else:
                    files.atomic_write(targets[rel], before[rel])
            raise

    # -- role pages ----------------------------------------------------------------------
    def _role_files(self) -> dict[str, str]:
        """NFC role name → the page's file stem as stored (macOS may store it NFD)."""
        import unicodedata

        folder = self.root / AGENTS_DIR
        if not folder.is_dir():
            return {}
        return {unicodedata.normalize("NFC", p.stem): p.stem for p in folder.glob("*.md")
                if p.is_file() or p.is_symlink()}

    def roles(self) -> list[str]:
        return sorted(self._role_files())

    def _role(self, role: str) -> str:
        """The existing role's exact name, or NotFound with the closest names as a hint."""
        name = check_name(role, "role name")
        existing = self.roles()
        if name in existing:
            return name
        same = [r for r in existing if collision_key(r) == collision_key(name)]
        close = same or _close_matches(name, existing)
        raise NotFound(
            f"no page for role {name!r} (agents/{name}.md)",
            hint=(f"did you mean {', '.join(close)}? " if close else "")
            + f"a page is created on first dispatch: vaultmem page ensure {name}",
        )

    def _page_rel(self, role: str) -> str:
        return f"{AGENTS_DIR}/{self._role_files().get(role, role)}.md"

    def _load_page(self, role: str) -> RolePage:
        rel = self._page_rel(role)
        return parse_page(files.read_text(files.inside(self.root, rel), rel), rel, stem=role)

    def read_page(self, role: str) -> PageInfo:
        return self._load_page(self._role(role)).info()

    def list_pages(self) -> list[dict]:
        out = []
        for role in self.roles():
            row = {"role": role, "path": self._page_rel(role)}
            try:
                info = self._load_page(role).info()
            except VaultmemError as exc:
                row.update(ok=False, problem=str(exc))
            else:
                counts = {s: sum(1 for e in info.entries if e.section == s) for s in ("context", "work", "subagents")}
                row.update(ok=True, name=info.name, category=info.meta.get("category"),
                           first_used=info.meta.get("first_used"), projects=info.projects, entries=counts)
            out.append(row)
        return out

    def ensure_page(self, role: str, actor: Actor, category: str | None = None,
                    project: str | None = None) -> Change:
        """Create ``agents/<role>.md`` on first use; on an existing page only add ``project``."""
        project = _clean_project(project)
        self._refuse_secret("--project", project)
        category = self._scrub("category", category) if category else category
        with self._locked():
            name = check_new_name(role, self.roles(), "role name")
            rel = self._page_rel(name)
            target = files.inside(self.root, rel)
            details = {"role": name, "path": rel, "created": False, "project_added": False}
            if target.exists():
                page = self._load_page(name)
                if project is None or not add_project(page, project):
                    return Change("page.ensure", [rel], None, f"{rel} exists; nothing changed", details)
                self._may_write_role(actor, name)
                message = f"page: add project {project} to {rel}"
                details["project_added"] = True
                sha = self._apply(actor, message, {rel: page.doc.text()})
                return Change("page.ensure", [rel], sha, message, details)
            self._may_write_role(actor, name)
            text = new_page_text(name, self.config.lang, category, project, _today())
            parse_page(text, rel)  # the template itself must parse
            message = f"page: create {rel} on first dispatch"
            details.update(created=True, project_added=project is not None)
            sha = self._apply(actor, message, {rel: text})
            return Change("page.ensure", [rel], sha, message, details)

    def add_entry(self, role: str, text: str, actor: Actor, section: str = "work",
                  project: str | None = None) -> Change:
        """Append a dated working-memory entry, or a project-context bullet, with a block id.
        Only the orchestrator (or a human) writes a role page: another agent's entry, or
        one that reads like an instruction, is filed in the review inbox instead."""
        if section not in ("work", "context"):
            raise BadInput(f"--section is {section!r}; it must be work or context")
        project = _clean_project(project)
        self._refuse_secret("--project", project)
        text = self._scrub("entry text", text)
        with self._locked():
            name = self._role(role)
            self._entry_writes(name, text, section, project)  # refuse bad input before proposing
        from . import guard

        flags = guard.instruction_flags(text)
        if not actor.is_human and (actor.name != self.config.orchestrator or flags):
            return self.inbox.file(actor, [{"op": "page-add", "role": name, "section": section,
                                            "project": project, "text": text}])
        with self._locked():
            writes, entry, what = self._entry_writes(name, text, section, project)
            rel = next(iter(writes))
            message = f"page: add {what} ^{entry.id} to {rel}"
            sha = self._apply(actor, message, writes)
            return Change("page.add", [rel], sha, message, {"role": name, "entry": entry.to_dict(rel)})

    def _entry_writes(self, name: str, text: str, section: str, project: str | None):
        """The page text with the entry added (nothing written): ({path: text}, entry, what)."""
        rel = self._page_rel(name)
        page = self._load_page(name)
        if section == "work":
            new_text, entry = add_work_entry(page, text, _today())
            what = "working-memory entry"
        else:
            if project is None:
                if len(page.projects) != 1:
                    raise BadInput("--project is needed for a project-context entry",
                                   hint=f"this page's projects: {', '.join(page.projects) or 'none yet'}")
                project = page.projects[0]
            if add_project(page, project):
                page = parse_page(page.doc.text(), rel, stem=name)
            new_text, entry = add_context_entry(page, project, text)
            what = f"project-context entry ({project})"
        return {rel: new_text}, entry, what

    # -- memory notes ----------------------------------------------------------------------
    def _note_slugs(self, folder: str = MEMORIES_DIR) -> list[str]:
        path = self.root / folder
        return sorted(p.stem for p in path.glob("*.md")) if path.is_dir() else []

    def remember(self, text: str, actor: Actor, type: str, *, name: str | None = None,
                 description: str | None = None, importance: float | None = None,
                 confidence: float | None = None, tags: list[str] = (), aliases: list[str] = (),
                 key: str | None = None, scope: str | None = None, agent: str | None = None,
                 project: str | None = None, author: str | None = None, author_kind: str | None = None,
                 source: str | None = None, said: str | None = None) -> Change:
        """Write ``memories/<slug>.md`` and its line in MEMORY.md, as one commit — when a
        human says so. What an agent remembers is filed in the review inbox (see
        :mod:`vaultmem.inbox`); a trusted agent's user-stated fact may pass at once."""
        meta, body = self.prepare_note(
            text, actor, type, name=name, description=description, importance=importance, confidence=confidence,
            tags=tags, aliases=aliases, key=key, scope=scope, agent=agent, project=project, author=author,
            author_kind=author_kind, source=source, said=said)  # fmt: skip
        if not actor.is_human:
            return self.inbox.file(actor, [{"op": "add", "note": meta, "text": body}])
        with self._locked():
            slug, rel, writes = self._note_writes(meta, body)
            message = f"remember: {meta['name']} ({rel})"
            sha = self._apply(actor, message, writes)
            return Change("remember", list(writes), sha, message, {"slug": slug, "path": rel})

    def prepare_note(self, text: str, actor: Actor, type: str, *, name: str | None = None,
                     description: str | None = None, importance: float | None = None,
                     confidence: float | None = None, tags: list[str] = (), aliases: list[str] = (),
                     key: str | None = None, scope: str | None = None, agent: str | None = None,
                     project: str | None = None, author: str | None = None, author_kind: str | None = None,
                     source: str | None = None, said: str | None = None) -> tuple[dict, str]:
        """Check a fact and its provenance and scrub secrets from it: (frontmatter, body),
        nothing written. Raises BadInput naming the first bad field."""
        body = self._scrub("text", (text or "").strip())
        if not body:
            raise BadInput("the fact to remember is empty", hint="give the fact as TEXT")
        if type not in self.config.note_types:
            raise BadInput(f"--type {type!r} is not a memory type of this vault",
                           hint=f"use one of {', '.join(self.config.note_types)}, "
                                f"or add it to memory.types in {CONFIG_PATH}")
        importance = self.config.default_importance if importance is None else importance
        for label, value in (("--importance", importance), ("--confidence", confidence)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0 <= value <= 1):
                raise BadInput(f"{label} is {value!r}; it must be a number between 0 and 1")
        author_kind = author_kind or ("user" if actor.is_human else "agent")
        if author_kind not in AUTHOR_KINDS:
            raise BadInput(f"--author-kind {author_kind!r} is not one of {', '.join(AUTHOR_KINDS)}")
        if agent is not None:
            agent = check_name(agent, "agent name")
        scope = scope or ("agent" if agent else "project" if project else "global")
        if scope not in SCOPES:
            raise BadInput(f"--scope {scope!r} is not one of {', '.join(SCOPES)}")
        if scope == "agent" and not agent:
            raise BadInput("--scope agent needs --agent ROLE (whose memory it is)")
        if scope == "project" and not project:
            raise BadInput("--scope project needs --project NAME")
        if key is not None and not re.fullmatch(r"[\w][\w.\-/]*", key):
            raise BadInput(f"--key {key!r} must be a dotted name such as backend.port")
        for field, value in (("--key", key), ("--project", project), ("--said", said), ("--author", author),
                             *(("--tag", t) for t in tags)):
            self._refuse_secret(field, value)
        clean_tags = [_clean_tag(t) for t in tags]
        clean_aliases = [a.strip() for a in (self._scrub("alias", a) for a in aliases if a) if a.strip()]
        first_line = body.splitlines()[0].strip()
        title = self._scrub("name", name.strip()) if name else _shorten(first_line, 60)
        if not title:
            raise BadInput("--name is empty")
        desc = self._scrub("description", description.strip()) if description else _shorten(first_line, 120)
        meta = {
            "name": title, "description": desc, "type": type, "scope": scope, "agent": agent,
            "project": project, "importance": importance, "confidence": confidence if confidence is not None
            else (1.0 if author_kind == "user" else 0.7), "author": check_name(author, "author") if author
            else actor.name, "author_kind": author_kind, "source": self._scrub("source", source or "cli"),
            "said": str(said) if said else None, "created": _now(), "confirmed": _now(),
            "aliases": clean_aliases, "tags": clean_tags, "status": "active", "key": key,
        }  # fmt: skip
        return meta, body

    def _note_writes(self, meta: dict, body: str, supersede: str | None = None, actor: Actor | None = None,
                     index_text: str | None = None, taken: list[str] = ()) -> tuple[str, str, dict[str, str | None]]:
        """The new note, its MEMORY.md line and (with ``supersede``) the old note moved to
        the archive as superseded: (slug, path, writes). ``index_text`` and ``taken``
        carry MEMORY.md and slugs planned earlier in the same commit. Call with the lock held."""
        slug = self._free_slug(slugify(meta["name"]), [*self._note_slugs(), *taken])
        rel = f"{MEMORIES_DIR}/{slug}.md"
        writes: dict[str, str | None] = {}
        remove = []
        if supersede is not None:
            old = self._note_slug(supersede)
            meta = {**meta, "supersedes": f"{MEMORIES_DIR}/{old}"}
            writes.update(self._archive_writes(old, actor, None, status="superseded",
                                               superseded_by=f"{MEMORIES_DIR}/{slug}", index=False))
            remove.append(f"{MEMORIES_DIR}/{old}")
        if index_text is None:
            index_path = files.inside(self.root, MEMORY_INDEX)
            index_text = files.read_text(index_path) if index_path.exists() else ""
        writes[rel] = render_note(meta, body)
        writes[MEMORY_INDEX] = update_index(index_text, MEMORY_INDEX, remove=remove, add=[
            index_line(slug, meta["name"], meta["description"], meta["type"], meta.get("agent"))])
        return slug, rel, writes

    @staticmethod
    def _free_slug(base: str, taken: list[str]) -> str:
        try:
            base = check_name(base, "note name")
        except BadInput:
            base = f"note-{base}"[:60].strip("-.") or "note"
            base = check_name(base, "note name")
        keys = {collision_key(t) for t in taken}
        slug, n = base, 2
        while collision_key(slug) in keys:
            slug, n = f"{base}-{n}", n + 1
        return slug

    def _note_slug(self, slug: str) -> str:
        raw = slug.strip()
        raw = raw.removeprefix(f"{MEMORIES_DIR}/").removesuffix(".md")
        name = check_name(raw, "note slug")
        existing = self._note_slugs()
        if name not in existing:
            close = _close_matches(name, existing)
            raise NotFound(f"no memory note {name!r} ({MEMORIES_DIR}/{name}.md)",
                           hint=f"did you mean {', '.join(close)}?" if close else "list notes in MEMORY.md")
        return name

    def read_note(self, slug: str) -> NoteInfo:
        name = self._note_slug(slug)
        rel = f"{MEMORIES_DIR}/{name}.md"
        return parse_note(files.read_text(files.inside(self.root, rel)), rel)

    def forget(self, slug: str, actor: Actor, reason: str | None = None) -> Change:
        """Move a note to ``archive/memories/`` (status archived) and drop its MEMORY.md
        line — when a human says so; an agent's REMOVE goes to the review inbox."""
        reason = self._scrub("reason", reason) if reason else reason
        name = self._note_slug(slug)
        if not actor.is_human:
            return self.inbox.file(actor, [{"op": "remove", "target": f"{MEMORIES_DIR}/{name}",
                                            "text": reason or ""}])
        with self._locked():
            name = self._note_slug(slug)
            writes = self._archive_writes(name, actor, reason)
            src, dst = f"{MEMORIES_DIR}/{name}.md", next(iter(writes))
            message = f"forget: {src} → {dst}" + (f" ({reason})" if reason else "")
            sha = self._apply(actor, message, writes)
            return Change("forget", list(writes), sha, message, {"slug": name, "archived_to": dst})

    def _archive_writes(self, name: str, actor: Actor | None, reason: str | None, status: str = "archived",
                        index: bool = True, **fields) -> dict[str, str | None]:
        """Move ``memories/<name>.md`` to the archive (first key of the result) and, with
        ``index``, drop its MEMORY.md line. Call with the lock held."""
        src = f"{MEMORIES_DIR}/{name}.md"
        archived_slug = self._free_slug(name, self._note_slugs(f"{ARCHIVE_DIR}/{MEMORIES_DIR}"))
        dst = f"{ARCHIVE_DIR}/{MEMORIES_DIR}/{archived_slug}.md"
        updates = {"status": status, "archived": _now(), "archived_by": actor.name if actor else None, **fields}
        if reason:
            updates["archive_reason"] = reason
        updates = {k: v for k, v in updates.items() if v is not None}
        writes: dict[str, str | None] = {
            dst: set_note_fields(files.read_text(files.inside(self.root, src)), src, **updates), src: None}
        if index:
            index_path = files.inside(self.root, MEMORY_INDEX)
            index_text = files.read_text(index_path) if index_path.exists() else ""
            new_index = update_index(index_text, MEMORY_INDEX, remove=[f"{MEMORIES_DIR}/{name}"])
            if new_index != index_text:
                writes[MEMORY_INDEX] = new_index
        return writes

    # -- settings ------------------------------------------------------------------------
    def config_values(self) -> dict:
        """The settings file as plain data, as written (``self.config`` is what they mean,
        defaults filled in)."""
        from .parse.document import plain

        return plain(load_raw(self.root))

    def set_config(self, dotted: str, value, actor: Actor) -> Change:
        """Change one setting. Only a human may: the config decides who the orchestrator is."""
        if not actor.is_human:
            raise PermissionRefused(
                f"agent {actor.name!r} may not change the vault's settings",
                hint="settings (the orchestrator among them) are changed by a human: run without --as",
            )
        with self._locked():
            text = files.read_text(self.root / CONFIG_PATH)
            new_text = set_value(text, dotted, value)
            message = f"config: set {dotted} = {value}"
            # settings are not memory, and keys such as safety.secrets read like secrets
            sha = self._apply(actor, message, {CONFIG_PATH: new_text}, unscanned=(CONFIG_PATH,))
            self.config = parse_config(new_text)
            return Change("config.set", [CONFIG_PATH], sha, message, {"key": dotted, "value": value})

    # -- coordination: keys, logs, decisions, state, checkpoints, sync ----------------------
    @property
    def shared(self):
        """Keys, the signed live-context and decision logs, project state, checkpoints and
        git sync (see :mod:`vaultmem.shared`)."""
        if self._shared is None:
            from .shared import Shared

            self._shared = Shared(self)
        return self._shared

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
                                     engine=self.config.index_engine, ahead=self._ahead)
        return self._index

    def watcher_alive(self, idle: bool = False) -> bool:
        """True while a ``vaultmem watch`` process keeps this vault's index fresh (with
        ``idle``: and has no changes waiting to be indexed)."""
        return watcher_alive(self.root, idle)

    def refresh_index(self, paths=None, wait: float | None = None, progress=None):
        """Index what changed since the last refresh (or just ``paths``)."""
        return self.index.refresh(paths=paths, wait=wait, progress=progress)

    def rebuild_index(self, progress=None, engine: str | None = None):
        """Build the index afresh beside the live one and swap it in (on ``engine``:
        whoosh, tantivy, or auto to choose by the vault's size)."""
        return self.index.rebuild(progress=progress, engine=engine)

    def _fresh(self) -> None:
        """Before answering: refresh stale entries — unless a watcher is keeping up (it is
        alive and has no changes waiting), or another process is indexing right now, or
        the index cannot be written (then answer from the index as it is). Files this
        process changed are indexed first."""
        try:
            if self._written:
                self.index.refresh(paths=sorted(self._written), wait=0)
                self._written.clear()
            if not self.watcher_alive(idle=True):
                self.index.refresh(wait=0)
        except Busy:
            pass  # the index cannot be written right now: answer from it as it is

    def search(self, query: str, agent: str | None = None, kinds: tuple[str, ...] = (),
               types: tuple[str, ...] = (), limit: int = 10):
        """Ranked hits for ``query``. With ``agent``, only that agent's own memory plus
        global and shared memory are searched — never another role's page, and never the
        review inbox unless ``kinds`` names it."""
        from .index import Filters
        from .retrieve import search

        if not query.strip():
            raise BadInput("the query is empty", hint="give words to search for")
        if limit < 1:
            raise BadInput(f"-n is {limit}; it must be at least 1")
        agent = check_name(agent, "agent name") if agent else None
        kinds = tuple(kinds) or (AGENT_KINDS if agent else ())
        self._fresh()
        return search(self.index, query, Filters(agent=agent, kinds=kinds, types=tuple(types)), limit)

    def brief(self, agent: str, task: str, window: int | None = None, ratio: float | None = None,
              tokens: int | None = None):
        """The briefing for ``agent`` before a session on ``task``, within
        ``min(ratio × window, tokens)`` tokens (see :mod:`vaultmem.brief`)."""
        from .brief import BriefParts, budget_for, build_brief
        from .index import Filters
        from .parse.note import index_block_lines
        from .retrieve import is_relevant, rank, search

        agent = check_name(agent, "agent name")
        if not task.strip():
            raise BadInput("the task is empty", hint="describe the task the agent is about to do")
        budget = budget_for(window if window is not None else self.config.brief_window,
                            ratio if ratio is not None else self.config.brief_ratio, tokens)
        self._fresh()
        cfg = self.config
        hits = search(self.index, task, Filters(agent=agent, kinds=BRIEF_KINDS), limit=max(30, cfg.brief_max_items * 3))
        relevant = rank([h for h in hits if is_relevant(h, task, cfg.brief_min_coverage)], _today())
        identity = ""
        identity_path = self.root / IDENTITY_DIR / f"{agent}.md"
        if identity_path.is_file():
            from .parse.document import parse_document

            doc = parse_document(files.read_text(identity_path, f"{IDENTITY_DIR}/{agent}.md"),
                                 f"{IDENTITY_DIR}/{agent}.md", require_frontmatter=False)
            identity = "".join(doc.lines[doc.body_start:])
        index_path = self.root / MEMORY_INDEX
        # at most as many lines as could fit (an index line costs well over 8 tokens)
        index_lines = (index_block_lines(files.read_text(index_path, MEMORY_INDEX), MEMORY_INDEX, agent,
                                         owners=self.index.owners(), limit=budget // 8 + 1)
                       if index_path.is_file() else [])
        live = [f"- {e.ts[:16]}Z {e.id} #{e.channel} {e.type}: {e.summary} [[{e.log_path}]]"
                for e in self.shared.unseen_for_brief(agent)]
        parts = BriefParts(agent=agent, task=task, identity=identity, hits=relevant, index_lines=index_lines,
                           live=live, lang=self.config.lang, max_items=cfg.brief_max_items)
        return build_brief(parts, budget)

    def evaluate(self, queries_path: str | Path, at: str | None = "HEAD", engine: str | None = None):
        """Run a retrieval evaluation on a frozen copy of this vault (see
        :mod:`vaultmem.evaluate`), indexed with ``engine`` (default: the vault's);
        returns the report and what was frozen."""
        import tempfile

        from .evaluate import evaluate, load_queries, snapshot
        from .index import Filters
        from .index.store import IndexStore
        from .retrieve import is_relevant, search

        path = Path(queries_path)
        try:
            text = files.read_text(path, str(path))
        except FileNotFoundError:
            raise NotFound(f"no queries file {path}", path=str(path)) from None
        queries = load_queries(text, str(path))
        cutoff = self.config.brief_min_coverage
        with tempfile.TemporaryDirectory(prefix="vaultmem-eval-") as tmp:
            frozen_root = Path(tmp) / "vault"
            frozen = snapshot(self.root, frozen_root, at)
            store = (IndexStore(frozen_root, engine=self.config.index_engine) if engine in (None, "auto")
                     else IndexStore(frozen_root, engine=engine, env=False))  # --engine beats the environment
            store.rebuild(engine=engine)
            frozen = f"{frozen} (engine {store.engine_name()})"
            try:
                report = evaluate(queries, lambda q: search(store, q.query, Filters(agent=q.agent), limit=10),
                                  lambda hit, query: is_relevant(hit, query, cutoff))
            finally:
                store.close()
        return report, frozen

    def dispatch(self, role: str, task: str, actor: Actor, category: str | None = None,
                 project: str | None = None, window: int | None = None, ratio: float | None = None,
                 tokens: int | None = None):
        """Seed 000's dispatch: create the role's page on first use, then brief it."""
        change = self.ensure_page(role, actor, category=category, project=project)
        brief = self.brief(change.details["role"], task, window=window, ratio=ratio, tokens=tokens)
        return change, brief


def _close_matches(name: str, existing) -> list[str]:
    from difflib import get_close_matches  # only for an error message: not loaded by every command

    return get_close_matches(name, existing, n=3)


def _clean_project(project: str | None) -> str | None:
    if project is None:
        return None
    project = " ".join(project.split())
    if not project:
        raise BadInput("--project is empty")
    if any(ch in project for ch in "[]#^|\n"):
        raise BadInput(f"--project {project!r} may not contain [ ] # ^ | (they break Obsidian links)")
    return project


def _clean_tag(tag: str) -> str:
    tag = tag.strip().lstrip("#")
    if not re.fullmatch(r"[\w/\-]+", tag) or tag.isdigit():
        raise BadInput(f"--tag {tag!r} is not an Obsidian tag (letters, digits, '_', '-', '/'; not only digits)")
    return tag


def _shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters; never cuts a word or token (a hash cut in two would
    read as something else) unless the text has no break to cut at."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if re.match(r"[\w\-+/=.~]", text[limit - 1]) and re.search(r"[A-Za-z0-9_\-+/=.~]$", cut):
        cut = re.sub(r"[A-Za-z0-9_\-+/=.~]+$", "", cut) or cut
    return cut.rstrip() + "…"
