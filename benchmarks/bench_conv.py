"""Recall on conversations: multi-session two-speaker chats, one memory note per turn
(or per session), questions about what was said.

    python benchmarks/bench_conv.py check [DIR ...]
    python benchmarks/bench_conv.py build DIR [--split tune|holdout] [--lang en|zh] [--layout turn|session]
                                              [--conv ID ...] [--force]
    python benchmarks/bench_conv.py run [--split tune|holdout|both] [--lang en|zh|all]
                                        [--layout turn|session|both] [--engine whoosh|tantivy]
                                        [--mode lexical|semantic|hybrid|fused|all] [--set KEY=VALUE ...]
                                        [--details] [--json] [--out FILE.md]

The data: ``benchmarks/devset/conv/<split>/<conv-id>.yaml`` (format and kinds in
``benchmarks/devset/README.md``). ``tune`` is the split ranking work may look at;
``holdout`` is authored separately and never tuned on.

``build`` writes a vault (one per split × language × layout: every conversation of that
language in one vault, so other conversations are distractors) and ``DIR/queries.yaml``
in ``vaultmem eval``'s format, so ``vaultmem eval DIR/queries.yaml --vault DIR --at ''``
measures it too. ``run`` builds each vault in a temporary folder and, in one process,
opens it with :class:`vaultmem.vault.Vault` and runs ``search(question, limit=10)`` and
``brief("lee", question, tokens=1500)`` per question. Deterministic: the same data gives
the same vault bytes and the same figures (the brief's recency term uses today's date,
equal for every note of a run).

Standard library, ruamel.yaml and vaultmem only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml import YAML

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import code_version, table  # noqa: E402

CONV_DIR = HERE / "devset" / "conv"
SPLITS = ("tune", "holdout")
LANGS = ("en", "zh")
LAYOUTS = ("turn", "session")
ORCHESTRATOR = "lee"
KINDS = ("single-hop", "speaker", "temporal", "set-up", "paraphrase", "multi-hop", "open-domain", "no-answer")
# per split and language, at least this many questions of each kind
KIND_MINIMUMS = {"single-hop": 10, "speaker": 8, "temporal": 8, "set-up": 6, "paraphrase": 8,
                 "multi-hop": 5, "open-domain": 4, "no-answer": 8}
MIN_QUESTIONS = 60  # per split and language
SESSIONS = (4, 6)  # sessions per conversation (a warning outside)
TURNS = (12, 25)  # turns per session (a warning outside)
CONV_ID = {"tune": re.compile(r"^(en|zh)-t\d{2}$"), "holdout": re.compile(r"^(en|zh)-h\d{2}$")}
REF = re.compile(r"^(s\d+):(\d+)$")
# --mode → search.semantic (fused: every query fused, no gate); all: the four
MODES = {"lexical": "off", "semantic": "only", "hybrid": "auto", "fused": "always"}
SEARCH_LIMIT = 10
BRIEF_TOKENS = 1500
INDEX_BEGIN = "<!-- vaultmem:index:begin"


# -- reading the data ---------------------------------------------------------------------------


def load(path: Path) -> dict:
    """The YAML file ``path`` as plain data (a conversation, or the dev set's queries)."""
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def iso(day) -> str:
    if isinstance(day, dt.datetime):
        return day.date().isoformat()
    if isinstance(day, dt.date):
        return day.isoformat()
    return dt.date.fromisoformat(str(day)).isoformat()


def files_of(split: str) -> list[Path]:
    return sorted((CONV_DIR / split).glob("*.yaml"))


def conversations(split: str, lang: str | None = None, ids: tuple[str, ...] = ()) -> list[dict]:
    out = []
    for path in files_of(split):
        conv = load(path)
        if (lang is None or conv.get("lang") == lang) and (not ids or conv.get("id") in ids):
            out.append(conv)
    return out


# -- the validator ------------------------------------------------------------------------------


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)  # exit 1
    warnings: list[str] = field(default_factory=list)
    counts: dict[tuple[str, str], Counter] = field(default_factory=dict)  # (split, lang) → kind counts
    files: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def name_free(text: str, names: list[str]) -> str:
    """``text`` with the speakers' names blanked out (the paraphrase rule allows names)."""
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(re.escape(name) + r"(?:'s|’s)?", " ", text, flags=re.IGNORECASE)
    return text


def shared_terms(question: str, turns: list[str], names: list[str]) -> list[str]:
    """The question's index terms (vaultmem's analysis, names left out) that occur in the
    turns: for a paraphrase question this must be empty."""
    from vaultmem.analysis import tokens

    have = set()
    for text in turns:
        have.update(tokens(text))
    return [t for t in dict.fromkeys(tokens(name_free(question, names))) if t in have]


def turn_index(conv: dict) -> dict[str, dict]:
    """``{"s1:3": {"speaker", "text", "session", "date", "n"}}``."""
    out = {}
    for s in conv.get("sessions") or []:
        if not isinstance(s, dict):
            continue
        for n, t in enumerate(s.get("turns") or [], 1):
            if isinstance(t, dict):
                out[f"{s.get('id')}:{n}"] = {**t, "session": s.get("id"), "date": s.get("date"), "n": n}
    return out


def check_conversation(path: Path, conv, split: str | None, seen: dict[str, str], report: CheckReport) -> None:
    """Add the problems of one conversation file to ``report`` (``seen``: question and
    conversation ids met so far, across files)."""
    from vaultmem.analysis import tokens

    where = path.as_posix()

    def problem(msg: str, qid: str | None = None) -> None:
        report.problems.append(f"{where}: {qid + ': ' if qid else ''}{msg}")

    def warn(msg: str, qid: str | None = None) -> None:
        report.warnings.append(f"{where}: {qid + ': ' if qid else ''}{msg}")

    if not isinstance(conv, dict):
        return problem("not a mapping of id, lang, speakers, sessions, questions")
    cid = conv.get("id")
    if not isinstance(cid, str) or not cid:
        return problem("no id")
    if cid != path.stem:
        problem(f"id {cid!r} differs from the file name {path.stem!r}")
    if split in CONV_ID and not CONV_ID[split].match(cid):
        problem(f"id {cid!r} does not follow the {split} split's pattern {CONV_ID[split].pattern}")
    if cid in seen:
        problem(f"conversation id {cid!r} also in {seen[cid]}")
    seen[cid] = where
    lang = conv.get("lang")
    if lang not in LANGS:
        problem(f"lang is {lang!r}; it must be en or zh")
    elif not cid.startswith(lang + "-"):
        problem(f"id {cid!r} does not start with its language {lang!r}")
    speakers = conv.get("speakers")
    if not (isinstance(speakers, list) and len(speakers) == 2 and all(isinstance(s, str) and s.strip() for s in speakers)
            and speakers[0] != speakers[1]):
        return problem("speakers must be a list of two different names")
    sessions = conv.get("sessions")
    if not isinstance(sessions, list) or not sessions:
        return problem("no sessions")
    if not SESSIONS[0] <= len(sessions) <= SESSIONS[1]:
        warn(f"{len(sessions)} sessions (aim for {SESSIONS[0]}–{SESSIONS[1]})")
    sids, last_date = set(), None
    for s in sessions:
        if not isinstance(s, dict) or not isinstance(s.get("id"), str) or not re.fullmatch(r"s\d+", s["id"]):
            problem(f"a session without an id of the form s1, s2 …: {str(s)[:60]}")
            continue
        sid = s["id"]
        if sid in sids:
            problem(f"session id {sid} appears twice")
        sids.add(sid)
        try:
            day = iso(s.get("date"))
        except (TypeError, ValueError):
            problem(f"session {sid}: date {s.get('date')!r} is not an ISO date")
            day = None
        if day and last_date and day < last_date:
            problem(f"session {sid}: date {day} is before the previous session's {last_date}")
        last_date = day or last_date
        turns = s.get("turns")
        if not isinstance(turns, list) or not turns:
            problem(f"session {sid} has no turns")
            continue
        if not TURNS[0] <= len(turns) <= TURNS[1]:
            warn(f"session {sid}: {len(turns)} turns (aim for {TURNS[0]}–{TURNS[1]})")
        for n, t in enumerate(turns, 1):
            if not isinstance(t, dict) or t.get("speaker") not in speakers:
                problem(f"turn {sid}:{n}: speaker must be one of {speakers}")
            elif not isinstance(t.get("text"), str) or not t["text"].strip():
                problem(f"turn {sid}:{n} has no text")
    turns = turn_index(conv)
    questions = conv.get("questions")
    if not isinstance(questions, list) or not questions:
        return problem("no questions")
    kinds_here = Counter()
    for q in questions:
        if not isinstance(q, dict) or not isinstance(q.get("id"), str):
            problem(f"a question without an id: {str(q)[:60]}")
            continue
        qid = q["id"]
        if not qid.startswith(f"{cid}-q"):
            problem(f"question id must start with {cid}-q", qid)
        if qid in seen:
            problem(f"question id also in {seen[qid]}", qid)
        seen[qid] = where
        text = q.get("question")
        if not isinstance(text, str) or not text.strip():
            problem("no question text", qid)
            continue
        kind = q.get("kind")
        if kind not in KINDS:
            problem(f"kind {kind!r} is not one of {', '.join(KINDS)}", qid)
            continue
        kinds_here[kind] += 1
        if lang in LANGS and split is not None:
            report.counts.setdefault((split, lang), Counter())[kind] += 1
        evidence = q.get("evidence")
        if not isinstance(evidence, list):
            problem("evidence must be a list of session:turn references ([] for no-answer)", qid)
            continue
        bad = [e for e in evidence if not (isinstance(e, str) and REF.match(e) and e in turns)]
        if bad:
            problem(f"evidence {', '.join(map(str, bad))} names no turn of this conversation", qid)
            continue
        if len(set(evidence)) != len(evidence):
            problem("evidence lists a turn twice", qid)
        if kind == "no-answer":
            if evidence:
                problem("a no-answer question has evidence", qid)
            continue
        if not evidence:
            problem(f"a {kind} question without evidence", qid)
            continue
        if kind == "multi-hop" and len(evidence) < 2:
            problem("a multi-hop question needs two or more evidence turns", qid)
        if kind == "paraphrase":
            shared = shared_terms(text, [turns[e]["text"] for e in evidence], speakers)
            if shared:
                problem(f"paraphrase shares {', '.join(shared)} with its evidence", qid)
        if kind == "set-up":
            for e in evidence:
                sid, n = e.split(":")
                prev = turns.get(f"{sid}:{int(n) - 1}")
                if prev is None or prev["speaker"] == turns[e]["speaker"] or not re.search(r"[?？]", prev["text"]):
                    problem(f"evidence {e} must answer a question the other speaker asked in the turn before", qid)
        if kind == "speaker":
            named = [s for s in speakers if re.search(re.escape(s), text, re.IGNORECASE)]
            if len(named) == 1:
                person = named[0]
                if any(turns[e]["speaker"] == person for e in evidence):
                    warn(f"a speaker question about {person} is answered by {person}'s own turn", qid)
                words = set(tokens(name_free(text, speakers)))
                if not any(set(tokens(t["text"])) & words for t in turns.values()
                           if t["speaker"] == person and f"{t['session']}:{t['n']}" not in evidence):
                    warn(f"{person} has no turn sharing the question's words (the trap is missing)", qid)
            elif not named:
                problem("a speaker question must name one of the speakers", qid)
    missing = [k for k in KINDS if not kinds_here[k]]
    if len(missing) > 4:
        warn(f"only {len(KINDS) - len(missing)} kinds of question")


def check(dirs: list[Path] | None = None) -> CheckReport:
    """Validate every conversation file under ``dirs`` (default: both splits): schema,
    evidence references, unique ids, the paraphrase rule, and — for a split folder — the
    per-kind counts of each language."""
    report = CheckReport()
    seen: dict[str, str] = {}
    targets = [Path(d) for d in dirs] if dirs else [CONV_DIR / s for s in SPLITS if (CONV_DIR / s).is_dir()]
    for d in targets:
        if not d.exists():
            report.problems.append(f"{d.as_posix()}: no such file or folder")
            continue
        paths = sorted(d.glob("*.yaml")) if d.is_dir() else [d]
        split = d.name if d.is_dir() and d.name in SPLITS else d.parent.name if d.parent.name in SPLITS else None
        for path in paths:
            report.files += 1
            try:
                conv = load(path)
            except Exception as exc:  # noqa: BLE001 — any YAML error is a problem of the file
                report.problems.append(f"{path.as_posix()}: YAML does not load: {exc}".replace("\n", " "))
                continue
            check_conversation(path, conv, split, seen, report)
        if d.is_dir() and split is not None and paths:
            for lang in LANGS:
                counts = report.counts.get((split, lang), Counter())
                if not counts:
                    continue
                for kind, least in KIND_MINIMUMS.items():
                    if counts[kind] < least:
                        report.problems.append(f"{d.as_posix()}: {lang}: {counts[kind]} {kind} questions, "
                                               f"at least {least} needed")
                if sum(counts.values()) < MIN_QUESTIONS:
                    report.problems.append(f"{d.as_posix()}: {lang}: {sum(counts.values())} questions, "
                                           f"at least {MIN_QUESTIONS} needed")
    return report


# -- building a vault ---------------------------------------------------------------------------


def turn_slug(cid: str, sid: str, n: int) -> str:
    return f"{cid}-{sid}-t{n:02d}"


def clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def stamp(day: str):
    from vaultmem.parse.document import yaml_timestamp

    return yaml_timestamp(dt.datetime.fromisoformat(f"{day}T12:00:00+00:00"))


def author_of(speaker: str) -> str:
    """The speaker as ``author`` when vaultmem takes it as a name, else the orchestrator
    (the speaker stays in the note's name and description)."""
    from vaultmem.errors import BadInput
    from vaultmem.names import check_name

    try:
        return check_name(speaker, "author")
    except BadInput:
        return ORCHESTRATOR


def note_meta(name: str, description: str, speaker: str | None, cid: str, sid: str, day: str,
              turn: int | None) -> dict:
    meta = {
        "name": name, "description": description, "type": "episode", "scope": "global", "importance": 0.5,
        "confidence": 1.0, "author": author_of(speaker) if speaker else ORCHESTRATOR, "author_kind": "user",
        "source": f"{cid}/{sid}", "said": day, "created": stamp(day), "confirmed": stamp(day), "aliases": [],
        "tags": [cid], "status": "active", "session": f"{cid}-{sid}",
    }  # fmt: skip
    if turn is not None:
        meta["turn"] = turn
    return meta


def notes_of(conv: dict, layout: str) -> list[tuple[str, dict, str]]:
    """(slug, frontmatter, body) of every note of one conversation."""
    cid = conv["id"]
    out = []
    for s in conv["sessions"]:
        sid, day = s["id"], iso(s["date"])
        if layout == "turn":
            for n, t in enumerate(s["turns"], 1):
                text = " ".join(t["text"].split())
                name = f"{t['speaker']}, {cid} {sid}, turn {n}"
                desc = f"{t['speaker']} on {day}: {clip(text)}"
                out.append((turn_slug(cid, sid, n), note_meta(name, desc, t["speaker"], cid, sid, day, n), text))
        else:
            body = "\n".join(f"{t['speaker']}: {' '.join(t['text'].split())}" for t in s["turns"])
            name = f"{cid} {sid} ({day})"
            desc = f"{' & '.join(conv['speakers'])} on {day}: {clip(s['turns'][0]['text'])}"
            out.append((f"{cid}-{sid}", note_meta(name, desc, None, cid, sid, day, None), body))
    return out


def evidence_paths(conv: dict, refs: list[str], layout: str) -> list[str]:
    out = []
    for ref in refs:
        sid, n = ref.split(":")
        slug = turn_slug(conv["id"], sid, int(n)) if layout == "turn" else f"{conv['id']}-{sid}"
        path = f"memories/{slug}.md"
        if path not in out:
            out.append(path)
    return out


def queries_of(convs: list[dict], layout: str) -> list[dict]:
    return [{"id": q["id"], "query": " ".join(q["question"].split()), "kind": q["kind"],
             "expected": evidence_paths(c, q["evidence"], layout)}
            for c in convs for q in c["questions"]]


def vault_files(convs: list[dict], lang: str, layout: str) -> dict[str, str]:
    """Every file of the vault: {vault-relative path: text}."""
    from vaultmem import template
    from vaultmem.parse import index_line, render_note, update_index

    planned = template.plan(lang, ORCHESTRATOR)
    lines = []
    for conv in convs:
        for slug, meta, body in notes_of(conv, layout):
            planned[f"memories/{slug}.md"] = render_note(meta, body)
            lines.append(index_line(slug, meta["name"], meta["description"], meta["type"]))
    planned["MEMORY.md"] = update_index(planned["MEMORY.md"], "MEMORY.md", add=lines)
    return planned


def dump_queries(queries: list[dict]) -> str:
    import io

    yaml = YAML()
    yaml.width = 4096
    yaml.allow_unicode = True
    buf = io.StringIO()
    buf.write("# Generated by benchmarks/bench_conv.py build: vaultmem eval's format.\n")
    yaml.dump({"queries": queries}, buf)
    return buf.getvalue()


def set_config(root: Path, settings: dict[str, object]) -> None:
    from vaultmem.config import set_value

    path = root / ".vaultmem" / "config.yaml"
    text = path.read_text(encoding="utf-8")
    for key, value in settings.items():
        text = set_value(text, key, value)
    path.write_text(text, encoding="utf-8")


def commit(root: Path) -> None:
    """``git init`` and one commit of everything, with a fixed author and date."""
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": ORCHESTRATOR, "GIT_AUTHOR_EMAIL": f"{ORCHESTRATOR}@vaultmem.invalid",
           "GIT_COMMITTER_NAME": ORCHESTRATOR, "GIT_COMMITTER_EMAIL": f"{ORCHESTRATOR}@vaultmem.invalid",
           "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "conversational dev set"]):
        subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True)


def build(out: Path, split: str = "tune", lang: str = "en", layout: str = "turn", ids: tuple[str, ...] = (),
          force: bool = False, settings: dict[str, object] | None = None, git: bool = True) -> list[dict]:
    """Write the vault of ``split`` × ``lang`` × ``layout`` (or only the conversations
    ``ids``) and its ``queries.yaml`` into ``out``, committed with ``git``; returns the
    queries."""
    convs = conversations(split, lang, ids)
    if not convs:
        raise SystemExit(f"no {lang} conversations in {CONV_DIR / split}" + (f" with ids {', '.join(ids)}" if ids else ""))
    if out.exists() and any(out.iterdir()):
        if not force:
            raise SystemExit(f"{out} is not empty (--force replaces it)")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    for rel, text in vault_files(convs, lang, layout).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if settings:
        set_config(out, settings)
    queries = queries_of(convs, layout)
    (out / "queries.yaml").write_text(dump_queries(queries), encoding="utf-8")
    if git:
        commit(out)
    return queries


# -- running ------------------------------------------------------------------------------------


def semantic_known() -> bool:
    """Whether the installed vaultmem reads ``search.semantic``."""
    import inspect

    from vaultmem import config

    try:
        return "search.semantic" in inspect.getsource(config)
    except OSError:  # pragma: no cover — no source: ask the class (a named tuple, or a dataclass before)
        names = getattr(config.Config, "_fields", None) or config.Config.__dataclass_fields__
        return any("semantic" in f for f in names)


def with_settings(config, **changes):
    """``config`` with ``changes``: a named tuple's ``_replace``, or (a checkout from before
    Config was one) ``dataclasses.replace``."""
    if hasattr(config, "_replace"):
        return config._replace(**changes)
    import dataclasses

    return dataclasses.replace(config, **changes)


def parse_sets(items: list[str], error) -> dict:
    """``--set KEY=VALUE`` options as {key: value}; ``error(message)`` for a malformed one."""
    settings = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            error(f"--set takes KEY=VALUE, not {item!r}")
        settings[key.strip()] = parse_value(value)
    return settings


def parse_value(text: str):
    """A --set value as YAML reads it (0.2 → float, true → bool, word → str)."""
    value = YAML(typ="safe").load(text)
    return text if value is None and text.strip() not in ("null", "~") else value


def judged_relevant(hit, question: str, min_coverage: float) -> bool:
    if getattr(hit, "relevant", None) is not None:  # (the code before the relevance cut has none)
        return bool(hit.relevant)
    from vaultmem.retrieve import is_relevant

    return is_relevant(hit, question, min_coverage)


def run_vault(root: Path, queries: list[dict]) -> list[dict]:
    """Search and brief every question in one process: one row per question."""
    from vaultmem.vault import Vault

    vault = Vault.open(root)
    vault.sync_vectors()  # as 'vaultmem index' does: a search embeds only a few documents itself
    cut = getattr(vault.config, "min_relevance", getattr(vault.config, "brief_min_coverage", 0.3))
    # the same brief with its relevance gate open (every candidate may join, up to max_items):
    # what the gate costs a brief's evidence coverage, apart from what search ranks
    gate = "brief_min_relevance" if hasattr(vault.config, "brief_min_relevance") else "brief_min_coverage"
    opened = Vault(root, config=with_settings(vault.config, **{gate: 0.0}))
    rows = []
    for q in queries:
        hits = list(vault.search(q["query"], limit=SEARCH_LIMIT))
        ids = [h.doc.path for h in hits]
        expected = q["expected"]
        ranks = [n for n, p in enumerate(ids, 1) if p in expected]
        relevant = [judged_relevant(h, q["query"], cut) for h in hits]
        brief = vault.brief(ORCHESTRATOR, q["query"], tokens=BRIEF_TOKENS)
        cited = [item.get("path") for item in brief.items]
        cited_open = [item.get("path") for item in opened.brief(ORCHESTRATOR, q["query"], tokens=BRIEF_TOKENS).items]
        rows.append({
            "id": q["id"], "kind": q["kind"], "query": q["query"], "expected": expected,
            "first_rank": ranks[0] if ranks else None,
            "found@5": len(set(ids[:5]) & set(expected)), "found@10": len(set(ids[:10]) & set(expected)),
            "any_relevant": any(relevant),
            "evidence_cut": bool(ranks) and not any(relevant[n - 1] for n in ranks),
            "brief_covers": any(p in expected for p in cited), "brief_items": len(cited),
            # whether the brief says memory matched the task (a brief before its no_memory: it cites any)
            "brief_matched": not getattr(brief, "no_memory", not cited),
            "open_covers": any(p in expected for p in cited_open), "open_items": len(cited_open),
            "brief_tokens": brief.tokens, "top3": ids[:3], "channels": [getattr(h, "channel", "lexical") for h in hits[:3]],
        })  # fmt: skip
    return rows


def mean(values: list[float], places: int = 4) -> float | None:
    """The mean of ``values`` to ``places`` decimals (None when there are none): a rate."""
    return round(sum(values) / len(values), places) if values else None


def fmt(value: float | None) -> str:
    """A rate as the tables write it: three decimals, — when there is none."""
    return "—" if value is None else f"{value:.3f}"


def metrics(rows: list[dict]) -> dict:
    """The figures of ``rows`` (one per question, as :func:`run_vault` gives them): the
    hits, ranks and recall of the answerable questions, the false hits of the others."""
    ans = [r for r in rows if r["expected"]]
    none = [r for r in rows if not r["expected"]]

    def hit(k: int) -> float | None:
        return mean([1.0 if r["first_rank"] and r["first_rank"] <= k else 0.0 for r in ans])

    m = {"questions": len(rows), "answerable": len(ans), "no_answer": len(none),
         "hit@1": hit(1), "hit@5": hit(5), "hit@10": hit(10),
         "mrr@10": mean([1.0 / r["first_rank"] if r["first_rank"] else 0.0 for r in ans]),
         "recall@5": mean([r["found@5"] / len(r["expected"]) for r in ans]),
         "recall@10": mean([r["found@10"] / len(r["expected"]) for r in ans]),
         "false_hits": mean([1.0 if r["any_relevant"] else 0.0 for r in none]),
         "evidence_cut": mean([1.0 if r["evidence_cut"] else 0.0 for r in ans]),
         "brief_coverage": mean([1.0 if r["brief_covers"] else 0.0 for r in ans]),
         "brief_false_hits": mean([1.0 if r["brief_items"] else 0.0 for r in none]),
         "brief_matched_false": mean([1.0 if r.get("brief_matched", r["brief_items"]) else 0.0 for r in none]),
         "open_coverage": mean([1.0 if r.get("open_covers") else 0.0 for r in ans]),
         "open_false_hits": mean([1.0 if r.get("open_items") else 0.0 for r in none])}  # fmt: skip
    return m


def invariant_problems(m: dict) -> list[str]:
    if not m["answerable"]:
        return []
    from vaultmem.evaluate import check_invariants

    problems = check_invariants({k: m[k] for k in ("hit@1", "hit@10", "mrr@10")})
    for a, b in (("hit@1", "hit@5"), ("hit@5", "hit@10"), ("recall@5", "recall@10"), ("recall@5", "hit@5"),
                 ("recall@10", "hit@10")):
        if m[a] > m[b] + 1e-3:
            problems.append(f"{a} {m[a]} > {b} {m[b]}")
    return problems


@dataclass
class Result:
    split: str
    lang: str
    layout: str
    mode: str
    engine: str
    available: bool = True
    reason: str = ""  # why not available
    rows: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    notes: int = 0

    def summary(self) -> dict:
        out = {"split": self.split, "lang": self.lang, "layout": self.layout, "mode": self.mode,
               "engine": self.engine, "available": self.available, "reason": self.reason, "notes": self.notes,
               "seconds": round(self.seconds, 2)}
        if self.available:
            m = metrics(self.rows)
            out["metrics"] = m
            out["by_kind"] = {k: metrics([r for r in self.rows if r["kind"] == k])
                              for k in KINDS if any(r["kind"] == k for r in self.rows)}
            out["invariant_problems"] = invariant_problems(m)
        return out


def run_one(split: str, lang: str, layout: str, mode: str, engine: str, settings: dict) -> Result:
    from vaultmem.errors import VaultmemError

    res = Result(split, lang, layout, mode, engine)
    if not conversations(split, lang):
        res.available, res.reason = False, f"no data in conv/{split}/"
        return res
    extra = dict(settings)
    extra["index.engine"] = engine
    if not semantic_known():
        if mode != "lexical":  # lexical is what such a vaultmem does anyway
            res.available, res.reason = False, "not available (this vaultmem has no search.semantic)"
            return res
    else:
        extra["search.semantic"] = MODES[mode]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"conv-{split}-{lang}-{layout}-") as tmp:
        root = Path(tmp) / "vault"
        try:
            queries = build(root, split, lang, layout, settings=extra, git=False)
        except VaultmemError as exc:  # a vaultmem that refuses the mode's value
            if "search.semantic" not in str(getattr(exc, "message", exc)):
                raise
            res.available, res.reason = False, f"not available ({getattr(exc, 'message', exc)})"
            return res
        res.notes = len(list((root / "memories").glob("*.md")))
        res.rows = run_vault(root, queries)
    res.seconds = time.perf_counter() - start
    return res


COLUMNS = ("hit@1", "hit@5", "mrr@10", "recall@5", "recall@10", "false_hits", "evidence_cut", "brief_coverage",
           "brief_false_hits", "brief_matched_false", "open_coverage", "open_false_hits")


def markdown(results: list[Result], details: bool, settings: dict) -> str:
    """The run as Markdown: a row per vault, then each vault's figures by kind of question
    (with ``details``, by question too)."""
    import vaultmem

    def overall(r: Result) -> list:
        head = [r.split, r.lang, r.layout, r.mode, r.engine]
        if not r.available:
            return [*head, r.reason, *[""] * (len(COLUMNS) + 1)]
        m = metrics(r.rows)
        return [*head, m["questions"], *(fmt(m[c]) for c in COLUMNS), f"{r.seconds:.1f}"]

    def asked(row: dict) -> list:
        top = ", ".join(p.removeprefix("memories/").removesuffix(".md") for p in row["top3"])
        covers = "yes" if row["brief_covers"] else "no" if row["expected"] else f"cites {row['brief_items']}"
        return [row["id"], row["kind"], row["first_rank"] or "—", top, covers]

    measured = code_version(source=Path(vaultmem.__file__).resolve().parent.parent)
    out = ["# Conversational recall (benchmarks/bench_conv.py)", "",
           f"vaultmem {getattr(vaultmem, '__version__', '?')} (commit {measured}); search limit {SEARCH_LIMIT}, "
           f"brief {BRIEF_TOKENS} tokens; settings: {settings or 'defaults'}.",
           "false_hits: no-answer questions with any hit that passes the relevance cut; evidence_cut: "
           "answerable questions whose evidence is in the top 10 but every evidence hit fails the cut; "
           "brief_false_hits: no-answer questions whose brief cites any memory; brief_matched_false: those whose "
           "brief says memory matched the task (not no_memory: its nearest hits aside); open_coverage / open_false_hits: "
           "the same brief with its relevance gate open (brief.min_relevance 0).", "",
           *table(["split", "lang", "layout", "mode", "engine", "questions", *COLUMNS, "s"],
                  [overall(r) for r in results]).splitlines()]
    for r in results:
        if not r.available:
            continue
        s = r.summary()
        out += ["", f"## {r.split} · {r.lang} · {r.layout} · {r.mode} · {r.engine} ({r.notes} notes)", "",
                *table(["kind", "n", *COLUMNS], [[kind, m["questions"], *(fmt(m[c]) for c in COLUMNS)]
                                                 for kind, m in s["by_kind"].items()]).splitlines()]
        if s["invariant_problems"]:
            out += ["", "Invariant problems: " + "; ".join(s["invariant_problems"])]
        if details:
            out += ["", *table(["id", "kind", "first evidence rank", "top 3", "brief covers"],
                               [asked(row) for row in r.rows]).splitlines()]
    return "\n".join(out) + "\n"


# -- command line -------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="validate conversation files (default: both splits)")
    c.add_argument("dirs", nargs="*", type=Path)
    b = sub.add_parser("build", help="write one vault and its queries.yaml")
    b.add_argument("dir", type=Path)
    b.add_argument("--split", choices=SPLITS, default="tune")
    b.add_argument("--lang", choices=LANGS, default="en")
    b.add_argument("--layout", choices=LAYOUTS, default="turn")
    b.add_argument("--conv", action="append", default=[], help="only this conversation (repeatable)")
    b.add_argument("--force", action="store_true", help="replace a non-empty DIR")
    r = sub.add_parser("run", help="build each vault in a temp dir, search and brief every question")
    r.add_argument("--split", choices=(*SPLITS, "both"), default="tune")
    r.add_argument("--lang", choices=(*LANGS, "all"), default="all")
    r.add_argument("--layout", choices=(*LAYOUTS, "both"), default="turn")
    r.add_argument("--engine", choices=("whoosh", "tantivy"), default="whoosh")
    r.add_argument("--mode", choices=(*MODES, "all"), default="lexical")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other config key")
    r.add_argument("--details", action="store_true", help="per question: first evidence rank, top 3")
    r.add_argument("--json", action="store_true", help="JSON on stdout instead of Markdown")
    r.add_argument("--out", type=Path, help="also write the Markdown here")
    args = ap.parse_args(argv)

    if args.cmd == "check":
        rep = check(args.dirs or None)
        for (split, lang), counts in sorted(rep.counts.items()):
            print(f"{split} {lang}: {sum(counts.values())} questions — "
                  + ", ".join(f"{k} {counts[k]}" for k in KINDS))
        for w in rep.warnings:
            print(f"warning: {w}", file=sys.stderr)
        for p in rep.problems:
            print(f"problem: {p}", file=sys.stderr)
        print(f"{rep.files} files, {len(rep.problems)} problems, {len(rep.warnings)} warnings")
        return 0 if rep.ok else 1
    if args.cmd == "build":
        queries = build(args.dir, args.split, args.lang, args.layout, tuple(args.conv), args.force)
        print(f"wrote {args.dir}: {len(list((args.dir / 'memories').glob('*.md')))} notes, "
              f"{len(queries)} questions in {args.dir / 'queries.yaml'}")
        return 0
    settings = parse_sets(args.set, ap.error)
    splits = SPLITS if args.split == "both" else (args.split,)
    langs = LANGS if args.lang == "all" else (args.lang,)
    layouts = LAYOUTS if args.layout == "both" else (args.layout,)
    modes = tuple(MODES) if args.mode == "all" else (args.mode,)
    results = [run_one(s, lg, ly, md, args.engine, settings)
               for s in splits for lg in langs for ly in layouts for md in modes]
    text = markdown(results, args.details, settings)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        print(json.dumps([{**r.summary(), "settings": settings, **({"details": r.rows} if args.details else {})}
                          for r in results],
                         ensure_ascii=False, indent=1))
    else:
        print(text, end="")
    problems = [p for r in results if r.available for p in r.summary()["invariant_problems"]]
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
