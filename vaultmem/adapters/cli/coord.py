"""``vaultmem keys / log / decide / state / checkpoint / sync``: coordinating agents."""

from functools import partial
from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, echo, echo_json, handles_errors, read_text_arg, session

keys_app = typer.Typer(help="Ed25519 keys that sign each agent's log entries.", no_args_is_help=True)
log_app = typer.Typer(help="The shared live-context log: signed, append-only, one file per agent.",
                      no_args_is_help=True)
state_app = typer.Typer(help="The shared project-state file.", no_args_is_help=True)
checkpoint_app = typer.Typer(help="An agent's working-context checkpoint, for resuming after a crash.",
                             no_args_is_help=True)

AgentArg = Annotated[str, typer.Argument(help="The agent.", show_default=False)]


@keys_app.command("new")
@handles_errors
def keys_new(ctx: typer.Context, agent: AgentArg, vault: VaultOpt = None, as_: AsOpt = None,
             json_: JsonOpt = False) -> None:
    """Create AGENT's key pair: private key in .vaultmem/keys/ (0600, never committed),
    public key in shared/keys/AGENT.pub (committed, so every clone can verify)."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.shared.new_key(agent, v.actor(s.agent))
    s.emit(change, render.key_created)


@keys_app.command("rotate")
@handles_errors
def keys_rotate(ctx: typer.Context, agent: AgentArg, vault: VaultOpt = None, as_: AsOpt = None,
                json_: JsonOpt = False) -> None:
    """Replace AGENT's key: the new public key is announced in a log entry signed with the old one."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    out = v.shared.rotate_key(agent, v.actor(s.agent))
    s.emit(out, render.key_rotated)


@keys_app.command("revoke")
@handles_errors
def keys_revoke(ctx: typer.Context, agent: AgentArg,
                kid: Annotated[str, typer.Argument(help="The key id to retire.", show_default=False)],
                reason: Annotated[str, typer.Option(help="Why (kept in the entry).")] = "",
                vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Retire one of AGENT's old keys in an entry signed with its current key."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    e = v.shared.revoke_key(agent, kid, v.actor(s.agent), reason)
    s.emit(e, partial(render.key_revoked, agent=agent, kid=kid))


@log_app.command("append")
@handles_errors
def log_append(
    ctx: typer.Context,
    summary: Annotated[str, typer.Option(help="One line: what happened in this turn.", show_default=False)],
    channel: Annotated[str, typer.Option(help="Channel, e.g. general, backend, handoff.")] = "general",
    type_: Annotated[str, typer.Option("--type", help="Entry type: status, question, answer, decision, handoff …")] = "status",
    body: Annotated[Optional[str], typer.Option(help="Details ('-' reads standard input).")] = None,
    ref: Annotated[Optional[str], typer.Option(help="An entry this one answers or refers to (agent#seq).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Append a signed entry (agent, channel, type, summary, timestamp, sequence, chain, nonce, signature).

    Example: vaultmem log append --as ella --channel backend --type status --summary "API v2 schema merged"
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    e = v.shared.append(v.actor(s.agent), channel, type_, summary, read_text_arg(body) if body else "", ref=ref)
    s.emit(e, render.appended)


@log_app.command("tail")
@handles_errors
def log_tail(
    ctx: typer.Context,
    n: Annotated[int, typer.Option("-n", help="How many entries.")] = 20,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing new entries as they arrive.")] = False,
    agent: Annotated[Optional[str], typer.Option(help="Only this agent's entries.")] = None,
    channel: Annotated[Optional[str], typer.Option(help="Only this channel.")] = None,
    type_: Annotated[Optional[str], typer.Option("--type", help="Only this type.")] = None,
    since: Annotated[Optional[str], typer.Option(help="Only entries since: 2026-05-08, 2026-05-08T10:00Z, 30m, 2h, 3d.")] = None,
    unseen: Annotated[bool, typer.Option("--unseen", help="Only other agents' entries that --as has not read; marks them read.")] = False,
    decisions: Annotated[bool, typer.Option("--decisions", help="The decision log instead of the live log.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """The newest entries, oldest first, read from the end of each file (fast at any length)."""
    from ... import livelog

    s = session(ctx, vault, as_, json_)
    v = s.open()
    log = "decisions" if decisions else "live"
    # where following starts is taken before the tail is read: an entry appended while the
    # tail is printed is then followed, not lost (and one both read and followed is shown once)
    offsets = {a: p.stat().st_size for a, p in livelog.log_files(v.root, log).items()} if follow else {}
    entries = v.shared.tail(n, agent=agent, channel=channel, type_=type_, since=since,
                            unseen_as=v.actor(s.agent) if unseen else None, log=log)
    if s.json:
        for e in entries:
            echo_json(e.to_dict(), indent=None)
    else:
        for e in entries:
            echo(render.log_line(e))
        if not entries and not follow:
            echo("no entries" + (" you have not seen" if unseen else ""), err=True)
    if not follow:
        return
    printed = {e.nonce for e in entries}
    checker = livelog.Checker(v.root)
    try:
        for e in livelog.wait_for_new(v.root, log, offsets):
            if e.nonce in printed:
                continue
            if e.type.startswith("key-"):
                checker = livelog.Checker(v.root)  # a rotation or revocation changes what checks out
            if (agent and e.agent != agent) or (channel and e.channel != channel) or (type_ and e.type != type_):
                continue
            checker.mark([e])
            echo_json(e.to_dict(), indent=None) if s.json else echo(render.log_line(e))
    except KeyboardInterrupt:
        pass


@log_app.command("ack")
@handles_errors
def log_ack(ctx: typer.Context,
            entry: Annotated[str, typer.Argument(help="The entry acknowledged: agent#seq.", show_default=False)],
            note: Annotated[str, typer.Option(help="What you take up from it (default: its summary).")] = "",
            vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Record that --as has seen and taken up another agent's entry."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    e = v.shared.ack(v.actor(s.agent), entry, note)
    s.emit(e, partial(render.acked, entry=entry))


@log_app.command("verify")
@handles_errors
def log_verify(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Check every signature, sequence, chain and high-water mark; exit 1 on any finding.

    Finds edited entries (one byte is enough), deleted, reordered, duplicated or replayed
    entries, unknown keys, entries claiming another agent's name and truncated tails.
    """
    s = session(ctx, vault, as_, json_)
    findings, counts = s.open().shared.verify()

    s.emit((findings, counts), render.verified, data={"ok": not findings, "findings": findings, **counts})
    if findings:
        raise typer.Exit(1)


@log_app.command("repair")
@handles_errors
def log_repair(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Cut a log's torn tail (a write that never finished) back to its last whole entry."""
    s = session(ctx, vault, as_, json_)
    cut = s.open().shared.repair()
    s.emit(cut, render.repaired, data={"repaired": cut})


@log_app.command("commit")
@handles_errors
def log_commit(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Commit new log entries now (sync does this too)."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    sha = v.shared.commit_logs(v.actor(s.agent))
    s.emit(sha, render.logs_committed, data={"commit": sha})


@handles_errors
def decide(
    ctx: typer.Context,
    decision: Annotated[str, typer.Option(help="The decision, in one line.", show_default=False)],
    why: Annotated[str, typer.Option(help="The rationale.", show_default=False)],
    supersedes: Annotated[Optional[str], typer.Option(help="The decision it replaces (agent#seq in the decision log).")] = None,
    channel: Annotated[str, typer.Option(help="Channel of the live-log note.")] = "decisions",
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Record a decision in the decision log (when, who, decision, rationale), signed, and note it in the live log."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    d, live = v.shared.decide(v.actor(s.agent), decision, why, supersedes=supersedes, channel=channel)
    s.emit((d, live), render.decided, data={"decision": d.to_dict(), "live": live.to_dict()})


@state_app.command("show")
@handles_errors
def state_show(ctx: typer.Context, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Print the project state and who changed it last."""
    s = session(ctx, vault, as_, json_)
    st = s.open().shared.state()
    s.emit(st, render.state)


@state_app.command("set")
@handles_errors
def state_set(ctx: typer.Context,
              text: Annotated[str, typer.Argument(help="The new project state ('-' reads standard input).")],
              vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Replace the project state (one commit, authored by --as)."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change = v.shared.set_state(read_text_arg(text), v.actor(s.agent))
    s.emit(change, render.state_set)


@checkpoint_app.command("save")
@handles_errors
def checkpoint_save(
    ctx: typer.Context,
    file: Annotated[Optional[str], typer.Argument(help="Working context to keep: a file, or '-' for standard input.")] = None,
    task: Annotated[Optional[str], typer.Option(help="The task in progress.")] = None,
    step: Annotated[Optional[str], typer.Option(help="The step reached.")] = None,
    next_: Annotated[Optional[list[str]], typer.Option("--next", help="A next step (repeatable).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Overwrite --as's checkpoint atomically (checkpoints/AGENT.md), with what it has read of the log."""
    from pathlib import Path

    s = session(ctx, vault, as_, json_)
    v = s.open()
    text = ""
    if file == "-":
        text = read_text_arg("-")
    elif file:
        from ... import files

        try:
            text = files.read_text(Path(file), file)
        except FileNotFoundError:
            from ...errors import NotFound

            raise NotFound(f"no file {file}", path=file) from None
    change = v.shared.save_checkpoint(v.actor(s.agent), text, task=task, step=step, next_steps=next_ or [])
    s.emit(change, render.checkpoint_saved)


@checkpoint_app.command("show")
@handles_errors
def checkpoint_show(ctx: typer.Context, agent: AgentArg, vault: VaultOpt = None, as_: AsOpt = None,
                    json_: JsonOpt = False) -> None:
    """Print AGENT's checkpoint for a resumed session; an old one is marked STALE."""
    s = session(ctx, vault, as_, json_)
    cp = s.open().shared.checkpoint(agent)

    s.emit(cp, render.checkpoint)


@handles_errors
def sync(ctx: typer.Context,
         remote: Annotated[str, typer.Option(help="The git remote.")] = "origin",
         vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Commit new log entries, pull and merge the remote, push. Logs never conflict; any
    other conflicting file stops the sync with the files named, and nothing is half-merged."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    r = v.shared.sync(v.actor(s.agent), remote=remote)
    s.emit(r, render.synced)
