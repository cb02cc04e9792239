"""vaultmem init, config, global options and vault discovery."""

import subprocess
import sys

from conftest import git, out_json, run_vaultmem

from vaultmem import Vault

LAYOUT = ["agents", "memories", "identity", "inbox", "archive", "wiki", "skills", "journal", "checkpoints", "shared"]


def test_init_creates_the_layout_config_and_first_commit(cli, tmp_path):
    r = cli("init", tmp_path / "team", "--lang", "zh", "--orchestrator", "lee", "--json")
    assert r.exit_code == 0, r.output
    data = out_json(r)
    assert data["created"] is True and data["changed"] is True
    root = tmp_path / "team"
    for folder in LAYOUT:
        assert (root / folder).is_dir(), folder
    assert "# 记忆索引" in (root / "MEMORY.md").read_text(encoding="utf-8")
    assert "vaultmem:index:begin" in (root / "MEMORY.md").read_text(encoding="utf-8")
    identity = (root / "identity" / "lee.md").read_text(encoding="utf-8")
    assert identity.startswith("---\nname: lee\n") and "$agent" not in identity
    config = (root / ".vaultmem" / "config.yaml").read_text(encoding="utf-8")
    assert "lang: zh" in config and "orchestrator: lee" in config
    assert "# Edit freely" in config and "# The types a memory note may have" in config  # comments survive
    ignore = (root / ".gitignore").read_text()
    assert ".vaultmem/index/" in ignore and ".vaultmem/keys/" in ignore
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "log", "--format=%s").strip() == "vaultmem: create vault (lang zh, orchestrator lee)"
    tracked = git(root, "ls-files").split()
    assert ".vaultmem/config.yaml" in tracked and "agents/.gitkeep" in tracked


def test_init_on_an_existing_vault_changes_nothing_and_says_so(cli, tmp_path):
    cli("init", tmp_path / "v")
    (tmp_path / "v" / "MEMORY.md").write_text("my own text\n", encoding="utf-8")
    before = git(tmp_path / "v", "rev-parse", "HEAD")
    r = cli("init", tmp_path / "v", "--lang", "zh")
    assert r.exit_code == 0
    assert "already a vault (lang en, orchestrator orchestrator); nothing changed" in r.stdout
    assert "--lang zh ignored" in r.stdout
    assert (tmp_path / "v" / "MEMORY.md").read_text() == "my own text\n"
    assert git(tmp_path / "v", "rev-parse", "HEAD") == before


def test_init_keeps_files_of_an_existing_obsidian_folder(cli, tmp_path):
    root = tmp_path / "obsidian"
    root.mkdir()
    (root / "MEMORY.md").write_text("mine\n", encoding="utf-8")
    (root / "notes.md").write_text("unrelated\n", encoding="utf-8")
    r = cli("init", root, "--json")
    assert r.exit_code == 0
    assert "MEMORY.md" not in out_json(r)["paths"]
    assert (root / "MEMORY.md").read_text() == "mine\n"
    assert "notes.md" in git(root, "status", "--porcelain")  # not committed by us


def test_init_refuses_bad_language_and_orchestrator(cli, tmp_path):
    r = cli("init", tmp_path / "v", "--lang", "fr")
    assert r.exit_code == 2 and "zh or en" in r.stderr
    r = cli("init", tmp_path / "v2", "--orchestrator", "../evil")
    assert r.exit_code == 2 and "orchestrator name" in r.stderr
    assert not (tmp_path / "v2" / ".vaultmem").exists()


def test_config_set_keeps_comments_and_order(cli, vault):
    path = vault.root / ".vaultmem" / "config.yaml"
    text = path.read_text(encoding="utf-8").replace("lang: zh", "lang: zh  # my note on lang")
    path.write_text(text, encoding="utf-8")
    r = cli("--vault", vault.root, "config", "set", "git.lock_timeout", "3")
    assert r.exit_code == 0, r.output
    new = path.read_text(encoding="utf-8")
    assert "lock_timeout: 3\n" in new
    assert "lang: zh  # my note on lang" in new
    assert new.replace("lock_timeout: 3\n", "lock_timeout: 10\n", 1) == text
    assert Vault(vault.root).config.lock_timeout == 3.0
    r = cli("--vault", vault.root, "config", "set", "lang", "fr")
    assert r.exit_code != 0 and "zh or en" in r.stderr
    assert "lock_timeout: 3\n" in path.read_text(encoding="utf-8")


def test_vault_is_found_by_option_env_or_from_a_subfolder(cli, vault, tmp_path, monkeypatch):
    r = cli("page", "list", "--json")
    assert r.exit_code == 1 and out_json(r)["error"]["type"] == "vault_not_found"
    r = cli("page", "list")
    assert r.exit_code == 1 and "no vault at or above" in r.stderr and "vaultmem init" in r.stderr
    r = cli("page", "list", "--json", "--vault", vault.root)
    assert r.exit_code == 0 and out_json(r) == {"pages": []}
    r = cli("page", "list", env={"VAULTMEM_VAULT": str(vault.root)})
    assert r.exit_code == 0
    monkeypatch.chdir(vault.root / "memories")
    assert cli("page", "list").exit_code == 0
    r = cli("--vault", tmp_path, "page", "list")
    assert r.exit_code == 1 and "is not a vault" in r.stderr and "vaultmem init" in r.stderr


def test_json_and_as_work_before_or_after_the_command(cli, vault):
    a = cli("--json", "--vault", vault.root, "--as", "lee", "page", "ensure", "前端审查")
    b = cli("page", "ensure", "后端架构", "--json", "--vault", vault.root, "--as", "lee")
    assert out_json(a)["created"] and out_json(b)["created"]
    assert git(vault.root, "log", "-2", "--format=%an").split() == ["lee", "lee"]


def test_agent_comes_from_the_environment(cli, vault):
    r = cli("--vault", vault.root, "page", "ensure", "x", env={"VAULTMEM_AGENT": "ella"})
    assert r.exit_code == 3 and "only the orchestrator 'lee'" in r.stderr


def test_python_dash_m_and_the_console_script_both_start():
    r = subprocess.run([sys.executable, "-m", "vaultmem", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "page" in r.stdout and "remember" in r.stdout
    r = run_vaultmem("--version")
    assert r.returncode == 0 and r.stdout.strip()
