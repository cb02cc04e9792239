"""Page compaction (`vaultmem compact`): a role page's oldest, least-recalled entries moved
to archive/agents/ROLE-YYYY.md with their block ids — real git vaults, the real CLI, real
processes killed mid-run."""

import datetime as dt
import json
import shutil
import subprocess
import sys

import pytest
from conftest import git, out_json

from vaultmem import usage

ROLE = "前端审查"
PAGE = f"agents/{ROLE}.md"
ARCHIVE = f"archive/agents/{ROLE}-2026.md"


def vm(cli, vault, *args, agent=None):
    return cli("--vault", vault.root, *(["--as", agent] if agent else []), *args)


def commit(vault, message="by hand"):
    git(vault.root, "add", "-A")
    git(vault.root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", message)


def seeded_page(cli, vault, work=14, records=4, extra_work=""):
    """The role's page with ``work`` dated lessons (a month each from January, two per
    month) and ``records`` sub-agent records, written by hand and committed."""
    assert vm(cli, vault, "page", "ensure", ROLE).exit_code == 0
    path = vault.root / PAGE
    text = path.read_text(encoding="utf-8")
    lessons = "".join(f"- 2026-{1 + i // 2:02d}-{10 + i:02d} | 第{i}条经验：缓存要设置过期时间 ^m-w{i:05d}\n"
                      for i in range(work)) + extra_work
    recs = "".join(f"\n### 2026-{1 + i:02d}-0{1 + i} 审查任务{i}\n- **任务**：检查组件{i}\n- **结论**：通过\n"
                   f"- **产出**：报告{i}\n- **关键决策**：保留旧接口 ^m-r{i:05d}\n" for i in range(records))
    head, rest = text.split("## 工作记忆", 1)
    comment, rest = rest.split("\n", 2)[1], rest.split("\n", 2)[2]
    work_part, sub_part = rest.split("## 子Agent记录", 1)
    sub_comment, sub_rest = sub_part.split("\n", 2)[1], sub_part.split("\n", 2)[2]
    text = (f"{head}## 工作记忆\n{comment}\n{lessons}{work_part}## 子Agent记录\n{sub_comment}\n{recs}{sub_rest}")
    path.write_text(text, encoding="utf-8")
    commit(vault, "seed the page")
    return path.read_bytes()


def set_budget(vault, work=10, subagents=30):
    cfg = vault.root / ".vaultmem/config.yaml"
    text = cfg.read_text(encoding="utf-8").replace("    work: 100", f"    work: {work}").replace(
        "    subagents: 30", f"    subagents: {subagents}")
    cfg.write_text(text, encoding="utf-8")
    commit(vault, "budget")


def test_an_over_budget_page_moves_its_oldest_half_with_block_ids_and_revert_restores_it(cli, vault):
    before = seeded_page(cli, vault, work=14, records=2)
    set_budget(vault, work=10)
    lines_before = {line for line in before.decode().splitlines() if "^m-w" in line}
    head = git(vault.root, "rev-parse", "HEAD").strip()
    r = vm(cli, vault, "compact", ROLE, "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    planned = out_json(r)
    assert git(vault.root, "rev-parse", "HEAD").strip() == head and (vault.root / PAGE).read_bytes() == before
    work = next(s for s in planned["sections"] if s["section"] == "work")
    assert work["over_budget"] and work["entries"] == 14 and work["moving"] == 9  # keeps half of 10
    going = [m["id"] for m in planned["moving"]]
    assert going == [f"m-w{i:05d}" for i in range(9)]  # the oldest nine
    r = vm(cli, vault, "compact", ROLE, "--json")
    assert r.exit_code == 0, r.output
    done = out_json(r)
    assert [m["id"] for m in done["moving"]] == going and done["commit"]
    # one commit, listing each entry; nothing left uncommitted
    assert git(vault.root, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    message = git(vault.root, "log", "-1", "--format=%B")
    assert all(f"^{i}" in message for i in going)
    assert git(vault.root, "status", "--porcelain") == ""
    page = (vault.root / PAGE).read_text(encoding="utf-8")
    archive = (vault.root / ARCHIVE).read_text(encoding="utf-8")
    # each moved line is in the archive exactly as it was on the page, block id included
    for line in lines_before:
        eid = line.rsplit("^", 1)[1]
        assert (line in archive) == (eid in going) and (line in page) == (eid not in going)
    # one dated summary line per moved month, linking to a heading the archive holds
    summaries = [x for x in page.splitlines() if "已归档" in x]
    assert len(summaries) == 5  # January to May (the fifth month's first lesson moved, its second stays)
    for month in ("2026-01", "2026-02", "2026-03", "2026-04", "2026-05"):
        assert f"## 工作记忆 {month}" in archive
        assert any(f"[[archive/agents/{ROLE}-2026#工作记忆 {month}]]" in x for x in summaries)
    assert "的 2 条记录" in summaries[0] and "的 1 条记录" in summaries[-1]
    # the records were within budget: untouched
    assert "### 2026-01-01 审查任务0" in page
    # the page still parses, its kept entries as they were
    shown = out_json(vm(cli, vault, "page", "show", ROLE, "--json"))
    kept = [e["id"] for e in shown["sections"]["work"] if e["id"].startswith("m-w")]
    assert kept == [f"m-w{i:05d}" for i in range(9, 14)]
    # undone by git: the page byte for byte, the archive file gone
    git(vault.root, "-c", "user.name=t", "-c", "user.email=t@x", "revert", "--no-edit", "HEAD")
    assert (vault.root / PAGE).read_bytes() == before and not (vault.root / ARCHIVE).exists()


def test_links_to_moved_blocks_still_resolve_and_doctor_finds_no_broken_link(cli, vault):
    seeded_page(cli, vault, work=6, records=0)
    note = vault.root / "memories" / "cache-lesson.md"
    note.write_text(f"---\nname: cache lesson\ntype: fact\n---\nSee [[agents/{ROLE}#^m-w00000]] and "
                    f"[[agents/{ROLE}#^m-w00005]].\n", encoding="utf-8")
    commit(vault, "a note linking to two entries")
    assert vm(cli, vault, "compact", ROLE, "--keep", "3").exit_code == 0
    found = out_json(vm(cli, vault, "links", "memories/cache-lesson", "--json"))
    by_anchor = {x["anchor"]: x for x in found["outgoing"]}
    moved, stayed = by_anchor["#^m-w00000"], by_anchor["#^m-w00005"]
    assert moved["target"] == ARCHIVE and moved["moved_from"] == PAGE and moved["problem"] is None
    assert stayed["target"] == PAGE and "moved_from" not in stayed and stayed["problem"] is None
    report = out_json(vm(cli, vault, "doctor", "--json"))
    links = next(c for c in report["checks"] if c["check"].startswith("links"))
    assert links["ok"], links
    # a block id no file holds is still reported broken
    note.write_text(note.read_text(encoding="utf-8") + f"[[agents/{ROLE}#^m-nowhere]]\n", encoding="utf-8")
    found = out_json(vm(cli, vault, "links", "memories/cache-lesson", "--json"))
    assert [x["problem"] for x in found["outgoing"] if x["anchor"] == "#^m-nowhere"] == \
        [f"{PAGE} has no block ^m-nowhere"]


def test_a_recalled_old_entry_stays_and_a_second_compaction_updates_its_month_line(cli, vault):
    seeded_page(cli, vault, work=6, records=0)
    # the oldest lesson was recalled by a brief last week: fresher than the others' dates
    usage.record_use(vault.root, [f"{PAGE}#^m-w00000"], "brief",
                     when=dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=7))
    plan = out_json(vm(cli, vault, "compact", ROLE, "--keep", "3", "--json"))
    assert [m["id"] for m in plan["moving"]] == ["m-w00001", "m-w00002", "m-w00003"]
    page = (vault.root / PAGE).read_text(encoding="utf-8")
    assert "m-w00000" in page and "的 1 条记录" in page  # January: one of its two moved
    # again, keeping one: January's line is updated, not doubled
    plan = out_json(vm(cli, vault, "compact", ROLE, "--keep", "1", "--json"))
    assert sorted(m["id"] for m in plan["moving"]) == ["m-w00004", "m-w00005"]
    page = (vault.root / PAGE).read_text(encoding="utf-8")
    assert sum("工作记忆 2026-01]]" in x for x in page.splitlines()) == 1
    assert sum("工作记忆 2026-03]]" in x for x in page.splitlines()) == 1
    archive = (vault.root / ARCHIVE).read_text(encoding="utf-8")
    assert archive.count("## 工作记忆 2026-02") == 1 and "m-w00003" in archive and "m-w00004" in archive
    # nothing over budget and no --keep: nothing to do, no commit
    head = git(vault.root, "rev-parse", "HEAD")
    r = vm(cli, vault, "compact", ROLE)
    assert r.exit_code == 0 and "nothing to move" in r.output and git(vault.root, "rev-parse", "HEAD") == head


def test_sub_agent_records_move_whole_and_their_summary_precedes_the_records(cli, vault):
    seeded_page(cli, vault, work=0, records=4)
    plan = out_json(vm(cli, vault, "compact", ROLE, "--keep", "2", "--json"))
    assert [m["id"] for m in plan["moving"]] == ["m-r00000", "m-r00001"]
    page = (vault.root / PAGE).read_text(encoding="utf-8")
    archive = (vault.root / ARCHIVE).read_text(encoding="utf-8")
    for i in (0, 1):
        block = (f"### 2026-{1 + i:02d}-0{1 + i} 审查任务{i}\n- **任务**：检查组件{i}\n- **结论**：通过\n"
                 f"- **产出**：报告{i}\n- **关键决策**：保留旧接口 ^m-r{i:05d}\n")
        assert block in archive and block not in page
    section = page.split("## 子Agent记录", 1)[1]
    assert section.index("已归档") < section.index("### 2026-03-03 审查任务2")
    shown = out_json(vm(cli, vault, "page", "show", ROLE, "--json"))
    records = [e for e in shown["sections"]["subagents"] if e.get("fields")]
    assert [e["id"] for e in records] == ["m-r00002", "m-r00003"]
    assert all(set(e["fields"]) == {"task", "conclusion", "output", "decision"} for e in records)


def test_compaction_is_deterministic(cli, vault, tmp_path):
    seeded_page(cli, vault, work=8, records=3)
    copy = tmp_path / "copy"
    shutil.copytree(vault.root, copy, symlinks=True)
    trees = []
    for root in (vault.root, copy):
        r = cli("--vault", root, "compact", ROLE, "--keep", "2")
        assert r.exit_code == 0, r.output
        assert git(root, "log", "-1", "--format=%s").startswith(f"compact: {PAGE}: move 7 entries")
        trees.append(git(root, "rev-parse", "HEAD^{tree}").strip())
    assert trees[0] == trees[1]


def test_refusals_and_bad_input_change_nothing(cli, vault):
    seeded_page(cli, vault, work=6, records=0)
    head = git(vault.root, "rev-parse", "HEAD")
    # an agent may look, not move
    r = vm(cli, vault, "compact", ROLE, "--keep", "1", agent="lee")
    assert r.exit_code == 3 and "may not compact" in r.output
    assert vm(cli, vault, "compact", ROLE, "--keep", "1", "--dry-run", agent="lee").exit_code == 0
    # a human's uncommitted edit to the page is never swept into the archive
    path = vault.root / PAGE
    edited = path.read_text(encoding="utf-8").replace("第0条经验", "第0条经验（人工修改中）")
    path.write_text(edited, encoding="utf-8")
    r = vm(cli, vault, "compact", ROLE, "--keep", "1")
    assert r.exit_code == 3 and "uncommitted" in r.output
    assert path.read_text(encoding="utf-8") == edited and not (vault.root / ARCHIVE).exists()
    git(vault.root, "checkout", "--", PAGE)
    r = vm(cli, vault, "compact", ROLE, "--keep", "-1")
    assert r.exit_code == 2
    r = vm(cli, vault, "compact", "没有这个角色")
    assert r.exit_code == 1 and "no page for role" in r.output
    assert git(vault.root, "rev-parse", "HEAD") == head and git(vault.root, "status", "--porcelain") == ""


def test_a_broken_budget_setting_is_named(cli, vault):
    seeded_page(cli, vault, work=2, records=0)
    cfg = vault.root / ".vaultmem/config.yaml"
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("    work: 100", "    work: lots"), encoding="utf-8")
    r = vm(cli, vault, "compact", ROLE)
    assert r.exit_code != 0 and "forgetting.page_entries.work" in r.output


@pytest.mark.soak
def test_a_compaction_killed_at_any_step_leaves_the_page_as_before_or_as_after(cli, vault, tmp_path):
    """SIGKILL just before each file-system step of a real `vaultmem compact` process."""
    from test_kills import clean_env, kill_at, kill_points

    before = seeded_page(cli, vault, work=6, records=2)
    counting, points = kill_points(vault.root, ["compact", ROLE, "--keep", "2"], tmp_path)
    after = (counting / PAGE).read_bytes()
    assert after != before
    assert points
    problems = []
    for point in points:
        root = tmp_path / f"case-{point.replace(':', '-')}"
        shutil.copytree(vault.root, root, symlinks=True)
        done = kill_at(root, ["compact", ROLE, "--keep", "2"], point)
        if done.returncode != -9:
            problems.append(f"{point}: not reached ({done.returncode})")
            continue
        subprocess.run([sys.executable, "-m", "vaultmem", "--vault", str(root), "page", "list"], capture_output=True,
                       timeout=120, env=clean_env())  # the next command settles the dead writer
        page = (root / PAGE).read_bytes()
        has_archive = (root / ARCHIVE).exists()
        status = git(root, "status", "--porcelain").strip()
        if not ((page == before and not has_archive) or (page == after and has_archive)) or status:
            problems.append(f"{point}: page {'before' if page == before else 'after' if page == after else '?'}, "
                            f"archive {has_archive}, status {status!r}")
    assert not problems, "\n".join(problems)


def test_recalls_of_entries_are_recorded_for_compaction(cli, vault):
    seeded_page(cli, vault, work=3, records=0)
    r = vm(cli, vault, "search", "缓存 过期时间", "--as", "lee", "--json")
    assert r.exit_code == 0, r.output
    recalled = usage.read_usage(vault.root)
    assert any(k.startswith(f"{PAGE}#^m-w") for k in recalled), recalled
    raw = (vault.root / ".vaultmem/local/usage.jsonl").read_text(encoding="utf-8")
    assert "缓存" not in raw  # the question is kept as a fingerprint only
    assert all("q" in json.loads(x) for x in raw.splitlines())


def test_doctor_names_a_page_over_its_budget_until_it_is_compacted(cli, vault):
    seeded_page(cli, vault, work=12, records=0)
    set_budget(vault, work=10)
    report = out_json(vm(cli, vault, "doctor", "--json"))
    big = next(c for c in report["checks"] if c["check"] == "no oversize file")
    assert not big["ok"] and [p["path"] for p in big["problems"]] == [PAGE]
    assert f"vaultmem compact {ROLE}" in big["problems"][0]["problem"]
    assert vm(cli, vault, "compact", ROLE).exit_code == 0
    report = out_json(vm(cli, vault, "doctor", "--json"))
    assert next(c for c in report["checks"] if c["check"] == "no oversize file")["ok"]
