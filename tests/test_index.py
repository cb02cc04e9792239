"""The derived index: incremental sync by checksum, rebuild and swap, and faults."""

import os
import random
import signal
import subprocess
import sys

import pytest
from conftest import SAFETY_NET, Lines, git, holds_flock, index_files, kill_now, kill_when, vaultmem_in_process

from vaultmem.index import Filters
from vaultmem.index.store import INDEX_DIR, LOCK_FILE, IndexStore
from vaultmem.retrieve import search

pytestmark = pytest.mark.usefixtures("both_engines")  # every test on Whoosh and on tantivy


def ids(store, query, **filters):
    return [h.doc.id for h in search(store, query, Filters(**filters), limit=20)]


def write(vault, rel, text):
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


NOTE = "---\nname: {name}\ntype: fact\nscope: global\n---\n{body}\n"


@pytest.fixture
def filled(vault):
    write(vault, "memories/port.md", NOTE.format(name="port", body="后端端口固定8080"))
    write(vault, "memories/db.md", NOTE.format(name="db", body="We chose PostgreSQL for billing"))
    vault.pages.ensure("前端审查", vault.actor("lee"))
    vault.pages.add("前端审查", "reviews must check useEffect cleanup", vault.actor("lee"))
    return vault


def test_first_refresh_builds_then_only_changes_are_reread(filled):
    store = IndexStore(filled.root)
    first = store.refresh()
    assert first.rebuilt and "memories/port.md" in first.new and first.problems == []
    again = store.refresh()
    assert (again.new, again.modified, again.deleted, again.docs) == ([], [], [], 0) and again.unchanged > 3
    os.utime(filled.root / "memories/port.md")  # touched, same content: no re-index
    assert store.refresh().modified == []
    write(filled, "memories/port.md", NOTE.format(name="port", body="后端端口改为9090"))
    r = store.refresh()
    assert r.modified == ["memories/port.md"] and r.docs == 1
    assert ids(store, "9090") == ["memories/port.md"] and ids(store, "8080") == []


def test_new_deleted_and_moved_files_are_found(filled):
    store = IndexStore(filled.root)
    store.refresh()
    write(filled, "memories/new.md", NOTE.format(name="new", body="Unleash feature flags"))
    os.remove(filled.root / "memories/db.md")
    os.rename(filled.root / "memories/port.md", filled.root / "memories/ports.md")
    r = store.refresh()
    assert "memories/new.md" in r.new and "memories/db.md" in r.deleted
    assert r.moved == [("memories/port.md", "memories/ports.md")]
    assert ids(store, "PostgreSQL") == []
    assert ids(store, "端口") == ["memories/ports.md"]


def test_refresh_of_named_paths_only(filled):
    store = IndexStore(filled.root)
    store.refresh()
    write(filled, "memories/db.md", NOTE.format(name="db", body="We chose MySQL"))
    write(filled, "memories/other.md", NOTE.format(name="o", body="MySQL other"))
    r = store.refresh(paths=["memories/db.md"])
    assert r.modified == ["memories/db.md"] and r.new == []
    assert ids(store, "MySQL") == ["memories/db.md"]


def test_broken_page_is_reported_and_the_rest_indexed(filled):
    write(filled, "agents/broken.md", "---\nname: [x\n---\n## 工作记忆\n")
    r = IndexStore(filled.root).refresh()
    (problem,) = r.problems
    assert problem["path"] == "agents/broken.md" and problem["line"] == 3 and "started on line 2" in problem["message"]
    assert ids(IndexStore(filled.root), "PostgreSQL") == ["memories/db.md"]


def test_each_page_entry_is_its_own_hit_with_its_id(filled):
    store = IndexStore(filled.root)
    store.refresh()
    (hit,) = search(store, "review", Filters(), limit=5)
    assert hit.doc.id.startswith("agents/前端审查.md#^m-") and hit.doc.entry_id and hit.doc.section == "work"
    assert hit.doc.link == f"[[agents/前端审查#^{hit.doc.entry_id}]]"


def test_index_is_derived_data_never_committed(filled):
    filled.refresh_index()
    assert (filled.root / INDEX_DIR / "CURRENT").exists()
    assert git(filled.root, "status", "--porcelain", "--untracked-files=all", "--", ".vaultmem") == ""


def test_rebuild_swaps_generations_and_an_open_reader_keeps_working(filled):
    store = IndexStore(filled.root)
    store.refresh()
    reader = IndexStore(filled.root)
    assert ids(reader, "PostgreSQL") == ["memories/db.md"]
    old = (filled.root / INDEX_DIR / "CURRENT").read_text()
    IndexStore(filled.root).rebuild()
    new = (filled.root / INDEX_DIR / "CURRENT").read_text()
    assert new != old and (filled.root / INDEX_DIR / new.strip()).is_dir()
    assert ids(reader, "PostgreSQL") == ["memories/db.md"]  # moves to the new generation
    IndexStore(filled.root).rebuild()
    gens = sorted(p.name for p in (filled.root / INDEX_DIR).glob("gen-*"))
    assert len(gens) == 2  # the live one and the one before it


@pytest.mark.parametrize("damage", ["delete_segment", "garbage_toc", "garbage_current", "empty_manifest", "no_index"])
def test_damaged_index_is_rebuilt_and_answers_correctly(filled, damage):
    filled.refresh_index()
    base = filled.root / INDEX_DIR
    gen = base / (base / "CURRENT").read_text().strip()
    segments, tocs = index_files(gen)
    if damage == "delete_segment":
        for p in segments:
            p.unlink()
    elif damage == "garbage_toc":
        for p in tocs:
            p.write_bytes(b"\x00garbage" * 10)
    elif damage == "garbage_current":
        (base / "CURRENT").write_text("../../etc")
    elif damage == "empty_manifest":
        (gen / "manifest.json").write_text("")
    else:
        import shutil

        shutil.rmtree(base)
    # a real process: tantivy opens the damaged files, and native code that aborted would end the run
    r = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(filled.root), "search", "端口", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert '"memories/port.md"' in r.stdout


INDEXER = r"""
import sys, time
from pathlib import Path
from vaultmem.index.store import IndexStore
root = Path(sys.argv[1]); store = IndexStore(root)
print("ready", flush=True)
i = 0
while True:
    for n in range(40):
        (root / "memories" / f"bulk{n}.md").write_text(f"---\nname: b{n}\ntype: fact\n---\nbulk text {i} 批量{n}\n")
    store.refresh()
    i += 1
    print(i, flush=True)
"""


def test_process_killed_during_index_commits_leaves_an_index_that_answers(filled):
    filled.refresh_index()
    rng = random.Random(3)
    for round_ in range(4):
        proc = subprocess.Popen([sys.executable, "-c", INDEXER, str(filled.root)], stdout=subprocess.PIPE, text=True)
        out = Lines(proc.stdout)
        out.wait_count(1 + rng.randint(0, 2))  # "ready", then a few whole refreshes
        if round_ % 2:
            kill_now(proc)  # wherever the indexer is by now
        else:
            kill_when(proc, lambda: holds_flock(filled.root / LOCK_FILE))  # in the middle of an update, for certain
        out.text()
        # a real process: it opens what the killed writer left, in native code
        r = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(filled.root), "search", "PostgreSQL",
                            "--json"], capture_output=True, text=True)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert '"memories/db.md"' in r.stdout
    store = IndexStore(filled.root)
    store.refresh()
    assert len(ids(store, "bulk")) == 20 and len(ids(store, "批量")) == 20  # limit 20 of 40


def test_two_processes_indexing_at_once_both_succeed(filled):
    for n in range(60):
        write(filled, f"memories/m{n}.md", NOTE.format(name=f"m{n}", body=f"concurrent fact {n}"))
    code = "import sys; from vaultmem import Vault; v = Vault(sys.argv[1]); print(v.refresh_index().docs)"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(filled.root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=SAFETY_NET) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("Traceback" not in err for _out, err in outs)
    store = IndexStore(filled.root)
    assert len([h for h in search(store, "concurrent fact", Filters(), limit=100)]) == 60


def test_incremental_changes_go_to_a_journal_that_other_processes_read(filled):
    store = IndexStore(filled.root)
    store.refresh()
    write(filled, "memories/db.md", NOTE.format(name="db", body="We chose MariaDB"))
    assert store.refresh(paths=["memories/db.md"]).modified == ["memories/db.md"]
    gen = (filled.root / INDEX_DIR / "CURRENT").read_text().strip()
    journal = filled.root / INDEX_DIR / gen / "manifest.journal"
    assert journal.exists() and b"memories/db.md" in journal.read_bytes()
    other = IndexStore(filled.root)  # another process: manifest.json + journal
    again = other.refresh()
    assert again.modified == [] and again.new == [] and again.docs == 0
    with open(journal, "ab") as fh:
        fh.write(b'{"f": "memories/port.md", "v": nu')  # a line cut off by a crash
    assert IndexStore(filled.root).refresh().modified == []
    write(filled, "memories/port.md", NOTE.format(name="port", body="端口 7070"))
    assert store.refresh(paths=["memories/port.md"]).modified == ["memories/port.md"]
    assert [h.doc.id for h in search(IndexStore(filled.root), "7070", Filters(), 5)] == ["memories/port.md"]


# -- an index kept up to date ranks exactly as one built afresh ------------------------------

WORDS = ("cache redis timeout retry kafka queue deploy rollback index schema nginx grpc webpack react "
         "postgres migration deadlock worker token session 缓存 端口 超时 重试 部署 回滚 日志 监控").split()
PAGE = ("---\nname: {role}\ncategory: 后端开发\ntype: agent-page\n---\n# {role} Agent 记忆\n\n## 工作记忆\n"
        "{lines}\n")


def _note_text(rng, i, words=None):
    size = rng.randint(2, 14) if rng.random() < 0.7 else rng.randint(30, 90)  # long ones: lengths get rounded
    words = words or [rng.choice(WORDS) for _ in range(size)]
    return NOTE.format(name=f"n{i} {rng.choice(WORDS)}", body=" ".join(words))


def _page_text(rng, role, n):
    lines = "\n".join(f"- 2026-0{1 + k % 9}-1{k % 10} | {' '.join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))}"
                      f" ^m-{role}{k:04d}" for k in range(n))
    return PAGE.format(role=role, lines=lines)


DRIFT_QUERIES = ["cache", "redis timeout", "kafka queue retry", "端口", "超时 重试", "deploy rollback nginx",
                 "postgres migration deadlock", "token session", "缓存 redis", "监控 日志 worker", "react webpack",
                 "schema index grpc", "部署 回滚", "identical twin words", "cache cache timeout"]


def _ranking(store):
    out = {}
    for q in DRIFT_QUERIES:
        for f in (Filters(), Filters(agent="ops")):
            out[(q, f.agent)] = [(h.doc.id, h.score) for h in search(store, q, f, limit=10)]
    return out


@pytest.mark.parametrize("ranking", ["rules", "learned"])
def test_an_index_kept_up_to_date_ranks_exactly_as_a_fresh_rebuild(vault, ranking):
    rng = random.Random(11)
    for i in range(300):
        write(vault, f"memories/n{i:03d}.md", _note_text(rng, i))
    for i in range(12):  # exact ties: the same words in several notes
        write(vault, f"memories/twin{i:02d}.md", NOTE.format(name="twin", body="identical twin words cache"))
    for role in ("ops", "dev"):
        write(vault, f"agents/{role}.md", _page_text(rng, role, 40))
    store = IndexStore(vault.root, ranking=ranking)
    store.rebuild()
    for step in range(6):  # edits, new and deleted files, one refresh after each round
        rels = sorted(p.relative_to(vault.root).as_posix() for p in (vault.root / "memories").glob("n*.md"))
        for rel in rng.sample(rels, 8):
            write(vault, rel, _note_text(rng, step))
        for rel in rng.sample(rels, 3):
            os.remove(vault.root / rel)
        for k in range(4):
            write(vault, f"memories/new{step}-{k}.md", _note_text(rng, k))
        write(vault, "agents/ops.md", _page_text(rng, "ops", 30 + step))
        write(vault, f"memories/twin{step:02d}.md", NOTE.format(name="twin", body="identical twin words cache"))
        if step % 2:
            store.refresh()
        else:  # as a watcher does: the paths it saw change
            changed = [p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*.md")]
            store.refresh(paths=changed + rels)
    kept = _ranking(store)
    store.close()
    fresh = IndexStore(vault.root, ranking=ranking)
    assert fresh.rebuild().rebuilt
    rebuilt = _ranking(fresh)
    fresh.close()
    for key, want in rebuilt.items():
        got = kept[key]
        assert [i for i, _s in got] == [i for i, _s in want], key
        assert all(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for (_i, a), (_j, b) in zip(got, want)), (key, got, want)
    if ranking == "rules":  # the learned ranker reads each candidate's place too: its scores rarely tie
        assert any(len({s for _i, s in v}) < len(v) for v in rebuilt.values())  # ties were there to break


# -- a killed rebuild's generation is removed by the next command ----------------------------

STALLED_REBUILD = r"""
import sys
from vaultmem.index import build
def stalled(root, rels, progress, *_whole):  # the new generation's folder exists by now
    print("building", flush=True)
    sys.stdin.readline()  # held here, the index lock taken, until the test kills it
    yield from ()
build.prepare_all = stalled
sys.argv = ["vaultmem", *sys.argv[1:]]
from vaultmem.__main__ import main
main()
"""


def _generations(base):
    return {p.name for p in base.glob("gen-*") if p.is_dir()}


def test_a_killed_rebuild_leaves_no_generation_behind(filled):
    filled.refresh_index()
    base = filled.root / INDEX_DIR
    live = (base / "CURRENT").read_text().strip()
    proc = subprocess.Popen([sys.executable, "-c", STALLED_REBUILD, "--vault", str(filled.root), "index", "--rebuild"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "building"
        building = _generations(base) - {live}
        assert len(building) == 1
        # while it builds (and holds the index lock) nobody removes its folder
        r = vaultmem_in_process("--vault", filled.root, "search", "PostgreSQL", "--json")
        assert r.returncode == 0 and '"memories/db.md"' in r.stdout, r.stderr
        assert building <= _generations(base)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    assert building <= _generations(base) and (base / "CURRENT").read_text().strip() == live
    r = vaultmem_in_process("--vault", filled.root, "search", "PostgreSQL", "--json")
    assert r.returncode == 0 and '"memories/db.md"' in r.stdout, r.stderr
    assert _generations(base) == {live}  # the orphan is gone, the live one stays
    IndexStore(filled.root).rebuild()
    assert len(_generations(base)) == 2  # a good rebuild still keeps the one before it


DIES_BEFORE_THE_JOURNAL = """
import os, sys
from pathlib import Path
from vaultmem.index import store
from vaultmem.index.store import IndexStore
def dies(*args, **kwargs):
    os._exit(9)  # killed after the engine committed, before the manifest recorded it
index = IndexStore(Path(sys.argv[1]))
index.manifests.append = dies
index.refresh()
"""


def test_a_file_indexed_by_a_process_killed_before_its_manifest_is_not_indexed_twice(filled):
    store = IndexStore(filled.root)
    store.refresh()
    store.close()
    write(filled, "memories/cache.md", NOTE.format(name="cache", body="Redis caches the session tokens"))
    r = subprocess.run([sys.executable, "-c", DIES_BEFORE_THE_JOURNAL, str(filled.root)], capture_output=True,
                       text=True, timeout=SAFETY_NET)
    assert r.returncode == 9, r.stderr
    store = IndexStore(filled.root)
    try:
        store.refresh()  # the file is new to the manifest again: indexed once more
        assert ids(store, "redis session") == ["memories/cache.md"]
    finally:
        store.close()


def test_a_script_without_a_main_guard_gets_its_answer_and_is_told_why_not_a_300_s_wait(tmp_path):
    """A script that opens a vault at its top level, whose first search rebuilds the index
    in worker processes: Python (spawn) runs the script again in each worker, which opened
    the vault there and waited for the index lock its own rebuild held (300 s). Now the
    worker is refused at once with the reason and the fix, and the rebuild goes on in the
    script's own process: the answer comes."""
    from vaultmem import Vault
    from vaultmem.index.build import PARALLEL_MIN_FILES

    v, _ = Vault.init(tmp_path / "v", lang="en", orchestrator="lee")
    for i in range(PARALLEL_MIN_FILES + 50):
        (v.root / "memories" / f"n{i}.md").write_text(
            f"---\nname: note {i}\ntype: fact\n---\nThe redis port of service {i} is set in its config.\n",
            encoding="utf-8")
    script = tmp_path / "unguarded.py"
    script.write_text("import sys\nfrom vaultmem import Vault\n\nv = Vault(sys.argv[1])\n"
                      "print('hits', len(list(v.search('redis port'))))\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(v.root)], capture_output=True, text=True,
                          timeout=SAFETY_NET, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "hits 10\n", done.stderr[-2000:]
    assert "a vault was opened while a worker process was starting" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
    assert "the index is built in this process, on one core: its worker processes could not start" in done.stderr
    assert "Traceback" not in done.stderr  # the worker says why in one line


def test_a_scripts_own_spawned_workers_may_open_a_vault_as_they_start(tmp_path):
    """Only the workers of vaultmem's own build are refused a vault while they start: a
    script's own pool, whose workers run its top level again (no main guard around the
    vault), still works."""
    from vaultmem import Vault

    v, _ = Vault.init(tmp_path / "v", lang="en", orchestrator="lee")
    script = tmp_path / "own_pool.py"
    script.write_text("import sys\nfrom concurrent.futures import ProcessPoolExecutor\nimport multiprocessing\n"
                      "from vaultmem import Vault\n\nv = Vault(sys.argv[1])\n\n\ndef root(_):\n"
                      "    return v.root.name\n\n\nif __name__ == '__main__':\n"
                      "    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn')) as pool:\n"
                      "        print(list(pool.map(root, [0])))\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(v.root)], capture_output=True, text=True,
                          timeout=SAFETY_NET, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "['v']\n", done.stderr[-2000:]
