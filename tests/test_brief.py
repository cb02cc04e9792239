"""The budget is a guarantee: property-based tests over generated briefs and vaults."""

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vaultmem import BadInput, Vault
from vaultmem.analysis import estimate_tokens
from vaultmem.brief import FENCE_CLOSE, FENCE_OPEN, BriefParts, build_brief
from vaultmem.models import Hit, IndexDoc

CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FA5)
LATIN = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
ODD = st.sampled_from(["~~~", "```", "\n", "~~~~memory", "[[x]]", "^m-1", "## h", "\t", "— ", "😀"])
TEXT = st.lists(st.one_of(CJK, LATIN, ODD), min_size=1, max_size=400).map("".join)


@st.composite
def hits(draw):
    out = []
    for n in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["note", "entry"]))
        doc = IndexDoc(id=f"memories/n{n}.md", path=f"memories/n{n}.md", kind=kind, text=draw(TEXT),
                       title=draw(TEXT), type=draw(st.sampled_from(["fact", "preference", None])),
                       section=draw(st.sampled_from(["work", "context", "subagents"])),
                       date=draw(st.sampled_from([None, "2026-05-08"])),
                       entry_id=f"m-{n:06x}" if kind == "entry" else None)
        out.append(Hit(doc=doc, score=draw(st.floats(0.1, 50))))
    return out


@settings(max_examples=300, deadline=None)
@given(hits=hits(), task=TEXT, identity=TEXT, index=st.lists(TEXT, max_size=60), lang=st.sampled_from(["zh", "en"]),
       budget=st.integers(1, 6000), agent=st.sampled_from(["前端审查", "code-reviewer"]))
def test_no_brief_ever_exceeds_its_budget(hits, task, identity, index, lang, budget, agent):
    parts = BriefParts(agent=agent, task=task, identity=identity, hits=hits, index_lines=index, lang=lang)
    try:
        brief = build_brief(parts, budget)
    except BadInput:
        assert budget < 120  # only a budget too small for the header itself is refused
        return
    assert brief.tokens == estimate_tokens(brief.markdown) <= budget
    lines = brief.markdown.splitlines()
    assert lines[2] == FENCE_OPEN and lines[-1] == FENCE_CLOSE
    inner = lines[3:-1]
    assert not any(x.lstrip(" ").startswith(("~~~", "```")) and not x.startswith("    ") for x in inner)


NOTE = "---\nname: {name}\ntype: {type}\nscope: {scope}\n{agent}importance: {imp}\n---\n{body}\n"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes=st.lists(st.tuples(TEXT, st.sampled_from(["fact", "preference", "decision"]), st.floats(0, 1),
                                st.sampled_from([None, "a", "b"])), min_size=1, max_size=25),
       entries=st.lists(st.tuples(st.sampled_from(["a", "b"]), TEXT), max_size=20),
       task=TEXT, window=st.integers(500, 40000), ratio=st.floats(0.05, 1.0),
       cap=st.one_of(st.none(), st.integers(150, 3000)))
def test_generated_vaults_brief_within_budget_and_never_across_roles(notes, entries, task, window, ratio, cap):
    with tempfile.TemporaryDirectory() as tmp:
        vault, _ = Vault.init(Path(tmp) / "v", lang="en", orchestrator="o")
        for i, (body, kind, imp, agent) in enumerate(notes):
            (vault.root / "memories" / f"n{i}.md").write_text(NOTE.format(
                name=f"n{i}", type=kind, scope="agent" if agent else "global",
                agent=f"agent: {agent}\n" if agent else "", imp=round(imp, 2), body=body.replace("---", "-")),
                encoding="utf-8")
        actor = vault.actor("o")
        vault.pages.ensure("a", actor)
        vault.pages.ensure("b", actor)
        b_ids = set()
        for role, text in entries:
            clean = " ".join(text.replace("`", "'").replace("~", "-").split()) or "x"
            try:
                change = vault.pages.add(role, clean, actor)
            except BadInput:
                continue
            if role == "b":
                b_ids.add(change.details["entry"]["id"])
        if not task.strip():
            return
        try:
            brief = vault.brief("a", task, window=window, ratio=ratio, tokens=cap)
        except BadInput as exc:
            assert "cannot hold even" in exc.message
            return
        budget = min(int(window * ratio), cap) if cap else int(window * ratio)
        assert brief.tokens == estimate_tokens(brief.markdown) <= budget
        assert not any(i in brief.markdown for i in b_ids)
        assert "agents/b" not in brief.markdown
        assert all(item["agent"] in (None, "a") for item in brief.items)


def test_near_duplicates_are_merged_and_long_entries_shortened():
    def hit(n, text):
        return Hit(doc=IndexDoc(id=f"memories/d{n}.md", path=f"memories/d{n}.md", kind="note", text=text,
                                type="fact"), score=10 - n)

    long_text = "The deploy freeze starts on Friday at noon and lasts the whole weekend " * 10
    parts = BriefParts(agent="a", task="deploy freeze", lang="en", hits=[
        hit(0, "The deploy freeze starts Friday noon."),
        hit(1, "the deploy freeze starts friday noon"),  # same words: dropped
        hit(2, long_text),
    ])
    brief = build_brief(parts, 2000)
    assert [i["id"] for i in brief.items] == ["memories/d0.md", "memories/d2.md"]
    assert len(brief.items[1]["line"]) < 300 and "…" in brief.items[1]["line"]


@pytest.mark.parametrize("lang, header", [("zh", "[记忆简报 - a]"), ("en", "[Memory brief — a]")])
def test_header_language(lang, header):
    brief = build_brief(BriefParts(agent="a", task="t", lang=lang), 500)
    assert brief.markdown.startswith(header)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("ab后端 ", max_size=30), max_size=25), st.integers(0, 5), st.integers(-5, 120),
       st.integers(0, 3), st.booleans())
def test_a_layer_grows_as_far_as_the_next_line_fits_one_line_at_a_time(lines, taken, allowance, beyond, says_more):
    # _Layer.grow is the planner's loop inside the layer: the same lines as taking one at a
    # time while the cost it adds (Layer.total) fits what is left
    from vaultmem.brief import _Layer

    def layer():
        more = (lambda n: f"{n} more not shown") if says_more else None
        L = _Layer("x", "## Heading", len(lines), lambda n: (lines[n], None), more, beyond)
        L.taken = min(taken, len(lines))
        return L

    grown, stepped = layer(), layer()
    now = stepped.total(stepped.taken)
    got = grown.grow(now, allowance)
    left = allowance
    while stepped.taken < stepped.count:
        after = stepped.total(stepped.taken + 1)
        if after - now > left:
            break
        left -= after - now
        stepped.taken, now = stepped.taken + 1, after
    assert (grown.taken, got) == (stepped.taken, now)


def test_briefs_one_after_another_each_show_their_own_index_lines_and_cut():
    """A process keeps the memory index's rendered lines for the next brief: a brief after
    MEMORY.md changed shows its new lines, one with a shorter line cut shortens them, and
    briefs on several threads at once each show the index whole and within budget."""
    import threading

    index = [f"- [[memories/n{i}]] note {i} about the deploy freeze and its owners" for i in range(300)]

    def made(lines, cut=200, budget=4000):
        return build_brief(BriefParts(agent="a", task="deploy", lang="en", index_lines=lines, max_line_chars=cut),
                           budget)

    first = made(index)
    assert first.markdown == made(index).markdown and index[5] in first.markdown
    changed = [*index[:5], "- [[memories/new]] the new note", *index[6:]]
    second = made(changed)
    assert "- [[memories/new]] the new note" in second.markdown and index[5] not in second.markdown
    short = made(index, cut=30)
    assert index[5] not in short.markdown and index[5][:20] in short.markdown
    assert first.index_lines < short.index_lines  # shorter lines: more of them fit

    out: list = []

    def brief_of(n: int) -> None:
        lines = [f"{line} ({n})" for line in index[:40]]
        out.append((n, made(lines, budget=100_000)))

    threads = [threading.Thread(target=brief_of, args=(n % 2,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, b in out:
        assert b.index_lines == 40 and all(f"{line} ({n})" in b.markdown for line in index[:40])
        assert b.tokens <= 100_000
