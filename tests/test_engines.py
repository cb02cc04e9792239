"""Choosing the index engine: config, --engine on a rebuild, auto by size, switching
atomically, and tantivy's own writer lock never surfacing as a traceback."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, holds_flock, out_json, run_vaultmem, vaultmem_in_process

from vaultmem.analysis import query_tokens
from vaultmem.index import Filters
from vaultmem.index import build as build_module
from vaultmem.index import registry
from vaultmem.index.store import INDEX_DIR, IndexStore
from vaultmem.retrieve import search

NOTE = "---\nname: {n}\ntype: fact\n---\n{body}\n"


def vm(cli, vault, *args):
    return cli("--vault", vault.root, *args)


@pytest.fixture
def notes(vault):
    for n, body in [("port", "后端端口固定8080"), ("db", "We chose PostgreSQL for JSONB"),
                    ("review", "Reviews happen within one working day")]:
        (vault.root / "memories" / f"{n}.md").write_text(NOTE.format(n=n, body=body), encoding="utf-8")
    return vault


def manifest(vault) -> dict:
    base = vault.root / INDEX_DIR
    gen = (base / "CURRENT").read_text().strip()
    return json.loads((base / gen / "manifest.json").read_text())


def hits(cli, vault, query):
    return [h["id"] for h in out_json(vm(cli, vault, "search", query, "--json"))["hits"]]


def test_a_small_vault_starts_on_whoosh_and_the_config_switches_it(cli, notes):
    assert hits(cli, notes, "端口") == ["memories/port.md"]
    assert manifest(notes)["engine"] == "whoosh"
    assert vm(cli, notes, "config", "set", "index.engine", "tantivy").exit_code == 0
    # the next command that reads the index rebuilds it on tantivy, and answers the same
    assert hits(cli, notes, "端口") == ["memories/port.md"]
    assert manifest(notes)["engine"] == "tantivy"
    assert (notes.root / INDEX_DIR / (notes.root / INDEX_DIR / "CURRENT").read_text().strip() / "tantivy").is_dir()
    assert hits(cli, notes, "reviewed") == ["memories/review.md"]
    assert out_json(vm(cli, notes, "index", "--json"))["engine"] == "tantivy"
    vm(cli, notes, "config", "set", "index.engine", "whoosh")
    assert hits(cli, notes, "PostgreSQL") == ["memories/db.md"] and manifest(notes)["engine"] == "whoosh"
    assert git(notes.root, "status", "--porcelain", "--", ".vaultmem/index") == ""  # derived data stays out of git


def test_engine_on_a_rebuild_sticks_until_the_next_one(cli, notes):
    r = vm(cli, notes, "index", "--rebuild", "--engine", "tantivy", "--json")
    assert r.exit_code == 0 and out_json(r)["engine"] == "tantivy"
    (notes.root / "memories" / "new.md").write_text(NOTE.format(n="new", body="端口 9090 for staging"),
                                                     encoding="utf-8")
    assert sorted(hits(cli, notes, "端口")) == ["memories/new.md", "memories/port.md"]
    assert manifest(notes)["engine"] == "tantivy" and manifest(notes)["pinned"] is True
    assert out_json(vm(cli, notes, "index", "--rebuild", "--json"))["engine"] == "tantivy"  # a plain rebuild keeps it
    assert out_json(vm(cli, notes, "index", "--rebuild", "--engine", "auto", "--json"))["engine"] == "whoosh"
    assert manifest(notes)["pinned"] is False


@pytest.mark.parametrize("args,words", [
    (["index", "--engine", "tantivy"], "goes with --rebuild"),
    (["index", "--rebuild", "--engine", "lucene"], "not whoosh, tantivy or auto"),
])
def test_bad_engine_requests_are_refused(cli, notes, args, words):
    r = vm(cli, notes, *args)
    assert r.exit_code == 2 and words in r.output


def test_a_rebuild_cannot_contradict_the_config(cli, notes):
    vm(cli, notes, "config", "set", "index.engine", "whoosh")
    r = vm(cli, notes, "index", "--rebuild", "--engine", "tantivy")
    assert r.exit_code == 2 and "config set index.engine tantivy" in r.output
    assert vm(cli, notes, "config", "set", "index.engine", "elastic").exit_code != 0
    cfg = notes.root / ".vaultmem" / "config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("engine: whoosh", "engine: elastic"), encoding="utf-8")
    r = vm(cli, notes, "search", "端口")
    assert r.exit_code == 1 and "config.yaml:" in r.output and "index.engine" in r.output


def test_auto_moves_a_growing_vault_to_tantivy_once(notes, monkeypatch):
    monkeypatch.delenv("VAULTMEM_INDEX_ENGINE", raising=False)
    monkeypatch.setitem(registry._ENGINES, "tantivy", registry.get("tantivy")._replace(auto_from_files=8))
    store = IndexStore(notes.root)
    store.refresh()
    assert store.engine_name() == "whoosh"
    for i in range(6):
        (notes.root / "memories" / f"n{i}.md").write_text(NOTE.format(n=f"n{i}", body=f"filler {i}"), encoding="utf-8")
    report = store.refresh()
    assert report.rebuilt and report.engine == "tantivy" and store.engine_name() == "tantivy"
    assert [h.doc.id for h in search(store, "端口", Filters(), 5)] == ["memories/port.md"]
    # a Whoosh index chosen by hand is left alone
    store.rebuild(engine="whoosh")
    assert not store.refresh().rebuilt and store.engine_name() == "whoosh"
    store.close()


def test_the_journals_index_is_on_the_engine_the_vaults_size_calls_for(notes, monkeypatch):
    # under auto the journal's own index is sized by memory's when that is larger: a
    # large vault's few journal days are not put on Whoosh beside a tantivy index
    monkeypatch.delenv("VAULTMEM_INDEX_ENGINE", raising=False)
    monkeypatch.setitem(registry._ENGINES, "tantivy", registry.get("tantivy")._replace(auto_from_files=8))
    notes.rebuild_index()
    assert notes.index.engine_name() == "whoosh" and notes.journal_store().engine_name() == "whoosh"
    for i in range(6):
        (notes.root / "memories" / f"n{i}.md").write_text(NOTE.format(n=f"n{i}", body=f"filler {i}"), encoding="utf-8")
    said = notes.root.parent / "said.md"
    said.write_text("A: 端口改成9090了吗\nB: 改好了\n", encoding="utf-8")
    notes.journal.add(said, notes.actor(None), day="2026-12-01")
    notes.refresh_index()  # memory moves up; so does the journal's, though it holds one day
    assert notes.index.engine_name() == "tantivy" and notes.journal_store().engine_name() == "tantivy"
    assert {h.doc.path for h in notes.search("9090", journal=True)} == {"journal/2026-12-01.md"}
    notes.rebuild_index()  # and a rebuild builds both on tantivy
    assert notes.journal_store().engine_name() == "tantivy"
    assert IndexStore(notes.root, part="journal").engine_name() == "tantivy"  # (what another process reads)
    notes.index.close()
    notes.journal_store().close()


def test_an_index_that_stored_every_field_s_terms_answers_as_a_fresh_one(notes, monkeypatch):
    # the terms field held the unigrams too before they were made again from the rest: an
    # index built then is read as it was, and ranks as one built now
    from vaultmem.index import tantivy_engine
    from vaultmem.index.fields import SEPARATOR, TEXT_FIELDS

    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", "tantivy")
    for i in range(12):
        (notes.root / "memories" / f"m{i}.md").write_text(
            NOTE.format(n=f"m{i}", body=f"端口 port {'retry ' * (i % 4)}cache 缓存 {i}"), encoding="utf-8")
    queries = ["端口", "port retry", "cache 缓存", "PostgreSQL", "retry", "缓", "口"]

    def answers():
        store = IndexStore(notes.root)
        out = [[(d.id, round(score, 9)) for d, score in store.search(query_tokens(q), Filters(), 8, text=q)]
               for q in queries]
        store.close()
        return out

    with monkeypatch.context() as m:
        m.setattr(tantivy_engine, "stored_terms", lambda fields: SEPARATOR.join(
            [fields[name] for name in TEXT_FIELDS]).encode("utf-8"))
        IndexStore(notes.root).rebuild()
    current = (notes.root / INDEX_DIR / "CURRENT").read_text()
    old = answers()
    assert (notes.root / INDEX_DIR / "CURRENT").read_text() == current  # read as it is, not repaired
    assert all(old) and old[4][0][0].startswith("memories/m")  # (retry: the notes that say it)
    IndexStore(notes.root).rebuild()
    assert answers() == old


HOLD_LOCK = r"""
import sys, threading, tantivy
from vaultmem.index.tantivy_engine import _schema
ix = tantivy.Index(_schema(), path=sys.argv[1], reuse=True)
w = ix.writer(15_000_000, 1)
print("holding", flush=True)
threading.Event().wait()  # until killed
"""


@pytest.mark.parametrize("engine", ["tantivy", "whoosh"])
def test_an_index_whose_documents_json_wrote_reads_them_as_one_built_now(notes, monkeypatch, engine):
    # a document's stored copy was json's text (tantivy: its UTF-8 bytes; Whoosh: the text)
    # before orjson wrote it: an index built then shows the same hits, and a turn json
    # wrote as Infinity reads back as infinity
    from vaultmem.index import fields
    from vaultmem.models import IndexDoc

    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", engine)
    (notes.root / "memories" / "turn.md").write_text(
        "---\nname: turn\nsession: s1\nturn: .inf\n---\n端口 8080 in session s1\n", encoding="utf-8")
    queries = ["端口", "PostgreSQL", "session s1", "working day"]

    def answers():
        store = IndexStore(notes.root)
        out = [[(d.plain(), round(score, 9)) for d, score in store.search(query_tokens(q), Filters(), 8, text=q)]
               for q in queries]
        store.close()
        return out

    with monkeypatch.context() as m:
        m.setattr(fields, "doc_json", lambda doc: (json.dumps(doc.plain(), ensure_ascii=False).encode("utf-8")
                                                   if engine == "tantivy" else json.dumps(doc.plain(), ensure_ascii=False)))
        IndexStore(notes.root).rebuild()
    old = answers()
    assert all(old) and {h["turn"] for h, _s in old[2]} == {float("inf")}
    IndexStore(notes.root).rebuild()
    assert answers() == old
    plain = IndexDoc(id="a.md", path="a.md", kind="note", text="端口\udc80").plain()
    assert fields.stored_doc(json.dumps({**plain, "turn": float("inf")}).encode()).turn == float("inf")
    assert fields.stored_doc(fields.doc_json(IndexDoc(**plain))).plain() == plain  # a lone surrogate: escaped


def test_a_documents_stored_copy_says_every_field_again_and_stores_no_repeat():
    """A stored copy leaves out default values and frontmatter values its own fields hold,
    and is read back as the very document: every field, its type and order."""
    from vaultmem.index import fields
    from vaultmem.models import IndexDoc

    title = "端口说明"
    cases = [
        IndexDoc(id="memories/a.md", path="memories/a.md", kind="note", text="端口 8080", title=title, type="fact",
                 author_kind="user", aliases=["port", "the description"], tags=["x"], speaker="lee",
                 meta={"name": title, "description": "the description", "type": "fact", "author": "lee",
                       "status": "active", "other": title, "n": "3"}),
        # a value that is not text (no note's frontmatter gives one): the frontmatter kept whole
        IndexDoc(id="b", path="b", kind="entry", text="", title="b-title", meta={"name": "b-title", "n": 3}),
        IndexDoc(id="c", path="c", kind="entry", text="", importance=0.5, status="active"),  # defaults only
        IndexDoc(id="d", path="d", kind="note", text="x", type="1", importance=1, turn=float("inf"),
                 meta={"type": "1"}),  # (json writes infinity)
    ]
    for doc in cases:
        again = fields.stored_doc(fields.doc_json(doc))
        assert again == doc and list(again.plain().items()) == list(doc.plain().items())
        assert type(again.importance) is type(doc.importance) and again.meta == doc.meta
        assert [type(v) for v in again.meta.values()] == [type(v) for v in doc.meta.values()]
    data = fields.doc_json(cases[0])
    assert data.count(title.encode()) == 2 and data.count(b"the description") == 1  # title and "other"
    assert b"unknown" not in data and b'"near"' not in data and b'"lee"' in data and data.count(b'"lee"') == 1
    assert fields.doc_json(cases[2]) == b'{"path":"c","kind":"entry","text":""}'  # the id: its path
    entry = IndexDoc(id="agents/r.md#^m-1", path="agents/r.md", kind="entry", text="", entry_id="m-1")
    other = IndexDoc(id="agents/r.md#L3", path="agents/r.md", kind="entry", text="", line=3)
    assert b'"id"' not in fields.doc_json(entry) and b'"id":"agents/r.md#L3"' in fields.doc_json(other)
    assert [fields.stored_doc(fields.doc_json(d)) for d in (entry, other)] == [entry, other]
    one, two = (fields.stored_doc(fields.doc_json(cases[2])) for _ in range(2))
    one.tags.append("t")
    one.meta["k"] = "v"
    assert two.tags == [] and two.meta == {}  # each its own list and map


def test_tantivys_writer_lock_held_elsewhere_is_busy_not_a_traceback(cli, notes, monkeypatch):
    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", "tantivy")
    assert hits(cli, notes, "端口") == ["memories/port.md"]
    base = notes.root / INDEX_DIR
    folder = base / (base / "CURRENT").read_text().strip() / "tantivy"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        (notes.root / "memories" / "port.md").write_text(NOTE.format(n="port", body="后端端口改为9090"),
                                                          encoding="utf-8")
        # real processes while the lock is held: a command that waited on it for ever would
        # hang the test run, not only fail it (the subprocess timeout is the guard)
        r = run_vaultmem("--vault", notes.root, "index", "--json")
        assert r.returncode == 4 and "Traceback" not in r.stderr, r.stderr + r.stdout
        assert out_json(r)["error"]["type"] == "busy" and "writer lock" in out_json(r)["error"]["message"]
        r = run_vaultmem("--vault", notes.root, "search", "端口")  # reading still works meanwhile
        assert r.returncode == 0 and "Traceback" not in r.stderr
        assert holds_flock(folder / ".tantivy-writer.lock")
    finally:
        holder.kill()
        holder.wait()  # its lock (a flock) went with it
    r = vaultmem_in_process("--vault", notes.root, "index", "--json")
    assert r.returncode == 0 and out_json(r)["modified"] == ["memories/port.md"], r.stderr
    assert hits(cli, notes, "9090") == ["memories/port.md"]


def test_both_engines_score_the_dev_set_alike(tmp_path):
    """The dev set (benchmarks/devset) on Whoosh and on tantivy: every metric within one
    query of each other (docs/recall.md names the queries that rank differently)."""
    root = Path(__file__).resolve().parent.parent
    vault = tmp_path / "dev"
    subprocess.run([sys.executable, str(root / "benchmarks" / "devset" / "make_vault.py"), str(vault)], check=True,
                   capture_output=True)
    reports = {}
    for engine in ("whoosh", "tantivy"):
        r = vaultmem_in_process("eval", root / "benchmarks" / "devset" / "queries.yaml", "--vault", vault, "--at", "",
                                "--engine", engine, "--json")
        assert r.returncode == 0, r.stderr
        reports[engine] = json.loads(r.stdout)
        assert f"(engine {engine})" in reports[engine]["frozen"]
    one_query = 1 / reports["whoosh"]["answerable"]
    for metric in ("hit@1", "hit@5", "mrr@10", "recall@5", "recall@10"):
        a, b = reports["whoosh"]["metrics"][metric], reports["tantivy"]["metrics"][metric]
        assert abs(a - b) <= one_query + 0.001, (metric, a, b)  # metrics are rounded to 3 places
    assert reports["whoosh"]["metrics"]["false_hit_rate"] == reports["tantivy"]["metrics"]["false_hit_rate"]


SESSION_TURN = "---\nname: 第{t}轮\ntype: fact\nsession: 周会\nturn: {t}\nagent: 前端审查\nscope: agent\n---\n{body}\n"


@pytest.mark.usefixtures("both_engines")
def test_a_rebuild_in_worker_processes_indexes_exactly_what_one_process_does(notes, monkeypatch):
    (notes.root / "memories" / "bad.md").write_text("---\nname: [broken\n---\nx\n", encoding="utf-8")
    # the turns of a session: a worker sends these whole, and the build gives each its neighbours' text
    for t, body in enumerate(["Which cache did we pick?", "Redis, with a 30 second timeout", "会话结束"]):
        (notes.root / "memories" / f"turn-{t}.md").write_text(SESSION_TURN.format(t=t, body=body), encoding="utf-8")
    queries = ("端口", "PostgreSQL", "reviewed", "redis timeout", "cache")

    def indexed(store):
        files = manifest(notes)["files"]
        return ({q: [(h.doc.id, h.doc.near, h.doc.agent) for h in search(store, q, Filters(agent="前端审查"), 10)]
                 for q in queries},
                {rel: (e["h"], e.get("p"), e.get("o"), e.get("g")) for rel, e in files.items()})

    serial = IndexStore(notes.root)
    one = serial.rebuild()
    expected = indexed(serial)
    assert dict((i, near) for i, near, _a in expected[0]["redis timeout"])["memories/turn-1.md"] == \
        "Which cache did we pick? \n会话结束"
    assert expected[1]["memories/turn-1.md"][2:] == ("前端审查", "周会")
    serial.close()
    monkeypatch.setattr(build_module, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(build_module, "PARALLEL_CHUNK", 2)  # several batches, in real worker processes
    seen = []
    parallel = IndexStore(notes.root)
    many = parallel.rebuild(progress=lambda done, total: seen.append((done, total)))
    assert sorted(many.new) == sorted(one.new) and many.docs == one.docs and many.problems == one.problems
    assert indexed(parallel) == expected
    assert seen[-1][0] == seen[-1][1] == len(one.new) and len(seen) > 1
    parallel.close()


def test_tantivy_scores_from_stored_terms_as_its_explanation_tells(tmp_path):
    """What tantivy's scoring reads of a hit — its stored terms, counted, each field's
    length rounded as tantivy stores it — is what tantivy's own explanation of the hit
    says: every matched term's frequency and field length, in fields long and short,
    with deleted documents in the segments."""
    import random

    pytest.importorskip("tantivy")
    from tantivy import Occur, Query

    from vaultmem.analysis import query_tokens
    from vaultmem.index.tantivy_engine import TantivyEngine, clauses_of, fieldnorm, matched_terms, read_terms
    from vaultmem.models import IndexDoc

    # (the two long runs give the unigrams' field over 40 characters, where its length is rounded)
    words = ("cache redis timeout retry kafka queue deploy 缓存 端口 前端审查组件性能大列表渲染虚拟滚动技术栈 "
             "数据库索引部署日志监控告警超时重试限流熔断鉴权队列迁移回滚灰度配置接口").split()
    rng = random.Random(5)

    def doc(i):
        size = rng.choice([1, 3, 9, 39, 40, 41, 47, 120, 700, 5000])
        return IndexDoc(id=f"memories/d{i}.md", path=f"memories/d{i}.md", kind="memory",
                        title=" ".join(rng.choice(words) for _ in range(rng.randint(0, 3))),
                        text=" ".join(rng.choice(words) for _ in range(size)),
                        aliases=[rng.choice(words)] if rng.random() < 0.3 else [], near=rng.choice(["", "kafka"]))

    engine = TantivyEngine(tmp_path / "tantivy", create=True)
    engine.write([doc(i) for i in range(120)], [])
    engine.write([doc(i) for i in range(0, 120, 7)], [f"memories/d{i}.md" for i in range(0, 120, 7)])
    stats = engine.live_stats()
    assert stats.ghostly
    searcher = stats.searcher
    assert [fieldnorm(n) for n in (40, 41, 43, 47, 700, 5000)] == [40, 40, 42, 46, 664, 4632]
    for text in ("cache", "kafka retry 端口", " ".join(words), "缓 端 cache", "渲 端 灰"):  # (one character: the unigrams' field)
        clauses = clauses_of(query_tokens(text))
        query = Query.boolean_query([(Occur.Should, Query.term_query(engine.schema, f, t)) for f, t in clauses])
        weighed = stats.weighed(clauses)
        hits = searcher.search(query, 200).hits
        assert len(hits) > 20
        for _score, address in hits:
            told = stats.score(matched_terms(query.explain(searcher, address).to_json()))
            stored = read_terms(bytes(searcher.doc(address).get_first("terms")))
            assert stats.score_stored(weighed, stored) == pytest.approx(told, rel=1e-12)
    engine.close()


@pytest.mark.parametrize("speaker", ["title", "near", "strip"])
def test_one_character_scores_as_tantivys_explanation_wherever_the_speaker_is(tmp_path, monkeypatch, speaker):
    """The unigrams' field, stored as its length where the title holds the speaker's name
    (and as its characters where an ablation moves the name out): a one-character query
    scores as tantivy explains it, the speaker's own characters too."""
    pytest.importorskip("tantivy")
    from tantivy import Occur, Query

    from vaultmem.index import fields
    from vaultmem.index.tantivy_engine import TantivyEngine, clauses_of, matched_terms, read_terms
    from vaultmem.models import IndexDoc

    monkeypatch.setattr(fields, "SPEAKER", speaker)
    docs = [IndexDoc(id=f"memories/t{i}.md", path=f"memories/t{i}.md", kind="note", title=f"{who}, session {i}",
                     text=f"{what} 端口 {i}", speaker=who, aliases=[f"{who}说"] if i % 2 else [])
            for i, (who, what) in enumerate([("李明", "缓存满了"), ("王芳", "李明说端口"), ("李明", "部署"), ("赵四", "明天部署")] * 3)]
    engine = TantivyEngine(tmp_path / "tantivy", create=True)
    engine.write(docs, [])
    stats = engine.live_stats()
    checked = 0
    for text in ("李", "明", "芳 端", "李 缓 cache"):
        clauses = clauses_of(query_tokens(text))
        query = Query.boolean_query([(Occur.Should, Query.term_query(engine.schema, f, t)) for f, t in clauses])
        for _score, address in stats.searcher.search(query, 50).hits:
            told = stats.score(matched_terms(query.explain(stats.searcher, address).to_json()))
            stored = read_terms(bytes(stats.searcher.doc(address).get_first("terms")))
            assert stats.score_stored(stats.weighed(clauses), stored) == pytest.approx(told, rel=1e-12), (text, speaker)
            checked += 1
    assert checked > 12
    engine.close()


def test_tantivy_reads_only_what_can_reach_the_top_and_misses_nothing(tmp_path, monkeypatch):
    """The tantivy engine stops reading hits at the first whose stale score, times the
    bound of the statistics' drift, cannot reach the last place: its answer at every
    limit is the best documents by live score of all that match, ties by id — checked
    against every match scored — on an index with many deleted documents."""
    import random

    pytest.importorskip("tantivy")
    from tantivy import Occur, Query

    from vaultmem.analysis import query_tokens
    from vaultmem.index.fields import stored_doc
    from vaultmem.index.tantivy_engine import TantivyEngine, clauses_of, read_terms
    from vaultmem.models import IndexDoc

    words = "cache redis timeout retry kafka queue deploy 缓存 端口".split()
    rng = random.Random(9)

    def doc(i, size=None):
        return IndexDoc(id=f"memories/d{i:03d}.md", path=f"memories/d{i:03d}.md", kind="memory",
                        title=" ".join(rng.choice(words) for _ in range(rng.randint(0, 2))),
                        text=" ".join(rng.choice(words) for _ in range(size or rng.choice([2, 5, 9, 30]))))

    engine = TantivyEngine(tmp_path / "tantivy", create=True)
    engine.write([doc(i) for i in range(300)], [])
    twins = [IndexDoc(id=f"memories/t{i}.md", path=f"memories/t{i}.md", kind="memory", text="kafka retry")
             for i in range(15)]  # exact ties, across the last place
    engine.write(twins, [])
    read = []

    def check(stats):
        for text in ("kafka", "kafka retry", "缓存 timeout deploy"):
            terms = query_tokens(text)
            clauses = clauses_of(terms)
            query = Query.boolean_query([(Occur.Should, Query.term_query(engine.schema, f, t)) for f, t in clauses])
            weighed = stats.weighed(clauses)
            every = []
            for _s, address in stats.searcher.search(query, 1000).hits:
                stored = stats.searcher.doc(address)
                every.append((-stats.score_stored(weighed, read_terms(bytes(stored.get_first("terms")))),
                              stored_doc(bytes(stored.get_first("doc"))).id))
            every.sort()
            assert len(every) > 60
            for limit in (1, 5, 10, 30, 60):
                read.clear()
                got = [(-score, doc.id) for doc, score in engine.search(terms, Filters(), limit)]
                assert got == every[:limit], (text, limit)
                if not stats.ghostly and text.startswith("缓存"):  # no drift, no ties: little past the last place
                    assert len(read) < limit + 10, (limit, len(read))

    from vaultmem.index.tantivy_engine import LiveStats

    real_read = LiveStats.read

    def counted(self, address):  # every hit visited, read from the index or kept from before
        read.append(address)
        return real_read(self, address)

    stats = engine.live_stats()
    monkeypatch.setattr(LiveStats, "read", counted)
    assert not stats.ghostly
    check(stats)
    gone = list(range(0, 300, 2))  # half deleted: the stale statistics drift far
    engine.write([doc(i, 200) for i in gone[:40]], [f"memories/d{i:03d}.md" for i in gone])
    stats = engine.live_stats()
    assert stats.ghostly and stats.all_docs > stats.docs * 1.3
    check(stats)
    engine.close()


def test_an_engine_of_another_package_receives_every_document_whole_from_worker_processes(notes, monkeypatch):
    """The built-in engines index from the prepared fields alone, so worker processes send
    them only the notes of sessions whole; an engine another package registers is given
    every document, as ``SearchEngine.write`` promises."""
    from vaultmem.index import registry
    from vaultmem.index.tantivy_engine import TantivyEngine

    pytest.importorskip("tantivy")
    given = []

    class Reading(TantivyEngine):
        name = "reading"

        def write(self, add, delete_paths, prepared=None, later=None):
            given.extend(add)
            super().write(add, delete_paths, prepared, later)

    monkeypatch.setitem(registry._ENGINES, "reading", registry.EngineSpec(
        name="reading", library="tantivy", open=lambda gen_dir, create: Reading(gen_dir / "reading", create=create)))
    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", "reading")
    monkeypatch.setattr(build_module, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(build_module, "PARALLEL_CHUNK", 2)
    store = IndexStore(notes.root)
    report = store.rebuild()
    assert report.engine == "reading" and len(given) == report.docs >= 3
    assert {d.path for d in given} >= {"memories/port.md", "memories/db.md", "memories/review.md"}
    assert [h.doc.id for h in search(store, "端口", Filters(), 10)] == ["memories/port.md"]
    store.close()


@pytest.mark.usefixtures("both_engines")
def test_a_querys_term_weights_read_at_once_are_those_read_term_by_term(notes):
    """``IndexStore.term_weights`` reads every term's document frequency in one call of
    one commit where the engine offers it (``doc_frequencies``): the same counts as the
    engine's term-by-term ``doc_frequency`` and ``doc_count`` — also once documents are
    deleted (an update leaves them in the engine's own statistics)."""
    store = IndexStore(notes.root)
    store.refresh()
    (notes.root / "memories" / "port.md").write_text(NOTE.format(n="port", body="后端端口改为9090"), encoding="utf-8")
    store.refresh()  # the old port note's document: deleted, still in the segments
    terms = ["端口", "后端", "postgresql", "reviews", "9090", "8080", "nothing-like-it", "端"]
    engine = store.engine()
    count, each = store.term_weights(terms)
    assert hasattr(engine, "doc_frequencies")
    assert count == engine.doc_count() == 4
    assert each == {t: engine.doc_frequency(t) for t in terms}
    assert each["端口"] == 1 and each["8080"] == 0 and each["9090"] == 1 and each["nothing-like-it"] == 0
    store.close()


def test_a_searcher_keeps_what_it_read_within_its_bound_and_a_commit_starts_afresh(tmp_path, monkeypatch):
    """A warm process asks about the same notes again and again: a searcher reads each
    document from the index once, answers again from what it kept — the same hits, scores
    and documents, from several threads at once — keeps no more than its bound, and a
    commit's new searcher reads the changed note as it now is."""
    import random
    import threading

    pytest.importorskip("tantivy")
    from vaultmem.index import tantivy_engine
    from vaultmem.index.tantivy_engine import TantivyEngine
    from vaultmem.models import IndexDoc

    words = "cache redis timeout retry kafka queue deploy 缓存 端口".split()
    rng = random.Random(3)
    docs = [IndexDoc(id=f"memories/d{i:03d}.md", path=f"memories/d{i:03d}.md", kind="memory", title=f"note {i}",
                     text=" ".join(rng.choice(words) for _ in range(rng.choice([3, 8, 40]))))
            for i in range(200)]
    engine = TantivyEngine(tmp_path / "tantivy", create=True)
    engine.write(docs, [])
    queries = ["kafka", "kafka retry", "缓存 timeout", "deploy queue redis"]
    reads = []
    searcher_type = type(engine.live_stats().searcher)
    real_doc = searcher_type.doc
    monkeypatch.setattr(searcher_type, "doc", lambda self, address: reads.append(address) or real_doc(self, address))

    def answer(text):
        return [(d.id, score, d.text) for d, score in engine.search(query_tokens(text), Filters(), 30)]

    first = {q: answer(q) for q in queries}
    assert reads and all(len(first[q]) == 30 for q in queries)
    reads.clear()
    assert {q: answer(q) for q in queries} == first and reads == []  # all of it kept

    def in_threads(bound, gone):
        """Four threads asking at once from the first read of a new searcher on, under
        ``bound``: each answer is a fresh reader's, and what is kept is counted as it is."""
        monkeypatch.setattr(tantivy_engine, "READ_CACHE_BYTES", bound)
        engine.write([], [gone])  # a commit: a new searcher, nothing read yet
        other = TantivyEngine(tmp_path / "tantivy")  # a searcher and cache of its own: what a fresh reader answers
        expected = {q: [(d.id, score, d.text) for d, score in other.search(query_tokens(q), Filters(), 30)]
                    for q in queries}
        other.close()
        results, failures = [], []

        def asker(n):
            try:
                for k in range(40):
                    q = queries[(n + k) % len(queries)]
                    results.append(answer(q) == expected[q])
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(e)

        threads = [threading.Thread(target=asker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures and len(results) == 160 and all(results)
        stats = engine.live_stats()
        kept = list(stats._read.values())
        assert stats._read_bytes == sum(r.size for r in kept) and (stats._read_bytes <= bound or len(kept) == 1)

    in_threads(16 * 1024 * 1024, "memories/d199.md")
    in_threads(20_000, "memories/d198.md")  # a few documents' worth: kept ones dropped while others read

    changed = IndexDoc(id="memories/d000.md", path="memories/d000.md", kind="memory", title="note 0",
                       text="kafka kafka kafka rebalanced")
    engine.write([changed], ["memories/d000.md"])
    hit = [d for d, _s in engine.search(query_tokens("kafka rebalanced"), Filters(), 5)]
    assert hit[0].id == "memories/d000.md" and hit[0].text == "kafka kafka kafka rebalanced"

    monkeypatch.setattr(tantivy_engine, "READ_CACHE_BYTES", 2000)  # a few documents' worth
    engine.write([], ["memories/d197.md"])  # a new searcher, under the small bound
    bounded = {q: answer(q) for q in queries}
    reads.clear()
    assert {q: answer(q) for q in queries} == bounded
    assert len(reads) > 60  # what it could not keep, it read again
    engine.close()



def test_tantivys_filters_keep_exactly_what_they_admit(tmp_path):
    """Every filter on tantivy — a few values as term queries, many (a date range's days)
    as one term set — keeps exactly the matching documents that ``Filters.admits``
    admits: scope, kinds (the inbox, archive and journal left out unless named), statuses,
    types, author kinds, tags, frontmatter values and days."""
    import random

    pytest.importorskip("tantivy")
    from vaultmem.index.tantivy_engine import FEW_VALUES, TantivyEngine
    from vaultmem.models import IndexDoc

    rng = random.Random(11)
    kinds = ["note", "entry", "shared", "inbox", "archive", "journal"]
    docs = []
    for i in range(400):
        day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        docs.append(IndexDoc(
            id=f"memories/d{i:03d}.md", path=f"memories/d{i:03d}.md", kind=rng.choice(kinds),
            text=" ".join(rng.choice(["kafka", "retry", "cache", "缓存"]) for _ in range(rng.randint(1, 6))),
            agent=rng.choice([None, "lee", "前端审查"]), type=rng.choice(["fact", "decision", None]),
            status=rng.choice(["active", "superseded", "archived"]), author_kind=rng.choice(["user", "agent"]),
            tags=rng.sample(["ops", "db", "ui"], rng.randint(0, 2)), date=rng.choice([day, None]),
            meta={"scope": rng.choice(["global", "project"])}))
    engine = TantivyEngine(tmp_path / "tantivy", create=True)
    engine.write(docs, [])
    cases = [Filters(), Filters(agent="前端审查"), Filters(kinds=("note", "inbox")), Filters(kinds=("journal",)),
             Filters(statuses=("superseded",)), Filters(include_inactive=True), Filters(types=("decision",)),
             Filters(author_kinds=("agent",)), Filters(tags=("ops", "db")), Filters(where=(("scope", "global"),)),
             Filters(since="2025-03-01", until="2025-09-30"), Filters(since="2025-06-01", until="2025-06-12"),
             Filters(agent="lee", kinds=("note", "entry", "shared"), statuses=("active", "archived"), types=("fact",))]
    assert len({d.date for d in docs if d.date and "2025-03-01" <= d.date <= "2025-09-30"}) > FEW_VALUES
    for filters in cases:
        for text in ("kafka", "缓存 retry"):
            terms = query_tokens(text)
            got = {d.id for d, _s in engine.search(terms, filters, 1000)}
            want = {d.id for d in docs if filters.admits(d) and set(terms) & set(query_tokens(d.text))}
            assert got == want and (want or filters.kinds == ("journal",)), (filters, text)
    engine.close()


def test_a_searchers_statistics_never_outlive_a_newer_commit(tmp_path, monkeypatch):
    """Two threads of one process: while one makes the statistics of the searcher it
    opened, another commits and opens the newer searcher. The older statistics (and the
    documents they keep) answer the search that made them, and are not kept: the next
    search answers from the newer commit."""
    pytest.importorskip("tantivy")
    from vaultmem.index import tantivy_engine
    from vaultmem.index.tantivy_engine import TantivyEngine
    from vaultmem.models import IndexDoc

    def doc(i, text):
        return IndexDoc(id=f"memories/d{i}.md", path=f"memories/d{i}.md", kind="memory", text=text)

    engine = TantivyEngine(tmp_path / "tantivy", create=True)
    engine.write([doc(i, f"kafka retry {i}") for i in range(20)], [])
    elsewhere = TantivyEngine(tmp_path / "tantivy")
    real = tantivy_engine.kept_lengths

    def meanwhile(folder, opstamp):
        monkeypatch.setattr(tantivy_engine, "kept_lengths", real)
        elsewhere.write([doc(99, "kafka rebalanced")], [])  # a commit …
        engine._get_searcher()  # … that another thread of this process opens
        return real(folder, opstamp)

    engine.close()
    engine = TantivyEngine(tmp_path / "tantivy")  # nothing read yet
    monkeypatch.setattr(tantivy_engine, "kept_lengths", meanwhile)
    assert len(engine.search(query_tokens("kafka"), Filters(), 50)) == 20  # the commit it opened
    assert [d.id for d, _s in engine.search(query_tokens("rebalanced"), Filters(), 5)] == ["memories/d99.md"]
    elsewhere.close()
    engine.close()
