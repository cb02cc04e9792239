"""The hooks' warm path (vaultmem/adapters/warm.py): a real ``vaultmem mcp`` process listens
on its vault's socket, and real hook processes — as Claude Code runs them — are answered
by it. A hook that ran warm never imports the vault facade itself; one whose server is gone,
busy or slow runs cold, and none runs twice."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import git, wait_until
from test_hooks_claude import MAIN, REPORT, payload, user, write_transcript

from vaultmem import Vault
from vaultmem.adapters import claude, warm

pytestmark = pytest.mark.skipif(not warm.SUPPORTED, reason="no Unix sockets with peer credentials here")


@pytest.fixture(autouse=True)
def _claude_config(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))


@pytest.fixture
def project(tmp_path):
    v, _ = Vault.init(tmp_path / "proj", lang="en", orchestrator="orch")
    v.notes.remember("The payment service retries a failed charge three times", v.actor(None), "fact")
    v.set_config("review.auto_harvest", True, v.actor(None))
    return Vault.open(v.root), write_transcript(tmp_path / "session.jsonl", MAIN)


def env_for(root: Path) -> dict:
    return {**os.environ, "CLAUDE_PROJECT_DIR": str(root)}


@pytest.fixture
def server(project):
    """``vaultmem mcp`` for the project's vault, as Claude Code starts it (its stdin held
    open), once its socket is there; stopped as Claude Code stops it (end of input)."""
    v, _ = project
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env_for(v.root), cwd=v.root)
    try:
        wait_until(lambda: warm.sockets(v.root) or proc.poll() is not None, what="the server's socket")
        assert proc.poll() is None, proc.stderr.read()
        yield proc
    finally:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(timeout=60)


def hook(event: str, data: str, root: Path, *args: str, cwd: Path | None = None
         ) -> tuple[subprocess.CompletedProcess, set[str]]:
    """The real hook command in a real process; what it printed, and which modules it
    imported (``-X importtime``): a hook answered warm never imports the vault facade."""
    cp = subprocess.run([sys.executable, "-X", "importtime", "-m", "vaultmem", "hook", "claude", event, *args],
                        input=data, capture_output=True, text=True, env=env_for(root), cwd=cwd or root, timeout=120)
    imported = {line.split("|")[-1].strip() for line in cp.stderr.splitlines() if line.startswith("import time:")}
    cp.stderr = "".join(line + "\n" for line in cp.stderr.splitlines() if not line.startswith("import time:"))
    return cp, imported


def context(out: str, event: str) -> str:
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == event
    return data["hookSpecificOutput"]["additionalContext"]


def test_a_session_through_a_warm_server(project, server, tmp_path):
    v, transcript = project
    root = v.root
    sub = write_transcript(tmp_path / "agent-a1.jsonl", [user("Review payments.py for SQL injection")])
    common = {"transcript_path": str(transcript), "cwd": str(root / "src")}

    r, imported = hook("SessionStart", payload("SessionStart", source="startup", **common), root)
    assert (r.returncode, r.stderr) == (0, "")
    assert "vaultmem.vault" not in imported and "vaultmem.adapters.warm" in imported  # answered by the server
    text = context(r.stdout, "SessionStart")
    assert "Memory brief — orch" in text and "payment service retries" in text

    r, imported = hook("SubagentStart", payload("SubagentStart", agent_id="a1", agent_type="code-reviewer", **common),
                       root)
    assert (r.returncode, r.stderr) == (0, "") and "vaultmem.vault" not in imported
    assert "Memory brief — code-reviewer" in context(r.stdout, "SubagentStart")
    assert (root / "agents/code-reviewer.md").is_file()
    pending = v.lifecycle.delegations(role="code-reviewer", status="pending")
    assert [d["task"] for d in pending] == ["Review payments.py for SQL injection"]  # once: never run twice

    r, imported = hook("SubagentStop", payload("SubagentStop", agent_id="a1", agent_type="code-reviewer",
                                               agent_transcript_path=str(sub), last_assistant_message=REPORT,
                                               stop_hook_active=False, **common), root)
    assert (r.returncode, r.stderr) == (0, "") and "vaultmem.vault" not in imported
    assert "charge() built its query from user input" in (root / "agents/code-reviewer.md").read_text(encoding="utf-8")
    assert git(root, "log", "-1", "--format=%an|%s").startswith("orch|harvest: ")

    r, imported = hook("PreCompact", payload("PreCompact", trigger="auto", custom_instructions="keep the review",
                                             **common), root)
    assert (r.returncode, r.stderr) == (0, "") and "vaultmem.vault" not in imported
    assert "keep the review" in v.shared.checkpoint("orch")["text"]

    stop = payload("Stop", stop_hook_active=False, last_assistant_message=MAIN[-1]["message"]["content"][0]["text"],
                   **common)
    r, imported = hook("Stop", stop, root)
    assert (r.returncode, r.stderr) == (0, "") and "vaultmem.vault" not in imported
    assert len(v.inbox.items("pending")) == 4
    head = git(root, "rev-parse", "HEAD")
    r, _ = hook("Stop", stop, root)  # the same facts are not filed twice
    assert (r.returncode, r.stderr) == (0, "") and git(root, "rev-parse", "HEAD") == head

    # a payload the hook refuses is refused warm as cold: one line, exit 0, nothing written
    bad = payload("Stop", stop_hook_active=False, transcript_path="/etc/passwd", cwd=str(root))
    r, imported = hook("Stop", bad, root)
    assert r.returncode == 0 and r.stderr.count("\n") == 1 and "transcript_path" in r.stderr
    assert git(root, "rev-parse", "HEAD") == head


def test_the_socket_is_the_users_own_and_goes_with_its_server(project, server):
    v, _ = project
    (path,) = warm.sockets(v.root)
    assert path.name == f"{server.pid}.sock"
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700 and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert "warm" not in git(v.root, "status", "--porcelain")  # per-machine state: never committed
    server.stdin.close()  # Claude Code ends the session
    assert server.wait(timeout=60) == 0
    assert not path.exists()


def test_a_hook_whose_server_was_killed_runs_cold(project, server):
    v, transcript = project
    (path,) = warm.sockets(v.root)
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=60)
    assert path.exists()  # a killed server leaves its socket behind
    r, imported = hook("SessionStart", payload("SessionStart", source="startup", transcript_path=str(transcript),
                                               cwd=str(v.root)), v.root)
    assert (r.returncode, r.stderr) == (0, "") and "vaultmem.vault" in imported  # cold, and as good
    assert "payment service retries" in context(r.stdout, "SessionStart")
    assert not path.exists()  # the left-over socket is cleared


def test_only_a_socket_of_the_users_own_is_asked(tmp_path):
    root = tmp_path / "vault"
    folder = root / warm.WARM_DIR
    folder.mkdir(parents=True, mode=0o700)
    (folder / "1.sock").write_text("not a socket")
    elsewhere = tmp_path / "elsewhere.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(elsewhere))
    try:
        (folder / "2.sock").symlink_to(elsewhere)  # a link to someone's socket: never followed
        assert warm.sockets(root) == []
        assert warm.ask(root, {"event": "SessionStart"}) is None
    finally:
        listener.close()
    os.chmod(folder, 0o755)
    folder.rename(tmp_path / "moved")
    (root / warm.WARM_DIR).symlink_to(tmp_path / "moved", target_is_directory=True)
    assert warm.sockets(root) == []  # the folder itself a link: nothing in it is asked


def start_server(root: Path, handler) -> warm.WarmServer:
    server = warm.WarmServer(root, handler)
    assert server.start() is None
    return server


def test_a_hook_finds_the_socket_only_once_it_is_the_users_alone_and_listening(tmp_path, monkeypatch):
    """The socket is made under another name and moved into place: a hook looking while
    the server starts finds nothing, or a socket of mode 0600 that accepts — never one
    that others could open or that refuses it (a hook then ran cold for nothing)."""
    root = tmp_path / "vault"
    root.mkdir()
    looked: list = []
    chmod, listen = os.chmod, socket.socket.listen

    def look() -> None:  # what a hook would find at this moment
        looked.append([(p.name, stat.S_IMODE(os.lstat(p).st_mode)) for p in warm.sockets(root)])

    def chmod_looking(path, mode, *a, **k):
        look()
        chmod(path, mode, *a, **k)
        look()

    def listen_looking(self, *a):
        look()
        return listen(self, *a)

    monkeypatch.setattr(os, "chmod", chmod_looking)
    monkeypatch.setattr(socket.socket, "listen", listen_looking)
    folder = root / warm.WARM_DIR
    folder.mkdir(parents=True, mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a server of this pid before, killed
    with monkeypatch.context() as m:
        m.chdir(folder)  # a short address, however deep the test's folder
        stale.bind(f".{os.getpid()}.sock.new")
    stale.close()
    server = start_server(root, lambda request, ready: {"stdout": "ok", "stderr": [], "code": 0} if ready() else {})
    try:
        assert looked and all(found == [] for found in looked), looked
        assert [(p.name, stat.S_IMODE(os.lstat(p).st_mode)) for p in warm.sockets(root)] == \
            [(f"{os.getpid()}.sock", 0o600)]
        assert sorted(os.listdir(folder)) == [f"{os.getpid()}.sock"]  # the stale one is gone
        assert warm.ask(root, {"event": "Stop"}) == {"stdout": "ok", "stderr": [], "code": 0}
    finally:
        server.stop()
    assert os.listdir(folder) == []


def test_a_hook_not_answered_ready_in_time_runs_cold_and_the_server_never_acts(tmp_path):
    """The two-step start: a server that gets its lock only after the hook gave up finds no
    "go" and does nothing — the cold hook is the only one that acts."""
    root = tmp_path / "vault"
    root.mkdir()
    gave_up, finished = threading.Event(), threading.Event()
    acted = []

    def handler(request, ready):
        gave_up.wait(timeout=60)  # busy with a tool call until the hook has gone cold
        if ready():
            acted.append(request)
        finished.set()
        raise warm.Declined("the hook runs cold")

    server = start_server(root, handler)
    try:
        assert warm.ask(root, {"event": "Stop"}, ready_wait=0.2) is None
        gave_up.set()
        assert finished.wait(timeout=60)
        assert acted == []
    finally:
        server.stop()


def test_a_busy_or_declining_server_leaves_the_hook_to_the_cold_path(tmp_path):
    root = tmp_path / "vault"
    root.mkdir()

    def handler(request, ready):
        raise warm.Declined("busy")

    server = start_server(root, handler)
    try:
        assert warm.ask(root, {"event": "Stop"}) is None
    finally:
        server.stop()


def test_a_vault_deep_in_the_file_system_still_has_its_warm_path(tmp_path):
    root = tmp_path.joinpath(*["a-rather-long-folder-name"] * 5, "vault")  # past AF_UNIX's 108 bytes
    root.mkdir(parents=True)
    assert len(str(root / warm.WARM_DIR / "123456.sock")) > 108

    def handler(request, ready):
        assert ready()
        return {"stdout": f"answered {request['event']}", "stderr": ["one line"], "code": 0}

    server = start_server(root, handler)
    try:
        assert warm.ask(root, {"event": "SessionStart"}) == {"stdout": "answered SessionStart",
                                                             "stderr": ["one line"], "code": 0}
    finally:
        server.stop()
    assert warm.sockets(root) == []


def test_a_warm_hook_reads_the_hooks_environment_not_the_servers(project, monkeypatch):
    """In the server's process, who acts and which project folder is asked come from what
    the hook was started with."""
    v, transcript = project
    monkeypatch.setenv("VAULTMEM_AGENT", "someone-else")
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    import contextlib

    @contextlib.contextmanager
    def opener(root):
        assert root == v.root
        yield v

    request = {"event": "SessionStart", "vault": None, "as": None,
               "env": {"CLAUDE_PROJECT_DIR": str(v.root), "CLAUDE_CONFIG_DIR": os.environ["CLAUDE_CONFIG_DIR"]},
               "payload": payload("SessionStart", source="startup", transcript_path=str(transcript), cwd="/")}
    got = claude.answer(request, opener)
    assert got["code"] == 0 and got["stderr"] == []
    assert "Memory brief — orch" in context(got["stdout"], "SessionStart")  # not someone-else's


def test_a_relative_vault_option_means_the_hooks_folder_not_the_servers(project, server, tmp_path):
    v, transcript = project
    r, imported = hook("SessionStart", payload("SessionStart", source="startup", transcript_path=str(transcript),
                                               cwd=str(tmp_path)), v.root, "--vault", "proj", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (0, "") and "vaultmem.vault" not in imported
    assert "payment service retries" in context(r.stdout, "SessionStart")


def test_a_server_gone_after_go_is_never_followed_by_a_second_run(tmp_path):
    """The server may have acted once the hook said "go": when it ends before answering,
    the hook says so in one line and does not run the event again."""
    root = tmp_path / "vault"
    folder = root / warm.WARM_DIR
    folder.mkdir(parents=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "1.sock"))
    listener.listen(1)
    heard = []

    def dying_server():
        conn, _ = listener.accept()
        with conn:
            reader = conn.makefile("rb")
            heard.append(reader.readline())
            conn.sendall(b'{"ready": true}\n')
            heard.append(reader.readline())  # "go": then it dies mid-hook

    t = threading.Thread(target=dying_server)
    t.start()
    try:
        got = warm.ask(root, {"event": "Stop"})
    finally:
        t.join(timeout=60)
        listener.close()
    assert json.loads(heard[1]) == {"go": True}
    assert got is not None and got["stdout"] == "" and got["code"] == 0
    assert len(got["stderr"]) == 1 and "not run again" in got["stderr"][0]


def test_a_server_busy_with_a_tool_call_leaves_the_hook_to_run_cold(project):
    """The server's lock is held by a tool call for longer than a hook waits for it: the
    hook is declined before anything is done (then it runs cold, as if no server were up)."""
    from vaultmem.adapters.mcp import VaultServer

    v, transcript = project
    server = VaultServer(Vault.open(v.root))
    assert server.listen_for_hooks() is None
    busy, release = threading.Event(), threading.Event()

    def long_tool_call(vault):
        busy.set()
        release.wait(timeout=120)

    caller = threading.Thread(target=server.run_call, args=(long_tool_call,))
    caller.start()
    try:
        assert busy.wait(timeout=60)
        request = {"event": "SubagentStart", "vault": str(v.root), "as": None,
                   "env": {"CLAUDE_PROJECT_DIR": str(v.root), "CLAUDE_CONFIG_DIR": os.environ["CLAUDE_CONFIG_DIR"]},
                   "payload": payload("SubagentStart", agent_id="a9", agent_type="code-reviewer",
                                      transcript_path=str(transcript), cwd=str(v.root))}
        assert warm.ask(v.root, request) is None  # declined: busy
        assert not (v.root / "agents" / "code-reviewer.md").exists()  # nothing was done
    finally:
        release.set()
        caller.join(timeout=120)
        server.close()
    assert warm.sockets(v.root) == []
