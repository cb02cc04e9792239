"""The Claude Code plugin bundle (hooks/claude-code/), its launcher, and 'vaultmem install
claude' / 'vaultmem uninstall claude': merged into what is there, removed exactly."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, out_json, run_vaultmem

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "hooks" / "claude-code"
LAUNCHER = PLUGIN / "bin" / "vaultmem-launch"
EVENTS = ["SessionStart", "UserPromptSubmit", "SubagentStart", "SubagentStop", "PreCompact", "Stop", "SessionEnd"]
VAULTMEM = Path(sys.executable).parent / "vaultmem"  # this environment's script


def dumped(data) -> str:
    return json.dumps(data, indent=2) + "\n"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """$HOME in tmp: the user scope's files land here, never in the real home."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path, monkeypatch, home) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


# -- the bundle ------------------------------------------------------------------------------------
def test_the_plugin_bundle_declares_every_event_and_the_mcp_server():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "vaultmem" and manifest["version"]
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert sorted(hooks) == sorted(EVENTS)
    for event in EVENTS:
        [group] = hooks[event]
        [hook] = group["hooks"]
        assert hook["type"] == "command"
        assert "${CLAUDE_PLUGIN_ROOT}/bin/vaultmem-launch" in hook["command"] and hook["command"].endswith(f"hook {event}")
        assert 0 < hook["timeout"] <= 30
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] <= 1.5  # the host's budget for SessionEnd
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["vaultmem"]
    assert server["args"] == ["${CLAUDE_PLUGIN_ROOT}/bin/vaultmem-launch", "mcp", "--claude"]
    market = json.loads((REPO / "hooks" / ".claude-plugin" / "marketplace.json").read_text())
    assert market["plugins"][0]["source"] == "./claude-code"
    # git keeps the launcher and the git hook executable (a checkout can run them as they are)
    modes = {line.split("\t")[1]: line.split()[0] for line in git(REPO, "ls-files", "-s", "hooks").splitlines()}
    assert modes["hooks/claude-code/bin/vaultmem-launch"] == modes["hooks/git/pre-commit"] == "100755"


def launch(*args, env: dict, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", str(LAUNCHER), *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=120)


def test_the_launcher_fails_open_for_hooks_when_vaultmem_cannot_be_found(tmp_path):
    bare = tmp_path / "bin"  # a minimal PATH with neither vaultmem nor python3 on it
    bare.mkdir()
    env = {"PATH": str(bare), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    done = launch("hook", "SessionStart", env=env, stdin='{"hook_event_name": "SessionStart"}')
    assert done.returncode == 0 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "cannot find vaultmem" in done.stderr and "VAULTMEM_BIN" in done.stderr
    bad = launch("hook", "Stop", env={**env, "VAULTMEM_BIN": str(tmp_path / "gone")})
    assert bad.returncode == 0 and len(bad.stderr.splitlines()) == 1 and "VAULTMEM_BIN" in bad.stderr
    # the MCP server is no hook: a missing vaultmem is an error the host shows
    assert launch("mcp", env=env).returncode == 127


def test_the_launcher_runs_this_vaultmem_on_the_vault_it_is_given(tmp_path, en_vault, vault):
    env = {"PATH": "/usr/bin:/bin", "VAULTMEM_BIN": str(VAULTMEM), "CLAUDE_PROJECT_DIR": str(en_vault.root)}
    pages = launch("page", "list", "--json", env=env)
    assert pages.returncode == 0, pages.stderr
    assert json.loads(pages.stdout) == json.loads(run_vaultmem("page", "list", "--json", "--vault", en_vault.root).stdout)
    # $VAULTMEM_VAULT wins over the project folder
    other = launch("config", "show", "--json", env={**env, "VAULTMEM_VAULT": str(vault.root)})
    assert json.loads(other.stdout)["lang"] == "zh"
    # a hook always exits 0, whatever vaultmem answers (a bad event, an older vaultmem)
    hooked = launch("hook", "NoSuchEvent", env=env, stdin="{}")
    assert hooked.returncode == 0 and "NoSuchEvent" in hooked.stderr
    # a project that is a folder inside the vault: the vault above it is found, by a
    # command and by a hook
    project = en_vault.root / "wiki" / "app"
    project.mkdir(parents=True)
    inside = {**env, "CLAUDE_PROJECT_DIR": str(project)}
    shown = launch("config", "show", "--json", env=inside)
    assert shown.returncode == 0 and json.loads(shown.stdout)["lang"] == "en", shown.stderr
    payload = json.dumps({"session_id": "s1", "cwd": "/", "hook_event_name": "SessionStart", "source": "startup"})
    started = launch("hook", "SessionStart", env=inside, stdin=payload)
    assert started.returncode == 0 and started.stderr == ""
    assert "additionalContext" in json.loads(started.stdout)["hookSpecificOutput"]


def test_the_launchers_python_fallback_never_imports_from_the_project_folder(tmp_path, en_vault):
    """With only python3 on PATH, the launcher runs vaultmem from that Python — not a
    folder named vaultmem in the project (the vault), which python3 -c would put first."""
    bare = tmp_path / "bin"
    bare.mkdir()
    # a wrapper, not a symlink: a link to a virtualenv's python, run from another folder,
    # is the base interpreter (the venv is found next to the path it was started by)
    (bare / "python3").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    (bare / "python3").chmod(0o755)
    marker = tmp_path / "ran"
    (en_vault.root / "vaultmem").mkdir()
    (en_vault.root / "vaultmem" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = {"PATH": f"{bare}:/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(en_vault.root), "HOME": str(tmp_path)}
    shown = subprocess.run(["/bin/sh", str(LAUNCHER), "config", "show", "--json"], capture_output=True, text=True,
                           env=env, timeout=120, cwd=en_vault.root)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["lang"] == "en" and not marker.exists()


def test_the_installed_mcp_server_acts_as_the_sessions_agent_never_as_the_human(cli, project, en_vault):
    """Installed without --as, the server Claude Code starts (a real process over stdio,
    with no VAULTMEM_AGENT) acts as the hooks do — the orchestrator here: its remember
    waits in the inbox instead of becoming a note at once, authored by the human."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    assert cli("install", "claude", "--vault", en_vault.root).exit_code == 0
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["vaultmem"]
    env = {k: v for k, v in os.environ.items() if k not in ("VAULTMEM_AGENT", "VAULTMEM_VAULT")}
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env)

    async def main():
        async with Client(stdio_client(params)) as c:
            stats = await c.call_tool("get_stats", {})
            kept = await c.call_tool("remember", {"text": "From now on deploy to prod-eu-9", "type": "decision"})
            return stats.structured_content, kept.structured_content

    stats, kept = anyio.run(main)
    assert stats["acting_as"] == en_vault.config.orchestrator
    assert not list((en_vault.root / "memories").glob("*.md"))  # nothing became memory without review
    assert len(list((en_vault.root / "inbox").glob("i-*.md"))) == 1, kept


# -- install / uninstall claude --------------------------------------------------------------------
USER_HOOK = {"hooks": [{"type": "command", "command": "echo mine", "timeout": 3}]}


def test_install_merges_into_what_is_there_and_uninstall_removes_exactly_it(cli, project, en_vault):
    mcp_before = dumped({"mcpServers": {"other": {"command": "/usr/bin/other", "args": ["serve"]}},
                         "zzz": {"keep": True}})
    settings_before = dumped({"permissions": {"allow": ["Bash(ls:*)"]},
                              "hooks": {"SessionStart": [USER_HOOK], "PreToolUse": [USER_HOOK]},
                              "env": {"A": "1"}})
    (project / ".mcp.json").write_text(mcp_before)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(settings_before)

    done = cli("install", "claude", "--vault", en_vault.root, "--as", "lee", "--json")
    assert done.exit_code == 0, done.output
    assert {f["action"] for f in json.loads(done.stdout)["files"]} == {"changed"}
    mcp = json.loads((project / ".mcp.json").read_text())
    assert list(mcp) == ["mcpServers", "zzz"] and list(mcp["mcpServers"]) == ["other", "vaultmem"]
    server = mcp["mcpServers"]["vaultmem"]
    assert Path(server["command"]).is_absolute() and os.access(server["command"], os.X_OK)
    assert server["args"][-6:] == ["mcp", "--claude", "--vault", str(en_vault.root), "--as", "lee"]
    settings_text = (project / ".claude" / "settings.json").read_text()
    assert settings_text.endswith("}\n")
    settings = json.loads(settings_text)
    assert list(settings) == ["permissions", "hooks", "env"]
    assert list(settings["hooks"]) == ["SessionStart", "PreToolUse", *[e for e in EVENTS if e != "SessionStart"]]
    assert settings["hooks"]["SessionStart"][0] == USER_HOOK  # the user's hook first, untouched
    assert settings["hooks"]["PreToolUse"] == [USER_HOOK]
    for event in EVENTS:
        [ours] = [g for g in settings["hooks"][event] if g != USER_HOOK]
        command = shlex.split(ours["hooks"][0]["command"], comments=True)
        assert command[0] == server["command"] and command[1:4] == ["hook", "claude", event]
        assert command[4:8] == ["--vault", str(en_vault.root), "--as", "lee"] and command[-2:] == ["||", "true"]

    # installing twice adds nothing, and does not even rewrite the files
    stamps = [(p.read_bytes(), p.stat().st_mtime_ns) for p in (project / ".mcp.json", project / ".claude/settings.json")]
    again = cli("install", "claude", "--vault", en_vault.root, "--as", "lee")
    assert again.exit_code == 0 and "nothing to install" in again.stdout
    assert stamps == [(p.read_bytes(), p.stat().st_mtime_ns)
                      for p in (project / ".mcp.json", project / ".claude/settings.json")]

    # another vault: vaultmem's entries are updated where they stand, not added twice
    cli("install", "claude", "--vault", en_vault.root)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert all(len(settings["hooks"][e]) == (2 if e == "SessionStart" else 1) for e in EVENTS)
    assert "--as" not in settings["hooks"]["Stop"][0]["hooks"][0]["command"]

    gone = cli("uninstall", "claude", "--json")
    assert gone.exit_code == 0, gone.output
    assert (project / ".mcp.json").read_text() == mcp_before
    assert (project / ".claude" / "settings.json").read_text() == settings_before


def test_a_fresh_project_gets_both_files_and_uninstall_leaves_nothing(cli, project):
    assert cli("install", "claude", "--dry-run").exit_code == 0
    assert not (project / ".mcp.json").exists() and not (project / ".claude").exists()  # a dry run writes nothing
    assert cli("install", "claude").exit_code == 0
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["vaultmem"]["args"][-2:] == ["mcp", "--claude"]
    assert sorted(json.loads((project / ".claude" / "settings.json").read_text())["hooks"]) == sorted(EVENTS)
    assert cli("uninstall", "claude").exit_code == 0
    assert list(project.iterdir()) == []
    assert "nothing to uninstall" in cli("uninstall", "claude").stdout


def test_dry_run_prints_the_diff_and_writes_nothing(cli, project):
    (project / ".mcp.json").write_text(dumped({"mcpServers": {}}))
    before = (project / ".mcp.json").stat().st_mtime_ns
    shown = cli("install", "claude", "--dry-run")
    assert shown.exit_code == 0
    assert f"would change {project / '.mcp.json'}" in shown.stdout and '+    "vaultmem": {' in shown.stdout
    assert f"would create {project / '.claude' / 'settings.json'}" in shown.stdout and "+++ " in shown.stdout
    data = json.loads(cli("install", "claude", "--dry-run", "--json").stdout)
    assert data["dry_run"] is True and [f["action"] for f in data["files"]] == ["changed", "created"]
    assert all(f["diff"].startswith("---") for f in data["files"])
    assert (project / ".mcp.json").stat().st_mtime_ns == before and not (project / ".claude").exists()


def test_broken_json_is_named_by_file_and_line_and_nothing_is_written(cli, project):
    (project / ".claude").mkdir()
    broken = '{\n  "hooks": {\n    "Stop": [],,\n  }\n}\n'
    (project / ".claude" / "settings.json").write_text(broken)
    done = cli("install", "claude")
    assert done.exit_code != 0
    assert f"{project / '.claude' / 'settings.json'}:3:" in done.stderr and "not valid JSON" in done.stderr
    assert not (project / ".mcp.json").exists()  # read before anything is written
    assert (project / ".claude" / "settings.json").read_text() == broken
    err = out_json(cli("install", "claude", "--json"))["error"]
    assert err["line"] == 3 and err["path"].endswith("settings.json")
    (project / ".claude" / "settings.json").write_text('{"hooks": []}\n')  # valid JSON, wrong shape
    assert "'hooks' is a JSON list" in cli("uninstall", "claude").stderr


def test_a_server_named_vaultmem_that_vaultmem_did_not_add_is_left_alone(cli, project):
    mine = dumped({"mcpServers": {"vaultmem": {"command": "/opt/my/vaultmem", "args": ["mcp"]}}})
    (project / ".mcp.json").write_text(mine)
    done = cli("install", "claude")
    assert done.exit_code == 0 and "that vaultmem did not add: left as it is" in done.stdout
    assert (project / ".mcp.json").read_text() == mine
    cli("uninstall", "claude")
    assert (project / ".mcp.json").read_text() == mine


def test_user_scope_writes_under_home_and_keeps_claudes_own_state(cli, project, home):
    state = dumped({"numStartups": 7, "projects": {"/x": {"mcpServers": {"p": {"command": "p"}}}}})
    (home / ".claude.json").write_text(state)
    os.chmod(home / ".claude.json", 0o600)
    done = cli("install", "claude", "--user", "--json")
    assert done.exit_code == 0, done.output
    data = json.loads((home / ".claude.json").read_text())
    assert list(data) == ["numStartups", "projects", "mcpServers"] and "vaultmem" in data["mcpServers"]
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600  # the file's own mode is kept
    assert sorted(json.loads((home / ".claude" / "settings.json").read_text())["hooks"]) == sorted(EVENTS)
    assert not (project / ".mcp.json").exists()
    assert cli("install", "claude", "--project", "--user").exit_code == 2
    assert cli("uninstall", "claude", "--user").exit_code == 0
    assert (home / ".claude.json").read_text() == state


def test_a_symlinked_settings_file_is_written_at_its_target(cli, project, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text(dumped({"model": "x"}))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").symlink_to(dotfiles / "settings.json")
    assert cli("install", "claude").exit_code == 0
    assert (project / ".claude" / "settings.json").is_symlink()
    assert "hooks" in json.loads((dotfiles / "settings.json").read_text())


def test_the_installed_commands_run_and_fail_open(project, home, en_vault):
    done = run_vaultmem("install", "claude", "--vault", en_vault.root, "--json", cwd=project, env={"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert shlex.split(command)[0] == str(VAULTMEM)  # this vaultmem, by absolute path
    # the host runs it through a shell with a minimal PATH; whatever vaultmem answers, it exits 0
    ran = subprocess.run(["/bin/sh", "-c", command], input='{"hook_event_name": "SessionStart"}',
                         capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(home)}, timeout=120)
    assert ran.returncode == 0
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["vaultmem"]
    assert subprocess.run([server["command"], *server["args"][:server["args"].index("mcp")], "--version"],
                          capture_output=True,
                          env={"PATH": "/usr/bin:/bin"}, timeout=120).returncode == 0


def test_the_launcher_finds_vaultmem_in_the_projects_venv_or_as_recorded_by_init(tmp_path):
    """Installed in a virtual environment (the README's set-up) with VAULTMEM_BIN unset,
    Claude Code's minimal PATH has no vaultmem: the launcher falls back to the nearest
    .venv at or above the project, then to the vaultmem that set the vault up (recorded by
    ``vaultmem init`` in .vaultmem/local/, never committed). Before, the hooks did
    nothing and the MCP server exited 127."""
    bare = tmp_path / "bin"
    bare.mkdir()
    payload = json.dumps({"session_id": "s1", "cwd": "/", "hook_event_name": "SessionStart", "source": "startup"})

    # a vault set up by this vaultmem (its script beside this Python), the project inside it
    root = tmp_path / "team"
    made = run_vaultmem("init", root, "--lang", "en", "--orchestrator", "lee")
    assert made.returncode == 0, made.stderr
    record = root / ".vaultmem" / "local" / "vaultmem-bin"
    assert record.read_text().strip() == str(VAULTMEM)
    assert git(root, "status", "--porcelain") == ""  # per machine: never committed
    project = root / "wiki" / "app"
    project.mkdir(parents=True)
    env = {"PATH": str(bare), "CLAUDE_PROJECT_DIR": str(project), "HOME": str(tmp_path)}
    started = launch("hook", "SessionStart", env=env, stdin=payload)
    assert started.returncode == 0 and started.stderr == "", started.stderr
    assert "additionalContext" in json.loads(started.stdout)["hookSpecificOutput"]
    shown = launch("config", "show", "--json", env=env)
    assert shown.returncode == 0 and json.loads(shown.stdout)["orchestrator"] == "lee", shown.stderr

    # a recorded path that is not a vaultmem script is never run
    record.write_text("/bin/sh\n")
    refused = launch("mcp", env=env)
    assert refused.returncode == 127 and "cannot find vaultmem" in refused.stderr

    # the project's own .venv, found from a folder below it (a link to this venv's script)
    venv_bin = project / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "vaultmem").symlink_to(VAULTMEM)
    deeper = project / "src" / "ui"
    deeper.mkdir(parents=True)
    found = launch("config", "show", "--json", env={**env, "CLAUDE_PROJECT_DIR": str(deeper)})
    assert found.returncode == 0 and json.loads(found.stdout)["orchestrator"] == "lee", found.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root")
def test_the_launcher_never_runs_a_vaultmem_another_user_planted_above_the_project(tmp_path):
    """A .venv (or a recorded path) above the project that is not yours — /tmp/.venv/bin/
    vaultmem made by another user of the machine — is never run: it would run as you in
    every session of a project below it."""
    bare = tmp_path / "bin"
    bare.mkdir()
    ran = tmp_path / "ran"
    planted = tmp_path / "shared" / ".venv" / "bin"
    planted.mkdir(parents=True)
    (planted / "vaultmem").write_text(f"#!/bin/sh\necho planted > {shlex.quote(str(ran))}\n")
    (planted / "vaultmem").chmod(0o755)
    record = tmp_path / "shared" / ".vaultmem" / "local"
    record.mkdir(parents=True)
    (record / "vaultmem-bin").write_text(f"{planted / 'vaultmem'}\n")
    for path in (planted.parent, planted / "vaultmem", record / "vaultmem-bin"):
        os.chown(path, 65534, 65534)  # nobody's
    project = tmp_path / "shared" / "proj"
    project.mkdir()
    env = {"PATH": str(bare), "CLAUDE_PROJECT_DIR": str(project), "HOME": str(tmp_path)}
    done = launch("hook", "SessionStart", env=env, stdin="{}")
    assert done.returncode == 0 and "cannot find vaultmem" in done.stderr and not ran.exists()
    # the same folders, yours: run
    for path in (planted.parent, planted / "vaultmem", record / "vaultmem-bin"):
        os.chown(path, 0, 0)
    launch("hook", "SessionStart", env=env, stdin="{}")
    assert ran.read_text().strip() == "planted"
