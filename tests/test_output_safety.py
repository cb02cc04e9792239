"""What the CLI prints is safe and says what it means: escape sequences in notes are
shown, never obeyed; a text argument may begin with a dash and no error repeats a secret;
with --json every error — usage errors too — is ``{"error": …}`` on stdout; help flows."""

import json
import re
from types import SimpleNamespace

from conftest import git, out_json, vaultmem_in_process

from vaultmem.adapters.cli import render

EVIL = ("port 8080 \x1b]0;pwned\x07 title \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ "
        "\x1b[31mred\x1b[0m \x9b2J \x07bell \u202eexe.txt 端口 😀 👨\u200d👩\u200d👧 line\rforged")
# what a terminal would act on: C0 but tab/newline, DEL, C1, bidi controls
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _safe(text: str) -> None:
    assert not ACTED_ON.search(text), repr(ACTED_ON.findall(text))


def test_note_text_with_escape_sequences_is_shown_not_obeyed(en_vault):
    root = en_vault.root
    assert vaultmem_in_process("--vault", root, "remember", EVIL, "--type", "fact").returncode == 0
    assert vaultmem_in_process("--vault", root, "page", "ensure", "bob").returncode == 0
    assert vaultmem_in_process("--vault", root, "page", "add", "bob", EVIL).returncode == 0
    assert vaultmem_in_process("--vault", root, "keys", "new", "ella").returncode == 0
    # another fact (another port: memory holds the first, which an agent's repeat would not file)
    assert vaultmem_in_process("--vault", root, "--as", "ella", "remember", EVIL.replace("8080", "9090"),
                               "--type", "fact").returncode == 0
    # the live log refuses control characters itself; its display is covered all the same
    for args in (["search", "port"], ["brief", "bob", "--task", "port 8080"], ["page", "show", "bob"],
                 ["review", "list"], ["audit"], ["ask", "bob", "port"], ["index", "--rebuild"],
                 ["forget", "nosuch\x1b[2Jslug"], ["brief", "bob", "--task", EVIL]):
        r = vaultmem_in_process("--vault", root, *args)
        _safe(r.stdout)
        _safe(r.stderr)
    r = vaultmem_in_process("--vault", root, "search", "port")
    assert "␛]0;pwned␇" in r.stdout and "\\u202eexe.txt" in r.stdout and "\\x9b2J" in r.stdout
    assert "端口 😀 👨\u200d👩\u200d👧" in r.stdout  # Chinese, emoji and joined emoji intact
    item = json.loads(vaultmem_in_process("--vault", root, "--json", "review", "list").stdout)
    item_id = (item["items"] if isinstance(item, dict) else item)[0]["id"]
    r = vaultmem_in_process("--vault", root, "review", "show", item_id)
    assert r.returncode == 0 and "pwned" in r.stdout
    _safe(r.stdout)


def test_json_output_escapes_what_a_terminal_would_act_on_and_keeps_the_value(en_vault):
    root = en_vault.root
    assert vaultmem_in_process("--vault", root, "remember", EVIL, "--type", "fact").returncode == 0
    r = vaultmem_in_process("--vault", root, "--json", "search", "port")
    _safe(r.stdout)
    assert "端口" in r.stdout  # not ASCII-escaped: still readable
    snippet = out_json(r)["hits"][0]["snippet"]
    assert "\x1b]0;pwned\x07" in snippet and "\u202e" in snippet  # a JSON reader gets the text as it is


def test_a_file_name_holding_a_newline_is_shown_on_one_line(en_vault):
    """A note's file name may hold a newline (git and the file system allow it): search,
    index and the warning about a file that cannot be read show it escaped, so it cannot
    start a line of output of its own (a forged "error:" line, a forged hit)."""
    memories = en_vault.root / "memories"
    (memories / "good\nerror: forged.md").write_text("---\nname: b\ntype: fact\n---\nredis port 6379\n")
    (memories / "bad\n 2. forged.md").write_text("---\nname: a\ntype: fact\ntags: [x\n---\nredis port\n")
    r = vaultmem_in_process("--vault", en_vault.root, "search", "redis")
    assert r.returncode == 0, r.stderr
    assert " 1. memories/good\\nerror: forged.md  [note/fact]" in r.stdout.splitlines()[0]
    assert not any(line.startswith("error:") for line in r.stdout.splitlines())
    (warning,) = [line for line in r.stderr.splitlines() if "forged" in line]
    assert warning.startswith("warning: memories/bad\\n 2. forged.md:5: cannot be read")
    index = vaultmem_in_process("--vault", en_vault.root, "index").stdout
    assert "skipped memories/bad\\n 2. forged.md:5:" in index and "\n 2. forged" not in index
    hits = out_json(vaultmem_in_process("--vault", en_vault.root, "--json", "search", "redis"))["hits"]
    assert hits[0]["path"] == "memories/good\nerror: forged.md"  # JSON keeps the name as it is


def test_render_functions_stay_plain_and_the_edge_neutralises():
    from vaultmem.adapters.edge import json_text, printable

    assert printable("a\x1b[31mb\x07\r\nc\rd\x9b\u202e中😀\t") == "a␛[31mb␇\nc␍d\\x9b\\u202e中😀\t"
    assert json.loads(json_text({"k": "\x9b\u2028\u202e"})) == {"k": "\x9b\u2028\u202e"}
    # a file name's bytes that are not UTF-8 (lone surrogates as Python decodes them) can be
    # written out: shown as the bytes they were, escaped in JSON to the same value
    name = b"caf\xe9.md".decode("utf-8", "surrogateescape")
    assert printable(name) == "caf\\xe9.md" and printable("\ud800") == "\\ud800"
    import orjson

    assert json.loads(json_text([name, "\ud800"])) == orjson.loads(json_text([name, "\ud800"])) == \
        ["caf\\xe9.md", "\\ud800"]


PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvZQ5w0rT7yJ3k9Lm2Xq8sN4pB6cD1eF0gH2iJ3kL4mN5oP6q\n"
       "R7sT8uV9wX0yZ1aB2cD3eF4gH5iJ6kL7mN8oP9qR0sT1uV2wX3yZ4aB5cD6eF7g\n-----END RSA PRIVATE KEY-----")
BODY = "MIIEowIBAAKCAQEAvZQ5w0rT7yJ3k9Lm2Xq8sN4pB6cD1eF0gH2iJ3kL4mN5oP6q"


def test_a_key_given_as_text_is_taken_as_text_and_stored_redacted(en_vault):
    root = en_vault.root
    r = vaultmem_in_process("--vault", root, "remember", PEM, "--type", "fact")
    assert r.returncode == 0, r.stderr
    assert BODY not in r.stdout + r.stderr
    assert "redacted a private-key" in r.stderr
    assert BODY not in git(root, "log", "-p", "--all")
    stored = [p.read_text() for p in (root / "memories").glob("*.md")]
    assert len(stored) == 1 and "[redacted:private-key:" in stored[0] and BODY not in stored[0]
    # other text that starts with a dash
    r = vaultmem_in_process("--vault", root, "remember", "- the deploy needs two approvals", "--type", "fact")
    assert r.returncode == 0, r.stderr


def test_no_error_repeats_a_secret(en_vault):
    root = en_vault.root
    for args in (["remember", "x", "--type", PEM], ["brief", "bob", "--task", "x", "--tokens", PEM],
                 ["remember", PEM], ["search", "port", "-n", PEM], ["remember", "x", "--type", "fact", PEM]):
        for extra in ([], ["--json"]):
            r = vaultmem_in_process("--vault", root, *extra, *args)
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert BODY not in r.stdout + r.stderr, args
            assert "Traceback" not in r.stderr


def test_with_json_every_usage_error_is_an_error_object_on_stdout(en_vault):
    root = en_vault.root
    cases = [(["brief", "bob", "--task", "x", "--tokens", "abc"], "--tokens"),
             (["remember", "some fact"], "--type"),
             (["search", "port", "--no-such-option"], None),
             (["brief"], "AGENT"),
             (["no-such-command"], None),
             (["log", "tail", "-n"], "-n")]
    for args, option in cases:
        r = vaultmem_in_process("--vault", root, "--json", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        err = out_json(r)["error"]
        assert err["type"] == "usage_error" and err["message"] and err["hint"], args
        if option:
            assert err["option"] == option, (args, err)
        assert "╭" not in r.stderr + r.stdout and r.stderr == "", (args, r.stderr)
        r = vaultmem_in_process("--vault", root, *args)  # for people: one error line and a hint, no box
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.startswith("error: ") and "\n  hint: " in r.stderr and "╭" not in r.stderr


def test_help_flows_and_says_nothing_internal():
    for args in (["brief", "--help"], ["dispatch", "--help"], ["index", "--help"], ["init", "--help"]):
        r = vaultmem_in_process(*args, env={"COLUMNS": "200"})
        assert r.returncode == 0
        assert "seed" not in r.stdout.lower() and "000" not in r.stdout and "vault-template" not in r.stdout
    r = vaultmem_in_process("brief", "--help", env={"COLUMNS": "200"})
    # one paragraph of the docstring, on one line at this width (it was broken at the source's line ends)
    assert "its own page whole (project context, working memory, the latest sub-agent records), newest first" in r.stdout


def test_a_budget_too_small_for_anything_says_so_and_the_least_that_carries_a_line(en_vault):
    root = en_vault.root
    assert vaultmem_in_process("--vault", root, "remember", "the backend port is 8080", "--type",
                               "fact").returncode == 0
    assert vaultmem_in_process("--vault", root, "page", "ensure", "bob").returncode == 0  # no "no page yet" warning
    r = vaultmem_in_process("--vault", root, "brief", "bob", "--task", "port", "--tokens", "60")
    assert r.returncode == 0
    warning = re.search(r"warning: a budget of 60 tokens holds only the brief's header: nothing from memory fits; "
                        r"allow at least (\d+) tokens", r.stderr)
    assert warning, r.stderr
    assert "## " not in r.stdout  # no section heading without a line under it
    least = warning.group(1)
    r = vaultmem_in_process("--vault", root, "--json", "brief", "bob", "--task", "port", "--tokens", least)
    b = out_json(r)
    assert (b["items"] or b["index_lines"]) and "warnings" not in b
    r = vaultmem_in_process("--vault", root, "--json", "brief", "bob", "--task", "port", "--tokens",
                            str(int(least) - 1))
    b = out_json(r)
    assert not (b["items"] or b["index_lines"]) and b["warnings"]


def test_wording_says_each_thing_once_and_counts_agree():
    filed = SimpleNamespace(action="propose", commit="fedcba9876543210", details={"pending": 1, "items": [
        {"id": "i-1", "status": "pending", "op": "remove", "summary": "remove port-8080", "quarantined": False,
         "flags": []}]})
    assert render.proposed(filed).startswith("i-1: remove port-8080 — waiting for review")
    assert render.verified(([], {"entries": 1, "agents": 1})) == "1 entry of 1 agent checked: all signatures and chains hold"
    assert render.verified(([], {"entries": 3, "agents": 2})) == "3 entries of 2 agents checked: all signatures and chains hold"
    report = {"stale_delegations": [], "foreign_page_commits": [], "notes_without_provenance": [],
              "inbox": [{"id": "i-1", "op": "remove", "summary": "remove port-8080", "proposed_by": "ella",
                         "quarantined": False, "flags": []}]}
    assert "waiting: remove port-8080 (from ella)" in render.audit(report)
    assert render.repaired([{"path": "shared/live/a.md", "removed_bytes": 1}]) == \
        "shared/live/a.md: removed 1 byte of a cut-off entry"
