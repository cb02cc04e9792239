"""The tantivy engine (tantivy-py, a Rust search library with Python wheels).

The same documents, fields and filters as the Whoosh engine: fields hold the terms
:mod:`vaultmem.analysis` produced, joined by spaces and split again by tantivy's
``whitespace`` tokenizer (which neither lowercases nor drops long tokens, so what is
indexed is exactly what analysis said). Text fields record frequencies but no positions
(no phrase queries are made). Scoring is tantivy's BM25 (k1 1.2, b 0.75, not
adjustable) summed over the fields, each term query boosted by its field's weight
(title ×2, body, aliases ×1.5, near ×0.5), where Whoosh computes BM25F; docs/recall.md
gives the dev-set figures of both. Filters are term queries on raw fields, wrapped so
they never change a score. The whole IndexDoc is stored as JSON bytes.

tantivy has its own writer lock (``.tantivy-writer.lock``); the index store already lets
one process write at a time, so the lock is only ever contended if something outside
vaultmem writes here, and then it surfaces as :class:`~vaultmem.errors.Busy`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..analysis import is_cjk_char
from ..errors import Busy
from ..models import IndexDoc
from . import DEFAULT_EXCLUDED_KINDS, INACTIVE, Filters, rarest_terms
from .fields import FIELDS, NONE, fields_of
from .registry import EngineSpec, register

RAW_FIELDS = ("id", "path", "kind", "agent", "type", "status")
WRITER_HEAP = 64_000_000
# ``auto`` builds a tantivy index from this many Markdown files on (Whoosh misses the
# 5 ms warm-search goal from 200 notes and is slower at every size measured:
# docs/benchmarks.md), and a Whoosh index is rebuilt on tantivy once the vault grows past
# it — never the other way round.
AUTO_TANTIVY_FILES = 200


def _schema():
    import tantivy

    sb = tantivy.SchemaBuilder()
    for name in RAW_FIELDS:
        sb.add_text_field(name, stored=False, tokenizer_name="raw", index_option="basic")
    for name in ("title", "body", "aliases", "near", "chars"):
        sb.add_text_field(name, stored=False, tokenizer_name="whitespace", index_option="freq")
    sb.add_bytes_field("doc", stored=True, indexed=False)
    return sb.build()


class TantivyEngine:
    """One tantivy index folder. ``create=True`` makes a new empty index there."""

    name = "tantivy"

    def __init__(self, folder: Path, create: bool = False) -> None:
        import tantivy

        self.folder = Path(folder)
        if create:
            self.folder.mkdir(parents=True, exist_ok=True)
        elif not (self.folder / "meta.json").is_file():
            raise FileNotFoundError(f"no tantivy index in {self.folder}")
        self.schema = _schema()
        self.ix = tantivy.Index(self.schema, path=str(self.folder), reuse=not create)
        self._searcher = None
        self._stamp = None

    def write(self, add: list[IndexDoc], delete_paths: list[str], prepared: list[dict] | None = None) -> None:
        import tantivy

        if not add and not delete_paths:
            return
        try:
            writer = self.ix.writer(WRITER_HEAP, 1)
        except ValueError as exc:
            if "LockBusy" in str(exc):
                raise Busy("another program holds the tantivy index's writer lock",
                           path=str(self.folder / ".tantivy-writer.lock"), hint="retry in a moment") from None
            raise
        try:
            for path in delete_paths:
                writer.delete_documents_by_term("path", path)
            for n, doc in enumerate(add):
                fields = prepared[n] if prepared else fields_of(doc)
                tdoc = tantivy.Document()
                for name in RAW_FIELDS:
                    tdoc.add_text(name, fields[name])
                for name in ("title", "body", "aliases", "near", "chars"):
                    if fields[name]:
                        tdoc.add_text(name, fields[name])
                tdoc.add_bytes("doc", fields["doc"].encode("utf-8"))
                writer.add_document(tdoc)
            writer.commit()
        except BaseException:
            writer.rollback()
            writer.wait_merging_threads()
            raise
        writer.wait_merging_threads()  # also frees the writer (and its lock)
        self.ix.reload()
        self._searcher = None

    def _get_searcher(self):
        """A searcher on the newest commit: another process may have written since
        (tantivy's meta.json changes with every commit, so its stat tells)."""
        try:
            st = (self.folder / "meta.json").stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        if self._searcher is None or stamp != self._stamp:
            self.ix.reload()
            self._searcher, self._stamp = self.ix.searcher(), stamp
        return self._searcher

    def search(self, terms: list[str], filters: Filters, limit: int, *, text: str = "") -> list[tuple[IndexDoc, float]]:
        from tantivy import Occur, Query

        if not terms:
            return []
        searcher = self._get_searcher()
        terms = rarest_terms(terms, lambda t: sum(searcher.doc_freq(name, t) for name, _b in FIELDS))
        s = self.schema
        should = [(Occur.Should, Query.term_query(s, "chars", t)) if is_cjk_char(t)
                  else (Occur.Should, Query.boost_query(Query.term_query(s, name, t), boost))
                  for t in terms for name, boost in (FIELDS[:1] if is_cjk_char(t) else FIELDS)]
        clauses = [(Occur.Must, Query.boolean_query(should))]

        def any_of(field: str, values) -> Query:
            return Query.const_score_query(Query.term_set_query(s, field, list(values)), 0.0)

        if filters.agent is not None:
            clauses.append((Occur.Must, any_of("agent", (filters.agent, NONE))))
        if filters.kinds:
            clauses.append((Occur.Must, any_of("kind", filters.kinds)))
        else:
            clauses.append((Occur.MustNot, any_of("kind", DEFAULT_EXCLUDED_KINDS)))
        if not filters.include_inactive:
            clauses.append((Occur.MustNot, any_of("status", INACTIVE)))
        if filters.types:
            clauses.append((Occur.Must, any_of("type", filters.types)))
        hits = searcher.search(Query.boolean_query(clauses), limit, count=False).hits
        out = []
        for score, address in hits:
            raw = searcher.doc(address).get_first("doc")
            out.append((IndexDoc(**json.loads(bytes(raw).decode("utf-8"))), float(score)))
        return out

    def doc_count(self) -> int:
        return self._get_searcher().num_docs

    def segment_count(self) -> int:
        return self._get_searcher().num_segments

    def optimize(self) -> bool:
        """Nothing to do: tantivy's merge policy merges segments in the background of
        each commit (the writer waits for those merges before it is released)."""
        return False

    def close(self) -> None:
        self._searcher = None
        self.ix = None



register(EngineSpec(
    name="tantivy", library="tantivy", auto_from_files=AUTO_TANTIVY_FILES,
    install_hint="pip install tantivy (or set index.engine: whoosh)",
    open=lambda gen_dir, create: TantivyEngine(gen_dir / "tantivy", create=create),  # in its own sub-folder
))
