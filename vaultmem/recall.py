"""Recall, end to end: what a search and a brief draw on, on top of a fresh index.

The facade keeps the index fresh (``Vault._answer``) and calls these; they read the vault
and the index and return hits or a :class:`~vaultmem.brief.Brief`, writing nothing.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path

from . import files, layout
from .errors import BadInput, NotFound, ParseError, VaultmemError
from .names import check_name


def check_query(query: str, agent: str | None, limit: int) -> str | None:
    """Refuse a search that cannot be run; returns the agent's checked name."""
    if not query.strip():
        raise BadInput("the query is empty", field="query", hint="give words to search for")
    if limit < 1:
        raise BadInput(f"is {limit}; it must be at least 1", field="limit")
    return check_name(agent, "agent name") if agent else None


COMMON_WORDS_ONLY = ("the query has only common words ({words}), which are not indexed: "
                     "add a word that says what to look for")


def skipped_files(problems: list[dict], agent: str | None, kinds: tuple[str, ...]) -> list[dict]:
    """Of the files the index could not read (``problems``), those a search of ``kinds``
    (empty: all but the inbox and the archive) as ``agent`` would have drawn on — never
    another role's page, identity or checkpoint."""
    from .index import DEFAULT_EXCLUDED_KINDS

    out = []
    for problem in problems:
        parts = problem["path"].split("/")
        top = parts[0] if len(parts) > 1 else ""
        found = {"shared", "log", "decision"} if top == layout.SHARED_DIR else {layout.KIND_BY_FOLDER.get(top, "doc")}
        if not (found & set(kinds) if kinds else not found & set(DEFAULT_EXCLUDED_KINDS)):
            continue
        if agent and top in layout.OWNED_FOLDERS and unicodedata.normalize(
                "NFC", parts[1].removesuffix(".md")) != agent:
            continue
        out.append(problem)
    return out


def common_words_only(query: str) -> str | None:
    """The warning for a query none of whose words are indexed, or None."""
    from .retrieve import has_terms

    if has_terms(query):
        return None
    words = ", ".join(dict.fromkeys(query.split()))
    return COMMON_WORDS_ONLY.format(words=words[:60])


def check_filters(tags=(), statuses=(), author_kinds=(), since=None, until=None, where=()) -> dict:
    """The narrowing filters of a search, checked and normalised (see
    :class:`~vaultmem.index.Filters`): ``since``/``until`` ISO days (a ``datetime.date``
    too), ``where`` ``key=value`` texts, (key, value) pairs or a mapping."""
    import datetime as dt
    import re

    from .models import AUTHOR_KINDS

    def texts(values, field: str, what: str) -> tuple[str, ...]:
        values = (values,) if isinstance(values, str) else tuple(values or ())
        out = []
        for v in values:
            if not isinstance(v, str) or not v.strip():
                raise BadInput(f"{what} is empty", field=field, hint=f"give a {what} or leave the filter out")
            out.append(v.strip())
        return tuple(dict.fromkeys(out))

    kinds = texts(author_kinds, "author_kinds", "author kind")
    for k in kinds:
        if k not in AUTHOR_KINDS:
            raise BadInput(f"{k!r} is not an author kind", field="author_kinds",
                           hint="one of " + ", ".join(AUTHOR_KINDS))

    def day(value, field: str) -> str | None:
        if value is None or value == "":
            return None
        if isinstance(value, dt.date):
            return value.isoformat()[:10]
        text = str(value).strip()
        try:
            if not re.fullmatch(r"\d{4}-\d\d-\d\d", text):
                raise ValueError
            dt.date.fromisoformat(text)
        except ValueError:
            raise BadInput(f"{text!r} is not a date", field=field, hint="write the day as YYYY-MM-DD, e.g. 2026-05-04") from None
        return text

    first, last = day(since, "since"), day(until, "until")
    if first and last and first > last:
        raise BadInput(f"the range {first} … {last} holds no day: it ends before it begins", field="since",
                       hint="give the earlier day as the start")
    pairs = []
    items = where.items() if isinstance(where, dict) else ((where,) if isinstance(where, str) else where or ())
    for item in items:
        if isinstance(item, str):
            key, eq, value = item.partition("=")
            if not eq:
                raise BadInput(f"{item!r} is not key=value", field="where",
                               hint="name a frontmatter field and its value, e.g. project=billing")
        else:
            key, value = item
        if not str(key).strip():
            raise BadInput(f"{item!r} names no field", field="where", hint="e.g. project=billing")
        pairs.append((str(key).strip(), str(value).strip()))
    return {"tags": texts(tags, "tags", "tag"), "statuses": texts(statuses, "statuses", "status"),
            "author_kinds": kinds, "since": first, "until": last, "where": tuple(pairs)}


def search(index, query: str, agent: str | None, kinds: tuple[str, ...], types: tuple[str, ...], limit: int,
           min_relevance: float, narrowing: dict | None = None, syntax: bool = True):
    """Ranked hits (:class:`~vaultmem.models.Hits`); with ``agent`` and no ``kinds``, what
    an agent may see (never the inbox or the archive, never another role's page). Each
    hit says whether it passes the relevance cut ``min_relevance``. The query's syntax is
    read (:func:`vaultmem.query.parse`); ``narrowing``: the further filters, as
    :func:`check_filters` returns them; ``syntax`` False: plain words only. The files in
    that scope the index could not read come with them, and so does why a query of common
    words only finds nothing; and so do the parsed query and the filters."""
    from .index import Filters
    from .models import Hits
    from .query import parse, plain
    from .retrieve import hybrid_search as ranked
    from .retrieve import is_relevant

    parsed = parse(query) if syntax else plain(query)
    scope = tuple(kinds) or (layout.AGENT_KINDS if agent else ())
    filters = Filters(agent=agent, kinds=scope, types=tuple(types), **(narrowing or {}))
    warning = None if parsed.syntax else common_words_only(query)
    found = [] if warning else ranked(index, parsed, filters, limit)
    for hit in found:
        hit.relevant = is_relevant(hit, parsed, min_relevance)
    hits = Hits(found, skipped_files(index.problems(), agent, scope), [warning] if warning else [])
    hits.min_relevance = min_relevance
    hits.parsed = parsed.to_dict()
    hits.filters = {"agent": agent, "kinds": list(scope), "types": list(types),
                    **{k: (list(map(list, v)) if k == "where" else list(v) if isinstance(v, tuple) else v)
                       for k, v in (narrowing or check_filters()).items()}}
    return hits


def check_brief(agent: str, task: str) -> str:
    agent = check_name(agent, "agent name")
    if not task.strip():
        raise BadInput("the task is empty", field="task", hint="describe the task the agent is about to do")
    return agent


def brief(root: Path, config, index, unseen, agent: str, task: str, budget: int, today, page: str | None,
          journal=None, uncommitted=None, project: str | None = None, usage=None, read: bool = True):
    """The brief for ``agent`` on ``task`` within ``budget`` tokens, in layers
    (:mod:`vaultmem.brief`): the agent's identity; its own page (``page``: vault-relative,
    None when it has none yet — the brief then warns so), whole and in its own order
    (:func:`page_layer`; ``project``: the project whose context it shows, else the one the
    task names, else all); the relevant hits outside the page (ranked for a brief), the
    relevant skills, the newest log entries it has not read (``unseen``) and as many
    MEMORY.md lines as could fit. Files in the
    brief's scope that could not be read are named (``skipped_files``); the role's own
    page among them, or its identity, is also said in the brief itself. ``journal``: the
    journal's index, for a brief that may fall back to it (a callable that opens it only
    then: :func:`journal_fallback`), or None. ``uncommitted(paths)``: which of these
    files differ from the last commit — a skill is named only once a commit has recorded
    it (a skill is followed: its commit is its review), the others said in a warning.
    ``usage()``: how often each page entry was recalled (``usage.read_usage``), asked
    only when the page is larger than its share of the brief. ``read`` False: the task is
    a placeholder (nothing asked yet), matched by its words alone — no model reads it."""
    from .brief import LABELS, BriefParts, build_brief, current_values, unread_notice
    from .index import Filters
    from .retrieve import hybrid_search, is_relevant, rank, search

    ranked = hybrid_search if read else search

    warnings = []
    skipped = skipped_files(index.problems(), agent, layout.BRIEF_KINDS)
    if page is None:
        warnings.append(f"{agent} has no page yet ({layout.page_path(agent)}): this brief holds shared memory "
                        f"only; create the page with 'vaultmem dispatch {agent} --task …', which briefs it too, or "
                        f"'vaultmem page ensure {agent}'")
    notices = []
    # the role's own page unread (a page indexed in part was read: its beginning is in the brief)
    own = next((p for p in skipped if page is not None and p["path"] == page and not p.get("partial")), None)
    if own is not None:
        notices.append(unread_notice(own, config.lang))
        warnings.append(f"the page of {agent}, {_where(own)}, cannot be read ({_flat(own['message'])}): "
                        f"its entries are missing from this brief, which says so; fix the file")
    if (warning := common_words_only(task)) is not None:
        warnings.append(warning.replace("the query", "the task"))
    hits = [] if warning else ranked(index, task, Filters(agent=agent, kinds=layout.BRIEF_KINDS),
                                     limit=max(30, config.brief_max_items * 3))
    # of two active notes stating one fact (the same key), only the newer value is briefed
    current, stale = current_values(hits)
    warnings += stale
    near_meaning = semantic_leaders(current, index.model_spec)
    # the role's own page is a layer of its own, never gated: its entries among the hits
    # only tell it which of them the task is about
    # delegation records are bookkeeping (audit, todo): one repeats its task word for word, and what
    # a sub-agent found reaches the page when it is harvested — never memory, nor the journal's evidence
    kept = [h for h in current if not h.doc.path.startswith(layout.DELEGATIONS_DIR + "/")]
    outside = [h for h in kept if h.doc.path != page]
    passed = {id(h) for h in outside if is_relevant(h, task, config.brief_min_relevance)}
    gated = [h for h in outside if id(h) in passed or h.doc.id in near_meaning]
    # memory has something on this task — a note or document passed, not only a skill (followed,
    # not read, and maybe not committed yet) —, or it has not ("no memory of this"): either
    # way the search's first hits are its best guesses, and the brief says which it is
    opened = any(id(h) in passed and h.doc.kind != "skill" for h in outside)
    in_gate = {id(h) for h in gated}
    lead = lead_hits(outside, in_gate, config.brief_lead)
    # nothing passed: the nearest are those that hold a word of the task (not a meaning alone,
    # far off) — none for a placeholder task: nothing was asked
    if not opened:
        lead = [h for h in lead if h.relevance] if read else []
    # one ranking: a lead hit the search scores high goes before a passing hit it scores low
    # (passing hits first measured worse: docs/recall.md, "Once the gate opens")
    relevant = rank(gated + lead, today)
    strong = [h for h in relevant if id(h) in in_gate][:LINK_HOPS_FROM]  # links are followed from these only
    relevant += linked(root, strong, agent, {h.doc.id for h in relevant})
    found = []
    if journal is not None and not warning:
        found, known = journal_fallback(journal, task, kept, stale, config.brief_min_relevance,
                                        config.brief_max_items)
        if found and not opened:  # the journal's turns answer what no note did: they replace the nearest
            nearest = {id(h) for h in lead}
            relevant = [h for h in relevant if id(h) not in nearest]
        relevant += found
        if not known:
            notices.append(LABELS.get(config.lang, LABELS["en"])["nothing"])
    from .parse.document import parse_document

    warnings += getattr(hits, "warnings", [])  # why the semantic channel could not open

    def unread(rel: str, exc: VaultmemError, what: str) -> None:
        """A file the brief draws on directly could not be read: named in the brief, on
        stderr and in ``problems`` — the brief goes on without it."""
        problem = {"path": rel, "line": exc.line, "message": exc.message, "hint": exc.hint}
        skipped[:] = [p for p in skipped if p["path"] != rel] + [problem]  # once, as read now
        notices.append(unread_notice(problem, config.lang))
        warnings.append(f"{what}, {_where(problem)}, cannot be read ({_flat(exc.message)}): it is missing "
                        f"from this brief, which says so; fix the file")

    def read_file(rel: str, what: str) -> str | None:
        """A file the brief draws on directly; None if absent, or not read (said so)."""
        if (root / rel).is_dir() and not (root / rel).is_symlink():
            return None
        try:
            return files.read_vault_text(root, rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except VaultmemError as exc:  # a link leading out, not UTF-8, not readable
            unread(rel, exc, what)
            return None

    identity = ""
    identity_rel = layout.identity_path(agent)
    text = read_file(identity_rel, f"the identity of {agent}")
    if text is not None:
        try:
            doc = parse_document(text, identity_rel, require_frontmatter=False)
        except ParseError as exc:
            unread(identity_rel, exc, f"the identity of {agent}")
        else:
            identity = "".join(doc.lines[doc.body_start:])
    text = _memory_index(root, lambda: read_file(layout.MEMORY_INDEX, "the memory index"))
    # at most as many lines as could fit (an index line costs well over 8 tokens)
    index_lines = (_index_lines(text, agent, index.owners(), budget // 8 + 1) if text is not None else [])
    live = [f"- {e.ts[:16]}Z {e.id} #{e.channel} {e.type}: {e.summary} [[{e.log_path}]]" for e in unseen]
    skills = [h for h in relevant if h.doc.kind == "skill"]  # named in a section of their own, never quoted
    unreviewed = uncommitted(sorted({h.doc.path for h in skills})) if skills and uncommitted is not None else set()
    if unreviewed:
        skills = [h for h in skills if h.doc.path not in unreviewed]
        warnings.append(f"{', '.join(sorted(unreviewed))}: a skill not committed yet is left out of the brief "
                        "(a skill is followed: a human commits it first)")
    own = []
    if page is not None and (text := read_file(page, f"the page of {agent}")) is not None:
        try:
            own = page_layer(page, text, current, task, project, config.brief_min_relevance, today,
                             room=int(budget * config.brief_shares.get("page", 0)), usage=usage)
        except ParseError as exc:
            if not any(p["path"] == page for p in skipped):  # said once: the index may know it already
                unread(page, exc, f"the page of {agent}")
    parts = BriefParts(agent=agent, task=task, identity=identity, hits=[h for h in relevant if h.doc.kind != "skill"],
                       index_lines=index_lines, live=live, lang=config.lang, max_items=config.brief_max_items,
                       notices=notices, skills=skills, page=own, page_path=page, shares=dict(config.brief_shares),
                       identity_path=identity_rel if identity else None,
                       no_memory=not opened and not found)
    result = build_brief(parts, budget)
    result.page, result.skipped_files = page, skipped
    result.warnings = warnings + result.warnings
    return result


def task_project(task: str, projects) -> list[str]:
    """The projects among ``projects`` that ``task`` names: a Latin name as a whole word
    (``api`` is not named by "rapid"), any other as it is written; case and width folded."""
    import re

    from .analysis import normalize

    said = normalize(task)
    out = []
    for name in projects:
        folded = normalize(name).strip()
        if not folded:
            continue
        if folded.isascii():
            if re.search(rf"(?<![a-z0-9]){re.escape(folded)}(?![a-z0-9])", said):
                out.append(name)
        elif folded in said:
            out.append(name)
    return out


PAGE_ORDER = {"context": 0, "work": 1, "subagents": 1}  # a project's context, then dated entries newest first


def page_layer(page: str, text: str, hits, task: str, project: str | None, min_relevance: float, today,
               room: int = 0, usage=None) -> PageHits:
    """The entries of the role's own page (``page``, its ``text``) a brief shows, best
    first, as hits: the project context of ``project`` (or of the projects the task
    names, or of all when it names none — entries under no project always), the
    working memory and the sub-agent records. The page's own order decides: a project's
    context first (it describes the project as it is), then the dated entries newest
    first, equal days by how often each was recalled (``usage()``: read only when the
    page is larger than its ``room`` in tokens, where it decides what is cut), then the
    later line first. The task only re-orders it: entries that the task's search found
    relevant (``hits``, at ``min_relevance``) come first, best first. Nothing here is
    dropped for being irrelevant; the budget cuts from the end.

    The page is parsed once, and ordered from its parsed entries (section, date, line);
    an entry becomes a hit — its document, with its neighbours' text — only when the
    brief reads it (:class:`PageHits`), so a brief of a page of 150,000 entries makes the
    few dozen it has room for."""
    from .analysis import estimate_tokens, normalize
    from .parse.records import page_docs
    from .retrieve import is_relevant

    docs = page_docs(page, text)
    entries = docs.entries
    if project is not None:
        wanted = {normalize(project).strip()}
    else:
        named = task_project(task, sorted({e.project for e in entries if e.section == "context" and e.project}))
        wanted = {normalize(p).strip() for p in named} or None
    folded: dict[str, str] = {}

    def shown(e) -> bool:
        if e.section != "context" or not e.project or wanted is None:
            return True
        if e.project not in folded:
            folded[e.project] = normalize(e.project).strip()
        return folded[e.project] in wanted

    # in the order the index lists a page's documents: by section, each in page order
    kept = [n for same in docs.sections.values() for n in same if shown(entries[n])]
    found = {h.doc.id: h for h in hits if h.doc.path == page}
    found_at: dict[int, object] = {}
    if found:
        for n in kept:
            hit = found.get(docs.doc_id(n))
            if hit is not None:
                hit.relevant = is_relevant(hit, task, min_relevance)
                found_at[n] = hit
    recalls: dict = {}
    if usage is not None:
        size = 0
        for n in kept:  # larger than its room: stop counting as soon as that is known
            size += estimate_tokens(docs.body(n)) + 12
            if size > room:
                recalls = usage()
                break
    days: dict[str | None, int] = {}

    def ordinal(day: str | None) -> int:
        if day not in days:
            try:
                days[day] = today.fromisoformat(day[:10]).toordinal() if day else 0
            except ValueError:
                days[day] = 0
        return days[day]

    keys = []
    for n in kept:
        hit = found_at.get(n)
        if hit is not None:
            d = hit.doc
            keys.append((0 if hit.relevant else 1, -hit.score if hit.relevant else 0,
                         PAGE_ORDER.get(d.section or "", 2), -ordinal(d.date),
                         -recalls.get(d.id, (0, ""))[0], -(d.line or 0)))
        else:
            e = entries[n]
            keys.append((1, 0, PAGE_ORDER.get(e.section or "", 2), -ordinal(e.date),
                         -recalls.get(docs.doc_id(n), (0, ""))[0] if recalls else 0, -(e.line or 0)))
    order = sorted(range(len(kept)), key=keys.__getitem__)
    return PageHits(docs, [kept[k] for k in order], found_at)


class PageHits(Sequence):
    """The page layer's entries, best first (:func:`page_layer`): a sequence whose hits
    are made when first read. ``made``: how many entries were made into documents."""

    def __init__(self, docs, order: list[int], found: dict) -> None:
        self._docs, self._order, self._found, self._hits = docs, order, found, {}

    def __len__(self) -> int:
        return len(self._order)

    def __getitem__(self, n):
        if isinstance(n, slice):
            return [self[k] for k in range(*n.indices(len(self)))]
        if n < 0:
            n += len(self)
        if not 0 <= n < len(self):
            raise IndexError(n)
        hit = self._hits.get(n)
        if hit is None:
            from .models import Hit

            at = self._order[n]
            hit = self._found.get(at) or Hit(doc=self._docs.doc(at), score=0.0, channel="page")
            self._hits[n] = hit
        return hit

    @property
    def made(self) -> int:
        return self._docs.made


def lead_hits(hits, taken: set[int], lead: int) -> list:
    """The first ``lead`` of ``hits`` (the search's order, outside the role's page) not
    already taken (``taken``: the ``id`` of each hit the brief has), skills aside. The
    ranker's first hits join a brief whatever words they share with it: the gate judges
    each hit by its own words, and a turn that answers often shares few with the question
    ("She answers to Whiskers" for "What is the name of Tom's cat?"). When a note or
    document passes the gate, memory has something on this task and they join it; when
    none does, those that hold a word of the task are the brief's nearest memory, under a
    heading that says nothing clearly matches (``no_memory``). An e5 match close in meaning
    joins on its own (``semantic_leaders``) but does not open the gate: e5 finds a
    no-answer question's nearest note as close as an answer. A skill is named only when it
    passes the gate itself: it is followed, not read."""
    return [h for h in hits[:lead] if id(h) not in taken and h.doc.kind != "skill"]


def journal_fallback(journal, task: str, hits, conflicts: list, min_relevance: float, most: int):
    """The journal's turns relevant to ``task`` when the normal layers give no evidence —
    none of ``hits`` relevant at ``min_relevance``, or ``conflicts`` (two active notes
    stating one fact) — at most ``most``, and whether anything is known at all.
    ``journal()`` opens the journal's index: a brief that has evidence never does, so
    the fallback costs it nothing."""
    from .index import Filters
    from .retrieve import hybrid_search as ranked
    from .retrieve import is_relevant

    evidence = any(is_relevant(h, task, min_relevance) for h in hits)
    if evidence and not conflicts:
        return [], True
    found = ranked(journal(), task, Filters(kinds=(layout.JOURNAL_KIND,)), limit=max(10, most))
    turns = [h for h in found if is_relevant(h, task, min_relevance)][:most]
    return turns, evidence or bool(turns)


# the semantic channel's most similar hits join a brief whatever words they share: a brief
# offers what may help, and an answer phrased apart from the task shares few (docs/recall.md)
BRIEF_SEMANTIC_TOP = 10


def semantic_leaders(hits, model_spec: str) -> set[str]:
    """The ids of the hits a brief takes on meaning alone: among the semantic channel's
    ``BRIEF_SEMANTIC_TOP`` most similar, those within the model's ``brief_margin`` of the
    best one's similarity (``embedders.calibration``; none for a model without one)."""
    from .index.embedders import calibration

    margin = calibration(model_spec).brief_margin
    ranked = [h for h in hits if h.semantic_rank is not None and h.similarity is not None]
    if margin is None or not ranked:
        return set()
    best = max(h.similarity for h in ranked)
    return {h.doc.id for h in ranked if h.semantic_rank <= BRIEF_SEMANTIC_TOP and h.similarity >= best - margin}


LINK_HOPS_FROM = 3  # a brief follows the links of its three strongest hits


def _link_file(root: Path, target: str, source: str) -> str | None:
    """The vault file a link's target names, found cheaply: the source itself for
    ``[[#^id]]``, a path from the vault's top, else a note's slug or a role's name."""
    if not target:
        return source
    stem = target.removesuffix(".md")
    tries = [f"{stem}.md"] if "/" in stem else [layout.note_path(stem), layout.page_path(stem), f"{stem}.md"]
    return next((rel for rel in tries if (root / rel).is_file()), None)


def linked(root: Path, strong, agent: str, seen: set[str]) -> list:
    """One hop of links: the notes and entries that the ``strong`` hits link to and the
    brief may show ``agent`` (its scope: never another role's page, the inbox or the
    archive, nor an inactive note), after the hits themselves — they join the brief only
    where its budget leaves room. A link to a whole page is not followed (too much for a
    line); one to a page's ``#^block`` is."""
    from .index import Filters
    from .models import Hit
    from .parse.records import records
    from .parse.wikilink import wikilinks

    admits = Filters(agent=agent, kinds=layout.BRIEF_KINDS).admits
    seen = set(seen)
    out = []
    for hit in strong:
        for _n, target, anchor, _written in wikilinks(hit.doc.text):
            rel = _link_file(root, target, hit.doc.path)
            if rel is None:
                continue
            try:
                docs = records(rel, files.read_vault_text(root, rel))
            except (VaultmemError, OSError):
                continue
            if anchor and anchor.startswith("#^"):
                docs = [d for d in docs if d.entry_id == anchor[2:]]
            elif len(docs) != 1:
                continue
            for d in docs[:1]:
                if d.id not in seen and admits(d):
                    seen.add(d.id)
                    out.append(Hit(doc=d, score=0.0, channel="link", relevant=True, via=hit.doc.link))
    return out


class _MemoryIndex:
    """The last MEMORY.md read, by the file's stat (as the index tells files apart)."""
    key: tuple | None = None
    text: str | None = None


def _memory_index(root: Path, read) -> str | None:
    """MEMORY.md's text (``read()``: the brief's reader), reused while the file's stat —
    modification and change time, size, inode — is the one it was read at: a long-lived
    process briefs from a MEMORY.md of several megabytes at 50,000 notes, whose decoding
    alone costs more than the rest of a warm brief. A link is read each time."""
    import os
    import stat

    try:
        st = os.lstat(root / layout.MEMORY_INDEX)
    except OSError:
        return read()
    if not stat.S_ISREG(st.st_mode):
        return read()
    key = (str(root), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)
    memo = _MemoryIndex
    if memo.key == key and memo.text is not None:
        return memo.text
    text = read()
    memo.key, memo.text = (key, text) if text is not None else (None, None)
    return text


class _IndexLines:
    """The last MEMORY.md text briefed from, and the lines each (agent, limit) got of it."""
    text: str | None = None
    lines: dict[tuple[str, int], tuple[dict, list[str]]] = {}


def _index_lines(text: str, agent: str, owners: dict[str, str], limit: int) -> list[str]:
    """The MEMORY.md lines of ``agent``'s brief (see ``index_block_lines``), remembered for
    the same text and owners: a long-lived process (the MCP server) briefs from a
    MEMORY.md of 10,000 lines that rarely changes between two briefs, and comparing the
    text costs far less than splitting and filtering it again. One text is kept."""
    from .parse.note import index_block_lines

    memo = _IndexLines
    if text != memo.text:
        memo.text, memo.lines = None, {}
    key = (agent, limit)
    last = memo.lines.get(key)
    if last is not None and last[0] == owners:
        return list(last[1])
    lines = index_block_lines(text, layout.MEMORY_INDEX, agent, owners=owners, limit=limit)
    if len(memo.lines) >= 64:
        memo.lines = {}
    memo.text, memo.lines[key] = text, (owners, lines)
    return list(lines)


def _where(problem: dict) -> str:
    return f"{problem['path']}:{problem['line']}" if problem.get("line") else problem["path"]


def _flat(message: str, limit: int = 120) -> str:
    flat = " ".join(str(message).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def evaluate(root: Path, config, queries_path: str | Path, at: str | None, engine: str | None):
    """A retrieval evaluation on a frozen copy of the vault at ``at`` (see
    :mod:`vaultmem.evaluate`), indexed with ``engine`` (default: the vault's): (report,
    what was frozen)."""
    import tempfile

    from .evaluate import evaluate as run, load_queries, snapshot
    from .index import Filters
    from .index.store import IndexStore
    from .retrieve import hybrid_search as ranked
    from .retrieve import is_relevant

    path = Path(queries_path)
    try:
        text = files.read_text(path, str(path))
    except FileNotFoundError:
        raise NotFound(f"no queries file {path}", path=str(path)) from None
    queries = load_queries(text, str(path))
    cutoff = config.min_relevance
    with tempfile.TemporaryDirectory(prefix="vaultmem-eval-") as tmp:
        frozen_root = Path(tmp) / "vault"
        frozen = snapshot(root, frozen_root, at)
        semantic = {"semantic": config.search_semantic, "model": config.search_model,
                    "ranking": config.search_ranking, "reranker": config.search_reranker,
                    "rerank_depth": config.rerank_depth}
        store = (IndexStore(frozen_root, engine=config.index_engine, **semantic) if engine in (None, "auto")
                 else IndexStore(frozen_root, engine=engine, env=False, **semantic))  # --engine beats the environment
        store.rebuild(engine=engine)
        frozen = f"{frozen} (engine {store.engine_name()})"
        try:
            report = run(queries, lambda q: ranked(store, q.query, Filters(agent=q.agent), limit=10),
                         lambda hit, query: is_relevant(hit, query, cutoff))
        finally:
            store.close()
    return report, frozen
