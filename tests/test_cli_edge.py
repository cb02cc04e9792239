"""The CLI answers through the edge: a library error that names its input (``field``)
is shown with the flag or argument the user typed, an OSError the library did not expect
is a clear error with its own exit code, and no traceback ever reaches the user."""

import errno
import json
from pathlib import Path

import click
import pytest
import typer
from conftest import git, out_json

import vaultmem.adapters.cli as cli_mod
from vaultmem.adapters.cli import fields
from vaultmem.errors import BadInput
from vaultmem.models import Change
from vaultmem.notes import Notes
from vaultmem.pages import Pages
from vaultmem.parse.logline import LogEntry
from vaultmem.shared import Shared


def raising(exc):
    def fake(*_args, **_kwargs):
        raise exc

    return fake


def command(*path):
    group = typer.main.get_command(cli_mod.app)
    for name in path:
        group = group.get_command(click.Context(group), name)
    return group


# -- the mapping ----------------------------------------------------------------------------------


def test_a_field_is_the_commands_own_flag_or_argument():
    remember = command("remember").params
    assert fields.option_for("importance", "remember", remember) == "--importance"
    assert fields.option_for("author_kind", "remember", remember) == "--author-kind"
    assert fields.option_for("type", "remember", remember) == "--type"  # the parameter is type_
    assert fields.option_for("text", "remember", remember) == "TEXT"  # positional: its metavar
    assert fields.option_for("tags", "remember", remember) == "--tag"  # repeatable, one a flag
    assert fields.option_for("aliases", "remember", remember) == "--alias"
    assert fields.option_for("limit", "search", command("search").params) == "-n"
    assert fields.option_for("agent", "brief", command("brief").params) == "AGENT"
    assert fields.option_for("agent", "log tail", command("log", "tail").params) == "--agent"
    assert fields.option_for("item_id", "review show", command("review", "show").params) == "ITEM_ID"


def test_a_command_that_calls_a_field_otherwise_says_so():
    decide = command("decide").params
    assert fields.option_for("summary", "decide", decide) == "--decision"
    assert fields.option_for("body", "decide", decide) == "--why"
    assert fields.option_for("agent", "log append", command("log", "append").params) == "--as"
    assert fields.option_for("summary", "log ack", command("log", "ack").params) == "--note"


def test_a_field_the_command_does_not_take_names_no_flag():
    # retain reads its facts from a file: a bad 'tags' there is no --tag of the command
    assert fields.option_for("tags", "retain", command("retain").params) is None
    assert fields.option_for("nosuch", "remember", command("remember").params) is None
    assert fields.option_for("author_kind") == "--author-kind"  # no command known: the default


# -- what the user sees -----------------------------------------------------------------------------


def test_a_field_error_names_the_flag_in_text_and_json(cli, vault, monkeypatch):
    monkeypatch.setattr(Notes, "remember", raising(
        BadInput("is 1.5; it must be a number between 0 and 1", field="importance")))
    r = cli("--vault", vault.root, "remember", "x", "--type", "fact", "--importance", "1.5")
    assert r.exit_code == 2
    assert r.stderr == "error: --importance: is 1.5; it must be a number between 0 and 1\n"
    r = cli("--vault", vault.root, "remember", "x", "--type", "fact", "--importance", "1.5", "--json")
    assert r.exit_code == 2
    assert out_json(r) == {"error": {"type": "bad_input", "message": "is 1.5; it must be a number between 0 and 1",
                                     "path": None, "line": None, "hint": None, "field": "importance",
                                     "option": "--importance"}}


def test_a_positional_argument_is_named_by_its_metavar(cli, vault, monkeypatch):
    monkeypatch.setattr(Notes, "remember", raising(BadInput("the fact to remember is empty", field="text")))
    r = cli("--vault", vault.root, "remember", " ", "--type", "fact")
    assert r.exit_code == 2 and r.stderr.startswith("error: TEXT: the fact to remember is empty")


def test_a_subcommand_override_is_used(cli, vault, monkeypatch):
    monkeypatch.setattr(Shared, "decide", raising(BadInput("the summary is empty", field="summary")))
    r = cli("--vault", vault.root, "decide", "--decision", " ", "--why", "w", "--as", "lee", "--json")
    assert r.exit_code == 2
    err = out_json(r)["error"]
    assert err["field"] == "summary" and err["option"] == "--decision"


def test_an_error_without_a_field_keeps_its_shape(cli, tmp_path):
    r = cli("--vault", tmp_path / "nowhere", "page", "list", "--json")
    err = out_json(r)["error"]
    assert r.exit_code == 1 and set(err) == {"type", "message", "path", "line", "hint", "field", "option"}
    assert err["field"] is None and err["option"] is None


# -- an OSError the library did not expect -----------------------------------------------------------


def test_a_full_disk_is_a_storage_error_not_a_traceback(cli, vault, monkeypatch):
    monkeypatch.setattr(Notes, "remember", raising(
        OSError(errno.ENOSPC, "No space left on device", "/v/memories/x.md")))
    r = cli("--vault", vault.root, "remember", "x", "--type", "fact")  # the fixture raises on a traceback
    assert r.exit_code == 5
    assert r.stderr == ("error: no space left on device while writing /v/memories/x.md\n"
                        "  hint: free some space on that disk, then run the command again\n")
    r = cli("--vault", vault.root, "remember", "x", "--type", "fact", "--json")
    assert r.exit_code == 5 and out_json(r)["error"]["type"] == "storage_error"


def test_another_oserror_is_a_plain_error(cli, vault, monkeypatch):
    denied = PermissionError(errno.EACCES, "Permission denied", "/v/agents/r.md")
    monkeypatch.setattr(Pages, "read", raising(denied))
    r = cli("--vault", vault.root, "page", "show", "r")
    assert r.exit_code == 1 and r.stderr == "error: cannot access /v/agents/r.md: Permission denied\n"


def test_an_error_raised_outside_any_command_is_answered_too(monkeypatch, capsys):
    monkeypatch.setattr(cli_mod, "app", raising(OSError(errno.ENOSPC, "No space left on device")))
    monkeypatch.setattr("sys.argv", ["vaultmem", "--json", "page", "list"])
    with pytest.raises(SystemExit) as stop:
        cli_mod.main()
    assert stop.value.code == 5
    assert json.loads(capsys.readouterr().out)["error"]["message"] == "no space left on device"


# -- the library's own messages name no flag: the CLI does ----------------------------------------


def test_library_errors_are_shown_with_the_flags_of_the_command(cli, vault):
    root = vault.root
    assert cli("--vault", root, "keys", "new", "lee").exit_code == 0
    r = cli("--vault", root, "log", "append", "--as", "lee", "--summary", "s", "--channel", "a b")
    assert r.exit_code == 2
    assert r.stderr == "error: --channel: 'a b' must be a word such as general or backend/db\n"
    r = cli("--vault", root, "log", "append", "--as", "lee", "--summary", "two\nlines", "--json")
    err = out_json(r)["error"]
    assert (err["field"], err["option"], err["hint"]) == ("summary", "--summary", "put the details in the body")
    r = cli("--vault", root, "decide", "--decision", " ", "--why", "w", "--as", "lee")
    assert r.exit_code == 2 and r.stderr.startswith("error: --decision: is empty")
    r = cli("--vault", root, "brief", "r", "--task", "t", "--window", "0")
    assert r.exit_code == 2 and r.stderr == "error: --window: is 0; it must be a positive number of tokens\n"
    r = cli("--vault", root, "config", "set", "no..key", "1")
    assert r.exit_code == 2 and r.stderr.startswith("error: KEY: 'no..key' is not a setting name")
    r = cli("--vault", root, "page", "ensure", "r", "--as", "lee")
    r = cli("--vault", root, "page", "add", "r", "  ", "--as", "lee")
    assert r.exit_code == 2 and r.stderr.startswith("error: TEXT: the entry text is empty")
    r = cli("--vault", root, "review", "list", "--status", "bogus")
    assert r.exit_code == 2 and r.stderr == "error: --status: 'bogus' is not pending, approved, rejected or all\n"


# -- warnings come with the result ------------------------------------------------------------------


def test_a_result_carries_its_own_warnings():
    change = Change("memory.remember", [], None, "m", {"path": "p"})
    assert "warnings" not in change.to_dict()
    change.warnings.append("redacted a github-token in the text: stored as [redacted:github-token:ab]")
    assert change.to_dict()["warnings"] == change.warnings
    assert change == Change("memory.remember", [], None, "m", {"path": "p"})  # not part of what changed
    entry = LogEntry(log="live", agent="a", ts="t", seq=1, prev="", nonce="n", channel="c", type="status",
                     summary="s", warnings=["w"])
    assert "warnings" not in entry.to_dict() and entry.warnings == ["w"]


def test_the_cli_prints_the_warnings_of_the_result_it_emits(cli, vault, monkeypatch):
    done = Change("memory.remember", ["memories/x.md"], "0123456789", "m", {"path": "memories/x.md"},
                  warnings=["redacted a github-token in the text: stored as [redacted:github-token:ab]"])
    monkeypatch.setattr(Notes, "remember", lambda *_a, **_k: done)
    r = cli("--vault", vault.root, "remember", "x", "--type", "fact")
    assert r.exit_code == 0 and r.stdout == "remembered memories/x.md (commit 01234567)\n"
    assert r.stderr == "warning: redacted a github-token in the text: stored as [redacted:github-token:ab]\n"
    r = cli("--vault", vault.root, "remember", "x", "--type", "fact", "--json")
    assert out_json(r)["warnings"] == done.warnings


def test_text_that_is_not_utf8_is_refused_with_a_clear_error_not_a_traceback(en_vault):
    """A terminal in another encoding passes bytes that are not UTF-8: Python hands them on
    as lone surrogates, which no note, commit or index can hold. remember and search ended
    in a traceback (UnicodeEncodeError; the semantic model's TypeError). An argument or
    standard input holding them is refused first, exit 2, the bytes shown as \\xNN."""
    import os
    import subprocess
    import sys

    def run(*args: bytes, stdin: bytes | None = None):
        return subprocess.run([sys.executable, "-m", "vaultmem", "--vault", os.fsencode(en_vault.root), *args],
                              input=stdin, capture_output=True)

    for args in ([b"remember", b"bad \xff text", b"--type", b"fact"], [b"search", b"kafka \xe9"],
                 [b"--json", b"brief", b"lee", b"--task", b"caf\xe9"]):
        r = run(*args)
        said = (r.stdout + r.stderr).decode()
        assert r.returncode == 2 and "Traceback" not in said and "not UTF-8" in said, said
        assert "\\xff" in said or "\\xe9" in said
    r = run(b"remember", b"-", b"--type", b"fact", stdin=b"first line\nbad \xff\n")
    assert r.returncode == 2 and b"not UTF-8" in r.stderr and b"line 2" in r.stderr, r.stderr
    strict = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(en_vault.root), "remember", "-", "--type",
                             "fact"], input=b"bad \xff\n", capture_output=True,
                            env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})  # a desktop's usual locale
    assert strict.returncode == 2 and b"Traceback" not in strict.stderr and b"line 1" in strict.stderr, strict.stderr
    assert run(b"remember", b"-", b"--type", b"fact", stdin="fine, caf\u00e9\r\nsecond\n".encode()).returncode == 0
    assert list(en_vault.root.joinpath("memories").glob("bad*")) == []
    # text written through any other command is held to the same: the write itself refuses it
    assert run(b"--as", b"orch", b"page", b"ensure", b"lee").returncode == 0
    r = run(b"--as", b"orch", b"page", b"add", b"lee", b"an entry \xff")
    assert r.returncode == 2 and b"not text" in r.stderr and b"Traceback" not in r.stderr, r.stderr
    assert git(en_vault.root, "status", "--porcelain") == ""


def test_a_path_that_is_not_utf8_is_still_a_path(en_vault, tmp_path):
    """Only text is held to UTF-8: a folder or file named in another encoding is given and
    read as it is (a vault there is searched; a file there is retained)."""
    import os
    import shutil
    import subprocess
    import sys

    moved = os.path.join(os.fsencode(tmp_path), b"caf\xe9-vault")
    shutil.copytree(os.fsencode(en_vault.root), moved, symlinks=True)
    items = os.path.join(os.fsencode(tmp_path), b"r\xe9tain.json")
    with open(items, "wb") as fh:
        fh.write(b'[{"type": "fact", "text": "kafka retries are capped \\ud83d", "author": "ann", "author_kind": "user"}]')
    for args in ([b"search", b"kafka"], [b"retain", items]):
        r = subprocess.run([sys.executable, "-m", "vaultmem", "--vault", moved, *args], capture_output=True)
        assert r.returncode == 0, r.stderr
    texts = [p.read_text(encoding="utf-8") for p in Path(os.fsdecode(moved), "inbox").glob("*.md")]
    assert any("kafka retries are capped \ufffd" in t for t in texts)  # half an emoji: U+FFFD
