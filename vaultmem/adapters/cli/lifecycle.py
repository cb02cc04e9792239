"""``vaultmem delegate / harvest / audit / ask / todo / history``: the delegation
lifecycle and the orchestrator's management commands."""

from functools import partial
from typing import Annotated, Optional

import typer

from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, session, stdin_text

RoleArg = Annotated[str, typer.Argument(help="The role.", show_default=False)]


@handles_errors
def delegate(
    ctx: typer.Context,
    role: RoleArg,
    task: Annotated[str, typer.Option(help="What the sub-agent is to do.", show_default=False)],
    window: Annotated[Optional[int], typer.Option(help="Context window of the sub-agent, in tokens.")] = None,
    tokens: Annotated[Optional[int], typer.Option("--tokens", help="Hard cap on its brief, in tokens.")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Record a pending delegation under ROLE and print its id and the sub-agent's brief.

    The sub-agent inherits the role's memory; it gets no page of its own. Harvest its
    result with 'vaultmem harvest'. Example: vaultmem delegate 前端审查 --task "分析Dashboard性能" --as lee
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change, brief = v.lifecycle.delegate(role, task, v.actor(s.agent), window=window, tokens=tokens)
    s.emit((change, brief), render.delegated, data={**change.to_dict(), "brief": brief.to_dict()})


def _stdin_fields() -> dict:
    from ...parse.document import load_yaml_fast

    data = load_yaml_fast(stdin_text(), "stdin", first_line=1)
    if not isinstance(data, dict):
        from ...errors import BadInput

        raise BadInput("standard input must hold task, conclusion, output and decision as YAML or JSON")
    return {str(k): "" if v is None else str(v) for k, v in data.items()}


@handles_errors
def harvest(
    ctx: typer.Context,
    role: RoleArg,
    delegation: Annotated[str, typer.Option(help="The delegation id (d-YYYYMMDD-xxxxxx).", show_default=False)],
    task: Annotated[Optional[str], typer.Option(help="任务: what the sub-agent did.")] = None,
    conclusion: Annotated[Optional[str], typer.Option(help="结论: what it concluded.")] = None,
    output: Annotated[Optional[str], typer.Option(help="产出: what it produced.")] = None,
    decision: Annotated[Optional[str], typer.Option(help="关键决策: the key decision.")] = None,
    title: Annotated[Optional[str], typer.Option(help="Heading of the record (default: the task).")] = None,
    stdin: Annotated[bool, typer.Option("--stdin", help="Read the four fields as JSON/YAML from standard input.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Write a sub-agent's result (task, conclusion, output, key decision — all four) into
    ROLE's sub-agent records and close the delegation, in one commit."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    fields = _stdin_fields() if stdin else {}
    for key, value in (("task", task), ("conclusion", conclusion), ("output", output), ("decision", decision)):
        if value is not None:
            fields[key] = value
    change = v.lifecycle.harvest(role, delegation, fields, v.actor(s.agent), title=title or fields.get("title"))
    s.emit(change, partial(render.harvested, delegation=delegation))


@handles_errors
def audit(
    ctx: typer.Context,
    max_age: Annotated[Optional[float], typer.Option("--max-age", help="Hours after which a pending delegation is listed (default: lifecycle.delegation_max_age_hours).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """What needs a human: delegations never harvested, inbox items waiting, commits to role
    pages by agents other than the orchestrator, notes without provenance. Exit 1 if any."""
    s = session(ctx, vault, as_, json_)
    report = s.open().lifecycle.audit(max_age)

    s.emit(report, render.audit)
    if not report["clean"]:
        raise typer.Exit(1)


@handles_errors
def ask(
    ctx: typer.Context,
    role: RoleArg,
    question: Annotated[str, typer.Argument(help="The question about the role's memory.", show_default=False)],
    n: Annotated[int, typer.Option("-n", help="How many entries.")] = 5,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Quick Q&A: what ROLE's brief draws on (its own entries and notes, global and shared
    memory — never another role's page) most relevant to the question, with citations.

    When nothing there is relevant, the journal's relevant turns follow (for you and the
    orchestrator), marked "from the journal"; when the journal has none either, it says
    nothing is known."""
    s = session(ctx, vault, as_, json_)
    v = s.open()
    hits = v.lifecycle.ask(role, question, limit=n, asker=v.actor(s.agent))
    s.emit(hits, render.answers, data={"role": role, "question": question, "hits": [h.to_dict() for h in hits],
                                       "journal_searched": hits.journal_searched})


@handles_errors
def todo(ctx: typer.Context, role: RoleArg, vault: VaultOpt = None, as_: AsOpt = None, json_: JsonOpt = False) -> None:
    """Open items of ROLE: entries that say work is still to do, and delegations not yet harvested.

    Open: an unchecked box, TODO, FIXME, 待办, 未解决, 遗留问题 anywhere, or a label such as
    "后续：", "Follow-up:", "pending:" opening the entry or a clause; "…，后续审查重点关注" in a
    lesson is not an open item.
    """
    s = session(ctx, vault, as_, json_)
    out = s.open().lifecycle.todo(role)

    s.emit(out, render.todo)


@handles_errors
def history(
    ctx: typer.Context,
    role: RoleArg,
    diffs: Annotated[bool, typer.Option("--diffs", help="Show what each commit changed.")] = False,
    n: Annotated[int, typer.Option("-n", help="How many commits.")] = 50,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """ROLE's page history from git: who changed what, when — for diagnosing a role."""
    s = session(ctx, vault, as_, json_)
    commits = s.open().lifecycle.history(role, diffs=diffs, max_count=n)

    s.emit(commits, partial(render.history, diffs=diffs), data={"role": role, "commits": commits})
