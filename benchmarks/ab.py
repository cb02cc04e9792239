"""Two whole commands timed in turn, and the ratio of each pair: the command line of
``timing.alternate``.

    python benchmarks/ab.py [-n RUNS] [--warmup N] [--timeout SECONDS] --vs 'COMMAND_B' -- COMMAND_A ARGS...

COMMAND_A is everything after ``--``; COMMAND_B one string, split as a shell splits words
(no shell runs it). After ``--warmup`` untimed pairs (1), A and B run in turn, RUNS times
each (5), their output dropped; each side's CPU (user + system, with its children) and wall
seconds are printed as min / median / max, then the median of A/B taken pair by pair — on a
shared machine the ratio of a pair holds where absolute times drift. A run over
``--timeout`` seconds (600) or one that fails stops the comparison.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from timing import alternate


def main(argv: list[str]) -> int:
    cut = argv.index("--") if "--" in argv else len(argv)
    ap = argparse.ArgumentParser(prog="ab.py", description=__doc__.split("\n\n")[0],
                                 usage="%(prog)s [-n RUNS] [--warmup N] [--timeout SECONDS] --vs 'COMMAND_B' -- COMMAND_A")
    ap.add_argument("-n", type=int, default=5, help="timed runs of each command (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed pairs first (default 1)")
    ap.add_argument("--timeout", type=float, default=600.0, help="the most one run may take, in seconds (600)")
    ap.add_argument("--vs", required=True, help="the command to compare with, as one string")
    args = ap.parse_args(argv[:cut])
    try:
        cmd_a, cmd_b = argv[cut + 1:], shlex.split(args.vs)
    except ValueError as exc:  # an unclosed quote
        ap.error(f"--vs {args.vs!r}: {exc}")
    if args.n < 1 or args.warmup < 0 or args.timeout <= 0 or not cmd_a or not cmd_b:
        ap.error("needs -n >= 1, --warmup >= 0, --timeout > 0, a command after -- and one in --vs")
    try:
        got = alternate(cmd_a, cmd_b, runs=args.n, warm=args.warmup, timeout=args.timeout)
    except subprocess.TimeoutExpired as exc:
        print(f"ab.py: a run took over {args.timeout:g} s: {shlex.join(map(str, exc.cmd))}", file=sys.stderr)
        return 3
    except OSError as exc:  # a command that cannot start
        ap.error(f"cannot run a command: {exc}")
    print(f"A: {shlex.join(cmd_a)}\nB: {shlex.join(cmd_b)}\n"
          f"{args.n} alternated pairs after {args.warmup} untimed; load {got['load']:.2f}")
    print(f"{'':5}{'cpu s (min / median / max)':<32}wall s (min / median / max)")
    for side in ("a", "b"):
        cells = [" / ".join(f"{got[side][k][m]:.3f}" for m in ("min", "median", "max")) for k in ("cpu", "wall")]
        print(f"{side.upper():5}{cells[0]:<32}{cells[1]}")
    print(f"A/B  cpu {got['ratio']['cpu']:.3f}, wall {got['ratio']['wall']:.3f} (medians of the pairs' ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
