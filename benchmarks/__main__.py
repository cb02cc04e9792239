"""``python -m benchmarks [NAME [ARGS]]``: the benchmarks listed, or one of them run.

NAME is a script of this folder by its file name, with or without ``bench_`` and ``.py``
(``hooks`` is ``bench_hooks.py``); ARGS go to it as its own command line.
"""

from __future__ import annotations

import ast
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
HELPERS = {"__init__", "__main__", "vaults", "timing", "report", "jsonrpc"}  # shared by the scenarios, not run


def scenarios() -> dict[str, Path]:
    """Every runnable script of this folder, by its name without ``bench_``."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("*.py")) if p.stem not in HELPERS}


def summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())[:110]


def main(argv: list[str]) -> int:
    found = scenarios()
    if not argv or argv[0] in ("-h", "--help", "list"):
        width = max(map(len, found))
        print("python -m benchmarks NAME [ARGS]  (NAME --help: what it measures)\n")
        for name, path in found.items():
            print(f"  {name:<{width}}  {summary(path)}")
        return 0
    name = argv[0].removesuffix(".py").removeprefix("bench_")
    path = found.get(name)
    if path is None:
        print(f"python -m benchmarks: no benchmark {argv[0]!r}; the benchmarks: {', '.join(found)}",
              file=sys.stderr)
        return 2
    sys.argv = [str(path), *argv[1:]]
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    runpy.run_path(str(path), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
