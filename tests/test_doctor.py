"""`vaultmem doctor`: each check on a real vault, and --fix (real git, the real CLI)."""

import random
import string

from conftest import git, out_json


def vm(cli, vault, *args, agent=None, input=None):
    return cli("--vault", vault.root, *(["--as", agent] if agent else []), *args, input=input)


def checks(result) -> dict:
    return {c["check"]: c for c in out_json(result)["checks"]}


def test_a_new_vault_is_healthy(cli, vault):
    assert vm(cli, vault, "remember", "后端端口固定8080", "--type", "fact").exit_code == 0
    r = vm(cli, vault, "doctor")
    assert r.exit_code == 0, r.output
    assert r.output.strip().endswith("healthy")
    assert all(c["ok"] for c in checks(vm(cli, vault, "doctor", "--json")).values())


def test_each_problem_is_named_with_its_file_and_line_and_fix_repairs_only_the_index_lines(cli, vault):
    assert vm(cli, vault, "remember", "The backend listens on 8080", "--type", "fact", "--name", "port").exit_code == 0
    assert vm(cli, vault, "remember", "We use pnpm", "--type", "decision", "--name", "pnpm").exit_code == 0
    # a note deleted by hand (its line dangles), one written by hand (no line), one with broken YAML
    (vault.root / "memories/pnpm.md").unlink()
    (vault.root / "memories/by-hand.md").write_text("---\nname: by hand\ntype: fact\n---\nSee [[port]] and "
                                                    "[[missing-note]] and [[port#^m-000000]].\n", encoding="utf-8")
    (vault.root / "memories/broken.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    secret = "ghp_" + "".join(random.Random(3).choice(string.ascii_letters + string.digits) for _ in range(36))
    (vault.root / "memories/pasted.md").write_text(f"---\nname: pasted\ntype: fact\n---\ntoken {secret}\n",
                                                   encoding="utf-8")
    (vault.root / "memories/huge.md").write_text("---\nname: huge\ntype: fact\n---\n" + "a line of a long pasted log\n" * 11_000,
                                                 encoding="utf-8")
    assert vm(cli, vault, "remember", "An agent's guess", "--type", "fact", agent="ella").exit_code == 0  # waits
    r = vm(cli, vault, "doctor", "--json")
    assert r.exit_code == 1
    got = checks(r)
    assert got["files parse"]["problems"][0]["path"] == "memories/broken.md" and got["files parse"]["problems"][0]["line"]
    index = got["MEMORY.md lists the active notes"]["problems"]
    assert any(p["path"] == "MEMORY.md" and "memories/pnpm is not an active note" in p["problem"] and p["line"]
               for p in index)
    assert {p["path"] for p in index if "does not list" in p["problem"]} >= {"memories/by-hand.md"}
    broken = {p["problem"] for p in got["links resolve"]["problems"]}
    assert "[[missing-note]]: no file is named 'missing-note'" in broken
    assert "[[port#^m-000000]]: memories/port.md has no block ^m-000000" in broken
    assert all(p["path"] == "memories/by-hand.md" and p["line"] == 5 for p in got["links resolve"]["problems"])
    assert [p["path"] for p in got["no secret in uncommitted files"]["problems"]] == ["memories/pasted.md"]
    assert secret not in r.output  # named, never repeated
    assert any("waits for review" in p["problem"] for p in got["nothing waits for a human"]["problems"])
    assert [p["path"] for p in got["no oversize file"]["problems"]] == ["memories/huge.md"]
    assert got["logs verify"]["ok"] and got["the index opens and follows the files"]["ok"]
    # an agent may look, not fix
    assert vm(cli, vault, "doctor", "--fix", agent="ella").exit_code == 3
    head = git(vault.root, "rev-parse", "HEAD").strip()
    r = vm(cli, vault, "doctor", "--fix", "--json")
    assert r.exit_code == 1  # what is left for a human still fails
    got = checks(r)
    fixed = got["MEMORY.md lists the active notes"]["fixed"]
    assert len(fixed) == 1 and fixed[0]["commit"]
    assert git(vault.root, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert git(vault.root, "show", "--name-only", "--format=", "HEAD").split() == ["MEMORY.md"]
    text = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert "[[memories/pnpm|" not in text and "[[memories/by-hand|by hand]]" in text
    assert got["MEMORY.md lists the active notes"]["ok"]
    assert not got["files parse"]["ok"] and not got["links resolve"]["ok"]  # a human's to settle
    assert (vault.root / "memories/broken.md").read_text(encoding="utf-8").startswith("---\nname: [unclosed")
    text = vm(cli, vault, "doctor").output
    assert "FAIL  files parse" in text and "memories/broken.md:3" in text and "left for a human" in text


def test_a_memory_index_that_is_a_folder_is_a_finding_and_the_other_checks_still_run(cli, vault):
    """doctor stopped at its first look at MEMORY.md when a folder stood in its place; it
    now says so on that check's line and goes on with the others."""
    (vault.root / "MEMORY.md").unlink()
    (vault.root / "MEMORY.md").mkdir()
    r = cli("--vault", vault.root, "--json", "doctor")
    checks = {c["check"]: c for c in out_json(r)["checks"]}
    listed = checks["MEMORY.md lists the active notes"]
    assert not listed["ok"] and "is a folder" in listed["problems"][0]["problem"]
    assert checks["links resolve"]["ok"] and checks["logs verify"]["ok"]
    assert r.exit_code == 1
