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
