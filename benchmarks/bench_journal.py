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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import fmt_mb, fmt_ms_of, fmt_s, median, run_once, samples  # noqa: E402
from vaultmem.vault import Vault  # noqa: E402

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


def journal_add(transcript_path: Path, vault: Path) -> float:
    """The wall seconds of ``vaultmem journal add`` of the transcript, a whole command in the vault."""
    wall, _cpu, code = run_once([sys.executable, "-m", "vaultmem", "journal", "add", str(transcript_path), "--agent",
                                 "claude-code"], cwd=str(vault))
    if code:
        raise SystemExit(f"vaultmem journal add failed (exit {code})")
    return wall


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
            first.append(journal_add(copy, vault))
            again.append(journal_add(copy, vault))
            transcript(copy, 0, start_turn=100_000, turns=20)
            grown.append(journal_add(copy, vault))
        out["add_seconds"] = {"median": median(first), "all": first}
        out["again_seconds"] = {"median": median(again), "all": again}
        out["grown_seconds"] = {"median": median(grown), "all": grown}
        out["journal_bytes"] = sum(p.stat().st_size for p in (tmp / "v0" / "journal").glob("*.md"))
        out["fallback"] = fallback(tmp, tmp / "v0", a.repeat)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"transcript: {fmt_mb(out['bytes'])}, {out['lines']:,} lines; journal: {fmt_mb(out['journal_bytes'])}")
        print(f"journal add (whole command): median {fmt_s(out['add_seconds']['median'])}")
        print(f"journal add again (nothing new): median {fmt_s(out['again_seconds']['median'])}")
        print(f"journal add after 20 more turns: median {fmt_s(out['grown_seconds']['median'])}")
        f = out["fallback"]
        print(f"brief memory answers, without a journal: median {fmt_ms_of(f['without_ms'])}; with the journal: "
              f"{fmt_ms_of(f['with_ms'])} (×{f['with_ms'] / f['without_ms']:.2f}); journal hits in it: "
              f"{f['journal_items']}")
        print(f"brief only the journal answers: median {fmt_ms_of(f['fallback_ms'])}; journal hits in it: "
              f"{f['fallback_items']}")
    return 0


def fallback(tmp: Path, with_journal: Path, repeat: int) -> dict:
    """A brief for the orchestrator whose task a note answers, in a vault with the journal
    and in one without: the fallback must not run (same items, same time)."""
    without = tmp / "plain"
    subprocess.run([sys.executable, "-m", "vaultmem", "init", str(without)], check=True, capture_output=True)
    task = "which port does the billing service listen on"
    for root in (with_journal, without):
        v = Vault.open(root)
        v.notes.remember("The billing service listens on port 8443 behind the ingress.", v.actor(None), "fact",
                   name="billing port")
        v.refresh_index()
    cases = {"with": (with_journal, task), "without": (without, task),
             "fallback": (with_journal, "rotate the kubernetes ingress certificate renewal token")}
    times: dict[str, list[float]] = {key: [] for key in cases}
    briefs = {}  # each case's last brief
    for _ in range(max(5, repeat * 5)):  # the three in turn, a vault opened anew for each brief
        for key, (root, t) in cases.items():
            v = Vault.open(root)
            times[key] += samples(lambda: briefs.update({key: v.brief("orchestrator", t, tokens=1500)}), 1, warm=0)
    items = {key: sum(1 for i in b.items if i["kind"] == "journal") for key, b in briefs.items()}
    return {"with_ms": median(times["with"]) * 1000, "without_ms": median(times["without"]) * 1000,
            "fallback_ms": median(times["fallback"]) * 1000, "journal_items": items["with"],
            "fallback_items": items["fallback"]}


if __name__ == "__main__":
    sys.exit(main())
