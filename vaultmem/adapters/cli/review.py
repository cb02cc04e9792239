"""``vaultmem retain`` and ``vaultmem review``: the human gate in front of memory."""

import sys
from functools import partial
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, echo, handles_errors, session, stdin_text, without_secrets

app = typer.Typer(
    help=("Review what agents want remembered: list the inbox, show an item, approve it (with edits), "
          "edit it, or reject it with a reason. 'vaultmem review -i' walks the waiting items with prompts."),
    invoke_without_command=True,
)

IdArg = Annotated[str, typer.Argument(help="The item id (i-YYYYMMDD-xxxxxx).", show_default=False)]
TextOpt = Annotated[Optional[str], typer.Option("--text", help="New text of the fact or entry.")]
TypeOpt = Annotated[Optional[str], typer.Option("--type", help="New memory type.")]
NameOpt = Annotated[Optional[str], typer.Option("--name", help="New title (and file name).")]
DescOpt = Annotated[Optional[str], typer.Option("--description", help="New one-line description for MEMORY.md.")]
AliasOpt = Annotated[Optional[list[str]], typer.Option("--alias", help="Aliases (repeatable; replace the item's).")]
TagOpt = Annotated[Optional[list[str]], typer.Option("--tag", help="Tags (repeatable; replace the item's).")]
KeyOpt = Annotated[Optional[str], typer.Option("--key", help="New key such as backend.port.")]
ImpOpt = Annotated[Optional[float], typer.Option("--importance", help="New importance, 0..1.")]


def _edits(text, type_, name, description, alias, tag, key, importance) -> dict:
    return {"text": text, "type": type_, "name": name, "description": description, "aliases": alias or None,
            "tags": tag or None, "key": key, "importance": importance}


@handles_errors
def retain(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="YAML or JSON list of facts; '-' (the default) reads standard input.")] = "-",
    session_: Annotated[Optional[str], typer.Option("--session", help="The session the facts come from (kept as their source).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """File the facts an agent curated at the end of a session as inbox items for review.

    Each item: type (decision, fact, failure+fix, preference …), text, author (who said
    it), author_kind (user, agent, third_party, unknown), source, and optionally said
    (when), name, description, aliases, tags, key, importance, scope/agent/project; op
    replace or remove with target SLUG. Third-party items are quarantined; instruction-like
    text is flagged; secrets are redacted. Nothing is filed if any item is bad.

    Example: vaultmem retain facts.yaml --as lee --session s-42
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    if file == "-":
        text, name = stdin_text(), "stdin"
    else:
        from ...errors import NotFound
        from ...files import read_text

        try:
            text, name = read_text(Path(file), file), file
        except FileNotFoundError:
            raise NotFound(f"no file {file}", path=file) from None
        except IsADirectoryError:
            raise NotFound(f"{file} is a folder, not a file of facts", path=file) from None
    change = v.inbox.retain(v.actor(s.agent), text, name, session=session_)
    s.emit(change, render.proposed)


@app.callback()
@handles_errors
def review(
    ctx: typer.Context,
    interactive: Annotated[bool, typer.Option("-i", "--interactive", help="Walk the waiting items: approve, edit, reject or skip each.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Without a subcommand: list the items waiting for review (or walk them with -i)."""
    if ctx.invoked_subcommand is not None:
        ctx.find_root().obj = session(ctx, vault, as_, json_)  # group options reach the subcommand
        return
    s = session(ctx, vault, as_, json_)
    if interactive:
        _walk(s)
    else:
        _list(s, "pending")


def _list(s, status: str) -> None:
    items = s.open().inbox.listing(status)  # what vaultmem filed, a change since marked
    groups = render.inbox_groups(items)
    s.emit(items, partial(render.inbox, status=status), data={"status": status, "items": items, "groups": groups})


@app.command("list")
@handles_errors
def list_(
    ctx: typer.Context,
    status: Annotated[str, typer.Option(help="pending, approved, rejected or all.")] = "pending",
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """List inbox items (waiting ones by default; decided ones are in archive/inbox/)."""
    from ...errors import BadInput

    if status not in ("pending", "approved", "rejected", "all"):
        raise BadInput(f"{status!r} is not pending, approved, rejected or all", field="status")
    _list(session(ctx, vault, as_, json_), status)


@app.command("show")
@handles_errors
def show(ctx: typer.Context, item_id: IdArg, vault: VaultOpt = None, as_: AsOpt = None,
         json_: JsonOpt = False) -> None:
    """Show one item in full: the operation, its provenance, flags and text."""
    s = session(ctx, vault, as_, json_)
    inbox = s.open().inbox
    item = inbox.describe(inbox.get(item_id))
    s.emit(item, render.inbox_item)


OptIdArg = Annotated[Optional[str], typer.Argument(help="The item id (i-YYYYMMDD-xxxxxx); or a group: --session, --flagged.",
                                                     show_default=False)]
GroupSessionOpt = Annotated[Optional[str], typer.Option("--session", help="Decide every item filed in this session (a human only).")]
FlaggedOpt = Annotated[bool, typer.Option("--flagged", help="Decide every item flagged as instruction-like (a human only).")]


def _one_or_group(item_id, session_, flagged, edits: dict) -> bool:
    """Whether the command decides a group: an id, or --session / --flagged, not both."""
    from ...errors import BadInput

    group = session_ is not None or flagged
    if group and item_id:
        raise BadInput("give an item id or a group (--session, --flagged), not both", field="session")
    if not group and not item_id:
        raise BadInput("which item? give its id, or a group: --session S or --flagged", field="item_id",
                       hint="the waiting items and their groups: vaultmem review")
    if group and any(x not in (None, [], ()) for x in edits.values()):
        raise BadInput("a group is decided as filed: edit an item by its id", field="text")
    return group


@app.command("approve")
@handles_errors
def approve(ctx: typer.Context, item_id: OptIdArg = None, session_: GroupSessionOpt = None, flagged: FlaggedOpt = False,
            text: TextOpt = None, type_: TypeOpt = None, name: NameOpt = None,
            description: DescOpt = None, alias: AliasOpt = None, tag: TagOpt = None, key: KeyOpt = None,
            importance: ImpOpt = None, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Approve an item (optionally with edits): one commit by you writes the note and its
    MEMORY.md line (or the replacement, removal, page entry, sub-agent record) and archives the item.
    With --session S or --flagged, a human approves the whole group in one commit that lists each item.

    Example: vaultmem review approve i-20261201-3fa2c1 --name "backend port"; vaultmem review approve --session s-42
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    edits = _edits(text, type_, name, description, alias, tag, key, importance)
    if _one_or_group(item_id, session_, flagged, edits):
        s.emit(v.inbox.decide_group(v.actor(s.agent), True, session=session_, flagged=flagged), render.group_decided)
        return
    change = v.inbox.approve(item_id, v.actor(s.agent), **edits)
    s.emit(change, render.approved)


@app.command("edit")
@handles_errors
def edit(ctx: typer.Context, item_id: IdArg, text: TextOpt = None, type_: TypeOpt = None, name: NameOpt = None,
         description: DescOpt = None, alias: AliasOpt = None, tag: TagOpt = None, key: KeyOpt = None,
         importance: ImpOpt = None, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Change a waiting item without deciding it (it stays in the inbox)."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.inbox.edit(item_id, v.actor(s.agent), **_edits(text, type_, name, description, alias, tag, key,
                                                               importance))
    s.emit(change, partial(render.edited, item_id=item_id))


@app.command("reject")
@handles_errors
def reject(
    ctx: typer.Context,
    reason: Annotated[str, typer.Option(help="Why (kept with the archived item).", show_default=False)],
    item_id: OptIdArg = None,
    session_: GroupSessionOpt = None,
    flagged: FlaggedOpt = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Reject an item: it moves to archive/inbox/ with the reason; memory does not change.
    With --session S or --flagged, a human rejects the whole group in one commit that lists each item."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    if _one_or_group(item_id, session_, flagged, {}):
        s.emit(v.inbox.decide_group(v.actor(s.agent), False, session=session_, flagged=flagged, reason=reason),
               render.group_decided)
        return
    change = v.inbox.reject(item_id, v.actor(s.agent), reason)
    s.emit(change, partial(render.rejected, item_id=item_id))


def _walk(s) -> None:
    """The interactive review: each waiting item, then a choice. Exit 1 if any decision
    failed (the item stays waiting)."""
    from rich.console import Console

    from ...errors import BadInput

    if s.json:
        raise BadInput("-i is interactive and has no JSON output",
                       hint="for programs: vaultmem review list --json, then approve/reject by id")
    console = Console(highlight=False)
    v = s.open()
    actor = v.actor(s.agent)
    done = {"approved": [], "rejected": [], "skipped": [], "failed": []}
    items = v.inbox.items()
    if items and not sys.stdin.isatty():  # answers from a pipe or a paste would take the lines meant for what follows
        raise BadInput("-i reads its answers from a terminal, and standard input is not a terminal",
                       hint="decide by id instead: vaultmem review list, then vaultmem review approve ID "
                            "or vaultmem review reject ID --reason …")
    if not items:
        console.print("the inbox is empty")
    try:
        _decide_each(v, actor, items, done, console)
    except EOFError:  # input ended: what was decided stays decided
        pass
    console.print(", ".join(f"{len(done[k])} {k}" for k in ("approved", "rejected", "skipped", "failed")))
    for warning in done.get("warnings", []):
        echo(f"warning: {warning}", err=True)
    raise typer.Exit(1 if done["failed"] else 0)


def _ask_text(prompt, label: str, default: str, console) -> str:
    """A one-line prompt for text that may span lines: type \\n for a line break."""
    answer = prompt.ask(f"{label} (\\n for a new line; Enter keeps it)", default=default.replace("\n", "\\n"),
                        console=console, show_default=False)  # the default is not shown: nothing raw printed
    return answer.replace("\\n", "\n")


def _ask_shown(prompt, label: str, default: str, console) -> str:
    """A prompt whose default comes from a vault file: shown with its control characters
    as stand-ins (:func:`vaultmem.adapters.edge.printable`), Enter keeps the value itself."""
    from .. import edge

    shown = edge.printable(default)
    answer = prompt.ask(label, default=shown, console=console)
    return default if answer == shown else answer


def _decide_each(v, actor, items, done: dict, console) -> None:
    from rich.markup import escape
    from rich.panel import Panel
    from rich.prompt import Prompt
    from rich.text import Text

    from .. import edge
    from ...errors import VaultmemError

    for n, item in enumerate(items, 1):
        if item.op == "unreadable":
            console.print(Text(edge.printable(f"[{n}/{len(items)}] {item.path}: {item.meta.get('problem')} — fix or "
                                               f"reject it (vaultmem review reject {item.id} --reason …)")))
            done["skipped"].append(item.id)
            continue
        console.print(Panel(Text(edge.printable(render.inbox_item(v.inbox.describe(item)))),
                            title=escape(edge.printable(f"[{n}/{len(items)}] {item.id}")), expand=False))
        editable = item.op != "harvest"
        choices = ["a", "e", "r", "s", "q"] if editable else ["a", "r", "s", "q"]
        label = "approve, edit then approve, reject, skip or quit" if editable else "approve, reject, skip or quit"
        choice = Prompt.ask(label, choices=choices, default="s", console=console)
        try:
            if choice == "a":
                change = v.inbox.approve(item.id, actor)
                done.setdefault("warnings", []).extend(change.warnings)
                console.print(Text(edge.printable(f"approved → {change.details['result']}")))
                done["approved"].append(item.id)
            elif choice == "e":
                edits = {"text": _ask_text(Prompt, "text", item.text, console)}
                if item.op in ("add", "replace"):
                    note = item.meta["note"]
                    edits["type"] = Prompt.ask("type", default=str(note.get("type")),
                                               choices=list(v.config.note_types), console=console)
                    edits["name"] = _ask_shown(Prompt, "name", str(note.get("name")), console)
                    edits = {k: x for k, x in edits.items()
                             if x != (item.text if k == "text" else str(note.get(k)))}  # only what changed
                elif edits["text"] == item.text:
                    edits = {}
                change = v.inbox.approve(item.id, actor, **edits)
                done.setdefault("warnings", []).extend(change.warnings)
                console.print(Text(edge.printable(f"approved{' with edits' if edits else ''} → {change.details['result']}")))
                done["approved"].append(item.id)
            elif choice == "r":
                reason = ""
                while not reason.strip():
                    reason = Prompt.ask("reason", console=console)
                v.inbox.reject(item.id, actor, reason)
                console.print("rejected")
                done["rejected"].append(item.id)
            elif choice == "s":
                done["skipped"].append(item.id)
            else:
                return
        except VaultmemError as exc:  # reported; the item stays waiting and the walk goes on
            # named as the prompts name them (the library's words), never repeating a secret
            console.print(Text(edge.printable(without_secrets(edge.error_text(exc)))))
            done["failed"].append(item.id)
