"""The journal's costs: filing a large Claude Code transcript, filing it again, and what
the journal fallback adds to a brief that does not need it.

    python benchmarks/bench_journal.py [--mb 5] [--repeat 3] [--json]

Makes a vault in a temporary folder and a synthetic Claude Code transcript of about
``--mb`` megabytes (user prompts, assistant replies split over several entries, tool
calls and their results, a few secrets), then times, as whole commands in subprocesses
(what a hook pays): ``vaultmem journal add`` of the whole transcript, the same again
(nothing new: idempotent), and the same after 20 more turns. Then, in one process, a
brief whose task memory answers, in a vault with and without that journal (the fallback
must add nothing), and a brief whose task only the journal answers.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("deploy service cache redis timeout login hash argon2 bcrypt migration schema index query latency "
         "retry queue worker billing invoice customer dashboard chart render memory leak profile trace span "
         "kubernetes ingress certificate renewal token rotate secret config flag rollout canary").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def transcript(path: Path, mb: float, session: str = "bench-session", start_turn: int = 0, turns: int | None = None,
               seed: int = 7) -> int:
    """Write (append) a Claude Code transcript of about ``mb`` megabytes (or ``turns``
    exchanges); returns how many JSON lines it wrote."""
    rng = random.Random(seed + start_turn)
    lines = 0
    size = path.stat().st_size if path.exists() else 0
    t0 = 1764576000 + start_turn * 60
    with path.open("a", encoding="utf-8") as fh:
        n = start_turn
        while (turns is None and size < mb * 1024 * 1024) or (turns is not None and n < start_turn + turns):
            n += 1
            ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t0 + n * 60))
            entries = [
                {"type": "user", "sessionId": session, "uuid": f"u{n}", "timestamp": ts,
                 "message": {"role": "user", "content": " ".join(sentence(rng, 12) for _ in range(3))
                             + (" The key is AKIAIOSFODNN7EXAMPLE." if n % 97 == 0 else "")}},
                {"type": "assistant", "sessionId": session, "uuid": f"a{n}", "timestamp": ts,
                 "message": {"id": f"m{n}", "role": "assistant",
                             "content": [{"type": "text", "text": "\n".join(sentence(rng, 15) for _ in range(4))}]}},
                {"type": "assistant", "sessionId": session, "uuid": f"b{n}", "timestamp": ts,
                 "message": {"id": f"m{n}", "role": "assistant",
                             "content": [{"type": "tool_use", "id": f"t{n}", "name": "Bash",
                                          "input": {"command": f"pytest tests/test_{rng.choice(WORDS)}.py -q"}}]}},
                {"type": "user", "sessionId": session, "uuid": f"r{n}", "timestamp": ts,
                 "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                                          "content": "\n".join(sentence(rng, 10) for _ in range(25))}]}},
            ]
            for e in entries:
                line = json.dumps(e) + "\n"
                fh.write(line)
                size += len(line.encode())
                lines += 1
    return lines


def run(args: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vaultmem", *args], cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out: dict = {"mb": a.mb, "repeat": a.repeat}
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        tmp = Path(tmp)
        path = tmp / "bench-session.jsonl"
        out["lines"] = transcript(path, a.mb)
        out["bytes"] = path.stat().st_size
        first, again, grown = [], [], []
        for r in range(a.repeat):
            vault = tmp / f"v{r}"
            subprocess.run([sys.executable, "-m", "vaultmem", "init", str(vault)], check=True, capture_output=True)
            copy = tmp / f"t{r}.jsonl"
            copy.write_bytes(path.read_bytes())
            first.append(run(["journal", "add", str(copy), "--agent", "claude-code"], vault))
            again.append(run(["journal", "add", str(copy), "--agent", "claude-code"], vault))
            transcript(copy, 0, start_turn=100_000, turns=20)
            grown.append(run(["journal", "add", str(copy), "--agent", "claude-code"], vault))
        out["add_seconds"] = {"median": statistics.median(first), "all": first}
        out["again_seconds"] = {"median": statistics.median(again), "all": again}
        out["grown_seconds"] = {"median": statistics.median(grown), "all": grown}
        out["journal_bytes"] = sum(p.stat().st_size for p in (tmp / "v0" / "journal").glob("*.md"))
        out["fallback"] = fallback(tmp, tmp / "v0", a.repeat)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"transcript: {out['bytes'] / 1e6:.2f} MB, {out['lines']:,} lines; journal: {out['journal_bytes'] / 1e6:.2f} MB")
        print(f"journal add (whole command): median {out['add_seconds']['median']:.2f} s")
        print(f"journal add again (nothing new): median {out['again_seconds']['median']:.2f} s")
        print(f"journal add after 20 more turns: median {out['grown_seconds']['median']:.2f} s")
        f = out["fallback"]
        print(f"brief memory answers, without a journal: median {f['without_ms']:.1f} ms; with the journal: "
              f"{f['with_ms']:.1f} ms (×{f['with_ms'] / f['without_ms']:.2f}); journal hits in it: {f['journal_items']}")
        print(f"brief only the journal answers: median {f['fallback_ms']:.1f} ms; journal hits in it: "
              f"{f['fallback_items']}")
    return 0


def fallback(tmp: Path, with_journal: Path, repeat: int) -> dict:
    """A brief for the orchestrator whose task a note answers, in a vault with the journal
    and in one without: the fallback must not run (same items, same time)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from vaultmem.vault import Vault

    without = tmp / "plain"
    subprocess.run([sys.executable, "-m", "vaultmem", "init", str(without)], check=True, capture_output=True)
    task = "which port does the billing service listen on"
    for root in (with_journal, without):
        v = Vault.open(root)
        v.notes.remember("The billing service listens on port 8443 behind the ingress.", v.actor(None), "fact",
                   name="billing port")
        v.refresh_index()
    times: dict[str, list[float]] = {"with": [], "without": [], "fallback": []}
    items = {}
    for _ in range(max(5, repeat * 5)):
        for key, root, t in (("with", with_journal, task), ("without", without, task),
                             ("fallback", with_journal, "rotate the kubernetes ingress certificate renewal token")):
            v = Vault.open(root)
            start = time.perf_counter()
            b = v.brief("orchestrator", t, tokens=1500)
            times[key].append((time.perf_counter() - start) * 1000)
            items[key] = sum(1 for i in b.items if i["kind"] == "journal")
    return {"with_ms": statistics.median(times["with"]), "without_ms": statistics.median(times["without"]),
            "fallback_ms": statistics.median(times["fallback"]), "journal_items": items["with"],
            "fallback_items": items["fallback"]}


if __name__ == "__main__":
    sys.exit(main())
