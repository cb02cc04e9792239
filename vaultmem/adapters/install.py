"""Installing vaultmem into agent hosts and git: what ``vaultmem install`` and
``vaultmem uninstall`` change, planned before anything is written.

**Claude Code** (``install claude``): the MCP server goes into ``.mcp.json`` (project
scope) or ``~/.claude.json`` (user scope: its top-level ``mcpServers``, where ``claude mcp
add --scope user`` keeps them), and one hook per event into ``.claude/settings.json`` or
``~/.claude/settings.json``. Everything already there stays as it was — other servers,
other hooks on the same events (vaultmem's is a matcher group of its own, after them),
unknown keys and their order. What vaultmem adds carries a mark, so that uninstalling
removes exactly that: a hook's command ends with the shell comment :data:`HOOK_MARK`, the
server's ``env`` holds :data:`SERVER_MARK` (Claude Code's settings allow no keys of
their own in a hook). Commands name this vaultmem by absolute path (hosts start them
with a minimal PATH) and end in ``|| true``: a hook never blocks a session, even when
vaultmem is gone or too old to know the command.

**git** (``install git-hooks``): ``hooks/git/pre-commit`` goes into the folder git runs
the vault's hooks from. A pre-commit hook that is already there and not vaultmem's is
moved aside to ``pre-commit.before-vaultmem`` and run by vaultmem's after its check;
uninstalling moves it back, byte for byte.

Every plan reads all its files first (broken JSON: an error naming the file and line,
nothing written), then :func:`apply` writes each changed file atomically (a temp file
beside it, then a rename; a symlinked settings file is written at its target). A file
whose content would not change is not written at all.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import files
from ..errors import BadInput, NotFound, ParseError, VaultmemError, from_os_error

HOOK_MARK = "# added by: vaultmem install claude"
SERVER_NAME = "vaultmem"
SERVER_MARK = ("VAULTMEM_INSTALLED_BY", "vaultmem install claude")
# Claude Code's events → the hook's timeout in seconds. SessionEnd hooks share a budget of
# about 1.5 s that the host enforces whatever the timeout says; vaultmem's returns within it.
EVENTS: dict[str, float] = {
    "SessionStart": 10, "UserPromptSubmit": 5, "SubagentStart": 10, "SubagentStop": 30,
    "PreCompact": 30, "Stop": 10, "SessionEnd": 1.5,
}  # fmt: skip
SCOPES = ("project", "user")

GIT_HOOK = "pre-commit"
GIT_HOOK_MARK = "# vaultmem pre-commit hook:"
CHAINED_SUFFIX = ".before-vaultmem"


# -- what a plan changes ---------------------------------------------------------------------
@dataclass
class FileChange:
    """One file a plan writes: its text before (None: absent) and after (None: removed),
    what in it is added, updated and removed, and what is left alone (and why).
    ``moved_from``: the file comes from another by a rename (a git hook put aside or put
    back), so its bytes and mode stay exactly as they were."""

    path: Path
    before: str | None
    after: str | None
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    mode: int = 0o644  # for a file that is created
    moved_from: Path | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after or self.moved_from is not None

    @property
    def action(self) -> str:
        if not self.changed:
            return "unchanged"
        if self.moved_from is not None:
            return "moved"
        return "created" if self.before is None else "removed" if self.after is None else "changed"

    def diff(self) -> str:
        if self.moved_from is not None:
            return f"renamed {self.moved_from} -> {self.path}\n"
        return "".join(difflib.unified_diff(
            (self.before or "").splitlines(keepends=True), (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null"))

    def to_dict(self) -> dict:
        return {"path": str(self.path), "action": self.action, "added": self.added, "updated": self.updated,
                "removed": self.removed, "kept": self.kept, "diff": self.diff() if self.changed else ""}


@dataclass
class Plan:
    """What installing or uninstalling changes: ``target`` (``claude``, ``git-hooks``),
    ``scope`` (``project``, ``user``, or the vault for git), each file, and whether it was
    only planned (``dry_run``) or written."""

    target: str
    scope: str
    install: bool
    changes: list[FileChange]
    dry_run: bool = False

    @property
    def changed(self) -> list[FileChange]:
        return [c for c in self.changes if c.changed]

    def to_dict(self) -> dict:
        return {"target": self.target, "scope": self.scope, "action": "install" if self.install else "uninstall",
                "dry_run": self.dry_run, "changed": bool(self.changed),
                "files": [c.to_dict() for c in self.changes]}


# -- this vaultmem ---------------------------------------------------------------------------
def vaultmem_command() -> list[str]:
    """This vaultmem by absolute path: the ``vaultmem`` script installed beside this
    Python (a virtual environment's, pipx's), else this Python with ``-m vaultmem``. The
    interpreter's path is kept as it is, not resolved: a virtual environment's python is
    a link, and only through it does it find vaultmem."""
    python = Path(sys.executable)
    script = python.parent / "vaultmem"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "vaultmem"]


# the file in a vault's .vaultmem/local/ (per machine, never committed) naming the vaultmem
# that set the vault up here: the plugin's launcher runs it when PATH has no vaultmem
LAUNCH_RECORD = "vaultmem-bin"


def record_vaultmem(root: Path) -> str | None:
    """Write this vaultmem's script (:func:`vaultmem_command`, when it is a script: a
    virtual environment's, pipx's) into the vault's ``.vaultmem/local/`` for the plugin's
    launcher (``hooks/claude-code/bin/vaultmem-launch``), which hosts start with a minimal
    PATH. Per machine and never committed; the path written, or None (no script, or a
    vault it cannot write: nothing recorded, the launcher's other ways stand)."""
    command = vaultmem_command()
    if len(command) != 1:
        return None
    return command[0] if files.write_local(root, LAUNCH_RECORD, command[0] + "\n") else None


def bundle_root() -> Path:
    """The top-level ``hooks/`` folder (the Claude Code plugin, the git hook): inside the
    installed package, or at the source checkout's top."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_hooks", here.parent / "hooks"):
        if (candidate / "git" / GIT_HOOK).is_file():
            return candidate
    raise NotFound("the hooks folder is missing from this installation",
                   hint="reinstall vaultmem (pip install -e . from the project folder)")  # pragma: no cover


# -- JSON files ------------------------------------------------------------------------------
def _read(path: Path) -> str | None:
    """The text of ``path`` (through a symlink), None if it does not exist."""
    try:
        return Path(os.path.realpath(path)).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ParseError("the file is not UTF-8 text", path=str(path), line=1,
                         hint="fix the file (or move it aside) and run the command again; nothing was written") from None
    except OSError as exc:
        raise from_os_error(exc, path=str(path)) from None


def _load_json(path: Path, text: str | None) -> dict:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=str(path), line=exc.lineno,
                         hint="fix the file (or move it aside) and run the command again; nothing was written") from None
    if not isinstance(data, dict):
        raise ParseError(f"the file holds a JSON {type(data).__name__}, not an object", path=str(path), line=1,
                         hint="fix the file (or move it aside) and run the command again; nothing was written")
    return data


def _indent(text: str | None) -> int | str:
    """The indentation ``text`` uses (its first indented line's), 2 for a new file."""
    for line in (text or "").splitlines()[1:]:
        body = line.lstrip(" \t")
        if body and len(body) < len(line):
            lead = line[: len(line) - len(body)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


def _dump(data: dict, like: str | None) -> str:
    return json.dumps(data, indent=_indent(like), ensure_ascii=False) + "\n"


def _line_of(text: str | None, key: str) -> int | None:
    """The line of the first ``"key"`` in ``text`` (for an error about that key)."""
    for n, line in enumerate((text or "").splitlines(), 1):
        if f'"{key}"' in line:
            return n
    return None


def _object(data: dict, key: str, path: Path, text: str | None) -> dict | None:
    value = data.get(key)
    if value is not None and not isinstance(value, dict):
        raise ParseError(f"'{key}' is a JSON {type(value).__name__}, not an object", path=str(path),
                         line=_line_of(text, key), hint="fix the file and run the command again; nothing was written")
    return value


# -- Claude Code -----------------------------------------------------------------------------
def claude_files(scope: str, home: Path, project: Path) -> tuple[Path, Path]:
    """(the settings file for hooks, the file for MCP servers) of ``scope``."""
    if scope == "user":
        return home / ".claude" / "settings.json", home / ".claude.json"
    return project / ".claude" / "settings.json", project / ".mcp.json"


def hook_command(command: list[str], event: str, vault: str | None, agent: str | None) -> str:
    """The shell command of vaultmem's hook for ``event``: fails open (``|| true``),
    marked as vaultmem's (:data:`HOOK_MARK`)."""
    args = [*command, "hook", "claude", event, *(["--vault", vault] if vault else []),
            *(["--as", agent] if agent else [])]
    return f"{shlex.join(args)} || true {HOOK_MARK}"


def server_entry(command: list[str], vault: str | None, agent: str | None) -> dict:
    """The MCP server's entry: ``--claude``, so that without ``--as`` it acts as the
    session's agent, as the hooks do — never as the human, whose writes skip review."""
    args = [*command[1:], "mcp", "--claude", *(["--vault", vault] if vault else []),
            *(["--as", agent] if agent else [])]
    return {"type": "stdio", "command": command[0], "args": args, "env": {SERVER_MARK[0]: SERVER_MARK[1]}}


def _is_our_hook(hook) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and \
        hook["command"].rstrip().endswith(HOOK_MARK)


def _is_our_server(entry) -> bool:
    env = entry.get("env") if isinstance(entry, dict) else None
    return isinstance(env, dict) and env.get(SERVER_MARK[0]) == SERVER_MARK[1]


def _groups(hooks: dict, event: str, path: Path, text: str | None) -> list:
    groups = hooks.get(event)
    if groups is not None and not isinstance(groups, list):
        raise ParseError(f"'hooks.{event}' is a JSON {type(groups).__name__}, not a list", path=str(path),
                         line=_line_of(text, event), hint="fix the file and run the command again; nothing was written")
    return groups if groups is not None else []


def _add_hooks(data: dict, wanted: dict[str, dict], change: FileChange, text: str | None) -> None:
    hooks = _object(data, "hooks", change.path, text)
    if hooks is None:
        hooks = data["hooks"] = {}
    for event, hook in wanted.items():
        groups = _groups(hooks, event, change.path, text)
        ours = [(g, i) for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for i, h in enumerate(g["hooks"]) if _is_our_hook(h)]
        if not ours:
            hooks[event] = [*groups, {"hooks": [hook]}]
            change.added.append(f"hook {event}")
            continue
        group, i = ours[0]
        if group["hooks"][i] != hook:
            group["hooks"][i] = hook
            change.updated.append(f"hook {event}")
        if len(ours) > 1:  # a copy pasted twice: one is enough
            _remove_hooks_of(hooks, event, keep=group["hooks"][i])
            change.removed.append(f"hook {event} (a second copy)")


def _remove_hooks_of(hooks: dict, event: str, keep=None) -> bool:
    """Remove vaultmem's hooks from ``hooks[event]`` (all but the object ``keep``); drop a
    group left empty, and the event when no group is left. True if any went."""
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return False
    left, removed = [], False
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(inner, list) and any(_is_our_hook(h) and h is not keep for h in inner):
            removed = True
            rest = [h for h in inner if not _is_our_hook(h) or h is keep]
            if rest:
                left.append({**group, "hooks": rest})
            continue
        left.append(group)
    if removed:
        if left:
            hooks[event] = left
        else:
            del hooks[event]
    return removed


def _settings_change(path: Path, install: bool, wanted: dict[str, dict]) -> FileChange:
    text = _read(path)
    data = _load_json(path, text)
    change = FileChange(path, text, text)
    if install:
        _add_hooks(data, wanted, change, text)
    else:
        hooks = _object(data, "hooks", path, text)
        for event in list(hooks or {}):
            if _remove_hooks_of(hooks, event):
                change.removed.append(f"hook {event}")
        if hooks == {} and change.removed:
            del data["hooks"]
    if change.added or change.updated or change.removed:
        change.after = None if (not data and text is not None and not install) else _dump(data, text)
    return change


def _servers_change(path: Path, install: bool, entry: dict, deletable: bool) -> FileChange:
    text = _read(path)
    data = _load_json(path, text)
    change = FileChange(path, text, text, mode=0o600 if not deletable else 0o644)
    servers = _object(data, "mcpServers", path, text)
    current = (servers or {}).get(SERVER_NAME)
    if install:
        if current is None:
            if servers is None:
                servers = data["mcpServers"] = {}
            servers[SERVER_NAME] = entry
            change.added.append(f"MCP server {SERVER_NAME}")
        elif not _is_our_server(current):
            change.kept.append(f"an MCP server named {SERVER_NAME} that vaultmem did not add: left as it is")
        elif current != entry:
            servers[SERVER_NAME] = entry
            change.updated.append(f"MCP server {SERVER_NAME}")
    elif current is not None:
        if _is_our_server(current):
            del servers[SERVER_NAME]
            change.removed.append(f"MCP server {SERVER_NAME}")
            if not servers:
                del data["mcpServers"]
        else:
            change.kept.append(f"an MCP server named {SERVER_NAME} that vaultmem did not add: left as it is")
    if change.added or change.updated or change.removed:
        change.after = None if (deletable and not data and not install) else _dump(data, text)
    return change


def plan_claude(scope: str, *, install: bool, home: Path, project: Path, command: list[str] | None = None,
                vault: str | None = None, agent: str | None = None) -> Plan:
    """What installing (or uninstalling) vaultmem into Claude Code at ``scope``
    (``project``: the folder ``project``; ``user``: under ``home``) changes. ``command``:
    this vaultmem (:func:`vaultmem_command`); ``vault``, ``agent``: written into every
    command when given (absolute), else the hooks find the vault from the session's
    project folder and act as ``$VAULTMEM_AGENT``."""
    if scope not in SCOPES:
        raise BadInput(f"the scope is {scope!r}; it must be project or user", field="scope")
    command = command or vaultmem_command()
    settings, servers = claude_files(scope, home, project)
    wanted = {event: {"type": "command", "command": hook_command(command, event, vault, agent), "timeout": timeout}
              for event, timeout in EVENTS.items()}
    changes = [_servers_change(servers, install, server_entry(command, vault, agent), deletable=scope == "project"),
               _settings_change(settings, install, wanted)]
    return Plan("claude", scope, install, changes)


# -- git hooks -------------------------------------------------------------------------------
def git_hook_text(command: list[str]) -> str:
    """``hooks/git/pre-commit`` with this vaultmem written into it."""
    text = (bundle_root() / "git" / GIT_HOOK).read_text(encoding="utf-8")
    module = " ".join(command[1:])
    return (text.replace("VAULTMEM_INSTALLED=''", f"VAULTMEM_INSTALLED={shlex.quote(command[0])}", 1)
                .replace("VAULTMEM_MODULE=''", f"VAULTMEM_MODULE={shlex.quote(module)}", 1))


def _is_our_git_hook(text: str | None) -> bool:
    return text is not None and GIT_HOOK_MARK in "\n".join(text.splitlines()[:3])


def _read_hook(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise from_os_error(exc, path=str(path)) from None


def plan_git_hooks(root: Path, hooks_dir: Path, *, install: bool, command: list[str] | None = None) -> Plan:
    """What installing (or uninstalling) vaultmem's pre-commit hook in the vault at
    ``root`` changes; ``hooks_dir``: the folder git runs its hooks from."""
    real_root, real_hooks = os.path.realpath(root), os.path.realpath(hooks_dir)
    if not (real_hooks == real_root or real_hooks.startswith(real_root + os.sep)):
        raise VaultmemError(f"git runs this vault's hooks from {hooks_dir} (core.hooksPath), a folder outside the "
                            f"vault that other repositories may share; vaultmem installs no hook there",
                            path=str(hooks_dir),
                            hint=f"unset core.hooksPath for this vault (git -C {root} config --unset core.hooksPath), "
                                 f"or call 'vaultmem check --staged' from the hook you keep there")
    target, chained = hooks_dir / GIT_HOOK, hooks_dir / f"{GIT_HOOK}{CHAINED_SUFFIX}"
    current, aside = _read_hook(target), _read_hook(chained)
    changes: list[FileChange] = []
    if install:
        ours = git_hook_text(command or vaultmem_command())
        if current is None or _is_our_git_hook(current):
            change = FileChange(target, current, current, mode=0o755)
            if current != ours:
                change.after = ours
                (change.added if current is None else change.updated).append("pre-commit hook")
            changes.append(change)
        elif aside is not None:
            raise VaultmemError(f"{target} is not vaultmem's, and {chained.name} exists already: vaultmem would "
                                f"have to put one of them aside over the other", path=str(target),
                                hint=f"merge them into one hook (or remove {chained.name}), then run the command again")
        else:
            changes.append(FileChange(chained, None, current, added=["your pre-commit hook, moved here and run "
                                                                     "after vaultmem's check"], moved_from=target))
            changes.append(FileChange(target, current, ours, added=["pre-commit hook"], mode=0o755))
    elif _is_our_git_hook(current):
        changes.append(FileChange(target, current, None, removed=["pre-commit hook"]))
        if aside is not None:
            changes.append(FileChange(target, None, aside, added=[f"your pre-commit hook, back from {chained.name}"],
                                      moved_from=chained))
    else:
        change = FileChange(target, current, current)
        if current is not None:
            change.kept.append("the pre-commit hook is not vaultmem's: left as it is")
        changes.append(change)
    return Plan("git-hooks", str(root), install, changes)


# -- writing ---------------------------------------------------------------------------------
def apply(plan: Plan) -> Plan:
    """Write what ``plan`` changes, file by file (atomically); returns it."""
    for change in plan.changed:
        target = Path(os.path.realpath(change.path))
        try:
            if change.moved_from is not None:
                os.replace(change.moved_from, target)
            elif change.after is None:
                target.unlink(missing_ok=True)
                if target.parent.name == ".claude":
                    try:
                        target.parent.rmdir()  # the folder install created, if nothing else is in it
                    except OSError:
                        pass
            else:
                files.atomic_write(target, change.after, mode=change.mode)
        except OSError as exc:
            raise from_os_error(exc, path=str(change.path), writing=True) from None
    return plan
