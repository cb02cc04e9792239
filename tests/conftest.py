"""Shared fixtures: real vaults (from vault-template/) in real git repositories under tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.adapters.cli import app


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


@pytest.fixture
def vault(tmp_path) -> Vault:
    """A fresh Chinese-language vault whose orchestrator is 'lee'."""
    v, _ = Vault.init(tmp_path / "vault", lang="zh", orchestrator="lee")
    return v


@pytest.fixture
def en_vault(tmp_path) -> Vault:
    v, _ = Vault.init(tmp_path / "en-vault", lang="en", orchestrator="orch")
    return v


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
