"""Query syntax and filters, the same in the Python API, the CLI and the MCP tool:
``"exact phrase"``, ``-word``, ``OR``, ``prefix*``; ``--tag``, ``--status``,
``--author-kind``, ``--since``/``--until``, ``--where`` — enforced inside both engines, so
a selective one still fills the limit, and the filtered ranking is the unfiltered one
with what ``Filters.admits`` refuses left out."""

from __future__ import annotations

import json

import pytest
from conftest import ENGINES, run_vaultmem

from vaultmem import Vault
from vaultmem.errors import BadInput
from vaultmem.index import Filters
from vaultmem.index.store import INDEX_DIR
from vaultmem.query import parse
from vaultmem.retrieve import is_relevant
from vaultmem.retrieve import search as ranked

NOTE = """---
name: {name}
type: {type}
status: {status}
author_kind: {author}
{extra}---
{body}
"""

# slug: (body, tags, author kind, status, created, extra frontmatter)
NOTES = {
    "review-pr": ("I reviewed the PR for billing-api yesterday", ["code", "review"], "user", "active",
                  "2026-05-04", {"project": "billing", "done": True, "priority": 2,
                                 "reviewed_at": "2026-05-04T09:30:00+00:00"}),
    "review-team": ("The PR queue: every change reviewed by the team", ["review"], "agent", "active",
                    "2026-05-10", {"project": "web"}),
    "port": ("后端端口固定8080，不要改", ["backend"], "agent", "active", "2026-04-01", {"project": "billing"}),
    "port-loose": ("固定下来的是部署端口，不是后端", ["backend", "deploy"], "user", "active", "2026-04-20", {}),
    "redis": ("Redis cluster for caching sessions", ["cache"], "third_party", "active", "2026-03-01",
              {"project": "Billing", "runbook": "See the cluster runbook under ops/redis for failover steps"}),
    "redis-old": ("Redis sentinel for caching and failover", ["cache"], "user", "superseded", "2026-02-01", {}),
    "memcached": ("Memcached for caching sessions", ["cache"], "unknown", "archived", None, {}),
    "deploy": ("Deployment runs on Fridays; deployments need two approvals", ["deploy"], "user", "active",
               "2026-01-15", {"owner": "Lee"}),
    "db": ("We chose PostgreSQL for JSONB", [], "user", "active", None, {}),
}
# many notes that rank above the rare ones, so that a filter applied after the engine's
# cut would leave too few
FILLER = 30


def _write_notes(root):
    for slug, (body, tags, author, status, created, extra) in NOTES.items():
        lines = "".join(f"{k}: {json.dumps(v) if isinstance(v, str) else str(v).lower()}\n" for k, v in extra.items())
        if tags:
            lines += "tags: [" + ", ".join(tags) + "]\n"
        if created:
            lines += f"created: {created}\n"
        (root / "memories" / f"{slug}.md").write_text(
            NOTE.format(name=slug, type="fact", status=status, author=author, extra=lines, body=body), encoding="utf-8")
    for n in range(FILLER):
        rare = n % 10 == 0  # three of them
        (root / "memories" / f"filler-{n:02d}.md").write_text(NOTE.format(
            name=f"batch note {n}", type="fact", status="active", author="agent" if rare else "user",
            extra=f"tags: [{'rare' if rare else 'common'}]\ncreated: 2025-12-{n % 28 + 1:02d}\n"
                  f"batch: {'b' if rare else 'a'}\n",
            body="caching note " + ("" if rare else "caching caching filler") + f" {n}"), encoding="utf-8")


@pytest.fixture(scope="module", params=ENGINES)
def corpus(request, tmp_path_factory):
    """One vault of notes per engine, indexed once, only read by the tests."""
    root = tmp_path_factory.mktemp(f"query-{request.param}") / "vault"
    v, _ = Vault.init(root, lang="en", orchestrator="orch")
    v.set_config("index.engine", request.param, v.actor(None))
    _write_notes(v.root)
    v = Vault.open(root)
    v.refresh_index()
    assert v.index.engine_name() == request.param
    return v


def ids(hits) -> list[str]:
    return [h.doc.id.removeprefix("memories/").removesuffix(".md") for h in hits]


# -- syntax ---------------------------------------------------------------------------------

def test_a_plain_query_is_read_exactly_as_before():
    for text in ("redis cache", "后端端口是多少", "billing-api on 2023-05-04", "what did Melanie say on May 4",
                 "OR", "redis OR"):
        q = parse(text)
        assert not q.syntax and q == parse(text) and q.units == [((t,),) for t in q.terms]
    assert parse("billing-api 2023-05-04").terms == ("bill", "api", "@2023-05-04")  # a dash inside is no exclusion


def test_an_english_phrase_matches_its_stems_in_a_row_only(corpus):
    hits = corpus.search('"reviewed the PR"')
    assert ids(hits) == ["review-pr"]  # "PR ... reviewed" in review-team is not in a row
    assert set(ids(corpus.search("reviewed PR"))) >= {"review-pr", "review-team"}  # plain words: any order
    assert hits.parsed["phrases"][0]["terms"] == ["review", "pr"]


def test_a_chinese_phrase_is_its_bigrams_in_a_row(corpus):
    assert ids(corpus.search('"端口固定"')) == ["port"]
    assert ids(corpus.search("“端口固定”")) == ["port"]  # full-width quotes too
    assert set(ids(corpus.search("端口固定"))) == {"port", "port-loose"}  # plain: either's bigrams


def test_an_exclusion_leaves_out_what_holds_it_inside_the_engine(corpus):
    assert "redis" not in ids(corpus.search("caching -cluster", limit=50))
    assert "redis" in ids(corpus.search("caching", limit=50))
    # the 27 filler notes that hold "filler" rank first; excluded in the engine, the limit still fills
    hits = corpus.search("caching -filler", limit=3)
    assert len(hits) == 3 and not any(i.startswith("filler-") and int(i[-2:]) % 10 for i in ids(hits))
    assert ids(corpus.search('caching -"caching caching"', limit=40)) == ids(corpus.search("caching -filler", limit=40))
    # checked on the hits: the 27 best candidates hold the phrase, more are fetched until two remain
    two = ids(corpus.search('caching -"caching caching"', limit=2))
    assert len(two) == 2 and two == ids(corpus.search("caching -filler", limit=2))
    assert ids(corpus.search('端口 -"端口固定"')) == ["port-loose"]
    assert ids(corpus.search("端口 -后端")) == []  # both hold 后端


def test_or_requires_one_alternative_and_counts_as_one_term_for_relevance(corpus):
    found = ids(corpus.search("sessions redis OR memcached", limit=50, statuses=("active", "archived")))
    assert set(found) == {"redis", "memcached"}  # "sessions" alone (in no other note) does not admit
    assert set(ids(corpus.search('"reviewed the PR" OR 端口固定'))) == {"review-pr", "port"}
    q = parse("redis OR memcached sessions")
    assert q.syntax and len(q.units) == 2 and q.units[1] == (("redi",), ("memcach",))
    assert q.words == "sessions" and q.syntax_units() == [("redis OR memcached", ("redi", "memcach"))]
    hit = next(h for h in ranked(corpus.index, q, Filters(statuses=("archived",))) if h.doc.id.endswith("memcached.md"))
    assert hit.coverage == 1.0 and is_relevant(hit, q, 1.0)  # one alternative covers the group


def test_a_prefix_stands_for_the_index_terms_that_begin_with_it(corpus):
    assert ids(corpus.search("deploy*")) == ["deploy"]  # deployment, deployments: a tag is not text
    assert ids(corpus.search("postgr*")) == ["db"]
    # a whole word with a star finds the word too, though the index holds its stem (redi, cach)
    assert set(ids(corpus.search("redis*", statuses=("active", "superseded")))) == {"redis", "redis-old"}
    assert set(ids(corpus.search("caching*", tags=("cache",)))) == {"redis"}
    assert ids(corpus.search("zzzq*")) == []  # nothing begins with it: no hits, no error
    assert set(ids(corpus.search("端*"))) == {"port", "port-loose"}  # the bigrams beginning with 端
    assert "review-pr" not in ids(corpus.search("PR -review*"))
    q = parse("deploy*").expand(lambda prefix: corpus.index.terms_with_prefix(prefix, 50))
    assert q.prefixes[0].terms and all(t.startswith("deploy") for t in q.prefixes[0].terms)


def test_natural_language_callers_search_plain_words(corpus):
    # a question (ask, LangGraph's store) is not syntax: its quote and dash are text
    hits = corpus.search('"端口固定 -后端', syntax=False)
    assert set(ids(hits)) == {"port", "port-loose"} and hits.parsed["syntax"] is False
    with pytest.raises(BadInput):
        corpus.search('"端口固定 -后端')


@pytest.mark.parametrize("query, what", [
    ('"端口', "not closed"), ("-redis -cache", "only leaves things out"), ('redis -"the"', "common words"),
    ('"the of"', "common words"), ("-redis OR memcached", "exclusion cannot be an alternative"),
])
def test_bad_syntax_is_bad_input_naming_the_query(query, what):
    with pytest.raises(BadInput) as err:
        parse(query)
    assert err.value.field == "query" and what in err.value.message and err.value.hint


def test_a_word_that_reads_like_the_parsers_own_marks_is_still_a_word():
    # the parser marks an exclusion with a tuple ("excluded", part); a part is a tuple too,
    # and a part whose text is "excluded" is an alternative like any other word
    q = parse("excluded OR kafka -cluster")
    assert [[p.text for p in g] for g in q.groups] == [["excluded", "kafka"]]
    assert [p.text for p in q.excluded] == ["cluster"]


# -- filters --------------------------------------------------------------------------------

def test_each_filter_narrows_inside_the_engine(corpus):
    assert set(ids(corpus.search("caching", tags=("cache",), limit=50))) == {"redis"}  # the others are inactive
    assert set(ids(corpus.search("caching", tags=("CACHE",), statuses=("superseded", "archived")))) == {
        "redis-old", "memcached"}
    assert ids(corpus.search("reviewed", tags=("review", "code"))) == ["review-pr"]  # every tag
    assert ids(corpus.search("reviewed", author_kinds=("agent",))) == ["review-team"]
    assert set(ids(corpus.search("端口", since="2026-04-02"))) == {"port-loose"}
    assert set(ids(corpus.search("端口", until="2026-04-01"))) == {"port"}
    assert ids(corpus.search("caching", since="2026-03-01", until="2026-03-01")) == ["redis"]
    assert ids(corpus.search("caching", until="2030-01-01", statuses=("archived",))) == []  # no date: out
    assert set(ids(corpus.search("redis OR 端口", where=("project=billing",)))) == {"redis", "port"}  # folded
    assert ids(corpus.search("reviewed", where={"done": "TRUE", "priority": "2"})) == ["review-pr"]
    assert ids(corpus.search("deploy*", where=[("owner", "lee")])) == ["deploy"]
    # a value longer than the index holds as it is (a timestamp, a sentence): looked for by its digest
    assert ids(corpus.search("caching", where=("runbook=see the cluster runbook under OPS/redis for failover steps",))
               ) == ["redis"]
    assert ids(corpus.search("caching", where=("runbook=see the cluster runbook",))) == []
    assert ids(corpus.search("reviewed", where=("reviewed_at=2026-05-04T09:30:00+00:00",))) == ["review-pr"]
    # selective: the rare notes rank below 27 filler notes, yet fill the limit
    assert sorted(ids(corpus.search("caching", tags=("rare",), limit=3))) == ["filler-00", "filler-10", "filler-20"]
    assert len(corpus.search("caching", where=("batch=b",), author_kinds=("agent",), limit=3)) == 3
    hits = corpus.search("caching", tags=("rare",), since="2025-12-01", where=("batch=b",))
    assert hits.filters["tags"] == ["rare"] and hits.filters["where"] == [["batch", "b"]]


FILTER_CASES = [
    Filters(tags=("cache",)), Filters(tags=("review", "code")), Filters(statuses=("superseded",)),
    Filters(statuses=("active", "archived")), Filters(author_kinds=("user", "third_party")),
    Filters(since="2026-02-01"), Filters(until="2026-03-31"), Filters(since="2025-12-05", until="2026-04-01"),
    Filters(where=(("project", "BILLING"),)), Filters(where=(("batch", "b"), ("tags", "x"))),
    Filters(where=(("runbook", "See the cluster runbook under ops/redis for failover steps"),)),
    Filters(tags=("rare",), author_kinds=("agent",), until="2025-12-31"), Filters(agent="orch", tags=("deploy",)),
]


@pytest.mark.parametrize("query", ["caching sessions", "端口 OR reviewed OR deploy*", "caching -filler"])
def test_the_engine_filters_exactly_as_admits_decides(corpus, query, monkeypatch):
    everything = Filters(statuses=("active", "superseded", "archived"))
    q = parse(query)
    # the learned ranker reads each candidate against the others found with it (its share of
    # the best score, its place, its neighbours): a filter changes the company, not the members
    for filters in FILTER_CASES:
        got = {h.doc.id for h in ranked(corpus.index, q, filters, limit=500)}
        assert got == {h.doc.id for h in ranked(corpus.index, q, everything, limit=500) if filters.admits(h.doc)}
    # the rules score each document alone: the filtered ranking is the unfiltered one, less what is refused
    monkeypatch.setattr(corpus.index, "ranking", "rules")
    unfiltered = ranked(corpus.index, q, everything, limit=500)
    assert len(unfiltered) >= 5
    for filters in FILTER_CASES:
        got = [(h.doc.id, round(h.score, 6)) for h in ranked(corpus.index, q, filters, limit=500)]
        want = [(h.doc.id, round(h.score, 6)) for h in unfiltered if filters.admits(h.doc)]
        assert got == want, filters
        limited = [h.doc.id for h in ranked(corpus.index, q, filters, limit=2)]
        assert limited == [i for i, _s in want[:2]], filters


@pytest.mark.parametrize("kwargs, field, what", [
    ({"author_kinds": ("robot",)}, "author_kinds", "not an author kind"),
    ({"since": "2026-13-01"}, "since", "not a date"), ({"until": "May 4"}, "until", "not a date"),
    ({"since": "2026-05-02", "until": "2026-05-01"}, "since", "ends before it begins"),
    ({"where": ("project",)}, "where", "not key=value"), ({"where": ("=x",)}, "where", "names no field"),
    ({"tags": ("",)}, "tags", "empty"),
])
def test_bad_filters_are_bad_input_naming_the_filter(corpus, kwargs, field, what):
    with pytest.raises(BadInput) as err:
        corpus.search("caching", **kwargs)
    assert err.value.field == field and what in err.value.message


def test_records_carry_tags_and_scalar_frontmatter(corpus):
    doc = next(h.doc for h in corpus.search('"reviewed the PR"'))
    assert doc.tags == ["code", "review"]
    assert doc.meta["project"] == "billing" and doc.meta["done"] == "true" and doc.meta["priority"] == "2"
    assert doc.meta["created"] == "2026-05-04" and "tags" not in doc.meta  # lists are left out


# -- an index from before, the surfaces -------------------------------------------------------

def test_an_index_built_before_the_filter_fields_is_rebuilt_on_first_use(tmp_path, both_engines):
    v, _ = Vault.init(tmp_path / "v", lang="en", orchestrator="orch")
    _write_notes(v.root)
    v.refresh_index()
    base = v.root / INDEX_DIR
    gen = (base / "CURRENT").read_text().strip()
    manifest = json.loads((base / gen / "manifest.json").read_text())
    manifest["analyzer"] = "bigram-snowball-dates-3"  # what the previous code wrote
    (base / gen / "manifest.json").write_text(json.dumps(manifest))
    v = Vault.open(v.root)
    assert sorted(ids(v.search("caching", tags=("rare",), limit=3))) == ["filler-00", "filler-10", "filler-20"]
    assert (base / "CURRENT").read_text().strip() != gen


def test_the_cli_reads_syntax_and_filters_and_refuses_bad_input_with_exit_2(corpus, cli):
    r = run_vaultmem("--vault", corpus.root, "search", '"端口固定" OR redis*', "--tag", "backend",
                     "--since", "2026-01-01", "--where", "project=billing", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [h["id"] for h in data["hits"]] == ["memories/port.md"]
    assert data["parsed"]["groups"][0][0]["terms"] == ["端口", "口固", "固定"]
    assert data["filters"]["since"] == "2026-01-01" and data["filters"]["where"] == [["project", "billing"]]
    for args, flag in ((["caching", "--where", "project"], "--where"), (['"caching'], "QUERY"),
                       (["caching", "--author-kind", "robot"], "--author-kind"), (["x", "--since", "May"], "--since")):
        bad = cli("--vault", corpus.root, "search", *args)
        assert bad.exit_code == 2 and flag in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)
    helped = cli("search", "--help")
    assert '"exact phrase"' in helped.stdout and "prefix*" in helped.stdout and "--where" in helped.stdout


def test_the_mcp_tool_takes_the_same_syntax_and_filters(corpus):
    from test_mcp import call, failed, ok

    from vaultmem.adapters.mcp import VaultServer

    server = VaultServer(corpus)
    d = ok(call(server, "search_memory", query="caching -filler", tag=["rare"], author_kind=["agent"],
                until="2025-12-31", where=["batch=b"], limit=2))
    got = [h["path"] for h in d["hits"]]  # two of the three rare notes (equal matches; the newer may lead)
    assert len(got) == 2 and set(got) < {"memories/filler-00.md", "memories/filler-10.md", "memories/filler-20.md"}
    assert d["parsed"]["excluded"][0]["terms"] == ["filler"] and d["filters"]["author_kinds"] == ["agent"]
    d = ok(call(server, "search_memory", query='"reviewed the PR"', status=["active"]))
    assert [h["path"] for h in d["hits"]] == ["memories/review-pr.md"]
    for args, field in (({"query": '"open'}, "query"), ({"query": "x", "author_kind": ["robot"]}, "author_kinds"),
                        ({"query": "x", "since": "soon"}, "since"), ({"query": "x", "where": ["nokey"]}, "where")):
        result = call(server, "search_memory", **args)
        failed(result)
        assert result.structured_content["error"]["field"] == field
        assert result.structured_content["error"]["type"] == "bad_input"
