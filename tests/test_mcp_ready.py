"""``vaultmem mcp`` ready before the first request, and schemas a model can use: the
handshake and the listings answered before the vault (or the SDK) loads, by the launcher's
front (vaultmem/adapters/mcp_front.py) — the same answers the SDK server gives; a typed
output schema for every tool; filters that take one value or several; unknown arguments
refused by name; the server's version; a clean stop on SIGINT and at the end of stdin."""

import json
import signal
import subprocess
import sys

import anyio
import pytest
from conftest import run_vaultmem
from test_kills import wait_for
from test_mcp import session, text_of
from mcp import Client, StdioServerParameters

import vaultmem
from vaultmem.adapters.mcp import VaultServer

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


class Wire:
    """A real ``vaultmem mcp`` process spoken to in raw JSON-RPC lines."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def send(self, *messages: dict) -> None:
        self.proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        self.proc.stdin.flush()

    def answer(self, rid) -> dict:
        return self.answers(rid)[rid]

    def answers(self, *rids) -> dict:
        """The answers to the requests ``rids``, in whatever order they come (calls sent
        together may be answered in either order); other messages are skipped."""
        got: dict = {}
        while set(got) != set(rids):
            line = self.proc.stdout.readline()
            assert line, self.proc.stderr.read()
            msg = json.loads(line)
            if msg.get("id") in rids:
                got[msg["id"]] = msg
        return got

    def stop(self, how: str) -> tuple[int, str]:
        if how == "eof":
            self.proc.stdin.close()
        else:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=30)  # a bound on a hang, not a budget
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return code, self.proc.stderr.read()


def handshake(w: Wire) -> tuple[dict, dict]:
    w.send(INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
           {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    return w.answer(1), w.answer(2)


def test_the_front_answers_the_handshake_and_listings_as_the_sdk_server_does():
    """What the front answers is what the SDK server answers, at every protocol version
    it negotiates: a tool's change without `--write-listing` fails here."""
    from vaultmem.adapters.mcp_front import LISTING_FILE, read_listing

    with open(LISTING_FILE, encoding="utf-8") as fh:
        LISTING = json.load(fh)

    assert read_listing() == LISTING, "run: python -m vaultmem.adapters.mcp_front --write-listing"


def test_the_handshake_is_answered_before_the_vault_is_opened_and_a_bad_vault_is_each_calls_error(tmp_path):
    """No vault work before the handshake: with a vault that does not exist, initialize
    and tools/list are answered all the same; a tool call's error names the problem, as
    stderr does; the end of stdin ends the server with the error's exit code."""
    w = Wire("--claude", "--vault", str(tmp_path / "nowhere"))
    init, tools = handshake(w)
    assert init["result"]["serverInfo"] == {"name": "vaultmem", "version": vaultmem.__version__}
    assert len(tools["result"]["tools"]) == 17
    w.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_stats", "arguments": {}}})
    call = w.answer(3)["result"]
    assert call["isError"] and "does not exist" in call["content"][0]["text"], call
    code, stderr = w.stop("eof")
    assert code != 0 and "does not exist" in stderr and "Traceback" not in stderr, stderr


@pytest.mark.parametrize("how", ["sigint", "eof"])
def test_a_call_sent_with_the_handshake_waits_for_the_vault_and_the_server_stops_cleanly(vault, how):
    """initialize, tools/list and a tool call in one write: the call is answered from the
    open vault (it waits for it, it does not race it); then SIGINT — as Claude Code stops
    its servers — or the end of stdin stops the server: exit code 0, nothing on stderr."""
    w = Wire("--vault", str(vault.root), "--as", "lee")
    w.send(INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
           {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
           {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_stats", "arguments": {}}})
    assert w.answer(1)["result"]["serverInfo"]["version"] == vaultmem.__version__
    assert len(w.answer(2)["result"]["tools"]) == 17
    stats = w.answer(3)["result"]
    assert not stats.get("isError") and stats["structuredContent"]["acting_as"] == "lee", stats
    code, stderr = w.stop(how)
    assert code == 0 and stderr == "", stderr


@pytest.mark.parametrize("how", ["sigint", "eof"])
def test_a_running_server_writes_what_its_searches_recalled_without_being_asked_and_the_rest_as_it_stops(vault, how):
    """`vaultmem mcp` holds its calls' usage records (gc and compaction count recalls) and
    appends them together: another process finds them while the server runs, unasked,
    and the ones made just before it stops are written as it stops — once each."""
    (vault.root / "memories" / "quince.md").write_text(
        "---\nname: quince\ntype: fact\nscope: global\n---\nThe quince is ripe in October.\n", encoding="utf-8")
    usage_file = vault.root / ".vaultmem" / "local" / "usage.jsonl"
    recalled = lambda: [json.loads(x)["ids"] for x in usage_file.read_text(encoding="utf-8").splitlines()]  # noqa: E731
    w = Wire("--vault", str(vault.root))
    try:
        handshake(w)
        call = {"name": "search_memory", "arguments": {"query": "quince October"}}
        w.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        assert [h["path"] for h in w.answer(3)["result"]["structuredContent"]["hits"]] == ["memories/quince.md"]
        wait_for(lambda: usage_file.exists() and recalled() == [["memories/quince.md"]],
                 "the server's record, written while it runs", w.proc)
        w.send(*({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call} for n in (4, 5)))
        w.answers(4, 5)  # (answered in either order)
    finally:
        code, stderr = w.stop(how)
    assert code == 0 and stderr == "", stderr
    assert recalled() == [["memories/quince.md"]] * 3


@pytest.mark.parametrize("how", ["sigint", "eof"])
def test_a_client_that_only_shakes_hands_stops_the_server_without_a_word(vault, how):
    """The handshake answered (by the front), nothing asked: the end of stdin or SIGINT
    stops the server at once, with nothing on stderr — the initialize the front hands
    on to the SDK server is no call of the client's, and no call waits for it."""
    w = Wire("--vault", str(vault.root))
    w.send(INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert w.answer(1)["result"]["serverInfo"]["name"] == "vaultmem"
    code, stderr = w.stop(how)
    assert code == 0 and stderr == "", stderr


def test_a_real_client_over_stdio_reads_the_version_and_the_server_exits_when_it_closes(vault, tmp_path):
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(vault.root)])
    errlog = tmp_path / "stderr.txt"

    async def main():
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as c:
                info = c.server_info
                stats = await c.call_tool("get_stats", {"typo": 1})
                return info, stats

    info, stats = anyio.run(main)
    assert (info.name, info.version) == ("vaultmem", vaultmem.__version__)
    assert stats.is_error and "unknown argument 'typo'" in text_of(stats)
    assert errlog.read_text() == ""


def test_every_tool_has_a_typed_output_schema(vault):
    tools = session(VaultServer(vault), lambda c: c.list_tools()).tools
    for t in tools:
        schema = t.output_schema
        assert schema["type"] == "object" and schema.get("additionalProperties") is not True, (t.name, schema)
        assert len(schema["properties"]) >= 2 and schema.get("description"), (t.name, schema)
    by_name = {t.name: t.output_schema for t in tools}
    assert by_name["search_memory"]["properties"]["hits"]["type"] == "array"
    assert {"markdown", "tokens", "cites"} <= set(by_name["brief"]["properties"])
    assert {"page_created", "markdown"} <= set(by_name["dispatch"]["properties"])


def test_filters_take_one_value_or_several(vault):
    (vault.root / "memories" / "ports.md").write_text(
        "---\nname: ports\ntype: fact\nscope: global\ntags: [net]\n---\nThe backend listens on port 8080.\n",
        encoding="utf-8")
    server = VaultServer(vault, agent="lee")

    async def steps(c):
        one = await c.call_tool("search_memory", {"query": "port 8080", "type": "fact", "tag": "net"})
        several = await c.call_tool("search_memory", {"query": "port 8080", "type": ["fact", "decision"]})
        other = await c.call_tool("search_memory", {"query": "port 8080", "type": "decision"})
        saved = await c.call_tool("checkpoint_save", {"task": "ports", "next": "check the proxy"})
        shown = await c.call_tool("checkpoint_show", {"agent": "lee"})
        return one, several, other, saved, shown

    one, several, other, saved, shown = session(server, steps)
    for r in (one, several, other, saved, shown):
        assert not r.is_error, text_of(r)
    assert [h["path"] for h in one.structured_content["hits"]] == ["memories/ports.md"]
    assert one.structured_content["filters"]["types"] == ["fact"]
    assert [h["path"] for h in several.structured_content["hits"]] == ["memories/ports.md"]
    assert other.structured_content["hits"] == []
    assert shown.structured_content["next"] == ["check the proxy"]


def test_unknown_arguments_are_refused_with_the_argument_named_and_nothing_is_written(vault):
    server = VaultServer(vault, agent="lee")

    async def steps(c):
        return (await c.call_tool("search_memory", {"query": "x", "typ": "fact"}),
                await c.call_tool("remember", {"text": "the port is 8080", "type": "fact", "tags": ["a"],
                                               "sourse": "me"}))

    search, remember = session(server, steps)
    assert search.is_error and "unknown argument 'typ'" in text_of(search)
    assert search.structured_content["error"]["field"] == "typ"
    assert "search_memory takes: query, agent" in search.structured_content["error"]["hint"]
    assert remember.is_error and "unknown arguments 'tags', 'sourse'" in text_of(remember)
    assert not list((vault.root / "memories").glob("*.md")) and not list((vault.root / "inbox").glob("*.md"))


def test_mcp_without_a_vault_exits_with_the_error_when_nothing_is_asked(tmp_path):
    r = run_vaultmem("mcp", "--vault", tmp_path / "nowhere")
    assert r.returncode != 0 and "does not exist" in r.stderr and r.stdout == ""
