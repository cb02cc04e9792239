"""The benchmarks' harness (benchmarks/): ``python -m benchmarks`` lists and runs the
scenarios; the A/B timing helper times whole commands in turn and takes each pair's
ratio; the result writer rewrites only its own section of a document. The benchmarks
themselves measure, in benchmarks/results/ — here only the tools they share are held
to what they say."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_until

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import report  # noqa: E402
import timing  # noqa: E402


def run_benchmarks(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_python_m_benchmarks_lists_each_scenario_and_runs_one_by_its_name():
    listed = run_benchmarks()
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[2:] if line.strip()]
    assert {"hooks", "mcp", "recall", "cold_ab", "warm_search"} <= set(names)
    assert not {"vaults", "timing", "report"} & set(names)  # the shared helpers are not scenarios
    helped = run_benchmarks("cold_ab", "--help")  # a scenario by its short name, its own arguments passed on
    assert helped.returncode == 0 and "--vault-b" in helped.stdout, helped.stderr
    assert run_benchmarks("bench_cold_ab.py", "--help").returncode == 0
    unknown = run_benchmarks("no-such-bench")
    assert unknown.returncode == 2 and "no benchmark 'no-such-bench'" in unknown.stderr and "hooks" in unknown.stderr


def test_alternate_times_both_sides_in_turn_and_takes_each_pairs_ratio(tmp_path):
    heavy = [sys.executable, "-c", "sum(i * i for i in range(2_000_000))"]
    light = [sys.executable, "-c", "pass"]
    seen = []

    def numbered(n: int) -> list[str]:  # a command may vary with the run's number
        seen.append(n)
        return light

    ab = timing.alternate(heavy, numbered, runs=3, warm=1)
    assert seen == [0, 1, 2, 3]  # one warm pair, then three timed
    assert ab["runs"] == 3 and ab["a"]["cpu"]["runs"] == 3 and ab["b"]["wall"]["runs"] == 3
    assert ab["ratio"]["cpu"] > 1.5 and ab["ratio"]["wall"] > 1.5  # the heavy side costs more, whatever the load
    assert ab["a"]["cpu"]["median"] > ab["b"]["cpu"]["median"]
    with pytest.raises(SystemExit, match="side B failed"):
        timing.alternate(light, [sys.executable, "-c", "raise SystemExit(3)"], runs=1, warm=0)


def test_a_section_is_rewritten_between_its_markers_and_nothing_else_moves(tmp_path):
    begin, end = report.markers("bench_x")
    doc = tmp_path / "doc.md"
    report.write_section(doc, "first", begin, end)
    assert doc.read_text() == f"# Benchmarks\n\n{begin}\nfirst\n{end}\n"
    doc.write_text(f"# Mine\n\nintro by hand\n\n{begin}\nold\n{end}\n\nnotes by hand\n")
    report.write_section(doc, report.table(["n", "p50"], [[1000, "2.3 ms"], [10_000, "a|b"]]), begin, end)
    text = doc.read_text()
    assert text.startswith("# Mine\n\nintro by hand\n\n") and text.endswith("\n\nnotes by hand\n")
    assert "old" not in text and "| 1000 | 2.3 ms |" in text and "a\\|b" in text
    assert report.write_json(tmp_path / "r" / "x.json", {"a": 1}).read_text() == '{\n  "a": 1\n}\n'


def test_a_result_records_the_machine_and_the_code_it_measured(tmp_path):
    seen = report.machine(tmp_path, packages=("typer", "no-such-package"))
    assert seen["cpus"] >= 1 and seen["python"].count(".") == 2 and seen["date"].endswith("UTC")
    assert seen["typer"] and seen["no-such-package"] is None and seen["fs"]
    assert report.code_version("a label") == "a label"
    here = report.code_version()
    assert here == "?" or len(here.split()[0]) >= 7  # a short commit, where the checkout is a git one
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x" * 1000)
    assert report.dir_bytes(tmp_path) == 1000


def test_a_childs_cpu_is_counted_once_it_is_waited_for():
    before = timing.children_cpu()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    assert timing.children_cpu() - before > 0.05
    assert timing.peak_rss_mb(children=True) > 5 and timing.fmt_ms_of(12.345) == "12.3 ms"


def test_a_child_runs_this_checkouts_vaultmem_with_its_output_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("VAULTMEM_AGENT", "someone")
    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", "tantivy")
    monkeypatch.setattr(timing, "PYCACHE", tmp_path / "pycache")
    env = timing.child_env()
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(timing.PROJECT)
    assert "VAULTMEM_AGENT" not in env and env["VAULTMEM_INDEX_ENGINE"] == "tantivy"  # only the engine choice
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache") and "PYTHONDONTWRITEBYTECODE" not in env
    assert "VAULTMEM_INDEX_ENGINE" not in timing.child_env(keep=())
    assert "PYTHONPYCACHEPREFIX" not in timing.child_env(bytecode_cache=False)
    wall, done = timing.run_kept([sys.executable, "-c", "import vaultmem, os; print(os.path.dirname(vaultmem.__file__))"])
    assert done.returncode == 0 and wall > 0
    assert done.stdout.strip() == str(timing.PROJECT / "vaultmem")  # the vaultmem beside the benchmarks


@pytest.mark.parametrize("kind", ["search", "task", "served-search", "served-brief"])
def test_warm_cpu_runs_each_kind_of_call_on_a_vault(vault, kind):
    """``warm_cpu.py`` (timed from outside by ``benchmarks/ab.py``) makes its calls on a real
    vault — a served kind with the file-event observer vaultmem mcp runs — and exits 0."""
    (vault.root / "memories" / "kafka.md").write_text("---\nname: kafka\ntype: fact\n---\nkafka retry 超时 3 次\n",
                                                      encoding="utf-8")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "warm_cpu.py"), str(vault.root), kind, "3"],
                       capture_output=True, text=True, timeout=120, cwd=vault.root)
    assert r.returncode == 0, r.stderr
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "warm_cpu.py"), str(vault.root), "nothing", "3"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_mcp_handed_reports_what_a_model_is_handed_by_search(vault):
    """``mcp_handed.py`` asks a real ``vaultmem mcp`` each query and prints the size of its
    structured content beside its text's."""
    (vault.root / "memories" / "kafka.md").write_text("---\nname: kafka\ntype: fact\n---\nkafka retry 超时 3 次\n",
                                                      encoding="utf-8")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mcp_handed.py"), str(vault.root), "--query", "kafka",
                        "--query", "nothing-here"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    rows = {line.split(" | ")[0].strip("| "): line.strip("| ").split(" | ")[1:] for line in r.stdout.splitlines()[2:]}
    assert rows["kafka"][0] == "1" and rows["nothing-here"][0] == "0" and int(rows["all"][1]) > 0 < int(rows["all"][3])


def test_mcp_tail_drives_a_real_server_and_reports_its_tail(vault):
    """``mcp_tail.py`` starts ``vaultmem mcp`` on a vault, calls one tool over bare
    JSON-RPC lines for the seconds given, and prints p50 / p95 / p99 / max."""
    (vault.root / "memories" / "kafka.md").write_text("---\nname: kafka\ntype: fact\n---\nkafka retry 超时 3 次\n",
                                                      encoding="utf-8")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mcp_tail.py"), str(vault.root), "--seconds", "0.5"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert line.startswith("this checkout") and "search_memory: p50" in line and "max" in line, line
    assert int(line.rsplit("(", 1)[1].split()[0]) >= 1  # calls made
    varied = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mcp_tail.py"), str(vault.root), "--seconds", "0.5",
                             "--varied"], capture_output=True, text=True, timeout=180)
    assert varied.returncode == 0, varied.stderr
    assert "search_memory: p50" in varied.stdout and (" MiB" in varied.stdout or not sys.platform.startswith("linux"))
    wrong = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mcp_tail.py"), str(vault.root), "--tool", "brief",
                            "--varied"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "--varied" in wrong.stderr
    # --against: another checkout's server (here this one's again), called in turn, rounds and a ratio
    pair = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mcp_tail.py"), str(vault.root),
                           "--seconds", "0.3", "--against", str(ROOT), "--rounds", "2"],
                          capture_output=True, text=True, timeout=180)
    assert pair.returncode == 0, pair.stderr
    rounds = [ln for ln in pair.stdout.splitlines() if ln.startswith("round ")]
    assert len(rounds) == 2 and all("×" in ln and "calls each" in ln for ln in rounds), pair.stdout
    assert "this checkout over" in pair.stdout.splitlines()[-1] and "mean ×" in pair.stdout, pair.stdout
    nowhere = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mcp_tail.py"), str(vault.root),
                              "--against", str(vault.root)], capture_output=True, text=True, timeout=60)
    assert nowhere.returncode == 2 and "no vaultmem package" in nowhere.stderr


def test_bench_mcp_drives_a_baselines_server_over_bare_lines_and_reports_it(vault):
    """``bench_mcp``'s bare JSON-RPC rounds on another installation's interpreter (its own
    vaultmem: no PYTHONPATH to this checkout, started outside it) give each tool's figures,
    and the report has a row for them under the baseline's name."""
    import bench_mcp

    (vault.root / "memories" / "kafka.md").write_text("---\nname: kafka\ntype: fact\n---\nkafka retry 超时 3 次\n",
                                                      encoding="utf-8")
    raw = bench_mcp.bench_raw(vault.root, 2, 1, python=sys.executable)
    assert set(raw) == {"brief", "search_memory", "get_stats"} and all(raw[k]["p50"] > 0 for k in raw)
    tools = {k: {"p50": 0.012, "p95": 0.02} for k in raw}
    result = {"notes": 1000, "load": 0.5, "cold": {"p50": 0.3, "p95": 0.3}, "raw": tools, "raw_baseline": raw,
              "imports": {"sdk_modules": [], "modules_imported": 200, "mcp_server_import_s": 0.5},
              "servers": [{"mode": "watch", "stats": {"index": {"engine": "whoosh"}}, "tools": tools,
                           "start_to_first_answer_s": 1.0}]}
    meta = {"date": "today", "version": "x", "cpus": 2, "python": "3", "command": "bench_mcp", "calls": 2,
            "warmup": 1, "cold": 1, "baseline": "other 1234", "baseline_label": "main"}
    text = bench_mcp.report([result], meta)
    row = next(line for line in text.splitlines() if "main, bare JSON-RPC client" in line)
    assert row.startswith("| 1,000 |") and bench_mcp.fmt_ms(raw["brief"]["p50"]) in row


def test_ab_times_two_commands_in_turn_and_prints_each_side_and_the_pairs_ratio(tmp_path):
    """``ab.py``, the command line of ``timing.alternate``: whole commands in turn, each
    side's CPU and wall as min / median / max, the median of the pairs' ratios."""
    ab = [sys.executable, str(ROOT / "benchmarks" / "ab.py")]
    light = shlex.join([sys.executable, "-c", "pass"])
    heavy = [sys.executable, "-c", "sum(range(3 * 10**6))"]
    r = subprocess.run([*ab, "-n", "3", "--warmup", "0", "--vs", light, "--", *heavy], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "sum(range(3 * 10**6))" in lines[0] and lines[1].endswith("-c pass") and lines[2].startswith("3 alternated")
    rows = {line.split()[0]: line.split()[1:] for line in lines[4:6]}
    for side in ("A", "B"):  # cpu and wall, min <= median <= max
        cells = [float(c) for c in rows[side] if c != "/"]
        assert len(cells) == 6 and cells[0] <= cells[1] <= cells[2] and cells[3] <= cells[4] <= cells[5], r.stdout
    cpu_ratio = float(re.search(r"A/B  cpu ([0-9.]+)", lines[6]).group(1))
    assert cpu_ratio > 1  # three million additions cost more than none, pair by pair
    bad = subprocess.run([*ab, "-n", "0", "--vs", light, "--", *heavy], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "-n >= 1" in bad.stderr and not bad.stdout
    unclosed = subprocess.run([*ab, "--vs", "python -c 'pass", "--", *heavy], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
    assert unclosed.returncode == 2 and "No closing quotation" in unclosed.stderr
    # a run over its time is killed with what it started: a wrapper script's own child too
    pid_file = tmp_path / "child.pid"
    wrapper = f"sleep 300 & echo $! > {pid_file}; wait"
    slow = subprocess.run([*ab, "-n", "1", "--warmup", "0", "--timeout", "5", "--vs", light, "--", "sh", "-c", wrapper],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert slow.returncode == 3 and "over 5 s" in slow.stderr
    child = int(pid_file.read_text())

    def gone() -> bool:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()[0] == "Z"  # killed, not yet reaped
    wait_until(gone, what="the wrapper's child killed")
