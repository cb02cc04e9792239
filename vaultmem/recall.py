"""Recall, end to end: what a search and a brief draw on, on top of a fresh index.

The facade keeps the index fresh (``Vault._fresh``) and calls these; they read the vault
and the index and return hits or a :class:`~vaultmem.brief.Brief`, writing nothing.
"""

from __future__ import annotations

from pathlib import Path

from . import files, layout
from .errors import BadInput, NotFound
from .names import check_name


def check_query(query: str, agent: str | None, limit: int) -> str | None:
    """Refuse a search that cannot be run; returns the agent's checked name."""
    if not query.strip():
        raise BadInput("the query is empty", field="query", hint="give words to search for")
    if limit < 1:
        raise BadInput(f"is {limit}; it must be at least 1", field="limit")
    return check_name(agent, "agent name") if agent else None


def search(index, query: str, agent: str | None, kinds: tuple[str, ...], types: tuple[str, ...], limit: int):
    """Ranked hits; with ``agent`` and no ``kinds``, what an agent may see (never the
    inbox or the archive, never another role's page)."""
    from .index import Filters
    from .retrieve import search as ranked

    kinds = tuple(kinds) or (layout.AGENT_KINDS if agent else ())
    return ranked(index, query, Filters(agent=agent, kinds=kinds, types=tuple(types)), limit)


def check_brief(agent: str, task: str) -> str:
    agent = check_name(agent, "agent name")
    if not task.strip():
        raise BadInput("the task is empty", field="task", hint="describe the task the agent is about to do")
    return agent


def brief(root: Path, config, index, unseen, agent: str, task: str, budget: int, today):
    """The brief for ``agent`` on ``task`` within ``budget`` tokens: the relevant hits
    (ranked for a brief), the agent's identity, as many MEMORY.md lines as could fit,
    and the newest log entries it has not read (``unseen``)."""
    from .brief import BriefParts, build_brief
    from .index import Filters
    from .parse.note import index_block_lines
    from .retrieve import is_relevant, rank
    from .retrieve import search as ranked

    hits = ranked(index, task, Filters(agent=agent, kinds=layout.BRIEF_KINDS), limit=max(30, config.brief_max_items * 3))
    relevant = rank([h for h in hits if is_relevant(h, task, config.brief_min_coverage)], today)
    from .errors import UnsafePath

    warnings: list[str] = []

    def read(rel: str) -> str | None:
        """A file the brief draws on directly; None if absent, or not read (warned)."""
        if (root / rel).is_dir() and not (root / rel).is_symlink():
            return None
        try:
            return files.read_vault_text(root, rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except UnsafePath as exc:
            warnings.append(f"{exc.where()}: {exc.message}; left out of the brief")
            return None

    identity = ""
    identity_rel = layout.identity_path(agent)
    text = read(identity_rel)
    if text is not None:
        from .parse.document import parse_document

        doc = parse_document(text, identity_rel, require_frontmatter=False)
        identity = "".join(doc.lines[doc.body_start:])
    text = read(layout.MEMORY_INDEX)
    # at most as many lines as could fit (an index line costs well over 8 tokens)
    index_lines = (index_block_lines(text, layout.MEMORY_INDEX, agent, owners=index.owners(), limit=budget // 8 + 1)
                   if text is not None else [])
    warnings += [f"{p['path']}: {p['message']}" for p in index.problems() if p.get("unread")]
    live = [f"- {e.ts[:16]}Z {e.id} #{e.channel} {e.type}: {e.summary} [[{e.log_path}]]" for e in unseen]
    parts = BriefParts(agent=agent, task=task, identity=identity, hits=relevant, index_lines=index_lines,
                       live=live, lang=config.lang, max_items=config.brief_max_items)
    made = build_brief(parts, budget)
    made.warnings = warnings + made.warnings
    return made


def evaluate(root: Path, config, queries_path: str | Path, at: str | None, engine: str | None):
    """A retrieval evaluation on a frozen copy of the vault at ``at`` (see
    :mod:`vaultmem.evaluate`), indexed with ``engine`` (default: the vault's): (report,
    what was frozen)."""
    import tempfile

    from .evaluate import evaluate as run, load_queries, snapshot
    from .index import Filters
    from .index.store import IndexStore
    from .retrieve import is_relevant
    from .retrieve import search as ranked

    path = Path(queries_path)
    try:
        text = files.read_text(path, str(path))
    except FileNotFoundError:
        raise NotFound(f"no queries file {path}", path=str(path)) from None
    queries = load_queries(text, str(path))
    cutoff = config.brief_min_coverage
    with tempfile.TemporaryDirectory(prefix="vaultmem-eval-") as tmp:
        frozen_root = Path(tmp) / "vault"
        frozen = snapshot(root, frozen_root, at)
        store = (IndexStore(frozen_root, engine=config.index_engine) if engine in (None, "auto")
                 else IndexStore(frozen_root, engine=engine, env=False))  # --engine beats the environment
        store.rebuild(engine=engine)
        frozen = f"{frozen} (engine {store.engine_name()})"
        try:
            report = run(queries, lambda q: ranked(store, q.query, Filters(agent=q.agent), limit=10),
                         lambda hit, query: is_relevant(hit, query, cutoff))
        finally:
            store.close()
    return report, frozen
