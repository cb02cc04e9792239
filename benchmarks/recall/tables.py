"""The tables of a size: each engine beside FTS5 and the scan (:func:`compare_table`), all
sizes in one (:func:`summary_table`), and every figure of one engine at one size
(:func:`size_table`) — and how a figure is read from a result that may lack it."""

from __future__ import annotations

from collections.abc import Sequence

from report import table
from timing import fmt_mb, fmt_ms, fmt_s, median, p95, versus

from vaultmem.index.store import ENGINES

from .common import ENGINE_LABEL, IDLE_TIMEOUT


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """:func:`report.table` without its last newline, as the report's parts are joined by lines."""
    return table(headers, rows).rstrip("\n")


def ok(e: dict | None) -> bool:
    """An engine pass that got past its build."""
    return bool(e) and "cut" not in e.get("build", {"cut": "not run"})


def get(fn, *args):
    """``fn(*args)``, or None where a figure was not measured (a probe size, a cut build)."""
    try:
        return fn(*args)
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def fresh(w: dict) -> float | None:
    """The median seconds from a save until searchable, both kinds of save."""
    return median(w["in_place"] + w["replace"])


FORMAT = {"s": fmt_s, "ms": fmt_ms, "mb": fmt_mb}

# (label, engine figure, unit, FTS5 figure, scan figure): the rows of a size's comparison
# table; figures are seconds or bytes, None where not measured.
METRICS = [
    ("full build", lambda e: e["build"]["build_s"], "s", lambda r: r["fts5"]["build_s"], None),
    ("peak RSS of the build", lambda e: e["build"]["rss_peak_kb"] * 1024, "mb", None, None),
    ("index size", lambda e: e["build"]["index_bytes"], "mb", lambda r: r["fts5"]["bytes"], None),
    ("warm query (engine), median", lambda e: median(e["warm"]["engine"]), "ms",
     lambda r: median(r["fts5"]["warm"]), lambda r: median(r["scan"]["times"])),
    ("warm query (engine), p95", lambda e: p95(e["warm"]["engine"]), "ms",
     lambda r: p95(r["fts5"]["warm"]), lambda r: p95(r["scan"]["times"])),
    ("warm `retrieve.search` (+ snippets), median", lambda e: median(e["warm"]["retrieve"]), "ms", None, None),
    ("warm brief-sized query (task text, top 30), median", lambda e: median(e["warm"]["task_engine"]), "ms",
     lambda r: median(r["fts5"]["task"]), None),
    ("warm `vault.search` (+ freshness check, no watcher)", lambda e: median(e["warm"]["vault"]), "ms", None, None),
    ("one-file update `refresh_index(paths=)`", lambda e: median(e["incremental"]["by_path"]), "ms", None, None),
    ("one-file update `refresh_index()` (full walk)", lambda e: median(e["incremental"]["full_walk"]), "ms",
     None, None),
    ("no change `refresh_index()`", lambda e: median(e["incremental"]["noop"]), "ms", None, None),
    ("watcher: save → searchable", lambda e: fresh(e["watch_process"]), "ms", None, None),
    ("cold `vaultmem search`", lambda e: median(e["cold"]["search"]), "s", None, None),
    ("cold `vaultmem brief` (no watcher)", lambda e: median(e["cold"]["brief"]), "s", None, None),
    ("cold `vaultmem brief` (watcher alive)", lambda e: median(e["watch_process"]["brief_alive"]), "s", None, None),
    ("peak RSS of a brief process", lambda e: e["cold"]["steps"]["rss_peak_kb"] * 1024, "mb", None, None),
]


def engines_in(results: list[dict]) -> list[str]:
    """The engines measured at some size, in ENGINES' order."""
    return [x for x in ENGINES if any(x in r.get("engines", {}) for r in results)]


def compare_table(r: dict, names: list[str]) -> str:
    """One size: each engine beside FTS5 and the scan, with the ratios."""
    es = {x: r["engines"].get(x) for x in names}
    both = "whoosh" in names and "tantivy" in names
    head = ["measure", *(ENGINE_LABEL[x] for x in names)]
    head += ["tantivy vs Whoosh"] if both else []
    head += ["FTS5 (same tokens)", *(f"{ENGINE_LABEL[x]} vs FTS5" for x in names), "brute-force scan"]
    rows = []
    for label, fn, unit, fts_fn, scan_fn in METRICS:
        vals = {x: get(fn, es[x]) if ok(es[x]) else None for x in names}
        fts = get(fts_fn, r) if fts_fn else None
        scan_v = get(scan_fn, r) if scan_fn else None
        if all(v is None for v in (*vals.values(), fts, scan_v)):
            continue
        cells = [label, *(FORMAT[unit](vals[x]) for x in names)]
        cells += [versus(vals["tantivy"], vals["whoosh"], unit)] if both else []
        cells += [FORMAT[unit](fts) if fts is not None else "",
                  *(versus(vals[x], fts, unit) if fts is not None else "" for x in names),
                  FORMAT[unit](scan_v) if scan_v is not None else ""]
        rows.append(cells)
    notes = []
    if "fts5" in r:
        f = r["fts5"]
        notes.append(f"FTS5's build includes reading, parsing and tokenising the files ({fmt_s(f['parse_s'])}; "
                     f"the insert itself {fmt_s(f['insert_s'])}); its index is in memory")
    over = [f"{ENGINE_LABEL[x]} {es[x]['warm']['overlap']:.0%}" for x in names
            if ok(es[x]) and es[x]["warm"].get("overlap") is not None]
    if over:
        notes.append("top-10 overlap with FTS5: " + ", ".join(over) + " (BM25 over the same terms; scoring "
                     "details differ)")
    if "scan" in r:
        notes.append(f"the scan answered {r['scan']['queries']} of the 30 queries within its time budget")
    return md_table(head, rows) + ("\n\n" + "; ".join(notes) + "." if notes else "")


SUMMARY_HEAD = ["notes", "engine", "full build", "peak RSS build / brief", "index", "warm query median / p95",
                "brief-sized query", "one-file update", "cold brief / with watcher", "save → searchable"]


def summary_table(results: list[dict], names: list[str]) -> str:
    """Every full size, a line per engine and one for FTS5: the main figures."""
    rows = []
    for r in results:
        if r.get("probe"):
            continue
        for x in names:
            e = r["engines"].get(x)
            if e is None:
                continue
            if not ok(e):
                rows.append([f"{r['n']:,}", ENGINE_LABEL[x], "cut", *[""] * 7])
                continue
            brief_rss = get(lambda e: e["cold"]["steps"]["rss_peak_kb"] * 1024, e)
            update = get(lambda e: median(e["incremental"]["by_path"]), e)
            alive = get(lambda e: median(e["watch_process"]["brief_alive"]), e)
            saved = get(lambda e: fresh(e["watch_process"]), e)
            rows.append([
                f"{r['n']:,}", ENGINE_LABEL[x], fmt_s(e["build"]["build_s"]),
                f"{fmt_mb(e['build']['rss_peak_kb'] * 1024)} / {fmt_mb(brief_rss)}", fmt_mb(e["build"]["index_bytes"]),
                f"{fmt_ms(median(e['warm']['engine']))} / {fmt_ms(p95(e['warm']['engine']))}",
                fmt_ms(median(e["warm"]["task_engine"])), fmt_ms(update),
                f"{fmt_s(median(e['cold']['brief']))} / {fmt_s(alive)}", fmt_ms(saved)])
        if "fts5" in r:
            f = r["fts5"]
            rows.append([f"{r['n']:,}", "SQLite FTS5", fmt_s(f["build_s"]), "—", fmt_mb(f["bytes"]),
                         f"{fmt_ms(median(f['warm']))} / {fmt_ms(p95(f['warm']))}", fmt_ms(median(f["task"])),
                         "—", "—", "—"])
    return md_table(SUMMARY_HEAD, rows)


SIZE_HEAD = ["measure", "value", "notes"]


def size_table(r: dict, e: dict) -> str:
    """One size, one engine: every figure, with the details."""
    n, v, b = r["n"], r["vault"], e["build"]
    rows = [("notes / role pages (entries)", f"{n:,} / {v['pages']} ({v['pages'] * 50:,})", ""),
            ("Markdown in the vault", fmt_mb(v["md_bytes"]), f"MEMORY.md {fmt_mb(v['memory_md_bytes'])}")]
    if not ok(e):
        rows.append(("full build", "cut", b["cut"]))
        return md_table(SIZE_HEAD, rows)
    rows += [
        ("full build `rebuild_index()` (new process)", fmt_s(b["build_s"]),
         f"{b['files']:,} files, {b['docs']:,} docs, {b['docs'] / b['build_s']:,.0f} docs/s; "
         f"+{fmt_s(b['import_s'])} imports; {b['n_problems']} files skipped"),
        ("  of which " + ", ".join(f"{k} {fmt_s(t)}" for k, t in b["steps"].items()), "", ""),
        ("peak RSS of the build process", fmt_mb(b["rss_peak_kb"] * 1024),
         f"{fmt_mb(b['rss_import_kb'] * 1024)} after imports"),
        ("index on disk `.vaultmem/index/`", fmt_mb(b["index_bytes"]),
         f"{b['segments']} segment(s); manifest.json {fmt_mb(b['manifest_bytes'])}"),
    ]
    inc = e.get("incremental")
    if inc:
        rows += [
            ("one file: `refresh_index(paths=[rel])`", fmt_ms(median(inc["by_path"])),
             f"median of {len(inc['by_path'])}; max {fmt_ms(max(inc['by_path']))}"),
            ("one file: `refresh_index()` full walk", fmt_ms(median(inc["full_walk"])),
             f"median of {len(inc['full_walk'])}; max {fmt_ms(max(inc['full_walk']))}"),
            ("no change: `refresh_index()` (runs before every search/brief without a watcher)",
             fmt_ms(median(inc["noop"])), f"median of {len(inc['noop'])}; {inc['segments_after']} segment(s) after"),
        ]
    for key, label in (("watch_process", "`vaultmem watch` process"), ("watch_thread", "`Watcher` thread")):
        w = e.get(key)
        if not w:
            continue
        both = w["in_place"] + w["replace"]
        rows.append((f"watcher freshness, {label}: save → in the index", fmt_ms(median(both)),
                     f"in place {fmt_ms(median(w['in_place']))}, os.replace {fmt_ms(median(w['replace']))}; "
                     f"max {fmt_ms(max(both) if both else None)}; {w['timeouts']} timeouts"))
    wp = e.get("watch_process")
    if wp:
        vv = wp.get("via_vault")
        if vv:
            both_v = vv["in_place"] + vv["replace"]
            rows.append(("save → found by `vault.search` (watcher running)", fmt_ms(median(both_v)),
                         f"end to end: the public search, which may index the save itself; {len(both_v)} saves, "
                         f"{vv['timeouts']} timeouts"))
        rows.append(("freshness after 11 s idle (watcher may be merging segments)",
                     fmt_ms(wp["idle_save"]) if wp["idle_save"] is not None else f"> {IDLE_TIMEOUT:.0f} s",
                     f"segments {wp['idle_segments_before']} → {wp['idle_segments_after']}; one save"))
    wm = e["warm"]
    task_fts = get(lambda r: median(r["fts5"]["task"]), r)
    rows += [
        ("warm search, engine only", f"{fmt_ms(median(wm['engine']))} (p95 {fmt_ms(p95(wm['engine']))})",
         f"{len(wm['engine'])} queries"),
        ("warm search, `retrieve.search` (+ snippets)", f"{fmt_ms(median(wm['retrieve']))} "
         f"(p95 {fmt_ms(p95(wm['retrieve']))})", ""),
        (f"warm brief-sized query (task text, {wm['task_terms']:.0f} terms), engine, top 30",
         f"{fmt_ms(median(wm['task_engine']))} (p95 {fmt_ms(p95(wm['task_engine']))})",
         (f"FTS5 {fmt_ms(task_fts)}; " if task_fts else "") +
         f"as `Vault.brief` asks (role filter, extra candidates, snippets) {fmt_ms(median(wm['task_retrieve']))}"),
        ("warm search, `vault.search` (+ freshness check)", f"{fmt_ms(median(wm['vault']))} "
         f"(p95 {fmt_ms(p95(wm['vault']))})", f"{len(wm['vault'])} queries, no watcher"),
    ]
    c = e["cold"]
    rows += [
        ("cold `python -m vaultmem search`", fmt_s(median(c["search"])),
         f"median of {len(c['search'])}; min {fmt_s(min(c['search']))}"),
        ("cold `vaultmem brief`, no watcher", fmt_s(median(c["brief"])),
         f"median of {len(c['brief'])}; min {fmt_s(min(c['brief']))}"),
    ]
    if wp:
        rows.append(("cold `vaultmem brief`, watcher alive", fmt_s(median(wp["brief_alive"])),
                     f"skips the freshness check; min {fmt_s(min(wp['brief_alive']))}"))
    rows += [
        ("cold `vaultmem brief`, no bytecode cache", fmt_s(median(c["brief_nocache"])),
         "vaultmem's modules compiled at every start (PYTHONDONTWRITEBYTECODE as in this environment)"),
        ("peak RSS of a process that briefs", fmt_mb(get(lambda: c["steps"]["rss_peak_kb"] * 1024)),
         "imports, `Vault.open`, two briefs"),
        ("  of which: Python start / `vaultmem --help`", f"{fmt_s(c['python'])} / {fmt_s(c['help'])}", ""),
        ("  of which: import CLI / `Vault.open` / `brief()` (1st call)",
         f"{fmt_s(c['steps']['import_cli'])} / {fmt_s(c['steps']['open'])} / {fmt_s(c['steps']['brief_first'])}",
         f"2nd brief in the same process {fmt_ms(c['steps']['brief_warm'])}"),
        ("  1st `brief()`: freshness check / open index / first query",
         f"{fmt_ms(c['steps']['fresh_check'])} / {fmt_ms(c['steps']['engine_open'])} / "
         f"{fmt_ms(c['steps']['first_search'])}",
         "measured one by one in a new process (the CLI walks for the freshness check in a forked child "
         "during its imports)"),
    ]
    return md_table(SIZE_HEAD, rows)
