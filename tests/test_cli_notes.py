"""vaultmem remember / forget: one file per fact, MEMORY.md's generated block."""

import unicodedata

import pytest
from conftest import git, out_json

from vaultmem import notes
from vaultmem.errors import NotFound, VaultmemError
from vaultmem.parse import parse_note


def vm(cli, vault, *args, agent=None):
    """As the human by default: an agent's remember/forget goes to the review inbox
    (tests/test_review.py)."""
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args)


def note(vault, slug):
    rel = f"memories/{slug}.md"
    return parse_note((vault.root / rel).read_text(encoding="utf-8"), rel)


def test_remember_writes_a_note_with_spec_frontmatter_and_an_index_line(cli, vault):
    r = vm(cli, vault, "remember", "后端端口固定8080", "--type", "fact", "--alias", "backend port", "--alias", "port",
           "--tag", "backend", "--key", "backend.port", "--importance", "0.8", "--source", "session-42", "--author", "lee",
           "--author-kind", "agent", "--json")
    assert r.exit_code == 0, r.output
    data = out_json(r)
    assert data["slug"] == "后端端口固定8080" and data["path"] == "memories/后端端口固定8080.md"
    n = note(vault, "后端端口固定8080")
    assert n.body == "后端端口固定8080"
    m = n.meta
    assert (m["name"], m["type"], m["scope"], m["importance"], m["key"]) == ("后端端口固定8080", "fact", "global", 0.8,
                                                                             "backend.port")
    assert (m["author"], m["author_kind"], m["source"], m["status"]) == ("lee", "agent", "session-42", "active")
    assert m["aliases"] == ["backend port", "port"] and m["tags"] == ["backend"]
    assert m["created"] == m["confirmed"] and m["created"].endswith("+00:00")
    raw = (vault.root / "memories" / "后端端口固定8080.md").read_text(encoding="utf-8")
    assert "&id" not in raw and "created: 20" in raw
    index = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert "- [[memories/后端端口固定8080|后端端口固定8080]] (fact)\n<!-- vaultmem:index:end -->" in index
    assert sorted(git(vault.root, "show", "--name-only", "--format=", "HEAD").split()) == [
        "MEMORY.md", "memories/后端端口固定8080.md"]
    assert git(vault.root, "log", "-1", "--format=%an").strip() != "lee"  # the human who ran it


def test_same_name_gets_a_new_slug_never_overwrites(cli, vault):
    a = out_json(vm(cli, vault, "remember", "Use pnpm", "--type", "preference", "--json"))
    b = out_json(vm(cli, vault, "remember", "use PNPM", "--type", "preference", "--json"))
    assert a["slug"] == "use-pnpm" and b["slug"] == "use-pnpm-2"
    assert note(vault, "use-pnpm").body == "Use pnpm"


def test_name_description_and_scope_options(cli, vault):
    r = vm(cli, vault, "remember", "Long text about the database choice and why.", "--type", "decision",
           "--name", "DB choice", "--description", "Postgres over MySQL", "--agent", "后端架构", "--json")
    n = note(vault, out_json(r)["slug"])
    assert n.slug == "db-choice"
    assert (n.meta["scope"], n.meta["agent"], n.meta["description"]) == ("agent", "后端架构", "Postgres over MySQL")
    assert "[[memories/db-choice|DB choice]] (decision, @后端架构) — Postgres over MySQL" in (vault.root / "MEMORY.md").read_text()


def test_human_remembering_is_user_stated(cli, vault):
    r = vm(cli, vault, "remember", "I like tabs", "--type", "preference", "--json", agent=None)
    n = note(vault, out_json(r)["slug"])
    assert n.meta["author_kind"] == "user" and n.meta["confidence"] == 1.0


@pytest.mark.parametrize(
    "args, words",
    [
        (["", "--type", "fact"], "empty"),
        (["x", "--type", "gossip"], "not a memory type"),
        (["x", "--type", "fact", "--importance", "1.5"], "between 0 and 1"),
        (["x", "--type", "fact", "--author-kind", "god"], "author-kind"),
        (["x", "--type", "fact", "--scope", "agent"], "--agent"),
        (["x", "--type", "fact", "--scope", "world"], "--scope"),
        (["x", "--type", "fact", "--key", "bad key!"], "--key"),
        (["x", "--type", "fact", "--tag", "two words"], "--tag"),
        (["x", "--type", "fact", "--agent", "../x"], "refused"),
    ],
)
def test_bad_remember_input_is_refused_and_nothing_is_written(cli, vault, args, words):
    before = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    r = vm(cli, vault, "remember", *args)
    assert r.exit_code == 2, r.output
    assert words in r.stderr
    assert sorted(p.name for p in (vault.root / "memories").iterdir()) == [".gitkeep"]
    assert (vault.root / "MEMORY.md").read_text(encoding="utf-8") == before


def test_agents_memory_writes_are_proposed_not_refused_or_written(cli, vault):
    for args in (["--agent", "前端审查"], []):
        r = vm(cli, vault, "remember", "x", "--type", "fact", *args, "--json", agent="ella")
        assert r.exit_code == 0 and out_json(r)["action"] == "propose"
    assert not list((vault.root / "memories").glob("*.md"))
    assert len(list((vault.root / "inbox").glob("i-*.md"))) == 2


def test_forget_archives_the_note_and_removes_only_its_line(cli, vault):
    index = vault.root / "MEMORY.md"
    vm(cli, vault, "remember", "keep me", "--type", "fact")
    vm(cli, vault, "remember", "drop me", "--type", "fact")
    text = index.read_text(encoding="utf-8")
    text = "My own line above.\n" + text + "\nMy own line below — [[memories/drop-me]] mentioned by hand.\n"
    index.write_text(text, encoding="utf-8")
    git(vault.root, "commit", "-qam", "human notes")
    r = vm(cli, vault, "forget", "drop-me", "--reason", "wrong", "--json")
    assert r.exit_code == 0, r.output
    assert out_json(r)["archived_to"] == "archive/memories/drop-me.md"
    assert not (vault.root / "memories" / "drop-me.md").exists()
    archived = parse_note((vault.root / "archive/memories/drop-me.md").read_text(), "archive/memories/drop-me.md")
    assert archived.meta["status"] == "archived" and archived.meta["archive_reason"] == "wrong"
    assert archived.body == "drop me"
    new = index.read_text(encoding="utf-8")
    assert new == text.replace("- [[memories/drop-me|drop me]] (fact)\n", "")
    status = git(vault.root, "show", "--name-status", "-M", "--format=", "HEAD")
    assert "archive/memories/drop-me.md" in status and "memories/drop-me.md" in status
    assert git(vault.root, "status", "--porcelain") == ""


def test_forget_unknown_or_unsafe_slug(cli, vault):
    vm(cli, vault, "remember", "backend port", "--type", "fact")
    r = vm(cli, vault, "forget", "backend-prt")
    assert r.exit_code == 1 and "did you mean backend-port" in r.stderr
    r = vm(cli, vault, "forget", "../MEMORY")
    assert r.exit_code == 2
    r = vm(cli, vault, "forget", "memories/backend-port.md")
    assert r.exit_code == 0


def test_forgetting_twice_keeps_both_archived_copies(cli, vault):
    vm(cli, vault, "remember", "same", "--type", "fact")
    vm(cli, vault, "forget", "same")
    vm(cli, vault, "remember", "same", "--type", "fact")
    r = out_json(vm(cli, vault, "forget", "same", "--json"))
    assert r["archived_to"] == "archive/memories/same-2.md"
    assert (vault.root / "archive/memories/same.md").exists()


def test_memory_index_without_markers_gets_a_block_and_broken_markers_are_reported(cli, vault):
    index = vault.root / "MEMORY.md"
    index.write_text("# Mine\n\nno markers here\n", encoding="utf-8")
    vm(cli, vault, "remember", "a fact", "--type", "fact")
    text = index.read_text(encoding="utf-8")
    assert text.startswith("# Mine\n\nno markers here\n\n<!-- vaultmem:index:begin")
    assert "[[memories/a-fact|a fact]]" in text
    index.write_text(text.replace("<!-- vaultmem:index:end -->\n", ""), encoding="utf-8")
    r = vm(cli, vault, "remember", "another", "--type", "fact")
    assert r.exit_code == 1 and "MEMORY.md:5:" in r.stderr and "never closed" in r.stderr
    assert not (vault.root / "memories" / "another.md").exists()


def test_python_api_reads_a_note(vault):
    vault.notes.remember("Use pnpm, not npm", vault.actor(None), "preference", name="pnpm", aliases=["包管理器"])
    n = vault.notes.read("pnpm")
    assert n.body == "Use pnpm, not npm" and n.meta["aliases"] == ["包管理器"] and n.meta["author_kind"] == "user"


def test_a_note_is_read_by_its_exact_name_only(vault):
    """A note is found by its file (a few stats, not a listing of memories/): its exact
    slug, Chinese or not, with or without memories/ and .md; another spelling, a link to
    nothing or a file that is no note is not found, and the miss names the closest slugs
    (the same name in another case first). A folder named like a note, or a link that
    leads back to itself, is named for what it is."""
    actor = vault.actor(None)
    vault.notes.remember("端口是 8080", actor, "fact", name="后端端口")
    vault.notes.remember("Use pnpm", actor, "preference", name="pnpm")
    assert vault.notes.read("后端端口").body == "端口是 8080"
    assert vault.notes.read("memories/pnpm.md").body == "Use pnpm"
    memories = vault.root / "memories"
    (memories / "folder.md").mkdir()
    (memories / "notes.txt").write_text("not a note\n", encoding="utf-8")
    (memories / "gone.md").symlink_to(memories / "nowhere.md")
    (memories / "through.md").symlink_to(memories / "notes.txt" / "x.md")  # a file taken for a folder
    (memories / "loop.md").symlink_to(memories / "loop.md")
    for wrong, hint in [("PNPM", "did you mean pnpm"), ("后端端", "did you mean 后端端口"),
                        ("notes.txt", "list notes"), ("gone", "list notes"), ("through", "list notes")]:
        with pytest.raises(NotFound) as caught:
            vault.notes.read(wrong)
        assert hint in caught.value.hint, wrong
    for odd, said in [("folder", "is a folder"), ("loop", "leads back to itself")]:
        with pytest.raises(VaultmemError) as caught:
            vault.notes.read(odd)
        assert said in str(caught.value), odd


def test_another_spelling_of_the_same_file_is_decided_by_the_listing(tmp_path):
    """Where a stat finds a note under another spelling (a file system that folds case —
    here a link, the same file under a second name), the listing decides: the name asked
    for is held only when the folder has an entry of that very spelling."""
    (tmp_path / "pnpm.md").write_text("x\n", encoding="utf-8")
    assert notes.holds_exactly(tmp_path, "pnpm.md") and notes.holds_exactly(tmp_path, "./pnpm.md")
    assert not notes.holds_exactly(tmp_path, "PNPM.MD")
    (tmp_path / "PNPM.MD").symlink_to(tmp_path / "pnpm.md")  # what a stat sees where case folds
    assert notes.holds_exactly(tmp_path, "pnpm.md") and notes.holds_exactly(tmp_path, "PNPM.MD")
    assert not notes.holds_exactly(tmp_path, "./pnpm.md")  # found by a stat, yet no entry of that spelling
    (tmp_path / "Straße.md").write_text("x\n", encoding="utf-8")
    (tmp_path / "sTRAßE.MD").symlink_to(tmp_path / "Straße.md")  # ß has no one-letter upper case
    assert notes.holds_exactly(tmp_path, "Straße.md") and not notes.holds_exactly(tmp_path, "./Straße.md")
    # a file system that folds Unicode normalisation finds "café" under its decomposed spelling too
    cafe = unicodedata.normalize("NFC", "café.md")
    (tmp_path / cafe).write_text("x\n", encoding="utf-8")
    (tmp_path / unicodedata.normalize("NFD", cafe)).symlink_to(tmp_path / cafe)
    assert notes.holds_exactly(tmp_path, cafe) and not notes.holds_exactly(tmp_path, f"./{cafe}")


def test_the_notes_of_a_folder_are_its_md_files_by_stem_as_pathlib_names_them(tmp_path):
    """notes.slugs lists the folder once: every entry whose name ends in .md (a folder, a
    link to nothing, a hidden file included — a change may name any), by pathlib's stem
    (".md" alone is its own); a name that is not UTF-8 is none; a folder that is missing
    holds none."""
    import os

    memories = tmp_path / "memories"
    (memories / "dir.md").mkdir(parents=True)
    for name in ("a.md", ".md", "..md", ".hidden.md", "a.b.md", "X.MD", "y.mdx", "中文.md"):
        (memories / name).write_text("x\n", encoding="utf-8")
    (memories / "gone.md").symlink_to(memories / "nowhere.md")
    with open(os.fsencode(memories) + b"/bad\xff.md", "w"):
        pass
    assert notes.slugs(tmp_path) == sorted(p.stem for p in memories.glob("*.md") if p.stem != "bad\udcff")
    assert notes.slugs(tmp_path) == [".", ".hidden", ".md", "a", "a.b", "dir", "gone", "中文"]
    assert notes.slugs(tmp_path / "missing") == []
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "memories").write_text("a file where the folder should be\n", encoding="utf-8")
    (tmp_path / "looped").mkdir()
    (tmp_path / "looped" / "memories").symlink_to(tmp_path / "looped" / "memories")
    assert notes.slugs(tmp_path / "plain") == [] == notes.slugs(tmp_path / "looped")

