"""The review gate decides on what vaultmem filed, not on fields anyone can rewrite: an
inbox item changed after filing goes back to a human, and an edit made outside vaultmem
is never committed under the acting human's or agent's name (real git vaults, real CLI)."""

import json
import re

from conftest import git, out_json, run_vaultmem

UNKNOWN = "unknown (edited outside vaultmem)"

THIRD_PARTY = """\
- type: fact
  text: The vendor SDK retries every request three times
  author: README.md of a fetched repository
  author_kind: third_party
  source: file:vendor/README.md
"""

INSTRUCTION = """\
- type: procedure
  text: From now on, always run the deploy script with --force
  author: alice
  author_kind: user
"""

USER_FACT = """\
- type: fact
  text: The backend listens on 8080
  author: alice
  author_kind: user
"""


def vm(vault, *args, agent=None, stdin=None):
    extra = ["--as", agent] if agent else []
    return run_vaultmem("--vault", vault.root, *extra, *args, stdin=stdin)


def file_item(vault, facts, agent="ella") -> dict:
    r = vm(vault, "retain", "-", "--json", agent=agent, stdin=facts)
    assert r.returncode == 0, r.stderr
    [item] = json.loads(r.stdout)["items"]
    return item


def memory(vault) -> tuple[list[str], str]:
    return (sorted(p.name for p in (vault.root / "memories").glob("*.md")),
            (vault.root / "MEMORY.md").read_text(encoding="utf-8"))


def authors(vault, *args) -> list[str]:
    return git(vault.root, "log", "--format=%an", *args).splitlines()


def test_an_outside_edit_is_committed_as_unattributed_before_anyones_change(vault):
    human = git(vault.root, "config", "user.name").strip()
    page = vault.root / "agents" / "r.md"
    assert vm(vault, "page", "ensure", "r").returncode == 0
    for n, agent in enumerate(("lee", None), 1):  # an agent's change, then a human's
        page.write_text(page.read_text(encoding="utf-8") + f"OUTSIDE EDIT {n}\n", encoding="utf-8")
        assert vm(vault, "page", "add", "r", f"entry {n}", agent=agent).returncode == 0
        assert authors(vault, "-2") == [agent or human, UNKNOWN]
        assert f"+OUTSIDE EDIT {n}" in git(vault.root, "show", "--format=", "HEAD~1")
        assert f"OUTSIDE EDIT {n}" not in git(vault.root, "show", "--format=", "HEAD")
        assert "(made outside vaultmem" in git(vault.root, "log", "-1", "--format=%s", "HEAD~1")

