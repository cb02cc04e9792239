"""Preservation: the format version, `migrate` on a vault the previous release made
(tests/fixtures/vault-format-1.tar.gz, made by tests/fixtures/make-vault-format-1.sh),
`verify`, and backups that restore to the same vault (docs/preservation.md)."""

from __future__ import annotations

import io
import json
import stat
import tarfile
from pathlib import Path

import pytest

from conftest import git, out_json, vaultmem_in_process
from vaultmem.vault import Vault

FIXTURE = Path(__file__).parent / "fixtures" / "vault-format-1.tar.gz"
TASK = "审查 Dashboard 的 useEffect 和后端端口"


def old_vault(tmp_path: Path) -> Path:
    """The vault the release before the journal wrote (format 1), with its git history and keys."""
    root = tmp_path / "old"
    root.mkdir()
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root, filter="data")
    return root


def checks(report: dict) -> dict[str, bool]:
    return {c["check"]: c["ok"] for c in report["checks"]}


def test_a_vault_of_the_previous_format_works_is_flagged_and_migrates_in_one_reviewed_commit(tmp_path):
    root = old_vault(tmp_path)
    config_before = (root / ".vaultmem/config.yaml").read_bytes()
    head = git(root, "rev-parse", "HEAD").strip()
    # it works as it is
    assert vaultmem_in_process("search", "端口", cwd=root).returncode == 0
    brief = vaultmem_in_process("brief", "前端审查", "--task", TASK, cwd=root)
    assert brief.returncode == 0 and "后端端口固定8080" in brief.stdout
    # verify says what is out of date, and nothing else
    done = vaultmem_in_process("verify", "--json", cwd=root)
    assert done.returncode == 1
    report = out_json(done)
    assert report["format"] == 1 and [k for k, ok in checks(report).items() if not ok] == ["the vault's format is current"]
    assert "run 'vaultmem migrate'" in json.dumps(report)
    # a dry run and an agent change nothing
    dry = vaultmem_in_process("migrate", "--dry-run", cwd=root)
    assert dry.returncode == 0 and "would migrate format 1 → 2" in dry.stdout and "nothing was changed" in dry.stdout
    refused = vaultmem_in_process("migrate", "--as", "lee", cwd=root)
    assert refused.returncode == 3 and "may not migrate" in refused.stderr
    assert (root / ".vaultmem/config.yaml").read_bytes() == config_before and git(root, "rev-parse", "HEAD").strip() == head
    # the migration: one commit that lists its steps; comments and the rest of the config kept
    done = vaultmem_in_process("migrate", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    change = out_json(done)
    assert (change["from"], change["to"], change["paths"]) == (1, 2, [".vaultmem/config.yaml"])
    assert git(root, "log", "-1", "--format=%s%n%b").startswith("migrate: vault format 1 → 2\n- 1 → 2: the journal's")
    assert git(root, "diff", "--name-only", f"{head}..HEAD").split() == [".vaultmem/config.yaml"]
    text = (root / ".vaultmem/config.yaml").read_text(encoding="utf-8")
    assert "version: 2\n" in text and "journal:\n  keep_days: 0\n  hooks: true\n" in text
    assert "# comments and the order of keys survive every rewrite." in text
    assert vaultmem_in_process("verify", cwd=root).returncode == 0
    assert out_json(vaultmem_in_process("migrate", "--json", cwd=root))["steps"] == []
    # git revert undoes it byte for byte
    git(root, "revert", "--no-edit", "HEAD")
    assert (root / ".vaultmem/config.yaml").read_bytes() == config_before


def test_a_vault_of_a_newer_format_is_refused_with_the_line(en_vault):
    cfg = en_vault.root / ".vaultmem/config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("version: 2", "version: 3"), encoding="utf-8")
    done = vaultmem_in_process("search", "anything", cwd=en_vault.root)
    assert done.returncode != 0 and ".vaultmem/config.yaml:" in done.stderr and "made by a newer vaultmem" in done.stderr
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("version: 3", "version: two"), encoding="utf-8")
    assert "it must be the vault's format version" in vaultmem_in_process("verify", cwd=en_vault.root).stderr


def test_verify_rebuilds_an_index_another_analyzer_built_and_says_so(en_vault):
    root = en_vault.root
    assert vaultmem_in_process("index", cwd=root).returncode == 0
    live = (root / ".vaultmem/index/CURRENT").read_text().strip()
    manifest = root / ".vaultmem/index" / live / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**data, "analyzer": "an-older-one"}), encoding="utf-8")
    report = out_json(vaultmem_in_process("verify", "--json", cwd=root))
    check = next(c for c in report["checks"] if c["check"] == "the index was built by this analyzer")
    assert report["ok"] and check["fixed"][0]["message"].startswith("memory's index was built by analyzer an-older-one")
    again = out_json(vaultmem_in_process("verify", "--json", cwd=root))
    assert next(c for c in again["checks"] if c["check"] == "the index was built by this analyzer")["fixed"] == []


def test_verify_names_what_an_upgrade_broke(en_vault, tmp_path):
    root = en_vault.root
    (tmp_path / "chat.md").write_text("Ann: we ship on Friday\nBo: agreed\n", encoding="utf-8")
    en_vault.journal.add(tmp_path / "chat.md", en_vault.actor(None), day="2026-12-01")
    assert vaultmem_in_process("verify", cwd=root).returncode == 0
    day = root / "journal/2026-12-01.md"
    lines = day.read_text(encoding="utf-8").splitlines(keepends=True)
    day.write_text("".join(lines + [lines[-1]]), encoding="utf-8")  # a turn pasted twice
    (root / "memories/broken.md").write_text("---\nname: [x\n---\nbody\n", encoding="utf-8")
    done = vaultmem_in_process("verify", "--json", cwd=root)
    assert done.returncode == 1
    report = out_json(done)
    failed = {c["check"]: c["problems"] for c in report["checks"] if not c["ok"]}
    assert set(failed) >= {"files parse", "the journal files each turn once"}
    assert any(p["path"] == "memories/broken.md" and p["line"] == 3 for p in failed["files parse"])
    assert failed["the journal files each turn once"][0]["path"] == "journal/2026-12-01.md"
    assert "is in the journal twice" in failed["the journal files each turn once"][0]["problem"]


def test_a_backup_restores_to_a_vault_that_verifies_and_gives_the_same_brief(tmp_path):
    root = old_vault(tmp_path)
    assert vaultmem_in_process("migrate", cwd=root).returncode == 0
    (tmp_path / "chat.md").write_text("lee: 端口改了吗？\n前端审查: 没有，还是8080。\n", encoding="utf-8")
    assert vaultmem_in_process("journal", "add", tmp_path / "chat.md", "--date", "2026-12-01", cwd=root).returncode == 0
    bundle, keys = tmp_path / "team.bundle", tmp_path / "private" / "team-keys.tgz"
    keys.parent.mkdir()
    made = vaultmem_in_process("backup", "create", bundle, "--keys", keys, "--json", cwd=root)
    assert made.returncode == 0, made.stderr
    data = out_json(made)
    assert data["key_agents"] == ["lee"] and stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert data.get("warnings", []) == []
    # the bundle holds no private key; the keys file holds nothing else
    assert b"PRIVATE" not in bundle.read_bytes() and (root / ".vaultmem/keys/lee.key").read_bytes() not in bundle.read_bytes()
    with tarfile.open(keys) as tar:
        assert tar.getnames() == ["lee.key"]
    again = vaultmem_in_process("backup", "create", bundle, cwd=root)
    assert again.returncode == 2 and "never overwrites" in again.stderr
    checked = vaultmem_in_process("backup", "verify", bundle)
    assert checked.returncode == 0 and "everything the design relies on holds" in checked.stdout
    dest = tmp_path / "restored"
    done = vaultmem_in_process("backup", "restore", bundle, dest, "--keys", keys, "--json")
    assert done.returncode == 0, done.stderr
    assert out_json(done)["ok"] and out_json(done)["key_agents"] == ["lee"]
    assert (dest / ".vaultmem/keys/lee.key").read_bytes() == (root / ".vaultmem/keys/lee.key").read_bytes()
    assert stat.S_IMODE((dest / ".vaultmem/keys/lee.key").stat().st_mode) == 0o600
    assert git(dest, "remote").strip() == "" and git(dest, "status", "--porcelain") == ""
    assert git(dest, "rev-parse", "HEAD") == git(root, "rev-parse", "HEAD")
    # the same brief, the same journal
    assert Vault.open(dest).brief("前端审查", TASK).markdown == Vault.open(root).brief("前端审查", TASK).markdown
    assert Vault.open(dest).search("8080", journal=True)[0].doc.id == Vault.open(root).search("8080", journal=True)[0].doc.id
    # the restored vault signs as the old one did
    assert vaultmem_in_process("log", "append", "--summary", "restored", "--as", "lee", cwd=dest).returncode == 0
    assert vaultmem_in_process("log", "verify", cwd=dest).returncode == 0


def test_backups_refuse_what_they_cannot_use(en_vault, tmp_path):
    root = en_vault.root
    (root / "memories/draft.md").write_text("---\nname: draft\ntype: fact\n---\nnot committed\n", encoding="utf-8")
    made = out_json(vaultmem_in_process("backup", "create", tmp_path / "b.bundle", "--json", cwd=root))
    assert "1 uncommitted change(s) are not in the backup: memories/draft.md" in made["warnings"][0]
    (tmp_path / "junk.bundle").write_text("not a bundle", encoding="utf-8")
    done = vaultmem_in_process("backup", "verify", tmp_path / "junk.bundle")
    assert done.returncode != 0 and "is not a git bundle" in done.stderr
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("mine", encoding="utf-8")
    done = vaultmem_in_process("backup", "restore", tmp_path / "b.bundle", full)
    assert done.returncode == 2 and "not an empty folder" in done.stderr and (full / "x").read_text() == "mine"
    # a keys archive with a path in it restores nothing
    evil = tmp_path / "evil.tgz"
    buf = io.BytesIO(b"x")
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../../outside.key")
        info.size = 1
        tar.addfile(info, buf)
    done = vaultmem_in_process("backup", "restore", tmp_path / "b.bundle", tmp_path / "r", "--keys", evil)
    assert done.returncode == 2 and "not an agent's key" in done.stderr
    assert not (tmp_path / "outside.key").exists() and not (tmp_path.parent / "outside.key").exists()
    assert not any(p.name == "outside.key" for p in tmp_path.rglob("*.key"))
    assert not (tmp_path / "r").exists()  # checked before anything is made


def test_help_teaches_preservation():
    for args, words in ((["verify", "--help"], ["migrate"]), (["migrate", "--help"], ["--dry-run", "git revert"]),
                        (["backup", "--help"], ["create", "verify", "restore"]),
                        (["backup", "create", "--help"], ["--keys"])):
        done = vaultmem_in_process(*args)
        assert done.returncode == 0 and all(w in done.stdout for w in words), args


@pytest.mark.parametrize("version", [1, 2])
def test_the_config_version_is_read(en_vault, version):
    cfg = en_vault.root / ".vaultmem/config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("version: 2", f"version: {version}"), encoding="utf-8")
    assert Vault.open(en_vault.root).config.format_version == version
