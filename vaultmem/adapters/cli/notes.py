"""``vaultmem remember`` / ``forget`` / ``conflicts`` / ``gc`` / ``restore`` / ``links`` / ``timeline``: memory notes and what links and dates them."""

from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, read_text_arg, session


@handles_errors
def remember(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The fact, in a sentence or a short paragraph ('-' reads standard input).",
                                        show_default=False)],
    type_: Annotated[str, typer.Option("--type", help="preference, decision, fact, failure+fix, procedure, episode "
                                       "(the vault's memory.types).", show_default=False)],
    name: Annotated[Optional[str], typer.Option(help="Short title; also makes the file name. Default: the text's first line.")] = None,
    description: Annotated[Optional[str], typer.Option(help="One-line description for MEMORY.md.")] = None,
    importance: Annotated[Optional[float], typer.Option(help="0..1; default memory.default_importance.")] = None,
    confidence: Annotated[Optional[float], typer.Option(help="0..1; default 1.0 for user-stated facts, else 0.7.")] = None,
    tag: Annotated[Optional[list[str]], typer.Option(help="A tag (repeatable).")] = None,
    alias: Annotated[Optional[list[str]], typer.Option(help="A synonym or other-language term to find it by (repeatable).")] = None,
    key: Annotated[Optional[str], typer.Option(help="A key such as backend.port: a newer fact with the same key contradicts this one.")] = None,
    scope: Annotated[Optional[str], typer.Option(help="global, agent or project (default: agent with --agent, project with --project, else global).")] = None,
    agent: Annotated[Optional[str], typer.Option(help="The role whose memory this is (scope agent).")] = None,
    project: Annotated[Optional[str], typer.Option(help="The project it belongs to (scope project).")] = None,
    author: Annotated[Optional[str], typer.Option(help="Who said it (default: the acting agent or you).")] = None,
    author_kind: Annotated[Optional[str], typer.Option(help="user, agent, third_party or unknown.")] = None,
    source: Annotated[Optional[str], typer.Option(help="Where it came from: a session id, log entry or file.")] = None,
    said: Annotated[Optional[str], typer.Option(help="When it was said (e.g. 2026-11-30T10:00:00Z).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Write a memory note (memories/<slug>.md) and add its line to MEMORY.md, as one commit.

    Run by an agent (--as), the fact is filed in the review inbox instead (see 'vaultmem review').

    TEXT '-' reads the fact from standard input (a long one, or one from another program):
    git log -1 --format=%B | vaultmem remember - --type episode

    Example: vaultmem remember "后端端口固定8080" --type fact --alias "backend port" --key backend.port
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.notes.remember(
        read_text_arg(text), v.actor(s.agent), type_, name=name, description=description,
        importance=importance, confidence=confidence, tags=tag or [], aliases=alias or [], key=key,
        scope=scope, agent=agent, project=project, author=author, author_kind=author_kind, source=source,
        said=said,
    )  # fmt: skip
    s.emit(change, render.remembered)


@handles_errors
def forget(
    ctx: typer.Context,
    slug: Annotated[str, typer.Argument(help="The note's slug (its file name without .md).", show_default=False)],
    reason: Annotated[Optional[str], typer.Option(help="Why it is forgotten (kept in the archived note).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Move a memory note to archive/memories/ and remove its MEMORY.md line (git keeps everything).

    Example: vaultmem forget backend-port-8080 --reason "moved to 9090"
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.notes.forget(slug, v.actor(s.agent), reason=reason)
    s.emit(change, render.forgotten)


@handles_errors
def conflicts(
    ctx: typer.Context,
    min_sources: Annotated[int, typer.Option(help="Other sources that must agree on a variant of a note's code "
                                             "or number before it is reported as an outlier.")] = 2,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Report memory that disagrees with itself, for a human to settle: nothing is changed.

    Two checks. Same key: active notes with one key (in one scope) and different values —
    written by hand, or merged from two clones (vaultmem's own writes supersede instead).
    Outlier: a note's code or number (six characters or more: an account id, a build
    number) where --min-sources other notes, page entries or log entries hold one variant
    of it (one character changed, added, dropped, or two swapped) and fewer hold its own.
    A note's value is its 'value' field, else the codes and numbers in its text, else its words.

    Settle one by remembering the right value with the key (it supersedes the others) or
    with 'vaultmem forget SLUG'. Exit status 0 either way; --json for programs.

    Example: vaultmem conflicts --json
    """
    s = session(ctx, vault, as_, json_)
    from ... import views

    s.emit(views.conflicts(s.open(), min_sources), render.conflicts)


@handles_errors
def gc(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be archived, and each score; change nothing.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Move notes that fell below their retention score to archive/memories/, in one commit.

    Each active note is scored: decay × (0.6 × importance + 0.4 × use), where decay halves
    every forgetting.half_life_days.TYPE days since the note was last confirmed or recalled
    (by a brief or search on this machine) and use grows with its recalls. Below
    forgetting.min_score (0.1) it goes; so does a note whose 'expires' has passed, and, per
    type, what exceeds forgetting.caps.TYPE (lowest scores first). A 'pinned: true' note,
    and one whose 'expires' lies ahead, is kept. A note with an uncommitted edit is never
    moved. Nothing is deleted: 'vaultmem restore SLUG' brings a note back.

    Run --dry-run first: it lists exactly what a run would move. --json gives each
    note's score and its parts (docs/forgetting.md).

    Example: vaultmem gc --dry-run
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    from ... import upkeep

    plan, change = upkeep.gc(v, v.actor(s.agent), dry_run=dry_run)
    data = {**plan.to_dict(), "dry_run": dry_run, "commit": change.commit if change else None}
    s.emit(plan, lambda p: render.gc(p, dry_run, change), data=data)


@handles_errors
def restore(
    ctx: typer.Context,
    slug: Annotated[str, typer.Argument(help="The archived note's slug (its file name in archive/memories/, without .md).",
                                        show_default=False)],
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Bring an archived note (gc, forget, superseded) back to memories/, active, with its MEMORY.md line.

    The note returns byte for byte as it was when it was archived (git holds that text),
    unless its archived copy was edited since: then it keeps those edits and loses only
    the fields the archiving added. One commit. Refused when a note of its name exists.

    Example: vaultmem restore backend-port-8080
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    from ... import upkeep

    s.emit(upkeep.restore(v, slug, v.actor(s.agent)), render.restored)


@handles_errors
def compact(
    ctx: typer.Context,
    role: Annotated[str, typer.Argument(help="The role whose page to compact (its name, as on agents/ROLE.md).",
                                        show_default=False)],
    keep: Annotated[Optional[int], typer.Option("--keep", min=0, show_default=False,
                                                help="Keep this many entries in working memory and in the sub-agent "
                                                     "records, compacting even a page within its budget.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would move, and where; change nothing.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Move a role page's oldest, least-recalled entries to archive/agents/ROLE-YYYY.md, in one commit.

    A section — working memory or the sub-agent records — is compacted when it holds
    more entries than forgetting.page_entries.SECTION (work 100, subagents 30) or more
    estimated tokens than forgetting.page_tokens (8000); it keeps half of each, or
    --keep N entries. The freshest stay: the later of an entry's date and its last recall
    by a brief or search, then the most recalled. Project context never moves.

    The moved lines keep their block ids, under a '## SECTION YYYY-MM' heading of the
    year's archive file, so links to them still resolve ('vaultmem links'); each moved
    month leaves one dated line on the page that links there. Refused while the page
    holds an uncommitted edit. Undo with 'git revert COMMIT'.

    Example: vaultmem compact frontend-review --dry-run
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    from ... import upkeep

    plan, change = upkeep.compact(v, role, v.actor(s.agent), keep=keep, dry_run=dry_run)
    data = {**plan.to_dict(), "dry_run": dry_run, "commit": change.commit if change else None}
    s.emit(plan, lambda p: render.compacted(p, dry_run, change), data=data)


@handles_errors
def links(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A note's slug, a role's name, or a vault path (memories/SLUG, agents/ROLE.md).",
                                        show_default=False)],
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show a file's wikilinks and its backlinks, resolved the way Obsidian resolves them.

    A link is [[target]], [[target|text]], [[target#Heading]] or [[target#^block-id]]. The
    target is a path from the vault's top, else a file name anywhere (the shortest path
    first), else a note's alias. A block id or heading the target lacks is a broken link,
    said so with its line.

    Example: vaultmem links 前端审查
    """
    s = session(ctx, vault, as_, json_)
    from ... import views

    found = views.links(s.open(), name)
    s.emit(found, render.links)


@handles_errors
def timeline(
    ctx: typer.Context,
    role: Annotated[Optional[str], typer.Argument(help="Only this role: its page's entries, the log and decision "
                                                  "entries it signed, its own notes. Default: the whole vault.",
                                                  show_default=False)] = None,
    since: Annotated[Optional[str], typer.Option(help="Only from this day on (YYYY-MM-DD).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show what happened in order: dated page entries, decisions, live-log entries and notes.

    Each line: when, what kind, who, the first line of it, and where it is (a link or
    file:line). Read only.

    Example: vaultmem timeline 前端审查 --since 2026-05-01
    """
    s = session(ctx, vault, as_, json_)
    from ... import views

    s.emit(views.timeline(s.open(), role, since), render.timeline)


@handles_errors
def doctor(
    ctx: typer.Context,
    fix: Annotated[bool, typer.Option("--fix", help="Repair what is mechanical and safe (MEMORY.md's lines, in a "
                                      "commit of its own; the index, rebuilt); say what is left for a human.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Check the vault's health: exit 0 when every check passes, 1 when one does not.

    Files that do not parse (file and line), MEMORY.md against the active notes (a line
    without its note, a note without its line), broken wikilinks and block ids, the index,
    the logs' signatures and chains, secrets in uncommitted files, delegations and inbox
    items waiting for a human, files larger than memory.max_note_bytes.

    --fix (a human only) repairs MEMORY.md's lines in one commit and rebuilds an index that
    cannot be opened; everything else is left for a human, and listed.

    Example: vaultmem doctor --fix
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    from ... import upkeep

    report = upkeep.doctor(v, fix=fix, actor=v.actor(s.agent) if fix else None)
    s.emit(report, render.doctor)
    if not report["ok"]:
        raise typer.Exit(1)


@handles_errors
def stats(
    ctx: typer.Context,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show the vault at a glance, and how well its memory serves.

    Notes by type and status; each role page's size, entries and whether a section is
    over its budget (then 'vaultmem compact ROLE'); inbox items and delegations waiting;
    log entries per agent; the index's and the vectors' size on disk.

    And from this machine's usage data (each brief and search is recorded: when, who, a
    fingerprint of what was asked — never its text — and what it cited): the recall hit
    rate (briefs with a cited item used afterwards: found again by a search, or a note
    confirmed later), the repeated-question rate (questions asked again in another session,
    30 minutes or more apart; the live log's questions count too) and the correction rate
    (agent-written notes a user's note superseded). docs/forgetting.md says more.

    Example: vaultmem stats --json
    """
    s = session(ctx, vault, as_, json_)
    from ... import views

    s.emit(views.stats(s.open()), render.stats)
