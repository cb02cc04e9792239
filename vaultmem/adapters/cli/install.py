"""``vaultmem install`` / ``vaultmem uninstall``: vaultmem in Claude Code and in a vault's git.

The plan (what each file gains or loses) comes from :mod:`vaultmem.adapters.install`;
this module parses the options, prints the plan (with ``--dry-run``: a diff of every
file, nothing written) and writes it.
"""

from pathlib import Path
from typing import Annotated

import typer

from ._common import AsOpt, JsonOpt, VaultOpt, handles_errors, session

install_app = typer.Typer(help="Install vaultmem into Claude Code (hooks and MCP server) or into a vault's git "
                               "(the pre-commit hook).", no_args_is_help=True)
uninstall_app = typer.Typer(help="Remove exactly what 'vaultmem install' added.", no_args_is_help=True)

ProjectOpt = Annotated[bool, typer.Option("--project", help="The project in the current folder: .mcp.json and "
                                                            ".claude/settings.json (the default).")]
UserOpt = Annotated[bool, typer.Option("--user", help="You, in every project: ~/.claude.json and "
                                                      "~/.claude/settings.json.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print what would change (a diff of each file); "
                                                           "write nothing.")]


def _scope(project: bool, user: bool) -> str:
    if project and user:
        from ...errors import BadInput

        raise BadInput("choose one scope: --project or --user, not both")
    return "user" if user else "project"


def _claude(ctx: typer.Context, install: bool, project: bool, user: bool, dry_run: bool,
            vault: Path | None, as_: str | None, json_: bool) -> None:
    from ...errors import VaultmemError
    from ...names import check_name
    from ...vault import locate
    from .. import install as planner

    s = session(ctx, vault, as_, json_)
    scope = _scope(project, user)
    vault_root = str(locate(s.vault)) if (install and s.vault is not None) else None
    agent = check_name(s.agent, "agent name", field="actor") if (install and s.agent) else None
    plan = planner.plan_claude(scope, install=install, home=Path.home(), project=Path.cwd(),
                               vault=vault_root, agent=agent)
    _finish(s, plan, dry_run, planner)
    if install and not dry_run:
        try:  # for the plugin's launcher too: this vaultmem, recorded in the vault it serves
            planner.record_vaultmem(locate(s.vault))
        except VaultmemError:
            pass  # no vault here (yet): the hooks written above name this vaultmem themselves


def _git_hooks(ctx: typer.Context, install: bool, dry_run: bool, vault: Path | None, json_: bool) -> None:
    from ...gitstore import hooks_dir as git_hooks_dir
    from ...vault import locate
    from .. import install as planner

    s = session(ctx, vault, None, json_)
    root = locate(s.vault)
    plan = planner.plan_git_hooks(root, git_hooks_dir(root), install=install)
    _finish(s, plan, dry_run, planner)


def _finish(s, plan, dry_run: bool, planner) -> None:
    plan.dry_run = dry_run
    if not dry_run:
        planner.apply(plan)
    s.emit(plan, render_plan)


def render_plan(plan) -> str:
    """For people: per file what was (or, with --dry-run, would be) added, updated and
    removed, and what was left alone; a dry run shows each file's diff."""
    lines = []
    verb = "install" if plan.install else "uninstall"
    for c in plan.changes:
        what = c.added + c.updated + c.removed
        if c.changed:
            head = {"created": "create", "changed": "change", "removed": "remove", "moved": "move into place"}[c.action]
            if plan.dry_run:
                lines.append(f"would {head} {c.path}: {', '.join(what)}")
                lines.append(c.diff().rstrip("\n"))
            else:
                done = {"created": "created", "changed": "changed", "removed": "removed",
                        "moved": "moved into place"}[c.action]
                lines.append(f"{done} {c.path}: {', '.join(what)}")
        for note in c.kept:
            lines.append(f"note: {c.path}: {note}")
    if not plan.changed:
        lines.insert(0, f"nothing to {verb}: {'vaultmem is installed there already' if plan.install else 'vaultmem added nothing there'}"
                        if plan.target == "claude" else f"nothing to {verb}")
    elif not plan.dry_run and plan.target == "claude":
        lines.append("restart Claude Code to load the change (it reads hooks and MCP servers when a session starts)")
    return "\n".join(lines)


@install_app.command("claude")
@handles_errors
def install_claude(ctx: typer.Context, project: ProjectOpt = False, user: UserOpt = False,
                   dry_run: DryRunOpt = False, vault: VaultOpt = None, as_: AsOpt = None,
                   json_: JsonOpt = False) -> None:
    """Add vaultmem's MCP server and its hooks (SessionStart, UserPromptSubmit,
    SubagentStart, SubagentStop, PreCompact, Stop, SessionEnd) to Claude Code.

    Project scope (the default) writes .mcp.json and .claude/settings.json in the current
    folder; --user writes ~/.claude.json and ~/.claude/settings.json. What is there stays:
    other servers, your own hooks on the same events, other keys and their order.
    Commands name this vaultmem by absolute path; --vault and --as, when given, are
    written into them (else the hooks use the session's project folder and
    $VAULTMEM_AGENT). Installing again changes nothing; 'vaultmem uninstall claude'
    removes exactly what this added.

    Example: vaultmem install claude --user --vault ~/team-vault --dry-run
    """
    _claude(ctx, True, project, user, dry_run, vault, as_, json_)


@uninstall_app.command("claude")
@handles_errors
def uninstall_claude(ctx: typer.Context, project: ProjectOpt = False, user: UserOpt = False,
                     dry_run: DryRunOpt = False, json_: JsonOpt = False) -> None:
    """Remove the MCP server and hooks 'vaultmem install claude' added (in the project in
    the current folder, or with --user yours); everything else stays as it is."""
    _claude(ctx, False, project, user, dry_run, None, None, json_)


@install_app.command("git-hooks")
@handles_errors
def install_git_hooks(ctx: typer.Context, dry_run: DryRunOpt = False, vault: VaultOpt = None,
                      json_: JsonOpt = False) -> None:
    """Install the vault's pre-commit hook: every commit (vaultmem's, yours, Obsidian's
    git plugin's) is checked first — frontmatter that parses, logs that only grow and
    verify, no secret in an added line — and blocked with the file and line of each
    problem ('vaultmem check --staged'). A pre-commit hook already there is kept: moved to
    pre-commit.before-vaultmem and run after the check."""
    _git_hooks(ctx, True, dry_run, vault, json_)


@uninstall_app.command("git-hooks")
@handles_errors
def uninstall_git_hooks(ctx: typer.Context, dry_run: DryRunOpt = False, vault: VaultOpt = None,
                        json_: JsonOpt = False) -> None:
    """Remove vaultmem's pre-commit hook; the hook it kept aside, if any, is put back."""
    _git_hooks(ctx, False, dry_run, vault, json_)
