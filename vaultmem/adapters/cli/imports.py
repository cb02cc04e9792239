"""``vaultmem import``: another tool's memory, filed in the review inbox (docs/import.md)."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import AsOpt, JsonOpt, VaultOpt, echo, handles_errors, session

app = typer.Typer(
    help=("Import another tool's memory into the review inbox: Claude Code, Hermes, basic-memory, or JSON "
          "lines (mem0 exports and anything else). Every item waits for review, with the file and line it "
          "came from; --dry-run shows what would be filed; importing twice files nothing new."),
    no_args_is_help=True,
)

DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show exactly what would be filed; write nothing.")]
SHOWN_ITEMS = 50  # a real import lists this many items; the inbox has them all


def _run(ctx: typer.Context, source: str, path: str | None, dry_run: bool, vault, as_, json_,
         memory_dir: Path | None = None) -> None:
    s = session(ctx, vault, as_, json_)
    v = s.open()
    from ... import importers

    change = importers.run(v, source, path, v.actor(s.agent), dry_run=dry_run, memory_dir=memory_dir,
                             progress=lambda message: echo(f"import: {message}", err=True))
    for note in change.details.get("notes") or []:
        echo(f"note: {note}", err=True)
    s.emit(change, imported)


def _counts(d: dict) -> str:
    parts = []
    if d["quarantined"]:
        parts.append(f"{d['quarantined']} quarantined (third-party)")
    if d["flagged"]:
        parts.append(f"{d['flagged']} flagged")
    if d["already"]:
        parts.append(f"{d['already']} already imported")
    if d["skipped"]:
        parts.append(f"{len(d['skipped'])} skipped (see the warnings)")
    return "; ".join(parts)


_KIND = {"user": "user-stated", "agent": "agent-inferred", "third_party": "third-party", "unknown": "unknown source"}


def imported(change) -> str:
    """How an import reads for a person: what was filed (or, in a dry run, each item in
    full: what would be filed, exactly)."""
    d = change.details
    counts = _counts(d)
    if d["dry_run"]:
        lines = [f"dry run: would file {d['new']} new item{'' if d['new'] == 1 else 's'} from {d['source']} "
                 f"({d['root']}); nothing written" + (f"; {counts}" if counts else "")]
        for n, item in enumerate(d["items"], 1):
            marks = [f"{item['type']}", _KIND.get(item["author_kind"], item["author_kind"]),
                     f"by {item['author']}"] + ([f"for role {item['agent']}"] if item.get("agent") else [])
            lines.append(f"[{n}] {' · '.join(marks)} — {item['source']}")
            lines.append(f"    name: {item['name']}")
            if item["tags"]:
                lines.append(f"    tags: {', '.join(item['tags'])}")
            if item["quarantined"]:
                lines.append("    quarantined: third-party content; only a human can promote it")
            if item["flags"]:
                lines.append(f"    flagged: {'; '.join(item['flags'])}")
            lines.extend(f"    | {line}" for line in item["text"].splitlines())
        return "\n".join(lines)
    if not d["items"]:
        return f"{change.message}" + (f"; {counts}" if counts else "")
    lines = [f"imported from {d['source']} ({d['root']}): {d['new']} new item{'' if d['new'] == 1 else 's'} "
             f"filed in inbox/ (commit {change.commit[:8]})" + (f"; {counts}" if counts else "")]
    for item in d["items"][:SHOWN_ITEMS]:
        if item["status"] == "approved":
            lines.append(f"  {item['id']}: approved at once (trusted agent, user-stated) → {item['result']}")
            continue
        marks = (["quarantined: third-party"] if item["quarantined"] else []) + \
            ([f"flagged: {'; '.join(item['flags'])}"] if item["flags"] else [])
        lines.append(f"  {item['id']}: {item['summary']} — waiting for review"
                     + (f" ({', '.join(marks)})" if marks else ""))
    if len(d["items"]) > SHOWN_ITEMS:
        lines.append(f"  … and {len(d['items']) - SHOWN_ITEMS} more: vaultmem review list")
    if d.get("pending"):
        lines.append("a reviewer decides with: vaultmem review show ID / approve ID / reject ID --reason …")
    return "\n".join(lines)


@app.command("claude-code")
@handles_errors
def claude_code(
    ctx: typer.Context,
    path: Annotated[Optional[str], typer.Argument(help="The project folder (default: $CLAUDE_PROJECT_DIR, else the current folder), or an auto-memory folder holding MEMORY.md.", show_default=False)] = None,
    memory_dir: Annotated[Optional[Path], typer.Option("--memory-dir", help="Claude Code's auto-memory folder for the project (default: ~/.claude/projects/<project>/memory).", show_default=False)] = None,
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Import a project's Claude Code memory: the auto memory (MEMORY.md and its topic
    files, by their type: user, feedback, project, reference), CLAUDE.md, and
    .claude/agent-memory/NAME/ (memory of the role NAME).

    Example: vaultmem import claude-code ~/src/shop --dry-run
    """
    _run(ctx, "claude-code", path, dry_run, vault, as_, json_, memory_dir=memory_dir)


@app.command("hermes")
@handles_errors
def hermes(
    ctx: typer.Context,
    path: Annotated[Optional[str], typer.Argument(help="Hermes' home or its memories/ folder (default: $HERMES_HOME, else ~/.hermes).", show_default=False)] = None,
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Import Hermes Agent's memory: MEMORY.md (the agent's notes) and USER.md (the
    user's profile), entries separated by a line holding only §.

    Example: vaultmem import hermes ~/.hermes
    """
    _run(ctx, "hermes", path, dry_run, vault, as_, json_)


@app.command("basic-memory")
@handles_errors
def basic_memory(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="The basic-memory project folder of Markdown notes.", show_default=False)],
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Import a basic-memory project: each observation '- \\[category] text #tag
    (context)' an item, each note's relations '- relation_type [[Target]]' kept as
    links, the rest of its text by paragraph.

    Example: vaultmem import basic-memory ~/basic-memory --dry-run
    """
    _run(ctx, "basic-memory", path, dry_run, vault, as_, json_)


@app.command("jsonl")
@handles_errors
def jsonl(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="FILE", help="One JSON object per line (text or memory, type, created_at, user_id, agent_id, metadata …).", show_default=False)],
    dry_run: DryRunOpt = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Import JSON lines, one memory per line: a mem0 export or anything else
    (fields: docs/import.md).

    Example: vaultmem import jsonl mem0-export.jsonl --as lee
    """
    _run(ctx, "jsonl", path, dry_run, vault, as_, json_)

