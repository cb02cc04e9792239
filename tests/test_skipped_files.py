"""A read never skips a file in silence: search, brief and ask name each file they could
not read (broken YAML, a missing section) with its line — one line per file on stderr,
a ``problems`` list in JSON — and a brief for a role whose own page is broken says so."""

import json

import pytest
from conftest import built_once, out_json, vaultmem_in_process

pytestmark = pytest.mark.usefixtures("both_engines")

BROKEN_NOTE = "---\nname: 后端端口\ntype: fact\ntags: [backend\n---\n后端端口固定8080\n"  # line 4: an unclosed [


@pytest.fixture
def team(tmp_path, made_vaults, cli):
    def build(v):
        assert cli("--vault", v.root, "--as", "lee", "page", "ensure", "前端审查").exit_code == 0
        assert cli("--vault", v.root, "--as", "lee", "page", "add", "前端审查", "接口联调时先确认后端端口").exit_code == 0
        assert cli("--vault", v.root, "remember", "后端端口由网关分配", "--type", "fact").exit_code == 0
        (v.root / "memories" / "x.md").write_text(BROKEN_NOTE, encoding="utf-8")

    vault = built_once(made_vaults, ("skipped_files team",), tmp_path / "vault", build)

    def vm(*args, **kw):
        return vaultmem_in_process("--vault", vault.root, *args, **kw)

    vault.vm = vm
    return vault


def skipped_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "memories/x.md" in line]


def test_search_names_a_broken_note_with_its_line(team):
    r = team.vm("search", "后端端口")
    assert r.returncode == 0 and "memories/后端端口由网关分配.md" in r.stdout  # the rest is searched
    (line,) = skipped_lines(r.stderr)  # one line for the file
    assert line.startswith("warning: memories/x.md:") and "not searched" in line
    problems = out_json(team.vm("--json", "search", "后端端口"))["problems"]
    assert [(p["path"], isinstance(p["line"], int)) for p in problems] == [("memories/x.md", True)]
    assert skipped_lines(team.vm("search", "后端端口", "--agent", "前端审查").stderr)


def test_brief_and_ask_name_a_broken_note(team):
    r = team.vm("brief", "前端审查", "--task", "确认后端端口")
    assert r.returncode == 0 and "[记忆简报 - 前端审查]" in r.stdout
    assert len(skipped_lines(r.stderr)) == 1
    assert [p["path"] for p in out_json(team.vm("--json", "brief", "前端审查", "--task", "确认后端端口"))["problems"]] \
        == ["memories/x.md"]
    r = team.vm("ask", "前端审查", "后端端口")
    assert r.returncode == 0 and len(skipped_lines(r.stderr)) == 1
    assert [p["path"] for p in out_json(team.vm("--json", "ask", "前端审查", "后端端口"))["problems"]] == ["memories/x.md"]
    r = team.vm("dispatch", "前端审查", "--task", "确认后端端口", "--as", "lee")
    assert r.returncode == 0 and len(skipped_lines(r.stderr)) == 1


def test_the_line_named_is_the_line_of_the_break(team):
    line = skipped_lines(team.vm("search", "后端端口").stderr)[0]
    problem = out_json(team.vm("--json", "search", "后端端口"))["problems"][0]
    assert f"memories/x.md:{problem['line']}:" in line and 2 <= problem["line"] <= 5


def test_a_fixed_file_is_no_longer_named(team):
    assert skipped_lines(team.vm("search", "后端端口").stderr)
    (team.root / "memories" / "x.md").write_text(BROKEN_NOTE.replace("[backend", "[backend]"), encoding="utf-8")
    r = team.vm("search", "后端端口")
    assert r.stderr == "" and "memories/x.md" in r.stdout
    assert out_json(team.vm("--json", "search", "后端端口"))["problems"] == []


def test_many_broken_files_are_summed_up_not_flooded(team):
    for n in range(30):
        (team.root / "memories" / f"bad-{n:02d}.md").write_text(BROKEN_NOTE, encoding="utf-8")
    r = team.vm("search", "后端端口")
    assert r.returncode == 0
    assert len(r.stderr.splitlines()) <= 12 and "more" in r.stderr and "vaultmem index" in r.stderr
    assert len(out_json(team.vm("--json", "search", "后端端口"))["problems"]) == 31


def test_another_roles_broken_page_is_not_this_roles_business(team):
    (team.root / "agents" / "后端架构.md").write_text("---\nname: [x\n---\n## 工作记忆\n", encoding="utf-8")
    r = team.vm("brief", "前端审查", "--task", "确认后端端口")
    assert "agents/后端架构.md" not in r.stderr
    assert "agents/后端架构.md" in team.vm("search", "后端端口").stderr  # a search of everything names it


def test_a_brief_for_a_role_whose_own_page_is_broken_says_so(team):
    page = team.root / "agents" / "前端审查.md"
    page.write_text(page.read_text(encoding="utf-8").replace("name: 前端审查", "name: [前端审查"), encoding="utf-8")
    r = team.vm("brief", "前端审查", "--task", "确认后端端口")
    assert r.returncode == 0
    assert "agents/前端审查.md" in r.stdout and "无法读取" in r.stdout  # in the brief itself
    own = [line for line in r.stderr.splitlines() if "agents/前端审查.md" in line]
    assert len(own) == 1 and "page" in own[0] and "brief" in own[0]
    data = out_json(team.vm("--json", "brief", "前端审查", "--task", "确认后端端口"))
    assert "agents/前端审查.md" in [p["path"] for p in data["problems"]]
    assert "无法读取" in data["markdown"]


def test_an_english_brief_says_so_in_english(en_vault):
    def vm(*args):
        return vaultmem_in_process("--vault", en_vault.root, *args)

    assert vm("page", "ensure", "reviewer", "--as", "orch").returncode == 0
    page = en_vault.root / "agents" / "reviewer.md"
    page.write_text(page.read_text(encoding="utf-8").replace("name: reviewer", "name: [reviewer"), encoding="utf-8")
    r = vm("brief", "reviewer", "--task", "check the port")
    assert r.returncode == 0 and "could not be read" in r.stdout and "agents/reviewer.md" in r.stdout


def test_a_broken_identity_is_skipped_and_said_not_fatal(team):
    (team.root / "identity" / "前端审查.md").write_text("---\nrole: [x\n---\n你是前端审查。\n", encoding="utf-8")
    r = team.vm("brief", "前端审查", "--task", "确认后端端口")
    assert r.returncode == 0 and "[记忆简报 - 前端审查]" in r.stdout
    assert "identity/前端审查.md" in r.stdout and "无法读取" in r.stdout
    assert [line for line in r.stderr.splitlines() if "identity/前端审查.md" in line]
    data = out_json(team.vm("--json", "brief", "前端审查", "--task", "确认后端端口"))
    assert "identity/前端审查.md" in [p["path"] for p in data["problems"]] and not data["identity_included"]


def test_an_identity_that_is_not_utf8_is_skipped_and_said_not_fatal(team):
    (team.root / "identity" / "前端审查.md").write_bytes("---\nrole: 前端审查\n---\n坏字节 \xff\n".encode("utf-8")
                                                          .replace(b"\xc3\xbf", b"\xff"))
    r = team.vm("brief", "前端审查", "--task", "后端端口")
    assert r.returncode == 0, r.stderr
    assert "identity/前端审查.md" in r.stdout and "无法读取" in r.stdout  # the brief says so itself
    data = out_json(team.vm("--json", "brief", "前端审查", "--task", "后端端口"))
    assert [p["path"] for p in data["problems"]].count("identity/前端审查.md") == 1


def test_a_brief_names_only_what_it_would_draw_on(team, tmp_path):
    """Another role's page, another agent's identity and an inbox item that cannot be read
    are none of this brief's business; its own page is named once."""
    outside = tmp_path / "outside.md"
    outside.write_text("nothing to see\n", encoding="utf-8")
    for rel in ("agents/别的角色.md", "identity/ella.md", "inbox/i-20260101-000000-abcd.md"):
        (team.root / rel).symlink_to(outside)
    (team.root / "agents" / "前端审查.md").write_text("---\nrole: [x\n---\n", encoding="utf-8")
    data = out_json(team.vm("--json", "brief", "前端审查", "--task", "后端端口"))
    named = [p["path"] for p in data["problems"]] + [w for w in data.get("warnings", [])]
    assert not any(rel in text for text in named
                   for rel in ("agents/别的角色.md", "identity/ella.md", "inbox/")), named
    assert sum("agents/前端审查.md" in w for w in data["warnings"]) == 1, data["warnings"]


def test_a_page_indexed_in_part_is_not_called_unread(team):
    page = team.root / "agents" / "前端审查.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("接口联调时先确认后端端口", "接口联调时先确认后端端口 " + "填充内容 " * 60_000), encoding="utf-8")
    r = team.vm("brief", "前端审查", "--task", "后端端口")
    assert r.returncode == 0, r.stderr
    assert "无法读取" not in r.stdout and "接口联调时先确认后端端口" in r.stdout
    assert [line for line in r.stderr.splitlines() if "agents/前端审查.md" in line and "indexed in part" in line]
    assert not [line for line in r.stderr.splitlines() if "agents/前端审查.md" in line and "cannot be read" in line]


def test_a_file_whose_name_is_not_utf8_is_named_and_skipped_never_fatal(team):
    """A note named on another system (bytes that are not UTF-8) cannot be held by an
    index, a JSON answer or a terminal as it is: every search and brief used to fail on
    it. It is now listed as unread, its name shown with those bytes as \\xNN, and read
    as soon as it is renamed."""
    import os

    folder = os.fsencode(team.root / "memories")
    bad = os.path.join(folder, b"caf\xe9-\xff.md")  # Latin-1 and a stray byte
    with open(bad, "wb") as fh:
        fh.write("---\nname: 旧笔记\ntype: fact\n---\n后端端口旧值9090\n".encode("utf-8"))
    shown = "memories/caf\\xe9-\\xff.md"
    for _ in range(2):  # built, then answered from the manifest that records it
        r = team.vm("search", "后端端口")
        assert r.returncode == 0 and "memories/后端端口由网关分配.md" in r.stdout, r.stderr
        assert [line for line in r.stderr.splitlines() if shown in line and "not UTF-8" in line], r.stderr
    assert out_json(team.vm("--json", "index"))["new"] == []  # the manifest holds it: not new again
    with open(bad, "ab") as fh:  # changed: re-read, and its entry appended to the manifest's journal
        fh.write("又改了\n".encode("utf-8"))
    again = out_json(team.vm("--json", "index"))  # not read, so not modified: its new stat is recorded
    assert again["modified"] == again["new"] == [] and again["problems"]
    from vaultmem.index.manifest import Manifests, stat_of

    base = team.root / ".vaultmem" / "index"
    entries = Manifests(base).load((base / "CURRENT").read_text().strip())["files"]  # the journal read back
    rel = os.fsdecode(bad)[len(str(team.root)) + 1:]
    assert stat_of(entries[rel])[1] == os.stat(bad).st_size
    doctor = team.vm("doctor", "--fix")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    assert shown in doctor.stdout and "MEMORY.md lists the active notes (" not in doctor.stdout, doctor.stdout
    data = out_json(team.vm("--json", "search", "后端端口"))
    assert [p["path"] for p in data["problems"] if "not UTF-8" in p["message"]] == [shown]
    assert "9090" not in json.dumps(data, ensure_ascii=False)
    assert team.vm("brief", "前端审查", "--task", "后端端口").returncode == 0
    os.rename(bad, os.path.join(folder, b"renamed.md"))
    r = team.vm("search", "9090")
    assert r.returncode == 0 and "memories/renamed.md" in r.stdout and shown not in r.stderr, r.stderr
