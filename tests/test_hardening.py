"""Regression tests for ways a real user broke the vault foundation in review."""

import os
import stat
import sys
import unicodedata

import pytest
from conftest import git, out_json, run_vaultmem

from vaultmem.files import TEMP_MARK


def vm(cli, vault, *args, agent="lee"):
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args)


def page_text(vault, role):
    return (vault.root / "agents" / f"{role}.md").read_text(encoding="utf-8")


def test_an_agent_cannot_change_settings_or_make_itself_orchestrator(cli, vault):
    config = (vault.root / ".vaultmem" / "config.yaml").read_text()
    r = vm(cli, vault, "config", "set", "orchestrator", "bob", agent="bob")
    assert r.exit_code == 3 and "may not change the vault's settings" in r.stderr
    assert (vault.root / ".vaultmem" / "config.yaml").read_text() == config
    assert vm(cli, vault, "page", "ensure", "r", agent="bob").exit_code == 3


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("git.lock_timeout", ".nan", "must be a number"),
        ("git.lock_timeout", ".inf", "must be a number"),
        ("git.lock_timeout", "-1", "from 0 to 3600"),
        ("memory.default_importance", "5", "from 0 to 1"),
        ("orchestrator", "a/b", "path separator"),
        ("memory", "{}", "group of settings"),
        ("memory.types", "'[{a: 1}]'", "type names"),
        ("a..b", "1", "not a setting name"),
        ("lang", "fr", "zh or en"),
    ],
)
def test_config_values_that_would_break_later_commands_are_refused(cli, vault, key, value, words):
    path = vault.root / ".vaultmem" / "config.yaml"
    before = path.read_text()
    r = vm(cli, vault, "config", "set", "--", key, value, agent=None)
    assert r.exit_code in (1, 2), r.output
    assert words in r.stderr
    assert path.read_text() == before
    assert vm(cli, vault, "page", "ensure", "still-works").exit_code == 0


def test_a_broken_config_file_is_reported_with_its_line(cli, vault):
    path = vault.root / ".vaultmem" / "config.yaml"
    path.write_text(path.read_text().replace("lock_timeout: 10", "lock_timeout: ten"))
    r = vm(cli, vault, "page", "list")
    assert r.exit_code == 1 and "config.yaml:" in r.stderr and "git.lock_timeout" in r.stderr
    path.write_text("lang: [zh\n")
    r = vm(cli, vault, "page", "list")
    assert r.exit_code == 1 and "broken YAML in the config" in r.stderr and "frontmatter" not in r.stderr


def test_config_set_keeps_bom_and_crlf(cli, vault):
    path = vault.root / ".vaultmem" / "config.yaml"
    original = path.read_bytes()
    path.write_bytes(b"\xef\xbb\xbf" + original.replace(b"\n", b"\r\n"))
    assert vm(cli, vault, "config", "set", "git.lock_timeout", "7", agent=None).exit_code == 0
    new = path.read_bytes()
    assert new.startswith(b"\xef\xbb\xbf") and b"lock_timeout: 7\r\n" in new
    assert new.replace(b"lock_timeout: 7", b"lock_timeout: 10") == b"\xef\xbb\xbf" + original.replace(b"\n", b"\r\n")


def test_unclosed_code_fence_in_an_entry_does_not_swallow_the_page(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    r = vm(cli, vault, "page", "add", "r", "code:\n```\nx = 1", "--json")
    assert r.exit_code == 0, r.output
    assert vm(cli, vault, "page", "add", "r", "next lesson").exit_code == 0
    shown = out_json(vm(cli, vault, "page", "show", "r", "--json"))
    assert [e["text"] for e in shown["sections"]["work"]] == ["code:\n```\nx = 1", "next lesson"]


def test_multi_paragraph_entry_keeps_its_id_and_both_paragraphs(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    entry = out_json(vm(cli, vault, "page", "add", "r", "para1\n\npara2", "--json"))["entry"]
    shown = out_json(vm(cli, vault, "page", "show", "r", "--json"))
    assert shown["sections"]["work"] == [{**{k: entry[k] for k in ("section", "id", "date", "link")},
                                          "text": "para1\n\npara2", "line": entry["line"]}]


def test_longest_allowed_name_works_and_a_longer_one_is_refused_cleanly(cli, vault):
    assert vm(cli, vault, "page", "ensure", "中" * 78).exit_code == 0
    assert vm(cli, vault, "page", "add", "中" * 78, "x").exit_code == 0
    r = vm(cli, vault, "page", "ensure", "中" * 79)
    assert r.exit_code == 2 and "bytes long" in r.stderr


def test_a_page_stored_decomposed_is_found_and_not_duplicated(cli, vault):
    vm(cli, vault, "page", "ensure", "café")
    nfd = unicodedata.normalize("NFD", "café")
    os.rename(vault.root / "agents" / "café.md", vault.root / "agents" / f"{nfd}.md")
    assert vm(cli, vault, "page", "show", "café").exit_code == 0
    assert out_json(vm(cli, vault, "page", "ensure", "café", "--json"))["created"] is False
    assert vm(cli, vault, "page", "add", "café", "x").exit_code == 0
    assert [p.name for p in (vault.root / "agents").glob("*.md")] == [f"{nfd}.md"]
    assert [p["role"] for p in out_json(vm(cli, vault, "page", "list", "--json"))["pages"]] == ["café"]


def test_non_utf8_page_and_a_folder_in_place_of_a_file_are_errors_not_tracebacks(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    vm(cli, vault, "page", "ensure", "ok")
    with open(vault.root / "agents" / "r.md", "ab") as fh:
        fh.write(b"\n- bad byte \xff here\n")
    r = vm(cli, vault, "page", "show", "r")
    assert r.exit_code == 1 and "not UTF-8" in r.stderr and "agents/r.md:" in r.stderr
    rows = out_json(vm(cli, vault, "page", "list", "--json"))["pages"]
    assert [(p["role"], p["ok"]) for p in rows] == [("ok", True), ("r", False)]
    (vault.root / "MEMORY.md").unlink()
    (vault.root / "MEMORY.md").mkdir()
    r = vm(cli, vault, "remember", "x", "--type", "fact", agent=None)
    assert r.exit_code == 1 and "is a folder" in r.stderr


def test_frontmatter_holding_only_comments_keeps_them(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    path = vault.root / "agents" / "r.md"
    body = path.read_text().split("---\n", 2)[2]
    path.write_text("---\n# written by hand\n---\n" + body)
    assert vm(cli, vault, "page", "ensure", "r", "--project", "p").exit_code == 0
    assert path.read_text().startswith("---\n# written by hand\nprojects:\n- p\n---\n")


def test_adding_a_project_leaves_other_frontmatter_lines_alone(cli, vault):
    vm(cli, vault, "page", "ensure", "r", "--project", "p1")
    path = vault.root / "agents" / "r.md"
    text = path.read_text().replace("name: r", "name:   r").replace("- p1", "  - p1").replace(
        "tags: [agent-memory]", "tags: [agent-memory,   x]")
    path.write_text(text)
    assert vm(cli, vault, "page", "ensure", "r", "--project", "p2").exit_code == 0
    assert path.read_text() == text.replace("  - p1\n", "  - p1\n  - p2\n")


def test_a_single_project_written_as_text_is_one_project(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    path = vault.root / "agents" / "r.md"
    path.write_text(path.read_text().replace("projects: []", "projects: web"))
    rows = out_json(vm(cli, vault, "page", "list", "--json"))["pages"]
    assert rows[0]["projects"] == ["web"]
    vm(cli, vault, "page", "ensure", "r", "--project", "api")
    assert out_json(vm(cli, vault, "page", "show", "r", "--json"))["frontmatter"]["projects"] == ["web", "api"]


def test_an_uncommitted_draft_is_committed_under_nobodys_name_before_the_agents_change(cli, vault):
    vm(cli, vault, "page", "ensure", "r")
    page = vault.root / "agents" / "r.md"
    page.write_text(page.read_text(encoding="utf-8") + "HUMAN DRAFT\n", encoding="utf-8")
    assert vm(cli, vault, "page", "add", "r", "agent entry").exit_code == 0
    log = git(vault.root, "log", "-2", "--format=%an|%s").splitlines()
    assert log[0].startswith("lee|page: add working-memory entry")
    # vaultmem cannot tell who made the edit: it is not credited to the agent, nor to the human
    assert log[1] == ("unknown (edited outside vaultmem)|vaultmem: record uncommitted edits to agents/r.md "
                      "(made outside vaultmem, author unknown) before a change by lee")
    agent_diff = git(vault.root, "show", "--format=", "HEAD", "--", "agents/r.md")
    assert "+HUMAN DRAFT" not in agent_diff and "agent entry ^m-" in agent_diff
    assert "+HUMAN DRAFT" in git(vault.root, "show", "--format=", "HEAD~1")
    assert git(vault.root, "log", "-1", "--format=%an", "HEAD~1").strip() != "lee"


def test_temp_sweep_never_follows_a_folder_link_out_of_the_vault(cli, vault, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    keep = outside / f".keep{TEMP_MARK}deadbeef"
    keep.write_text("not ours")
    for child in (vault.root / "journal").iterdir():
        child.unlink()
    (vault.root / "journal").rmdir()
    (vault.root / "journal").symlink_to(outside)
    assert vm(cli, vault, "page", "list").exit_code == 0
    assert vm(cli, vault, "page", "ensure", "r").exit_code == 0
    assert keep.exists()


def test_a_page_that_is_a_symlink_inside_the_vault_is_not_replaced(cli, vault):
    vm(cli, vault, "page", "ensure", "real")
    target = vault.root / "shared" / "real.md"
    os.replace(vault.root / "agents" / "real.md", target)
    (vault.root / "agents" / "real.md").symlink_to(target)
    r = vm(cli, vault, "page", "add", "real", "x")
    assert r.exit_code == 3 and "symbolic link" in r.stderr
    assert (vault.root / "agents" / "real.md").is_symlink()


def test_index_markers_inside_a_code_block_are_examples_and_descriptions_cannot_hide_text(cli, vault):
    index = vault.root / "MEMORY.md"
    example = "```\n<!-- vaultmem:index:begin -->\n<!-- vaultmem:index:end -->\n```\n"
    index.write_text(example + index.read_text(encoding="utf-8"), encoding="utf-8")
    vm(cli, vault, "remember", "fact one", "--type", "fact", "--description", "sneaky <!-- hide", agent=None)
    text = index.read_text(encoding="utf-8")
    assert text.startswith(example)
    (line,) = [x for x in text.splitlines() if "fact-one" in x]
    assert "<!--" not in line and "sneaky" in line


def test_missing_git_repository_gets_a_hint_that_works(cli, vault):
    import shutil

    shutil.rmtree(vault.root / ".git")
    r = vm(cli, vault, "page", "ensure", "r")
    assert r.exit_code == 1 and "not a git repository" in r.stderr and "git init" in r.stderr
    assert not (vault.root / "agents" / "r.md").exists()


# A live process holding git's index lock open (so it is never taken for a killed git's),
# until the lock file is removed.
LOCK_HOLDER = ("import os, sys, time\nfd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)\n"
               "while os.path.exists(sys.argv[1]):\n    time.sleep(0.02)\n")
GIT_WRAPPER = """#!/bin/sh
# Takes git's index lock right before the first commit, as another git process would,
# and lets go of it at the second attempt to unstage (the first one fails on the lock).
case " $* " in
  *" commit "*)
    if [ ! -e "$MARK" ]; then
      : > "$MARK"; : > "$LOCK"
      "$PYTHON" -c "$HOLDER" "$LOCK" </dev/null >/dev/null 2>&1 &
    fi ;;
  *" reset "*|*" rm "*)
    if [ -e "$MARK.unstage" ]; then rm -f "$LOCK"; else : > "$MARK.unstage"; fi ;;
esac
exec git "$@"
"""


def test_lock_taken_between_staging_and_commit_leaves_nothing_staged(vault, tmp_path):
    # The lock goes when the command tries to unstage a second time, not after a fixed
    # delay. The timeout is both how long the commit waits (it must give up: the lock
    # stays) and how long unstaging may retry: a busy machine's git gets 2 s for one retry.
    vault.set_config("git.lock_timeout", 2, vault.actor(None))
    wrapper = tmp_path / "git-wrapper"
    wrapper.write_text(GIT_WRAPPER)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    env = {"GIT_PYTHON_GIT_EXECUTABLE": str(wrapper), "MARK": str(tmp_path / "mark"),
           "LOCK": str(vault.root / ".git" / "index.lock"), "PYTHON": sys.executable, "HOLDER": LOCK_HOLDER}
    r = run_vaultmem("--vault", vault.root, "--as", "lee", "remember", "race", "--type", "fact", env=env)
    assert r.returncode == 4, r.stderr
    assert (tmp_path / "mark.unstage").exists()  # unstaging met the lock and retried
    assert not (vault.root / ".git" / "index.lock").exists()
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_page_link_that_loops_or_a_looping_agents_folder_never_stops_a_brief(vault):
    """The role pages are listed from agents/ at every brief: a link that points at itself is
    a page that cannot be read (its brief says so), and an agents/ that loops holds none."""
    from vaultmem import pages

    (vault.root / "agents" / "looping.md").symlink_to("looping.md")
    assert "looping" in pages.role_files(vault.root)
    assert vault.brief("looping", "login rate limit", tokens=600).tokens <= 600
    agents = vault.root / "agents"
    for p in agents.iterdir():
        p.unlink()
    agents.rmdir()
    agents.symlink_to("agents")
    assert pages.role_files(vault.root) == {}
    assert vault.brief("anyone", "login rate limit", tokens=600).page is None
