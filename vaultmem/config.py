"""``.vaultmem/config.yaml``: read once, at the edge, and handed down as :class:`Config`.

The file is loaded and saved with ruamel.yaml's round-trip mode, so a user's comments
and key order survive :func:`save_config`.
"""

from __future__ import annotations

import math
import re
import time
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from .errors import BadInput, ParseError, VaultmemError
from .files import LOCAL_DIR, atomic_write, pack, read_bytes, read_vault_text, unpack, write_local
from .names import check_name
from .walk import CONFIG_PATH

CONFIG_CACHE = "config.cache"  # in .vaultmem/local/
CACHE_VERSION = 7  # bump when a check in parse_config changes
RACY_NS = 2_000_000_000
MAX_NOTE_BYTES = 256 * 1024  # the most memory.max_note_bytes may be, and its default
# the most each size setting may be (a log entry holds 256 KB in all)
SIZE_CAPS = {"memory.max_note_bytes": MAX_NOTE_BYTES, "log.max_body_bytes": 192 * 1024}
# The vault's format: `version` in the config. A vault of an older format works as it is and
# `vaultmem migrate` brings it up to date (vaultmem.preservation); a newer one is refused.
FORMAT_VERSION = 2
DEFAULT_TYPES = ("preference", "decision", "fact", "failure+fix", "procedure", "episode")
# what each layer of a brief gets first of the room after its header and task (brief.shares;
# vaultmem.brief: what a layer leaves unused goes to the others, in this order)
BRIEF_SHARES = {"identity": 0.15, "page": 0.35, "memory": 0.25, "decisions": 0.05, "skills": 0.05,
                "live": 0.05, "index": 0.10}


class Config(NamedTuple):
    """A vault's settings (``.vaultmem/config.yaml``, read by :func:`parse_config`), each
    with its default: the dotted name a user writes is in :data:`SETTINGS`. The file's own
    mapping, as written: :func:`load_raw`.

    A named tuple, not a frozen dataclass: every command makes this class, and Python 3.11
    took ~3 ms to compile a frozen dataclass's six methods over these 40 fields."""

    lang: str = "en"
    orchestrator: str = "orchestrator"
    lock_timeout: float = 10.0
    note_types: tuple[str, ...] = DEFAULT_TYPES
    default_importance: float = 0.5
    brief_window: int = 128000
    brief_ratio: float = 0.3
    brief_max_items: int = 10
    min_relevance: float = 0.4  # search.min_relevance: the relevance cut of search and eval
    brief_min_relevance: float = 0.25  # brief.min_relevance: what joins a brief (a task, not a question)
    brief_lead: int = 5  # brief.lead: the search's first N hits join a brief whose gate opened
    # brief.shares: layer → the share of a brief's room it gets first (vaultmem.brief.LAYERS)
    brief_shares: dict = MappingProxyType(BRIEF_SHARES)  # (a read-only default: every Config without one shares it)
    index_lock_timeout: float = 30.0
    index_engine: str = "auto"
    search_semantic: str = "auto"  # search.semantic: off | auto | always | only
    search_model: str | None = None  # search.model: None is wordllama, when it is installed
    search_ranking: str = "learned"  # search.ranking: learned | rules (vaultmem.retrieve, vaultmem.ranker)
    search_reranker: str | None = None  # search.reranker: a local cross-encoder folder (index.rerankers)
    rerank_depth: int = 20  # search.rerank_depth: how many of the first hits it re-orders
    checkpoint_fresh_minutes: float = 120.0
    delegation_max_age_hours: float = 24.0
    secrets: str = "redact"
    trusted_agents: tuple[str, ...] = ()
    orchestrator_approves: bool = False
    # review.auto_harvest: a sub-agent's report a hook or the Hermes provider harvests is written
    # to the role's page at once (true) or waits in the inbox for a human (false)
    auto_harvest: bool = False
    # review.nudge_days: the orchestrator's session brief says when items have waited longer
    nudge_days: float = 3.0
    max_note_bytes: int = MAX_NOTE_BYTES
    max_log_body_bytes: int = 64 * 1024
    claude_agent: str | None = None  # hooks.claude.agent: who the Claude Code hooks act as
    claude_prompt_log: bool = False  # hooks.claude.prompt_log: UserPromptSubmit shows the live log
    claude_max_chars: int = 10_000  # hooks.claude.max_chars: the most a hook adds to a context
    # forgetting.half_life_days: type → days (None: never decays); forgetting.min_score; forgetting.caps
    half_lives: tuple[tuple[str, float | None], ...] = ()
    forget_min_score: float = 0.1
    forget_caps: tuple[tuple[str, int], ...] = ()
    # forgetting.page_entries: section (work, subagents) → entries; forgetting.page_tokens
    page_entries: tuple[tuple[str, int], ...] = (("work", 100), ("subagents", 30))
    page_tokens: int = 8000
    journal_keep_days: int = 0  # journal.keep_days: day files older than this are pruned (0: kept forever)
    journal_hooks: bool = True  # journal.hooks: the Claude Code hooks and Hermes file each session's transcript
    format_version: int = FORMAT_VERSION  # version: the format the vault was made or last migrated to


_SCHEMA = Config._fields
DEFAULTS = Config()  # every setting at its default

# Every setting parse_config reads, by its dotted name (brief.min_coverage: brief.min_relevance's
# older name, still read) ...
SETTINGS = (
    "version", "lang", "orchestrator", "git.lock_timeout", "memory.types", "memory.default_importance",
    "memory.max_note_bytes", "log.max_body_bytes", "brief.window", "brief.ratio", "brief.max_items",
    "brief.min_relevance", "brief.min_coverage", "brief.lead", "search.min_relevance", "search.semantic", "search.model",
    "search.ranking", "search.reranker", "search.rerank_depth", "index.lock_timeout", "index.engine",
    "checkpoint.fresh_minutes", "lifecycle.delegation_max_age_hours", "safety.secrets", "review.trusted_agents",
    "review.orchestrator_approves", "review.auto_harvest", "review.nudge_days", "hooks.claude.agent", "hooks.claude.prompt_log",
    "hooks.claude.max_chars", "forgetting.min_score", "forgetting.page_tokens", "journal.keep_days",
    "journal.hooks",
)  # fmt: skip
# ... and the groups whose keys the user names: a memory type, a layer of a brief, a page's
# section — parse_config checks each key against its list (memory.types, BRIEF_SHARES, work
# and subagents). Any other key is unknown: `config set` refuses it, `doctor` reports it.
SETTING_MAPS = ("brief.shares", "forgetting.half_life_days", "forgetting.caps", "forgetting.page_entries")
_GROUPS = frozenset(name.rsplit(".", n)[0] for name in SETTINGS + SETTING_MAPS for n in range(1, name.count(".") + 1))


def _known(dotted: str) -> bool:
    """Whether ``dotted`` is a setting, a map of them, or a key of a map."""
    return dotted in SETTINGS or dotted in SETTING_MAPS or dotted.rsplit(".", 1)[0] in SETTING_MAPS


def nearest_setting(dotted: str) -> str | None:
    """The known setting whose name is closest to ``dotted`` (a typo's likely meaning), if any."""
    from difflib import get_close_matches  # only for this hint

    found = get_close_matches(dotted, SETTINGS + SETTING_MAPS, n=1)
    return found[0] if found else None


def unknown_settings(raw: Any) -> list[tuple[str, int | None]]:
    """The keys of a config (as :func:`load_raw` reads it) that name no setting: (dotted
    name, line) in the file's order. vaultmem ignores them; a typo among them leaves the
    setting it meant at its default."""
    out: list[tuple[str, int | None]] = []

    def walk(node: Any, prefix: str) -> None:
        for key in node:
            dotted = f"{prefix}{key}"
            if _known(dotted):
                continue
            if dotted in _GROUPS:
                if isinstance(node[key], dict):  # one that is not is parse_config's to refuse
                    walk(node[key], f"{dotted}.")
                continue
            try:
                line = node.lc.key(key)[0] + 1
            except (AttributeError, KeyError, TypeError):
                line = None
            out.append((dotted, line))

    if isinstance(raw, dict):
        walk(raw, "")
    return out


def unknown_setting_problems(root: Path) -> list[dict]:
    """``doctor``'s report of :func:`unknown_settings` in the vault's config:
    ``{"path", "line", "problem"}`` each."""
    problems = []
    for dotted, line in unknown_settings(load_raw(root)):
        near = nearest_setting(dotted)
        problems.append({"path": CONFIG_PATH, "line": line,
                         "problem": f"'{dotted}' is not a setting vaultmem knows, and is ignored"
                                    + (f" (did you mean '{near}'?)" if near else "")})
    return problems


def _get(raw: Any, dotted: str, default: Any = None) -> Any:
    assert _known(dotted), f"{dotted} is read but not in config.SETTINGS"  # the list above stays whole
    node = raw
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


CONFIG_HINT = "fix the YAML in .vaultmem/config.yaml (indent with spaces; 'key: value' per line)"
TYPE_NAME = re.compile(r"[a-z][a-z0-9_+\-]*")
# search.model: the shipped model, or a backend and a local folder (checked when it is loaded)
MODEL_SPEC = re.compile(r"wordllama|e5|(model2vec|sentence-transformers):\S.*|fastembed:[^@\s]+@\S.*")


def _load(text: str, path: str) -> Any:
    from .parse.document import load_yaml  # only when the file is read, not its cached settings

    raw = load_yaml(text.lstrip("\ufeff"), path, first_line=1, what="YAML in the config", hint=CONFIG_HINT)
    if raw is None:
        from ruamel.yaml.comments import CommentedMap

        raw = CommentedMap()
    if not isinstance(raw, dict):
        raise ParseError("the config is not a set of 'key: value' settings", path=path, line=1, hint=CONFIG_HINT)
    return raw


def parse_config(text: str, path: str = CONFIG_PATH) -> Config:
    """Read and check the settings; a bad value is named with its line.

    One text is read once a process (the last few are kept: a Config is immutable, and
    reading depends on nothing else): ruamel.yaml takes ~17 ms over the commented template,
    and ``init``, ``config set`` and a command reading a config edited a moment ago (which
    :func:`load_config` may not cache on disk yet) each read the text another step wrote
    or checked."""
    return _parsed(text, path)


@lru_cache(maxsize=8)
def _parsed(text: str, path: str) -> Config:
    raw = _load(text, path)

    def bad(key: str, why: str) -> ParseError:
        line = None
        try:
            node, parts = raw, key.split(".")
            for part in parts[:-1]:
                node = node[part]
            line = node.lc.key(parts[-1])[0] + 1
        except Exception:
            pass
        return ParseError(f"the setting '{key}' {why}", path=path, line=line,
                          hint=f"fix it in {CONFIG_PATH}, or: vaultmem config set {key} VALUE")

    def number(key: str, default: float, low: float, high: float) -> float:
        value = _get(raw, key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad(key, f"is {value!r}; it must be a number from {low:g} to {high:g}")
        if not low <= value <= high:
            raise bad(key, f"is {value:g}; it must be from {low:g} to {high:g}")
        return float(value)

    lang = _get(raw, "lang", "en")
    if lang not in ("zh", "en"):
        raise bad("lang", f"is {lang!r}; it must be zh or en")
    def agent_name(key: str, default: str | None, what: str, must: str) -> str | None:
        """The agent a setting names, checked as a name; None when it is not set."""
        value = _get(raw, key, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise bad(key, must)
        try:
            check_name(value, what)
        except BadInput as exc:
            raise bad(key, exc.message.replace(f"the {what} ", "")) from None
        return value

    orchestrator = agent_name("orchestrator", "orchestrator", "orchestrator name", "must name the orchestrator agent")
    for group in ("git", "memory", "brief", "index", "checkpoint", "lifecycle", "safety", "review", "log", "hooks",
                  "search", "forgetting", "journal"):
        if group in raw and not isinstance(raw[group], dict):
            raise bad(group, "must be a group of settings (key: value lines indented below it)")
    timeout = number("git.lock_timeout", 10, 0, 3600)
    types = _get(raw, "memory.types", list(DEFAULT_TYPES))
    if not isinstance(types, list) or not types or not all(isinstance(t, str) and TYPE_NAME.fullmatch(t) for t in types):
        raise bad("memory.types", "must be a non-empty list of type names such as fact or failure+fix")
    importance = number("memory.default_importance", 0.5, 0, 1)
    # no higher than what the index reads of one document (index.MAX_DOC_CHARS): a note is
    # found and shown whole
    max_note = number("memory.max_note_bytes", MAX_NOTE_BYTES, 1024, SIZE_CAPS["memory.max_note_bytes"])
    max_body = number("log.max_body_bytes", 64 * 1024, 1024, SIZE_CAPS["log.max_body_bytes"])
    window = number("brief.window", 128000, 1000, 10_000_000)
    ratio = number("brief.ratio", 0.3, 0.01, 1)
    max_items = number("brief.max_items", 10, 0, 200)
    min_relevance = number("search.min_relevance", 0.4, 0, 1)
    # brief.min_coverage: the brief's cut under its older name (a share of the task's terms)
    brief_min_relevance = number("brief.min_relevance", number("brief.min_coverage", 0.25, 0, 1), 0, 1)
    lead = number("brief.lead", 5, 0, 200)
    shares_given = _get(raw, "brief.shares", {}) or {}
    if not isinstance(shares_given, dict):
        raise bad("brief.shares", "must be a group of 'layer: share' lines (" + ", ".join(BRIEF_SHARES) + ")")
    for layer in shares_given:
        if layer not in BRIEF_SHARES:
            raise bad(f"brief.shares.{layer}", "names no layer of a brief (" + ", ".join(BRIEF_SHARES) + ")")
    shares = {layer: number(f"brief.shares.{layer}", default, 0, 1) for layer, default in BRIEF_SHARES.items()}
    if (whole := sum(shares.values())) > 1:  # shares are weights: scaled to add up to at most 1
        shares = {layer: share / whole for layer, share in shares.items()}
    index_timeout = number("index.lock_timeout", 30, 0, 3600)
    index_engine = _get(raw, "index.engine", "auto")
    if index_engine not in ("whoosh", "tantivy", "auto"):
        raise bad("index.engine", f"is {index_engine!r}; it must be whoosh, tantivy or auto")
    semantic = _get(raw, "search.semantic", "auto")
    if semantic is False:  # YAML reads a bare off as false
        semantic = "off"
    if semantic not in ("off", "auto", "always", "only"):
        raise bad("search.semantic", f"is {semantic!r}; it must be off, auto, always or only")
    model = _get(raw, "search.model", None)
    if model is not None and not (isinstance(model, str) and MODEL_SPEC.fullmatch(model.strip())):
        raise bad("search.model", f"is {model!r}; it must be wordllama, e5, model2vec:PATH, "
                                  "sentence-transformers:PATH or fastembed:NAME@PATH (a local model folder)")
    ranking = _get(raw, "search.ranking", DEFAULTS.search_ranking)
    if ranking not in ("learned", "rules"):
        raise bad("search.ranking", f"is {ranking!r}; it must be learned or rules")
    reranker = _get(raw, "search.reranker", None)
    if reranker is not None and not (isinstance(reranker, str) and reranker.strip()):
        raise bad("search.reranker", f"is {reranker!r}; it must be the path of a local cross-encoder folder")
    rerank_depth = int(number("search.rerank_depth", 20, 1, 200))
    fresh = number("checkpoint.fresh_minutes", 120, 1, 525600)
    delegation_age = number("lifecycle.delegation_max_age_hours", 24, 0, 87600)
    secrets = _get(raw, "safety.secrets", "redact")
    if secrets not in ("redact", "reject"):
        raise bad("safety.secrets", f"is {secrets!r}; it must be redact or reject")
    trusted = _get(raw, "review.trusted_agents", []) or []
    if not isinstance(trusted, list) or not all(isinstance(a, str) for a in trusted):
        raise bad("review.trusted_agents", "must be a list of agent names")
    for agent in trusted:
        try:
            check_name(agent, "agent name")
        except BadInput as exc:
            raise bad("review.trusted_agents", f"holds {agent!r}: {exc.message}") from None
    orchestrator_approves = _get(raw, "review.orchestrator_approves", False)
    if not isinstance(orchestrator_approves, bool):
        raise bad("review.orchestrator_approves", f"is {orchestrator_approves!r}; it must be true or false")
    auto_harvest = _get(raw, "review.auto_harvest", False)
    if not isinstance(auto_harvest, bool):
        raise bad("review.auto_harvest", f"is {auto_harvest!r}; it must be true or false")
    nudge_days = number("review.nudge_days", 3, 0, 36500)
    if "hooks" in raw and "claude" in raw["hooks"] and not isinstance(raw["hooks"]["claude"], dict):
        raise bad("hooks.claude", "must be a group of settings (key: value lines indented below it)")
    claude_agent = agent_name("hooks.claude.agent", None, "agent name",
                              "must name the agent the Claude Code hooks act as")
    claude_prompt_log = _get(raw, "hooks.claude.prompt_log", False)
    if not isinstance(claude_prompt_log, bool):
        raise bad("hooks.claude.prompt_log", f"is {claude_prompt_log!r}; it must be true or false")
    claude_max_chars = number("hooks.claude.max_chars", 10_000, 1000, 10_000)
    half_lives, caps = [], []
    for group, pairs, check in (("forgetting.half_life_days", half_lives, "half-life"), ("forgetting.caps", caps, "cap")):
        given = _get(raw, group, {}) or {}
        if not isinstance(given, dict):
            raise bad(group, "must be a group of 'type: value' lines")
        for type_, value in given.items():
            if str(type_) not in types:
                raise bad(f"{group}.{type_}", f"names a type that is not in memory.types ({', '.join(types)})")
            if check == "half-life" and value in ("never", None):
                pairs.append((str(type_), None))
                continue
            if check == "half-life":
                pairs.append((str(type_), number(f"{group}.{type_}", 1, 1, 1_000_000)))
            else:
                pairs.append((str(type_), int(number(f"{group}.{type_}", 1, 0, 100_000_000))))
    forget_min_score = number("forgetting.min_score", 0.1, 0, 1)
    page_given = _get(raw, "forgetting.page_entries", {}) or {}
    if not isinstance(page_given, dict):
        raise bad("forgetting.page_entries", "must be a group of 'section: entries' lines (work, subagents)")
    for section in page_given:
        if section not in ("work", "subagents"):
            raise bad(f"forgetting.page_entries.{section}", "names no section vaultmem compacts (work, subagents)")
    page_entries = tuple((section, int(number(f"forgetting.page_entries.{section}", default, 1, 1_000_000)))
                         for section, default in DEFAULTS.page_entries)
    page_tokens = int(number("forgetting.page_tokens", 8000, 100, 10_000_000))
    format_version = _get(raw, "version", 1)
    if isinstance(format_version, bool) or not isinstance(format_version, int) or format_version < 1:
        raise bad("version", f"is {format_version!r}; it must be the vault's format version, a whole number "
                             f"from 1 to {FORMAT_VERSION}")
    if format_version > FORMAT_VERSION:
        raise bad("version", f"is {format_version}: the vault was made by a newer vaultmem (this one knows formats "
                             f"up to {FORMAT_VERSION}); upgrade vaultmem before using it")
    journal_keep_days = int(number("journal.keep_days", 0, 0, 1_000_000))
    journal_hooks = _get(raw, "journal.hooks", True)
    if not isinstance(journal_hooks, bool):
        raise bad("journal.hooks", f"is {journal_hooks!r}; it must be true or false")
    return Config(  # plain str, not ruamel's quoted-string subclasses: a Config is cached with marshal
        lang=str(lang),
        orchestrator=str(orchestrator),
        lock_timeout=timeout,
        note_types=tuple(str(t) for t in types),
        default_importance=importance,
        brief_window=int(window),
        brief_ratio=ratio,
        brief_max_items=int(max_items),
        min_relevance=min_relevance,
        brief_min_relevance=brief_min_relevance,
        brief_lead=int(lead),
        brief_shares=MappingProxyType(shares),  # read-only: one Config serves every reader (parse_config)
        index_lock_timeout=index_timeout,
        index_engine=str(index_engine),
        search_semantic=str(semantic),
        search_model=str(model).strip() if model is not None else None,
        search_ranking=str(ranking),
        search_reranker=str(reranker).strip() if reranker is not None else None,
        rerank_depth=rerank_depth,
        checkpoint_fresh_minutes=fresh,
        delegation_max_age_hours=delegation_age,
        secrets=str(secrets),
        trusted_agents=tuple(str(a) for a in trusted),
        orchestrator_approves=bool(orchestrator_approves),
        auto_harvest=auto_harvest,
        nudge_days=float(nudge_days),
        max_note_bytes=int(max_note),
        max_log_body_bytes=int(max_body),
        claude_agent=str(claude_agent) if claude_agent is not None else None,
        claude_prompt_log=bool(claude_prompt_log),
        claude_max_chars=int(claude_max_chars),
        half_lives=tuple(half_lives),
        forget_min_score=forget_min_score,
        forget_caps=tuple(caps),
        page_entries=page_entries,
        page_tokens=page_tokens,
        journal_keep_days=journal_keep_days,
        journal_hooks=journal_hooks,
        format_version=format_version,
    )


def load_config(root: Path) -> Config:
    """The vault's settings. A config that passed its checks is remembered, per machine,
    in ``.vaultmem/local/config.cache`` beside the file's stat (mtime, size, inode,
    ctime: any edit changes the last) and this module's (an upgrade), so a command reads
    it again only after an edit (0.3 ms instead of ruamel.yaml's 40 ms). The file's own
    mapping: :func:`load_raw`."""
    path = root / CONFIG_PATH
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    key = None if st is None else (CACHE_VERSION, _code_stamp(), st.st_mtime_ns, st.st_size, st.st_ino,
                                   st.st_ctime_ns)
    if key is not None:
        try:
            cached = unpack(read_bytes(root, f"{LOCAL_DIR}/{CONFIG_CACHE}"))
            if isinstance(cached, tuple) and len(cached) == 2 and cached[0] == key:
                return Config(**{k: tuple(v) if isinstance(v, list) else MappingProxyType(v) if isinstance(v, dict)
                                 else v for k, v in cached[1].items()})
        except (OSError, TypeError, VaultmemError):  # no cache, or one that may not be read
            pass
    config = parse_config(load_raw_text(root), CONFIG_PATH)
    if time.time_ns() - st.st_ctime_ns < RACY_NS:
        return config  # changed a moment ago: a second edit in the same clock tick could keep this stat
    values = {name: list(v) if isinstance(v := getattr(config, name), tuple) else
              dict(v) if isinstance(v, MappingProxyType) else v for name in Config._fields}
    packed = pack((key, values))
    if packed is not None:
        write_local(root, CONFIG_CACHE, packed)  # a read-only vault: no cache
    return config


def _code_stamp() -> tuple:
    """This module's file (size, mtime): an upgrade that changes a check or a default
    makes every cached config stale."""
    try:
        st = Path(__file__).stat()
    except OSError:
        return ()
    return (st.st_size, st.st_mtime_ns, _SCHEMA)


def load_raw_text(root: Path) -> str:
    try:
        return read_vault_text(root, CONFIG_PATH)
    except FileNotFoundError:
        raise ParseError("the vault has no config file", path=CONFIG_PATH,
                         hint="run 'vaultmem init' in the vault to restore it") from None


def load_raw(root: Path) -> Any:
    """The config file as ruamel.yaml read it (comments and order kept)."""
    return _load(load_raw_text(root), CONFIG_PATH)


def set_value(text: str, dotted: str, value: Any, path: str = CONFIG_PATH) -> str:
    """Return the config text with one setting changed; comments, order, a BOM and
    CRLF line ends are kept. A value that makes the config invalid is refused."""
    return set_values(text, [(dotted, value)], path)


def set_values(text: str, changes: list[tuple[str, Any]], path: str = CONFIG_PATH) -> str:
    """:func:`set_value` for several settings in one reading and one writing of the text
    (ruamel.yaml takes ~15 ms each way over the commented template), checked once."""
    crlf, bom = "\r\n" in text, text.startswith("\ufeff")
    raw = _load(text.lstrip("\ufeff").replace("\r\n", "\n"), path)
    for dotted, value in changes:
        _set_in(raw, dotted, value)
    from .parse.document import dump_yaml

    new_text = dump_yaml(raw)
    parse_config(new_text, path)
    if crlf:
        new_text = new_text.replace("\n", "\r\n")
    return ("\ufeff" if bom else "") + new_text


def _set_in(raw, dotted: str, value: Any) -> None:
    """Set one setting in the config's mapping as ruamel.yaml read it; a name that is no
    setting, or names a group, is refused."""
    parts = dotted.split(".")
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", p) for p in parts):
        raise BadInput(f"{dotted!r} is not a setting name", hint="use a dotted name such as git.lock_timeout",
                       field="key")
    node = raw
    for part in parts[:-1]:
        if part not in node:
            from ruamel.yaml.comments import CommentedMap

            node[part] = CommentedMap()
        node = node[part]
        if not isinstance(node, dict):
            raise BadInput(f"'{dotted}' cannot be set: '{part}' is not a group of settings", field="key")
    if isinstance(node.get(parts[-1]), dict):
        raise BadInput(f"'{dotted}' is a group of settings; set its keys one by one", field="key",
                       hint=f"e.g. vaultmem config set {dotted}.{next(iter(node[parts[-1]]), 'key')} VALUE")
    node[parts[-1]] = value
    # a typo is refused, not written: the setting it meant would stay at its default unseen
    for unknown, _line in unknown_settings(raw):
        if unknown == dotted or unknown.startswith(f"{dotted}.") or dotted.startswith(f"{unknown}."):
            name = unknown if unknown.startswith(f"{dotted}.") else dotted  # a key of a group given whole
            near = nearest_setting(name)
            raise BadInput(f"'{name}' is not a setting vaultmem knows: nothing was changed", field="key",
                           hint=f"did you mean '{near}'? vaultmem config set {near} VALUE" if near else
                           "see the settings and what each does with 'vaultmem config show'")


def save_config(root: Path, text: str) -> None:
    atomic_write(root / CONFIG_PATH, text)
