"""The benchmarks' one timing helper: medians and p95, figures written the same way, and
whole commands timed A/B in turn (CPU and wall, medians, the ratio pair by pair).

On a shared machine a process's speed drifts by a factor of two within minutes, so two
versions timed minutes apart cannot be compared: :func:`alternate` runs A and B in turn,
each exposed to the same drift, and takes the ratio of each pair before the median.

    from timing import alternate, median, p95, fmt_ms
    ab = alternate(["python", "-m", "vaultmem", "brief", …], ["/old/bin/python", "-m", …], runs=21)
    ab["ratio"]["cpu"]   # median of A/B CPU, pair by pair
"""

from __future__ import annotations

import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent  # the checkout whose vaultmem children import


def median(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def p95(xs: Sequence[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(0.95 * len(s) + 0.5) - 1))]


def summary(xs: Sequence[float]) -> dict:
    """``{"median", "p95", "min", "max", "runs"}`` of ``xs`` (None when empty)."""
    return {"median": median(xs), "p95": p95(xs), "min": min(xs, default=None), "max": max(xs, default=None),
            "runs": len(xs)}


def samples(fn: Callable[[], object], rounds: int = 15, warm: int = 1) -> list[float]:
    """``fn`` called ``warm`` times untimed, then ``rounds`` times: the wall seconds of each."""
    for _ in range(warm):
        fn()
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def timed(fn: Callable[[], object], rounds: int = 15, warm: int = 1) -> dict:
    """``fn`` called ``warm`` times untimed, then ``rounds`` times: the wall and CPU (this
    process) of each call, summarised."""
    for _ in range(warm):
        fn()
    wall, cpu = [], []
    for _ in range(rounds):
        c, w = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return {"wall": summary(wall), "cpu": summary(cpu)}


# Where the scenario's child processes keep their bytecode caches (set by its main(), under
# its work folder): as an installed vaultmem has them, whatever PYTHONDONTWRITEBYTECODE says.
PYCACHE: Path | None = None


def child_env(bytecode_cache: bool = True, keep: Sequence[str] = ("VAULTMEM_INDEX_ENGINE",)) -> dict:
    """The environment of a child process: this checkout first on PYTHONPATH, vaultmem's
    own variables left out but for ``keep`` (the engine choice), and — unless not
    ``bytecode_cache`` — its bytecode caches under :data:`PYCACHE`, when one is set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_") or k in keep}
    env["PYTHONPATH"] = str(PROJECT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if bytecode_cache and PYCACHE is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def run_kept(cmd: Sequence[str], timeout: float = 120.0, bytecode_cache: bool = True,
             **kw) -> tuple[float, subprocess.CompletedProcess]:
    """(wall seconds, the finished process with its output as text) of ``cmd``, run in the
    project folder (children import the vaultmem beside the benchmarks) with
    :func:`child_env`: for a command whose output the scenario reads."""
    started = time.perf_counter()
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout,
                          env=child_env(bytecode_cache), cwd=str(PROJECT), **kw)
    return time.perf_counter() - started, done


def children_cpu() -> float:
    """CPU seconds (user + system) of every child this process has waited for so far:
    read before and after a command to get its CPU."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def peak_rss_mb(children: bool = False) -> float:
    """The peak resident memory of this process (or, ``children``, of the largest child
    waited for), in MiB (Linux reports KiB)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return used.ru_maxrss / 1024


def run_once(cmd: Sequence[str], env: dict | None = None, cwd: str | None = None,
             timeout: float = 600.0) -> tuple[float, float, int]:
    """One run of a whole command: (wall seconds, CPU seconds of it and its children,
    exit code). Its output is read and dropped. Over ``timeout`` seconds its whole process
    group is killed (a wrapper script's children too) and ``subprocess.TimeoutExpired``
    raised."""
    before = children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(list(cmd), env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _out, err = proc.communicate(timeout=timeout)
    except BaseException:  # the time is up, or ^C: nothing it started keeps running
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    wall = time.perf_counter() - started
    cpu = children_cpu() - before
    if proc.returncode != 0:
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return wall, cpu, proc.returncode


def alternate(cmd_a: Sequence[str] | Callable[[int], Sequence[str]], cmd_b: Sequence[str] | Callable[[int], Sequence[str]],
              runs: int = 21, warm: int = 1, env_a: dict | None = None, env_b: dict | None = None,
              cwd: str | None = None, timeout: float = 600.0) -> dict:
    """A and B run in turn, ``runs`` times each after ``warm`` untimed pairs; a command
    may be a function of the run's number (to vary the input). ``{"a", "b", "ratio"}``:
    each side's wall and CPU summarised, and the medians of A/B taken pair by pair.
    A run that fails, or takes over ``timeout`` seconds, stops the comparison (its
    stderr is shown)."""
    def command(c, n):
        return c(n) if callable(c) else c

    sides = {"a": {"wall": [], "cpu": []}, "b": {"wall": [], "cpu": []}}
    pairs = {"wall": [], "cpu": []}
    for n in range(warm + runs):
        got = {}
        for side, c, env in (("a", cmd_a, env_a), ("b", cmd_b, env_b)):
            wall, cpu, code = run_once(command(c, n), env=env, cwd=cwd, timeout=timeout)
            if code != 0:
                raise SystemExit(f"side {side.upper()} failed (exit {code}): {' '.join(command(c, n))}")
            got[side] = (wall, cpu)
        if n < warm:
            continue
        for side in ("a", "b"):
            sides[side]["wall"].append(got[side][0])
            sides[side]["cpu"].append(got[side][1])
        pairs["wall"].append(got["a"][0] / got["b"][0])
        pairs["cpu"].append(got["a"][1] / got["b"][1] if got["b"][1] else float("nan"))
    return {"a": {k: summary(v) for k, v in sides["a"].items()}, "b": {k: summary(v) for k, v in sides["b"].items()},
            "ratio": {k: median(v) for k, v in pairs.items()}, "runs": runs,
            "load": os.getloadavg()[0]}


# -- how figures are written -------------------------------------------------------------------

def fmt_ms(s: float | None) -> str:
    if s is None:
        return "—"
    ms = s * 1000
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"


def fmt_ms_of(ms: float | None) -> str:
    """A figure already in milliseconds, written as :func:`fmt_ms` writes seconds."""
    return "—" if ms is None or ms != ms else fmt_ms(ms / 1000)


def fmt_s(s: float | None) -> str:
    return "—" if s is None else f"{s:.2f} s"


def fmt_mb(b: float | None) -> str:
    return "—" if b is None else f"{b / 1e6:.1f} MB"


def times(x: float) -> str:
    return f"×{x:.1f}" if x < 9.95 else f"×{x:.0f}"


def versus(mine: float | None, other: float | None, unit: str = "s") -> str:
    """How ``mine`` compares with ``other`` when less is better: "×12 faster", "×1.3
    slower" (for sizes and memory: smaller / larger)."""
    if not mine or not other:
        return "—"
    better, worse = ("smaller", "larger") if unit == "mb" else ("faster", "slower")
    if abs(other / mine - 1) < 0.05:
        return "about the same"
    return f"{times(other / mine)} {better}" if other >= mine else f"{times(mine / other)} {worse}"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
