"""The vault's upkeep, for the human who keeps it: ``doctor`` (its health, check by check,
and the mechanical repairs), ``verify`` (everything the design relies on, after an upgrade
or a restore), ``migrate`` (an older format brought to this one), backups (a git bundle,
the private keys apart), and forgetting: ``gc`` (notes past retention archived),
``compact`` (a role page's oldest entries archived) and ``restore`` (a note brought back). Over the :class:`~vaultmem.vault.Vault` facade and the domain
modules; the CLI's ``doctor``, ``verify``, ``migrate`` and ``backup`` call these."""

from __future__ import annotations

import tempfile
from pathlib import Path

from . import compaction, files, forgetting, gitstore, guard, layout, links, notes, pages, preservation
from .analysis import ANALYZER_VERSION
from .config import FORMAT_VERSION, load_config, unknown_setting_problems
from .errors import BadInput, PermissionRefused, VaultmemError
from .models import Actor, Change
from .vault import Vault


def doctor(vault: Vault, fix: bool = False, actor: Actor | None = None) -> dict:
    """The vault's health, check by check (docs/cli.md, ``vaultmem doctor``): files that
    do not parse, MEMORY.md against the notes, broken wikilinks and block ids, the
    index, the logs' signatures and chains, secrets in uncommitted files, work waiting
    for a human, oversize files. ``fix`` (a human only) repairs what is mechanical and
    safe — MEMORY.md's lines, in a commit of its own; the index, rebuilt — and leaves
    the rest for a human, said so. ``{"ok", "checks": [{"check", "ok", "problems",
    "fixed"}]}``."""
    if fix and (actor is None or not actor.is_human):
        raise PermissionRefused("only a human runs 'vaultmem doctor --fix'",
                                hint="run it without --as (and without VAULTMEM_AGENT), or without --fix")
    checks = []

    def check(name: str, problems: list, fixed: list | None = None) -> None:
        checks.append({"check": name, "ok": not problems, "problems": problems, "fixed": fixed or []})

    index_problems, rebuilt = [], []
    try:
        vault.index_status()  # brought up to date with the files, as a search would
    except VaultmemError as exc:
        index_problems.append({"path": layout.INDEX_DIR, "line": None, "problem": exc.message})
        if fix:
            vault.rebuild_index()
            rebuilt.append({"message": "the index was rebuilt from the files"})
            index_problems = []
    check("the config names only known settings", unknown_setting_problems(vault.root))
    check("files parse", [{"path": p["path"], "line": p.get("line"), "problem": p["message"]}
                          for p in vault.index.problems() + vault.journal_index.problems() if not p.get("partial")])
    unreadable = []
    try:
        dangling, missing = notes.index_problems(vault.root)
    except VaultmemError as exc:  # MEMORY.md a folder, not UTF-8 …: said here, the other checks go on
        dangling, missing = [], []
        unreadable = [{"path": layout.MEMORY_INDEX, "line": getattr(exc, "line", None), "problem": exc.message}]
    fixed = []
    if fix and (dangling or missing):
        with vault.writer.locked():
            dangling, missing = notes.index_problems(vault.root)
            if dangling or missing:
                message = (f"doctor: MEMORY.md lists {len(missing)} active note(s) it lacked and drops "
                           f"{len(dangling)} line(s) whose note is not active")
                sha = vault.writer.apply(actor, message, notes.plan_index_fix(vault.root, dangling, missing))
                fixed.append({"commit": sha, "message": message})
        dangling, missing = notes.index_problems(vault.root)
    check("MEMORY.md lists the active notes", unreadable +
          [{"path": layout.MEMORY_INDEX, "line": d["line"], "problem": f"{d['target']} is not an active note"}
           for d in dangling] +
          [{"path": layout.note_path(m["slug"]), "line": None, "problem": "an active note MEMORY.md does not list"}
           for m in missing], fixed)
    found = links.LinkMap(vault.root)
    check("links resolve", [{"path": x.source, "line": x.line, "problem": f"{x.text}: {x.problem}"}
                            for x in found.broken() if x.source != layout.MEMORY_INDEX])  # checked above
    check("the index opens and follows the files", index_problems, rebuilt)
    findings, _counts = vault.shared.verify()
    check("logs verify", [{"path": f.get("path") or f.get("log"), "line": f.get("line"), "problem": f.get("problem")
                           or f.get("message") or str(f)} for f in findings])
    secrets = []
    signed = tuple(f"{d}/" for d in (*layout.LOG_DIRS.values(), layout.KEYS_DIR))  # signatures: high entropy
    for rel in gitstore.changed_under(vault.root, "."):
        if rel.endswith(".md") and not rel.startswith(signed) and (vault.root / rel).is_file():
            try:
                text = files.read_vault_text(vault.root, rel)
            except (FileNotFoundError, VaultmemError):
                continue
            secrets += [{"path": rel, "line": n, "problem": f"a {kind} in an uncommitted file"}
                        for n, kind in guard.secret_lines(text)]
    check("no secret in uncommitted files", secrets)
    check("nothing is staged that no change owns", vault.writer.stray_staged())
    audit = vault.lifecycle.audit()
    check("nothing waits for a human",
          [{"path": d.get("path"), "line": None, "problem": f"delegation {d.get('id')} pending "
            f"{d.get('age_hours')} h"} for d in audit["stale_delegations"]] +
          [{"path": i["path"], "line": None, "problem": f"inbox item {i['id']} ({i['op']}) waits for review"}
           for i in audit["inbox"]])
    big = []
    for rel in found.paths:
        if rel.startswith(f"{layout.JOURNAL_DIR}/"):
            continue  # a day of whole sessions is long by design: read on purpose, never briefed whole
        size = len(found.texts.get(rel, "").encode("utf-8"))
        if size > vault.config.max_note_bytes:
            big.append({"path": rel, "line": None,
                        "problem": f"{size:,} bytes, more than memory.max_note_bytes ({vault.config.max_note_bytes:,})"})
    for role in pages.roles(vault.root):
        try:
            over = [r for r in compaction.budget_rows(vault.root, role, dict(vault.config.page_entries),
                                                      vault.config.page_tokens) if r["over_budget"]]
        except VaultmemError:
            continue  # an unreadable page is the first check's
        big += [{"path": pages.page_rel(vault.root, role), "line": None,
                 "problem": f"{r['section']}: {r['entries']} entries, ~{r['tokens']:,} tokens, over its budget "
                            f"({r['max_entries']} entries, {r['max_tokens']:,} tokens): vaultmem compact {role}"}
                for r in over]
    check("no oversize file", big)
    return {"ok": all(c["ok"] for c in checks), "checks": checks, "skipped_files": found.unread}


def verify(vault: Vault) -> dict:
    """Everything the design relies on, after an upgrade or a restore: the format is
    current (else ``vaultmem migrate``), the config reads, every file parses (pages,
    notes, the journal), MEMORY.md lists the active notes, links resolve, the index
    opens on this analyzer (an index of another is rebuilt), the logs' signatures and
    chains verify, no secret sits in an uncommitted file, the journal's markers file
    each turn once, the skills read. ``{"ok", "format", "checks": [{"check", "ok",
    "problems"}]}``: the checks of ``doctor`` but its reminders of work waiting for a
    human and oversize files, and these."""
    v = vault.config.format_version
    checks = [{"check": "the vault's format is current", "ok": v == FORMAT_VERSION, "fixed": [], "problems": [] if
               v == FORMAT_VERSION else [{"path": layout.CONFIG_PATH, "line": None,
                                          "problem": f"format {v}; this vaultmem's is {FORMAT_VERSION}: run "
                                                     f"'vaultmem migrate' (see what it does with --dry-run)"}]},
              {"check": "the config reads", "ok": True, "problems": [], "fixed": []}]
    built = {"memory": vault.index.analyzer(), "journal": vault.journal_store().analyzer()}
    health = doctor(vault)  # brings both indexes up to date: one of another analyzer is rebuilt
    stale = [{"message": f"{name}'s index was built by analyzer {was}: rebuilt by {ANALYZER_VERSION}"}
             for name, was in built.items() if was not in (None, ANALYZER_VERSION)]
    checks.append({"check": "the index was built by this analyzer", "ok": True, "problems": [], "fixed": stale})
    checks += [c for c in health["checks"] if c["check"] not in ("nothing waits for a human", "no oversize file")]
    for name, problems in (("the journal files each turn once", preservation.journal_problems(vault.root)),
                           ("the private keys parse", preservation.key_problems(vault.root)),
                           ("skills read", vault.skills.all()[1])):
        checks.append({"check": name, "ok": not problems, "problems": problems, "fixed": []})
    return {"ok": all(c["ok"] for c in checks), "format": v, "checks": checks,
            "skipped_files": health.get("skipped_files", [])}


def migrate(vault: Vault, actor: Actor, dry_run: bool = False) -> Change:
    """Bring a vault of an older format to this vaultmem's, in one commit that lists
    each step (``dry_run``: the plan, nothing changed). Humans only; refused while a
    file it would write holds an uncommitted edit."""
    if not dry_run and not actor.is_human:
        raise PermissionRefused(f"agent {actor.name!r} may not migrate the vault",
                                hint="a human runs 'vaultmem migrate' (see what it would do with --dry-run)")
    with vault.writer.locked():
        before = vault.config.format_version
        writes, steps = preservation.plan_migrate(vault.root, before)
        message = f"migrate: vault format {before} → {before + len(steps)}" if steps else \
            f"the vault is at format {before} already"
        sha = None
        if steps and not dry_run:
            dirty = [p for p in writes if gitstore.changed_under(vault.root, p)]
            if dirty:
                raise PermissionRefused(f"{', '.join(dirty)} {'has' if len(dirty) == 1 else 'have'} uncommitted "
                                        "edits: a migration is one reviewed commit of its own",
                                        hint="commit (or discard) the edits, then run 'vaultmem migrate' again")
            sha = vault.writer.apply(actor, message + "\n\n" + "\n".join(f"- {x}" for x in steps), writes,
                                    unscanned=(layout.CONFIG_PATH,))
            vault.config = load_config(vault.root)
            vault.writer.config = vault.config
    return Change("migrate", sorted(writes), sha, message, {"from": before, "to": before + len(steps),
                                                             "steps": steps, "dry_run": dry_run})


def backup_create(vault: Vault, path: str | Path, keys: str | Path | None = None) -> dict:
    """A backup: the whole history in a git bundle at ``path`` — and, only when
    ``keys`` names a file, the private signing keys in an archive of their own (they
    are never committed, so never in the bundle). Both files are new (an existing one
    is refused). What is not committed is not in the bundle: said in ``warnings``."""
    bundle, key_file = Path(path), Path(keys) if keys is not None else None
    for target, field in ((bundle, "path"), (key_file, "keys")):
        if target is not None and target.exists():
            raise BadInput(f"{target} exists: a backup never overwrites a file", field=field,
                           hint="name a new file")
    if not gitstore.has_commit(vault.root):
        raise BadInput("the vault has no commit yet: there is nothing to back up")
    refs = gitstore.bundle_create(vault.root, bundle)
    agents = preservation.write_keys(vault.root, key_file) if key_file is not None else None
    pending = gitstore.changed_under(vault.root, ".")
    warnings = [f"{len(pending)} uncommitted change(s) are not in the backup: {', '.join(pending[:5])}"
                f"{' …' if len(pending) > 5 else ''}"] if pending else []
    if key_file is None and (vault.root / layout.PRIVATE_KEYS_DIR).is_dir() and \
            any((vault.root / layout.PRIVATE_KEYS_DIR).glob("*.key")):
        warnings.append("the private signing keys are not in the backup: add --keys FILE to carry them apart")
    return {"bundle": str(bundle), "refs": refs, "keys": str(key_file) if key_file else None,
            "key_agents": agents, "warnings": warnings}


def backup_verify(path: str | Path) -> dict:
    """Whether a backup restores to a vault that passes :func:`verify` (restored into a
    temporary folder, then removed)."""
    refs = gitstore.bundle_heads(Path(path))
    with tempfile.TemporaryDirectory(prefix="vaultmem-backup-") as tmp:
        dest = Path(tmp) / "vault"
        gitstore.clone_bundle(Path(path), dest)
        report = verify(Vault.open(dest))
    return {"bundle": str(path), "refs": refs, "ok": report["ok"], "verify": report}


def backup_restore(path: str | Path, dest: str | Path, keys: str | Path | None = None) -> dict:
    """A vault at ``dest`` (new, or an empty folder) from a backup, its private keys
    from ``keys`` when given; then :func:`verify` on it."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BadInput(f"{dest} exists and is not an empty folder: a restore never writes over files",
                       field="dest", hint="name a new folder")
    refs = gitstore.bundle_heads(Path(path))
    taken = preservation.load_keys(Path(keys)) if keys is not None else []  # checked before anything is made
    if dest.exists():
        dest.rmdir()
    gitstore.clone_bundle(Path(path), dest)
    agents = preservation.install_keys(dest, taken)
    report = verify(Vault.open(dest))
    return {"vault": str(dest), "refs": refs, "key_agents": agents, "ok": report["ok"], "verify": report}


def gc_policy(c) -> forgetting.Policy:
    """The retention policy the vault's settings ``c`` say (forgetting.*)."""
    return forgetting.Policy(half_lives={**forgetting.HALF_LIVES, **dict(c.half_lives)},
                             min_score=c.forget_min_score, caps=dict(c.forget_caps))


def gc(vault: Vault, actor: Actor, dry_run: bool = False, now=None):
    """Score every active note and move those that fall below the retention score,
    have expired or exceed their type's cap to ``archive/memories/``, their MEMORY.md
    lines removed, in one commit that lists each note and its score — when a human
    says so. ``dry_run``: the same plan, nothing changed. A note with an uncommitted
    edit is never moved (listed as skipped). Returns the plan (:class:`vaultmem.forgetting.GcPlan`)
    and the commit (None for a dry run or when nothing goes)."""
    if not dry_run and not actor.is_human:
        raise PermissionRefused(f"agent {actor.name!r} may not run gc: it moves memory to the archive",
                                hint="a human runs 'vaultmem gc' (see what it would do with --dry-run)")
    protected = frozenset(gitstore.changed_under(vault.root, layout.MEMORIES_DIR))
    plan = forgetting.plan(vault.root, gc_policy(vault.config), now=now, protected=protected)
    if dry_run or not plan.archive:
        return plan, None
    return forgetting.collect(vault.root, vault.writer, plan, actor)


def compact(vault: Vault, role: str, actor: Actor, keep: int | None = None, dry_run: bool = False, today=None):
    """Move the oldest, least-recalled entries of a role page's working memory and
    sub-agent records, where a section exceeds its budget (``forgetting.page_entries``,
    ``forgetting.page_tokens``) or holds more than ``keep`` entries, to
    ``archive/agents/<role>-<year>.md`` with their block ids, one summary line per moved
    month left on the page, in one commit — when a human says so (:mod:`vaultmem.compaction`).
    ``dry_run``: the same plan, nothing changed. Refused while the page or an archive
    file it would write holds an uncommitted edit. Returns the plan and the commit
    (None for a dry run or when nothing moves)."""
    if not dry_run and not actor.is_human:
        raise PermissionRefused(f"agent {actor.name!r} may not compact a role page: it moves memory to the archive",
                                hint="a human runs 'vaultmem compact ROLE' (see what it would do with --dry-run)")
    with vault.writer.locked():
        name = pages.resolve(vault.root, role)
        made = compaction.plan(vault.root, name, dict(vault.config.page_entries), vault.config.page_tokens,
                               keep=keep, today=today)
        if dry_run or not made.moving:
            return made, None
        dirty = [p for p in made.writes if gitstore.changed_under(vault.root, p)]
        if dirty:
            raise PermissionRefused(f"{', '.join(dirty)} {'has' if len(dirty) == 1 else 'have'} uncommitted edits: "
                                    "compaction never moves a human's unsaved work",
                                    hint="commit (or discard) the edits, then run 'vaultmem compact' again")
        lines = "\n".join(f"- ^{m.id or '(no id)'} {m.date or 'undated'} → {m.archive}: {m.text}" for m in made.moving)
        n = len(made.moving)
        message = f"compact: {made.path}: move {n} entr{'y' if n == 1 else 'ies'} to the archive\n\n{lines}"
        sha = vault.writer.apply(actor, message, made.writes)
    return made, Change("compact", list(made.writes), sha, message.splitlines()[0], {"moved": n})


def restore(vault: Vault, slug: str, actor: Actor) -> Change:
    """Bring an archived note back to ``memories/``, active, with its MEMORY.md line, in
    one commit — when a human says so. Byte for byte as it was archived when the
    archived copy is unchanged (``notes.plan_restore``)."""
    if not actor.is_human:
        raise PermissionRefused(f"agent {actor.name!r} may not restore a note",
                                hint="a human runs 'vaultmem restore SLUG'")
    with vault.writer.locked():
        writes, path, slug, exact = notes.plan_restore(vault.root, slug)
        src = next(p for p, t in writes.items() if t is None)
        message = f"restore: {src} → {path}"
        sha = vault.writer.apply(actor, message, writes)
    warnings = [] if exact else [f"{src} was edited in the archive (or its history is gone): restored "
                                 f"with those edits, the archive's fields taken out"]
    meta = notes.read(vault.root, slug).meta
    also = [n for n in notes.same_key(vault.root, meta) if n != slug]
    if also:
        warnings.append(f"key {meta['key']!r} is also stated by {', '.join(layout.note_ref(n) for n in also)}: "
                        f"two active values; a brief shows the newer, 'vaultmem conflicts' lists both")
    return Change("restore", list(writes), sha, message, {"slug": slug, "path": path, "exact": exact},
                  warnings=warnings)
