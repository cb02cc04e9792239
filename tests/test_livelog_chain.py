"""A leaked, revoked key: what it signs after the revocation in its agent's chain is
rejected whatever timestamp it claims; a rotation it signs installs no key."""

import base64
import json
import os
import subprocess
import sys

import pytest
from conftest import SAFETY_NET, Lines, out_json, run_vaultmem

from vaultmem.livelog import (append, key_id, load_private_key, new_private_key, public_raw, read_entries)
from vaultmem.parse.logline import LogEntry, line_hash, render

BACKDATED = "2001-01-01T00:00:00.000000Z"  # long before the key was revoked


def vm(cli, vault, *args, agent=None):
    return cli("--vault", vault.root, *(["--as", agent] if agent else []), *args)


@pytest.fixture
def leaked(cli, vault):
    """ella's first key leaked: she rotated, then revoked it. Returns (vault, leaked key)."""
    for agent in ("lee", "ella"):
        assert vm(cli, vault, "keys", "new", agent, agent=agent).exit_code == 0
    vm(cli, vault, "log", "append", "--summary", "ella before the leak", agent="ella")
    old = load_private_key(vault.root, "ella")
    assert vm(cli, vault, "keys", "rotate", "ella", agent="ella").exit_code == 0
    r = vm(cli, vault, "keys", "revoke", "ella", key_id(public_raw(old)), "--reason", "leaked", agent="ella")
    assert r.exit_code == 0, r.output
    vm(cli, vault, "log", "append", "--summary", "ella after the revocation", agent="ella")
    assert vm(cli, vault, "log", "verify").exit_code == 0
    return vault, old


def forge(root, agent, private, summary, type_="status", extra=None, ts=BACKDATED, log="live", seq=None,
          prev=None):
    """What a local process holding ``private`` can write: a whole, signed line appended
    to the file, its chain fields chosen at will (by default: linked to the last line)."""
    folder = "log" if log == "live" else "decisions"
    path = root / "shared" / folder / f"{agent}.md"
    last = path.read_text(encoding="utf-8").splitlines()[-1] if path.exists() else None
    if seq is None:
        seq = int(json.loads(last[last.rfind("<!-- vm1 ") + 9:-4])["seq"]) + 1 if last else 1
    if prev is None:
        prev = line_hash(last) if last else ""
    e = LogEntry(log=log, agent=agent, ts=ts, seq=seq, prev=prev, nonce=os.urandom(8).hex(), channel="general",
                 type=type_, summary=summary, extra=dict(extra or {}), kid=key_id(public_raw(private)))
    e.sig = base64.b64encode(private.sign(e.payload())).decode()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(render(e) + "\n")
    return e


def findings(cli, vault):
    r = vm(cli, vault, "log", "verify", "--json")
    return r.exit_code, {(f["kind"], f["seq"]) for f in out_json(r)["findings"]}


def tail(cli, vault):
    r = vm(cli, vault, "log", "tail", "-n", "100", "--json")
    return {json.loads(x)["summary"]: json.loads(x) for x in r.stdout.splitlines()}


def test_a_backdated_entry_signed_with_a_revoked_key_is_rejected(cli, leaked):
    vault, old = leaked
    forged = forge(vault.root, "ella", old, "drop the production database")
    code, found = findings(cli, vault)
    assert code == 1 and ("revoked-key", forged.seq) in found, found
    shown = tail(cli, vault)
    assert shown["drop the production database"].get("problem")
    assert not shown["ella after the revocation"].get("problem")
    text = vm(cli, vault, "log", "tail", "-n", "100").stdout
    line = next(x for x in text.splitlines() if "drop the production database" in x)
    assert "NOT VERIFIED" in line
    # the brief does not hand it to another agent as live context
    data = out_json(vm(cli, vault, "brief", "lee", "--task", "database", "--json"))
    assert "drop the production database" not in data["markdown"]
    assert "ella after the revocation" in data["markdown"]
    assert any(forged.id in w and "left out of the brief" in w for w in data["warnings"]), data  # said, not hidden


def test_an_entry_appended_through_the_api_with_a_revoked_key_is_rejected(cli, leaked):
    vault, old = leaked
    e = append(vault.root, "live", "ella", "general", "status", "through the library", private=old).entry
    code, found = findings(cli, vault)
    assert code == 1 and ("revoked-key", e.seq) in found
    assert tail(cli, vault)["through the library"].get("problem")


def test_a_rotation_signed_with_a_revoked_key_installs_no_key(cli, leaked):
    vault, old = leaked
    evil = new_private_key()
    raw = public_raw(evil)
    rot = forge(vault.root, "ella", old, "ella rotates", type_="key-rotate",
                extra={"public": base64.b64encode(raw).decode(), "kid": key_id(raw)})
    after = forge(vault.root, "ella", evil, "signed with the attacker's key")
    # the same through the library's own append
    api = append(vault.root, "live", "ella", "general", "status", "evil via the library", private=evil).entry
    r = run_vaultmem("--vault", vault.root, "log", "verify")
    assert r.returncode == 1
    code, found = findings(cli, vault)
    assert ("revoked-key", rot.seq) in found
    assert ("unknown-key", after.seq) in found and ("unknown-key", api.seq) in found
    shown = tail(cli, vault)
    assert shown["signed with the attacker's key"].get("problem")
    assert shown["evil via the library"].get("problem")


def test_a_rotation_forged_into_the_chain_before_the_revocation_installs_no_key(cli, leaked):
    """The leaked key was valid before its revocation: a rotation written there, as a
    second entry with an earlier sequence number, is a fork, not a key."""
    vault, old = leaked
    path = vault.root / "shared" / "log" / "ella.md"
    first = read_entries(path)[0][0]
    evil = new_private_key()
    raw = public_raw(evil)
    rot = forge(vault.root, "ella", old, "ella rotates", type_="key-rotate", seq=2, prev=line_hash(first.line),
                extra={"public": base64.b64encode(raw).decode(), "kid": key_id(raw)})
    after = forge(vault.root, "ella", evil, "after a forked rotation", ts="2099-01-01T00:00:00.000000Z")
    code, found = findings(cli, vault)
    assert code == 1 and ("forked", rot.seq) in found
    assert ("unknown-key", after.seq) in found
    assert tail(cli, vault)["after a forked rotation"].get("problem")
    # the same rotation put in place of the genuine entry 2 (which is deleted)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    genuine_2 = next(x for x in lines if '"seq":2,' in x and rot.nonce not in x)
    path.write_text("".join(x for x in lines if x != genuine_2), encoding="utf-8")
    code, found = findings(cli, vault)
    assert code == 1 and ("unknown-key", after.seq) in found
    assert tail(cli, vault)["after a forked rotation"].get("problem")


def test_a_backdated_decision_signed_with_a_revoked_key_is_rejected(cli, leaked):
    vault, old = leaked
    vault.shared.decide(vault.actor("ella"), "Use PostgreSQL", "JSONB")
    forged = forge(vault.root, "ella", old, "Rewrite everything in Perl", type_="decision", log="decisions")
    code, found = findings(cli, vault)
    assert code == 1 and ("revoked-key", forged.seq) in found


def test_follow_marks_a_forged_entry_as_it_arrives(cli, leaked):
    vault, old = leaked
    proc = subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault.root), "log", "tail", "-f"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = Lines(proc.stdout)
    try:
        out.wait_for(lambda line: "ella after the revocation" in line)
        forge(vault.root, "ella", old, "forged while followed")
        vault.shared.append(vault.actor("lee"), "general", "status", "genuine while followed")
        forged = out.wait_for(lambda line: "forged while followed" in line)
        genuine = out.wait_for(lambda line: "genuine while followed" in line)
    finally:
        proc.terminate()
        proc.wait(timeout=SAFETY_NET)
    assert "NOT VERIFIED" in forged and "NOT VERIFIED" not in genuine


def test_a_revocation_appended_after_a_tail_still_counts_for_the_next(cli, vault):
    """tail remembers how far it searched a file for rotations; what is appended later is
    searched the next time."""
    for agent in ("lee", "ella"):
        assert vm(cli, vault, "keys", "new", agent, agent=agent).exit_code == 0
    for n in range(3):
        vm(cli, vault, "log", "append", "--summary", f"plain {n}", agent="ella")
    assert not any(e.get("problem") for e in tail(cli, vault).values())  # the search is remembered
    old = load_private_key(vault.root, "ella")
    assert vm(cli, vault, "keys", "rotate", "ella", agent="ella").exit_code == 0
    assert vm(cli, vault, "keys", "revoke", "ella", key_id(public_raw(old)), agent="ella").exit_code == 0
    forge(vault.root, "ella", old, "after the cached search")
    assert tail(cli, vault)["after the cached search"].get("problem")
    # a file rewritten in place (not only appended to) is searched again from its start
    path = vault.root / "shared" / "log" / "ella.md"
    path.write_bytes(path.read_bytes())
    assert tail(cli, vault)["after the cached search"].get("problem")
