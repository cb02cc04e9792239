"""Supersession by key and the conflicts report (real git vaults, the real CLI)."""

import json

from conftest import git, out_json


def vm(cli, vault, *args, agent=None, input=None):
    extra = ["--as", agent] if agent else []
    return cli("--vault", vault.root, *extra, *args, input=input)


def notes(vault, folder="memories"):
    return sorted(p.name for p in (vault.root / folder).glob("*.md"))


def write(vault, slug, body, **meta):
    head = "".join(f"{k}: {v}\n" for k, v in {"name": slug, "type": "fact", **meta}.items())
    (vault.root / "memories" / f"{slug}.md").write_text(f"---\n{head}---\n{body}\n", encoding="utf-8")


def test_a_newer_note_with_the_same_key_supersedes_the_older_in_one_commit(cli, vault):
    assert vm(cli, vault, "remember", "后端端口固定8080", "--type", "fact", "--name", "后端端口",
              "--key", "backend.port").exit_code == 0
    before = git(vault.root, "rev-list", "--count", "HEAD")
    r = vm(cli, vault, "remember", "后端端口改成9090了", "--type", "fact", "--name", "后端端口9090",
           "--key", "backend.port", "--json")
    assert r.exit_code == 0, r.output
    assert out_json(r)["superseded"] == ["memories/后端端口"]
    assert int(git(vault.root, "rev-list", "--count", "HEAD")) == int(before) + 1  # one commit
    assert notes(vault) == ["后端端口9090.md"]
    old = (vault.root / "archive/memories/后端端口.md").read_text(encoding="utf-8")
    assert "status: superseded" in old and "superseded_by: memories/后端端口9090" in old and "8080" in old
    assert vault.notes.read("后端端口9090").meta["supersedes"] == "memories/后端端口"
    index = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert "后端端口9090" in index and "[[memories/后端端口|" not in index
    assert "supersedes memories/后端端口" in git(vault.root, "log", "-1", "--format=%s")
    assert git(vault.root, "status", "--porcelain") == ""
    # search and the brief know only the current value; the old one is found on purpose
    assert [h.doc.id for h in vault.search("后端端口")] == ["memories/后端端口9090.md"]
    assert [h.doc.id for h in vault.search("后端端口", kinds=("archive",), statuses=("superseded",))] == ["archive/memories/后端端口.md"]
    brief = vm(cli, vault, "brief", "后端", "--task", "后端端口是多少").output
    assert "9090" in brief and "8080" not in brief


def test_the_same_key_in_another_scope_is_another_fact(cli, vault):
    vm(cli, vault, "remember", "Editor theme is dark", "--type", "preference", "--key", "editor.theme",
       "--agent", "前端")
    vm(cli, vault, "remember", "Editor theme is light", "--type", "preference", "--key", "editor.theme",
       "--agent", "后端")
    vm(cli, vault, "remember", "Editor theme is solarized", "--type", "preference", "--key", "editor.theme")
    assert len(notes(vault)) == 3 and notes(vault, "archive/memories") == []
    # a note without a key never supersedes
    vm(cli, vault, "remember", "Editor theme is dark for everyone", "--type", "preference")
    assert len(notes(vault)) == 4


def test_approving_an_agents_add_with_a_known_key_supersedes_through_the_gate(cli, vault):
    vm(cli, vault, "remember", "The backend listens on 8080", "--type", "fact", "--name", "backend port",
       "--key", "backend.port")
    r = vm(cli, vault, "remember", "The backend listens on 9090 now", "--type", "fact", "--name", "backend 9090",
           "--key", "backend.port", "--json", agent="ella")
    assert r.exit_code == 0, r.output
    assert notes(vault) == ["backend-port.md"]  # an agent only proposes: nothing superseded yet
    item = out_json(r)["items"][0]["id"]
    r = vm(cli, vault, "review", "approve", item, "--json")
    assert r.exit_code == 0, r.output
    assert notes(vault) == ["backend-9090.md"] and notes(vault, "archive/memories") == ["backend-port.md"]
    assert "supersedes memories/backend-port (same key)" in git(vault.root, "log", "-1", "--format=%B")


def test_two_hand_written_values_of_one_key_brief_only_the_newest_and_are_reported(cli, vault):
    write(vault, "port-a", "The backend listens on port 8080.", key="backend.port", confirmed="2026-11-01T10:00:00Z")
    write(vault, "port-b", "The backend listens on port 9090.", key="backend.port", confirmed="2026-11-20T10:00:00Z")
    r = vm(cli, vault, "brief", "后端", "--task", "backend port", "--json")
    assert r.exit_code == 0, r.output
    got = out_json(r)
    cited = [i["path"] for i in got["items"]]
    assert "memories/port-b.md" in cited and "memories/port-a.md" not in cited
    assert any("backend.port" in w and "conflicts" in w for w in got["warnings"])
    r = vm(cli, vault, "conflicts", "--json")
    assert r.exit_code == 0, r.output
    found = out_json(r)["conflicts"]
    assert [c["kind"] for c in found] == ["same-key"] and found[0]["key"] == "backend.port"
    assert {n["path"]: n["value"] for n in found[0]["notes"]} == {"memories/port-a.md": "8080",
                                                                  "memories/port-b.md": "9090"}
    assert git(vault.root, "status", "--porcelain").splitlines() == ["?? memories/port-a.md", "?? memories/port-b.md"]
    # the same value twice, in other words, is no conflict
    write(vault, "port-b", "Port 8080 is where the backend listens.", key="backend.port")
    assert out_json(vm(cli, vault, "conflicts", "--json"))["conflicts"] == []


def test_a_value_that_three_other_sources_contradict_is_an_outlier(cli, vault):
    """Seed 003's mis-heard credential: three sources agree, the stored note differs by a character."""
    assert vm(cli, vault, "remember", "VPN 账号是 5821-Q1X（语音转写）", "--type", "fact", "--name", "vpn账号",
              "--key", "vpn.account").exit_code == 0
    write(vault, "ops-handbook", "Ops handbook: the VPN account is 5821-Q7X.")
    assert vm(cli, vault, "page", "ensure", "运维", agent="lee").exit_code == 0
    assert vm(cli, vault, "page", "add", "运维", "核对过：VPN 账号 5821-Q7X", agent="lee").exit_code == 0
    assert vm(cli, vault, "keys", "new", "ella", agent="ella").exit_code == 0
    assert vm(cli, vault, "log", "append", "--summary", "logged in with 5821-Q7X, works", agent="ella").exit_code == 0
    r = vm(cli, vault, "conflicts")
    assert r.exit_code == 0, r.output
    assert "memories/vpn账号.md says '5821-Q1X'; 3 other sources say '5821-Q7X'" in r.output
    got = out_json(vm(cli, vault, "conflicts", "--json"))["conflicts"]
    assert len(got) == 1 and got[0]["kind"] == "outlier" and got[0]["key"] == "vpn.account"
    links = [s["link"] for s in got[0]["sources"]]
    assert "[[memories/ops-handbook]]" in links and any(link.startswith("[[agents/运维#^") for link in links)
    assert any(link.startswith("shared/") for link in links)  # the log entry, by its line
    # the sources that agree are not outliers themselves; fewer witnesses than asked for: none
    assert out_json(vm(cli, vault, "conflicts", "--min-sources", "4", "--json"))["conflicts"] == []
    assert vm(cli, vault, "conflicts", "--min-sources", "0").exit_code != 0
    # the note is never changed by the report
    assert "5821-Q1X" in (vault.root / "memories" / "vpn账号.md").read_text(encoding="utf-8")


def test_codes_that_differ_by_design_short_numbers_and_unkeyed_notes_are_not_outliers(cli, vault):
    write(vault, "ports", "Frontend 3000, backend 3001, cache 3002.", key="ports")
    write(vault, "builds", "Release builds: 20261101 and 20261102 and 20261103.", key="builds")  # holds both
    write(vault, "last-build", "The last build was 20261104.")  # no key: a record, not a stated value
    for n in range(3):
        write(vault, f"other-{n}", f"Build 20261101 and 20261105 passed; port 3000 ({n}).")
    assert out_json(vm(cli, vault, "conflicts", "--json"))["conflicts"] == []


def test_an_unreadable_note_is_named_and_the_rest_still_checked(cli, vault):
    write(vault, "port-a", "The backend listens on port 8080.", key="backend.port")
    write(vault, "port-b", "The backend listens on port 9090.", key="backend.port")
    (vault.root / "memories" / "broken.md").write_text("---\nname: [unclosed\n---\nbody\n", encoding="utf-8")
    r = vm(cli, vault, "conflicts", "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert [c["key"] for c in got["conflicts"]] == ["backend.port"]
    assert [p["path"] for p in got["problems"]] == ["memories/broken.md"] and got["problems"][0]["line"]
