"""What keeps a command's start cheap — the config cache, the index summary, the temp-file
sweep that lists only folders that changed, the lazily built CLI — never changes what a
command answers: every shortcut is checked against the case it could get wrong."""

import os
import subprocess
import sys
import time

import pytest
from conftest import SAFETY_NET, WALK_PROBE, out_json, run_vaultmem, until_ctime_moves

from vaultmem import Vault
from vaultmem import config as config_mod
from vaultmem.errors import ParseError
from vaultmem.files import LOCAL_DIR, TEMP_MARK, pack, unpack
from vaultmem.index.store import INDEX_DIR, LOCK_FILE, IndexStore

NOTE = "---\nname: {name}\ntype: fact\nscope: global\n---\n{body}\n"


def write(vault, rel, text):
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def summary_path(root):
    base = root / INDEX_DIR
    return base / (base / "CURRENT").read_text().strip() / "summary.bin"


def search_ids(root, query):
    r = run_vaultmem("--vault", root, "search", query, "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return [h["id"] for h in out_json(r)["hits"]]


# -- the config cache ----------------------------------------------------------------------


@pytest.fixture
def cache_now(monkeypatch):
    """Cache a config even if it changed a moment ago (a test cannot wait for the clock)."""
    monkeypatch.setattr(config_mod, "RACY_NS", 0)


def test_the_config_is_cached_and_an_edit_is_read_again(vault, cache_now):
    path = vault.root / ".vaultmem" / "config.yaml"
    cache = vault.root / LOCAL_DIR / config_mod.CONFIG_CACHE
    assert Vault.open(vault.root).config.orchestrator == "lee"
    assert cache.exists() and ".gitignore" in os.listdir(cache.parent)
    assert Vault.open(vault.root).config == vault.config  # from the cache: the same settings
    path.write_text(path.read_text().replace("orchestrator: lee", "orchestrator: maria"))
    assert Vault.open(vault.root).config.orchestrator == "maria"
    path.write_text(path.read_text().replace("lock_timeout: 10", "lock_timeout: ten"))
    with pytest.raises(ParseError) as err:  # a cached good config never hides a broken edit
        Vault.open(vault.root)
    assert err.value.path == ".vaultmem/config.yaml" and err.value.line and "git.lock_timeout" in err.value.message


def test_a_same_size_edit_with_its_mtime_restored_is_still_read(vault, cache_now):
    path = vault.root / ".vaultmem" / "config.yaml"
    Vault.open(vault.root)
    st = path.stat()
    text = path.read_text()
    assert "lang: zh" in text
    with open(path, "w", encoding="utf-8") as fh:  # in place: same inode, same size
        fh.write(text.replace("lang: zh", "lang: en"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    until_ctime_moves(path, st)
    assert path.stat().st_size == st.st_size and path.stat().st_ino == st.st_ino
    assert Vault.open(vault.root).config.lang == "en"  # the change time still moved


@pytest.mark.parametrize("garbage", ["empty", "garbage", "flipped", "foreign"])
def test_a_damaged_or_foreign_config_cache_is_ignored(vault, cache_now, garbage):
    Vault.open(vault.root)
    cache = vault.root / LOCAL_DIR / config_mod.CONFIG_CACHE
    good = cache.read_bytes()
    cache.write_bytes({"empty": b"", "garbage": b"\x00\x01garbage",
                       "flipped": good[:20] + bytes([good[20] ^ 0x40]) + good[21:],  # marshal never sees it
                       "foreign": pack((("old",), {"lang": "en"})) + b""}[garbage])
    assert Vault.open(vault.root).config.lang == "zh"


def test_quoted_values_in_the_config_are_cached_as_plain_text(vault, cache_now):
    path = vault.root / ".vaultmem" / "config.yaml"
    text = path.read_text().replace("orchestrator: lee", 'orchestrator: "lee"').replace("lang: zh", "lang: 'zh'")
    assert "trusted_agents: []" in text
    path.write_text(text.replace("trusted_agents: []", "trusted_agents: ['ann', \"bob\"]"))
    first = Vault.open(vault.root).config
    assert (vault.root / LOCAL_DIR / config_mod.CONFIG_CACHE).exists()
    again = Vault.open(vault.root).config  # from the cache
    assert again == first and again.orchestrator == "lee" and again.trusted_agents == ("ann", "bob")
    assert type(again.orchestrator) is str


def test_config_show_prints_the_file_as_written(cli, vault, cache_now):
    Vault.open(vault.root)
    shown = out_json(cli("--vault", vault.root, "config", "show", "--json"))
    assert shown["orchestrator"] == "lee" and shown["lang"] == "zh"



def test_settings_read_once_a_process_are_shared_read_only_and_an_error_is_never_kept(vault, cache_now):
    text = (vault.root / ".vaultmem" / "config.yaml").read_text(encoding="utf-8")
    first, again = config_mod.parse_config(text), config_mod.parse_config(text)
    assert again is first  # the same text is read once
    assert Vault.open(vault.root).config == first  # through the cache on disk too: the same settings
    assert Vault.open(vault.root).config.brief_shares == first.brief_shares
    with pytest.raises(TypeError):  # every reader shares it: none may change it for the others
        first.brief_shares["page"] = 0.9
    with pytest.raises(TypeError):
        Vault.open(vault.root).config.brief_shares["page"] = 0.9
    broken = text.replace("lock_timeout: 10", "lock_timeout: soon")
    assert broken != text
    for _ in range(2):  # refused each time it is read, never remembered as read
        with pytest.raises(ParseError) as err:
            config_mod.parse_config(broken)
        assert err.value.line and "git.lock_timeout" in err.value.message


def test_several_settings_set_in_one_reading_are_what_one_at_a_time_gives(vault):
    text = (vault.root / ".vaultmem" / "config.yaml").read_text(encoding="utf-8").replace("\n", "\r\n")
    changes = [("lang", "en"), ("brief.lead", 3), ("review.trusted_agents", ["ann"])]
    one_by_one = text
    for key, value in changes:
        one_by_one = config_mod.set_value(one_by_one, key, value)
    together = config_mod.set_values(text, changes)
    assert together == one_by_one and "\r\n" in together and "# The orchestrator agent" in together
    settings = config_mod.parse_config(together)
    assert (settings.lang, settings.brief_lead, settings.trusted_agents) == ("en", 3, ("ann",))
    with pytest.raises(config_mod.BadInput, match="brief.leed"):  # one bad name refuses them all
        config_mod.set_values(text, [("lang", "en"), ("brief.leed", 3)])

# -- the index summary ---------------------------------------------------------------------


@pytest.fixture
def indexed(vault):
    write(vault, "memories/port.md", NOTE.format(name="port", body="后端端口固定8080"))
    write(vault, "memories/db.md", NOTE.format(name="db", body="We chose PostgreSQL for billing"))
    vault.refresh_index()
    return vault


@pytest.mark.usefixtures("both_engines")
def test_an_edit_that_keeps_size_and_mtime_is_found_by_the_next_command(indexed):
    path = indexed.root / "memories" / "port.md"
    assert summary_path(indexed.root).exists()
    st, text = path.stat(), path.read_text(encoding="utf-8")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace("8080", "9090"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as `touch -r` or `rsync -t` leave it
    until_ctime_moves(path, st)
    assert search_ids(indexed.root, "9090") == ["memories/port.md"]
    assert search_ids(indexed.root, "8080") == []


@pytest.mark.usefixtures("both_engines")
def test_new_and_deleted_files_are_found_by_the_next_command(indexed):
    write(indexed, "memories/new.md", NOTE.format(name="new", body="Unleash feature flags"))
    (indexed.root / "memories" / "db.md").unlink()
    assert search_ids(indexed.root, "Unleash") == ["memories/new.md"]
    assert search_ids(indexed.root, "PostgreSQL") == []


@pytest.mark.usefixtures("both_engines")
@pytest.mark.parametrize("damage", ["garbage", "flipped", "empty", "other_manifest"])
def test_a_damaged_or_stale_summary_is_never_trusted(indexed, damage):
    summary = summary_path(indexed.root)
    if damage == "garbage":
        summary.write_bytes(b"\x00garbage" * 20)
    elif damage == "flipped":  # marshal is not safe on bad bytes: a checksum stops them first
        good = bytearray(summary.read_bytes())
        for at in range(8, len(good), 7):
            good[at] ^= 0x5A
        summary.write_bytes(bytes(good))
    elif damage == "empty":
        summary.write_bytes(b"")
    else:  # the manifest changed by hand after the summary was written
        manifest = summary.with_name("manifest.json")
        manifest.write_text(manifest.read_text() + " ")
    write(indexed, "memories/port.md", NOTE.format(name="port", body="后端端口改为7070"))
    assert search_ids(indexed.root, "7070") == ["memories/port.md"]
    assert unpack(summary_path(indexed.root).read_bytes())["count"] >= 2  # written afresh


TURN = "---\nname: t{n}\ntype: episode\nscope: global\nsession: s1\nturn: {n}\n---\n{body}\n"


def fresh_summary(store):
    """The summary as it would be made from the manifest on disk now, by a new process."""
    from vaultmem.index.manifest import Manifests, facts_of, stat_of
    from vaultmem.walk import stat_digest

    gen = (store.base / "CURRENT").read_text().strip()
    manifest = Manifests(store.base).load(gen)
    facts = facts_of(manifest)
    return {**facts, "digest": stat_digest({rel: stat_of(v) for rel, v in manifest["files"].items()})}


@pytest.mark.usefixtures("both_engines")
def test_a_refresh_of_some_files_carries_the_summary_over_exactly(indexed, monkeypatch):
    """A refresh of a few paths (a watcher's, or the files a command wrote) moves the
    summary by those files alone: it stays what a whole recount makes, so the next
    command's no-change check holds without re-reading the manifest."""
    store = IndexStore(indexed.root)
    broken = "---\nname: [unclosed\ntype: fact\n---\nbody\n"
    steps = [
        {"memories/new.md": NOTE.format(name="new", body="Unleash feature flags")},  # a new file
        {"memories/db.md": NOTE.format(name="db", body="We chose MariaDB for billing")},  # an edit
        {"memories/bad.md": broken},  # a parse problem comes
        {"memories/bad.md": NOTE.format(name="bad", body="fixed now")},  # and goes
        {"memories/t1.md": TURN.format(n=1, body="first turn"), "memories/t2.md": TURN.format(n=2, body="second")},
        {"memories/t1.md": TURN.format(n=1, body="first turn, edited")},  # its session's neighbours re-read
        {"memories/t2.md": "touch"},  # a turn's stat moves, its text does not
        {"memories/t1.md": TURN.format(n=1, body="first turn, again"), "memories/t2.md": "touch"},  # both at once
        {"memories/port.md": None, "memories/t2.md": None},  # deletions
        {"memories/端口.md": NOTE.format(name="端口", body="后端端口固定8080")},  # a Chinese name
    ]
    indexed.pages.ensure("新角色", indexed.actor("lee"))  # an owned page
    store.refresh()
    from vaultmem.index.manifest import Manifests

    loads, load = [], Manifests.load
    monkeypatch.setattr(Manifests, "load", lambda self, gen: loads.append(gen) or load(self, gen))
    for n, step in enumerate(steps):
        for rel, text in step.items():
            if text is None:
                (indexed.root / rel).unlink()
            elif text == "touch":
                path = indexed.root / rel
                before = path.stat()
                os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
            else:
                write(indexed, rel, text)
        store.refresh(paths=list(step))
        carried = IndexStore(indexed.root).manifests  # read from disk, as the next command reads it
        gen = (store.base / "CURRENT").read_text().strip()
        summary = carried.summary(gen)
        assert summary is not None, f"step {n}: the summary went stale"
        got = {k: summary[k] for k in ("engine", "pinned", "count", "owners", "problems", "digest")}
        assert got == fresh_summary(store), f"step {n}"
        loads.clear()
        assert not IndexStore(indexed.root).refresh().changed
        assert loads == [], f"step {n}: the next command's check read the manifest"
    assert any(p for p in fresh_summary(store)["owners"].values())


def test_a_full_update_reads_again_only_the_files_that_changed_and_their_sessions(indexed, monkeypatch):
    """A note of a conversation holds its neighbours' text: when one changes, the others of
    its session are read again; an unchanged session is not, whatever else changed."""
    from vaultmem.index import store as store_mod

    for n in (1, 2, 3):
        write(indexed, f"memories/t{n}.md", TURN.format(n=n, body=f"turn {n} of the tea talk"))
    store = IndexStore(indexed.root)
    store.refresh()
    read, parse = [], store_mod.parse_file
    monkeypatch.setattr(store_mod, "parse_file", lambda rel, data: read.append(rel) or parse(rel, data))
    write(indexed, "memories/db.md", NOTE.format(name="db", body="We chose MariaDB for billing"))
    assert store.refresh().modified == ["memories/db.md"] and read == ["memories/db.md"]
    read.clear()
    write(indexed, "memories/t2.md", TURN.format(n=2, body="turn 2, edited"))
    assert store.refresh().modified == ["memories/t2.md"]
    assert sorted(read) == ["memories/t1.md", "memories/t2.md", "memories/t3.md"]


@pytest.mark.usefixtures("both_engines")
def test_an_update_that_waited_for_the_lock_walks_again(indexed, monkeypatch):
    """A no-change check walks without the lock; when it finds a change and then waits
    for another process indexing, the update walks again: a file that process indexed
    meanwhile stays in the index."""
    from filelock import FileLock

    store = IndexStore(indexed.root)
    write(indexed, "memories/db.md", NOTE.format(name="db", body="We chose MariaDB for billing"))
    real_acquire = FileLock.acquire

    def acquire(self, *a, **k):  # while this one waits: another process adds and indexes a note
        monkeypatch.setattr(FileLock, "acquire", real_acquire)
        write(indexed, "memories/new.md", NOTE.format(name="new", body="Unleash feature flags"))
        assert IndexStore(indexed.root).refresh(paths=["memories/new.md"]).new == ["memories/new.md"]
        return real_acquire(self, *a, **k)

    monkeypatch.setattr(FileLock, "acquire", acquire)
    report = store.refresh()
    assert "memories/db.md" in report.modified and "memories/new.md" not in report.deleted
    assert search_ids(indexed.root, "Unleash") == ["memories/new.md"]


HOLD = r"""
import sys, threading
from filelock import FileLock
lock = FileLock(sys.argv[1]); lock.acquire()
print("held", flush=True)
threading.Event().wait()  # until killed
"""


@pytest.mark.usefixtures("both_engines")
def test_a_refresh_that_finds_nothing_needs_no_lock(indexed):
    store = IndexStore(indexed.root)
    write(indexed, "memories/db.md", NOTE.format(name="db", body="We chose MariaDB for billing"))
    assert store.refresh(paths=["memories/db.md"]).modified == ["memories/db.md"]  # as a watcher does
    assert store.save_summary() is False  # carried over by the refresh of that path: current already
    summary_path(indexed.root).unlink()
    store = IndexStore(indexed.root)
    assert store.save_summary() is True and store.save_summary() is False  # missing once, then current
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(indexed.root / LOCK_FILE)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        quick = IndexStore(indexed.root).refresh(wait=0)
        assert quick.skipped is None and not quick.changed and quick.unchanged >= 2
        write(indexed, "memories/port.md", NOTE.format(name="port", body="后端端口改为6060"))
        busy = IndexStore(indexed.root).refresh(wait=0)  # a change needs the lock: skipped, not wrong
        assert busy.skipped and not busy.changed
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert IndexStore(indexed.root).refresh().modified == ["memories/port.md"]


# -- the temp-file sweep -------------------------------------------------------------------


def test_a_folder_found_clean_is_listed_again_once_a_temp_file_appears(vault):
    past = time.time() - 3600
    for folder in [vault.root, *(p for p in vault.root.iterdir() if p.is_dir() and p.name != ".git")]:
        os.utime(folder, (past, past))
    (vault.root / ".vaultmem").mkdir(exist_ok=True)
    assert vault.tidy() == 0
    stamps = vault.root / LOCAL_DIR / "tidy.bin"
    assert stamps.exists()
    assert vault.tidy() == 0  # nothing moved: nothing listed, nothing found
    orphan = vault.root / "memories" / f".x.md{TEMP_MARK}dead0001"
    orphan.write_text("torn")  # a killed writer's temp file: the folder's mtime moves
    assert Vault.open(vault.root) and not orphan.exists()


def test_a_journal_left_alone_is_settled_though_no_folder_moved(vault):
    # a writer killed as it began: its torn journal, and no file of the vault touched
    assert vault.tidy() == 0 and vault.tidy() == 0  # the folders' stamps recorded: nothing moved since
    journal = vault.root / LOCAL_DIR / "txn.json"
    journal.write_text('{"paths": {"memor')
    opened = Vault.open(vault.root)
    assert not journal.exists() and opened.search("anything") is not None


def test_a_folder_that_cannot_be_listed_does_not_stop_a_command(vault, monkeypatch):
    # the tidy-up cannot look in it, so it finds nothing of its own there: the vault opens
    real = os.listdir

    def listdir(path="."):
        if str(path).endswith("memories"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    orphan = vault.root / "agents" / f".r.md{TEMP_MARK}dead0003"
    orphan.write_text("torn")
    assert vault.tidy() == 1 and not orphan.exists()  # the folders it can list are still swept
    assert Vault.open(vault.root).search("anything") is not None


def test_a_damaged_stamp_file_only_costs_a_listing(vault):
    (vault.root / LOCAL_DIR).mkdir(parents=True, exist_ok=True)
    (vault.root / LOCAL_DIR / "tidy.bin").write_bytes(b"\xffnot marshal")
    orphan = vault.root / "agents" / f".r.md{TEMP_MARK}dead0002"
    orphan.write_text("torn")
    assert vault.tidy() == 1 and not orphan.exists()


# -- the command line ----------------------------------------------------------------------

ONLY_ITS_MODULE = r"""
import sys
from vaultmem.adapters.cli import app
try:
    app(["brief", "--help"])
except SystemExit:
    pass
print(sorted(m for m in sys.modules if m.startswith("vaultmem.adapters.cli.")))
"""


def test_a_command_builds_only_its_own_module():
    r = subprocess.run([sys.executable, "-c", ONLY_ITS_MODULE], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    loaded = r.stdout.strip().splitlines()[-1]
    assert "vaultmem.adapters.cli.recall" in loaded
    for other in ("coord", "lifecycle", "review", "notes", "page", "setup"):
        assert f"vaultmem.adapters.cli.{other}'" not in loaded, loaded


WHOOSH_STANDINS = r"""
import inspect, sys
from vaultmem.index.whoosh_engine import schema
schema()
print(sorted(m for m in ("asyncio", "urllib.request", "ssl", "http.client", "whoosh.lang.morph_en")
             if m in sys.modules))
import cached_property, whoosh.compat, whoosh.query.terms
from whoosh.reading import SegmentReader
later = cached_property.asyncio
print(later.iscoroutinefunction(SegmentReader.postings), "asyncio" in sys.modules)
import asyncio, urllib.request  # the real modules, for anyone who asks after Whoosh
async def coroutine(): pass
print(asyncio is not later, hasattr(urllib.request, "urlopen"), later.iscoroutinefunction(coroutine),
      later.get_event_loop_policy is asyncio.get_event_loop_policy, callable(whoosh.compat.urlretrieve))
from whoosh.lang.morph_en import variations  # the real one, and Whoosh's stand-in calls it
print(variations is not whoosh.query.terms.variations, whoosh.query.terms.variations("running") == variations("running"),
      "runs" in variations("running"))
"""


def test_a_whoosh_search_imports_neither_the_network_nor_asyncio_and_leaves_them_real(vault):
    (vault.root / "memories" / "ibis.md").write_text(NOTE.format(name="ibis", body="The ibis project uses kafka"))
    r = run_vaultmem("--vault", vault.root, "--json", "search", "ibis kafka", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert r.returncode == 0, r.stderr
    assert out_json(r)["hits"][0]["id"] == "memories/ibis.md"
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "whoosh.reading" in imported  # the small vault is Whoosh's
    assert not imported & {"asyncio", "asyncio.base_events", "urllib.request", "http.client", "ssl",
                           "whoosh.lang.morph_en"}
    r = subprocess.run([sys.executable, "-c", WHOOSH_STANDINS], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[]", "False False", "True True True True True", "True True True"]
    # with another thread alive, whose own import of one meanwhile would get a stand-in: none
    threaded = "import threading; threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
    r = subprocess.run([sys.executable, "-c", threaded + WHOOSH_STANDINS], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "'urllib.request'" in lines[0] and lines[1] == "False True", r.stdout  # the real ones, imported


def test_a_mistyped_command_is_named_with_a_suggestion(cli):
    r = cli("bref")
    assert r.exit_code == 2 and "No such command 'bref'" in r.output and "'brief'" in r.output


def test_help_lists_every_command_group(cli):
    out = cli("--help").output
    for name in ("init", "config", "page", "brief", "log", "review", "checkpoint"):
        assert f" {name} " in out


# -- the walk started ahead, and the launcher -------------------------------------------------
# Each fork happens in a new interpreter (a snippet run with python -c), as the launcher's
# does: never in the test process, which may hold an engine's native threads.

import json  # noqa: E402
import textwrap  # noqa: E402

from vaultmem import walk  # noqa: E402

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="the walk ahead needs fork")


def in_python(code: str, *args, timeout: float = SAFETY_NET) -> dict:
    """Run ``code`` in a new interpreter; it prints one JSON object as its last line."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv,expected", [
    (["brief", "r", "--task", "t"], ("brief", None)),
    (["--vault", "/v", "brief", "r"], ("brief", "/v")),
    (["--json", "--as", "lee", "search", "q"], ("search", None)),
    (["search", "q", "--vault=/w"], ("search", "/w")),  # global options may follow the command
    (["--vault", "/a", "search", "q", "--vault", "/b"], ("search", "/b")),  # the last one, as click takes it
    (["--as", "brief", "log", "tail"], ("log", None)),  # 'brief' is the value of --as here
    (["log", "append", "brief"], ("log", None)),
    (["--", "brief"], (None, None)),
    ([], (None, None)),
])
def test_the_launcher_reads_the_command_and_the_vault(argv, expected):
    assert walk.command_line(argv) == expected


SAME_WALK = """
import json, sys
from vaultmem import walk
ahead = walk.start_ahead(sys.argv[1:])
seen = walk.scan(ahead.root)
print(json.dumps({"root": ahead.root, "ahead": ahead.take(), "again": ahead.take(),
                  "here": [len(seen), walk.stat_digest(seen)]}))
"""


@needs_fork
def test_the_walk_ahead_gives_what_walking_in_the_process_gives(indexed):
    got = in_python(SAME_WALK, "--vault", indexed.root, "search", "x")
    assert got["root"] == str(indexed.root)
    markdown = [p for p in indexed.root.rglob("*.md") if not any(x.startswith(".") for x in p.relative_to(indexed.root).parts)]
    assert got["ahead"] == got["here"] and got["here"][0] == len(markdown)
    assert got["again"] is None  # taken once: a later check walks for itself


ROOT_OF = """
import json, os, sys
from vaultmem import walk
os.chdir(sys.argv[1])
ahead = walk.start_ahead(sys.argv[2:])
print(json.dumps({"root": ahead and ahead.root, "ahead": ahead is not None and ahead.take() is not None}))
"""


@needs_fork
def test_the_walk_ahead_is_keyed_by_the_root_the_vault_opens(vault, tmp_path, monkeypatch):
    (tmp_path / "link").symlink_to(vault.root, target_is_directory=True)
    want = str(Vault.open(tmp_path / "link").root)
    assert want == str(vault.root)
    for cwd, argv in [(tmp_path, ["--vault", "link", "brief", "r"]),  # relative, through a link
                      (tmp_path, ["--vault", f"{tmp_path / 'link'}/", "search", "q"]),  # trailing slash
                      (vault.root / "memories", ["brief", "r", "--task", "t"])]:  # found upward
        assert in_python(ROOT_OF, cwd, *argv) == {"root": want, "ahead": True}, argv
    monkeypatch.setenv("VAULTMEM_VAULT", str(tmp_path / "link"))
    assert in_python(ROOT_OF, tmp_path, "search", "q") == {"root": want, "ahead": True}


@needs_fork
def test_no_walk_ahead_for_other_commands_or_outside_a_vault(vault, tmp_path):
    for argv in (["--vault", vault.root, "log", "tail"], ["--vault", tmp_path / "nowhere", "brief", "r"],
                 ["brief", "r", "--task", "t"]):  # tmp_path is in no vault
        assert in_python(ROOT_OF, tmp_path, *argv) == {"root": None, "ahead": False}, argv


OTHER_WRITER = """
import json, subprocess, sys
from vaultmem import Vault, walk
root = sys.argv[1]
ahead = walk.start_ahead(["--vault", root, "dispatch", "x"])
other = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", root, "remember", "Kibana shows the billing errors",
                        "--type", "fact", "--name", "kibana"], capture_output=True, text=True)
v = Vault.open(root, ahead=ahead)
v.notes.remember("Grafana alerts page the on-call", v.actor(None), "fact", name="alerts")  # this command's write
print(json.dumps({"other": other.returncode, "vouched": v.index.vouched,
                  "hits": [h.doc.path for h in v.search("Kibana billing errors")]}))
"""


@needs_fork
def test_a_walk_ahead_never_vouches_across_another_writers_commit(indexed):
    # another writer committed (without indexing) after the walk began: the answer walks
    got = in_python(OTHER_WRITER, indexed.root)
    assert got["other"] == 0 and got["vouched"] is False and got["hits"][:1] == ["memories/kibana.md"]


FAKE_CHILD = """
import json, marshal, os, sys
from vaultmem import Vault, walk
root, status, rel, text, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
seen = walk.scan(root)
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # a child that answers with the digest from before the edit, then fails
    os.write(write, marshal.dumps((len(seen), walk.stat_digest(seen), walk.commit_stamp(root))))
    os._exit(status)
os.close(write)
ahead = walk.WalkAhead(key, pid, read)
with open(os.path.join(root, rel), "w", encoding="utf-8") as fh:
    fh.write(text)
vault = Vault(root, ahead=ahead)
kept = vault.index.ahead is ahead  # handed to the index only for the root it walked
print(json.dumps({"modified": vault.refresh_index(wait=0).modified, "kept": kept, "read": not ahead.pending}))
"""


@needs_fork
@pytest.mark.usefixtures("both_engines")
def test_a_failed_walk_ahead_is_never_trusted(indexed):
    text = NOTE.format(name="db", body="We chose MariaDB for billing")
    root = str(indexed.root)
    assert in_python(FAKE_CHILD, root, 1, "memories/db.md", text, root) == {"modified": ["memories/db.md"],
                                                                             "kept": True, "read": True}


@needs_fork
@pytest.mark.usefixtures("both_engines")
def test_a_walk_ahead_of_another_root_is_not_used(indexed, tmp_path):
    text = NOTE.format(name="db", body="We chose MariaDB for billing")
    root = str(indexed.root)
    other = str(tmp_path / "elsewhere")
    got = in_python(FAKE_CHILD, root, 0, "memories/db.md", text, other)
    assert got == {"modified": ["memories/db.md"], "kept": False, "read": False}  # never handed on, never read


OWN_WRITE = """
import json, sys
from vaultmem import Vault, walk
from vaultmem.index import store
walks = []
real_scan = store.scan
store.scan = lambda *a, **k: walks.append(1) or real_scan(*a, **k)  # the walks this process makes
root, edit = sys.argv[1], sys.argv[2]
if edit:  # a human's edit the index has not seen, made before the command starts
    with open(root + "/memories/db.md", "w", encoding="utf-8") as fh:
        fh.write(edit)
ahead = walk.start_ahead(["--vault", root, "dispatch", "x"])
started = ahead.pending
v = Vault.open(root, ahead=ahead)
v.notes.remember("Grafana alerts page the on-call", v.actor(None), "fact", name="alerts")  # the command's write
read, vouched = not ahead.pending, v.index.vouched
hits = {"Grafana": [h.doc.path for h in v.search("Grafana")]}
first = len(walks)  # the walks the first answer after the write made
hits["MariaDB"] = [h.doc.path for h in v.search("MariaDB")]  # a later answer checks for itself
print(json.dumps({"started": started, "read": read, "vouched": vouched, "hits": hits, "walks": first,
                  "later": len(walks) - first}))
"""


@needs_fork
@pytest.mark.usefixtures("both_engines")
def test_a_walk_ahead_is_read_before_the_command_writes_and_vouches_only_for_a_current_index(indexed):
    # read before the first write: after it, the digest could no longer tell what is indexed
    got = in_python(OWN_WRITE, indexed.root, "")
    assert got["started"] and got["read"] and got["vouched"]
    assert got["hits"] == {"Grafana": ["memories/alerts.md"], "MariaDB": []}
    assert got["walks"] == 0  # the index matched the walk: only the files written are indexed, nothing walked
    assert got["later"] == 1  # a vouch holds for one answer
    # a file changed before the command: the walk does not match, and the answer walks and sees it
    edited = in_python(OWN_WRITE, indexed.root, NOTE.format(name="db", body="We chose MariaDB for billing"))
    assert edited["started"] and edited["read"] and not edited["vouched"]
    assert edited["hits"]["MariaDB"] == ["memories/db.md"] and edited["walks"] == 1


FORGET_SLOW = """
import json, os, sys, threading
from vaultmem import walk
walk.scan = lambda root, part=None: threading.Event().wait() or {}  # a walk that never ends (a hung mount)
ahead = walk.start_ahead(["--vault", sys.argv[1], "dispatch", "x"])
pid = ahead.pid
got = ahead.take(timeout=0.2)  # a write waits this long at most
try:
    os.kill(pid, 0)
    gone = False
except ProcessLookupError:
    gone = True  # killed and reaped
print(json.dumps({"got": got, "left": ahead.pending, "gone": gone}))
"""


@needs_fork
def test_a_walk_that_does_not_finish_in_time_is_stopped_not_waited_for(vault):
    assert in_python(FORGET_SLOW, vault.root) == {"got": None, "left": False, "gone": True}


GONE_CWD = """
import os, sys, tempfile
gone = tempfile.mkdtemp()
os.chdir(gone)
os.rmdir(gone)
sys.argv = ["vaultmem", *sys.argv[1:]]
from vaultmem.__main__ import main
main()
"""


@pytest.mark.parametrize("command", [["search", "x"], ["brief", "r", "--task", "t"], ["page", "list"]])
def test_a_deleted_working_folder_is_named_not_a_traceback(command):
    r = subprocess.run([sys.executable, "-c", GONE_CWD, *command], capture_output=True, text=True,
                       timeout=SAFETY_NET)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert "the current folder no longer exists" in r.stderr and "--vault" in r.stderr


SLOW_CHILD = """
import json, os, sys, threading, time
from vaultmem import walk
walk.scan = lambda root, part=None: threading.Event().wait() or {}  # a walk that never ends
ahead = walk.start_ahead(["--vault", sys.argv[1], "brief", "r"])
pid = ahead.pid
deadline = time.monotonic() + 100  # a safety net: in_python gives up at 120 s
links = None
while time.monotonic() < deadline:  # the child swaps its standard streams first thing
    links = sorted({os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)})
    if links == [os.devnull]:
        break
    time.sleep(0.01)
os.kill(pid, 9)
print(json.dumps({"links": links, "after_kill": ahead.take()}))
"""


@needs_fork
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")
def test_the_walk_ahead_does_not_hold_the_callers_output_and_a_killed_one_is_not_used(indexed):
    # whoever waits for the command's output (a pipe's end) must not wait for the child's walk
    assert in_python(SLOW_CHILD, indexed.root) == {"links": [os.devnull], "after_kill": None}


@needs_fork
@pytest.mark.usefixtures("both_engines")
def test_a_cli_search_uses_the_walk_ahead_and_sees_an_edit_made_before_it(indexed):
    write(indexed, "memories/db.md", NOTE.format(name="db", body="We chose MariaDB for billing"))
    r = subprocess.run([sys.executable, "-c", WALK_PROBE, "--vault", str(indexed.root), "search", "MariaDB", "--json"],
                       capture_output=True, text=True, timeout=SAFETY_NET)
    assert r.returncode == 0, r.stderr
    assert "ahead: True" in r.stderr
    assert [h["id"] for h in out_json(r)["hits"]] == ["memories/db.md"]


def test_the_launcher_loads_nothing_before_its_walk():
    code = ("import sys; before = set(sys.modules); import vaultmem.__main__, vaultmem.walk; "
            "print(sorted(set(sys.modules) - before))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SAFETY_NET)
    assert r.returncode == 0, r.stderr
    loaded = set(eval(r.stdout.strip()))  # noqa: S307 - our own output: a list of names
    assert {m for m in loaded if m.startswith("vaultmem")} == {"vaultmem", "vaultmem.__main__", "vaultmem.walk",
                                                             "vaultmem.layout"}
    assert not loaded & {"typing", "pathlib", "dataclasses", "typer", "click"}, loaded


COLD_SEARCH_MODULES = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
sys.argv = ["vaultmem", *sys.argv[1:]]
from vaultmem.__main__ import main
main()
"""


def test_a_search_on_a_fresh_index_loads_no_parser_no_writer_and_no_openssl(both_engines, indexed):
    # what a cold search costs is mostly what it imports: the page, note and journal
    # parsers, the domain modules that write (notes, pages, a new vault's template) and
    # hashlib (OpenSSL: ~2 ms, for one digest of the question) are for other commands; and
    # so are the value types only reads and writes of pages and notes make (models.records:
    # ~6 ms of dataclasses)
    r = subprocess.run([sys.executable, "-c", COLD_SEARCH_MODULES, "--vault", str(indexed.root), "search", "PostgreSQL",
                        "--json"], capture_output=True, text=True, timeout=SAFETY_NET)
    assert r.returncode == 0, r.stderr
    assert [h["id"] for h in out_json(r)["hits"]] == ["memories/db.md"]
    loaded = set(json.loads(r.stderr.strip().splitlines()[-1]))
    assert "vaultmem.retrieve" in loaded  # (the probe saw the search)
    unwanted = {"vaultmem.parse.page", "vaultmem.parse.note", "vaultmem.parse.journal", "vaultmem.parse.records",
                "vaultmem.notes", "vaultmem.pages", "vaultmem.template", "vaultmem.forgetting",
                "vaultmem.transaction", "vaultmem.models.records"}  # (no writer: nothing a killed one left to settle)
    if both_engines == "tantivy":  # (Whoosh's own compat module imports urllib.request, and with it hashlib)
        unwanted |= {"hashlib", "_hashlib"}
    assert loaded & unwanted == set()
    # and the question's fingerprint was still recorded
    usage = (indexed.root / ".vaultmem" / "local" / "usage.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(usage[-1])["q"]


# -- MEMORY.md: the shortcut that skips parsing the whole file -----------------------------

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vaultmem.errors import ParseError as _ParseError  # noqa: E402
from vaultmem.parse import note as note_mod  # noqa: E402
from vaultmem.parse.document import parse_document  # noqa: E402

PIECES = [
    "# Memory", "", "  ", "free text a human wrote", note_mod.INDEX_BEGIN_LINE, note_mod.INDEX_END_LINE,
    "  " + note_mod.INDEX_BEGIN_LINE, "x " + note_mod.INDEX_END_LINE, "<!-- vaultmem:index:other -->",
    "- [[memories/a|a]] (fact) — one", "- [[memories/b|b]] (fact, @前端审查) — scoped",
    "- [[memories/c|c]] (decision, @other) — theirs", "```", "~~~", "    ```python", "---", "name: x",
]


B, E = note_mod.INDEX_BEGIN_LINE, note_mod.INDEX_END_LINE


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.booleans())
@example(["# M", B, "- [[memories/a|a]] (fact) — one", E], False)
@example(["# M", B, "- [[memories/a|a]] (fact) — one", "x " + E], False)  # not a marker: never closed
@example(["# M", "x " + B, "- [[memories/a|a]] (fact) — one", E], True)
@example(["```", B, "```", B, "- a", E], False)  # the first one is an example in a code block
@example(["---", "name: x", "---", B, "- a", E], False)
@example([E, B, "- a"], False)
@example([B, E], True)
def test_the_memory_md_shortcut_gives_what_parsing_the_document_gives(lines, crlf):
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    fast = note_mod._plain_block(text)
    try:
        doc = parse_document(text, "MEMORY.md", require_frontmatter=False, fast=True)
        span = note_mod._block(doc)
    except _ParseError:
        assert fast is None  # only the full parse names the problem
        return
    if fast is None:
        return  # the caller parses the document: nothing to compare
    assert span is not None
    want = [x.strip() for x in doc.lines[span[0] + 1 : span[1]] if x.strip()]
    assert [x.strip() for x in fast if x.strip()] == want


def test_the_digest_is_the_sum_of_its_files_terms_whatever_their_names():
    """The walk's digest and the summary's, moved file by file, agree for every name: a
    name that is not UTF-8 (lone surrogates) is taken by its own bytes, not refused."""
    from vaultmem.walk import DIGEST_MASK, stat_digest, stat_term

    odd = b"memories/caf\xe9.md".decode("utf-8", "surrogateescape")
    windows = "memories/x\ud800.md"  # an unpaired UTF-16 surrogate, as a Windows name may hold
    for names in (["a.md", "memories/后端.md"], ["a.md", odd, "memories/后端.md", windows]):
        stats = {rel: (i, 10 * i, i + 1, 100 + i) for i, rel in enumerate(names)}
        assert stat_digest(stats) == sum(stat_term(rel, st) for rel, st in stats.items()) & DIGEST_MASK
    assert stat_digest({odd: (1, 2, 3, 4)}) != stat_digest({"memories/caf\\xe9.md": (1, 2, 3, 4)})
    from vaultmem.layout import path_text

    assert path_text(odd) == "memories/caf\\xe9.md" and path_text(windows) == "memories/x\\xed\\xa0\\x80.md"
