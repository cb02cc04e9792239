"""Shared fixtures: real vaults (from vault-template/) in real git repositories under tmp_path."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.adapters.cli import app

# Property tests: no per-example deadline, and no health check on how fast examples are
# generated — both measure the machine's load, not the code.
settings.register_profile("vaultmem", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("vaultmem")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No vault or agent leaks in from the environment; commands run in tmp_path."""
    monkeypatch.delenv("VAULTMEM_VAULT", raising=False)
    monkeypatch.delenv("VAULTMEM_AGENT", raising=False)
    monkeypatch.chdir(tmp_path)


ENGINES = ["whoosh", "tantivy"]


@pytest.fixture(params=ENGINES)
def both_engines(request, monkeypatch) -> str:
    """Run the test once per index engine (modules opt in with
    ``pytestmark = pytest.mark.usefixtures("both_engines")``); subprocesses inherit it."""
    monkeypatch.setenv("VAULTMEM_INDEX_ENGINE", request.param)
    return request.param


@pytest.fixture(scope="session")
def made_vaults(tmp_path_factory) -> dict:
    """The vaults made once in this process (see :func:`fresh_vault`, :func:`built_once`).
    The two the fixtures below copy are made here, before any test's own fixtures change
    the environment (a test's HOME, git's identity)."""
    made = {"dir": tmp_path_factory.mktemp("made-vaults")}
    for lang, orchestrator in (("zh", "lee"), ("en", "orch")):
        _made_by_init(made, lang, orchestrator)
    return made


def _copy(source: Path, root: Path) -> Vault:
    """A copy of the vault at ``source``: its files, git repository and index, without the
    per-machine state of ``.vaultmem/local/`` (caches, keys, notices given), as a clone has."""
    if root.exists():
        shutil.rmtree(root)
    local = source / ".vaultmem" / "local"
    shutil.copytree(source, root, symlinks=True, ignore=lambda folder, _names: ["local"]
                    if Path(folder) == local.parent else [])
    return Vault(root)


def fresh_vault(made: dict, root: Path, lang: str, orchestrator: str) -> Vault:
    """A new vault at ``root`` as ``Vault.init`` makes it. The first of each kind in a process
    is made by ``Vault.init``; later ones are copies of it (:func:`_copy`; git's paths are
    relative), which take a tenth of the time of init's template and git commands. Tests
    of ``init`` itself call it."""
    return _copy(_made_by_init(made, lang, orchestrator), root)


def _made_by_init(made: dict, lang: str, orchestrator: str) -> Path:
    key = (lang, orchestrator)
    if key not in made:
        made[key], _ = Vault.init(made["dir"] / f"{lang}-{orchestrator}", lang=lang, orchestrator=orchestrator)
    return made[key].root


def built_once(made: dict, key: tuple, root: Path, build, lang: str = "zh", orchestrator: str = "lee") -> Vault:
    """A vault at ``root`` holding what ``build(vault)`` writes into a fresh one: built by
    its own writes once a process for each ``key``, then copied (:func:`_copy`). The engine
    a test runs on (``VAULTMEM_INDEX_ENGINE``) is part of the key, for a build that indexes."""
    key = (*key, os.environ.get("VAULTMEM_INDEX_ENGINE"))
    if key not in made:
        source = fresh_vault(made, made["dir"] / f"built-{len(made)}", lang, orchestrator)
        build(source)
        made[key] = source
    return _copy(made[key].root, root)


@pytest.fixture
def vault(tmp_path, made_vaults) -> Vault:
    """A fresh Chinese-language vault whose orchestrator is 'lee'."""
    return fresh_vault(made_vaults, tmp_path / "vault", "zh", "lee")


@pytest.fixture
def en_vault(tmp_path, made_vaults) -> Vault:
    """A fresh English-language vault whose orchestrator is 'orch'."""
    return fresh_vault(made_vaults, tmp_path / "en-vault", "en", "orch")


class Cli:
    """Runs the real CLI in-process; ``.json()`` parses stdout."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, env: dict | None = None):
        result = self.runner.invoke(app, [str(a) for a in args], input=input, env=env)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result


@pytest.fixture
def cli() -> Cli:
    return Cli()


def run_vaultmem(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 60,
                 stdin: str | None = None):
    """Run ``python -m vaultmem`` as a real subprocess (``stdin``: text piped to it)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "vaultmem", *map(str, args)], cwd=cwd, env=full_env, input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def vaultmem_in_process(*args: str, cwd: Path | None = None, env: dict | None = None, stdin: str | None = None):
    """Run the command line as :func:`run_vaultmem` does, with the same answer (exit code,
    stdout, stderr), but in this process: for the many cases where what is checked is what a
    command says or does, not what a process boundary does. A process's own matters — its
    start-up, the walk-ahead child, signals, a terminal, a command that could hang, the
    hooks' entry point — stay with :func:`run_vaultmem`. An exception the command lets out
    fails the test as the traceback it would have printed."""
    from vaultmem.adapters.cli import main
    from vaultmem.walk import command_word

    argv = [str(a) for a in args]
    assert command_word(argv) != "hook", "a hook runs through its own entry point: use run_vaultmem"
    code = 0
    root_logger = logging.getLogger()
    kept = sys.argv, sys.excepthook, root_logger.handlers[:]
    try:
        sys.argv = ["vaultmem", *argv]
        # no handler on the root logger, as in a new process: a warning is written to stderr
        # (logging's last resort), not taken by pytest's log capture
        root_logger.handlers.clear()
        with contextlib.chdir(cwd or os.getcwd()), CliRunner().isolation(input=stdin, env=env) as (out, err, _), \
                warnings.catch_warnings():
            # and the interpreter's own warning filters and printing, not pytest's record
            warnings.resetwarnings()
            for action, category in (("default", DeprecationWarning), ("ignore", DeprecationWarning),
                                     ("ignore", PendingDeprecationWarning), ("ignore", ImportWarning),
                                     ("ignore", ResourceWarning)):
                warnings.filterwarnings(action, category=category, module="__main__" if action == "default" else "",
                                        append=True)
            warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
                warnings.formatwarning(message, category, filename, lineno, line))
            try:
                main(args=argv, prog_name="vaultmem")  # the program's name in usage lines: the installed command's
            except SystemExit as exc:  # as the interpreter ends a process: a text is printed, then 1
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
                code = 1 if exc.code is not None and not isinstance(exc.code, int) else exc.code or 0
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            said, warned = out.getvalue(), err.getvalue()
    finally:
        sys.argv, sys.excepthook, root_logger.handlers[:] = kept
    return subprocess.CompletedProcess(["vaultmem", *argv], code, said.decode("utf-8"), warned.decode("utf-8"))


def run_vaultmem_tty(*args: str, answers: str, env: dict | None = None, timeout: float = 60):
    """Run ``python -m vaultmem`` with a real pseudo-terminal as its standard input, as a
    person at a keyboard would: ``answers`` typed into it, then end of input (^D); its
    stdout and stderr are captured as :func:`run_vaultmem` captures them."""
    master, slave = os.openpty()
    full_env = {**os.environ, **(env or {})}
    try:
        proc = subprocess.Popen([sys.executable, "-m", "vaultmem", *map(str, args)], env=full_env, stdin=slave,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(slave)

    def drain() -> None:  # the terminal echoes what is typed: read it, so that nothing blocks
        try:
            while os.read(master, 4096):
                pass
        except OSError:  # the other side closed
            pass

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        os.write(master, answers.encode() + b"\x04")
        out, err = proc.communicate(timeout=timeout)
    finally:
        os.close(master)
    reader.join(timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "core.quotepath=off", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def out_json(result) -> dict:
    return json.loads(result.stdout)


def index_files(gen: Path) -> tuple[list[Path], list[Path]]:
    """(segment files, table-of-contents files) of an index generation, whichever engine
    built it — for tests that damage them."""
    if (gen / "tantivy").is_dir():
        folder = gen / "tantivy"
        segments = [p for p in folder.iterdir() if p.suffix in (".idx", ".term", ".store", ".pos", ".fast",
                                                               ".fieldnorm", ".del")]
        tocs = [folder / "meta.json"]
    else:
        segments, tocs = list(gen.glob("*.seg")), list(gen.glob("*.toc"))
    assert segments and tocs, f"no index files found in {gen}"
    return segments, tocs


# -- waiting on conditions, never on the clock ----------------------------------------------
# A busy machine makes everything slower, never different: tests wait for what they need
# to see (a file, a line of output, a lock taken), and the timeouts below are only safety
# nets for a test that would otherwise hang. They are generous on purpose.

SAFETY_NET = 120.0


def wait_until(condition, timeout: float = SAFETY_NET, interval: float = 0.01, what: str = ""):
    """Poll ``condition`` until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"still waiting after {timeout:g}s for {what or condition}")
        time.sleep(interval)


class Lines:
    """A subprocess's output read line by line in a thread, so that a test can wait for
    the line it needs (and nothing blocks on a full pipe meanwhile)."""

    def __init__(self, stream) -> None:
        self.lines: list[str] = []
        self.ended = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        try:
            for line in stream:
                with self._cond:
                    self.lines.append(line)
                    self._cond.notify_all()
        finally:
            with self._cond:
                self.ended = True
                self._cond.notify_all()

    def wait_for(self, match, timeout: float = SAFETY_NET) -> str:
        """The first line (from the start) that ``match`` accepts, once it has come."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    if match(line):
                        return line
                seen = len(self.lines)
                if self.ended:
                    raise AssertionError(f"the output ended without the line wanted: {''.join(self.lines)!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"still waiting after {timeout:g}s for a line: {''.join(self.lines)!r}")
                self._cond.wait(left)

    def wait_count(self, n: int, timeout: float = SAFETY_NET) -> None:
        """Wait until at least ``n`` lines have come."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.lines) >= n or self.ended, timeout):
                raise AssertionError(f"still waiting after {timeout:g}s for {n} lines, got {len(self.lines)}")
            assert len(self.lines) >= n, f"the output ended after {len(self.lines)} of {n} lines: {self.lines!r}"

    def text(self, timeout: float = SAFETY_NET) -> str:
        """Everything, once the stream has ended."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the output did not end"
        return "".join(self.lines)


def holds_flock(path: Path) -> bool:
    """Whether some process holds an exclusive ``flock`` on ``path`` (filelock's lock
    files, the live log). Probed without blocking; a probe that wins lets go at once."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a probe's lock
    return False


def kill_when(proc: subprocess.Popen, condition, timeout: float = SAFETY_NET) -> None:
    """SIGKILL ``proc`` at a moment when ``condition()`` holds. The process is stopped
    (SIGSTOP) before each look, so it cannot move past that moment before the kill lands."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"the process ended (status {proc.returncode}) before the moment came"
        os.kill(proc.pid, signal.SIGSTOP)
        _pid, status = os.waitpid(proc.pid, os.WUNTRACED)  # returns once it has stopped
        assert os.WIFSTOPPED(status), f"the process ended (wait status {status}) before the moment came"
        if condition():
            proc.kill()  # a stopped process dies of SIGKILL too
            proc.wait()
            return
        os.kill(proc.pid, signal.SIGCONT)
        assert time.monotonic() < deadline, f"{condition} never held in {timeout:g}s"
        time.sleep(0.005)


def kill_now(proc: subprocess.Popen) -> None:
    proc.kill()
    proc.wait()


def group_alive(pgid: int) -> bool:
    """Whether a process of process group ``pgid`` still runs (zombies do not count: an
    orphan's zombie waits for a parent that may never reap it)."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def until_ctime_moves(path: Path, before: os.stat_result) -> None:
    """Re-apply the times restored on ``path`` until its change time differs from
    ``before``'s. A same-size edit with its mtime restored (``touch -r``, ``rsync -t``) is
    told apart by the change time alone, and on a coarse clock the edit can land in the
    very tick the file was last written in."""
    while path.stat().st_ctime_ns == before.st_ctime_ns:
        time.sleep(0.001)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # sets the change time to now


# -- a small vault for the semantic channel's tests (tests/test_semantic*.py) -------------------
NOTES = {  # English and Chinese notes that share few words with the questions asked of them
    "kitten": "The kitten sleeps on the rug every afternoon.",
    "tax": "Quarterly tax filing is due at the end of March.",
    "database": "The backend database runs PostgreSQL 16 on port 5433.",
    "car": "Alice drives a red automobile to the office.",
    "猫咪": "家里的猫咪每天下午都在地毯上睡觉。",
    "发票": "季度税票要在三月底之前交给财务。",
}


def write_note(root: Path, slug: str, text: str, **meta) -> None:
    head = {"name": slug, "type": "fact", "importance": 0.5, "author_kind": "user", **meta}
    lines = "".join(f"{k}: {v}\n" for k, v in head.items())
    (root / "memories" / f"{slug}.md").write_text(f"---\n{lines}---\n{text}\n", encoding="utf-8")


def make_vault(root: Path, semantic: str = "auto", model: str | None = None) -> Vault:
    Vault.init(root, lang="en", orchestrator="lee")
    for slug, text in NOTES.items():
        write_note(root, slug, text)
    config = root / ".vaultmem" / "config.yaml"
    extra = f"search:\n  semantic: {semantic}\n" + (f"  model: {model}\n" if model else "")
    config.write_text(config.read_text(encoding="utf-8").replace("search:\n", extra, 1), encoding="utf-8")
    return Vault(root)


def load_benchmark(path: Path, name: str):
    """A benchmark script (benchmarks/…) imported as a module, for the tests that drive it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def hermes_provider(vault_root: Path, home: Path, monkeypatch, session: str, agent: str = "orch"):
    """The Hermes memory provider started on ``vault_root`` as Hermes starts it, acting as ``agent``."""
    from vaultmem.adapters.hermes import VaultmemProvider

    monkeypatch.setenv("VAULTMEM_VAULT", str(vault_root))
    monkeypatch.setenv("VAULTMEM_AGENT", agent)
    home.mkdir(exist_ok=True)
    provider = VaultmemProvider()
    provider.initialize(session, hermes_home=str(home), platform="cli", agent_context="primary")
    return provider


# A vaultmem command run as the launcher runs it, saying on stderr whether it took the
# walk started ahead of it (vaultmem.walk), how often it walked the vault itself, and
# whether it loaded GitPython.
WALK_PROBE = r"""
import sys
from vaultmem import walk
from vaultmem.index import store
real, walks, scan = walk.WalkAhead.take, [], store.scan
def take(self, *args, **kwargs):
    got = real(self, *args, **kwargs)
    print("ahead:", got is not None, file=sys.stderr)
    return got
walk.WalkAhead.take = take
store.scan = lambda *a, **k: walks.append(1) or scan(*a, **k)
sys.argv = ["vaultmem", *sys.argv[1:]]
from vaultmem.__main__ import main
try:
    main()
finally:
    print("walks:", len(walks), file=sys.stderr)
    print("GitPython:", "git" in sys.modules, file=sys.stderr)
"""
