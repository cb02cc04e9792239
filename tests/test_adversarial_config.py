"""Issue 28, points 10 and 12 (in part): config typos, the usage hint said twice, a garbage
private key restored and verified, and the one form of dates in frontmatter. Real vaults in
real git repositories, the real CLI run in this process."""

from __future__ import annotations

import io
import json
import os
import re
import tarfile

import pytest
from conftest import git, out_json, vaultmem_in_process

from vaultmem import preservation
from vaultmem.models import Actor

CONFIG = ".vaultmem/config.yaml"


def head(root) -> str:
    return git(root, "rev-parse", "HEAD").strip()


# -- point 10: an unknown key is refused; doctor names one already in the file ----------------
def test_config_set_refuses_an_unknown_key_names_the_nearest_and_writes_nothing(en_vault):
    root = en_vault.root
    before, text = head(root), (root / CONFIG).read_bytes()
    for key, nearest in (("review.auto_harvst", "review.auto_harvest"), ("revew.auto_harvest", "review.auto_harvest"),
                         ("brief.windw", "brief.window"), ("hooks.claude.agnt", "hooks.claude.agent")):
        done = vaultmem_in_process("config", "set", key, "true", cwd=root)
        assert done.returncode == 2, (key, done.stdout, done.stderr)
        assert f"'{key}'" in done.stderr and f"'{nearest}'" in done.stderr, done.stderr
        assert (root / CONFIG).read_bytes() == text and head(root) == before
        assert git(root, "status", "--porcelain") == ""
    as_json = vaultmem_in_process("config", "set", "review.auto_harvst", "true", "--json", cwd=root)
    error = out_json(as_json)["error"]
    assert as_json.returncode == 2 and error["field"] == "key" and "review.auto_harvest" in error["hint"]
    # a group given whole is checked key by key
    done = vaultmem_in_process("config", "set", "hooks.claude", "{agnt: bob}", cwd=root)
    assert done.returncode == 2 and "'hooks.claude.agnt'" in done.stderr and "'hooks.claude.agent'" in done.stderr
    assert (root / CONFIG).read_bytes() == text and head(root) == before


def test_the_keys_a_user_names_are_free_and_known_keys_still_set(cli, en_vault):
    """forgetting.half_life_days / caps (per type), page_entries (per section) and brief.shares
    (per layer) are maps whose keys the user names; parse_config checks each against its list."""
    root = en_vault.root
    for key, value in (("hooks.claude", "{prompt_log: true}"), ("forgetting.caps.episode", "5000"), ("forgetting.half_life_days.fact", "100"),
                       ("forgetting.page_entries.work", "50"), ("brief.shares.page", "0.4"),
                       ("hooks.claude.agent", "bob"), ("review.auto_harvest", "true"), ("brief.min_coverage", "0.3")):
        done = cli("--vault", root, "config", "set", key, value)
        assert done.exit_code == 0, (key, done.output)
    # a map's key outside its list is still refused by the value checks, as before
    done = cli("--vault", root, "config", "set", "brief.shares.pgae", "0.4")
    assert done.exit_code != 0 and "names no layer" in done.output


def test_doctor_and_verify_report_an_unknown_key_already_in_the_config_with_its_line(en_vault):
    root = en_vault.root
    text = (root / CONFIG).read_text(encoding="utf-8")
    text = text.replace("  auto_harvest: false\n", "  auto_harvest: false\n  auto_harvst: true\n")
    text += "colour: blue\n"
    (root / CONFIG).write_text(text, encoding="utf-8")
    lines = text.splitlines()
    typo_line, colour_line = lines.index("  auto_harvst: true") + 1, lines.index("colour: blue") + 1
    # the vault still works: an unknown key is reported, not fatal
    assert vaultmem_in_process("remember", "the api listens on 8080", "--type", "fact", cwd=root).returncode == 0
    done = vaultmem_in_process("doctor", "--json", cwd=root)
    assert done.returncode == 1
    found = {c["check"]: c for c in out_json(done)["checks"]}["the config names only known settings"]
    assert not found["ok"]
    problems = {p["line"]: p for p in found["problems"]}
    assert set(problems) == {typo_line, colour_line}
    assert all(p["path"] == CONFIG for p in problems.values())
    assert "review.auto_harvst" in problems[typo_line]["problem"] and "review.auto_harvest" in problems[typo_line]["problem"]
    assert "colour" in problems[colour_line]["problem"]
    text_out = vaultmem_in_process("doctor", cwd=root)
    assert f"{CONFIG}:{typo_line}" in text_out.stdout, text_out.stdout
    verified = vaultmem_in_process("verify", "--json", cwd=root)
    assert verified.returncode == 1
    assert not {c["check"]: c for c in out_json(verified)["checks"]}["the config names only known settings"]["ok"]


# -- point 12: "Did you mean" once ---------------------------------------------------------------
@pytest.mark.parametrize("args, suggestion", [(["config", "get", "x"], "'set'"), (["config", "shw"], "'show'"),
                                              (["review", "lst"], "'list'"), (["confg", "show"], "'config'")])
def test_a_mistyped_command_is_hinted_once(cli, en_vault, args, suggestion):
    result = cli("--vault", en_vault.root, *args)
    assert result.exit_code == 2
    assert result.output.count("Did you mean") == 1 and suggestion in result.output, result.output
    as_json = cli("--vault", en_vault.root, *args, "--json")
    message = json.loads(as_json.stdout)["error"]["message"]
    assert message.count("Did you mean") == 1 and suggestion in message, message


# -- point 12: a garbage private key -------------------------------------------------------------
def keys_archive(path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def backed_up(en_vault, tmp_path):
    """A vault with alice's key, its bundle and its keys archive."""
    en_vault.shared.new_key("alice", Actor("alice"))
    bundle, keys = tmp_path / "team.bundle", tmp_path / "team-keys.tgz"
    assert vaultmem_in_process("backup", "create", bundle, "--keys", keys, cwd=en_vault.root).returncode == 0
    return en_vault.root, bundle, keys


def test_restore_refuses_a_keys_archive_holding_a_key_that_does_not_parse(backed_up, tmp_path):
    root, bundle, good = backed_up
    garbage = tmp_path / "garbage.tgz"
    keys_archive(garbage, {"alice.key": os.urandom(4096)})
    dest = tmp_path / "restored"
    done = vaultmem_in_process("backup", "restore", bundle, dest, "--keys", garbage)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert str(garbage) in done.stderr and "alice.key" in done.stderr and "nothing was restored" in done.stderr
    assert not dest.exists()
    # a key of the right length that is no base64, and one that is not 32 bytes
    for data in (b"!" * 44 + b"\n", b"c2hvcnQ=\n"):
        keys_archive(garbage.with_name("bad.tgz"), {"alice.key": data})
        done = vaultmem_in_process("backup", "restore", bundle, dest, "--keys", garbage.with_name("bad.tgz"))
        assert done.returncode == 2 and "alice.key" in done.stderr and not dest.exists()
        garbage.with_name("bad.tgz").unlink()
    # a file that is no archive at all
    (tmp_path / "noise").write_bytes(os.urandom(3000))
    done = vaultmem_in_process("backup", "restore", bundle, dest, "--keys", tmp_path / "noise")
    assert done.returncode == 2 and str(tmp_path / "noise") in done.stderr and not dest.exists()
    # the archive backup create wrote still restores, and verifies
    done = vaultmem_in_process("backup", "restore", bundle, dest, "--keys", good)
    assert done.returncode == 0, done.stderr


def test_restore_refuses_an_oversize_keys_archive_or_key_before_reading_it(backed_up, tmp_path):
    _root, bundle, _good = backed_up
    dest = tmp_path / "restored"
    huge = tmp_path / "huge.tgz"  # sparse: costs no disk and is never read
    with open(huge, "wb") as fh:
        fh.truncate(preservation.MAX_KEYS_ARCHIVE_BYTES + 1)
    done = vaultmem_in_process("backup", "restore", bundle, dest, "--keys", huge)
    assert done.returncode == 2 and str(huge) in done.stderr and "bytes" in done.stderr, done.stderr
    assert not dest.exists()
    big_member = tmp_path / "big-member.tgz"  # zeros: a small archive whose key is oversize
    keys_archive(big_member, {"alice.key": b"\0" * (preservation.MAX_KEY_BYTES + 1)})
    assert big_member.stat().st_size < 4096
    done = vaultmem_in_process("backup", "restore", bundle, dest, "--keys", big_member)
    assert done.returncode == 2 and "alice.key" in done.stderr and "bytes" in done.stderr, done.stderr
    assert not dest.exists()


def test_verify_fails_on_a_private_key_that_does_not_parse(backed_up):
    root, _bundle, _keys = backed_up
    assert vaultmem_in_process("verify", cwd=root).returncode == 0
    key = root / ".vaultmem/keys/alice.key"
    for garbage, why in ((os.urandom(40), "not base64"), (b"c2hvcnQ=\n", "holds 5 bytes"), (os.urandom(4096), "bytes")):
        key.write_bytes(garbage)
        done = vaultmem_in_process("verify", "--json", cwd=root)
        assert done.returncode == 1
        found = {c["check"]: c for c in out_json(done)["checks"]}["the private keys parse"]
        assert not found["ok"] and found["problems"][0]["path"] == ".vaultmem/keys/alice.key"
        assert why in found["problems"][0]["problem"], found
    with open(key, "wb") as fh:  # sparse and oversize: refused by its size, never read whole
        fh.truncate(200 * 1024 * 1024)
    done = vaultmem_in_process("verify", "--json", cwd=root)
    found = {c["check"]: c for c in out_json(done)["checks"]}["the private keys parse"]
    assert done.returncode == 1 and "bytes" in found["problems"][0]["problem"]


# -- point 12: one form of dates in frontmatter ------------------------------------------------
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def frontmatter_dates(text: str) -> dict[str, str]:
    """Each frontmatter line whose value holds a time of day: key → the value as written."""
    block = text.split("---\n", 2)[1]
    return {m.group(1): m.group(2) for m in re.finditer(r"(?m)^(\w+): (.*\d\d:\d\d.*)$", block)}


def test_every_date_a_note_and_an_inbox_item_carry_is_written_one_way(cli, en_vault):
    root = en_vault.root

    def vm(*args):
        done = cli("--vault", root, *args)
        assert done.exit_code == 0, (args, done.output)

    vm("remember", "the api listens on 8080", "--type", "fact")
    for text in ("deploys happen on tuesdays", "the staging db is postgres 16", "we pin node 22"):
        vm("--as", "bob", "remember", text, "--type", "fact")
    waiting = sorted(p.stem for p in (root / "inbox").glob("i-*.md"))
    assert len(waiting) == 3
    vm("review", "edit", waiting[0], "--type", "decision")
    vm("review", "approve", waiting[0])
    vm("review", "reject", waiting[1], "--reason", "not so")
    vm("review", "edit", waiting[2], "--type", "decision")
    seen = {}
    for folder in ("memories", "inbox", "archive/inbox"):
        for path in sorted((root / folder).glob("*.md")):
            for key, value in frontmatter_dates(path.read_text(encoding="utf-8")).items():
                seen[f"{folder}/{path.name}:{key}"] = value
    assert {k.rsplit(":", 1)[1] for k in seen} >= {"created", "confirmed", "proposed", "reviewed",
                                                   "note_created", "note_confirmed"}
    odd = {k: v for k, v in seen.items() if not STAMP.fullmatch(v)}
    assert not odd, odd
