"""Docs that cannot rot: every command is documented, and the README's example runs."""

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import typer

from vaultmem.adapters.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _commands(group, prefix="vaultmem"):
    """Every command's full name, through click's own interface (the top-level group
    builds its commands lazily, so ``.commands`` alone is not all of them)."""
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        full = f"{prefix} {name}"
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, full)
        else:
            yield full


def _command(group, parts):
    for p in parts:
        group = group.get_command(click.Context(group), p)
    return group


def test_every_command_is_documented_in_docs_cli():
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^### `(vaultmem [^`]+)`", doc, re.M))
    commands = set(_commands(typer.main.get_command(app)))
    assert commands - documented == set(), "undocumented commands"
    assert documented - commands == set(), "docs describe commands that do not exist"


def test_every_command_has_help_text():
    group = typer.main.get_command(app)
    for full in _commands(group):
        cmd = _command(group, full.split()[1:])
        assert (cmd.help or "").strip(), f"{full} has no help"


def test_readme_quickstart_runs(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash examples/quickstart.sh" in readme
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VAULTMEM_AGENT", None)
    r = subprocess.run(["bash", str(ROOT / "examples" / "quickstart.sh"), str(tmp_path / "demo")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "发现Dashboard组件存在useEffect清理函数缺失问题" in r.stdout
    assert "[[memories/后端端口固定8080|后端端口固定8080]] (fact)" in r.stdout
    assert "lee: page: create agents/前端审查.md on first dispatch" in r.stdout
    assert "后端**端口**固定8080" in r.stdout  # search
    assert "[记忆简报 - 前端审查]" in r.stdout and "~~~~memory" in r.stdout  # the brief
