"""The signed live-context log under load: appends, tail, --unseen and verify.

    python benchmarks/bench_log.py [--sizes 10000 100000] [--quick] [--out benchmarks/results/log.md]

In one run it measures:

1. appends per second, each scenario in its own fresh set of worker processes started
   together (a barrier), with fsync on unless noted: one writer (2,000 appends through
   ``vault.shared.append``, and through ``livelog.append`` with fsync on and off), 8
   writers as 8 agents (8 files) and 8 writers as one agent (one file, contending for its
   flock), 1,000 appends each; the 8-writer cases are repeated with fsync off. Entries
   carry ~300 bytes of text (summary + body). Afterwards ``verify`` must find every entry
   and nothing wrong. A breakdown times the parts of one append (key load, cursor read,
   open+flock, reading the last line, signing, rendering, write, fsync) in-process.
2. ``log tail -n 20`` on logs of N entries in total (10 agents, written directly with the
   same signing and rendering code as ``livelog.append``), in-process (median of 20) and
   as a new ``python -m vaultmem`` process (median of 5), plus the worst case of a
   filtered tail (a channel no entry has: every file is read to its start);
3. ``log tail --unseen --as a0`` with 20 unseen entries (the cursor file marks the rest
   read; it is reset before every run), in-process and CLI;
4. ``verify``: in-process per size, and as a CLI process on the largest log.

``--quick`` is a smoke check: 2,000-entry logs, 500 single-writer and 8 × 250 concurrent
appends, and the tables are only printed unless ``--out`` is given.

Every phase is bounded (writers stop at a deadline, subprocesses have timeouts). Vaults
are made under a temporary folder and removed unless ``--keep``. The Markdown between the
two markers of ``--out`` is rewritten; hand-written text outside them is kept.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import datetime as dt
import fcntl
import io
import multiprocessing as mp
import os
import pstats
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the harness, and this checkout's vaultmem

from report import RESULTS, code_version, machine, markers, table, write_section  # noqa: E402
from timing import fmt_ms, fmt_s, log, median, samples  # noqa: E402
from vaults import SEED  # noqa: E402

from vaultmem import Vault, livelog  # noqa: E402
from vaultmem.parse.logline import LogEntry, line_hash, parse_line, render  # noqa: E402

PY = sys.executable
TITLE = ("# Benchmark: the signed live-context log\n\n"
         "Reproduce with the command below; the script rewrites only the part between its markers.")
CLI_TIMEOUT = 120.0
VERIFY_CLI_TIMEOUT = 900.0
SCENARIO_BUDGET = 240.0  # writers stop appending after this many seconds
JOIN_GRACE = 60.0
N_AGENTS = 10
READER = "a0"

WORDS = """cache timeout retry schema migration rollback deploy index endpoint queue worker replica shard
backup certificate token session middleware bundle build lint flag rate-limit breaker healthcheck
postgres redis kafka nginx react vite docker kubernetes grpc graphql celery fastapi sqlite grafana
merged failing flaky green blocked reviewed pinned raised lowered reverted pending ready""".split()
CHANNELS = ("general", "backend", "frontend", "infra", "backend/db")
TYPES = ("status", "question", "answer", "handoff", "status", "status")


def text(r: random.Random, size: int) -> str:
    out = []
    n = 0
    while n < size:
        w = r.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:size].strip()


def content(r: random.Random, total: int) -> tuple[str, str]:
    """A summary (one line) and a body: ~``total`` characters together."""
    s = max(20, total // 5)
    return text(r, s), text(r, total - s)


# -- helpers ------------------------------------------------------------------------------


def p99(xs: list[float]) -> float | None:
    """The 99th percentile of ``xs`` (nearest rank; None when empty): the harness stops at p95."""
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(0.99 * (len(s) - 1))))]


def us(s: float | None) -> str:
    """Seconds written in microseconds, for the parts of one append (below what fmt_ms shows)."""
    if s is None:
        return "—"
    x = s * 1e6
    return f"{x:,.0f} µs" if x >= 10 else f"{x:.1f} µs"


def med_min(xs: list[float]) -> str:
    """The median and the minimum of the seconds ``xs``, in ms."""
    return f"{fmt_ms(median(xs))} (min {fmt_ms(min(xs))})"


def keyed_vault(path: Path, agents: list[str]) -> Vault:
    """A new English vault (the log is all it is measured for), with a signing key for
    each of ``agents``."""
    vault, _ = Vault.init(path, lang="en", orchestrator="lee")
    for a in agents:
        vault.shared.new_key(a, vault.actor(a))
    return vault


def run_cli(args: list[str], timeout: float = CLI_TIMEOUT) -> tuple[float, subprocess.CompletedProcess]:
    """``python -m vaultmem ARGS`` as a new process, outside the checkout and without the
    caller's agent or vault: its wall seconds and what it printed."""
    env = {k: v for k, v in os.environ.items() if k not in ("VAULTMEM_AGENT", "VAULTMEM_VAULT")}
    t = time.perf_counter()
    r = subprocess.run([PY, "-m", "vaultmem", *args], capture_output=True, text=True, timeout=timeout, env=env,
                       cwd="/")
    return time.perf_counter() - t, r


def cli_times(args: list[str], lines: int = 0, before=None, runs: int = 5) -> list[float]:
    """The wall seconds of ``runs`` runs of ``run_cli(args)`` after one untimed, ``before()``
    called (untimed) ahead of each; each must succeed and print at least ``lines`` lines."""
    out = []
    for i in range(runs + 1):
        if before is not None:
            before()
        el, r = run_cli(args)
        got = len(r.stdout.strip().splitlines())
        if r.returncode != 0 or got < lines:
            raise RuntimeError(f"vaultmem {shlex.join(args)} failed: {r.returncode} lines={got} {r.stderr[-500:]}")
        if i:
            out.append(el)
    return out


# -- 1. appends ---------------------------------------------------------------------------


def _writer(root: str, agent: str, count: int, mode: str, fsync: bool, size: int, seed: int, barrier, queue,
            deadline_s: float) -> None:
    try:
        vault = Vault(Path(root))
        actor = vault.actor(agent)
        key = livelog.load_private_key(vault.root, agent)
        r = random.Random(seed)
        items = [content(r, size) for _ in range(count)]
        nbytes = 0
        barrier.wait(timeout=120)
        lat = []
        t0 = time.perf_counter()
        deadline = t0 + deadline_s
        for summary, body in items:
            a = time.perf_counter()
            if mode == "shared":
                vault.shared.append(actor, "general", "status", summary, body)
            else:
                nbytes += livelog.append(vault.root, "live", agent, "general", "status", summary, body,
                                         private=key, fsync=fsync).bytes
            lat.append(time.perf_counter() - a)
            if lat[-1] + a > deadline:
                break
        t1 = time.perf_counter()
        queue.put({"agent": agent, "t0": t0, "t1": t1, "lat": lat, "bytes": nbytes, "error": None})
    except BaseException as exc:  # report, never hang the parent
        queue.put({"agent": agent, "error": repr(exc), "lat": [], "t0": 0, "t1": 0, "bytes": 0})


def run_writers(root: Path, agents: list[str], count: int, mode: str, fsync: bool, size: int) -> dict:
    """One process per entry of ``agents``, started together, each appending ``count``
    entries: the throughput over the wall time and the latency (seconds) of one append."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(len(agents))
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(root), a, count, mode, fsync, size, SEED + i, barrier, queue,
                                                SCENARIO_BUDGET), daemon=True)
             for i, a in enumerate(agents)]
    load = machine()["load1"]
    for p in procs:
        p.start()
    results = []
    limit = time.monotonic() + SCENARIO_BUDGET + JOIN_GRACE + 120
    while len(results) < len(procs) and time.monotonic() < limit:
        try:
            results.append(queue.get(timeout=max(0.1, limit - time.monotonic())))
        except Exception:
            break
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():  # only our own children, by handle
            p.terminate()
            p.join(timeout=5)
    errors = [x["error"] for x in results if x["error"]]
    lat = [v for x in results for v in x["lat"]]
    done = len(lat)
    wall = (max(x["t1"] for x in results) - min(x["t0"] for x in results)) if results and not errors else float("nan")
    return {"processes": len(agents), "files": len(set(agents)), "appends": done, "planned": count * len(agents),
            "wall": wall, "rate": done / wall if wall == wall and wall > 0 else float("nan"),
            "p50": median(lat), "p99": p99(lat), "errors": errors, "load": load,
            "missing": len(procs) - len(results)}


def append_breakdown(root: Path, agent: str, size: int, reps: int) -> dict:
    """The parts of one ``livelog.append``, timed one by one in this process (seconds)."""
    r = random.Random(SEED)
    summary, body = content(r, size)
    path = livelog.log_file(root, "live", agent)
    key = livelog.load_private_key(root, agent)
    out: dict[str, float] = {}

    def med(fn, n=reps, rounds=3) -> float:
        """The smallest of ``rounds`` medians of ``n`` calls: other load on the machine
        inflates single rounds."""
        return min(median(samples(fn, n, warm=0)) for _ in range(rounds))

    from vaultmem import files
    from vaultmem.names import check_name

    pub = root / livelog.KEYS_DIR / f"{agent}.pub"
    out["shared.append: public key exists + read the cursor (hw)"] = med(
        lambda: (pub.exists(), livelog.read_cursor(root, agent)))
    out["check the name and fields"] = med(
        lambda: (check_name(agent, "agent name"), livelog.check_fields("general", "status", summary, body)))
    out["load the private key (file read + from_private_bytes)"] = med(lambda: livelog.load_private_key(root, agent))
    out["key id (public key + SHA-256)"] = med(lambda: livelog.key_id(livelog.public_raw(key)))
    out["resolve the file path (files.inside: 2 × Path.resolve)"] = med(
        lambda: files.inside(root, f"{livelog.LOG_DIRS['live']}/{agent}.md"))
    out["mkdir(parents, exist_ok) of the log folder"] = med(lambda: path.parent.mkdir(parents=True, exist_ok=True))

    def lock_cycle():
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        size_ = os.fstat(fd).st_size
        os.pread(fd, 1, size_ - 1)
        os.close(fd)

    out["open + flock + fstat + pread(1) + close"] = med(lock_cycle)
    out["read the last line (tail_lines: open, 64 KiB read, split)"] = med(
        lambda: next(livelog.tail_lines(path, want=1)))
    last = next(livelog.tail_lines(path, want=1))
    out["parse it + line hash"] = med(lambda: (parse_line(last).seq, line_hash(last)))

    def make():
        return LogEntry(log="live", agent=agent, ts=livelog.now_stamp(), seq=1, prev="0" * 32, nonce="0" * 16,
                        channel="general", type="status", summary=summary, body=body, kid="0" * 16)

    e = make()
    out["build entry + canonical payload (JSON)"] = med(lambda: make().payload())
    payload = e.payload()
    out["Ed25519 sign"] = med(lambda: key.sign(payload))
    e.sig = base64.b64encode(key.sign(payload)).decode()
    out["render the line × 2 (append renders it twice)"] = 2 * med(lambda: render(e))
    line = (render(e) + "\n").encode()
    scratch = root / ".vaultmem" / "local" / "bench-scratch.md"
    scratch.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        out["os.write of the line"] = med(lambda: os.write(fd, line))
        fs = med(lambda: (os.write(fd, line), os.fsync(fd)), n=max(50, reps // 4), rounds=1)
    finally:
        os.close(fd)
        scratch.unlink(missing_ok=True)

    def last_4k():
        with open(path, "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, end - 4096))
            return fh.read()[:-1].rsplit(b"\n", 1)[-1]

    compare = {"for comparison: the last line from a 4 KiB read": med(last_4k)}
    return {"parts": out, "fsync": fs, "compare": compare, "line_bytes": len(line), "reps": reps}


def phase_appends(work: Path, single: int, per_writer: int, writers: int, size: int) -> dict:
    """Appends per second in each scenario, then ``verify`` over them all and the parts of
    one append."""
    res: dict = {"load_start": machine()["load1"]}
    specs = [
        ("1 writer, `vault.shared.append`", "shared", True, ["s1"], single),
        ("1 writer, `livelog.append`", "livelog", True, ["s2"], single),
        ("1 writer, `livelog.append`, fsync off", "livelog", False, ["s3"], single),
        (f"{writers} writers as {writers} agents ({writers} files)", "shared", True,
         [f"w{i}" for i in range(writers)], per_writer),
        (f"{writers} writers as 1 agent (1 file)", "shared", True, ["c0"] * writers, per_writer),
        (f"{writers} writers as {writers} agents, fsync off", "livelog", False,
         [f"f{i}" for i in range(writers)], per_writer),
        (f"{writers} writers as 1 agent, fsync off", "livelog", False, ["g0"] * writers, per_writer),
    ]
    agents = sorted({a for s in specs for a in s[3]} | {"bd"})
    vault = keyed_vault(work / "appends", agents)
    res["scenarios"] = []
    for label, mode, fsync, who, count in specs:
        log(f"appends: {label} …")
        out = run_writers(vault.root, who, count, mode, fsync, size)
        out.update(label=label, fsync=fsync, mode=mode)
        res["scenarios"].append(out)
        log(f"  {out['appends']} appends in {out['wall']:.2f} s = {out['rate']:.0f}/s (p50 {fmt_ms(out['p50'])}, "
            f"p99 {fmt_ms(out['p99'])}, load {out['load']}) {out['errors'] or ''}")
    # the line size on disk
    sizes = [p.stat().st_size for p in livelog.log_files(vault.root, "live").values()]
    total = sum(s["appends"] for s in res["scenarios"])
    res["line_bytes"] = sum(sizes) / max(1, total)
    log("appends: verify …")
    findings, counts = vault.shared.verify()
    res["verify"] = {"findings": len(findings), "kinds": sorted({f["kind"] for f in findings}),
                     "entries": counts["entries"], "expected": total}
    with open(livelog.log_file(vault.root, "live", "c0"), "rb") as one_file:
        res["c0_entries"] = sum(1 for _ in one_file)
    # the breakdown, on a file of a few thousand entries (the single-writer one)
    log("appends: breakdown …")
    res["breakdown"] = append_breakdown(vault.root, "s1", size, reps=400)
    res["load_end"] = machine()["load1"]
    return res


# -- 2–4. building a log, tail, unseen, verify ---------------------------------------------


def build_log(vault: Vault, agents: list[str], total: int, size: int) -> dict:
    """``total`` entries round-robin over ``agents``, signed and rendered with the same
    code as ``livelog.append`` (payload, Ed25519, render, line hash chain), each carrying
    high-water marks as ``vault.shared.append`` does once an agent has read others."""
    root = vault.root
    r = random.Random(SEED + total)
    keys = {a: livelog.load_private_key(root, a) for a in agents}
    kids = {a: livelog.key_id(livelog.public_raw(k)) for a, k in keys.items()}
    seq = {a: 0 for a in agents}
    prev = {a: "" for a in agents}
    lines: dict[str, list[str]] = {a: [] for a in agents}
    entries: list[tuple[str, str, int]] = []  # (ts, agent, seq)
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=total * 2 + 3600)
    for i in range(total):
        a = agents[i % len(agents)] if r.random() < 0.8 else r.choice(agents)
        seq[a] += 1
        ts = (start + dt.timedelta(seconds=2 * i, microseconds=r.randrange(1_000_000))).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ")
        hw = {o: max(0, s - r.randrange(1, 6)) for o, s in seq.items() if o != a and s > 5}
        summary, body = content(r, size)
        e = LogEntry(log="live", agent=a, ts=ts, seq=seq[a], prev=prev[a], nonce=r.getrandbits(64).to_bytes(8, "big").hex(),
                     channel=r.choice(CHANNELS), type=r.choice(TYPES), summary=summary, body=body, hw=hw,
                     kid=kids[a])
        e.sig = base64.b64encode(keys[a].sign(e.payload())).decode()
        line = render(e)
        prev[a] = line_hash(line)
        lines[a].append(line)
        entries.append((ts, a, seq[a]))
    for a in agents:
        path = livelog.log_file(root, "live", a)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines[a]) + "\n")
    nbytes = sum(livelog.log_file(root, "live", a).stat().st_size for a in agents)
    return {"entries": entries, "bytes": nbytes}


def unseen_cursor(entries: list[tuple[str, str, int]], reader: str, unseen: int) -> dict[str, int]:
    """The cursor of ``reader`` that leaves the newest ``unseen`` of the others' entries unread."""
    others = sorted(e for e in entries if e[1] != reader)
    cursor: dict[str, int] = {}
    for _ts, a, s in others[: len(others) - unseen]:
        cursor[a] = max(cursor.get(a, 0), s)
    return cursor


def phase_log(work: Path, total: int, size: int, cli_verify: bool, profile: bool) -> dict:
    """A log of ``total`` entries: tail, --unseen and verify timed on it (seconds)."""
    res: dict = {"size": total, "load_start": machine()["load1"]}
    agents = [f"a{i}" for i in range(N_AGENTS)]
    root = work / f"log{total}"
    vault = keyed_vault(root, agents)
    t = time.perf_counter()
    built = build_log(vault, agents, total, size)
    res["build_s"] = time.perf_counter() - t
    res["bytes"] = built["bytes"]
    log(f"{total:,}: built in {res['build_s']:.1f} s ({built['bytes'] / 1e6:.1f} MB)")
    vault = Vault.open(root)
    sh = vault.shared

    # 2. tail -n 20
    def tail():
        got = sh.tail(20)
        assert len(got) == 20, len(got)

    res["tail"] = samples(tail, 20)
    res["tail_filtered"] = samples(lambda: sh.tail(20, channel="no-such-channel"), 3)
    res["tail_cli"] = cli_times(["--vault", str(root), "log", "tail", "-n", "20"], lines=20)
    log(f"{total:,}: tail {fmt_ms(median(res['tail']))} in-process, {fmt_ms(median(res['tail_cli']))} CLI")

    # 3. --unseen with 20 unseen entries
    cursor = unseen_cursor(built["entries"], READER, 20)
    actor = vault.actor(READER)
    runs = []
    for i in range(21):
        livelog.save_cursor(root, READER, cursor)
        a = time.perf_counter()
        got = sh.tail(20, unseen_as=actor)
        el = time.perf_counter() - a
        assert len(got) == 20, len(got)
        if i:
            runs.append(el)
    res["unseen"] = runs
    res["unseen_read_only"] = samples(lambda: livelog.newest(root, "live", 20, after=cursor, exclude=READER), 20)
    assert len(livelog.newest(root, "live", 20, after=cursor, exclude=READER)) == 20
    res["unseen_cli"] = cli_times(["--vault", str(root), "log", "tail", "--unseen", "--as", READER, "-n", "20"],
                                  lines=20, before=lambda: livelog.save_cursor(root, READER, cursor))
    log(f"{total:,}: unseen {fmt_ms(median(res['unseen']))} in-process, {fmt_ms(median(res['unseen_cli']))} CLI")

    # 4. verify
    def verify():
        findings, counts = sh.verify()
        if findings or counts["entries"] != total:
            raise RuntimeError(f"verify: {len(findings)} findings, {counts['entries']} entries: {findings[:3]}")

    res["verify"] = samples(verify, 3 if total <= 20000 else 1, warm=0)
    log(f"{total:,}: verify {fmt_s(min(res['verify']))} in-process")
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        sh.verify()
        prof.disable()
        st = pstats.Stats(prof, stream=io.StringIO())
        total_t = sum(v[2] for v in st.stats.values())  # own time (tottime)
        rows = sorted(st.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:8]
        res["verify_profile"] = [(f"{Path(k[0]).name}:{k[1]} {k[2]}", v[2] / total_t, v[1]) for k, v in rows]
    if cli_verify:
        el, r = run_cli(["--vault", str(root), "log", "verify"], timeout=VERIFY_CLI_TIMEOUT)
        if r.returncode != 0:
            raise RuntimeError(f"log verify failed: {r.returncode} {r.stdout[-500:]} {r.stderr[-500:]}")
        res["verify_cli"] = el
        res["verify_cli_out"] = r.stdout.strip().splitlines()[-1]
        log(f"{total:,}: verify CLI {fmt_s(el)}: {res['verify_cli_out']}")
    res["load_end"] = machine()["load1"]
    return res


def check_unseen_overflow(work: Path) -> dict:
    """More than n unseen entries of one agent: how many does a reader ever get to see?"""
    root = work / "overflow"
    vault = keyed_vault(root, ["p", "q"])
    for i in range(30):
        livelog.append(vault.root, "live", "p", "general", "status", f"entry {i + 1}", fsync=False)
    first = vault.shared.tail(20, unseen_as=vault.actor("q"))
    second = vault.shared.tail(20, unseen_as=vault.actor("q"))
    return {"appended": 30, "first": [e.seq for e in first], "second": [e.seq for e in second],
            "cursor": livelog.read_cursor(vault.root, "q")}


# -- report --------------------------------------------------------------------------------


def report(m: dict, ap: dict, logs: list[dict], boot: list[float], overflow: dict, cmd: str, a: argparse.Namespace) -> str:
    """The Markdown section: the machine, then each phase's table."""
    loads = [ap["load_start"], ap["load_end"]] + [x for r in logs for x in (r["load_start"], r["load_end"])]
    machine_rows = [
        ["CPUs", f"{m['cpus']} × {m['cpu']}"],
        ["OS, Python", f"{m['os']}, Python {m['python']} (cryptography {m['cryptography']}, typer {m['typer']})"],
        ["date, commit", f"{m['date']}, vaultmem {m['commit']}"],
        ["file system", f"{m['fs']} (virtual disk; page cache warm, so reads are memory reads)"],
        ["load average (1 min)",
         f"{min(loads):.2f}–{max(loads):.2f} during the run (appends start {ap['load_start']}, "
         + ", ".join(f"{r['size']:,}-entry log start {r['load_start']}" for r in logs)
         + "); another benchmark may share the 2 CPUs, so single figures are ±20 %"]]
    scenario_rows = [
        [s["label"] + (f" — {len(s['errors'])} errors: {s['errors'][0][:80]}" if s["errors"] else ""),
         s["processes"], s["files"], "on" if s["fsync"] else "off", f"{s['appends']:,}", fmt_s(s["wall"]),
         f"**{s['rate']:,.0f}**", f"{fmt_ms(s['p50'])} / {fmt_ms(s['p99'])}", s["load"]]
        for s in ap["scenarios"]]
    v = ap["verify"]
    bd = ap["breakdown"]
    s1, s3 = ap["scenarios"][0], ap["scenarios"][2]
    part_rows = [[k, us(t)] for k, t in bd["parts"].items()]
    part_rows += [["**sum: the CPU side of one append**", f"**{us(sum(bd['parts'].values()))}**"],
                  [f"fsync after the write (median of {max(50, bd['reps'] // 4)}; varies with other I/O)",
                   us(bd["fsync"])]]
    part_rows += [[f"*{k}*", f"*{us(t)}*"] for k, t in bd["compare"].items()]
    part_rows.append(["*measured: `vault.shared.append` p50 (fsync on) / `livelog.append` p50 (fsync off)*",
                      f"*{us(s1['p50'])} / {us(s3['p50'])}*"])

    def row(label: str, cell) -> list[str]:
        return [label, *(cell(r) for r in logs)]

    log_rows = [
        row("log size on disk", lambda r: f"{r['bytes'] / 1e6:.1f} MB"),
        row("`log tail -n 20`, in-process (median of 20)", lambda r: med_min(r["tail"])),
        row("`log tail -n 20`, new CLI process (median of 5)", lambda r: med_min(r["tail_cli"])),
        row("`--unseen` (20 unseen), in-process incl. cursor save (median of 20)", lambda r: med_min(r["unseen"])),
        row("— of which reading (`livelog.newest` with the cursor, no save)", lambda r: med_min(r["unseen_read_only"])),
        row("`log tail --unseen --as a0`, new CLI process (median of 5)", lambda r: med_min(r["unseen_cli"])),
        row("worst case: `tail -n 20 --channel` matching nothing, in-process (median of 3)",
            lambda r: med_min(r["tail_filtered"])),
        row("`verify`, in-process (best of " + "/".join(str(len(r["verify"])) for r in logs) + ")",
            lambda r: fmt_s(min(r["verify"]))),
        row("`verify` per 10k entries, in-process", lambda r: fmt_s(min(r["verify"]) / r["size"] * 10000)),
        row("`log verify`, new CLI process (1 run)", lambda r: fmt_s(r["verify_cli"]) if "verify_cli" in r else "–"),
        row("`verify` per 10k entries, CLI",
            lambda r: fmt_s(r["verify_cli"] / r["size"] * 10000) if "verify_cli" in r else "–"),
        row("building the log (sign + render, direct write)", lambda r: fmt_s(r["build_s"]))]
    blocks = [
        "## Signed live-context log: appends, tail, --unseen, verify",
        table(["machine", ""], machine_rows),
        f"```bash\n{cmd}\n```",
        f"Entries carry ~{a.content} characters of text (summary + body) and are "
        f"~{ap['line_bytes']:.0f} bytes on disk (fields, nonce, chain hash and signature included). "
        "Throughput counts appends over the wall time from the barrier to the last writer's end; "
        "latencies are per append call.",
        "### 1. Appends per second",
        table(["scenario", "processes", "files", "fsync", "appends", "wall", "appends/s", "per append p50 / p99",
               "load"], scenario_rows),
        f"Afterwards `verify` read {v['entries']:,} entries (expected {v['expected']:,}): "
        + (f"**{v['findings']} findings** ({', '.join(v['kinds'])})" if v["findings"] else "no findings")
        + f"; the one-file scenario's file holds {ap['c0_entries']:,} lines numbered without gaps.",
        f"Where one append's time goes (in-process, each part timed alone: the smallest of 3 medians of "
        f"{bd['reps']} calls; the file holds {a.single:,} entries, lines of {bd['line_bytes']} B):",
        table(["part", "time"], part_rows),
        "### 2–4. Reading and verifying a log of N entries (10 agents)",
        table(["", *(f"{r['size']:,} entries" for r in logs)], log_rows),
        f"A new process that does nothing (`python -m vaultmem --version`): {med_min(boot)}; "
        "the CLI rows above are mostly this start-up."]
    prof = next((r for r in logs if r.get("verify_profile")), None)
    if prof:
        blocks += [f"Where `verify` spends its time (cProfile, own time, {prof['size']:,} entries):",
                   table(["function", "share", "calls"], [[f"`{name}`", f"{share * 100:.0f} %", f"{calls:,}"]
                                                         for name, share, calls in prof["verify_profile"]])]
    blocks.append(
        "Check — more unseen entries than `-n`: agent p appends 30 entries; q runs `tail -n 20 --unseen` twice: "
        f"first sees seq {overflow['first'][0]}–{overflow['first'][-1]} ({len(overflow['first'])}), "
        f"then {len(overflow['second'])} entries; q's cursor ends at {overflow['cursor']}.")
    return "\n\n".join(b.rstrip("\n") for b in blocks)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    p.add_argument("--quick", action="store_true", help="2,000-entry logs and fewer appends: a smoke check")
    p.add_argument("--single", type=int, default=2000, help="appends of the one-writer scenarios")
    p.add_argument("--per-writer", type=int, default=1000, help="appends of each of the concurrent writers")
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--content", type=int, default=300, help="characters of summary + body per entry")
    p.add_argument("--out", type=Path, default=None,
                   help="Markdown file to update (default benchmarks/results/log.md; with --quick: none)")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--keep", action="store_true")
    a = p.parse_args(argv)
    if a.quick:
        a.sizes = [2000]
        a.single, a.per_writer = 500, 250
    elif a.out is None:
        a.out = RESULTS / "log.md"
    cmd = "python benchmarks/bench_log.py " + " ".join(shlex.quote(x) for x in (argv if argv is not None else sys.argv[1:]))
    work = Path(tempfile.mkdtemp(prefix="bench-log-", dir=a.workdir))
    try:
        m = {**machine(work), "commit": code_version()}
        log(f"work folder: {work}; load {m['load1']}")
        boot = cli_times(["--version"])
        log("1. appends")
        ap = phase_appends(work, a.single, a.per_writer, a.writers, a.content)
        logs = []
        for i, n in enumerate(sorted(a.sizes)):
            log(f"2–4. log of {n:,} entries")
            logs.append(phase_log(work, n, a.content, cli_verify=(n == max(a.sizes)), profile=(i == 0)))
        overflow = check_unseen_overflow(work)
        block = report(m, ap, logs, boot, overflow, cmd.strip(), a)
        print("\n" + block)
        if a.out is not None:
            write_section(a.out, block, *markers("bench_log"), title=TITLE)
            print(f"\nwritten: {a.out}")
    finally:
        if a.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
