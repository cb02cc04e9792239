"""How each command's result reads for people: pure functions ``result → str``.

A command parses its options, makes one library call and hands the result to
``Session.emit`` with one of these (``--json`` prints ``to_dict()`` instead). None of them
touches typer, the vault or a file, so each is tested on a result built by hand. Where
the text also says an option the user gave (``page ensure --project``), the function takes
it as a keyword and the command binds it.
"""

from __future__ import annotations

from typing import Any, Callable

from .render_review import (approved, edited, group_decided, inbox, inbox_groups, inbox_item,  # noqa: F401
                            plain_name, rejected)  # (render.X for each command)


def _short(commit: str | None) -> str:
    return commit[:8] if commit else "-"


def _n(count: int, word: str, plural: str | None = None) -> str:
    """``1 entry``, ``2 entries``: a count with its noun in the right number."""
    return f"{count} {word if count == 1 else plural or word + 's'}"


def _what(op: str, summary: str) -> str:
    """An inbox item's operation and summary, the operation said once ("remove x", not
    "remove remove x": a removal's summary already starts with it)."""
    return summary if summary.split(" ", 1)[0] == op else f"{op} {summary}"


# -- changes that may go to the review inbox ---------------------------------------------------


def proposed(change) -> str:
    """How a change that went to the review inbox reads for a person."""
    lines = []
    for item in change.details["items"]:
        if item["status"] == "approved":
            lines.append(f"{item['id']}: approved at once (trusted agent, user-stated) → {item['result']}")
            continue
        marks = (["quarantined: third-party"] if item["quarantined"] else []) + \
            ([f"flagged: {'; '.join(item['flags'])}"] if item["flags"] else [])
        lines.append(f"{item['id']}: {_what(item['op'], item['summary'])} — waiting for review"
                     + (f" ({', '.join(marks)})" if marks else ""))
    for j in change.details.get("joined") or []:
        lines.append(f"{j['id']}: seen again — joined the item already waiting (seen {j['seen']} times)")
    for h in change.details.get("held") or []:
        lines.append(f"not filed, already in memory ({h['note']}): {plain_name(' '.join(h['text'].split())[:70])}")
    pending = change.details["pending"]
    if pending:
        lines.append(f"filed in inbox/ (commit {change.commit[:8]}); a reviewer decides with: "
                     f"vaultmem review show ID / approve ID / reject ID --reason …")
    elif change.commit is None:
        lines.append("nothing was filed: no commit")
    return "\n".join(lines)


def or_proposed(done: Callable[..., str]) -> Callable[..., str]:
    """``done`` for a change that was made, :func:`proposed` for one filed for review."""

    def render(change, **options: Any) -> str:
        return proposed(change) if change.action == "propose" else done(change, **options)

    render.__name__ = render.__qualname__ = done.__name__
    render.__doc__ = done.__doc__
    return render


# -- setup ---------------------------------------------------------------------------------------


def init(change) -> str:
    d = change.details
    if d["created"]:
        return (f"created vault {d['root']} (lang {d['lang']}, orchestrator {d['orchestrator']}), "
                f"{_n(len(change.paths), 'file')}, commit {_short(change.commit)}")
    return change.message


def config_file(text: str) -> str:
    """``config show``: the file as written."""
    return text.rstrip()


def config_set(change, *, typed: str) -> str:
    """``typed``: the value as the user gave it (before it was read as YAML)."""
    return f"set {change.details['key']} = {typed}" + (f" (commit {change.commit[:8]})" if change.commit else "")


# -- role pages ---------------------------------------------------------------------------------


def page_ensure(change, *, project: str | None = None) -> str:
    d = change.details
    if d["created"]:
        return f"created {d['path']}" + (f" (commit {change.commit[:8]})" if change.commit else "")
    if d["project_added"]:
        return f"{d['path']} exists; added project {project} (commit {change.commit[:8]})"
    return f"{d['path']} exists; nothing changed"


@or_proposed
def page_add(change) -> str:
    return f"added {change.details['entry']['link']} (commit {change.commit[:8]})"


def page(info) -> str:
    """``page show``: the parsed page, section by section, each entry with its block id."""
    from ...parse import HEADINGS

    meta = info.meta
    out = [f"{info.name} — {info.path}",
           f"category: {meta.get('category') or '-'} · first used: {meta.get('first_used') or '-'} · "
           f"projects: {', '.join(info.projects) or '-'}"]
    for key in ("context", "work", "subagents"):
        out += ["", f"## {HEADINGS[info.lang][key]}"]
        entries = [e for e in info.entries if e.section == key]
        if not entries:
            out.append("  (empty)")
        project = None
        for e in entries:
            if key == "context" and e.project != project:
                project = e.project
                out.append(f"### {project or '(no project)'}")
            eid = f"^{e.id}" if e.id else "(no id)"
            if key == "subagents":
                out.append(f"  {eid}  {e.date or ''} {e.title or ''}".rstrip())
                for field, value in (e.fields or {}).items():
                    out.append(f"      {field}: {value}")
            else:
                text = e.text.replace("\n", "\n      ")
                out.append(f"  {eid}  " + (f"{e.date} | " if e.date else "") + text)
    if info.extra_sections:
        out += ["", "other sections: " + ", ".join(info.extra_sections)]
    return "\n".join(out)


def page_list(rows: list[dict]) -> str:
    if not rows:
        return "no role pages yet (a page is created on a role's first dispatch)"
    out = []
    for r in rows:
        if not r["ok"]:
            out.append(f"{r['role']}  BROKEN: {r['problem']}")
            continue
        n = r["entries"]
        projects = ", ".join(r["projects"]) or "-"
        out.append(f"{r['role']}  [{r['category'] or '-'}]  first used {r['first_used']}  projects: {projects}"
                   f"  entries: {n['context']} context, {n['work']} work, {n['subagents']} sub-agent")
    return "\n".join(out)


# -- memory notes -------------------------------------------------------------------------------


@or_proposed
def remembered(change) -> str:
    superseded = change.details.get("superseded") or []
    also = f"; it supersedes {', '.join(superseded)} (same key), now in the archive" if superseded else ""
    return f"remembered {change.details['path']} (commit {change.commit[:8]}){also}"


def conflicts(report) -> str:
    if not report.conflicts:
        return "no conflicts: no two active notes state one key differently, and no note's code or number " \
               "differs from what several other sources say"
    lines = [f"{len(report.conflicts)} conflict{'s' if len(report.conflicts) != 1 else ''} (nothing was changed):"]
    for c in report.conflicts:
        lines.append(f"- {c.kind}{f' · key {c.key}' if c.key else ''}: {c.message}")
    return "\n".join(lines)


def gc(plan, dry_run: bool, change) -> str:
    head = ("would archive" if dry_run else "archived") + f" {len(plan.archive)} note{'s' if len(plan.archive) != 1 else ''}"
    head += f", keep {len(plan.keep)}" + (f" (commit {change.commit[:8]})" if change and change.commit else "")
    lines = [head + (":" if plan.archive else "")]
    lines += [f"- {s.path}  score {s.score:.3f}  {s.reason}" for s in plan.archive]
    lines += [f"skipped {x['path']}: {x['reason']}" for x in plan.skipped]
    if dry_run and plan.archive:
        lines.append("nothing was changed; run 'vaultmem gc' to archive them (vaultmem restore SLUG brings one back)")
    return "\n".join(lines)


def compacted(plan, dry_run: bool, change) -> str:
    rows = [f"{r['section']}: {r['entries']} entries, ~{r['tokens']:,} tokens (budget {r['max_entries']} entries, "
            f"{r['max_tokens']:,} tokens){' — over' if r['over_budget'] else ''}" for r in plan.sections]
    if not plan.moving:
        return "\n".join([f"{plan.path}: nothing to move", *rows])
    n = len(plan.moving)
    head = f"{'would move' if dry_run else 'moved'} {n} entr{'y' if n == 1 else 'ies'} of {plan.path}"
    head += f" (commit {change.commit[:8]})" if change and change.commit else ""
    lines = [head + ":", *rows]
    lines += [f"- {m.section} ^{m.id or '(no id)'} {m.date or 'undated'}  {m.text}  → {m.archive}"
              + (f"  (recalled {m.uses}×, last {m.last_used[:10]})" if m.uses else "") for m in plan.moving]
    lines += [f"left on the page: {x['line']}" for x in plan.summaries]
    if dry_run:
        lines.append("nothing was changed; run it without --dry-run to move them (git revert undoes it)")
    return "\n".join(lines)


def stats(found: dict) -> str:
    def pct(x) -> str:
        return "—" if x is None else f"{x:.1%}"

    n = found["notes"]
    out = [f"notes: {n['active']:,} active"
           + (f" ({', '.join(f'{t} {c:,}' for t, c in n['by_type'].items())})" if n["by_type"] else ""),
           "  by status: " + (", ".join(f"{s} {c:,}" for s, c in n["by_status"].items()) or "none")]
    out.append(f"role pages: {len(found['pages'])}")
    for p in found["pages"]:
        e = p["entries"]
        over = f"  over budget: {', '.join(p['over_budget'])} (vaultmem compact {p['role']})" if p["over_budget"] else ""
        out.append(f"  {p['role']}: {e['context']} context, {e['work']} working memory, {e['subagents']} records, "
                   f"{p['bytes']:,} bytes, ~{p['tokens']:,} tokens{over}")
    w = found["waiting"]
    out.append(f"waiting for a human: {w['inbox']} inbox items, {w['delegations']} delegations pending")
    box = found.get("inbox")
    if box and box["waiting"]:
        age = f", the oldest for {box['oldest_days']:g} days (since {box['oldest']})" if box["oldest"] else ""
        over = (f"; {box['over_nudge']} waited over review.nudge_days ({box['nudge_days']:g}): vaultmem review"
                if box["over_nudge"] else "")
        again = f"; {box['seen_again']} proposed again in later sessions" if box.get("seen_again") else ""
        out.append(f"inbox: {box['waiting']} waiting{age}{over}{again}")
    elif box:
        out.append("inbox: empty")
    logs = found["logs"]
    out.append("log entries: " + (", ".join(f"{a} {c['live']} live / {c['decisions']} decisions"
                                            for a, c in logs.items()) or "none"))
    i = found["index"]
    out.append(f"index: {i['engine']}, {i['bytes'] / 1e6:.1f} MB on disk (vectors {i['vectors_bytes'] / 1e6:.1f} MB)")
    r, c = found["recall"], found["corrections"]
    out.append(f"recall hit rate: {pct(r['hit_rate'])} ({r['briefs_used']} of {r['briefs_citing']} briefs that "
               f"cited memory; {r['briefs']} briefs, {r['searches']} searches recorded on this machine)")
    out.append(f"repeated questions: {pct(r['repeated_rate'])} ({r['repeated_questions']} of {r['questions']} "
               f"questions asked again in a later session)")
    out.append(f"corrections: {pct(c['rate'])} ({c['corrected_by_user']} of {c['agent_notes']} agent-written notes "
               f"superseded by a user's)")
    out += [f"skipped {x['path']}{':' + str(x['line']) if x.get('line') else ''}: {x['message']}"
            for x in found["skipped_files"]]
    return "\n".join(out)


def links(found: dict) -> str:
    def row(x: dict, who: str) -> str:
        where = f"{x[who]}:{x['line']}" if who == "source" else f"line {x['line']}"
        shown = x["target"] + (x["anchor"] or "") if x["target"] else "?"
        moved = f"  (moved from {x['moved_from']} by compact)" if x.get("moved_from") else ""
        return f"  {where}  {x['link']} → {shown}{moved}" + (f"  (broken: {x['problem']})" if x["problem"] else "")

    out = [found["path"], f"links from it ({len(found['outgoing'])}):"]
    out += [row(x, "line") for x in found["outgoing"]] or ["  none"]
    out.append(f"links to it ({len(found['backlinks'])}):")
    out += [row(x, "source") for x in found["backlinks"]] or ["  none"]
    return "\n".join(out)


def timeline(found: dict) -> str:
    if not found["events"]:
        return "nothing dated" + (f" for {found['role']}" if found["role"] else "") + \
               (f" since {found['since']}" if found["since"] else "")
    return "\n".join(f"{e['when'][:16].replace('T', ' ')}  {e['kind']:<8}  {e['who'] or '-'}  {e['what']}  {e['link']}"
                     for e in found["events"])


def doctor(report: dict) -> str:
    out = []
    for c in report["checks"]:
        out.append(f"{'ok  ' if c['ok'] else 'FAIL'}  {c['check']}" + (f" ({len(c['problems'])})" if c["problems"] else ""))
        for f in c["fixed"]:
            out.append(f"      fixed: {f['message']}" + (f" (commit {f['commit'][:8]})" if f.get("commit") else ""))
        for p in c["problems"][:20]:
            where = f"{p['path']}:{p['line']}" if p.get("line") else (p.get("path") or "")
            out.append(f"      {where}  {p['problem']}")
        if len(c["problems"]) > 20:
            out.append(f"      … and {len(c['problems']) - 20} more (--json lists them all)")
    out.append("healthy" if report["ok"] else "left for a human: the FAIL lines above")
    return "\n".join(out)


def restored(change) -> str:
    return f"restored {change.details['path']} (commit {change.commit[:8]})"


@or_proposed
def forgotten(change) -> str:
    return f"archived {change.details['slug']} to {change.details['archived_to']} (commit {change.commit[:8]})"


# -- recall -------------------------------------------------------------------------------------


def index_report(r) -> str:
    """An index refresh or rebuild (also each sync of ``watch``)."""
    if r.skipped:
        return f"index not updated: {r.skipped}"
    head = "rebuilt the index" if r.rebuilt else "index up to date"
    if r.engine:
        head += f" ({r.engine})"
    parts = [f"{head}: {len(r.new)} new, {len(r.modified)} modified, {len(r.deleted)} deleted, "
             f"{len(r.moved)} moved, {r.unchanged} unchanged ({_n(r.docs, 'doc')} written, {r.seconds:.2f}s)"]
    for src, dst in r.moved:
        parts.append(f"  moved {plain_name(src)} → {plain_name(dst)}")
    for p in r.problems:
        where = plain_name(p["path"]) + (f":{p['line']}" if p.get("line") else "")
        parts.append(f"  {'indexed in part' if p.get('partial') else 'skipped'} {where}: {p['message']}" +
                     (f" (hint: {p['hint']})" if p.get("hint") else ""))
    if (sem := getattr(r, "semantic", None)) is not None:
        if sem.get("on"):
            parts.append(f"semantic search: {sem['mode']} ({sem['model']}, {_n(sem.get('vectors', 0), 'vector')}"
                         f"{', ' + str(sem['embedded']) + ' embedded now' if sem.get('embedded') else ''}"
                         f"{'; nothing to embed, the model not loaded' if sem.get('loaded') is False else ''})")
        else:
            parts.append(f"semantic search: off ({sem.get('why')})")
    return "\n".join(parts)


def search_hits(hits) -> str:
    """Each hit with its source, kind, score and snippet; a hit below the relevance cut
    is marked ``(weak)``, and when none passes it the first line says there is no memory
    of this."""
    if not hits:
        return "no hits"
    out = []
    cut = getattr(hits, "min_relevance", None)
    if cut is not None and not any(h.relevant for h in hits):
        near = "are only near it in meaning or share" if any(h.channel != "lexical" for h in hits) else "only share"
        out.append(f"no memory of this: none of these {len(hits)} hits passes the relevance cut "
                   f"(search.min_relevance {cut:g}); they {near} words with the query")
    for i, h in enumerate(hits, 1):
        d = h.doc
        where = plain_name(d.id) + (f"  (line {d.line})" if d.line else "")
        weak = "  (weak)" if h.relevant is False else ""
        out.append(f"{i:>2}. {where}  [{d.kind}{'/' + (d.type or d.section) if (d.type or d.section) else ''}]"
                   f"  score {h.score:.2f}{weak}\n    {h.snippet}")
    return "\n".join(out)


def brief(b) -> str:
    return b.markdown.rstrip("\n")


def dispatched(result) -> str:
    """``dispatch``: (the page change, the brief)."""
    change, b = result
    note = f"(created {change.details['path']})\n" if change.details["created"] else ""
    return note + b.markdown.rstrip("\n")


def evaluation(result, *, details: bool = False) -> str:
    """``eval``: (the report, what was frozen); ``details``: every query's results too."""
    report, frozen = result
    m = report.metrics
    out = [f"{report.queries} queries ({report.answerable} answerable, {report.no_answer} no-answer) on {frozen}",
           "  ".join(f"{k} {v:.3f}" for k, v in m.items())]
    for kind, km in report.by_kind.items():
        out.append(f"  {kind:<15} n={int(km['queries']):<3} hit@1 {km['hit@1']:.2f}  hit@5 {km['hit@5']:.2f}  "
                   f"mrr@10 {km['mrr@10']:.2f}  recall@5 {km['recall@5']:.2f}  false-hit {km['false_hit_rate']:.2f}")
    if details:
        for r in report.details:
            mark = "ok " if (r["first_rank"] if r["expected"] else not r["false_hit"]) else "MISS"
            out.append(f"{mark} {r['id']} [{r['kind'] or '-'}] {r['query']} → rank {r['first_rank']}; "
                       f"top: {', '.join(r['results'][:3])}")
    for p in report.problems:
        out.append(f"INVARIANT BROKEN: {p}")
    return "\n".join(out)


# -- coordination -------------------------------------------------------------------------------


def log_line(e) -> str:
    """One live-log or decision-log entry (``log tail``)."""
    ref = f" ↩ {e.ref}" if e.ref else ""
    body = "\n    " + e.body.replace("\n", "\n    ") if e.body else ""
    bad = f"  [NOT VERIFIED: {e.problem}]" if getattr(e, "problem", None) else ""
    return f"{e.ts[:19]}Z  {e.id:<16} #{e.channel:<10} {e.type:<9}{ref} {e.summary}{bad}{body}"


def key_created(change) -> str:
    d = change.details
    return f"created key {d['kid']} for {d['agent']}: private {d['private']}, public {d['public']}"


def key_rotated(out: dict) -> str:
    return f"{out['agent']} now signs with key {out['kid']} (announced as {out['entry']['id']})"


def key_revoked(e, *, agent: str, kid: str) -> str:
    return f"{agent}'s key {kid} revoked ({e.id})"


def appended(e) -> str:
    return f"appended {e.id}"


def acked(e, *, entry: str) -> str:
    return f"acknowledged {entry} as {e.id}"


def verified(result) -> str:
    """``log verify``: (the findings, the counts)."""
    findings, counts = result
    out = [f"{plain_name(f['path'])}:{f['line'] or '-'}: {plain_name(f['agent'])}#{f['seq'] if f['seq'] is not None else '?'} "
           f"{f['kind']}: {plain_name(f['message'])}" for f in findings]
    out.append(f"{_n(counts['entries'], 'entry', 'entries')} of {_n(counts['agents'], 'agent')} checked: "
               + (_n(len(findings), "finding") if findings else "all signatures and chains hold"))
    return "\n".join(out)


def repaired(cut: list[dict]) -> str:
    return "\n".join(f"{c['path']}: removed {_n(c['removed_bytes'], 'byte')} of a cut-off entry" for c in cut) \
        or "nothing to repair"


def logs_committed(sha: str | None) -> str:
    return f"committed the logs ({sha[:8]})" if sha else "no new entries to commit"


def decided(result) -> str:
    """``decide``: (the decision-log entry, the live-log note)."""
    d, live = result
    return f"decision {d.id} recorded (live log {live.id})"


def state(st: dict) -> str:
    return (st["text"] or "(no project state yet)") + \
        (f"\n\n— last changed by {st['updated_by']} at {st['updated']}" if st["updated_by"] else "")


def state_set(change) -> str:
    return f"project state updated (commit {_short(change.commit)})"


def checkpoint_saved(change) -> str:
    return f"saved {change.details['path']}"


def checkpoint(cp: dict) -> str:
    head = f"checkpoint of {cp['agent']} — saved {cp['saved']}" + ("  [STALE]" if cp["stale"] else "")
    out = [head]
    if cp["task"]:
        out.append(f"task: {cp['task']}")
    if cp["step"]:
        out.append(f"step: {cp['step']}")
    out += [f"next: {x}" for x in cp["next"]]
    if cp["text"]:
        out += ["", cp["text"]]
    return "\n".join(out)


def synced(r) -> str:
    return (f"synced with {r.branch or r.remote}: {_n(r.pulled, 'commit')} pulled, "
            f"{'pushed' if r.pushed else 'nothing pushed'}"
            + (f"; log verify: {_n(r.findings, 'finding')}" if r.findings else "; logs verify"))


# -- delegations and management -----------------------------------------------------------------


def delegated(result) -> str:
    """``delegate``: (the change, the sub-agent's brief)."""
    change, b = result
    d = change.details
    return (f"delegation {d['id']} (role {d['role']}) pending — harvest it with: "
            f"vaultmem harvest {d['role']} --delegation {d['id']} …\n\n{b.markdown.rstrip()}")


@or_proposed
def harvested(change, *, delegation: str) -> str:
    return f"harvested {delegation} into {change.details['link']} (commit {change.commit[:8]})"


def audit(report: dict) -> str:
    out = []
    for d in report["stale_delegations"]:
        out.append(f"delegation {d['id']} ({d['role']}) not harvested for {d['age_hours']} h: {d['task'][:80]}")
    for i in report["inbox"]:
        marks = (" [quarantined]" if i["quarantined"] else "") + (" [flagged]" if i["flags"] else "")
        if i.get("changed_after_filing"):  # what is shown is what vaultmem filed; say what differs now
            fields = i.get("changed_since_filed")
            marks += (" [CHANGED since filed: not filed by vaultmem]" if fields is None
                      else f" [CHANGED since filed: {', '.join(fields)}]" if fields else " [CHANGED since filed]")
        out.append(f"inbox item {i['id']} waiting: {_what(i['op'], i['summary'])} (from {i['proposed_by']}){marks}")
    for c in report["foreign_page_commits"]:
        out.append(f"role page changed by agent {c['author']} (not the orchestrator): {c['commit'][:8]} {c['message']}")
    for n in report["notes_without_provenance"]:
        where = plain_name(n["path"]) + (f":{n['line']}" if n.get("line") else "")
        if n.get("problem"):  # said whole when it names the file itself ("… is a folder")
            problem = n["problem"]
            out.append(plain_name(problem) if problem.startswith(n["path"]) else f"{where}: {plain_name(problem)}")
        else:
            out.append(f"{where}: no {', '.join(n['missing'])}")
    return "\n".join(out) or "nothing needs a human"


def answers(hits) -> str:
    """``ask``: the role's entries and notes that match, each with its link; the journal's
    turns after them (when the journal was searched), said so."""
    lines = [f"- {'from the journal (session ' + str(h.doc.session) + ', ' + h.doc.title + '): ' if h.doc.kind == 'journal' else ''}"
             f"{h.snippet} {h.doc.link}" for h in hits]
    if getattr(hits, "journal_searched", False) and not any(h.relevant for h in hits):
        lines.insert(0, "nothing known: neither this role's memory nor the journal holds anything relevant")
    return "\n".join(lines) or "nothing in this role's memory matches"


def todo(out: dict) -> str:
    lines = [f"- {i['text'].splitlines()[0]} {i.get('link') or ''}".rstrip() for i in out["items"]]
    lines += [f"- delegation {d['id']} pending: {d['task'][:80]}" for d in out["pending_delegations"]]
    return "\n".join(lines) or f"no open items recorded for {out['role']}"


def history(commits: list[dict], *, diffs: bool = False) -> str:
    out = []
    for c in commits:
        out.append(f"{c['commit'][:8]} {c['date'][:19]} {c['author']}: {c['message'].splitlines()[0]}")
        if diffs:
            out.append(c["diff"].rstrip())
    return "\n".join(out)


def journal_added(change) -> str:
    d = change.details
    if not d["added"]:
        return f"session {d['session']}: all {d['turns']} turns are in the journal already; nothing changed"
    days = ", ".join(f"journal/{x}.md" for x in d["days"])
    known = f" ({d['known']} were there already)" if d["known"] else ""
    return (f"session {d['session']} ({d['shape']}): filed {d['added']} of {d['turns']} turns{known} into {days}"
            f" (commit {change.commit[:8]})")


def journal_consolidated(change) -> str:
    day = change.details["day"]
    if change.commit is None:
        return f"journal/{day}.md: its record is up to date; nothing changed"
    return f"journal/{day}.md: the day's record is written at its top (commit {change.commit[:8]})"


def journal_pruned(change) -> str:
    d = change.details
    if not d["keep_days"]:
        return "journal.keep_days is 0: the journal is kept forever; nothing to prune"
    if not change.paths:
        return f"no day is older than {d['keep_days']} days; nothing to prune"
    head = f"{'would remove' if d['dry_run'] else 'removed'} {len(change.paths)} day file(s) older than " \
           f"{d['keep_days']} days" + (f" (commit {change.commit[:8]}; git history keeps them)" if change.commit else "")
    return "\n".join([head + ":", *(f"- {p}" for p in change.paths)])


def skills(result) -> str:
    """``skill list``: each skill in a line; the files that could not be read after them."""
    found, problems = result
    lines = [f"- {k.name}: {k.description}" + (f" (when: {k.when_to_use})" if k.when_to_use else "") + f"  {k.path}"
             for k in found]
    lines += [f"cannot read {p['path']}" + (f":{p['line']}" if p.get("line") else "") + f": {p['message']}"
              for p in problems]
    return "\n".join(lines) or "no skills yet: 'vaultmem skill add NAME --description …' writes one"


def skill(k) -> str:
    head = [f"# {k.name}", k.description] + ([f"When to use: {k.when_to_use}"] if k.when_to_use else [])
    return "\n".join([*head, f"({k.path})", "", k.text]).rstrip()


def vault_verified(report: dict) -> str:
    """``verify``: each check, as ``doctor`` shows them; the format first."""
    text = doctor({**report, "checks": report["checks"]})
    return f"format {report['format']}\n" + text.replace("healthy", "everything the design relies on holds")


def migrated(change) -> str:
    d = change.details
    if not d["steps"]:
        return f"the vault is at format {d['from']} already: nothing to migrate"
    head = f"{'would migrate' if d['dry_run'] else 'migrated'} format {d['from']} → {d['to']}" + \
        (f" (commit {change.commit[:8]}: review with git show, undo with git revert)" if change.commit else "")
    tail = ["nothing was changed; run it without --dry-run to migrate"] if d["dry_run"] else []
    return "\n".join([head + ":", *(f"- {x}" for x in d["steps"]), *(f"  writes {p}" for p in change.paths), *tail])


def backup_made(made: dict) -> str:
    lines = [f"bundle: {made['bundle']} ({len(made['refs'])} ref(s))"]
    if made["keys"]:
        lines.append(f"keys: {made['keys']} ({', '.join(made['key_agents']) or 'no key'}; mode 0600: keep it apart "
                     "from the bundle)")
    return "\n".join(lines)


def backup_verified(report: dict) -> str:
    return f"{report['bundle']}: {len(report['refs'])} ref(s); restored to a temporary folder:\n" + \
        vault_verified(report["verify"])


def backup_restored(report: dict) -> str:
    keys = f"; keys of {', '.join(report['key_agents'])}" if report["key_agents"] else ""
    return f"restored {report['vault']} ({len(report['refs'])} ref(s){keys})\n" + vault_verified(report["verify"])
