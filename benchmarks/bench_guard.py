"""What scrubbing secrets costs, and how often it is wrong.

    python benchmarks/bench_guard.py [--out benchmarks/results/guard.json]

Measures, on this machine: loading detect-secrets; scrubbing ordinary prose (the gate
skips the detectors), prose with a long token (detectors run), and a secret; false
positives on the dev-set vault's notes and pages (benchmarks/devset) and on a corpus of
UUIDs and git hashes; and the share of a secret corpus that is caught.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from vaultmem.guard import might_hold_secret, scrub  # noqa: E402

KEY = b"bench"


def per_call(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1000


def secret_corpus(rng: random.Random) -> list[str]:
    def r(chars: str, n: int) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    alnum = string.ascii_letters + string.digits
    out = []
    for _ in range(50):
        out += [
            f"aws AKIA{r(string.ascii_uppercase + string.digits, 16)}",
            f"github ghp_{r(alnum, 36)}",
            f"gitlab glpat-{r(alnum, 20)}",
            f"slack xoxb-{r(string.digits, 12)}-{r(string.digits, 13)}-{r(alnum, 24)}",
            f"stripe sk_live_{r(alnum, 24)}",
            f"openai sk-{r(alnum, 20)}T3BlbkFJ{r(alnum, 20)}",
            f"postgres://admin:{r(alnum, 12)}@db.example.com/app",
            f"password: {r(alnum, 10)}",
            f"blob {r(alnum + '+/', 40)}",
            f"npm npm_{r(alnum, 36)}",
        ]
    return out


def clean_corpus(rng: random.Random) -> list[str]:
    out = []
    for _ in range(500):
        sha1 = "".join(rng.choice("0123456789abcdef") for _ in range(40))
        out += [f"fixed in {sha1}", f"see {sha1[:7]}", f"request {uuid.UUID(int=rng.getrandbits(128), version=4)}"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE / "results" / "guard.json"))
    args = ap.parse_args()
    rng = random.Random(1)

    load = subprocess.run([sys.executable, "-c", "import time; t=time.perf_counter(); import vaultmem.guard as g; "
                           "g._plugins(); print(time.perf_counter()-t)"], capture_output=True, text=True,
                          cwd=HERE.parent, check=True)
    prose = "The dashboard review found a missing cleanup in useEffect; 后端端口固定8080。"
    long_token = "see src/components/Dashboard/DashboardTableVirtualised.tsx for the fix"
    secret = f"deploy with ghp_{''.join(rng.choice(string.ascii_letters) for _ in range(36))} today"
    scrub(long_token, "t", KEY)  # load the detectors

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(HERE / "devset" / "make_vault.py"), f"{tmp}/v"], check=True,
                       capture_output=True)
        lines = [line for p in Path(tmp, "v").rglob("*.md") if ".git" not in p.parts
                 for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    dev_fp = [line for line in lines if scrub(line, "t", KEY)[1]]
    ids = clean_corpus(rng)
    id_fp = [line for line in ids if scrub(line, "t", KEY)[1]]
    secrets = secret_corpus(rng)
    caught = [s for s in secrets if scrub(s, "t", KEY)[1]]
    gated = sum(1 for line in lines if might_hold_secret(line))

    result = {
        "detect_secrets_load_s": round(float(load.stdout), 3),
        "scrub_ms": {"prose_gate_skips": round(per_call(lambda: scrub(prose, "t", KEY), 2000), 4),
                     "long_token_detectors_run": round(per_call(lambda: scrub(long_token, "t", KEY), 200), 3),
                     "with_a_secret": round(per_call(lambda: scrub(secret, "t", KEY), 200), 3)},
        "devset_lines": len(lines), "devset_lines_through_gate": gated,
        "devset_false_positives": len(dev_fp), "devset_false_positive_examples": dev_fp[:5],
        "id_hash_lines": len(ids), "id_hash_false_positives": len(id_fp),
        "secret_lines": len(secrets), "secrets_caught": len(caught),
        "missed_examples": [s for s in secrets if s not in caught][:5],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
