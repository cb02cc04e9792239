"""What every engine indexes for a document: the same fields, the same terms.

Text fields hold the terms :mod:`vaultmem.analysis` produced, joined by spaces; the
engines only split them again, so what matches never depends on the engine.
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from math import isfinite
from pathlib import Path

from .. import files
from ..analysis import DATE_PREFIX, document_date_terms, is_cjk_char, tokens
from ..models import IndexDoc
from . import fold

NONE = "#none"  # the agent field of docs that belong to no agent ('#' is never in a name)
FIELDS = (("title", 2.0), ("body", 1.0), ("aliases", 1.5), ("near", 0.5), ("dates", 1.0))
TEXT_FIELDS = (*(name for name, _boost in FIELDS), "chars")  # the fields that are scored
WORD_FIELDS = tuple(name for name, _boost in FIELDS if name != "dates")  # where a word is looked for


def fields_for(term: str) -> tuple[str, ...]:
    """The fields a query term is looked for in: a CJK character in ``chars`` (the
    unigrams kept for one-character queries), a date term in ``dates``, any other term
    in each of :data:`WORD_FIELDS`."""
    if term.startswith(DATE_PREFIX):
        return ("dates",)
    if is_cjk_char(term):
        return ("chars",)
    return WORD_FIELDS


OWN_FIELDS = ("title", "body", "aliases")  # what a document itself says (not its neighbours)
FILTER_FIELDS = ("tags", "author_kind", "date", "meta")  # what the filters beyond scope read
SEPARATOR = "\x1f"  # between the values of a many-valued filter field (tags, meta)
# a longer frontmatter value is indexed (and looked for) by a digest: 17 characters, not a
# description's or a timestamp's 25–200 (a third of the term dictionary: docs/benchmarks.md)
MAX_VALUE = 24


def holding_fields(term: str) -> tuple[str, ...]:
    """The fields in which a document holds a term itself (a required or excluded term
    of a query's syntax): a CJK character in ``chars``, a date term in ``dates``, any
    other in :data:`OWN_FIELDS` — never in the neighbours' text."""
    if term.startswith(DATE_PREFIX):
        return ("dates",)
    if is_cjk_char(term):
        return ("chars",)
    return OWN_FIELDS


def meta_term(key: str, value: str) -> str:
    """The ``meta`` field's term for frontmatter ``key: value`` (both folded), as a
    ``where`` filter looks it up."""
    return _term(fold(key), value)


def _term(folded_key: str, value: str) -> str:
    value = fold(value)
    if len(value) > MAX_VALUE:
        import hashlib

        value = "#" + hashlib.sha1(value.encode("utf-8")).hexdigest()[:16]
    return f"{folded_key}={value}"


@lru_cache(maxsize=1024)
def _meta_key(key: str) -> tuple[str, str]:
    """A frontmatter key folded as :meth:`Filters.admits` folds it, and as its term
    holds it (:func:`meta_term` folds that again). The same dozen keys recur in every
    note: a build folds each once."""
    once = fold(key)
    return once, fold(once)


def filter_values(doc: IndexDoc) -> dict[str, list[str]]:
    """The terms of a document's filter fields: its folded tags, author kind, day (the
    first ten characters of its date; :data:`NONE` without one) and ``key=value`` of
    each scalar frontmatter value — what :meth:`Filters.admits` compares."""
    meta: dict[str, tuple[str, str]] = {}  # as admits() folds the keys: the last of equal keys
    for key, value in doc.meta.items():
        once, term_key = _meta_key(key)
        meta[once] = (term_key, value)
    return {"tags": list(dict.fromkeys(fold(t) for t in doc.tags)) or [NONE],
            "author_kind": [doc.author_kind or NONE],
            "date": [doc.date[:10] if doc.date else NONE],
            "meta": [_term(term_key, value) for term_key, value in meta.values()] or [NONE]}


LENGTHS_FILE = "lengths.json"


# Where a note's speaker's name is indexed: "title" (where the note's name and description
# put it), "near" (at the neighbours' low weight) or "strip". Measured on the conversational
# dev sets (docs/recall.md): moving it out helps questions asked by name about what the
# other speaker said, and costs more of the rest.
SPEAKER = "title"


def without(terms: list[str], names: set[str]) -> list[str]:
    return [t for t in terms if t not in names] if names else terms


def _said_by(doc: IndexDoc) -> set[str]:
    return set(tokens(doc.speaker)) if doc.speaker and SPEAKER != "title" else set()


# A neighbour's text is in the ``near`` field of up to 2 × NEAR entries around it, joined by
# " \n" (parse.records): analysed once per piece, not once per entry it stands beside. The
# terms of a text joined at " \n" are its pieces' terms in order (analysis.tokens: a space
# and a newline end every word and CJK run, and NFKC composes nothing across them).
NEAR_JOIN = " \n"


@lru_cache(maxsize=4096)
def _piece_terms(piece: str) -> tuple[str, ...]:
    return tuple(tokens(piece))


def _near(doc: IndexDoc, said_by: set[str]) -> str:
    terms = [t for piece in doc.near.split(NEAR_JOIN) for t in _piece_terms(piece)] if doc.near else []
    return " ".join([*terms, *(sorted(said_by) if SPEAKER == "near" else ())])


# A document's stored copy leaves out what it can say again (docs/benchmarks.md: a fifth
# of the document store): its id where its path (and entry id) make it, each field whose
# value is its default, and each frontmatter value that one of the document's own fields
# already holds (a note's ``name`` is its title, its ``description`` its last alias, its
# ``author`` its speaker; ``type``, ``status``, ``author_kind``, ``project`` and
# ``session`` the fields of those names). Those values are written as the number of the
# field that holds them (:func:`_sources`), under ``meta~`` instead of ``meta`` — where no
# frontmatter value is a number, so none is read as such.
_TEMPLATE = IndexDoc(id="", path="", kind="", text="").plain()  # every field, in order
_DEFAULTS = {name: value for name, value in _TEMPLATE.items() if name not in ("id", "path", "kind", "text")}
_NO_DEFAULT = object()  # (equal to nothing: id, path, kind and text are always written)
_FRESH = {"aliases": list, "tags": list, "meta": dict, "days": list}  # defaults each document has its own of
SAID_AGAIN = "meta~"
# the frontmatter keys whose values a document's fields hold, and the place of that field in _sources
_SAID_AT = {"name": 0, "type": 1, "status": 2, "author_kind": 3, "author": 4, "project": 5, "session": 6,
            "description": 7}


def _sources(plain: dict) -> list:
    """The values a frontmatter value may repeat, numbered by their place here."""
    aliases = plain["aliases"]
    return [plain["title"], plain["type"], plain["status"], plain["author_kind"], plain["speaker"],
            plain["project"], plain["session"], aliases[-1] if aliases else None]


def _id_of(plain: dict) -> str:
    """The id a document of this path and entry id has (its own, unless given another)."""
    return f"{plain['path']}#^{plain['entry_id']}" if plain["entry_id"] else plain["path"]


def _compact(plain: dict) -> dict:
    out = {name: value for name, value in plain.items() if value != _DEFAULTS.get(name, _NO_DEFAULT)}
    if out["id"] == _id_of(plain):
        del out["id"]
    meta = out.get("meta")
    if meta:
        sources = said = None
        for key, n in _SAID_AT.items():
            value = meta.get(key)
            if value is not None and value.__class__ is str:
                if sources is None:
                    sources = _sources(plain)
                if value == sources[n]:
                    if said is None:
                        said = dict(meta)
                    said[key] = n
        if said is not None and int not in map(type, meta.values()):
            del out["meta"]
            out[SAID_AGAIN] = said
    return out


def doc_json(doc: IndexDoc) -> bytes:
    """What an engine stores of a document to show it as a hit: its fields as UTF-8 JSON,
    without what :func:`stored_doc` can say again. orjson, not json: a build writes one a
    document and a search reads one a hit, at a third of json's cost each way
    (docs/benchmarks.md)."""
    import orjson

    plain = _compact(doc.plain())
    if not all(isfinite(v) for v in (plain.get("importance"), plain.get("turn")) if v is not None):
        return json.dumps(plain).encode("ascii")  # orjson writes NaN and infinity as null; json as they are
    try:
        return orjson.dumps(plain)
    except TypeError:  # text UTF-8 cannot hold (a lone surrogate): escaped, as json writes it
        return json.dumps(plain).encode("ascii")


def stored_doc(data: bytes | str) -> IndexDoc:
    """The document :func:`doc_json` stored (or json before it: a text that writes
    ``Infinity`` still reads), every field as it was."""
    import orjson

    try:
        stored = orjson.loads(data)
    except orjson.JSONDecodeError:
        stored = json.loads(data)
    if not isinstance(stored, dict) or "path" not in stored:
        return IndexDoc.from_plain(stored)  # (fails as it would)
    plain = {**_TEMPLATE, **stored}
    if "id" not in stored:
        plain["id"] = _id_of(plain)
    for name, make in _FRESH.items():
        if name not in stored:
            plain[name] = make()
    said = plain.pop(SAID_AGAIN, None)
    if said is not None:
        sources = _sources(plain)
        plain["meta"] = {key: sources[value] if value.__class__ is int else value for key, value in said.items()}
    return IndexDoc.from_plain(plain)


def fields_of(doc: IndexDoc) -> dict:
    """The fields of a document. Where its speaker's name counts is :data:`SPEAKER`: a
    turn titled "Melanie, session 3" is by Melanie, not about her."""
    said_by = _said_by(doc)
    runs: list[str] = []  # the CJK runs of title, text and aliases, in order: the unigrams' field
    # NFKC'd once for both their terms and their dates (NFKC again finds nothing to do, and
    # changes nothing across the newline the dates join them with)
    flat_title, flat_text = unicodedata.normalize("NFKC", doc.title), unicodedata.normalize("NFKC", doc.text)
    title, body, aliases = (tokens(flat_title, runs), tokens(flat_text, runs), tokens(" ".join(doc.aliases), runs))
    return {
        "id": doc.id,
        "path": doc.path,
        "kind": doc.kind,
        "agent": doc.agent or NONE,
        "type": doc.type or NONE,
        "status": doc.status or "active",
        "doc": doc_json(doc),
        "title": " ".join(without(title, said_by)),
        "body": " ".join(body),
        "aliases": " ".join(without(aliases, said_by)),
        "near": _near(doc, said_by),
        "dates": " ".join(document_date_terms(flat_title, flat_text, doc.days)),
        # cjk_chars of the three joined by spaces: no run crosses a space
        "chars": " ".join(dict.fromkeys("".join(runs))),
        **{name: SEPARATOR.join(values) for name, values in filter_values(doc).items()},
    }


def analysed_texts(stored: list[str]) -> dict[str, str]:
    """What :func:`tokens` gives of the parts of a document, read from what the index
    stores of its text fields (``stored``, in :data:`TEXT_FIELDS` order): ``body`` (its
    text), ``title``, ``aliases`` and ``near`` (its neighbours' text), each part's terms
    joined by single spaces as stored (:func:`held_among` looks for a few terms in them).
    Where :data:`SPEAKER` moves the speaker's name out of the title, the title, aliases
    and neighbours' terms are not those of their text, and are left out."""
    by_name = dict(zip(TEXT_FIELDS, stored))
    parts = ("body",) if SPEAKER != "title" else ("body", "title", "aliases", "near")
    return {name: by_name[name] for name in parts}


def held_among(joined: str, wanted: list[tuple[str, str]]) -> set[str]:
    """Which of the terms ``wanted`` — (term, the term between two spaces) each — are among
    ``joined``, terms joined by single spaces as the index stores them: a substring test
    each, without splitting hundreds of terms to look for a handful (no term is empty or
    holds a space)."""
    if not joined:
        return set()
    padded = f" {joined} "
    return {term for term, spaced in wanted if spaced in padded}


def own_terms(stored: list[str]) -> set[str] | None:
    """The distinct terms of a document's title, text and aliases, read from what the
    index stores (as :func:`analysed_texts` reads them), or
    None where :data:`SPEAKER` keeps them from being those of their text."""
    if SPEAKER != "title":
        return None
    title, body, aliases = (stored[n] for n in _OWN_AT)
    return {*title.split(), *body.split(), *aliases.split()}


_OWN_AT = tuple(TEXT_FIELDS.index(name) for name in ("title", "body", "aliases"))


def with_neighbours(fields: dict, doc: IndexDoc) -> dict:
    """``fields`` (``fields_of(doc)`` before ``doc.near`` was filled in) with the
    neighbours' text: the same as ``fields_of(doc)`` now, without analysing the rest again."""
    return {**fields, "doc": doc_json(doc), "near": _near(doc, _said_by(doc))}


def term_count(joined: str) -> int:
    """The number of terms of a text field (terms joined by single spaces: no term is
    empty or holds a space)."""
    return joined.count(" ") + 1 if joined else 0


def lengths_of(fields: dict) -> list[int]:
    """The number of terms in each of :data:`TEXT_FIELDS` of a document's fields."""
    return [term_count(fields[name]) for name in TEXT_FIELDS]


# Each text field's total length over the live documents — what BM25's average field
# length is made of — kept beside an engine's files and tied to the engine's commit
# (``stamp``): engines count deleted documents (and Whoosh, after a merge, rounded
# lengths) in their own totals, so an updated index would not score as a fresh one.
def kept_lengths(folder: Path, stamp) -> list[int] | None:
    """The totals recorded for the commit ``stamp``, or None (none, or another commit's)."""
    try:
        kept = json.loads((Path(folder) / LENGTHS_FILE).read_text(encoding="utf-8"))
        if kept["stamp"] == stamp and len(kept["lengths"]) == len(TEXT_FIELDS):
            return [int(n) for n in kept["lengths"]]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def keep_lengths(folder: Path, stamp, lengths: list[int]) -> None:
    """Record the totals of the commit ``stamp`` (lost or stale ones are counted afresh)."""
    try:
        files.atomic_write(Path(folder) / LENGTHS_FILE, json.dumps({"stamp": stamp, "lengths": list(lengths)}),
                           durable=False)
    except OSError:
        pass
