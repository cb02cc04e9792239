"""A huge note or log body costs no reader anything: vaultmem refuses to write one (with
the setting that says how large a text may be), and one that arrives by other means (git
pull, an editor) is indexed, kept and shown by its beginning, with a warning naming it."""

import pytest
from conftest import git, out_json, vaultmem_in_process

from vaultmem.index.build import MAX_DOC_CHARS

PROSE = "the backend port moved to 8080 after the deploy review "


def _words(n_bytes: int, tail: str = "") -> str:
    return (PROSE * (n_bytes // len(PROSE) + 1))[:n_bytes] + tail


def test_a_note_over_the_limit_is_refused_with_the_setting_and_nothing_is_written(en_vault):
    head = git(en_vault.root, "rev-parse", "HEAD")
    r = vaultmem_in_process("--vault", en_vault.root, "remember", "-", "--type", "fact", stdin=_words(300 * 1024))
    assert r.returncode == 2
    assert "memory.max_note_bytes" in r.stderr and "256.0 KB" in r.stderr and "nothing was written" in r.stderr
    assert git(en_vault.root, "rev-parse", "HEAD") == head
    assert git(en_vault.root, "status", "--porcelain") == ""
    r = vaultmem_in_process("--vault", en_vault.root, "--json", "remember", "-", "--type", "fact",
                            stdin=_words(300 * 1024))
    assert r.returncode == 2 and out_json(r)["error"]["field"] == "text"
    # a note within the limit goes in
    assert vaultmem_in_process("--vault", en_vault.root, "remember", "-", "--type", "fact",
                               stdin=_words(200 * 1024)).returncode == 0


def test_the_limit_is_the_vaults_setting(en_vault):
    assert vaultmem_in_process("--vault", en_vault.root, "config", "set", "memory.max_note_bytes",
                               "2048").returncode == 0
    r = vaultmem_in_process("--vault", en_vault.root, "remember", _words(3000), "--type", "fact")
    assert r.returncode == 2 and "2.0 KB (2,048 bytes)" in r.stderr
    r = vaultmem_in_process("--vault", en_vault.root, "config", "set", "memory.max_note_bytes", "10000000")
    assert r.returncode != 0 and "memory.max_note_bytes" in r.stderr  # not above what the index reads


def test_a_log_body_over_the_limit_is_refused(en_vault):
    root = en_vault.root
    assert vaultmem_in_process("--vault", root, "keys", "new", "ella").returncode == 0
    r = vaultmem_in_process("--vault", root, "--as", "ella", "log", "append", "--summary", "pasted a transcript",
                            "--body", "-", stdin=_words(119 * 1024))
    assert r.returncode == 2
    assert "log.max_body_bytes" in r.stderr and "--body" in r.stderr
    assert vaultmem_in_process("--vault", root, "log", "tail").stdout.count("pasted a transcript") == 0
    r = vaultmem_in_process("--vault", root, "--as", "ella", "log", "append", "--summary", "a short body",
                            "--body", _words(2000))
    assert r.returncode == 0, r.stderr


@pytest.mark.usefixtures("both_engines")
def test_a_huge_note_from_elsewhere_is_indexed_by_its_beginning_with_a_warning(en_vault):
    root = en_vault.root
    huge = root / "memories" / "pasted-transcript.md"
    huge.write_text("---\nname: pasted transcript\ndescription: a transcript\ntype: episode\nscope: global\n"
                    "status: active\n---\n" + _words(2 * 1024 * 1024, " zanzibarfinale\n"), encoding="utf-8")
    r = vaultmem_in_process("--vault", root, "index")
    assert r.returncode == 0, r.stderr
    assert "indexed in part memories/pasted-transcript.md" in r.stdout
    assert f"only its first {MAX_DOC_CHARS:,}" in r.stdout
    r = vaultmem_in_process("--vault", root, "--json", "index")
    problems = out_json(r)["problems"]
    assert [p["path"] for p in problems if p.get("partial")] == ["memories/pasted-transcript.md"]
    hits = out_json(vaultmem_in_process("--vault", root, "--json", "search", "backend port"))["hits"]
    assert hits and hits[0]["path"] == "memories/pasted-transcript.md"
    assert "**port**" in hits[0]["snippet"] and len(hits[0]["snippet"]) < 400
    # what lies beyond the indexed beginning is not found
    assert out_json(vaultmem_in_process("--vault", root, "--json", "search", "zanzibarfinale"))["hits"] == []
    b = out_json(vaultmem_in_process("--vault", root, "--json", "brief", "bob", "--task", "backend port"))
    assert any(i["path"] == "memories/pasted-transcript.md" for i in b["items"])
    assert b["tokens"] <= b["budget"]
