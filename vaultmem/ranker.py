"""The learned ranker: what the engine found, re-ordered by a model trained on the tune split.

The engine's BM25 ranks by shared words alone. Whether a candidate *answers* depends on
more that the engine already knows but cannot weigh: how much of what the question asks
its own text holds (rarity-weighted, :func:`vaultmem.retrieve.relevance`) against what only
its neighbours' text holds, the date the question names, whether the entry asks rather than
answers and whether the turn before it asked, who is named, whether the number or name the
question asks for is there, what kind of entry it is, its age, and the semantic similarity
when a model is on. :func:`features` turns each candidate into one row of these;
:class:`Model` scores the rows. Two rules finish the order the scores give: a candidate
that holds no word of the question (and answers none asked) follows every one that does
(:func:`answers_in_words`), and the reply to a turn that asks the question goes just
before that turn (:func:`answering_replies`, :func:`replies_first`).

The model is plain data — ``vaultmem/data/ranker.json``: the feature names and, for a
linear model, a weight each; for trees, each tree's nodes — read once per process and
evaluated here without any library, so a search pays microseconds for it. It is trained by
``benchmarks/train_ranker.py`` on the tune split only (docs/recall.md, "The learned
ranker"), which also writes each shipped model's trees compiled into one Python function,
beside it (``ranker.compiled.py``: :func:`write_compiled`). A process scores with that
function from its first search when it was made from exactly the model file and feature
order it finds (its CRC-32 and columns say so); otherwise it walks the nodes, as it does
any other model file. A shipped embedding model may have a ranker of its own, trained with its
similarity as a feature (``vaultmem/data/ranker-e5.json``, :func:`similarity_model`): a
similarity means something only on the scale of the model that made it. Pure: no I/O but
reading the model files.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from .analysis import normalize, tokens

MODEL_PATH = Path(__file__).parent / "data" / "ranker.json"
# every feature a row holds, in order (a model names the ones it uses)
FEATURES = (
    "engine",  # BM25 over the best candidate's (0..1)
    "engine_log",  # log(1 + BM25)
    "inv_rank",  # 1 / the engine's rank
    "rel_own",  # the rarity-weighted share of the question its own text holds
    "holds_word",  # it holds a word of the question (not only its date) in its own text, title or aliases
    "rel_text",  # … that its text alone holds (not its title or aliases, which may name who said it)
    "rel_near",  # … that only its neighbours' text holds (at half, as relevance counts it)
    "coverage",  # the share of the question's terms it holds
    "title_share",  # the share of the question's weight held by its title and aliases
    "date_asked",  # the question names a date
    "date_match",  # … and this is a document of that date
    "asks",  # the entry is a question: it asks, it does not answer
    "after_question",  # the turn before it in its session is a matching question (its engine share)
    "neighbour",  # the best engine share of its neighbours (±2 turns) among the candidates
    "prev_rel",  # how much of the question the turn before it holds (its own text; 0 if not a candidate)
    "next_rel",  # … the turn after it
    "speaker_named",  # the question names who said it
    "other_named",  # the question names another speaker of the candidates, not this one
    "second_person",  # its text speaks to someone ("you", "your", 你, 您)
    "addressed",  # … and the question names another speaker: what is said to the person asked about
    "answer_asked",  # the question asks for a number or a name
    "answer_missing",  # … and its text holds none
    "own",  # the searching role's own document
    "entry",  # a role-page entry
    "note",  # a memory note
    "length",  # log(1 + characters of its text)
    "recency",  # its day among the candidates' days (0 oldest … 1 newest; 0.5 undated)
    "similarity",  # cosine similarity to the question (semantic channel; 0 when off)
    "has_similarity",  # whether the semantic channel scored it
)


@dataclass
class Candidate:
    """One candidate as :func:`features` reads it: the document, its engine score and
    rank, what judging it gave (``have``: its terms and date terms; ``rel_own``,
    ``rel_all``: relevance without and with its neighbours' text; ``coverage``;
    ``title_share``), its date terms, and its similarity when scored."""

    doc: object
    score: float
    rank: int
    dates: tuple = ()
    rel_own: float = 0.0
    rel_text: float = 0.0
    rel_all: float = 0.0
    holds_word: bool = False
    word_in_text: bool = False  # … in its own text (not its title or aliases, which may name who said it)
    after_question: bool = False  # the turn before it in its session is a candidate that asks (set by features)
    after_named: bool = False  # by the other speaker, after a candidate turn of the person the question
    # names whose own text holds a word of it (set by features)
    speaker_named: bool = False  # the question names who said it (set by features)
    coverage: float = 0.0
    title_share: float = 0.0
    asks: bool = False
    holds_answer: bool = True
    similarity: float | None = None


_SECOND_PERSON = re.compile(r"(?i)\b(?:you|your|yours|yourself)\b|[你您]")


def _named(text: str, name: str | None) -> bool:
    if not name:
        return False
    folded = normalize(name).strip()
    if not folded:
        return False
    if folded.isascii():
        return re.search(rf"(?<![a-z0-9]){re.escape(folded)}(?![a-z0-9])", text) is not None
    return folded in text


def features(cands: list[Candidate], question: str, days: set, answer_asked: bool, agent: str | None
             ) -> list[list[float]]:
    """One row of :data:`FEATURES` per candidate, in order."""
    if not cands:
        return []
    said = normalize(question)
    best = max(c.score for c in cands) or 1.0
    by_turn = {(c.doc.session, c.doc.turn): c for c in cands if c.doc.session and c.doc.turn is not None}
    speakers = {c.doc.speaker for c in cands if c.doc.speaker}
    named = {s for s in speakers if _named(said, s)}
    ordinals = [_ordinal(c.doc.date) for c in cands]
    known = [o for o in ordinals if o]
    low, high = (min(known), max(known)) if known else (0, 0)
    rows = []
    for c, day in zip(cands, ordinals):
        d = c.doc
        share = c.score / best
        after = neighbour = 0.0
        if d.session and d.turn is not None:
            prev = by_turn.get((d.session, d.turn - 1))
            if prev is not None and prev.asks:
                after = prev.score / best
                c.after_question = True
            if (prev is not None and prev.word_in_text and prev.doc.speaker in named and d.speaker
                    and d.speaker != prev.doc.speaker):
                c.after_named = True
            for step in (-2, -1, 1, 2):
                nb = by_turn.get((d.session, d.turn + step))
                if nb is not None:
                    neighbour = max(neighbour, nb.score / best)
        prev_rel = next_rel = 0.0
        if d.session and d.turn is not None:
            prev, nxt = by_turn.get((d.session, d.turn - 1)), by_turn.get((d.session, d.turn + 1))
            prev_rel = prev.rel_own if prev is not None else 0.0
            next_rel = nxt.rel_own if nxt is not None else 0.0
        own_speaker = c.speaker_named = d.speaker in named if d.speaker else False
        other = bool(named) and not own_speaker
        second = _SECOND_PERSON.search(d.text[:2000]) is not None
        rows.append([
            share, math.log1p(c.score), 1.0 / c.rank, c.rel_own, 1.0 if c.holds_word else 0.0, c.rel_text,
            max(0.0, c.rel_all - c.rel_own),
            c.coverage,
            c.title_share, 1.0 if days else 0.0, 1.0 if days and days & set(c.dates) else 0.0,
            1.0 if c.asks else 0.0, after, neighbour, prev_rel, next_rel, 1.0 if own_speaker else 0.0,
            1.0 if other else 0.0, 1.0 if second else 0.0, 1.0 if second and other else 0.0,
            1.0 if answer_asked else 0.0,
            1.0 if answer_asked and not c.holds_answer else 0.0,
            1.0 if agent and d.agent == agent else 0.0, 1.0 if d.kind == "entry" else 0.0,
            1.0 if d.kind == "note" else 0.0, math.log1p(len(d.text)),
            (day - low) / (high - low) if day and high > low else 0.5,
            c.similarity or 0.0, 0.0 if c.similarity is None else 1.0,
        ])  # fmt: skip
    return rows


# -- which candidates may lead, and a reply before the turn it answers (the order's last touches) --
def answers_in_words(c) -> bool:
    """Whether a candidate may lead the learned order: it holds a word of the question
    in its own text, title or aliases (not only its date), or it is the reply to a
    candidate turn that asked, or the other speaker's reply to a candidate turn of the
    person the question names whose own text holds a word of it (advice given on what they
    said: "练的时候盯住后视镜里的库角…" after 苏苏's "倒车入库最难", for "苏苏练倒车入库有什么窍门？").
    One that is none of these — "That sounds great!" after the turn that named the
    thing — follows every one that is, whatever the model says: a date or a neighbour
    alone never makes an answer (as the rules have it)."""
    return c.holds_word or c.after_question or c.after_named


def answering_replies(cands: list, units) -> dict[int, int]:
    """Which candidate answers which: for each candidate turn that asks the question — a
    sentence of it ends with a question mark and holds a term of ``units`` (the question's
    units with their terms, as ``retrieve.unit_weights`` gives them: its words, not its
    question words, so "你晚上吃什么？" asks nothing of "小雨去超市买了什么？") — the index of
    the next turn of its session, when that is a candidate by the other speaker that may
    lead (:func:`answers_in_words`) and, if the question names who said any candidate, by
    a person it names after a turn by one it does not: "By the way, what do you usually
    drink at breweries?" is not what "What does Leah usually drink at breweries?" wants,
    Leah's reply is; but when Leah answers and asks back, Marcus's reply is not."""
    at = {(c.doc.session, c.doc.turn): n for n, c in enumerate(cands) if c.doc.session and c.doc.turn is not None}
    if len(at) < 2:
        return {}
    want = {t for grams, _w in units for t in grams}
    named = any(c.speaker_named for c in cands)
    out = {}
    for (session, turn), n in at.items():
        r = at.get((session, turn + 1))
        if r is None:
            continue
        asked, reply = cands[n], cands[r]
        text = asked.doc.text
        if (asked.word_in_text and reply.doc.speaker != asked.doc.speaker and ("?" in text or "？" in text)
                and (not named or (reply.speaker_named and not asked.speaker_named)) and answers_in_words(reply)
                and any(want.intersection(tokens(q)) for q in _ASKING.findall(text))):
            out[n] = r
    return out


# a sentence that ends with a question mark: each begins where the last ended (one pass), a
# line or an ellipsis ends one too, and a "?" inside a word (a link's query) ends none
_ASKING = re.compile(r"(?:^|(?<=[.!?。！？…\n]))[^.!?。！？…\n]*(?:\?(?=\s|$)|？)")


def replies_first(order: list[int], replies: dict[int, int]) -> tuple[list[int], dict[int, int]]:
    """``order`` (candidates' indices, best first) with each reply of ``replies`` (asked →
    reply: :func:`answering_replies`) put just before the turn it answers, when it came
    after it — and the reply to that reply before it, when it asks too. Also which were
    moved, each to the index it now comes just before (the caller lifts its score to that
    one's)."""
    out: list[int] = []
    placed: set[int] = set()
    before: dict[int, int] = {}
    for n in order:
        if n in placed:
            continue
        chain, at = [], n
        while (r := replies.get(at)) is not None and r not in placed and r not in chain:
            chain.append(r)
            before[r] = at
            at = r
        for r in reversed(chain):
            out.append(r)
            placed.add(r)
        out.append(n)
        placed.add(n)
    return out, before


def _ordinal(day: str | None) -> int:
    if not day:
        return 0
    try:
        import datetime as dt

        return dt.date.fromisoformat(day[:10]).toordinal()
    except ValueError:
        return 0


class Model:
    """A trained ranking model: ``score(rows)`` → one score per row, higher first. Linear
    (``{"kind": "linear", "features", "mean", "scale", "weights", "bias"}``) or an ensemble
    of regression trees (``{"kind": "trees", "features", "trees": [[node, …], …]}``, a node
    ``[feature, threshold, left, right]`` or a leaf ``[value]``)."""

    def __init__(self, data: dict, ensemble=None) -> None:
        """``ensemble``: the trees already compiled into one function (the module shipped
        beside a shipped model, checked against it: :func:`model`)."""
        names = data["features"]
        unknown = [n for n in names if n not in FEATURES]
        if unknown:
            raise ValueError(f"the model uses features this vaultmem does not compute: {', '.join(unknown)}")
        self.data = data
        self.kind = data["kind"]
        self.columns = [FEATURES.index(n) for n in names]
        if self.kind == "linear":
            self.mean, self.scale = data["mean"], data["scale"]
            self.weights, self.bias = data["weights"], data.get("bias", 0.0)
        elif self.kind == "trees":
            self.trees = data["trees"]
        else:
            raise ValueError(f"unknown model kind {self.kind!r}")
        # the trees as one compiled function (:func:`_compiled`), made at the second
        # scoring: a process that searches once (a CLI command, a cold hook) never pays
        # the ~6 ms it takes; False once it could not be made
        self._ensemble = ensemble if self.kind == "trees" else None
        self._scored = 0

    @property
    def compiled(self) -> bool:
        """Whether the trees are scored by their compiled function (from the second scoring on)."""
        return bool(self._ensemble)

    def score(self, rows: list[list[float]]) -> list[float]:
        if self.kind == "trees":
            self._scored += 1
            if self._ensemble is None and self._scored > 1:
                self._ensemble = _compiled(self.trees, self.columns) or False
            if self._ensemble:
                return [self._ensemble(row) for row in rows]
        out = []
        for row in rows:
            x = [row[i] for i in self.columns]
            if self.kind == "linear":
                out.append(self.bias + sum(w * (v - m) / s for w, v, m, s in zip(self.weights, x, self.mean,
                                                                                  self.scale)))
                continue
            total = 0.0
            for tree in self.trees:
                node = tree[0]
                while len(node) == 4:
                    node = tree[node[2] if x[node[0]] <= node[1] else node[3]]
                total += node[0]
            out.append(total)
        return out


# trees summed in one statement: a longer sum is split, so that no statement nests deeper
# than the compiler allows (left to right, the same order)
TREES_A_STATEMENT = 50


def _compiled(trees: list, columns: list[int], text: bool = False):
    """The tree ensemble as one Python function of a feature row: each tree a nested
    conditional expression, summed left to right in tree order — the same sum, float for
    float, as walking the nodes. The columns the nodes read are taken from the row once,
    as local names (a search scores 60 rows × 100 trees: ~300 comparisons a row, each
    without a subscript), at a fourth to a fifth of the walk's cost. Built only from numbers (each
    checked finite and of its type), so the model file cannot put code in it; None when a
    node is not such a number, and the nodes are walked instead. With ``text``: the
    function's source."""
    read: set[int] = set()

    def expr(tree: list, at: int, depth: int) -> str:
        node = tree[at]
        if len(node) == 1:
            return _number(node[0])
        if len(node) != 4 or depth > 64:
            raise ValueError("not a tree node")
        feature, threshold, left, right = node
        if type(feature) is not int or type(left) is not int or type(right) is not int:
            raise ValueError("not a tree node")
        column = columns[feature]
        read.add(column)
        return (f"({expr(tree, left, depth + 1)} if c{column} <= {_number(threshold)} "
                f"else {expr(tree, right, depth + 1)})")

    try:
        terms = [expr(tree, 0, 0) for tree in trees]
        head = "".join(f"    c{c} = row[{c}]\n" for c in sorted(read))
        sums = [f"    t = {'t' if n else '0.0'} + {' + '.join(terms[n:n + TREES_A_STATEMENT])}\n"
                for n in range(0, len(terms), TREES_A_STATEMENT)] or ["    t = 0.0\n"]
        source = f"def ensemble(row):\n{head}{''.join(sums)}    return t\n"
        if text:
            return source
        scope: dict = {}
        exec(compile(source, "<ranker trees>", "exec"), scope)
    except (ValueError, TypeError, IndexError, RecursionError, SyntaxError, MemoryError):
        return None
    return scope["ensemble"]


def compiled_path(path: Path) -> Path:
    """Where a model file's compiled trees are shipped: ``ranker.json`` → ``ranker.compiled.py``."""
    return path.with_name(f"{path.stem}.compiled.py")


def compiled_text(data: bytes) -> str | None:
    """The module :func:`write_compiled` writes for the model file holding ``data``: its
    CRC-32, the columns its features are read from, and its trees as one function (None
    for a model that is not trees, or whose trees cannot be compiled)."""
    model_ = Model(_read_json(data))
    if model_.kind != "trees":
        return None
    source = _compiled(model_.trees, model_.columns, text=True)
    if source is None:
        return None
    return (f'"""The trees of the model file beside this one, compiled into one function: written by\n'
            f'``benchmarks/train_ranker.py`` (vaultmem.ranker.write_compiled). Do not edit."""\n\n'
            f"MODEL_CRC32 = {zlib.crc32(data)}\nCOLUMNS = {model_.columns!r}\n\n\n{source}")


def write_compiled(path: Path) -> Path | None:
    """Write the compiled trees of the model file ``path`` beside it (:func:`compiled_path`);
    a model that is not trees has none (and an old one is removed)."""
    target = compiled_path(path)
    text = compiled_text(path.read_bytes())
    if text is None:
        target.unlink(missing_ok=True)
        return None
    target.write_text(text, encoding="utf-8")
    return target


def _shipped_ensemble(path: Path, data: bytes, parsed: dict):
    """The compiled trees shipped beside the model file ``path`` — only a model of this
    package's own (a folder a user can write to is never imported from) — when they were
    made from ``data`` (``parsed``: as read) with the features in this module's order;
    None otherwise, and then the nodes are walked. Imported, so its bytecode is cached as
    any module's: ~0.2 ms, against the nodes' walk (13 M instructions for 60 candidates);
    but compiling its source takes ~12 ms, so where no bytecode is cached and none may be
    written (``PYTHONDONTWRITEBYTECODE``) it is left alone. Where bytecode may be written,
    the first process pays that once. Anything wrong with it (a damaged cache, an edited
    module) is no reason to fail a search: the nodes are walked."""
    compiled = compiled_path(path)
    if parsed.get("kind") != "trees" or path.parent != MODEL_PATH.parent or not compiled.is_file():
        return None
    if sys.dont_write_bytecode and not os.path.exists(importlib.util.cache_from_source(str(compiled))):
        return None
    spec = importlib.util.spec_from_file_location(f"{__package__}.data.{path.stem}_compiled", compiled)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - any failure of an optimisation falls back to the walk
        return None
    columns = [FEATURES.index(n) if n in FEATURES else -1 for n in parsed.get("features", ())]
    if getattr(module, "MODEL_CRC32", None) != zlib.crc32(data) or getattr(module, "COLUMNS", None) != columns:
        return None  # made from another model file, or for another order of the features
    return getattr(module, "ensemble", None)


def _number(value) -> str:
    """A node's number as the compiled function writes it: a finite float, or an int that
    a float holds exactly (a larger one would compare otherwise than the walk compares it)."""
    if type(value) is float and math.isfinite(value) or type(value) is int and abs(value) <= 2 ** 53:
        return repr(float(value))
    raise ValueError("not a finite number that a float holds exactly")


_LOADED: dict[str, Model | None] = {}


def similarity_model(spec: str | None) -> Model | None:
    """The ranker trained with the similarity of the embedding model ``spec`` (a
    ``search.model``) among its features, when one ships for it; None otherwise (a model
    in a folder of the user's own has no ranker trained on its scale). Looked for once per
    process, as :func:`model` reads one: a search asks for it every time."""
    if not spec or not re.fullmatch(r"[a-z0-9]+", spec):
        return None
    return model(MODEL_PATH.with_name(f"ranker-{spec}.json"))


def model(path: Path | None = None) -> Model | None:
    """The shipped model (or the one at ``path``), read once per process; None when there
    is none."""
    key = str(path or MODEL_PATH)
    if key not in _LOADED:
        try:
            data = Path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            _LOADED[key] = None
        else:
            parsed = _read_json(data)
            _LOADED[key] = Model(parsed, ensemble=_shipped_ensemble(Path(key), data, parsed))
    return _LOADED[key]


def _read_json(data: bytes):
    """A model file's data: by orjson (a fifth of json's time: the shipped model is read by
    every process that searches), or by json for what only json reads (NaN, Infinity)."""
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data.decode("utf-8"))
