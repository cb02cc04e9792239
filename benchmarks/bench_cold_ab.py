"""Cold ``vaultmem brief`` of two installations, alternated on one vault.

    python benchmarks/bench_cold_ab.py VAULT --a /path/to/old/venv/bin/python \\
        --b /path/to/new/venv/bin/python [--runs 21] [--watcher]

On a shared machine the speed of a process drifts by a factor of two within minutes, so
two versions measured minutes apart cannot be compared; alternating them run by run
exposes both to the same drift (:func:`timing.alternate`: the A/B ratios are taken pair by
pair). Each run is a new ``python -m vaultmem brief`` process (bytecode cache on, as a
user has it), cycling through the five brief tasks of vaults.py (``BRIEF_TASKS``);
reported: the median and minimum wall time and the median CPU per side, the ratios, and
``python -c pass`` for scale. With ``--watcher`` a ``vaultmem watch`` (of side B) runs
meanwhile, so both sides skip their freshness check. The vault is used as it is (index
it first with each side, e.g. ``vaultmem index``, since an engine or manifest change
rebuilds it); when the two sides write different index formats, give B its own copy of
the vault (``--vault-b``), or each side would rebuild the other's index.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import alternate, fmt_ms  # noqa: E402
from vaults import BRIEF_TASKS  # noqa: E402


def env_for(pycache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def brief_command(python: str, vault: Path):
    """The command of run ``i``: a cold brief, cycling through the tasks."""
    def command(i: int) -> list[str]:
        role, task = BRIEF_TASKS[i % len(BRIEF_TASKS)]
        return [python, "-m", "vaultmem", "--vault", str(vault), "brief", role, "--task", task]
    return command


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--a", required=True, help="python of installation A (the baseline)")
    ap.add_argument("--b", required=True, help="python of installation B")
    ap.add_argument("--vault-b", type=Path, help="B's own copy of the vault (when B's index format differs)")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--watcher", action="store_true", help="run B's `vaultmem watch` meanwhile")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    vaults = {"a": args.vault, "b": args.vault_b or args.vault}
    with tempfile.TemporaryDirectory(prefix="vaultmem-ab-") as tmp:
        envs = {side: env_for(Path(tmp) / side) for side in "ab"}
        watcher = None
        if args.watcher:
            watcher = subprocess.Popen([args.b, "-m", "vaultmem", "--vault", str(vaults["b"]), "watch"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=envs["b"],
                                       cwd=tmp)
            time.sleep(5)  # its first full sync
        try:
            # the first pair fills the bytecode caches, untimed
            ab = alternate(brief_command(args.a, vaults["a"]), brief_command(args.b, vaults["b"]), runs=args.runs,
                           env_a=envs["a"], env_b=envs["b"], cwd=tempfile.gettempdir())
            py = alternate([args.b, "-c", "pass"], [args.b, "-c", "pass"], runs=5, env_a=envs["b"], env_b=envs["b"])
        finally:
            if watcher is not None:
                watcher.send_signal(signal.SIGINT)
                watcher.wait(timeout=30)
    out = {**ab, "python_c_pass_s": py["a"]["wall"]["median"], "watcher": args.watcher}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for side, label in (("a", args.a), ("b", args.b)):
        w, c = out[side]["wall"], out[side]["cpu"]
        print(f"{side.upper()} {label}: wall median {fmt_ms(w['median'])} (min {fmt_ms(w['min'])}), CPU median "
              f"{fmt_ms(c['median'])} ({args.runs} runs{', watcher alive' if args.watcher else ''})")
    print(f"A/B, pair by pair: wall ×{out['ratio']['wall']:.2f}, CPU ×{out['ratio']['cpu']:.2f}; "
          f"python -c pass {fmt_ms(out['python_c_pass_s'])}")


if __name__ == "__main__":
    sys.exit(main())
