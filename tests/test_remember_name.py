"""remember --name: the name also makes the note's file name, so one that reads as a path is
refused (saying which characters are allowed), and nothing is written."""

import pytest
from conftest import git, out_json, run_vaultmem


def state(vault):
    files = sorted(p.relative_to(vault.root).as_posix() for p in vault.root.rglob("*")
                   if p.is_file() and ".git" not in p.parts and ".vaultmem" not in p.parts)
    return git(vault.root, "rev-parse", "HEAD"), files, (vault.root / "MEMORY.md").read_bytes()


@pytest.mark.parametrize("name", ["../../escape", "../escape", "a/b", "..\\..\\escape", "/etc/passwd", ".hidden",
                                  "memo: port", "x|y", "a\tb"])
def test_a_name_that_is_not_a_safe_file_name_is_refused_and_nothing_is_written(cli, vault, name):
    before = state(vault)
    r = cli("--vault", vault.root, "remember", "后端端口固定8080", "--type", "fact", "--name", name, "--json")
    assert r.exit_code == 2, r.output
    err = out_json(r)["error"]
    assert err["type"] == "name_refused" and err["field"] == "name" and err["option"] == "--name", err
    assert "allowed" in err.get("hint", ""), err
    assert state(vault) == before
    assert not (vault.root.parent / "escape.md").exists() and not (vault.root / "escape.md").exists()


def test_the_refusal_in_a_real_process_names_the_flag(vault):
    before = state(vault)
    r = run_vaultmem("--vault", vault.root, "remember", "x fact", "--type", "fact", "--name", "../../escape")
    assert r.returncode == 2
    assert "--name" in r.stderr and "../../escape" in r.stderr and "allowed" in r.stderr
    assert state(vault) == before


@pytest.mark.parametrize("name,slug", [("backend port", "backend-port"), ("后端 端口", "后端-端口"),
                                       ("v1.2 rollout (beta)", "v1-2-rollout-beta"),
                                       ("React.memo 偏好", "react-memo-偏好")])
def test_ordinary_names_with_spaces_dots_and_chinese_are_kept(cli, vault, name, slug):
    r = cli("--vault", vault.root, "remember", "a fact", "--type", "fact", "--name", name, "--json")
    assert r.exit_code == 0, r.output
    assert out_json(r)["slug"] == slug and vault.notes.read(slug).meta["name"] == name
