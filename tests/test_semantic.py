"""The semantic channel: real models (wordllama's shipped weights, a tiny model2vec model
built and saved here), real vaults, real indexes on both engines — no network."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import NOTES, make_vault, out_json, run_vaultmem, write_note
from vaultmem import Vault
from vaultmem.index import Filters, embedders, vectors
from vaultmem.index.store import IndexStore
from vaultmem.retrieve import hybrid_search as search

pytest.importorskip("wordllama")
model2vec = pytest.importorskip("model2vec")

def tiny_model(folder: Path, bump: bool = False) -> str:
    """A model2vec model of a dozen words and hand-made vectors: cat words (English and
    Chinese) point one way, money words another."""
    from tokenizers import Regex, Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel

    groups = {0: ["cat", "kitten", "feline", "nap", "猫", "咪", "宠", "物", "睡"],
              1: ["car", "automobile", "vehicle"], 2: ["tax", "invoice", "税", "票", "钱", "款"]}
    words = ["[PAD]", "[UNK]"] + [w for ws in groups.values() for w in ws]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex("[\u4e00-\u9fff]"), "isolated"),
                                                 pre_tokenizers.Whitespace()])
    table = np.zeros((len(words), 4), dtype=np.float32)
    for d, ws in groups.items():
        for w in ws:
            table[vocab[w], d] = 1.0
    if bump:
        table[:, 3] += 0.01  # another model: other vectors, other files
    model2vec.StaticModel(vectors=table, tokenizer=tok, normalize=True).save_pretrained(str(folder))
    return f"model2vec:{folder}"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A vault searched with wordllama, built once (tests only read it)."""
    root = tmp_path_factory.mktemp("shipped") / "vault"
    v = make_vault(root)
    v.index.refresh()
    return v


# -- the shipped English model -------------------------------------------------------------
def test_paraphrase_with_no_shared_word_is_found_only_through_the_semantic_channel(shipped):
    hits = shipped.search("feline nap")
    assert hits and hits[0].doc.path == "memories/kitten.md"
    assert hits[0].channel == "semantic" and hits[0].similarity >= 0.2
    off = IndexStore(shipped.root, semantic="off")
    assert search(off, "feline nap", Filters()) == []  # lexical alone finds nothing
    off.close()


def test_a_hit_only_meaning_found_is_judged_by_its_words_and_a_close_one_passes(shipped):
    hits = shipped.search("feline nap")
    top = hits[0]  # kitten.md shares no word with the query: its words hold none of it
    assert top.semantic_rank == 1 and top.relevance == 0.0
    assert top.relevant is top.close is (top.similarity >= embedders.calibration("wordllama").relevant_at)
    made = shipped.brief("lee", "feline nap", tokens=1500)
    # wordllama has no brief margin: the brief takes what is relevant, nothing on rank alone
    assert ("memories/kitten.md" in {i.get("path") for i in made.items}) is top.relevant


def test_a_query_the_words_answer_stays_lexical_and_never_loads_a_model(shipped):
    hits = shipped.search("PostgreSQL port")
    assert hits[0].doc.path == "memories/database.md" and hits[0].channel == "lexical"
    assert hits[0].similarity is None


def test_chinese_never_opens_the_english_only_model(shipped):
    hits = shipped.search("宠物在哪")  # no shared bigram: lexical finds nothing, wordllama would be noise
    assert [h for h in hits if h.channel != "lexical"] == []


def test_cold_search_that_does_not_fuse_imports_no_numpy_or_model(shipped):
    env = {"VAULTMEM_VAULT": str(shipped.root)}
    res = run_vaultmem("search", "PostgreSQL port", "--json", env={**env, "PYTHONPROFILEIMPORTTIME": "1"})
    assert res.returncode == 0, res.stderr
    assert out_json(res)["hits"][0]["channel"] == "lexical"
    imported = {line.split("|")[-1].strip().split(".")[0] for line in res.stderr.splitlines() if "|" in line}
    assert not imported & {"numpy", "tokenizers", "safetensors", "wordllama", "model2vec"}


def test_index_with_nothing_to_embed_loads_no_model_and_an_edit_loads_it(tmp_path):
    root = make_vault(tmp_path / "vault").root

    def index() -> tuple[dict, set[str]]:
        res = run_vaultmem("index", "--json", "--vault", root, env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert res.returncode == 0, res.stderr
        imported = {line.split("|")[-1].strip().split(".")[0] for line in res.stderr.splitlines() if "|" in line}
        return json.loads(res.stdout)["semantic"], imported

    first, imported = index()
    assert first["on"] and first["embedded"] == first["vectors"] >= len(NOTES) and "numpy" in imported
    assert first["loaded"]
    again, imported = index()  # nothing changed: the vectors are the model's, and no model is loaded
    assert again["on"] and again["embedded"] == 0 and again["vectors"] == first["vectors"]
    assert again["loaded"] is False  # and the report says it did not load it
    assert not imported & {"numpy", "tokenizers", "safetensors", "wordllama"}
    write_note(root, "ferry", "The night ferry leaves at eleven")
    edited, imported = index()
    assert edited["embedded"] == 1 and edited["vectors"] == first["vectors"] + 1 and "numpy" in imported
    assert edited["loaded"]
    # told from the files, it is the fingerprint the loaded model gives (else every index would re-embed)
    assert embedders.fingerprint_of("wordllama") == embedders.load("wordllama").fingerprint
    spec = tiny_model(tmp_path / "m")
    assert embedders.fingerprint_of(spec) is None  # only loading a folder's model tells
    folder_vault = make_vault(tmp_path / "folder", model=spec).root
    for _ in range(2):  # the second has nothing to embed, and loads the model to tell its fingerprint
        res = run_vaultmem("index", "--json", "--vault", folder_vault)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["semantic"]["loaded"] is True


# -- a tiny model built here: Chinese too, incremental vectors, model changes ------------------
@pytest.mark.usefixtures("both_engines")
def test_tiny_model_finds_chinese_and_english_paraphrases(tmp_path):
    v = make_vault(tmp_path / "vault", model=tiny_model(tmp_path / "m"))
    hits = v.search("宠物在哪")  # "where is the pet": shares no bigram with 家里的猫咪…
    assert "memories/猫咪.md" in {h.doc.path for h in hits[:2]} and {h.channel for h in hits} == {"semantic"}
    hits = v.search("vehicle colour")
    assert hits[0].doc.path == "memories/car.md" and hits[0].channel == "semantic"
    assert [h.channel for h in v.search("vehicle")] == []  # one word: a lookup, answered by its letters
    both = IndexStore(v.root, semantic="always", model=v.config.search_model)
    fused = search(both, "kitten feline", Filters())
    assert fused[0].doc.path == "memories/kitten.md" and fused[0].channel == "both"
    assert fused[0].score == pytest.approx(2 / 61)  # first in both rankings: RRF with k = 60
    both.close()


def _rows(gen: Path) -> dict[str, bytes]:
    state = vectors.read_state(gen)
    vs = vectors.VectorSet.open(gen, state)
    out = {r[0]: vs.matrix[n].tobytes() for n, r in enumerate(vs.rows)}
    vs.close()
    return out


def test_an_edit_re_embeds_only_its_file_a_deletion_drops_it_a_new_model_re_embeds_all(tmp_path):
    spec = tiny_model(tmp_path / "m")
    v = make_vault(tmp_path / "vault", semantic="always", model=spec)
    assert v.sync_vectors()["on"]
    gen = v.index.base / (v.index.base / "CURRENT").read_text().strip()
    before = _rows(gen)
    assert "memories/kitten.md" in before
    write_note(v.root, "kitten", "The cat owes tax on an invoice.")
    write_note(v.root, "bus", "A vehicle for many.")
    (v.root / "memories" / "car.md").unlink()
    v.index.refresh()
    done = v.index.sync_vectors()
    assert done["embedded"] == 2 and done["dropped"] == 2  # kitten again and bus; the old kitten and car go
    after = _rows(gen)
    assert "memories/car.md" not in after and "memories/bus.md" in after
    assert after["memories/kitten.md"] != before["memories/kitten.md"]
    assert {k: b for k, b in after.items() if k not in ("memories/kitten.md", "memories/bus.md")} == \
        {k: b for k, b in before.items() if k not in ("memories/kitten.md", "memories/car.md")}
    assert v.search("invoice")[0].doc.path in ("memories/kitten.md", "memories/tax.md")
    embedders.forget()
    tiny_model(tmp_path / "m", bump=True)  # the model's files change: another fingerprint
    done = v.index.sync_vectors()
    assert done["embedded"] == len(after) and done["kept"] == 0
    assert vectors.read_state(gen)["fingerprint"] == embedders.load(spec).fingerprint
    # a rebuild makes the vectors afresh in the new generation
    v.rebuild_index()
    assert v.sync_vectors()["vectors"] == len(after)


def test_a_damaged_vector_set_is_never_read_the_index_is_rebuilt(tmp_path):
    v = make_vault(tmp_path / "vault", model=tiny_model(tmp_path / "m"))
    assert v.search("vehicle colour")[0].doc.path == "memories/car.md"
    gen = v.index.base / (v.index.base / "CURRENT").read_text().strip()
    state = vectors.read_state(gen)
    (vectors.folder(gen) / state["set"] / "vectors.npy").write_bytes(b"torn")  # a crash, a disk error
    v.index.close()
    # a set a killed sync left half-written beside the live one is never named by state.json
    (vectors.folder(gen) / "set-1").mkdir()
    again = Vault(v.root)
    hits = again.search("vehicle colour")
    assert hits[0].doc.path == "memories/car.md" and hits[0].channel == "semantic"
    live = again.index.base / (again.index.base / "CURRENT").read_text().strip()
    assert vectors.read_state(live)["count"] == len(_rows(live))


@pytest.mark.usefixtures("both_engines")
def test_semantic_hits_keep_to_the_scope_and_filters(tmp_path):
    v = make_vault(tmp_path / "vault", semantic="only", model=tiny_model(tmp_path / "m"))
    write_note(v.root, "other-cat", "My kitten naps.", scope="agent", agent="bob")
    write_note(v.root, "archived-cat", "A feline nap.", status="archived")
    (v.root / "agents" / "bob.md").write_text("---\nrole: bob\n---\n# bob\n\n## 工作记忆\n\n- 2024-01-01 cat nap kitten ^m-aaaaaa\n",
                                              encoding="utf-8")
    (v.root / "inbox" / "cat.md").write_text("---\nstatus: pending\n---\nkitten feline\n", encoding="utf-8")
    v.index.refresh()
    seen = {h.doc.path for h in v.search("feline nap", agent="alice", limit=50)}
    assert "memories/kitten.md" in seen
    assert not seen & {"memories/other-cat.md", "memories/archived-cat.md", "agents/bob.md", "inbox/cat.md"}
    assert "memories/other-cat.md" in {h.doc.path for h in v.search("feline nap", agent="bob", limit=50)}


# -- no model, a broken model, off ---------------------------------------------------------------
def test_a_missing_or_broken_model_answers_lexically_and_names_the_folder(tmp_path):
    missing = tmp_path / "nowhere"
    v = make_vault(tmp_path / "a", semantic="always", model=f"model2vec:{missing}")
    hits = v.search("PostgreSQL")
    assert hits[0].doc.path == "memories/database.md" and hits[0].channel == "lexical"
    assert any(str(missing) in w for w in hits.warnings)
    for spec, library in ((f"sentence-transformers:{missing}", "sentence-transformers"),
                          (f"fastembed:BAAI/bge-small-zh-v1.5@{missing}", "fastembed")):
        store = IndexStore(v.root, semantic="always", model=spec)
        hits = search(store, "PostgreSQL")
        assert hits[0].channel == "lexical"
        assert any(f"the {library} library is not installed (for the model at" in w and str(missing) in w
                   for w in hits.warnings), hits.warnings
        store.close()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    make_vault(tmp_path / "b", model=f"model2vec:{broken}")
    res = run_vaultmem("search", "feline nap", "--vault", str(tmp_path / "b"))
    assert res.returncode == 0 and str(broken) in res.stderr and "does not load" in res.stderr
    res = run_vaultmem("index", "--vault", str(tmp_path / "b"))
    assert res.returncode == 0 and "semantic search: off" in res.stdout and str(broken) in res.stdout


def test_off_is_lexical_exactly_and_keeps_no_vectors(tmp_path, both_engines):
    v = make_vault(tmp_path / "vault", semantic="off")
    hits = v.search("feline nap tax")
    lexical = IndexStore(v.root, semantic="off")
    assert [(h.doc.id, h.score) for h in hits] == [(h.doc.id, h.score) for h in search(lexical, "feline nap tax")]
    lexical.close()
    assert all(h.channel == "lexical" and h.similarity is None for h in hits)
    gen = v.index.base / (v.index.base / "CURRENT").read_text().strip()
    assert not vectors.started(gen)
    assert v.index_status()["semantic"] == {"mode": "off", "model": "wordllama", "on": False,
                                            "why": "search.semantic is off", "vectors": 0}


def test_config_takes_the_search_settings_and_refuses_others(tmp_path, cli):
    Vault.init(tmp_path / "v", lang="en", orchestrator="lee")
    os.environ.pop("VAULTMEM_SEARCH_SEMANTIC", None)
    assert cli("config", "set", "search.semantic", "always", "--vault", str(tmp_path / "v")).exit_code == 0
    assert cli("config", "set", "search.model", f"model2vec:{tmp_path}", "--vault", str(tmp_path / "v")).exit_code == 0
    bad = cli("config", "set", "search.semantic", "sometimes", "--vault", str(tmp_path / "v"))
    assert bad.exit_code != 0 and "off, auto, always or only" in bad.output
    bad = cli("config", "set", "search.model", "openai", "--vault", str(tmp_path / "v"))
    assert bad.exit_code != 0 and "model2vec:PATH" in bad.output
    config = Vault(tmp_path / "v").config
    assert (config.search_semantic, config.search_model) == ("always", f"model2vec:{tmp_path}")


def test_index_embeds_and_says_so(tmp_path):
    make_vault(tmp_path / "vault", model=tiny_model(tmp_path / "m"))
    res = run_vaultmem("index", "--json", "--vault", str(tmp_path / "vault"))
    sem = json.loads(res.stdout)["semantic"]
    assert sem["on"] and sem["vectors"] >= len(NOTES) and sem["embedded"] == sem["vectors"]
    assert sys.modules.get("numpy") is not None  # (this process: the test imported it)


# -- a real SIGKILL at each step of making vectors ----------------------------------------------
KILLPOINTS = Path(__file__).resolve().parent / "killpoints"


def _consistent(root: Path, spec: str) -> int:
    """Every row of the live vector set holds its own document's vector; returns the count."""
    base = root / ".vaultmem" / "index"
    gen = base / (base / "CURRENT").read_text().strip()
    state = vectors.read_state(gen)
    if state is None:
        return 0
    vs = vectors.VectorSet.open(gen, state)
    model = embedders.load(spec)
    docs = [vs.doc(n) for n in range(vs.count)]
    assert [d.id for d in docs] == [r[0] for r in vs.rows]
    expected = model.embed([vectors.embed_text(d) for d in docs])
    assert np.allclose(np.asarray(vs.matrix), expected, atol=1e-5)
    count = vs.count
    vs.close()
    return count


@pytest.mark.soak
def test_a_kill_at_any_step_of_an_embedding_leaves_right_vectors_or_the_old_ones(tmp_path):
    import shutil

    spec = tiny_model(tmp_path / "m")
    first = make_vault(tmp_path / "start", model=spec)
    assert run_vaultmem("index", "--vault", str(first.root)).returncode == 0  # vectors of every note
    write_note(first.root, "car", "A vehicle, an automobile: the cat's car.")
    (first.root / "memories" / "tax.md").unlink()
    log = tmp_path / "steps.log"
    probe = tmp_path / "probe"
    shutil.copytree(first.root, probe, symlinks=True)
    env = {"PYTHONPATH": str(KILLPOINTS), "VAULTMEM_TEST_KILL_LOG": str(log)}
    assert run_vaultmem("index", "--vault", str(probe), env=env).returncode == 0
    steps: dict[str, int] = {}
    points = []
    for line in log.read_text().splitlines():
        op, path = line.split("\t", 1)
        steps[op] = steps.get(op, 0) + 1
        if f"/{vectors.layout.INDEX_VECTORS}/" in path:
            points.append(f"{op}:{steps[op]}")
    assert points, "making vectors takes no step the test can kill"
    for point in dict.fromkeys((points[0], points[0] + "+", points[-1])):  # before and after the swap, the tidy
        root = tmp_path / point.replace(":", "-").replace("+", "p")
        shutil.copytree(first.root, root, symlinks=True)
        killed = run_vaultmem("index", "--vault", str(root),
                              env={"PYTHONPATH": str(KILLPOINTS), "VAULTMEM_TEST_KILL_AT": point})
        assert killed.returncode == -9, (point, killed.stderr)
        _consistent(root, spec)  # the old vectors, or the new: never a row with another's vector
        res = run_vaultmem("search", "feline nap", "--json", "--vault", str(root))  # opens the channel
        assert res.returncode == 0, res.stderr
        assert out_json(res)["hits"][0]["id"] == "memories/kitten.md"
        assert out_json(res)["hits"][0]["channel"] == "semantic"
        assert _consistent(root, spec) == _consistent(probe, spec)


def test_vectors_never_made_stop_being_journaled_past_a_cap_and_come_back_with_the_engine_kept(
        tmp_path, monkeypatch):
    spec = tiny_model(tmp_path / "m")
    v = make_vault(tmp_path / "vault", semantic="off", model=spec)
    v.rebuild_index(engine="whoosh")  # chosen by hand: kept by every rebuild after
    base = v.index.base
    gen = base / (base / "CURRENT").read_text().strip()
    assert not vectors.started(gen)  # off: nothing journaled
    on = IndexStore(v.root, semantic="auto", model=spec)
    assert search(on, "vehicle colour")[0].doc.path == "memories/car.md"  # the first opening rebuilds, once
    gen = base / (base / "CURRENT").read_text().strip()
    assert vectors.read_state(gen)["count"] and on.engine_name() == "whoosh"
    monkeypatch.setattr(vectors, "MAX_JOURNAL_BYTES", 10)
    write_note(v.root, "car", "A vehicle.")
    on.refresh()
    write_note(v.root, "car", "A red vehicle.")
    on.refresh()  # the journal holds more than the cap beyond what the vectors hold
    assert not vectors.started(gen)
    monkeypatch.setattr(vectors, "MAX_JOURNAL_BYTES", 64 * 1024 * 1024)
    assert search(on, "automobile colour")[0].doc.path == "memories/car.md"
    assert on.engine_name() == "whoosh"
    on.close()

