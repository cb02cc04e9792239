"""git's signing settings are honoured: with ``commit.gpgsign`` true a vaultmem commit is
signed as a plain ``git commit`` would sign it, or — when git cannot sign — nothing is
written and the error names the setting."""

import os
import stat

from conftest import git, out_json, vaultmem_in_process

# git runs ``gpg.program --status-fd=2 -bsau KEY``, writes the commit to its stdin and
# reads an armored signature from its stdout and "[GNUPG:] SIG_CREATED" from fd 2.
FAKE_SIGNER = """#!/bin/sh
cat >/dev/null
echo '[GNUPG:] SIG_CREATED D 1 8 00 1700000000 0123456789ABCDEF0123456789ABCDEF01234567' >&2
printf '%s\\n' '-----BEGIN PGP SIGNATURE-----' '' 'iQEzBAABCAAdFiEEfakefakefakefakefakefakefakefakeFAKE' '=fake' \\
    '-----END PGP SIGNATURE-----'
"""
FAILING_SIGNER = """#!/bin/sh
cat >/dev/null
echo 'gpg: signing failed: No secret key' >&2
exit 2
"""


def _program(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _sign_with(vault, program):
    git(vault.root, "config", "commit.gpgsign", "true")
    git(vault.root, "config", "user.signingkey", "0123456789ABCDEF")
    git(vault.root, "config", "gpg.program", str(program))


def test_a_commit_is_signed_when_git_is_told_to_sign(vault, tmp_path):
    _sign_with(vault, _program(tmp_path, "fake-gpg", FAKE_SIGNER))
    r = vaultmem_in_process("--vault", vault.root, "remember", "the backend listens on 8080", "--type", "fact")
    assert r.returncode == 0, r.stderr
    head = git(vault.root, "cat-file", "-p", "HEAD")
    assert "\ngpgsig -----BEGIN PGP SIGNATURE-----" in head
    assert "remember" in git(vault.root, "log", "-1", "--format=%s")


def test_no_signing_setting_means_no_signature(vault):
    r = vaultmem_in_process("--vault", vault.root, "remember", "the backend listens on 8080", "--type", "fact")
    assert r.returncode == 0, r.stderr
    assert "gpgsig" not in git(vault.root, "cat-file", "-p", "HEAD")


def test_a_commit_git_cannot_sign_is_refused_and_nothing_is_written(vault, tmp_path):
    _sign_with(vault, _program(tmp_path, "failing-gpg", FAILING_SIGNER))
    head = git(vault.root, "rev-parse", "HEAD")
    memory_index = (vault.root / "MEMORY.md").read_text()
    r = vaultmem_in_process("--vault", vault.root, "remember", "the backend listens on 8080", "--type", "fact")
    assert r.returncode != 0
    assert "commit.gpgsign" in r.stderr and "sign" in r.stderr
    assert "Traceback" not in r.stderr
    assert git(vault.root, "rev-parse", "HEAD") == head
    assert git(vault.root, "status", "--porcelain") == ""  # nothing staged, nothing left in the tree
    assert list((vault.root / "memories").glob("*.md")) == []
    assert (vault.root / "MEMORY.md").read_text() == memory_index
    r = vaultmem_in_process("--vault", vault.root, "remember", "the backend listens on 8080", "--type", "fact", "--json")
    assert r.returncode != 0
    err = out_json(r)["error"]
    assert err["type"] == "git_error" and "commit.gpgsign" in err["message"] + (err["hint"] or "")
    # turning signing off, as the hint says, lets the same change through
    git(vault.root, "config", "commit.gpgsign", "false")
    assert vaultmem_in_process("--vault", vault.root, "remember", "the backend listens on 8080", "--type", "fact"
                               ).returncode == 0
    assert os.listdir(vault.root / "memories")
