"""What scrubbing secrets costs, and how often it is wrong.

    python benchmarks/bench_guard.py [--out benchmarks/results/guard.json]

Measures, on this machine: loading detect-secrets; scrubbing ordinary prose (the gate
skips the detectors), prose with a long token (detectors run), and a secret; false
positives on the dev-set vault's notes and pages (benchmarks/devset: line by line, and each
file whole, where lines are also read joined), on a corpus of UUIDs and git hashes and on
classes of look-alike clean text (sha256, upper-case ids, paths, identifiers, Chinese
prose, ids wrapped onto a new line, versions and hosts, base64 of ordinary words); and the
share caught of a secret corpus (10 kinds) and, per class, of the classes issue 13 found
leaking (random base64 of 16/20/24 bytes, URL passwords of 1-20 characters, passwords in
prose, full-width forms, secrets split across lines). A secret counts as caught only if
the scrubbed text holds it in no form: as written, NFKC-folded, or with the line breaks
taken out. Every corpus is generated from a fixed seed.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import random
import string
import subprocess
import sys
import tempfile
import unicodedata
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench_devset import make_devset  # noqa: E402
from report import code_version, write_json  # noqa: E402
from timing import samples  # noqa: E402

from vaultmem.guard import might_hold_secret, scrub  # noqa: E402

KEY = b"bench"


def secret_corpus(rng: random.Random) -> list[tuple[str, str]]:
    """The original corpus: 50 lines each of 10 kinds, as (line, the secret in it)."""
    def r(chars: str, n: int) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    alnum = string.ascii_letters + string.digits
    out = []
    for _ in range(50):
        aws = f"AKIA{r(string.ascii_uppercase + string.digits, 16)}"
        gh, gl = f"ghp_{r(alnum, 36)}", f"glpat-{r(alnum, 20)}"
        slack = f"xoxb-{r(string.digits, 12)}-{r(string.digits, 13)}-{r(alnum, 24)}"
        stripe, openai = f"sk_live_{r(alnum, 24)}", f"sk-{r(alnum, 20)}T3BlbkFJ{r(alnum, 20)}"
        pg, pw, blob, npm = r(alnum, 12), r(alnum, 10), r(alnum + "+/", 40), f"npm_{r(alnum, 36)}"
        out += [(f"aws {aws}", aws), (f"github {gh}", gh), (f"gitlab {gl}", gl), (f"slack {slack}", slack),
                (f"stripe {stripe}", stripe), (f"openai {openai}", openai),
                (f"postgres://admin:{pg}@db.example.com/app", pg), (f"password: {pw}", pw), (f"blob {blob}", blob),
                (f"npm {npm}", npm)]
    return out


FULL_WIDTH = {c: chr(ord(c) + 0xFEE0) for c in map(chr, range(0x21, 0x7F))}


def full_width(text: str) -> str:
    return "".join(FULL_WIDTH.get(c, c) for c in text)


def leaked_classes(rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    """The classes issue 13 found leaking, 60 lines each (deterministic with the seed):
    random base64 of 16, 20 and 24 bytes; URL passwords of 1-20 characters;
    ``password=…`` in prose; full-width forms; secrets split across two lines."""
    def r(chars: str, n: int) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    alnum = string.ascii_letters + string.digits
    contexts = ["set it to {} for staging", "copy {} into the form", "值为 {}，部署前替换", "{}", "restore with {} then"]
    out: dict[str, list[tuple[str, str]]] = {}
    for n in (16, 20, 24):
        out[f"base64-{n}-bytes"] = [(contexts[i % len(contexts)].format(b), b) for i in range(60)
                                    for b in [base64.b64encode(rng.randbytes(n)).decode()]]
    urls = [("postgres://u:p@h/db", ":p@"), ("mysql://root:Sup3rS3cret!@10.0.0.5/x", "Sup3rS3cret!")]
    schemes = ["postgres", "mysql", "redis", "mongodb", "amqp", "https"]
    for length in range(1, 21):
        for k in range(3):
            pw = r(alnum, 1) + r(alnum + "!$%^*-_.~", length - 1)
            urls.append((f"connect to {schemes[(length + k) % 6]}://{r(string.ascii_lowercase, 4)}:{pw}@"
                         f"db{k}.example.com/app", f":{pw}@"))  # a password of one letter is in 'postgres' too
    out["url-password"] = urls
    prose = []
    for i in range(60):
        pw = r(string.ascii_letters, 4) + r(string.digits, rng.randint(1, 4)) + r(alnum, rng.randint(0, 6))
        form = ["the password=" + pw + " is set", "we set password=" + pw + " on staging",
                "db password: " + pw + " for staging", "密码：" + pw + "，别外传", "token=" + pw + " (rotated)",
                "the root password is " + pw][i % 6]
        prose.append((form, pw))
    prose[0] = ("password=hunter2 in prose", "hunter2")
    out["password-in-prose"] = prose
    fw = []
    for i in range(60):
        kind = i % 4
        if kind == 0:
            tok = [f"ghp_{r(alnum, 36)}", f"AKIA{r(string.ascii_uppercase + string.digits, 16)}",
                   f"sk_live_{r(alnum, 24)}", f"npm_{r(alnum, 36)}"][i // 4 % 4]
            fw.append((f"token {full_width(tok)}", full_width(tok)))
        elif kind == 1:
            pw = r(alnum, 12)
            fw.append((full_width(f"postgres://admin:{pw}@db.example.com/app"), full_width(pw)))
        elif kind == 2:
            b = base64.b64encode(rng.randbytes(24)).decode()
            fw.append((f"备份 {full_width(b)}", full_width(b)))
        else:
            tok = f"ghp_{r(alnum, 36)}"
            half = rng.randint(4, 36)  # only part of it full-width
            fw.append((f"key {tok[:half]}{full_width(tok[half:])}", tok[:half] + full_width(tok[half:])))
    out["full-width"] = fw
    split = []
    breaks = ["\n", "\n  ", "\n> ", "\n    "]
    for i in range(60):
        tok = [f"ghp_{r(alnum, 36)}", f"AKIA{r(string.ascii_uppercase + string.digits, 16)}",
               base64.b64encode(rng.randbytes(24)).decode(), f"sk_live_{r(alnum, 24)}",
               f"glpat-{r(alnum, 20)}"][i % 5]
        cut = rng.randint(4, len(tok) - 4)
        br = breaks[i // 5 % 4]
        lead = "> " if br == "\n> " else ""
        split.append((f"{lead}deploy with {tok[:cut]}{br}{tok[cut:]} today", tok))
    out["split-line"] = split
    return out


def leaked(text: str, value: str, clean: str) -> bool:
    """Whether ``value`` is still in the scrubbed text, in any form: as written, NFKC-folded
    (as the index stores it), or with line breaks (and indentation or '>' quotes) taken out."""
    def forms(t: str) -> set[str]:
        folded = unicodedata.normalize("NFKC", t)
        return {t, folded, re.sub(r"\n[ \t>]*", "", t), re.sub(r"\n[ \t>]*", "", folded)}

    want = unicodedata.normalize("NFKC", value)
    return any(want in f or value in f for f in forms(clean))


def clean_corpus(rng: random.Random) -> list[str]:
    out = []
    for _ in range(500):
        sha1 = "".join(rng.choice("0123456789abcdef") for _ in range(40))
        out += [f"fixed in {sha1}", f"see {sha1[:7]}", f"request {uuid.UUID(int=rng.getrandbits(128), version=4)}"]
    return out


WORDS = ("dashboard table user login request handler cache redis backend frontend review deploy config session "
         "token parser index build cleanup effect memo state router query schema migration worker queue").split()


VERSIONS = ["python3.11", "node18-alpine3.19", "utf8mb4_unicode_ci", "x86_64-linux-gnu"]


def clean_classes(rng: random.Random) -> dict[str, list[str]]:
    """Text that is not secret but looks like it might be, by class."""
    hexs = lambda n: "".join(rng.choice("0123456789abcdef") for _ in range(n))  # noqa: E731
    out: dict[str, list[str]] = {
        "sha256": [f"artifact sha256:{hexs(64)}" for _ in range(100)],
        "uuid-upper": [f"trace {str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()}" for _ in range(100)],
        "md5-sha1-upper": [f"md5 {hexs(32).upper()} sha1 {hexs(40).upper()}" for _ in range(100)],
        "paths": [f"see /var/lib/{rng.choice(WORDS)}/{hexs(32)}/{rng.choice(WORDS)}.log and "
                  f"src/{rng.choice(WORDS).title()}/{''.join(w.title() for w in rng.sample(WORDS, 3))}.tsx"
                  for _ in range(100)],
        "identifiers": [f"call {rng.choice(WORDS)}{''.join(w.title() for w in rng.sample(WORDS, rng.randint(2, 4)))}"
                        f"{rng.choice(['', '2', 'V2', '18', 'Async'])}()" for _ in range(100)],
        "chinese": [f"后端端口固定{rng.randint(1000, 9999)}，{rng.choice(['缓存', '队列', '索引', '会话'])}放在"
                    f"{rng.choice(['Redis', 'Postgres', 'vault', '配置中心'])}里，由运维管理" for _ in range(100)],
        "wrapped-ids": [[f"fixed in commit\n{hexs(40)}", f"see request\n  {uuid.UUID(int=rng.getrandbits(128))}",
                         f"> artifact\n> sha256:{hexs(64)}",
                         f"the {rng.choice(WORDS)}\nDashboardTableVirtualised.tsx"][i % 4]
                        for i in range(100)],
        "versions-hosts": [f"{rng.choice(VERSIONS)}"
                           f" on {rng.choice(WORDS)}-{rng.randint(1, 99)}.k8s.internal:{rng.randint(1000, 65535)}"
                           for _ in range(100)],
        # base64 of ordinary text cannot be told from a key by looking at it: measured, not promised
        "base64-of-words": [base64.b64encode(" ".join(rng.sample(WORDS, 3)).encode()).decode() for _ in range(100)],
    }
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
        make_devset(Path(tmp, "v"))
        texts = [(p, p.read_text(encoding="utf-8")) for p in sorted(Path(tmp, "v").rglob("*.md"))
                 if ".git" not in p.parts]
        lines = [line for _, t in texts for line in t.splitlines() if line.strip()]
    files_text = {p.relative_to(Path(tmp, "v")).as_posix(): t for p, t in texts}
    dev_fp = [line for line in lines if scrub(line, "t", KEY)[1]]
    file_fp = {rel: [f.type for f in scrub(t, "t", KEY)[1]] for rel, t in files_text.items()}
    file_fp = {rel: kinds for rel, kinds in file_fp.items() if kinds}
    ids = clean_corpus(rng)
    id_fp = [line for line in ids if scrub(line, "t", KEY)[1]]
    secrets = secret_corpus(rng)
    caught = [s for s, v in secrets if scrub(s, "t", KEY)[1] and not leaked(s, v, scrub(s, "t", KEY)[0])]
    gated = sum(1 for line in lines if might_hold_secret(line))
    per_class = {}
    for name, items in leaked_classes(random.Random(13)).items():
        missed = [s for s, v in items if not (lambda c: c[1] and not leaked(s, v, c[0]))(scrub(s, "t", KEY))]
        per_class[name] = {"lines": len(items), "caught": len(items) - len(missed), "missed_examples": missed[:3]}
    clean_fp = {}
    for name, items in clean_classes(random.Random(17)).items():
        flagged = [s for s in items if scrub(s, "t", KEY)[1]]
        clean_fp[name] = {"lines": len(items), "flagged": len(flagged), "examples": flagged[:3]}

    cases = {"prose_gate_skips": (lambda: scrub(prose, "t", KEY), 2000),  # name: (call, calls timed)
             "long_token_detectors_run": (lambda: scrub(long_token, "t", KEY), 200),
             "with_a_secret": (lambda: scrub(secret, "t", KEY), 200),
             "devset_file_average": (lambda: [scrub(t, "t", KEY) for t in files_text.values()], 3)}
    # n calls timed as one block, then divided: a µs-scale call's own timer costs nothing
    scrub_ms = {name: samples(lambda c=call, n=calls: [c() for _ in range(n)], 1, warm=0)[0] / calls * 1000
                for name, (call, calls) in cases.items()}
    scrub_ms["devset_file_average"] /= max(1, len(files_text))  # a call scrubs every file
    result = {
        "code": code_version(),
        "detect_secrets_load_s": round(float(load.stdout), 3),
        "scrub_ms": {name: round(ms, 4 if name == "prose_gate_skips" else 3) for name, ms in scrub_ms.items()},
        "devset_lines": len(lines), "devset_lines_through_gate": gated,
        "devset_false_positives": len(dev_fp), "devset_false_positive_examples": dev_fp[:5],
        "devset_files": len(files_text), "devset_files_flagged_whole": len(file_fp),
        "devset_files_flagged_examples": dict(list(file_fp.items())[:5]),
        "id_hash_lines": len(ids), "id_hash_false_positives": len(id_fp),
        "clean_classes": clean_fp,
        "secret_lines": len(secrets), "secrets_caught": len(caught),
        "missed_examples": [s for s, _ in secrets if s not in caught][:5],
        "leaked_classes": per_class,
        "leaked_classes_caught": f"{sum(c['caught'] for c in per_class.values())}/"
                                 f"{sum(c['lines'] for c in per_class.values())}",
    }
    write_json(Path(args.out), result)
    print(json.dumps(result, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
