"""``vaultmem index / search / brief / dispatch / eval / watch``: recall."""

from functools import partial
from pathlib import Path
from typing import Annotated, Optional

import typer

from ... import limits
from . import render
from ._common import AsOpt, JsonOpt, VaultOpt, echo, echo_json, handles_errors, session

WindowOpt = Annotated[Optional[int], typer.Option(help="Context window of the agent, in tokens (default: brief.window).")]
RatioOpt = Annotated[Optional[float], typer.Option(help="Share of the window a brief may use (default: brief.ratio, 0.3).")]
TokensOpt = Annotated[Optional[int], typer.Option("--tokens", help="Hard cap on the brief, in tokens.")]


@handles_errors
def index(
    ctx: typer.Context,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Build a fresh index beside the live one and swap it in.")] = False,
    engine: Annotated[Optional[str], typer.Option(help="With --rebuild: build on whoosh or tantivy (kept until the next --engine), or auto (by the vault's size).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Bring the search index up to date: only files whose content changed are re-read.

    The index is derived data in .vaultmem/index/ (never committed). Files that cannot be
    read (broken YAML, a missing section) are skipped and listed with file and line.
    With semantic search on (search.semantic, search.model), the documents that changed
    are embedded too; the last line says whether semantic search is on, and why not.
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    if engine is not None and not rebuild:
        from ...errors import BadInput

        raise BadInput("--engine goes with --rebuild", hint=f"vaultmem index --rebuild --engine {engine}")
    if rebuild:
        report = _with_progress(s, lambda progress=None: v.rebuild_index(progress=progress, engine=engine))
    else:
        report = v.refresh_index()
    if not report.skipped:
        report.semantic = v.sync_vectors()  # the vectors go with the index (the model loaded if any changed)
    s.emit(report, render.index_report)


def _with_progress(s, fn):
    import sys

    if s.json or not sys.stderr.isatty():
        return fn()
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("indexing", total=None)
        return fn(progress=lambda done, total: bar.update(task, completed=done, total=total))


@handles_errors
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help='Words to look for, in Chinese, English or both; "exact phrase", -word, a OR b, prefix*.', show_default=False)],
    agent: Annotated[Optional[str], typer.Option(help="Search as this role: its own page and memory plus global and shared memory.")] = None,
    kind: Annotated[Optional[list[str]], typer.Option(help="Only these kinds: note, entry, identity, wiki, skill, journal, shared, checkpoint, inbox, archive, doc (repeatable).")] = None,
    type_: Annotated[Optional[list[str]], typer.Option("--type", help="Only notes of this type (repeatable).")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", help="Only notes with this tag (repeatable: all of them).")] = None,
    status: Annotated[Optional[list[str]], typer.Option("--status", help="Only this status (repeatable); naming superseded or archived includes them.")] = None,
    author_kind: Annotated[Optional[list[str]], typer.Option("--author-kind", help="Only what this kind of author said: user, agent, third_party, unknown (repeatable).")] = None,
    since: Annotated[Optional[str], typer.Option(help="Only documents dated this day (YYYY-MM-DD) or later.")] = None,
    until: Annotated[Optional[str], typer.Option(help="Only documents dated this day (YYYY-MM-DD) or earlier.")] = None,
    where: Annotated[Optional[list[str]], typer.Option("--where", help="Only notes whose frontmatter holds KEY=VALUE, case-insensitive (repeatable: all of them).")] = None,
    n: Annotated[int, typer.Option("-n", help=f"How many hits ({limits.SIZES['limit'].text()}).")] = 10,
    journal: Annotated[bool, typer.Option("--journal", help="Search the journal (whole sessions, never part of a normal search): humans and the orchestrator only.")] = False,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Ranked hits with their source, entry id, a highlighted snippet and the score.

    Each role-page entry is its own hit. Plain words are ranked and any may match;
    the query can also hold:

    \b
      "exact phrase"   its words in a row (stems: "reviewed the PR" finds "review the pr")
      -word, -"a b"    leave out what holds it (billing-api is one word, not an exclusion)
      a OR b           one of them must be there; counts as one word for relevance
      prefix*          words beginning with it (at most 50), e.g. deploy* or 端*

    \b
    Examples:
      vaultmem search 端口 --agent 后端架构
      vaultmem search '"端口固定" -测试' --tag backend
      vaultmem search 'redis OR memcached -cluster' --since 2026-01-01
      vaultmem search 'deploy*' --author-kind user --where project=billing
      vaultmem search "login 500" --journal --since 2026-12-01
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    hits = v.search(query, agent=agent, kinds=tuple(kind or ()), types=tuple(type_ or ()), limit=n,
                    tags=tuple(tag or ()), statuses=tuple(status or ()),
                    author_kinds=tuple(author_kind or ()), since=since, until=until,
                    where=tuple(where or ()), journal=journal, reader=v.agent_name(s.agent))

    s.emit(hits, render.search_hits, data=hits.to_dict(limits.echoed(query)))  # a long query: its beginning


@handles_errors
def brief(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(help="The agent (role) to brief.", show_default=False)],
    task: Annotated[str, typer.Option(help="What the agent is about to do.", show_default=False)],
    project: Annotated[Optional[str], typer.Option(
        help="The project whose context the page shows (default: the projects the task names, else all).",
        show_default=False)] = None,
    window: WindowOpt = None,
    ratio: RatioOpt = None,
    tokens: TokensOpt = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Print the briefing for AGENT's next session: never more than ratio × window tokens.

    In layers: its identity; its own page whole (project context, working memory, the
    latest sub-agent records), newest first, whatever words the task shares with it; the
    memory relevant to the task outside the page (global and shared notes, decisions —
    never another role's page); skills; unseen live-log entries; the memory index. Each
    line cites its source, the whole is fenced as reference data, and a layer cut short
    says what it left out. Example: vaultmem brief 前端审查 --task "审查Dashboard性能"
    """
    s = session(ctx, vault, as_, json_)
    b = s.open().brief(agent, task, window=window, ratio=ratio, tokens=tokens, project=project)
    s.emit(b, render.brief)


@handles_errors
def dispatch(
    ctx: typer.Context,
    role: Annotated[str, typer.Argument(help="The role to dispatch.", show_default=False)],
    task: Annotated[str, typer.Option(help="What the role is dispatched to do.", show_default=False)],
    category: Annotated[Optional[str], typer.Option(help="Category for a new page.")] = None,
    project: Annotated[Optional[str], typer.Option(help="Project of this dispatch (added to the page).")] = None,
    window: WindowOpt = None,
    ratio: RatioOpt = None,
    tokens: TokensOpt = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Dispatch ROLE in one step: create its page on first use, then print its brief.

    Example: vaultmem dispatch 前端性能审计 --task "审查这个React组件的性能" --as lee
    """
    s = session(ctx, vault, as_, json_)
    v = s.open()
    change, b = v.lifecycle.dispatch(role, task, v.actor(s.agent), category=category, project=project,
                           window=window, ratio=ratio, tokens=tokens)
    data = {**b.to_dict(), "page_created": change.details["created"], "page": change.details["path"],
            "commit": change.commit}
    s.emit((change, b), render.dispatched, data=data)


@handles_errors
def eval_(
    ctx: typer.Context,
    queries: Annotated[Path, typer.Argument(help="YAML file: queries with expected notes/entries (expected: [] = no answer).",
                                            show_default=False)],
    at: Annotated[str, typer.Option(help="Evaluate the vault as of this commit ('' = the working tree).")] = "HEAD",
    details: Annotated[bool, typer.Option("--details", help="Also show every query's results.")] = False,
    engine: Annotated[Optional[str], typer.Option(help="Index the frozen copy with whoosh or tantivy (default: the vault's index.engine).")] = None,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Measure retrieval on a frozen copy of the vault: Hit@1/5/10, MRR@10, Recall@5/10, false hits.

    Compare the engines with --engine whoosh and --engine tantivy.

    Fails (exit 1) when Hit@1 ≤ MRR@10 ≤ Hit@1 + (Hit@10 − Hit@1)/2 does not hold.
    """
    s = session(ctx, vault, as_, json_)
    report, frozen = s.open().evaluate(queries, at=at or None, engine=engine)

    s.emit((report, frozen), partial(render.evaluation, details=details),
           data={**report.to_dict(details), "frozen": frozen})
    if report.problems:
        raise typer.Exit(1)


def _stop_on_signals() -> None:
    """Ctrl-C (SIGINT) and SIGTERM stop the watcher cleanly (its heartbeat removed) —
    also when it was started in the background by a shell that set SIGINT to be ignored,
    which Python then leaves ignored."""
    import signal

    def stop(_signum, _frame):
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)  # a second signal must not break the clean stop
        raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)


@handles_errors
def watch(
    ctx: typer.Context,
    debounce: Annotated[float, typer.Option(help="Seconds of quiet before a burst of changes is indexed.")] = 0.2,
    vault: VaultOpt = None,
    as_: AsOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Keep the index fresh while files change (Obsidian, editors, agents, git pull). Ctrl-C or SIGTERM stops.

    Other commands work without it; while it runs they skip their own freshness check.
    """
    from ..watch import Watcher

    s = session(ctx, vault, as_, json_)
    v = s.open()

    def on_sync(report) -> None:
        if not (report.changed or report.problems):
            return
        if s.json:  # one JSON object per line: a stream programs can follow
            echo_json(report.to_dict(), indent=None)
        else:
            echo(render.index_report(report))

    def on_error(exc) -> None:
        echo(f"warning: could not update the index ({exc}); will retry", err=True)

    w = Watcher(v, debounce=debounce, on_sync=on_sync, on_error=on_error)
    if not s.json:
        echo(f"watching {v.root} (Ctrl-C to stop)", err=True)
    _stop_on_signals()
    try:
        w.run()
    except KeyboardInterrupt:
        pass
    finally:
        w.stop()
    if not s.json:
        echo("stopped", err=True)
