"""Fixtures for the end-to-end suite: a real Claude Code, driven offline against the
stand-in Messages API (standin.py), with vaultmem's hooks and MCP server (docs/e2e.md).

Which Claude Code: ``$VAULTMEM_E2E_CLAUDE``, else ``.e2e/node_modules/.bin/claude`` at the
repository's root (where ``.ci/run`` installs it from npm), else ``claude`` on ``PATH``.
Without one the suite is skipped, saying why — unless ``VAULTMEM_E2E_REQUIRED=1``
(``.ci/run`` sets it once the install worked): then a missing Claude Code fails.

Each scenario (a few Claude Code sessions against one vault) runs once per test run, even
on two xdist workers: the first worker to need it runs it under a file lock and writes what
it saw (every request the stand-in got, every stream-json event, the paths) to a JSON file;
a worker that needs it later reads that file. The tests only look at the result.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from conftest import wait_until

from .standin import StandIn

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "hooks" / "claude-code"
SESSION_TIMEOUT = 120.0  # a safety net for a hung session, not a budget
ORCHESTRATOR = "lee"
ROLE_AGENT = """---
name: reviewer
description: Reviews notes and changes it is given, read only, and reports.
---
You review what you are given and end with the lines Task:, Conclusion:, Output:, Decision:.
"""


def find_claude() -> str | None:
    named = os.environ.get("VAULTMEM_E2E_CLAUDE")
    if named:
        return named if os.access(named, os.X_OK) else None
    local = REPO / ".e2e" / "node_modules" / ".bin" / "claude"
    if os.access(local, os.X_OK):
        return str(local)
    return shutil.which("claude")


@pytest.fixture(scope="session")
def claude_bin() -> str:
    found = find_claude()
    if found:
        return found
    why = ("no Claude Code to drive: set VAULTMEM_E2E_CLAUDE, or install it with "
           "'npm install --prefix .e2e @anthropic-ai/claude-code@2' (as .ci/run does)")
    if os.environ.get("VAULTMEM_E2E_REQUIRED") == "1":
        pytest.fail(f"VAULTMEM_E2E_REQUIRED=1 but {why}", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session")
def standin():
    server = StandIn().start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory, worker_id) -> Path:
    """A folder all xdist workers of this run share (the base temp folder alone without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


def venv_bin() -> Path:
    """The folder of the vaultmem under test: beside the Python running the tests."""
    return Path(sys.executable).parent


def vaultmem_exe() -> Path:
    return venv_bin() / "vaultmem"


def bare_path() -> str:
    """``PATH`` with every folder holding a ``vaultmem`` left out (git, sh, python3 stay)."""
    dirs = [d for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if d and not os.access(os.path.join(d, "vaultmem"), os.X_OK)]
    return os.pathsep.join(dirs)


class Scenario:
    """One scenario's folders, its sessions and what the stand-in saw."""

    def __init__(self, root: Path, claude: str, standin: StandIn) -> None:
        self.root, self.claude, self.standin = root, claude, standin
        self.home, self.vault, self.project = root / "home", root / "vault", root / "project"
        self.sessions: list[dict] = []
        self.facts: dict = {}

    def setup(self, *, git_project: bool = False) -> None:
        self.home.mkdir(parents=True)
        self.project.mkdir()
        subprocess.run([str(vaultmem_exe()), "init", str(self.vault), "--lang", "en",
                        "--orchestrator", ORCHESTRATOR], check=True, capture_output=True, text=True)
        agents = self.project / ".claude" / "agents"
        agents.mkdir(parents=True)
        (agents / "reviewer.md").write_text(ROLE_AGENT)
        if git_project:
            subprocess.run(["git", "init", "-q", str(self.project)], check=True)

    def env(self, path: str, **extra: str) -> dict:
        env = {"HOME": str(self.home), "PATH": path, "TERM": "dumb", "LANG": "C.UTF-8",
               "ANTHROPIC_BASE_URL": self.standin.url, "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
               "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        env.update(extra)
        return env

    def run(self, name: str, args: list[str], env: dict, *, stream: bool = True) -> dict:
        """One Claude Code process, waited on; its stream-json events and the stand-in's
        requests made meanwhile are kept under ``name``."""
        mark = self.standin.mark()
        cmd = [self.claude, *(["--output-format", "stream-json", "--verbose", "--include-hook-events"]
                              if stream else []), *args]
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=self.project, env=env, capture_output=True, text=True,
                              timeout=SESSION_TIMEOUT, stdin=subprocess.DEVNULL)
        events = []
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
        session_id = next((e.get("session_id") for e in events if e.get("session_id")), None)
        record = {"name": name, "cmd": cmd, "returncode": proc.returncode, "stdout": proc.stdout[-20000:],
                  "stderr": proc.stderr[-5000:], "events": events, "session_id": session_id,
                  "requests": self.standin.since(mark), "seconds": round(time.monotonic() - started, 2)}
        self.sessions.append(record)
        return record

    def wait_filed(self, session_id: str) -> None:
        """Wait until SessionEnd's detached filer is done with ``session_id``: its spool file
        is gone and the journal holds the session."""
        spool = self.vault / ".vaultmem" / "local" / "claude" / "spool"

        def done() -> bool:
            pending = [p for p in spool.glob(f"*{session_id}*") if not p.name.endswith(".failed")] \
                if spool.is_dir() else []
            return not pending and session_id in git_log(self.vault)

        wait_until(done, timeout=60, interval=0.05, what=f"SessionEnd's filing of session {session_id}")

    def result(self) -> dict:
        return {"root": str(self.root), "home": str(self.home), "vault": str(self.vault),
                "project": str(self.project), "sessions": self.sessions, "facts": self.facts}


def git_log(vault: Path) -> str:
    return subprocess.run(["git", "-C", str(vault), "log", "--format=%s"], capture_output=True,
                          text=True).stdout


def run_once(shared: Path, name: str, build) -> dict:
    """``build()``'s result, computed by the first worker that asks and read by the others."""
    folder = shared / f"e2e-{name}"
    folder.mkdir(exist_ok=True)
    out = folder / "result.json"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker building it: wait for it
        if not out.exists():
            try:
                result = build(folder / "run")
            except Exception:  # kept for every test that reads it: each fails saying why
                result = {"error": traceback.format_exc()}
            out.write_text(json.dumps(result))
    result = json.loads(out.read_text())
    if "error" in result:
        pytest.fail(f"the e2e scenario {name!r} did not run:\n{result['error']}", pytrace=False)
    return result
