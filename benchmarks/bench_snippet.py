"""What a huge note costs: the snippet of one, and a search and a brief in a vault that holds one.

    python benchmarks/bench_snippet.py highlight [--src TREE] [--sizes 25,100,400,1200] [--timeout 300]
    python benchmarks/bench_snippet.py vault [--mb 10] [--vaultmem PATH/TO/vaultmem]

``highlight``: ``analysis.highlight`` on one note of each size (KB of English prose in which
the query's words come every few words: a log body pasted in, or a long transcript), in a
fresh process per size so that each is timed alone; ``--src`` imports vaultmem from another
source tree (main's checkout, for the before/after ratio). A size that takes longer than
``--timeout`` is reported as such.

``vault``: a vault in a temporary folder with a few ordinary notes and one note of ``--mb``
MB written straight into memories/ (as a git pull or Obsidian would bring it: vaultmem
itself refuses a note that size), then the index build, and cold ``vaultmem search`` and
``vaultmem brief`` runs (median of 5), each a new process as an agent would start it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import log, median, run_once

HERE = Path(__file__).resolve().parent

PROSE = ("the backend port moved to 8080 after the review of the deploy script and every "
         "service that talks to it now reads the port from the environment ").split()


def prose(kb: int) -> str:
    words, size, i = [], 0, 0
    while size < kb * 1024:
        w = PROSE[i % len(PROSE)]
        words.append(w)
        size += len(w) + 1
        i += 1
    return " ".join(words)


TIME_ONE = """
import sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
from vaultmem.analysis import highlight, query_tokens
from bench_snippet import prose
from timing import samples
text = prose(int(sys.argv[3]))
q = query_tokens("backend port")
runs = []
while len(runs) < 3 and (not runs or runs[-1] <= 0.5):  # the best of three runs; a slow one is the last
    runs += samples(lambda: highlight(text, q), 1, warm=0)
print(min(runs))
"""


def bench_highlight(src: Path, sizes: list[int], timeout: float) -> dict:
    out = {}
    for kb in sizes:
        try:
            r = subprocess.run([sys.executable, "-c", TIME_ONE, str(src), str(HERE), str(kb)], capture_output=True,
                               text=True, timeout=timeout, check=True)
            out[f"{kb} KB"] = float(r.stdout.strip())
        except subprocess.TimeoutExpired:
            out[f"{kb} KB"] = f"> {timeout:g} s"
            break  # a bigger note takes longer still
        log(f"highlight {kb} KB: {out[f'{kb} KB']}")
    return out


def _vaultmem(exe: str, *args: str, cwd: Path) -> float:
    """The wall seconds of one ``vaultmem`` command, a new process."""
    wall, _cpu, code = run_once([exe, *args], cwd=str(cwd))
    if code != 0:
        raise SystemExit(f"vaultmem {' '.join(args)} failed ({code})")
    return wall


def bench_vault(exe: str, mb: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "v"
        _vaultmem(exe, "init", str(root), "--lang", "en", cwd=Path(tmp))
        for i in range(5):
            _vaultmem(exe, "remember", f"ordinary fact {i}: the backend port is {8000 + i}", "--type", "fact",
                      cwd=root)
        huge = root / "memories" / "huge-transcript.md"
        huge.write_text("---\nname: huge transcript\ndescription: a pasted transcript\ntype: episode\n"
                        "scope: global\nstatus: active\n---\n" + prose(mb * 1024) + "\n", encoding="utf-8")
        build = _vaultmem(exe, "index", "--rebuild", cwd=root)
        search = [_vaultmem(exe, "search", "backend port", cwd=root) for _ in range(5)]
        brief = [_vaultmem(exe, "brief", "bob", "--task", "backend port review", cwd=root) for _ in range(5)]
        return {"note MB": mb, "index --rebuild s": round(build, 3),
                "search s (median of 5)": round(median(search), 3),
                "brief s (median of 5)": round(median(brief), 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    h = sub.add_parser("highlight")
    h.add_argument("--src", type=Path, default=HERE.parent)
    h.add_argument("--sizes", default="25,100,400,1200")
    h.add_argument("--timeout", type=float, default=300)
    v = sub.add_parser("vault")
    v.add_argument("--mb", type=int, default=10)
    v.add_argument("--vaultmem", default=str(Path(sys.executable).with_name("vaultmem")))
    args = ap.parse_args()
    if args.what == "highlight":
        result = bench_highlight(args.src.resolve(), [int(s) for s in args.sizes.split(",")], args.timeout)
    else:
        result = bench_vault(args.vaultmem, args.mb)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("VAULTMEM_AGENT", "")
    main()
