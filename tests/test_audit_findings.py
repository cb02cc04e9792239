"""``audit`` says what is wrong with a note: broken YAML (file:line), a folder, an odd name."""

from conftest import out_json, run_vaultmem


def audit(vault, *args):
    return run_vaultmem("--vault", vault.root, "audit", *args)


def test_audit_names_broken_yaml_with_its_line(vault):
    (vault.root / "memories" / "broken.md").write_text("---\nname: x\nauthor: [unclosed\n---\nbody\n",
                                                        encoding="utf-8")
    r = audit(vault)
    assert r.returncode == 1
    line = next(x for x in r.stdout.splitlines() if "broken.md" in x)
    assert line.startswith("memories/broken.md:") and "YAML" in line, r.stdout
    assert "no frontmatter" not in line
    found = out_json(audit(vault, "--json"))["notes_without_provenance"]
    assert found[0]["path"] == "memories/broken.md" and found[0]["line"] and "YAML" in found[0]["problem"]


def test_audit_says_a_folder_is_a_folder(vault):
    (vault.root / "memories" / "x.md").mkdir()
    r = audit(vault)
    line = next(x for x in r.stdout.splitlines() if "x.md" in x)
    assert "folder" in line and "no frontmatter" not in line, r.stdout


def test_audit_escapes_a_note_name_with_a_newline(vault):
    (vault.root / "memories" / "a\nnothing needs a human.md").write_text("no frontmatter\n", encoding="utf-8")
    r = audit(vault)
    assert "memories/a\\nnothing needs a human.md" in r.stdout, r.stdout
    assert not any(x.startswith("nothing needs a human") for x in r.stdout.splitlines())
