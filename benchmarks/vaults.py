"""The benchmarks' one vault generator: a synthetic team vault of N notes and 20 role
pages, Chinese, English and mixed, the same bytes for the same N and seed — and the
queries and brief tasks every benchmark asks of it.

    from vaults import make_vault, QUERIES, BRIEF_TASKS
    make_vault(Path("/tmp/v"), 10_000)      # {"seconds", "notes", "pages", "md_bytes", …}
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))  # run from a checkout without installing too

from vaultmem import Vault  # noqa: E402
from vaultmem.parse.note import index_line  # noqa: E402

SEED = 20260508

# -- word lists --------------------------------------------------------------------------

ZH_TOPICS = """缓存 端口 数据库 索引 部署 日志 监控 告警 超时 重试 限流 熔断 鉴权 队列 迁移 回滚 灰度 配置 接口 测试
性能 内存 线程 连接池 事务 死锁 分片 副本 备份 证书 域名 网关 路由 前端 后端 构建 打包 依赖 版本 权限 会话 令牌
加密 压缩 序列化 调度 批处理 消息 订阅 渲染 组件 样式 表单 分页 搜索 排序 上传 下载 存储 镜像 容器 集群 节点
负载均衡 健康检查 埋点 报表 审计 合规""".split()
ZH_SUFFIX = "策略 约定 问题 配置 上限 规范 教训 方案 排查 默认值".split()
ZH_VERBS = "需要调整为 必须开启并设为 改为异步后约 固定为 默认使用 不要超过 统一改成 升级后约 降级到 控制在".split()
ZH_CTX = "生产环境 测试环境 预发环境 本地开发 夜间任务 高峰期 发布流程 代码审查 故障复盘 压测".split()
ZH_REASONS = """否则会出现超时 避免内存泄漏 防止重复提交 减少冷启动时间 用户反馈页面卡顿 这是上次事故的教训
为了兼容旧客户端 降低数据库压力 保证数据一致性 减少告警噪音 方便回滚 用户明确要求这样做""".split()
TOOLS = """postgres redis kafka nginx react vite docker kubernetes webpack grpc graphql celery django fastapi
flask sqlite elasticsearch prometheus grafana terraform ansible jenkins typescript rust golang node pnpm
eslint pytest sentry rabbitmq mongodb mysql clickhouse airflow spark minio cloudflare vercel envoy""".split()
EN_NOUNS = """timeout retry cache connection-pool migration rollback deployment index schema endpoint queue worker
replica shard backup certificate token session middleware bundle build lint-rule feature-flag rate-limit
circuit-breaker healthcheck log-level memory-leak race-condition deadlock""".split()
EN_VERBS = """must-be should-stay was-changed-to is-pinned-to defaults-to breaks-above needs was-raised-to""".split()
EN_ENVS = "production staging CI local-dev the-nightly-job peak-hours".split()
EN_REASONS = """otherwise requests time out|to avoid a memory leak|users reported slow pages|the last incident taught us this
|old clients still depend on it|to keep the database load down|so that rollbacks stay cheap|the user asked for it explicitly
|alerts were too noisy|reviews kept missing it""".split("|")
UNITS = "ms s MB GB % 个连接 次 条 workers req/s".split()
NOTE_TYPES = ("preference", "decision", "fact", "failure+fix", "procedure", "episode")
AUTHOR_KINDS = ("user", "agent", "third_party")
ROLES = """前端审查 后端架构 数据库专家 运维值班 安全审计 测试工程 性能调优 移动端开发 数据分析 API设计 发布管理
文档编写 缓存专家 消息队列 搜索工程 frontend-reviewer infra-sre ml-engineer code-reviewer qa-lead""".split()
CATEGORIES = "前端开发 后端开发 数据 运维 安全 质量".split()
PROJECTS = "dashboard billing checkout search admin-portal data-platform mobile-app gateway".split()
CONTEXT_KEYS = "技术栈 部署方式 代码规范 用户偏好 测试要求 监控面板".split()

# 30 queries: Chinese two-character words, English words, and mixes.
QUERIES = [
    "缓存", "端口", "超时", "部署", "日志", "监控", "回滚", "限流", "鉴权", "迁移",
    "redis", "kafka", "timeout", "migration", "deadlock", "nginx", "certificate", "rollbacks", "webpack", "postgres",
    "redis 缓存", "kafka 队列", "postgres 索引 migration", "生产环境 超时 retry", "react 组件 渲染",
    "docker 镜像", "前端 性能 bundle", "数据库 连接池", "grpc 接口 timeout", "内存泄漏 memory leak",
]  # fmt: skip
BRIEF_TASKS = [
    ("前端审查", "审查 dashboard 的 react 组件渲染性能，检查缓存和 bundle 大小"),
    ("后端架构", "设计 billing 服务的 kafka 消息队列重试和超时策略"),
    ("数据库专家", "postgres 索引迁移方案，连接池上限和死锁排查"),
    ("infra-sre", "kubernetes deployment rollback and healthcheck timeout in production"),
    ("安全审计", "审计网关鉴权与证书轮换, token session 过期"),
]


# -- the synthetic vault -----------------------------------------------------------------


def _sentence(r: random.Random) -> str:
    c = r.choice
    num = f"{r.randint(2, 900)}{c(UNITS)}"
    form = r.randrange(5)
    if form == 0:
        return f"{c(ZH_CTX)}下{c(TOOLS)}的{c(ZH_TOPICS)}{c(ZH_VERBS)}{num}，{c(ZH_REASONS)}。"
    if form == 1:
        return f"{c(ZH_TOPICS)}相关：{c(TOOLS)} {c(EN_NOUNS)} {c(EN_VERBS).replace('-', ' ')} {num}，{c(ZH_REASONS)}。"
    if form == 2:
        return (f"The {c(TOOLS)} {c(EN_NOUNS).replace('-', ' ')} {c(EN_VERBS).replace('-', ' ')} {num} "
                f"in {c(EN_ENVS).replace('-', ' ')}; {c(EN_REASONS).strip()}.")
    if form == 3:
        return f"{c(ZH_CTX)}发现{c(TOOLS)}的{c(EN_NOUNS)}问题：{c(ZH_TOPICS)}{c(ZH_VERBS)}{num}。"
    return f"{c(ZH_TOPICS)}{c(ZH_SUFFIX)}：{c(TOOLS)}与{c(TOOLS)}之间的{c(ZH_TOPICS)}{c(ZH_VERBS)}{num}。"


def _day(r: random.Random) -> str:
    return (dt.date(2025, 1, 1) + dt.timedelta(days=r.randrange(500))).isoformat()


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a YAML string


def _note(r: random.Random, i: int) -> tuple[str, str, str]:
    """(slug, file text, MEMORY.md line) of note ``i``."""
    tool, topic = r.choice(TOOLS), r.choice(ZH_TOPICS)
    if r.random() < 0.7:
        title = f"{tool} {topic}{r.choice(ZH_SUFFIX)}"
    else:
        title = f"{tool} {r.choice(EN_NOUNS).replace('-', ' ')} policy"
    body = " ".join(_sentence(r) for _ in range(r.randint(1, 3)))
    desc = body.split("。")[0].split(";")[0][:60]
    type_ = r.choice(NOTE_TYPES)
    scoped = r.random() < 0.1
    agent = r.choice(ROLES) if scoped else None
    day = _day(r)
    slug = f"{i:06d}-{tool}-{topic}"
    aliases = [f"{tool} {r.choice(EN_NOUNS).replace('-', ' ')}"] if r.random() < 0.5 else []
    status = "superseded" if r.random() < 0.03 else "active"
    lines = ["---", f"name: {_q(title)}", f"description: {_q(desc)}", f"type: {type_}",
             f"scope: {'agent' if scoped else 'global'}"]
    if agent:
        lines.append(f"agent: {_q(agent)}")
    lines += [f"importance: {r.choice((0.3, 0.5, 0.5, 0.7, 0.9))}", "confidence: 0.7", "author: lee",
              f"author_kind: {r.choice(AUTHOR_KINDS)}", "source: bench", f"created: {day}T10:00:00Z",
              f"confirmed: {day}T10:00:00Z"]
    lines += ["aliases: []"] if not aliases else ["aliases:"] + [f"- {_q(a)}" for a in aliases]
    lines += [f"tags: [{tool}]", f"status: {status}", "---", body, ""]
    return slug, "\n".join(lines), index_line(slug, title, desc, type_, agent)


def _page(r: random.Random, role: str) -> str:
    ids: set[str] = set()

    def eid() -> str:
        while True:
            x = f"m-{r.getrandbits(24):06x}"
            if x not in ids:
                ids.add(x)
                return x

    projects = r.sample(PROJECTS, 2)
    out = ["---", f"name: {role}", f"category: {r.choice(CATEGORIES)}", f"first_used: {_day(r)}", "projects:",
           *[f"- {p}" for p in projects], "tags: [agent-memory]", "type: agent-page", "---",
           f"# {role} Agent 记忆", "", "## 项目上下文", "<!-- 与该Agent相关的项目背景、技术栈、用户在此项目上的偏好 -->", ""]
    for p in projects:  # 2 × 4 context bullets
        out.append(f"### {p}")
        for _ in range(4):
            out.append(f"- **{r.choice(CONTEXT_KEYS)}**：{_sentence(r)} ^{eid()}")
        out.append("")
    out += ["## 工作记忆", "<!-- Agent在工作过程中积累的经验、教训、模式认知 -->"]
    for day in sorted(_day(r) for _ in range(37)):  # 37 working-memory lines
        out.append(f"- {day} | {_sentence(r)} ^{eid()}")
    out += ["", "## 子Agent记录", "<!-- 通过delegate创建的子Agent的工作回收记录 -->"]
    for day in sorted(_day(r) for _ in range(5)):  # 5 sub-agent records
        out += [f"### {day} {r.choice(TOOLS)} {r.choice(ZH_TOPICS)}分析",
                f"- **任务**：{_sentence(r)}", f"- **结论**：{_sentence(r)}",
                f"- **产出**：{r.choice(ZH_TOPICS)}报告 + 优化建议",
                f"- **关键决策**：{_sentence(r)} ^{eid()}", ""]
    return "\n".join(out)


def make_vault(root: Path, n: int, seed: int = SEED) -> dict:
    """A vault of ``n`` notes and 20 role pages (the same bytes for the same n and seed)."""
    started = time.perf_counter()
    Vault.init(root, lang="zh", orchestrator="lee")  # template, config, git repo with one commit
    r = random.Random(f"{seed}-{n}")
    (root / "memories").mkdir(exist_ok=True)
    index_lines = []
    note_bytes = 0
    for i in range(n):
        slug, text, line = _note(r, i)
        data = text.encode("utf-8")
        (root / "memories" / f"{slug}.md").write_bytes(data)
        note_bytes += len(data)
        index_lines.append(line)
    for role in ROLES:
        (root / "agents" / f"{role}.md").write_text(_page(r, role), encoding="utf-8")
    mem = (root / "MEMORY.md").read_text(encoding="utf-8")
    begin, end = mem.index("<!-- vaultmem:index:begin"), mem.index("<!-- vaultmem:index:end")
    head = mem[:begin] + mem[begin:].split("\n", 1)[0] + "\n"
    (root / "MEMORY.md").write_text(head + "\n".join(index_lines) + "\n" + mem[end:], encoding="utf-8")
    md_bytes = sum(p.stat().st_size for p in root.rglob("*.md") if ".vaultmem" not in p.parts and ".git" not in p.parts)
    return {"seconds": time.perf_counter() - started, "notes": n, "pages": len(ROLES), "md_bytes": md_bytes,
            "memory_md_bytes": (root / "MEMORY.md").stat().st_size}
