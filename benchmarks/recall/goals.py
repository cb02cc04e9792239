"""The latency and build goals: met or not per engine (:func:`goals_table`), and where,
across every size measured, an engine stops meeting them (:func:`threshold_text`)."""

from __future__ import annotations

from timing import fmt_ms, fmt_s, median, p95

from .common import ENGINE_LABEL
from .tables import FORMAT, get, md_table, ok

# Goals: (notes, label, figure of an engine pass, limit in seconds, unit).
GOALS = [
    (10000, "cold `vaultmem brief` < 0.3 s", lambda e: median(e["cold"]["brief"]), 0.3, "s"),
    (10000, "warm search < 5 ms", lambda e: median(e["warm"]["retrieve"]), 0.005, "ms"),
    (10000, "one-file incremental update < 50 ms", lambda e: median(e["incremental"]["by_path"]), 0.05, "ms"),
    (50000, "warm search < 15 ms", lambda e: median(e["warm"]["retrieve"]), 0.015, "ms"),
    (50000, "full build < 30 s", lambda e: e["build"]["build_s"], 30.0, "s"),
]


def _engine_alone(e: dict) -> str:
    """Beside a warm search goal: the engine's own query, median and p95."""
    return f"engine alone {fmt_ms(median(e['warm']['engine']))}, p95 {fmt_ms(p95(e['warm']['engine']))}"


def _build_split(e: dict) -> str:
    """Beside the build goal: the engine's add + commit, and the rest of the build."""
    steps = e["build"]["steps"]
    return (f"the engine's add + commit {fmt_s(steps['engine add + commit (write)'])}; reading, parsing, "
            f"tokenising the files and the manifest {fmt_s(sum(t for k, t in steps.items() if 'engine' not in k))}")


GOAL_DETAIL = {  # what is shown beside the goal's own figure
    "cold `vaultmem brief` < 0.3 s": lambda e: f"{fmt_s(median(e['watch_process']['brief_alive']))} with a watcher",
    "warm search < 5 ms": _engine_alone,
    "warm search < 15 ms": _engine_alone,
    "one-file incremental update < 50 ms": lambda e: f"full walk {fmt_ms(median(e['incremental']['full_walk']))}",
    "full build < 30 s": _build_split,
}


def verdict(value: float | None, limit: float) -> str:
    """``**met**`` when ``value`` is under ``limit``, ``**not met**``, or ``not measured``."""
    return "not measured" if value is None else "**met**" if value < limit else "**not met**"


def goals_table(results: list[dict], names: list[str]) -> str:
    """Each goal at its size, per engine: met or not, the figure and what is beside it."""
    by_n = {r["n"]: r for r in results if not r.get("probe")}
    rows = []
    for n, label, fn, limit, unit in GOALS:
        r = by_n.get(n)
        cells = []
        for x in names:
            e = r["engines"].get(x) if r else None
            if not e:
                cells.append("not measured")
                continue
            if not ok(e):
                cells.append("**not met** (build cut)")
                continue
            value = get(fn, e)
            extra = get(GOAL_DETAIL[label], e) if label in GOAL_DETAIL else None
            cells.append(f"{verdict(value, limit)}: {FORMAT[unit](value)}" + (f" ({extra})" if extra else ""))
        rows.append([f"{n:,} notes: {label}", *cells])
    return md_table(["goal", *(ENGINE_LABEL[x] for x in names)], rows)


WHERE_GOALS = [  # (label, figure, limit) for where an engine stops meeting a goal
    ("cold `vaultmem brief` < 0.3 s", lambda e: median(e["cold"]["brief"]), 0.3),
    ("warm `retrieve.search` < 5 ms", lambda e: median(e["warm"]["retrieve"]), 0.005),
    ("warm engine query < 5 ms", lambda e: median(e["warm"]["engine"]), 0.005),
    ("warm `retrieve.search` < 15 ms", lambda e: median(e["warm"]["retrieve"]), 0.015),
]


def where_fails(pts: list[tuple[int, float]], limit: float) -> str:
    """Where figures by size (ascending) stop being under ``limit``."""
    fails = [n for n, v in pts if v >= limit]
    if not fails:
        return f"met at every size measured ({pts[0][0]:,}–{pts[-1][0]:,} notes)"
    first = fails[0]
    below = [n for n, v in pts if n < first]
    text = (f"met up to {below[-1]:,} notes, not met from {first:,} on" if below
            else f"not met at any size measured (from {first:,} notes)")
    if any(v < limit for n, v in pts if n > first):
        text += f" (met again at {', '.join(f'{n:,}' for n, v in pts if n > first and v < limit)})"
    return text


def threshold_text(results: list[dict], names: list[str]) -> str:
    """Every size (probe sizes too): cold brief and warm search per engine, and where
    each engine stops meeting the goals."""
    rs = sorted(results, key=lambda r: r["n"])
    head = ["notes (Markdown files)"]
    for x in names:
        label = ENGINE_LABEL[x]
        head += [f"{label}: cold brief", "warm engine query median / p95", "warm `retrieve.search`",
                 "brief-sized query"]
    rows = []
    for r in rs:
        files = next((e["build"]["files"] for e in r["engines"].values() if ok(e)), None)
        cells = [f"{r['n']:,} ({files:,})" if files else f"{r['n']:,}"]
        for x in names:
            e = r["engines"].get(x)
            if not ok(e):
                cells += ["—"] * 4
                continue
            w = e["warm"]
            cells += [fmt_s(median(e["cold"]["brief"])), f"{fmt_ms(median(w['engine']))} / {fmt_ms(p95(w['engine']))}",
                      fmt_ms(median(w["retrieve"])), fmt_ms(median(w["task_engine"]))]
        rows.append(cells)
    said = []
    for x in names:
        parts = []
        for label, fn, limit in WHERE_GOALS:
            pts = [(r["n"], get(fn, r["engines"][x])) for r in rs if ok(r["engines"].get(x))]
            pts = [(n, v) for n, v in pts if v is not None]
            if pts:
                parts.append(f"{label}: {where_fails(pts, limit)}")
        if parts:
            said.append(f"- {ENGINE_LABEL[x]}: " + "; ".join(parts) + ".")
    return md_table(head, rows) + "\n\n" + "\n".join(said)
