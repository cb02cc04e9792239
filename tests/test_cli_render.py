"""The text renderers (vaultmem.adapters.cli.render) are pure functions of a result: tested here on
results built by hand, with no vault, no git and no command line."""

from types import SimpleNamespace

from vaultmem.adapters.cli import render
from vaultmem.models import Change, Hit, IndexDoc
from vaultmem.parse.logline import LogEntry


def test_a_change_made_and_a_change_filed_for_review():
    made = Change("memory.remember", ["memories/port.md"], "0123456789abcdef", "m",
                  {"path": "memories/port.md"})
    assert render.remembered(made) == "remembered memories/port.md (commit 01234567)"
    filed = Change("propose", ["inbox/i-1.md"], "fedcba9876543210", "m", {
        "pending": 1,
        "items": [{"id": "i-1", "status": "pending", "op": "add", "summary": "fact: port", "quarantined": True,
                   "flags": ["imperative"]}]})
    assert render.remembered(filed) == (
        "i-1: add fact: port — waiting for review (quarantined: third-party, flagged: imperative)\n"
        "filed in inbox/ (commit fedcba98); a reviewer decides with: "
        "vaultmem review show ID / approve ID / reject ID --reason …")
    assert render.harvested(filed, delegation="d-1") == render.proposed(filed)  # options go unused
    harvested = Change("harvest", [], "aaaaaaaabbbb", "m", {"link": "[[agents/r#^m-1]]"})
    assert render.harvested(harvested, delegation="d-1") == "harvested d-1 into [[agents/r#^m-1]] (commit aaaaaaaa)"


def test_page_ensure_says_what_happened_and_the_project_given():
    details = {"path": "agents/r.md", "created": False, "project_added": True}
    assert render.page_ensure(Change("page.ensure", [], "abcdef0123", "m", details), project="web") == \
        "agents/r.md exists; added project web (commit abcdef01)"
    assert render.page_ensure(Change("page.ensure", [], None, "m", {**details, "project_added": False})) == \
        "agents/r.md exists; nothing changed"
    assert render.page_ensure(Change("page.ensure", [], None, "m", {**details, "created": True})) == \
        "created agents/r.md"


def test_an_index_report():
    report = SimpleNamespace(skipped=None, rebuilt=False, engine="whoosh", new=["a"], modified=[], deleted=[],
                             moved=[("b", "c")], unchanged=3, docs=2, seconds=0.123,
                             problems=[{"path": "x.md", "line": 4, "message": "broken YAML", "hint": "fix it"}])
    assert render.index_report(report) == (
        "index up to date (whoosh): 1 new, 0 modified, 0 deleted, 1 moved, 3 unchanged (2 docs written, 0.12s)\n"
        "  moved b → c\n"
        "  skipped x.md:4: broken YAML (hint: fix it)")
    assert render.index_report(SimpleNamespace(skipped="the index is busy")) == "index not updated: the index is busy"


def test_search_hits_and_none():
    doc = IndexDoc(id="memories/port.md", path="memories/port.md", kind="note", text="t", type="fact", line=3)
    assert render.search_hits([Hit(doc, 1.5, snippet="后端**端口**")]) == \
        " 1. memories/port.md  (line 3)  [note/fact]  score 1.50\n    后端**端口**"
    assert render.search_hits([]) == "no hits"


def test_a_log_line():
    e = LogEntry(log="live", agent="ella", ts="2026-05-08T10:00:00.000000Z", seq=3, prev="", nonce="n",
                 channel="backend", type="status", summary="API merged", body="line one\nline two", ref="bob#2")
    assert render.log_line(e) == ("2026-05-08T10:00:00Z  ella#3           #backend    status    ↩ bob#2 API merged"
                                  "\n    line one\n    line two")


def test_lists_that_may_be_empty():
    assert render.page_list([]) == "no role pages yet (a page is created on a role's first dispatch)"
    assert render.inbox([], status="pending") == "the inbox is empty"
    assert render.inbox([], status="rejected") == "no rejected items"
    assert render.audit({"stale_delegations": [], "inbox": [], "foreign_page_commits": [],
                         "notes_without_provenance": []}) == "nothing needs a human"
    assert render.repaired([]) == "nothing to repair"
    assert render.logs_committed(None) == "no new entries to commit"
    assert render.todo({"role": "r", "items": [], "pending_delegations": []}) == "no open items recorded for r"
