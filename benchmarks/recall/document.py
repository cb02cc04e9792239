"""The Markdown section of a run (:func:`render`): the machine and command, the summary,
the goals and where they stop being met, each size's tables and the profiles."""

from __future__ import annotations

import shlex

from timing import fmt_ms, fmt_s, median

from .common import ENGINE_LABEL
from .goals import goals_table, threshold_text
from .tables import compare_table, engines_in, ok, size_table, summary_table

VERSIONS = ("typer", "whoosh-reloaded", "tantivy", "watchdog")  # whose versions the text names, when recorded


def cold_brief_text(r: dict, names: list[str]) -> str:
    """Where a cold brief's time goes, per engine (the steps measured one by one)."""
    out = []
    for x in names:
        e = r["engines"].get(x)
        if not ok(e):
            continue
        c, st = e["cold"], e["cold"]["steps"]
        out.append(
            f"- {ENGINE_LABEL[x]}: {fmt_s(median(c['brief']))} in all — Python start {fmt_s(c['python'])}, "
            f"importing the CLI {fmt_s(st['import_cli'])}, `Vault.open` {fmt_s(st['open'])}, the first `brief()` "
            f"{fmt_s(st['brief_first'])} (freshness check {fmt_ms(st['fresh_check'])}, opening the index "
            f"{fmt_ms(st['engine_open'])}, first query {fmt_ms(st['first_search'])}); the same brief again in "
            f"the same process {fmt_ms(st['brief_warm'])}.")
    return "\n".join(out)


def profile_text(r: dict, e: dict) -> str:
    """The profiles of one engine at size ``r``: its cold brief (cProfile, ``-X importtime``)
    and its one-file update; empty where the brief was not profiled."""
    p = e.get("brief_profile")
    if not p:
        return ""
    name = ENGINE_LABEL[e["engine"]]
    out = [f"{name}: cold `vaultmem brief` at {r['n']:,} notes under cProfile ({fmt_s(p['total'])} profiled, "
           "profiler overhead included), cumulative time of the steps:", ""]
    out += [f"    {label:<48} {fmt_ms(s):>10}" for label, s in p["key"]]
    out += ["", "Most self time:", ""]
    out += [f"    {label:<70} {fmt_ms(s):>10}" for label, s in p["self"]]
    imp = p["imports"]
    out += ["", f"`-X importtime`: {fmt_s(imp['total'])} of imports in all; the costliest outermost imports "
            "(each with all it pulls in):", ""]
    out += [f"    {mod:<30} {fmt_ms(s):>10}" for mod, s in imp["top"]]
    inc = e["incremental"]["profile"]
    out += ["", f"{name}: one-file `refresh_index(paths=[rel])` at {r['n']:,} notes under cProfile "
            f"({fmt_ms(inc['total'])} a call, profiler overhead included):", ""]
    out += [f"    {label.strip():<48} {fmt_ms(s):>10}" for label, s in inc["key"]]
    out += ["", "Most self time:", ""]
    out += [f"    {label:<70} {fmt_ms(s):>10}" for label, s in inc["self"][:6]]
    return "\n".join(out)


def build_profile_text(r: dict, e: dict) -> str:
    """The profile of one engine's full build at size ``r``; empty where not profiled."""
    p = e.get("build_profile")
    if not p:
        return ""
    out = [f"{ENGINE_LABEL[e['engine']]}: full build at {r['n']:,} notes under cProfile (`vaultmem index "
           f"--rebuild`, {fmt_s(p['total'])} profiled), cumulative time:", ""]
    out += [f"    {label:<40} {fmt_s(s):>10}" for label, s in p["key"]]
    out += ["", "Most self time:", ""]
    out += [f"    {label:<70} {fmt_s(s):>10}" for label, s in p["self"]]
    return "\n".join(out)


def goal_size(results: list[dict]) -> dict | None:
    """The full size the goals are read at: 10,000 notes, else the largest (None: none)."""
    full = [r for r in results if not r.get("probe") and any(ok(e) for e in r["engines"].values())]
    return next((r for r in full if r["n"] == 10000), max(full, key=lambda r: r["n"], default=None))


def shown_command(argv: list[str]) -> str:
    """The command as run, without the options that only say where raw data goes."""
    shown, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--json", "--commit", "--workdir", "--report-from"):
            skip = True
        elif not a.startswith(("--json=", "--commit=", "--workdir=", "--report-from=")):
            shown.append(a)
    return "python benchmarks/bench_recall.py " + " ".join(shlex.quote(a) for a in shown)


def render(results: list[dict], meta: dict) -> str:
    """The Markdown section of ``results``, measured as ``meta`` says (machine, command)."""
    m = meta["machine"]
    m = {"whoosh-reloaded": m.get("whoosh"), **m}  # results written before the harness named it so
    deps = ", ".join(f"{name} {m[name]}" for name in VERSIONS if m.get(name))
    names = engines_in(results)
    loads = ", ".join(f"{r['n']:,}: {r['load_avg_start'][0]:.1f}" for r in results)
    versions = sorted({e["code"] for r in results for e in r["engines"].values()})
    codes = versions[0] if len(versions) == 1 else "**changed during the run**: " + "; ".join(
        f"{r['n']:,} notes {x} at {e['code']}" for r in results for x, e in r["engines"].items())
    full = [r for r in results if not r.get("probe")]
    probes = [r for r in results if r.get("probe")]
    parts = [
        "## Recall at scale: Whoosh and tantivy",
        "",
        f"Measured {m['date']}, vaultmem {codes}, on {m['cpus']} CPUs ({m['cpu']}), {m['memory']} "
        f"RAM, {m['os']}, Python {m['python']}, "
        f"{deps}, SQLite {m['sqlite']}; vaults on {meta['fs']} (the OS file cache is warm: "
        "\"cold\" means a new process, not a cold disk). Child processes use a warm bytecode cache "
        f"(`PYTHONPYCACHEPREFIX`). Load average (1 min) at the start of each size: {loads} — other work on "
        "this machine shares its CPUs, so treat single figures as ±20 %.",
        "",
        "```bash",
        shown_command(meta["argv"]),
        "```",
        "",
        "Each vault: N notes in `memories/` (mixed Chinese/English engineering facts from word lists, fixed "
        "seed), 20 role pages of 50 entries in `agents/`, and `MEMORY.md` listing every note. Each engine "
        f"({', '.join(ENGINE_LABEL[x] for x in names)}) is measured on its own copy of the vault, with "
        "`VAULTMEM_INDEX_ENGINE` set for the benchmark and every process it starts; SQLite FTS5 and the scan "
        "are measured once per size on the same documents. Queries: 30, ten Chinese two-character words, "
        "ten English words, ten mixes; brief-sized queries are the five task texts of the cold briefs. Warm "
        "figures are in-process (one IndexStore, three rounds after a warm-up); cold ones start a new "
        "`python -m vaultmem` process. \"×N faster\" compares medians (less is better; for sizes and memory, "
        "smaller).",
        "",
        "### Summary",
        "",
        summary_table(results, names),
        "",
        "### Goals",
        "",
        "Warm search is `retrieve.search` in a warm process (the engine's query plus snippets), median of "
        "90; cold brief is `vaultmem brief` in a new process without a watcher, median of 7; incremental is "
        "`refresh_index(paths=[rel])` of one edited note, median of 10.",
        "",
        goals_table(results, names),
    ]
    goal = goal_size(results)
    if goal is not None:
        parts += ["", f"Where a cold brief's time goes at {goal['n']:,} notes (steps measured one by one in "
                  "new processes):", "", cold_brief_text(goal, names)]
    parts += ["", "### Where an engine stops meeting the latency goals", "",
              "Every size measured" + (", with the probe sizes (build, warm search and cold processes only)"
                                       if probes else "") + "; file counts are the Markdown files indexed.",
              "", threshold_text(results, names)]
    for r in full:
        parts += ["", f"### {r['n']:,} notes", "", compare_table(r, names)]
        for x in names:
            e = r["engines"].get(x)
            if e:
                parts += ["", f"{ENGINE_LABEL[x]} in detail:", "", size_table(r, e)]
    if goal is not None:
        profs = [profile_text(goal, e) for e in goal["engines"].values() if ok(e)]
        if any(profs):
            parts += ["", f"### Profiles at {goal['n']:,} notes", ""] + ["\n\n".join(p for p in profs if p)]
    builds = [(r, e) for r in full for e in r["engines"].values() if ok(e) and e.get("build_profile")]
    if builds:
        parts += ["", "### Build profiles", "", "\n\n".join(build_profile_text(r, e) for r, e in builds)]
    return "\n".join(parts) + "\n"
