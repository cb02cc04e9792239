"""Sizes and shapes a careless or hostile caller gives (issue 28, points 5, 6, 7 and two
of 12): every size is checked against one table (vaultmem.limits) with its field named
and its range, on a tantivy vault (whose engine aborted the process for a billion hits);
a query or task larger than a memory note may be is refused before any work and is never
echoed back whole; the MCP server answers any line it cannot use with a JSON-RPC error
and reads on; a CURRENT that is not a file is rebuilt; ``search --help`` keeps its table."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import struct
import subprocess
import sys
import termios

import anyio
import pytest
from conftest import SAFETY_NET, Lines, git, run_vaultmem, vaultmem_in_process, wait_until
from mcp import Client, MCPError, StdioServerParameters

from vaultmem import BadInput, Vault, limits
from vaultmem.adapters.mcp import VaultServer

TANTIVY = {"VAULTMEM_INDEX_ENGINE": "tantivy"}
HUGE = 1_000_000_000


@pytest.fixture
def tv(tmp_path, monkeypatch) -> Vault:
    """A vault on tantivy with a few notes, indexed."""
    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", "tantivy")
    v, _ = Vault.init(tmp_path / "tv", lang="en", orchestrator="orch")
    for i in range(3):
        (v.root / "memories" / f"port-{i}.md").write_text(
            f"---\nname: port-{i}\ntype: fact\nscope: global\n---\nThe redis port of service {i} is 637{i}.\n",
            encoding="utf-8")
    git(v.root, "add", "-A")
    git(v.root, "commit", "-qm", "notes")
    v = Vault(v.root)
    assert v.search("redis", limit=5)
    assert v.index_status()["engine"] == "tantivy"
    return v


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content)


# -- point 5: one argument killed the process --------------------------------------------------


def test_search_with_a_billion_hits_is_refused_naming_n_and_its_range_on_tantivy(tv):
    # a process: unchecked, tantivy aborted it (exit 134), which would end pytest with it
    r = run_vaultmem("--vault", tv.root, "search", "redis", "-n", str(HUGE), env=TANTIVY)
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])  # was 134: memory allocation failed
    assert r.stderr == "error: -n: is 1000000000; it must be 1–1,000 hits\n"
    r = vaultmem_in_process("--vault", tv.root, "search", "redis", "-n", "1000", "--json", env=TANTIVY)
    assert r.returncode == 0 and len(json.loads(r.stdout)["hits"]) == 3


@pytest.mark.parametrize("args,flag", [
    (["brief", "orch", "--task", "redis", "--tokens", str(10**12)], "--tokens"),
    (["brief", "orch", "--task", "redis", "--window", str(10**12)], "--window"),
    (["dispatch", "cache", "--task", "redis", "--window", str(10**12)], "--window"),
    (["dispatch", "cache", "--task", "redis", "--tokens", str(10**12)], "--tokens"),
])
def test_cli_brief_and_dispatch_refuse_a_huge_budget_before_writing_anything(tv, args, flag):
    head = git(tv.root, "rev-parse", "HEAD")
    r = vaultmem_in_process("--vault", tv.root, *args, env=TANTIVY)
    assert r.returncode == 2 and r.stderr == f"error: {flag}: is {10**12}; it must be 1–10,000,000 tokens\n", r.stderr
    assert git(tv.root, "rev-parse", "HEAD") == head and not (tv.root / "agents" / "cache.md").exists()


@pytest.mark.parametrize("call,field", [
    (lambda v: v.search("redis", limit=HUGE), "limit"),
    (lambda v: v.search("redis", limit=0), "limit"),
    (lambda v: v.search("redis", limit="10"), "limit"),
    (lambda v: v.brief("orch", "redis", tokens=10**12), "tokens"),
    (lambda v: v.brief("orch", "redis", window=10**12), "window"),
    (lambda v: v.lifecycle.delegate("cache", "redis", v.actor("orch"), window=10**12), "window"),
    (lambda v: v.lifecycle.delegate("cache", "redis", v.actor("orch"), tokens=-1), "tokens"),
    (lambda v: v.lifecycle.dispatch("newrole", "x" * 300_000, v.actor("orch")), "task"),
    (lambda v: v.lifecycle.dispatch("newrole", "redis", v.actor("orch"), tokens=10**12), "tokens"),
    (lambda v: v.shared.tail(n=HUGE), "n"),
    (lambda v: v.lifecycle.history("orch", max_count=HUGE), "n"),
])
def test_the_python_api_refuses_each_size_out_of_range_naming_the_field(tv, call, field):
    head = git(tv.root, "rev-parse", "HEAD")
    with pytest.raises(BadInput) as e:
        call(tv)
    assert e.value.field == field
    assert git(tv.root, "rev-parse", "HEAD") == head  # a delegation refused records nothing


@pytest.mark.parametrize("engine", ["whoosh", "tantivy"])
def test_an_engine_asked_for_a_billion_hits_clamps_instead_of_aborting(tmp_path, engine):
    """The safety net under the checked edges: the index store and the engines, asked
    directly, answer with what they hold (in a child process: an abort would end pytest)."""
    v, _ = Vault.init(tmp_path / "v", lang="en", orchestrator="orch")
    (v.root / "memories" / "a.md").write_text("---\nname: a\ntype: fact\n---\nredis port\n", encoding="utf-8")
    script = ("import sys; from vaultmem import Vault; from vaultmem.index import Filters\n"
              "from vaultmem.analysis import query_tokens\n"
              "v = Vault(sys.argv[1]); v.refresh_index()\n"
              "print(len(v.index.search(query_tokens('redis'), Filters(), 10**9)))\n")
    r = subprocess.run([sys.executable, "-c", script, str(v.root)], capture_output=True, text=True,
                       env={**os.environ, "VAULTMEM_INDEX_ENGINE": engine}, timeout=SAFETY_NET)
    assert r.returncode == 0 and r.stdout.strip() == "1", (r.returncode, r.stderr[-300:])


def test_mcp_search_memory_with_a_billion_hits_is_a_tool_error_and_the_server_answers_the_next_call(tv, tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem", "mcp", "--vault", str(tv.root)],
                                   env={**os.environ, **TANTIVY})

    async def main():
        from mcp.client.stdio import stdio_client

        with (tmp_path / "stderr.txt").open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as c:
                bad = await c.call_tool("search_memory", {"query": "redis", "limit": HUGE})
                tail = await c.call_tool("log_tail", {"n": HUGE})
                brief = await c.call_tool("brief", {"agent": "orch", "task": "redis", "tokens": 10**12})
                after = await c.call_tool("search_memory", {"query": "redis", "limit": 2})
                return bad, tail, brief, after

    bad, tail, brief, after = anyio.run(main)
    assert bad.is_error and text_of(bad) == "error: limit: is 1000000000; it must be 1–1,000 hits"
    assert bad.structured_content["error"]["field"] == "limit"
    assert tail.is_error and text_of(tail) == "error: n: is 1000000000; it must be 1–10,000 entries"
    assert brief.is_error and brief.structured_content["error"]["field"] == "tokens"
    assert not after.is_error and len(after.structured_content["hits"]) == 2


# -- point 7: huge arguments ---------------------------------------------------------------------


def test_a_query_or_task_larger_than_a_note_may_be_is_refused_naming_the_field(tv):
    big = "redis " * (limits.MAX_TEXT_BYTES // 6 + 1)
    for call, field in [(lambda: tv.search(big), "query"), (lambda: tv.brief("orch", big), "task")]:
        with pytest.raises(BadInput) as e:
            call()
        assert e.value.field == field and "262,144 bytes" in e.value.message
    under = "r" * (limits.MAX_TEXT_BYTES - 2) + "é"  # é: two bytes in UTF-8 — 262,144 bytes, the cap
    assert limits.check_text("query", under) is under
    with pytest.raises(BadInput):
        limits.check_text("query", under + "é")


def test_the_text_cap_is_the_cap_of_a_memory_note():
    from vaultmem.config import MAX_NOTE_BYTES

    assert limits.MAX_TEXT_BYTES == MAX_NOTE_BYTES


def test_mcp_refuses_a_10_mb_query_and_task_at_once_and_never_echoes_a_query_whole(tv):
    server = VaultServer(tv)
    ten_mb = "redis port " * (1024 * 1024)
    long_query = "redis " + "x" * 5000

    async def main():
        async with Client(server) as c:
            with pytest.raises(MCPError) as e:
                await c.get_prompt("orchestrate", {"role": "cache", "task": ten_mb})
            assert e.value.error.code == -32602 and str(e.value).startswith("task: the task is 11,264.0 KB")
            return [await c.call_tool("search_memory", {"query": ten_mb}),
                    await c.call_tool("brief", {"agent": "orch", "task": ten_mb}),
                    await c.call_tool("dispatch", {"role": "cache", "task": ten_mb}),
                    await c.call_tool("delegate", {"role": "cache", "task": ten_mb}),
                    await c.call_tool("search_memory", {"query": long_query})]

    *refused, echo = anyio.run(main)
    for r, field in zip(refused, ["query", "task", "task", "task"]):
        assert r.is_error and r.structured_content["error"]["field"] == field, text_of(r)[:300]
        assert "262,144 bytes" in text_of(r) and len(text_of(r)) < 500
    assert not (tv.root / "agents" / "cache.md").exists()
    data = echo.structured_content
    assert not echo.is_error and len(data["query"]) == limits.ECHO_CHARS and data["query"].endswith("…")
    assert long_query not in json.dumps(data) and long_query not in text_of(echo)


# -- point 6: lines the MCP server cannot use ------------------------------------------------------


def test_mcp_answers_every_unusable_line_with_a_json_rpc_error_and_goes_on(tv):
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(tv.root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **TANTIVY})
    out, err = Lines(proc.stdout), Lines(proc.stderr)
    try:
        def send(message) -> None:
            proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
            proc.stdin.flush()

        def answer(n: int) -> dict:
            out.wait_count(n)
            return json.loads(out.lines[n - 1])

        deep = "[" * 300 + "]" * 300
        cases = [
            ("{not json", None, -32700),
            ("[" * 200_000, None, -32700),
            ("[1, 2]", None, -32600),
            ('{"jsonrpc": "2.0", "id": 5, "method": 3}', 5, -32600),
            ('{"jsonrpc": "1.0", "id": "a", "method": "ping"}', "a", -32600),
            ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": [1, 2]}', 7, -32602),
            ('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "search_memory", '
             '"arguments": {"query": ' + deep + '}}}', 8, -32602),
        ]
        for n, (line, rid, code) in enumerate(cases, 1):
            send(line)
            got = answer(n)
            assert got["jsonrpc"] == "2.0" and got["id"] == rid and got["error"]["code"] == code, (line[:60], got)
            assert len(got["error"]["message"]) < 300
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert answer(len(cases) + 1)["result"]["serverInfo"]["name"] == "vaultmem"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "search_memory" in [t["name"] for t in answer(len(cases) + 2)["result"]["tools"]]
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "search_memory", "arguments": {"query": "redis", "limit": 1}}})
        assert len(answer(len(cases) + 3)["result"]["structuredContent"]["hits"]) == 1
    finally:
        proc.stdin.close()
        proc.wait(SAFETY_NET)
    assert "Traceback" not in err.text()



INITIALIZE = {"jsonrpc": "2.0", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def mcp_process(vault: Vault) -> subprocess.Popen:
    """``vaultmem mcp`` on ``vault`` (tantivy), its three pipes open, its handshake made
    (the initialize's id is 0)."""
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(vault.root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **TANTIVY})
    proc.stdin.write(json.dumps({**INITIALIZE, "id": 0}) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    return proc


def unread(fd: int) -> int:
    """How many bytes wait in the pipe ``fd`` is an end of."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def held_in_a_pipe_write(pid: int) -> bool | None:
    """Whether process ``pid``'s main thread sleeps in a write to a full pipe (Linux's
    ``/proc/PID/wchan``: ``anon_pipe_write``, ``pipe_write``, ``pipe_wait_writable``);
    None where the kernel does not say."""
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii") as f:
            where = f.read().strip()
    except (OSError, ValueError):
        return None
    return None if where in ("", "0") else "pipe" in where and "writ" in where


def stats_call(n: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": "get_stats", "arguments": {}}}) + "\n"


def test_mcp_stops_quietly_when_its_client_no_longer_reads_its_answers(tv):
    """A client that closed its end of stdout (it went away, stdin still open): the first
    answer that cannot be written stops the server as the end of stdin would — exit code
    0, one warning line, no traceback — instead of a task group's exception."""
    proc = mcp_process(tv)
    err = Lines(proc.stderr)
    try:
        proc.stdout.close()
        proc.stdin.write(stats_call(1) + stats_call(2))
        proc.stdin.flush()
        assert proc.wait(SAFETY_NET) == 0  # stdin is still open: the server stopped by itself
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(OSError):
            proc.stdin.close()
    assert "closed its end of the wire" in err.text() and "Traceback" not in err.text(), err.text()[-2000:]


def test_mcp_answers_the_calls_a_client_wrote_before_it_closed_stdin(tv):
    """A client (a script) writes its requests and closes stdin at once: every call read
    is answered before the server stops — the SDK alone cancels what is still running
    when its input ends, and the last answers were lost."""
    lines = [{**INITIALIZE, "id": 1}, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": args}}
              for n, (name, args) in enumerate([("search_memory", {"query": "redis"}), ("get_stats", {}),
                                                ("brief", {"agent": "ops", "task": "redis port"})], 2)]
    proc = subprocess.run([sys.executable, "-m", "vaultmem", "mcp", "--vault", str(tv.root)],
                          input="".join(json.dumps(x) + "\n" for x in lines), capture_output=True, text=True,
                          env={**os.environ, **TANTIVY}, timeout=SAFETY_NET)
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4], proc.stderr[-2000:]
    assert all("result" in answers[n] and not answers[n]["result"].get("isError") for n in (2, 3, 4)), answers
    assert proc.returncode == 0 and "Traceback" not in proc.stderr


def signal_waits(pid: int, signum: int) -> bool:
    """Whether ``signum`` waits to be taken by process ``pid`` or one of its threads
    (Linux's ``ShdPnd`` and ``SigPnd`` masks in ``/proc``); False where they cannot be read."""
    bit = 1 << (signum - 1)
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # not Linux, or the process has ended
        return False
    for path in (f"/proc/{pid}/status", *(f"/proc/{pid}/task/{t}/status" for t in tasks)):
        try:
            with open(path, encoding="ascii") as f:
                masks = [int(line.split()[1], 16) for line in f if line.startswith(("ShdPnd:", "SigPnd:"))]
        except (OSError, ValueError, IndexError):
            continue
        if any(m & bit for m in masks):
            return True
    return False


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _to_another_thread(pid: int, signum: int) -> None:
    """``signum`` to a thread of process ``pid`` other than its main thread (Linux's
    tgkill): where the kernel may hand a signal sent to the process. The first such thread
    still running takes it."""
    import ctypes
    import errno

    for tid in sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid):
        if _libc().tgkill(pid, tid, signum) == 0:
            return
        if ctypes.get_errno() != errno.ESRCH:  # (a thread that ended meanwhile: the next one)
            raise OSError(ctypes.get_errno(), "tgkill")
    raise AssertionError("the server has no thread besides its main one")


@pytest.mark.parametrize("stdin,to", [("open", "process"), ("closed", "process"), ("open", "thread")])
def test_a_second_signal_stops_an_mcp_server_whose_client_reads_no_answers(tv, stdin, to):
    """A client that stopped reading its answers but keeps the pipe open holds the server
    in a write: the first SIGTERM asks it to stop once the calls read are answered (it
    says so: calls are waiting), a second stops it at once, with a line that says the
    call was cut short — also when the kernel hands both signals to a thread other than
    the main one (held in the write, where Python would run their handler)."""
    import signal

    if to == "thread" and not (sys.platform.startswith("linux") and hasattr(_libc(), "tgkill")):
        pytest.skip("a signal to one thread of another process: Linux's tgkill")

    proc = mcp_process(tv)
    err = Lines(proc.stderr)
    try:
        proc.stdin.write(stats_call(1))
        proc.stdin.flush()
        answer = proc.stdout.readline()
        assert json.loads(answer)["id"] == 1  # the server itself answers: the vault is open
        # twice the answers the pipe holds (whatever its size), none of them read: the
        # server is held in a write with calls waiting once the pipe is full — each of its
        # pages then holds all but less than one answer (an answer goes whole into a page)
        out, size = proc.stdout.fileno(), len(answer.encode()) + 4  # (ids of up to 4 more digits)
        capacity = fcntl.fcntl(out, fcntl.F_GETPIPE_SZ)
        proc.stdin.write("".join(stats_call(n) for n in range(2, 2 * capacity // size + 12)))
        proc.stdin.flush()
        full = capacity - max(1, capacity // os.sysconf("SC_PAGE_SIZE")) * size

        def held() -> bool:  # where Linux says where the server sleeps, that; else the pipe's fill
            said = held_in_a_pipe_write(proc.pid)
            return said if said is not None else unread(out) >= full

        wait_until(held, what="the server held in a write of its answers")
        if stdin == "closed":  # its input ended too: the server would stop, but for the write
            proc.stdin.close()
        send = (lambda sig: _to_another_thread(proc.pid, sig)) if to == "thread" else proc.send_signal
        send(signal.SIGTERM)
        # taken before the second is sent: a signal sent while the same one still waits to
        # be taken is one signal (and with stdin closed, the line below may come first)
        wait_until(lambda: not signal_waits(proc.pid, signal.SIGTERM), what="the first SIGTERM taken")
        err.wait_for(lambda line: "SIGINT or SIGTERM twice stops it at once" in line)
        send(signal.SIGTERM)
        assert proc.wait(SAFETY_NET) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(SAFETY_NET)
        with contextlib.suppress(OSError):
            proc.stdin.close()
    assert "cut short" in err.text() and "Traceback" not in err.text()

# -- point 12: CURRENT that is not a file; search --help -----------------------------------------


@pytest.mark.parametrize("shape,engine", [("folder", "tantivy"), ("folder", "whoosh"), ("fifo", "tantivy"),
                                          ("link", "whoosh")])
def test_a_current_that_is_not_a_file_is_rebuilt(tmp_path, engine, shape):
    v, _ = Vault.init(tmp_path / "v", lang="en", orchestrator="orch")
    env = {"VAULTMEM_INDEX_ENGINE": engine}
    (v.root / "memories" / "a.md").write_text("---\nname: a\ntype: fact\n---\nredis port\n", encoding="utf-8")
    assert vaultmem_in_process("--vault", v.root, "index", env=env).returncode == 0
    current = v.root / ".vaultmem" / "index" / "CURRENT"
    gen = current.read_text().strip()
    current.unlink()
    if shape == "folder":
        current.mkdir()
        (current / "x").write_text("x")
    elif shape == "fifo":
        os.mkfifo(current)  # opened for reading, it would wait for a writer forever
    else:
        current.symlink_to(gen)
    run = run_vaultmem if shape == "fifo" else vaultmem_in_process  # a process: its timeout guards a FIFO's read
    for _ in range(2):  # rebuilt once, then used as it is
        r = run("--vault", v.root, "search", "redis", "--json", env=env)
        assert r.returncode == 0, r.stderr
        assert [h["id"] for h in json.loads(r.stdout)["hits"]] == ["memories/a.md"]
    assert current.is_file() and not current.is_symlink() and current.read_text().startswith("gen-")


def test_search_help_keeps_its_syntax_table_and_examples_one_row_a_line():
    r = vaultmem_in_process("search", "--help", env={"COLUMNS": "160", "TERMINAL_WIDTH": "160"})
    assert r.returncode == 0, r.stderr
    lines = [ln.strip(" │") for ln in r.stdout.splitlines()]
    starts = ['"exact phrase"   its words in a row', '-word, -"a b"    leave out what holds it',
              "a OR b           one of them must be there", "prefix*          words beginning with it",
              "Examples:", "vaultmem search 端口 --agent 后端架构", "vaultmem search \"login 500\" --journal"]
    for start in starts:
        assert any(ln.startswith(start) for ln in lines), (start, r.stdout)
    assert "\b" not in r.stdout
    # the prose above the table still flows as one paragraph
    assert any(ln.startswith("Each role-page entry is its own hit. Plain words are ranked and any may match;")
               for ln in lines), r.stdout


def test_log_tail_and_history_refuse_a_huge_count_as_the_mcp_server_does(tv):
    for args in (["log", "tail", "-n", str(HUGE)], ["history", "orch", "-n", str(HUGE)]):
        r = vaultmem_in_process("--vault", tv.root, *args, env=TANTIVY)
        assert r.returncode == 2 and r.stderr == "error: -n: is 1000000000; it must be 1–10,000 entries\n", r.stderr


def test_a_langgraph_store_search_far_down_the_list_asks_within_the_bounds(tv):
    from vaultmem.adapters.langgraph_store import VaultStore

    store = VaultStore(tv.root, agent="orch")
    assert store.search(("memories",), query="redis", limit=500, offset=400) == []  # was: BadInput for limit
    assert len(store.search(("memories",), query="redis", limit=5)) == 3


@pytest.mark.parametrize("engine", ["whoosh", "tantivy"])
def test_a_tie_larger_than_an_engine_is_ever_asked_for_ends(tmp_path, engine):
    """Entries of one shape tie for the last place; when the tie is larger than the most an
    engine is asked for (limits.ENGINE_MAX_HITS, lowered here to 20 for 61 tied entries),
    the search must still end (it asked again forever: a hung MCP server on a big page)."""
    v, _ = Vault.init(tmp_path / "v", lang="en", orchestrator="orch")
    root = v.root
    v.pages.ensure("kafka", v.actor("orch"))
    path = root / "agents" / "kafka.md"
    text = path.read_text(encoding="utf-8")
    lines = "".join(f"- 2026-12-01 | kafka entry ^m-{i:06x}\n" for i in range(61))
    marker = "## Working memory\n"
    assert marker in text
    path.write_text(text.replace(marker, marker + lines, 1), encoding="utf-8")
    script = (f"import vaultmem.limits as L; L.ENGINE_MAX_HITS = 20\n"
              f"from vaultmem import Vault\n"
              f"hits = Vault({str(root)!r}).search('kafka entry', limit=10)\n"
              f"print(len(hits))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "VAULTMEM_INDEX_ENGINE": engine})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "10"


def test_json_a_caller_sends_never_carries_a_lone_surrogate():
    """A lone surrogate escaped in JSON (half an emoji, as JavaScript cuts one) is no text:
    no note, commit or index can hold it. load_json turns each into U+FFFD, keys too, and
    keeps the pairs that make an emoji; JSON without one is read as json reads it."""
    got = limits.load_json('{"a": "x\\udcff y", "\\ud800k": ["\\ud83d\\ude00 ok", 1, {"b": "\\ud83d"}], "c": null}')
    assert got == {"a": "x\ufffd y", "\ufffdk": ["\U0001f600 ok", 1, {"b": "\ufffd"}], "c": None}
    plain = '{"a": "\\u4e2d\\u6587 \\u00e9", "b": [1.5, true]}'
    assert limits.load_json(plain) == json.loads(plain)
