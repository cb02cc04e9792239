#!/usr/bin/env python3
"""The seed's validation walk-through, through a real `vaultmem mcp` server over stdio.

    python examples/validate.py                      # on a fresh vault in a temp folder
    python examples/validate.py --vault ~/team-memory [--as lee] [--role validate-demo]
    python examples/validate.py --server /abs/path/to/vaultmem   # the command a host would run

The steps an orchestrator's setup is checked with, each printed with ✓ or ✗:

1. the MCP connection: the server starts and answers ``get_stats``;
2. lazy pages: a role that was never dispatched has no page, and its first ``dispatch``
   creates it (``agents/ROLE.md``) and briefs it;
3. what the role learned is recorded on its page (``page_add`` by the orchestrator);
4. memory carries over: the role's second ``dispatch`` is briefed with what the first
   one learned.

The exit status is 0 when every step passed, 1 otherwise. With ``--vault`` it works on
that vault as the orchestrator (``--as``, default: the vault's ``orchestrator``): the
role's page and entry are real, committed changes — give ``--role`` a name you want to
keep, or remove ``agents/ROLE.md`` afterwards. Needs vaultmem (and so the ``mcp`` SDK)
installed where this Python runs.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

OK, FAIL = "✓", "✗"


class Walk:
    def __init__(self) -> None:
        self.failed = 0

    def step(self, passed: bool, text: str, detail: str = "") -> bool:
        print(f"{OK if passed else FAIL} {text}" + (f"\n    {detail}" if detail and not passed else ""), flush=True)
        self.failed += not passed
        return passed


def text_of(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def vaultmem_cmd(server: str | None) -> list[str]:
    return shlex.split(server) if server else [sys.executable, "-m", "vaultmem"]


def orchestrator_of(cmd: list[str], vault: Path) -> str | None:
    r = subprocess.run([*cmd, "--vault", str(vault), "config", "show", "--json"], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"{FAIL} cannot read the vault's settings: {r.stderr.strip()}")
    return json.loads(r.stdout).get("orchestrator")


async def walk(cmd: list[str], vault: Path, agent: str, role: str, w: Walk) -> None:
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--vault", str(vault), "--as", agent])
    learned = f"validation {secrets.token_hex(3)}: the staging API answers on port 8443, not 443"
    async with Client(stdio_client(params)) as c:
        # 1. the MCP connection
        stats = await c.call_tool("get_stats", {})
        s = stats.structured_content or {}
        if not w.step(not stats.is_error, f"the server answers get_stats: {s.get('notes')} notes, {s.get('pages')} "
                      f"role pages, acting as {s.get('acting_as')}", text_of(stats)):
            return
        w.step(s.get("acting_as") == s.get("orchestrator"), f"it acts as the orchestrator ({s.get('orchestrator')})",
               "page_add below would wait in the review inbox: give --as the vault's orchestrator")

        # 2. a never-dispatched role gets its page on first dispatch
        before = await c.call_tool("read_page", {"role": role})
        not_found = before.is_error and (before.structured_content or {}).get("error", {}).get("type") == "not_found"
        if not w.step(not_found, f"{role} was never dispatched: it has no page", text_of(before)):
            return
        first = await c.call_tool("dispatch", {"role": role, "task": "check the staging API before the release"})
        d = first.structured_content or {}
        created = not first.is_error and d.get("page_created") is True
        if not w.step(created, f"the first dispatch created {d.get('page')} and briefed it ({d.get('tokens')} tokens)"
                      if created else "the first dispatch creates the role's page and briefs it", text_of(first)):
            return
        page = await c.call_tool("read_page", {"role": role})
        w.step(not page.is_error, f"{d.get('page')} is there", text_of(page))

        # 3. what it learned, recorded by the orchestrator
        added = await c.call_tool("page_add", {"role": role, "text": learned})
        a = added.structured_content or {}
        w.step(not added.is_error and a.get("action") == "page.add",
               f"what the role learned is on its page ({(a.get('entry') or {}).get('link')})", text_of(added))

        # 4. the second dispatch is briefed with it
        second = await c.call_tool("dispatch", {"role": role, "task": "the staging API port for the release check"})
        b = second.structured_content or {}
        w.step(not second.is_error and b.get("page_created") is False, "the second dispatch found the page",
               text_of(second))
        carried = learned.split(": ", 1)[1] in (b.get("markdown") or "")
        w.step(carried, "the second brief carries what the first dispatch learned", (b.get("markdown") or "")[:600])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vault", type=Path, help="an existing vault (default: a fresh one in a temp folder)")
    ap.add_argument("--as", dest="agent", help="who acts (default: the vault's orchestrator)")
    ap.add_argument("--role", help="the never-dispatched role (default: validate-<random>)")
    ap.add_argument("--server", help="the vaultmem command to run, as a host would (default: this Python's)")
    args = ap.parse_args(argv)
    cmd = vaultmem_cmd(args.server)
    w = Walk()
    with tempfile.TemporaryDirectory(prefix="vaultmem-validate-") as tmp:
        vault = args.vault
        if vault is None:
            vault = Path(tmp) / "team-memory"
            r = subprocess.run([*cmd, "init", str(vault), "--orchestrator", "lee"], capture_output=True, text=True,
                               timeout=120, env={k: v for k, v in os.environ.items() if k != "VAULTMEM_AGENT"})
            if not w.step(r.returncode == 0, f"a fresh vault at {vault}", r.stderr.strip()):
                return 1
        agent = args.agent or orchestrator_of(cmd, vault)
        role = args.role or f"validate-{secrets.token_hex(3)}"
        try:
            anyio.run(walk, cmd, vault, agent, role, w)
        except Exception as exc:  # noqa: BLE001 - the server did not start or the session broke
            w.step(False, "the MCP session", f"{type(exc).__name__}: {exc}")
    print(f"\n{'all steps passed' if not w.failed else f'{w.failed} step(s) failed'}")
    return 0 if not w.failed else 1


if __name__ == "__main__":
    sys.exit(main())
