"""``vaultmem check --staged``: what the next commit records, checked (the pre-commit hook)."""

from typing import Annotated

import typer

from ._common import JsonOpt, VaultOpt, echo, echo_json, handles_errors, session

HINT = ("the commit is not made: fix what is named above, stage it again and commit "
        "(git commit --no-verify skips this check)")


@handles_errors
def check(ctx: typer.Context,
          staged: Annotated[bool, typer.Option("--staged", help="Check what is staged: what the next commit records "
                                                                "(the default, and for now the only check).")] = True,
          vault: VaultOpt = None, json_: JsonOpt = False) -> None:
    """Check what the next commit of the vault records: the frontmatter of each staged
    Markdown file parses, the live and decision logs only grow and their new entries
    verify (signature, chain, sequence), and no added line holds a secret. Each problem is
    named by file and line; the exit code is 1 when there is one, so the pre-commit hook
    ('vaultmem install git-hooks') blocks the commit. Reads only, takes no lock.

    Example: vaultmem check --staged
    """
    from ...staged import check as check_staged
    from ...vault import locate

    s = session(ctx, vault, None, json_)
    result = check_staged(locate(s.vault))
    if s.json:
        echo_json(result.to_dict())
    elif result.ok:
        echo(f"vaultmem check: {result.checked} staged file{'s' if result.checked != 1 else ''} checked, no problem")
    else:
        for p in result.problems:
            where = f"{p['path']}:{p['line']}" if p.get("line") else p["path"]
            echo(f"error: {where}: {p['message']}", err=True)
        echo(f"  hint: {HINT}", err=True)
    if not result.ok:
        raise typer.Exit(1)
