"""The learned ranker's model (vaultmem/ranker.py): a process that scores more than once
scores with the trees compiled into one function, and that function orders exactly as
walking the trees' nodes does; a model file cannot put code into it."""

from __future__ import annotations

import json
import math
import random

import pytest

from vaultmem import ranker


def _rows(n: int, seed: int) -> list[list[float]]:
    """Rows like a search's: flags, shares, logs — and each model's own thresholds exactly,
    where ``<=`` decides the branch."""
    r = random.Random(seed)
    return [[r.choice([0.0, 1.0, r.random(), r.random() * 6, 0.5]) for _ in ranker.FEATURES] for _ in range(n)]


@pytest.mark.parametrize("name", ["ranker.json", "ranker-e5.json"])
def test_the_compiled_trees_score_every_row_as_walking_the_nodes_does(name):
    data = json.loads((ranker.MODEL_PATH.parent / name).read_text())
    rows = _rows(400, 7)
    for tree in data["trees"][:20]:  # rows sitting exactly on a split: the tie goes left in both
        for node in tree:
            if len(node) == 4:
                row = list(rows[0])
                row[ranker.FEATURES.index(data["features"][node[0]])] = node[1]
                rows.append(row)
    rows.append([math.nan] * len(ranker.FEATURES))  # NaN goes right in both
    model = ranker.Model(data)
    walked = model.score(rows)  # the first scoring walks the nodes
    assert not model.compiled
    compiled, again = model.score(rows), model.score(rows)
    assert model.compiled
    assert compiled == walked == again  # float for float, not merely close
    assert len(set(walked)) > 50  # the rows take many paths: the comparison means something


@pytest.mark.parametrize("count", [0, 1, ranker.TREES_A_STATEMENT, ranker.TREES_A_STATEMENT + 1, 237])
def test_any_number_of_trees_compiles_to_the_sum_the_walk_makes(count):
    """However many trees (the sum is split into statements of TREES_A_STATEMENT), the
    compiled function adds them in the walk's order: the same floats."""
    r = random.Random(count)
    names = list(ranker.FEATURES[:12])

    def tree() -> list:
        nodes: list = [None]
        def grow(at: int, depth: int) -> None:
            if depth == 3 or r.random() < 0.3:
                nodes[at] = [r.uniform(-1, 1) * 10 ** r.randint(-3, 2)]
                return
            nodes.extend([None, None])
            left, right = len(nodes) - 2, len(nodes) - 1
            nodes[at] = [r.randrange(len(names)), r.choice([0.0, 0.5, r.random() * 6]), left, right]
            grow(left, depth + 1)
            grow(right, depth + 1)
        grow(0, 0)
        return nodes

    model = ranker.Model({"kind": "trees", "features": names, "trees": [tree() for _ in range(count)]})
    rows = _rows(300, count)
    walked = model.score(rows)
    assert model.score(rows) == walked and model.compiled
    assert count < 2 or len(set(walked)) > 20


@pytest.mark.parametrize("name", ["ranker.json", "ranker-e5.json"])
def test_each_shipped_model_ships_its_trees_compiled_from_exactly_it(name):
    path = ranker.MODEL_PATH.with_name(name)
    shipped = ranker.compiled_path(path).read_text(encoding="utf-8")
    assert shipped == ranker.compiled_text(path.read_bytes()), (
        f"{ranker.compiled_path(path).name} was not made from {name}: "
        f"python -c 'from vaultmem import ranker; ranker.write_compiled(ranker.MODEL_PATH.with_name(\"{name}\"))'")


@pytest.fixture
def bytecode_written(monkeypatch):
    """Python as it runs by default: it writes the bytecode it compiles (whatever this
    process's PYTHONDONTWRITEBYTECODE), and every model is read afresh."""
    import sys

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(ranker, "_LOADED", {})


def test_the_shipped_model_scores_compiled_from_its_first_search_as_walking_does(bytecode_written):
    rows = _rows(300, 11)
    shipped = ranker.model()
    assert shipped.compiled  # before any scoring: the module beside the model file
    walked = ranker.Model(json.loads(ranker.MODEL_PATH.read_text(encoding="utf-8"))).score(rows)
    assert shipped.score(rows) == walked and len(set(walked)) > 50


def _model_file(folder, leaf: float):
    folder.mkdir(exist_ok=True)
    path = folder / "ranker.json"
    path.write_text(json.dumps({"kind": "trees", "features": ["engine", "rel_own"],
                                "trees": [[[0, 0.5, 1, 2], [leaf], [1.0]]]}), encoding="utf-8")
    return path


def test_compiled_trees_made_from_another_model_file_are_not_used(tmp_path, monkeypatch, bytecode_written):
    monkeypatch.setattr(ranker, "MODEL_PATH", _model_file(tmp_path / "data", 0.25))
    ranker.write_compiled(ranker.MODEL_PATH)
    assert ranker.model(ranker.MODEL_PATH).compiled
    retrained = _model_file(tmp_path / "data", 0.75)  # the model changed; its compiled trees did not
    ranker.compiled_path(retrained).write_text(
        ranker.compiled_text(_model_file(tmp_path / "old", 0.25).read_bytes()), encoding="utf-8")
    fresh = ranker.Model(json.loads(retrained.read_text()))
    monkeypatch.setattr(ranker, "_LOADED", {})  # a new process: the model read afresh
    loaded = ranker.model(retrained)
    assert not loaded.compiled and loaded.score([[0.0] * len(ranker.FEATURES)]) == [0.75] == fresh.score(
        [[0.0] * len(ranker.FEATURES)])


def test_a_damaged_compiled_module_is_passed_over_and_the_nodes_walked(tmp_path, monkeypatch, bytecode_written):
    monkeypatch.setattr(ranker, "MODEL_PATH", _model_file(tmp_path / "data", 0.25))
    compiled = ranker.write_compiled(ranker.MODEL_PATH)
    compiled.write_text("import no_such_module_here\n" + compiled.read_text(encoding="utf-8"), encoding="utf-8")
    model = ranker.model(ranker.MODEL_PATH)
    assert not model.compiled and model.score([[0.0] * len(ranker.FEATURES)]) == [0.25]


def test_compiled_trees_without_cached_bytecode_are_imported_only_where_it_may_be_written(tmp_path, monkeypatch):
    # compiling the module's source (~12 ms) costs more than walking the nodes once
    import importlib.util
    import sys

    monkeypatch.setattr(ranker, "MODEL_PATH", _model_file(tmp_path / "data", 0.25))
    cached = importlib.util.cache_from_source(str(ranker.write_compiled(ranker.MODEL_PATH)))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert not ranker.model(ranker.MODEL_PATH).compiled
    monkeypatch.setattr(ranker, "_LOADED", {})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert ranker.model(ranker.MODEL_PATH).compiled  # the first process compiles it, once
    assert (tmp_path / "data" / "__pycache__").is_dir() and __import__("os").path.exists(cached)
    monkeypatch.setattr(ranker, "_LOADED", {})
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert ranker.model(ranker.MODEL_PATH).compiled  # then every process, bytecode or not written


def test_a_module_beside_a_users_own_model_file_is_never_run(tmp_path):
    planted = tmp_path / "planted"
    path = _model_file(tmp_path / "mine", 0.25)
    ranker.compiled_path(path).write_text(f"__import__('pathlib').Path({str(planted)!r}).touch()\n")
    assert ranker.model(path).score([[0.0] * len(ranker.FEATURES)]) == [0.25]
    assert not planted.exists()


def test_a_model_file_cannot_put_code_into_the_compiled_scorer(tmp_path):
    planted = tmp_path / "planted"
    code = f"__import__('pathlib').Path({str(planted)!r}).touch()"
    leaf_code = [[0, 0.5, 1, 2], [code], [1.0]]
    threshold_code = [[0, code, 1, 2], [0.0], [1.0]]
    feature_code = [[f"0] or {code} or row[0", 0.5, 1, 2], [0.0], [1.0]]
    for tree in (leaf_code, threshold_code, feature_code):
        model = ranker.Model({"kind": "trees", "features": ["engine", "rel_own"], "trees": [tree]})
        for _ in range(3):  # past the second scoring, where the trees would be compiled
            with pytest.raises(TypeError):  # the walk meets a string where a number belongs
                model.score([[0.0] * len(ranker.FEATURES)])
        assert not model.compiled
    assert not planted.exists()


def test_a_model_with_an_infinite_threshold_is_walked_and_scores_the_same():
    tree = [[0, math.inf, 1, 2], [0.25], [1.0]]
    model = ranker.Model({"kind": "trees", "features": ["engine"], "trees": [tree, tree]})
    rows = [[x] + [0.0] * (len(ranker.FEATURES) - 1) for x in (0.0, 5.0, math.inf, math.nan)]
    assert [model.score(rows) for _ in range(3)] == [[0.5, 0.5, 0.5, 2.0]] * 3
    assert not model.compiled


@pytest.mark.parametrize("threshold", [2 ** 53 + 3, 10 ** 400], ids=["past 2**53", "10**400"])
def test_a_model_with_a_threshold_no_float_holds_is_walked_and_scores_the_same(threshold):
    """An int threshold past 2**53 would compare as another number once written as a float
    (and 10**400 is no float at all): such a model is walked, never compiled."""
    tree = [[0, threshold, 1, 2], [0.25], [1.0]]
    model = ranker.Model({"kind": "trees", "features": ["engine"], "trees": [tree]})
    rows = [[x] + [0.0] * (len(ranker.FEATURES) - 1) for x in (0.0, float(2 ** 53 + 3), math.inf)]
    assert [model.score(rows) for _ in range(3)] == [model.score(rows)] * 3
    assert model.score(rows)[1] == (0.25 if float(2 ** 53 + 3) <= threshold else 1.0)
    assert not model.compiled


def test_a_model_file_reads_as_json_reads_it_infinity_and_nan_included(tmp_path):
    """Model files are read by orjson, a fifth of json's time; what only json reads
    (Infinity, NaN, which json.dumps writes) is still read, and to the same values."""
    for name in ("ranker.json", "ranker-e5.json"):
        path = ranker.MODEL_PATH.parent / name
        assert ranker.model(path).data == json.loads(path.read_text(encoding="utf-8"))
    own = tmp_path / "own.json"
    data = {"kind": "trees", "features": ["engine"], "trees": [[[0, math.inf, 1, 2], [0.25], [1.0]]],
            "trained_on": {"loss": math.nan}}
    own.write_text(json.dumps(data), encoding="utf-8")
    read = ranker.model(own).data
    assert "Infinity" in own.read_text() and "NaN" in own.read_text()
    assert read["trees"] == data["trees"] and math.isnan(read["trained_on"]["loss"])
    assert ranker.model(own).score([[5.0] + [0.0] * (len(ranker.FEATURES) - 1)]) == [0.25]


# -- the features read from the index's stored terms ----------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vaultmem.analysis import tokens  # noqa: E402

PIECES = st.text(alphabet=st.sampled_from(list("ab Zé\u0301ＡＢ１2-_'.,：，。龙井茶农送了林夏什么\t\n")), max_size=30)


@settings(max_examples=300, deadline=None)
@given(PIECES, PIECES, st.lists(PIECES, max_size=3))
def test_a_heading_and_a_whole_text_are_analysed_as_their_parts_are(title, text, aliases):
    """Ranking reads a candidate's heading terms (title and aliases) and a hit's whole
    text's terms (title, text, aliases) from the index's fields for those parts:
    analysing the joined text must give exactly those terms."""
    joined = " ".join(aliases)
    assert set(tokens(f"{title}\n{joined}")) == set(tokens(title)) | set(tokens(joined))
    assert set(tokens(f"{title}\n{text}\n{joined}")) == set(tokens(title)) | set(tokens(text)) | set(tokens(joined))


TURN = ("---\nname: {speaker}, s1, turn {n}\ndescription: {speaker}, s1, turn {n}\ntype: episode\nscope: global\n"
        "session: s1\nturn: {n}\nspeaker: {speaker}\nsaid: '2024-03-{day:02d}'\naliases: [{alias}]\n---\n{body}\n")
TURNS = [("林夏", "茶农送了林夏一罐龙井，她说要冷藏保存。", "龙井"),
         ("Nadia", "Nadia adopted a grey cat named Pixel last spring.", "Pixel"),
         ("林夏", "明天去杭州看茶园吗？", "茶园"),
         ("Nadia", "Yes! The tea farm tour starts at nine. " + "Long notes run on and on. " * 120 + "Bring sunscreen.",
          "tour")]
QUESTIONS = ["龙井 Pixel 茶", "茶农送了林夏什么？", "What is Nadia's cat called?", "When does the tea farm tour start?",
             "林夏的龙井怎么保存", "杭州 茶园", "grey cat Pixel spring", "What did 林夏 say on March 3?",
             "sunscreen for the tour"]  # a word past the features' window


def test_the_ranker_reads_stored_terms_exactly_as_analysing_the_text_again(vault, monkeypatch):
    """A tantivy search hands ranking each hit's terms as the index holds them; every
    feature row made from them equals the row made by analysing the hit's text again —
    Chinese and English, titles and aliases, neighbours, a date, a text past the
    features' window — so ranking stays what the ranker was trained on."""
    from vaultmem.analysis import query_tokens
    from vaultmem.answers import answer_kind
    from vaultmem.index import Filters, Found
    from vaultmem.retrieve import (DATE_PREFIX, FEATURE_CHARS, LEARNED_POOL, candidate_rows, judged, spaced_terms,
                                   unit_weights)

    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", "tantivy")
    for n, (speaker, body, alias) in enumerate(TURNS, start=1):
        (vault.root / "memories" / f"t{n}.md").write_text(
            TURN.format(speaker=speaker, n=n, day=n, alias=alias, body=body), encoding="utf-8")
    assert len(TURNS[-1][1]) > FEATURE_CHARS
    vault.pages.ensure("茶艺", vault.actor("lee"))
    page = vault.root / "agents" / "茶艺.md"
    twins = ("- 龙井用八十度的水冲泡 ^m-0a0a0a\n- Pixel the cat naps by the tea shelf ^m-0a0a0a\n")  # one id, copied
    page.write_text(page.read_text(encoding="utf-8").rstrip("\n") + "\n" + twins, encoding="utf-8")
    vault.refresh_index()
    compared = 0
    for question in QUESTIONS:
        terms = query_tokens(question)
        words = [t for t in terms if not t.startswith(DATE_PREFIX)]
        days = set(terms) - set(words)
        found = vault.index.search(words or list(days), Filters(), LEARNED_POOL, text=question)
        assert isinstance(found, Found) and all(found.terms_of(d) is not None for d, _s in found)
        units = unit_weights(vault.index, question)
        args = (units, answer_kind(question), question, terms, days, None)
        stored_cands, stored_rows = candidate_rows(found, *args)
        again_cands, again_rows = candidate_rows(list(found), *args)  # no stored terms: analysed again
        assert stored_rows == again_rows, question
        assert [vars(c) for c in stored_cands] == [vars(c) for c in again_cands], question
        # and what a hit is judged on: from its stored terms, and from only the terms asked
        # about among them (as search() judges its hits), the same as from its text
        wanted = spaced_terms({*terms, *(t for grams, _w in units for t in grams)})
        for doc, _score in found:
            judge = (doc, (), units, answer_kind(question), question)
            whole, have, share = judged(*judge)
            assert judged(*judge, found.terms_of(doc)) == (whole, have, share), (question, doc.id)
            asked_whole, asked_have, asked_share = judged(*judge, found.terms_of(doc), wanted)
            assert (asked_whole, asked_share) == (whole, share), (question, doc.id)
            assert asked_have == have & {t for t, _spaced in wanted}, (question, doc.id)
        compared += len(found)
        twins_found = [d for d, _s in found if d.id.endswith("^m-0a0a0a")]
        assert len(twins_found) == (2 if question == QUESTIONS[0] else len(twins_found)), question
    assert compared >= 10
