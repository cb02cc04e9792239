"""The reranker seam: ``search.reranker: PATH`` re-orders the first hits of every search with a
local cross-encoder. The cross-encoder here is real — an ONNX graph and a tokenizer this test
builds and saves itself, no network — and small enough to read: it scores a (question, text)
pair by how often one word ("salmon") occurs in it, so the note that says it — third without
a reranker — must come first once it is on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_vaultmem, write_note

from vaultmem import Vault
from vaultmem.index import rerankers

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

QUESTION = "what is the name of tom's cat"
NOTES = {
    "cat-food": "Tom buys the cat food at the corner shop; the cat likes the salmon kind.",
    "cat-vet": "The cat went to the vet with Tom last week, the cat is fine.",
    "cat-toy": "Tom's cat plays with a red ball all day long.",
    "pepper": "Her name is Pepper, a grey kitten from the shelter.",
}


def tiny_cross_encoder(folder: Path, word: str = "salmon") -> Path:
    """A cross-encoder folder as an ONNX export lays it out: ``model.onnx`` (logit = how
    many times ``word`` occurs in the pair) and the ``tokenizer.json`` it reads with."""
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    words = sorted({w for text in [QUESTION, *NOTES.values()] for w in
                    "".join(c if c.isalnum() else " " for c in text.lower()).split()})
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, **{w: n + 4 for n, w in enumerate(words)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    folder.mkdir(parents=True)
    tok.save(str(folder / "tokenizer.json"))
    table = [[1.0 if w == word else 0.0] for w in sorted(vocab, key=vocab.get)]
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["picked"], axis=0),  # (batch, seq, 1)
         helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["mask_f", "axes"], ["mask3"]),
         helper.make_node("Mul", ["picked", "mask3"], ["kept"]),
         helper.make_node("ReduceSum", ["kept", "axis1"], ["logits"], keepdims=0)],  # (batch, 1)
        "tiny-cross-encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        [helper.make_tensor("table", TensorProto.FLOAT, [len(table), 1], [x for row in table for x in row]),
         helper.make_tensor("axes", TensorProto.INT64, [1], [2]),
         helper.make_tensor("axis1", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return folder


@pytest.fixture
def cat_vault(tmp_path) -> Vault:
    v, _ = Vault.init(tmp_path / "vault", lang="en", orchestrator="lee")
    for slug, text in NOTES.items():
        write_note(v.root, slug, text)
    # the order the re-ranker starts from: the hand-set rules' (the note that says "salmon" third)
    v.set_config("search.ranking", "rules", v.actor(None))
    return Vault.open(v.root)


@pytest.fixture(autouse=True)
def _fresh_models():
    rerankers.forget()
    yield
    rerankers.forget()


def test_without_a_reranker_the_answer_is_not_first_and_nothing_is_loaded(cat_vault):
    hits = cat_vault.search(QUESTION)
    assert hits[0].doc.id != "memories/cat-food.md" and all(h.rerank is None for h in hits)
    probe = ("import sys; from vaultmem import Vault; Vault.open(sys.argv[1]).search(sys.argv[2]); "
             "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'vaultmem.index.rerankers') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", probe, str(cat_vault.root), QUESTION], capture_output=True, text=True)
    assert r.stdout.strip() == "[]", r.stderr


def test_a_cross_encoder_folder_reorders_the_first_hits(cat_vault, tmp_path):
    folder = tiny_cross_encoder(tmp_path / "ce")
    cat_vault.set_config("search.reranker", str(folder), cat_vault.actor(None))
    v = Vault.open(cat_vault.root)
    hits = v.search(QUESTION)
    assert hits[0].doc.id == "memories/cat-food.md" and hits[0].rerank == pytest.approx(1.0)
    assert [h.rerank for h in hits[1:]] == [0.0] * (len(hits) - 1)
    assert not hits.warnings
    brief = v.brief("lee", QUESTION, tokens=800)  # a brief draws on the same re-ordered search
    assert "Pepper" in brief.markdown
    # the CLI's JSON carries each hit's logit
    r = run_vaultmem("--json", "search", QUESTION, "--vault", v.root)
    data = json.loads(r.stdout)
    assert data["hits"][0]["id"] == "memories/cat-food.md" and data["hits"][0]["rerank"] == pytest.approx(1.0)


def test_the_depth_bounds_what_is_reordered(cat_vault, tmp_path):
    before = [h.doc.id for h in cat_vault.search(QUESTION)]
    folder = tiny_cross_encoder(tmp_path / "ce")
    cat_vault.set_config("search.reranker", str(folder), cat_vault.actor(None))
    cat_vault.set_config("search.rerank_depth", before.index("memories/cat-food.md"), cat_vault.actor(None))
    after = [h.doc.id for h in Vault.open(cat_vault.root).search(QUESTION)]
    assert after[0] != "memories/cat-food.md" and "memories/cat-food.md" in after  # below the depth: as it was


@pytest.mark.parametrize("damage, said", [
    (lambda f: (f / "model.onnx").unlink(), "holds no ONNX model"),
    (lambda f: (f / "tokenizer.json").unlink(), "no tokenizer.json"),
    (lambda f: (f / "model.onnx").write_bytes(b"not a model"), "does not load"),
    (lambda f: None, None),
])
def test_a_broken_or_missing_folder_answers_unreranked_and_says_why(cat_vault, tmp_path, damage, said):
    folder = tiny_cross_encoder(tmp_path / "ce")
    damage(folder)
    spec = str(folder) if said else str(tmp_path / "nowhere")
    cat_vault.set_config("search.reranker", spec, cat_vault.actor(None))
    hits = Vault.open(cat_vault.root).search(QUESTION)
    assert hits and hits[0].doc.id != "memories/cat-food.md"
    assert any("re-ranking is off" in w and (said or "does not exist") in w for w in hits.warnings), hits.warnings
    r = run_vaultmem("search", QUESTION, "--vault", cat_vault.root)
    assert r.returncode == 0 and "re-ranking is off" in r.stderr


def test_a_bad_setting_is_refused_with_its_name(cat_vault):
    from vaultmem import VaultmemError

    with pytest.raises(VaultmemError) as err:
        cat_vault.set_config("search.rerank_depth", 0, cat_vault.actor(None))
    assert "search.rerank_depth" in str(err.value)
