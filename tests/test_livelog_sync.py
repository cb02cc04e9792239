"""``sync`` between real clones through a bare remote: it never pushes a log that does not
verify, pushes to the branch the clone tracks, and survives other clones pushing at once."""

import subprocess
import sys

import pytest
from conftest import SAFETY_NET, git, run_vaultmem

from vaultmem import Vault

AGENTS = ["ann", "bob", "cat", "dan", "eve"]


def bare(tmp_path, branch="main"):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", branch, str(remote)], check=True)
    return remote


def clone(remote, dest, keys_from, branch=None):
    subprocess.run(["git", "clone", "-q", *(["-b", branch] if branch else []), str(remote), str(dest)], check=True)
    keys = dest / ".vaultmem" / "keys"
    keys.mkdir(parents=True, exist_ok=True)
    for key in (keys_from / ".vaultmem" / "keys").glob("*.key"):
        (keys / key.name).write_bytes(key.read_bytes())
    return Vault(dest)


@pytest.fixture
def team(vault):
    for agent in AGENTS:
        vault.shared.new_key(agent, vault.actor(agent))
    return vault


def published(team, tmp_path, branch="main"):
    remote = bare(tmp_path, branch)
    git(team.root, "remote", "add", "origin", str(remote))
    git(team.root, "push", "-q", "origin", f"HEAD:{branch}")
    return remote


def sync(v, agent):
    return run_vaultmem("--vault", v.root, "--as", agent, "sync")


def test_sync_refuses_to_push_a_log_that_does_not_verify(team, tmp_path):
    remote = published(team, tmp_path)
    a = clone(remote, tmp_path / "a", team.root)
    b = clone(remote, tmp_path / "b", team.root)
    for n in range(3):
        a.shared.append(a.actor("ann"), "general", "status", f"ann {n}")
    assert sync(a, "ann").returncode == 0
    # someone with write access to the remote edits ann's entry 2 and pushes it
    path = a.root / "shared" / "log" / "ann.md"
    path.write_text(path.read_text(encoding="utf-8").replace("ann 1", "ann X", 1), encoding="utf-8")
    git(a.root, "commit", "-qam", "tamper")
    git(a.root, "push", "-q", "origin", "HEAD:main")
    b.shared.append(b.actor("bob"), "general", "status", "bob's news")
    before = git(remote, "rev-parse", "main")
    r = sync(b, "bob")
    assert r.returncode != 0, r.stdout + r.stderr
    assert "shared/log/ann.md:2" in r.stderr and "edited" in r.stderr, r.stderr
    assert "not pushed" in r.stderr and "log verify" in r.stderr
    assert git(remote, "rev-parse", "main") == before  # bob's clone pushed nothing
    assert sync(b, "bob").returncode != 0  # and it stays so until the log is put right


def test_sync_pushes_to_the_tracked_upstream_branch(team, tmp_path):
    remote = published(team, tmp_path, branch="master")
    a = clone(remote, tmp_path / "a", team.root)
    git(a.root, "checkout", "-q", "-b", "main", "--track", "origin/master")
    git(a.root, "branch", "-q", "-D", "master")
    b = clone(remote, tmp_path / "b", team.root)
    a.shared.append(a.actor("ann"), "general", "status", "from a's main")
    b.shared.append(b.actor("bob"), "general", "status", "from b's master")
    for v, agent in ((a, "ann"), (b, "bob"), (a, "ann")):
        r = sync(v, agent)
        assert r.returncode == 0, r.stderr
    assert "origin/master" in r.stdout
    branches = git(remote, "branch", "--format=%(refname:short)").split()
    assert branches == ["master"]  # no stray origin/main
    for v in (a, b):
        assert {e.summary for e in v.shared.tail(n=10)} == {"from a's main", "from b's master"}


def test_sync_refuses_a_branch_the_remote_does_not_have(team, tmp_path):
    remote = published(team, tmp_path, branch="master")
    a = clone(remote, tmp_path / "a", team.root)
    git(a.root, "checkout", "-q", "-b", "main")  # no upstream; the remote has only master
    a.shared.append(a.actor("ann"), "general", "status", "x")
    r = sync(a, "ann")
    assert r.returncode != 0
    assert "master" in r.stderr and "set-upstream-to" in r.stderr, r.stderr
    assert git(remote, "branch", "--format=%(refname:short)").split() == ["master"]


def test_sync_without_a_remote_points_to_log_commit(team):
    team.shared.append(team.actor("ann"), "general", "status", "not committed yet")
    r = sync(team, "ann")
    assert r.returncode != 0
    assert "remote add" in r.stderr and "log commit" in r.stderr, r.stderr


@pytest.mark.soak
def test_five_clones_syncing_at_once_all_succeed_and_converge(team, tmp_path):
    remote = published(team, tmp_path)
    clones = [clone(remote, tmp_path / f"c{n}", team.root) for n in range(5)]
    for round_ in range(4):
        for v, agent in zip(clones, AGENTS):
            for k in range(5):
                v.shared.append(v.actor(agent), "general", "status", f"{agent} {round_}.{k}")
        procs = [subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(v.root), "--as", agent, "sync"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for v, agent in zip(clones, AGENTS)]
        results = [p.communicate(timeout=SAFETY_NET) + (p.returncode,) for p in procs]
        assert [code for _o, _e, code in results] == [0] * 5, [err for _o, err, code in results if code]
    for v, agent in zip(clones, AGENTS):  # one more round, one at a time, brings everyone up to date
        assert sync(v, agent).returncode == 0
    views = [[e.line for e in v.shared.tail(n=1000)] for v in clones]
    assert len(views[0]) == 100
    assert all(view == views[0] for view in views)
    for v in clones:
        assert v.shared.verify()[0] == []
