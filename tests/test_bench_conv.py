"""The conversational dev sets (benchmarks/devset/conv/) and their harness
(benchmarks/bench_conv.py): every data file checks out, the validator names the file and
question of a broken one, and a built vault is one vaultmem reads without a problem."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import load_benchmark, run_vaultmem
from vaultmem import Vault
from vaultmem.evaluate import load_queries

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_conv.py"


def _load_harness():
    return load_benchmark(SCRIPT, "bench_conv")


bench = _load_harness()


def test_every_conversation_file_of_both_splits_checks_out():
    """Schema, evidence that names real turns, unique ids across both splits, the
    per-kind counts of each split and language, and no shared term between a
    paraphrase question and its evidence."""
    report = bench.check()
    assert report.problems == []
    assert report.files >= 12
    for (split, lang), counts in report.counts.items():
        for kind, least in bench.KIND_MINIMUMS.items():
            assert counts[kind] >= least, (split, lang, kind)
        assert sum(counts.values()) >= bench.MIN_QUESTIONS, (split, lang)
    assert {("tune", "en"), ("tune", "zh")} <= set(report.counts)


def test_the_paraphrase_rule_is_vaultmem_analysis_with_names_left_out():
    """Stems meet (pets ~ pet), a CJK bigram counts, and a speaker's name does not."""
    assert bench.shared_terms("What pets does Nadia have?", ["Nadia loves her pet."], ["Nadia"]) == ["pet"]
    assert bench.shared_terms("林夏的龙井怎么保存？", ["林夏说龙井要冷藏"], ["林夏"]) == ["龙井"]
    assert bench.shared_terms("What does Nadia's cat eat?", ["Nadia: tuna"], ["Nadia"]) == []


def _broken(tmp_path: Path) -> Path:
    conv = bench.load(bench.CONV_DIR / "tune" / "en-t01.yaml")
    conv["questions"] = [
        {"id": "en-t01-q01", "question": "What pet does Nadia own?", "kind": "paraphrase", "evidence": ["s1:12"]},
        {"id": "en-t01-q02", "question": "Where does Nadia work?", "kind": "single-hop", "evidence": ["s9:1"]},
        {"id": "en-t01-q02", "question": "What does Tom own?", "kind": "no-answer", "evidence": []},
        {"id": "en-t01-q03", "question": "Who owns a pet?", "kind": "paraphrase", "evidence": ["s1:13"]},
    ]
    conv["sessions"][0]["turns"][12]["text"] = "Give your pet a scratch from me."
    folder = tmp_path / "tune"
    folder.mkdir()
    path = folder / "en-t01.yaml"
    buf = io.StringIO()
    YAML().dump(conv, buf)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def test_check_names_the_file_and_question_of_each_problem(tmp_path):
    path = _broken(tmp_path)
    r = subprocess_check(path.parent)
    assert r.returncode == 1
    err = r.stderr
    assert f"{path.as_posix()}: en-t01-q02: evidence s9:1 names no turn" in err
    assert f"{path.as_posix()}: en-t01-q02: question id also in" in err
    assert f"{path.as_posix()}: en-t01-q03: paraphrase shares pet with its evidence" in err
    assert "en-t01-q01" not in err  # "own"/"pet" are not in s1:12
    assert "paraphrase questions, at least 8 needed" in err  # the split's counts, per language


def subprocess_check(*dirs: Path):
    return subprocess.run([sys.executable, str(SCRIPT), "check", *map(str, dirs)], capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.usefixtures("both_engines")
def test_a_built_vault_is_read_without_a_problem_and_its_queries_name_its_notes(tmp_path):
    root = tmp_path / "conv"
    queries = bench.build(root, "tune", "zh", "turn", ids=("zh-t01",))
    conv = bench.load(bench.CONV_DIR / "tune" / "zh-t01.yaml")
    turns = sum(len(s["turns"]) for s in conv["sessions"])
    vault = Vault.open(root)
    vault.refresh_index()
    assert vault.index.problems() == []
    assert vault.index.status()["files"] >= turns  # every turn a note, and MEMORY.md, identity
    note = vault.root / "memories" / "zh-t01-s2-t06.md"
    text = note.read_text(encoding="utf-8")
    assert "name: 星野, zh-t01 s2, turn 6\n" in text
    assert "session: zh-t01-s2\nturn: 6\n" in text
    assert "said: '2024-03-16'\n" in text
    loaded = load_queries((root / "queries.yaml").read_text(encoding="utf-8"), "queries.yaml")
    assert [q.id for q in loaded] == [q["id"] for q in queries] and len(loaded) == len(conv["questions"])
    for q in loaded:
        assert all((root / e).is_file() for e in q.expected), q.id
    # the answering turn is found by the search the harness runs
    hits = vault.search("茶农送了林夏什么？", limit=10)
    assert "memories/zh-t01-s2-t05.md" in [h.doc.path for h in hits]


def test_vaultmem_eval_runs_on_a_built_session_vault(tmp_path):
    root = tmp_path / "conv"
    bench.build(root, "tune", "en", "session", ids=("en-t01",))
    assert sorted(p.name for p in (root / "memories").glob("*.md")) == [f"en-t01-s{n}.md" for n in (1, 2, 3, 4)]
    r = run_vaultmem("--json", "eval", root / "queries.yaml", "--vault", root, "--at", "")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["queries"] == 13 and report["no_answer"] == 2
    assert report["metrics"]["hit@10"] > 0
