"""Docs that cannot rot: every command is documented, and the README's example runs."""

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import typer

from vaultmem.adapters.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _commands(group, prefix="vaultmem"):
    """Every command's full name, through click's own interface (the top-level group
    builds its commands lazily, so ``.commands`` alone is not all of them)."""
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        full = f"{prefix} {name}"
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, full)
        else:
            yield full


def _command(group, parts):
    for p in parts:
        group = group.get_command(click.Context(group), p)
    return group


def test_every_command_is_documented_in_docs_cli():
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^### `(vaultmem [^`]+)`", doc, re.M))
    commands = set(_commands(typer.main.get_command(app)))
    assert commands - documented == set(), "undocumented commands"
    assert documented - commands == set(), "docs describe commands that do not exist"


def test_every_command_has_help_text():
    group = typer.main.get_command(app)
    for full in _commands(group):
        cmd = _command(group, full.split()[1:])
        assert (cmd.help or "").strip(), f"{full} has no help"


def test_readme_quickstart_runs(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash examples/quickstart.sh" in readme
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VAULTMEM_AGENT", None)
    r = subprocess.run(["bash", str(ROOT / "examples" / "quickstart.sh"), str(tmp_path / "demo")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "发现Dashboard组件存在useEffect清理函数缺失问题" in r.stdout
    assert "[[memories/后端端口固定8080|后端端口固定8080]] (fact)" in r.stdout
    assert "lee: page: create agents/前端审查.md on first dispatch" in r.stdout
    assert "后端**端口**固定8080" in r.stdout  # search
    assert "[记忆简报 - 前端审查]" in r.stdout and "~~~~memory" in r.stdout  # the brief


# -- the README's tour: every command as a user would paste it, every comment's claim checked ---

def tour_commands(readme: str) -> list[tuple[str, str]]:
    """The tour's commands as typed, (command, its comment): one per shell line, a line
    ending in a backslash joined with the next, a here-document kept with its command."""
    block = readme.split("## A short tour", 1)[1].split("```bash\n", 1)[1].split("\n```", 1)[0]
    lines = block.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [line]
        while parts[-1].split("  #")[0].rstrip().endswith("\\"):
            parts.append(lines[i])
            i += 1
        heredoc = re.search(r"<<'(\w+)'", line)
        if heredoc:
            while lines[i] != heredoc.group(1):
                parts.append(lines[i])
                i += 1
            parts.append(lines[i])
            i += 1
        comments = [m.group(1) for p in parts if (m := re.search(r"\s{2,}# (.*)$", p))]
        command = "\n".join(re.sub(r"\s{2,}# .*$", "", p) for p in parts)
        out.append((command, " ".join(comments)))
    return out


def run_tour(tmp_path: Path, commands: list[str]) -> tuple[list[dict], Path]:
    """Run the commands in one bash, as a new user would: HOME in ``tmp_path`` (with a git
    name, nothing of vaultmem's in the environment), the installed ``vaultmem`` on PATH.
    Returns each command's stdout, stderr and exit code, and HOME."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ann Human\n\temail = ann@example.com\n", encoding="utf-8")
    script = []
    for n, command in enumerate(commands):
        script += [f"printf '\\n@@@ {n}\\n'; printf '\\n@@@ {n}\\n' >&2", command, f"printf '\\n@@@rc {n} %s\\n' $?"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULTMEM_", "GIT_"))}
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=home, env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=600)
    outs = dict(re.findall(r"\n@@@ (\d+)\n(.*?)(?=\n@@@rc \d+ )", r.stdout, re.S))
    errs = dict(re.findall(r"\n@@@ (\d+)\n(.*?)(?=\n@@@ \d+\n|\Z)", r.stderr, re.S))
    codes = dict(re.findall(r"\n@@@rc (\d+) (\d+)\n", r.stdout))
    assert len(codes) == len(commands), f"the tour stopped early:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return [{"command": c, "out": outs.get(str(n), ""), "err": errs.get(str(n), ""), "rc": int(codes[str(n)])}
            for n, c in enumerate(commands)], home


def test_readme_tour_does_what_its_comments_say(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = tour_commands(readme)
    results, home = run_tour(tmp_path, [c for c, _ in tour])
    # the checks run once the tour has ended: each looks at its command's output and at
    # what no later command of the tour changes
    vault = home / "team-memory"
    page = vault / "agents" / "前端审查.md"

    def text(rel: str) -> str:
        return (vault / rel).read_text(encoding="utf-8")

    def git_log() -> list[str]:
        return subprocess.run(["git", "-C", str(vault), "log", "--format=%an: %s"], capture_output=True, text=True,
                              check=True).stdout.splitlines()

    def init(r):  # a vault: folders, MEMORY.md, config, git repo
        assert (vault / ".vaultmem" / "config.yaml").is_file() and (vault / "MEMORY.md").is_file()
        assert (vault / ".git").is_dir() and (vault / "agents").is_dir() and (vault / "memories").is_dir()
        assert "orchestrator lee" in r["out"]

    def ensure(r):  # first dispatch: page created
        assert page.is_file() and "created agents/前端审查.md" in r["out"]
        assert "lee: page: create agents/前端审查.md on first dispatch" in git_log()

    def add_work(r):  # - 2026-05-08 | … ^m-3fa2c1
        entry = re.search(r"\^(m-[0-9a-f]{6})", r["out"]).group(1)
        assert re.search(rf"^- \d{{4}}-\d\d-\d\d \| 发现useEffect清理函数缺失，后续审查重点关注 \^{entry}$", text(page.relative_to(vault).as_posix()), re.M)

    def add_context(r):  # under ### dashboard
        assert re.search(r"### dashboard\n- 技术栈：React 18 \+ Vite \^m-[0-9a-f]{6}\n", page.read_text(encoding="utf-8"))

    def show(r):  # parsed, with entry ids
        assert re.search(r"\^m-[0-9a-f]{6}\s+技术栈：React 18 \+ Vite", r["out"])
        assert re.search(r"\^m-[0-9a-f]{6}\s+\d{4}-\d\d-\d\d \| 发现useEffect", r["out"])

    def listing(r):  # roles that have pages
        assert r["out"].startswith("前端审查")

    def remember(r):  # you: a note at once
        assert "remembered memories/后端端口固定8080.md" in r["out"] and "inbox" not in r["out"]
        assert "Ann Human: remember: 后端端口固定8080 (memories/后端端口固定8080.md)" in git_log()

    def search(r):  # ranked hits with snippets
        assert re.search(r"1\. memories/后端端口固定8080\.md .*\n\s+后端\*\*端口\*\*固定8080", r["out"])

    def ask(r):  # the role's entries and the notes it sees
        assert "后端端口固定8080" in r["out"] and "memories/后端端口固定8080" in r["out"]

    def briefed(r):  # the brief: cited lines, fenced — the role's own page first, whatever the task's words
        assert r["out"].startswith("[记忆简报 - 前端审查]") and "~~~~memory" in r["out"]
        page = r["out"].split("## 本角色记忆页（[[agents/前端审查]]）\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert page and all(re.search(r"\[\[[^\]]+\]\]$", line) for line in page if line != "~~~~")
        assert any("useEffect清理函数缺失" in line for line in page) and any("React 18" in line for line in page)

    def brief(r):  # ≤ 30% of the window, cited
        from vaultmem.analysis import estimate_tokens

        briefed(r)
        assert estimate_tokens(r["out"]) <= 0.3 * 32000

    def forget(r):  # to archive/, line removed
        assert "archived 后端端口固定8080 to archive/memories/后端端口固定8080.md" in r["out"]
        assert not (vault / "memories" / "后端端口固定8080.md").exists()
        assert "后端端口固定8080" not in text("MEMORY.md")

    def delegate(r):  # pending delegation + sub-agent brief
        assert re.search(r"delegation d-\d{8}-[0-9a-f]{6} \(role 前端审查\) pending", r["out"])
        assert "[记忆简报 - 前端审查]" in r["out"] and "任务：分析Dashboard性能" in r["out"]

    def quiet(r):
        assert r["out"].strip() == ""

    def harvest(r):  # into 子Agent记录, delegation closed
        did = re.search(r"harvested (d-\d{8}-[0-9a-f]{6})", r["out"]).group(1)
        records = page.read_text(encoding="utf-8").split("## 子Agent记录", 1)[1]
        assert "长列表未虚拟化" in records and "引入react-window" in records
        assert "status: harvested" in text(f"shared/delegations/{did}.md")

    def audit_todo_history(r):  # what needs a human; open items; who changed what
        assert "nothing needs a human" in r["out"]
        assert "no open items recorded for 前端审查" in r["out"]  # a lesson's 后续 is not an open item
        assert "lee: harvest: d-" in r["out"] and "lee: page: create agents/前端审查.md" in r["out"]
        assert "+++ b/agents/前端审查.md" in r["out"] and "\\345" not in r["out"]  # paths as written

    def facts(r):
        assert (home / "facts.yaml").is_file()

    def retain(r):  # end of session: facts → inbox/
        assert r["out"].count("waiting for review") == 2 and "filed in inbox/" in r["out"] and "quarantined: third-party" in r["out"]

    def review(r):  # what waits for a human
        assert len(re.findall(r"^i-\d{8}-[0-9a-f]{6} ", r["out"], re.M)) == 2 and "[quarantined]" in r["out"]

    def approve(r):  # note + MEMORY.md line, one commit
        assert "→ memories/pnpm-only.md" in r["out"]
        assert "只用pnpm安装依赖" in text("memories/pnpm-only.md") and "[[memories/pnpm-only|pnpm only]]" in text("MEMORY.md")

    def reject(r):  # archived with the reason
        iid = re.search(r"rejected (i-\d{8}-[0-9a-f]{6})", r["out"]).group(1)
        assert "planted instruction" in text(f"archive/inbox/{iid}.md")

    def walk(r):  # walk the inbox with prompts
        assert "the inbox is empty" in r["out"] and not list((vault / "inbox").glob("i-*.md"))

    def keys(r):  # Ed25519 keys for the log
        assert (vault / "shared/keys/ella.pub").is_file() and (vault / "shared/keys/lee.pub").is_file()

    def append(r):  # signed, append-only
        assert "appended ella#1" in r["out"]

    def tail(r):  # what lee has not read yet
        assert "ella#1" in r["out"] and "API v2 schema merged" in r["out"]

    def decide(r):  # decision log
        assert re.search(r"decision lee#\d+ recorded", r["out"])

    def remote(r):  # a remote to share
        assert (home / "team-memory.git").is_dir()

    def verify_sync(r):  # check signatures; git pull/push
        assert "all signatures and chains hold" in r["out"] and "synced with origin" in r["out"]
        pushed = subprocess.run(["git", "-C", str(home / "team-memory.git"), "log", "--all", "--format=%s"],
                                capture_output=True, text=True, check=True).stdout
        assert "decision" in pushed or "log" in pushed

    def sub_start(r):  # Claude Code: the sub-agent's brief
        import json

        out = json.loads(r["out"])["hookSpecificOutput"]
        assert out["hookEventName"] == "SubagentStart" and "[记忆简报 - 前端审查]" in out["additionalContext"]

    def sub_stop(r):  # its report → inbox/, for you (review.auto_harvest is off)
        assert r["out"] == ""
        assert any(line.startswith("lee: inbox: lee proposes harvest ") for line in git_log()), git_log()

    def sub_approve(r):  # → 子Agent记录, delegation closed
        records = page.read_text(encoding="utf-8").split("## 子Agent记录", 1)[1]
        assert "- **结论**：缺少服务端校验" in records and "- **关键决策**：用zod统一校验" in records
        assert any(line.startswith("Ann Human: review: approve ") for line in git_log()), git_log()

    def json_page(r):  # stable JSON for programs
        import json

        data = json.loads(r["out"])
        assert data["name"] == "前端审查" and data["path"] == "agents/前端审查.md"

    def who(r):  # who taught the agent what
        lines = r["out"].splitlines()
        for expected in ("lee: page: create agents/前端审查.md on first dispatch",
                         "Ann Human: remember: 后端端口固定8080 (memories/后端端口固定8080.md)",
                         "ella: inbox: ella proposes 2 retained items (session s-42)"):
            assert expected in lines

    claims = [
        ("vaultmem init ", init), ("export VAULTMEM_VAULT=", quiet), ("vaultmem page ensure ", ensure),
        ("vaultmem page add 前端审查 \"发现", add_work), ("vaultmem page add 前端审查 \"技术栈", add_context),
        ("vaultmem page show ", show), ("vaultmem page list", listing), ("vaultmem remember ", remember),
        ("vaultmem search ", search), ("vaultmem ask ", ask), ("vaultmem dispatch ", briefed),
        ("vaultmem brief ", brief), ("vaultmem forget ", forget), ("vaultmem delegate ", delegate),
        ("D=$(", quiet), ("vaultmem harvest ", harvest), ("vaultmem audit; ", audit_todo_history),
        ("cat > facts.yaml", facts), ("vaultmem retain ", retain), ("vaultmem review\n", review),
        ("FACT=$(", quiet), ("WEB=$(", quiet), ("vaultmem review approve ", approve),
        ("vaultmem review reject ", reject), ("vaultmem review -i", walk), ("vaultmem keys new ", keys),
        ("vaultmem log append ", append), ("vaultmem log tail ", tail), ("vaultmem decide ", decide),
        ("git init -q --bare ", remote), ("vaultmem log verify && vaultmem sync", verify_sync),
        ("echo '{\"session_id\":\"s-43\",\"hook_event_name\":\"SubagentStart\"", sub_start),
        ("echo '{\"session_id\":\"s-43\",\"hook_event_name\":\"SubagentStop\"", sub_stop), ("H=$(", quiet),
        ("vaultmem review approve \"$H\"", sub_approve),
        ("vaultmem --json page show ", json_page), ("git -C ~/team-memory log ", who),
    ]
    assert [c.split("\n")[0][:40] for c, _ in tour] and len(results) == len(claims), \
        "each command of the tour needs its claim checked here"
    failures = []
    for r, (prefix, check) in zip(results, claims):
        typed = r["command"] + ("\n" if prefix.endswith("\n") else "")
        assert (typed.strip() + ("\n" if prefix.endswith("\n") else "")).startswith(prefix), (r["command"], prefix)
        try:
            assert r["rc"] == 0, f"exit code {r['rc']}"
            assert "error:" not in r["err"] and "warning:" not in r["err"], r["err"]
            check(r)
        except AssertionError as exc:
            failures.append(f"$ {r['command']}\n  {exc}\n--- stdout\n{r['out'][-1500:]}\n--- stderr\n{r['err'][-800:]}")
    assert not failures, "\n\n".join(failures)


def test_the_validation_walk_through_runs_and_says_which_step_failed(vault):
    """examples/validate.py, as docs/integrations.md tells a user to run it: on a fresh
    vault every step passes; acting as someone other than the orchestrator, the dispatch
    is refused (only the orchestrator creates a role's page) — ✗ and a non-zero exit."""
    script = ROOT / "examples" / "validate.py"
    assert "python examples/validate.py" in (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "VAULTMEM_AGENT"}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert sum(line.startswith("✓ ") for line in lines) == 9 and not any(line.startswith("✗") for line in lines)
    assert any("the first dispatch created agents/validate-" in line for line in lines)
    assert lines[-1] == "all steps passed"

    r = subprocess.run([sys.executable, str(script), "--vault", str(vault.root), "--as", "ella", "--role", "probe"],
                       capture_output=True, text=True, env=env, timeout=180)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "✗ it acts as the orchestrator (lee)" in r.stdout
    assert "✗ the first dispatch creates the role's page and briefs it" in r.stdout
    assert "send the change to the orchestrator" in r.stdout and not (vault.root / "agents" / "probe.md").exists()
    assert "step(s) failed" in r.stdout.splitlines()[-1]
