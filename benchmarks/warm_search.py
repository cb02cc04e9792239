"""Warm searches of one installation on one vault: median milliseconds per query.

    BEFORE/bin/python benchmarks/warm_search.py VAULT      # prints "SHORT_MS TASK_MS"

Run it alternately with two installations (each on its own copy of the vault, indexed by
itself) to compare them: six short queries at limit 10 and the five task texts of
bench_cold_ab.py at limit 30, 15 rounds each, after one untimed round.
"""
import sys, time, statistics
from pathlib import Path
from vaultmem.vault import Vault
from vaultmem.index import Filters
from vaultmem.retrieve import search
v = Vault(Path(sys.argv[1]))
v.refresh_index()
qs = ["kafka retry", "postgres 索引", "react 组件 缓存", "deployment rollback", "证书轮换", "billing timeout"]
tasks = ["审查 dashboard 的 react 组件渲染性能，检查缓存和 bundle 大小", "设计 billing 服务的 kafka 消息队列重试和超时策略",
         "postgres 索引迁移方案，连接池上限和死锁排查", "kubernetes deployment rollback and healthcheck timeout in production",
         "审计网关鉴权与证书轮换, token session 过期"]
for q in qs + tasks: search(v.index, q, Filters(), 10)
def t(items, limit):
    out = []
    for _ in range(15):
        for q in items:
            s = time.perf_counter(); search(v.index, q, Filters(), limit); out.append(time.perf_counter() - s)
    return statistics.median(out) * 1000
print(f"{t(qs, 10):.2f} {t(tasks, 30):.2f}")
