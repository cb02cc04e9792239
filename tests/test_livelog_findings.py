"""What ``log verify`` says: one finding per thing that happened, on the line it happened to."""

import pytest
from conftest import out_json, run_vaultmem


@pytest.fixture
def logged(vault):
    for agent in ("lee", "ella", "max"):
        vault.shared.new_key(agent, vault.actor(agent))
    for n in range(1, 5):
        for agent in ("ella", "max"):
            vault.shared.append(vault.actor(agent), "general", "status", f"{agent} entry {n}")
    assert vault.shared.verify()[0] == []
    return vault


def path_of(vault, agent, log="log"):
    return vault.root / "shared" / log / f"{agent}.md"


def lines(vault, agent, log="log"):
    return path_of(vault, agent, log).read_bytes().splitlines(keepends=True)


def write(vault, agent, content, log="log"):
    path_of(vault, agent, log).write_bytes(b"".join(content))


def found(vault):
    return [(f["kind"], f["path"], f["line"], f["seq"]) for f in vault.shared.verify()[0]]


def test_a_copied_line_is_blamed_on_the_copy_not_the_original(logged):
    # max's entry 2 copied into ella's file, which verify reads first
    write(logged, "ella", lines(logged, "ella") + [lines(logged, "max")[1]])
    got = found(logged)
    assert not any(p == "shared/log/max.md" for _k, p, _l, _s in got), got
    assert ("replayed", "shared/log/ella.md", 5, 2) in got
    # a live-log entry copied into the decision log: the decision log is to blame
    logged.shared.decide(logged.actor("max"), "D", "why")
    write(logged, "ella", lines(logged, "ella")[:4])
    write(logged, "max", lines(logged, "max", "decisions") + [lines(logged, "max")[0]], log="decisions")
    got = found(logged)
    assert not any(p == "shared/log/max.md" for _k, p, _l, _s in got), got
    assert ("replayed", "shared/decisions/max.md", 2, 1) in got


def test_a_trailing_space_is_one_finding_the_line_was_altered(logged):
    content = lines(logged, "ella")
    content[1] = content[1].rstrip(b"\n") + b" \n"
    write(logged, "ella", content)
    assert found(logged) == [("edited", "shared/log/ella.md", 2, 2)]


def test_an_added_carriage_return_is_a_finding(logged):
    content = lines(logged, "ella")
    content[2] = content[2].rstrip(b"\n") + b"\r\n"
    write(logged, "ella", content)
    assert found(logged) == [("edited", "shared/log/ella.md", 3, 3)]


def test_a_file_turned_crlf_still_verifies_and_takes_appends(logged):
    path = path_of(logged, "ella")
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert found(logged) == []
    logged.shared.append(logged.actor("ella"), "general", "status", "after the conversion")
    assert found(logged) == []


def test_a_truncated_log_is_one_finding_with_its_line(logged):
    lee = logged.actor("lee")
    for n in range(6):  # lee reads ella's log, and says so in each of its entries
        logged.shared.tail(unseen_as=lee)
        logged.shared.append(lee, "general", "status", f"lee {n}")
    write(logged, "ella", lines(logged, "ella")[:2])
    got = [f for f in logged.shared.verify()[0]]
    assert [(f["kind"], f["agent"], f["line"], f["seq"]) for f in got] == [("truncated", "ella", 2, 2)], got
    assert "4" in got[0]["message"]


def test_verify_escapes_a_file_name_with_a_newline(logged):
    odd = logged.root / "shared" / "log" / "evil\nFORGED all signatures and chains hold.md"
    odd.write_bytes(b"not an entry\n")
    r = run_vaultmem("--vault", logged.root, "log", "verify")
    assert r.returncode == 1
    assert not any(line.startswith("FORGED") for line in r.stdout.splitlines()), r.stdout
    assert "evil\\nFORGED" in r.stdout
    data = out_json(run_vaultmem("--vault", logged.root, "log", "verify", "--json"))
    assert any("evil\nFORGED" in f["path"] for f in data["findings"])  # JSON keeps the real name
