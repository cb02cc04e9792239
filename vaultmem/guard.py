"""What must not become memory: secrets, and text that tries to give orders.

**Secrets** are found with detect-secrets' own detectors (cloud keys; GitHub, GitLab,
Slack, Stripe, OpenAI, npm, PyPI… tokens; private key blocks; JWTs; passwords in URLs;
``password: …`` style keywords; high-entropy strings). Every write path calls
:func:`scrub` on the text it was given before anything is rendered or written; a found
value is replaced by a typed placeholder with a short keyed hash
(``[redacted:github-token:5d41402a]``) or, when the vault says ``safety.secrets: reject``,
the write is refused. Three deliberate differences from detect-secrets' defaults:

- inline allow markers (``pragma: allowlist secret``) are ignored — a note is not code
  under review, and the marker would let any writer smuggle a key in;
- high-entropy strings are looked for outside quotes too (memory is prose, not code), with
  a minimum length, and lowercase hex of 40 or 64 characters (git object names) or of
  fewer than 32 (short ids, abbreviated hashes) is not a secret; UUIDs never are;
- public IP addresses are not secrets here.

Loading detect-secrets costs about 0.3 s, so text is first checked by a cheap gate
(:func:`might_hold_secret`): only text with a long token, a URL with credentials, a
key block or a secret-sounding keyword goes to the detectors (tests hold the gate to
every secret the detectors find).

**Instruction-like text** ("from now on…", "ignore previous…", "always run…",
"从现在开始…", "忽略之前…") is found by :func:`instruction_flags`; callers route such
text to the review inbox instead of memory.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\[redacted:[a-z0-9-]+:[0-9a-f]{8}\]")
# The characters of a long token (the gate's business), and those a found value is
# widened over to cover its whole token.
_TOKEN_CHARS = r"A-Za-z0-9_\-+/=.~"
_WIDEN = re.compile(r"[A-Za-z0-9_\-]+")
_URL = re.compile(r"https?://[^\s<>\"'()\[\]]+")
# detect-secrets' types → the word in a placeholder
_TYPE_NAMES = {
    "Base64 High Entropy String": "high-entropy",
    "Hex High Entropy String": "high-entropy",
    "Basic Auth Credentials": "url-password",
    "Secret Keyword": "password",
    "Private Key": "private-key",
    "JSON Web Token": "jwt",
}
_SKIPPED_PLUGINS = {"IPPublicDetector"}
_HIGH_ENTROPY = {"Base64HighEntropyString": 20, "HexHighEntropyString": 32}  # minimum lengths
# hex of these lengths is a checksum or object name (MD5, git SHA-1, SHA-256), not a key
_HASHLIKE = re.compile(r"[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_KEY_BLOCK = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----|\Z)",
                        re.DOTALL)
# The gate: every secret the detectors can find has one of these (see tests/test_guard.py).
_GATE = re.compile(
    rf"[{_TOKEN_CHARS}]{{16,}}|://[^\s/@]*:[^\s/@]*@|PRIVATE KEY|"
    r"(?i:pass|pwd|secret|token|key|auth|cred|private|api|bearer)",
)


@dataclass(frozen=True)
class Finding:
    """One secret found: its kind, where it was (field), and what replaced it."""

    type: str
    field: str
    placeholder: str

    def to_dict(self) -> dict:
        return {"type": self.type, "field": self.field, "placeholder": self.placeholder}


def might_hold_secret(text: str) -> bool:
    return bool(_GATE.search(text))


@functools.lru_cache(maxsize=1)
def _plugins():
    """detect-secrets' plugins (its default set, less the public-IP detector)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = []
    for cls in get_mapping_from_secret_type_to_class().values():
        if cls.__name__ in _SKIPPED_PLUGINS:
            continue
        plugins.append(cls())
    return tuple(sorted(plugins, key=lambda p: p.__class__.__name__))


def _filtered(value: str, line: str) -> bool:
    """detect-secrets' heuristics for values that are not secrets (the allow-marker
    filter is not among them: it is ignored on purpose)."""
    from detect_secrets.filters import heuristic as h

    return (h.is_potential_uuid(value) or h.is_sequential_string(value) or h.is_templated_secret(value)
            or h.is_prefixed_with_dollar_sign(value) or h.is_indirect_reference(line))


def _spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, type) of each secret in one line."""
    from detect_secrets.util.code_snippet import get_code_snippet

    context = get_code_snippet([line], 1)
    kept = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(line)]  # earlier redactions stay as they are
    urls = [(m.start(), m.end()) for m in _URL.finditer(line)]
    found: list[tuple[int, int, str]] = []
    for plugin in _plugins():
        name = plugin.__class__.__name__
        minimum = _HIGH_ENTROPY.get(name)
        kwargs = {"enable_eager_search": True} if minimum else {}
        for secret in plugin.analyze_line(filename="memory.yaml", line=line, line_number=1, context=context, **kwargs):
            value = (secret.secret_value or "").strip()
            if not value or _filtered(value, line):
                continue
            kind = _TYPE_NAMES.get(secret.type) or re.sub(r"[^a-z0-9]+", "-", secret.type.lower()).strip("-")
            if minimum is not None:
                def secret_like(v: str) -> bool:
                    return (len(v) >= minimum and not _HASHLIKE.fullmatch(v)
                            and plugin.calculate_shannon_entropy(v) > plugin.entropy_limit)

                if not secret_like(value):
                    continue
                # a path is not one secret: its segments are judged on their own (a key
                # such as AWS's may hold '/' too, but does not start with one)
                parts = [seg for seg in value.split("/") if secret_like(seg)] if "/" in value else []
                values = parts or ([] if value.startswith(("/", "./", "../")) else [value])
            elif kind == "password" and (re.search(r"\s", value) or len(value) < 4 or re.fullmatch(r"[\d.]+", value)):
                continue  # 'password: 12 characters minimum', 'detect-secrets==1.5.0': prose, not a value
            else:
                values = [value]
            for one in values:
                for start, end in _occurrences(line, one, widen=kind not in ("url-password", "password")):
                    if minimum is not None and any(u0 <= start and end <= u1 for u0, u1 in urls):
                        continue  # ids in links (documents, commits, pages) are addresses, not keys
                    if not any(start < k1 and k0 < end for k0, k1 in kept):
                        found.append((start, end, kind))
    return found


def _occurrences(line: str, value: str, widen: bool):
    """Where ``value`` stands in the line; with ``widen``, each widened to the whole
    token around it (a detector may report only a prefix such as 'ghp')."""
    start = line.find(value)
    while start >= 0:
        end = start + len(value)
        if widen:
            token = next((m for m in _WIDEN.finditer(line) if m.start() <= start < m.end()), None)
            if token is not None:
                start, end = min(start, token.start()), max(end, token.end())
        yield start, end
        start = line.find(value, end)


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans become one; a named detector's type wins over high-entropy."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and start < out[-1][1]:
            s0, e0, k0 = out[-1]
            out[-1] = (s0, max(e0, end), k0 if k0 != "high-entropy" else kind)
        else:
            out.append((start, end, kind))
    return out


def _digest(value: str, key: bytes) -> str:
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:8]


def scrub(text: str, field: str, key: bytes) -> tuple[str, list[Finding]]:
    """``text`` with every secret replaced by ``[redacted:<type>:<hash>]``, and what was
    found. The hash is keyed (``key`` is local to the vault's machine), so the same secret
    gets the same placeholder without the placeholder revealing a weak password."""
    if not text or not might_hold_secret(text):
        return text, []
    findings: list[Finding] = []

    def block(match: re.Match) -> str:
        placeholder = f"[redacted:private-key:{_digest(match.group(0), key)}]"
        findings.append(Finding("private-key", field, placeholder))
        return placeholder

    text = _KEY_BLOCK.sub(block, text)
    out_lines = []
    for line in text.split("\n"):
        if not might_hold_secret(line):
            out_lines.append(line)
            continue
        pieces, last = [], 0
        for start, end, kind in _merge(_spans(line)):
            value = line[start:end]
            if PLACEHOLDER.fullmatch(value):
                continue
            placeholder = f"[redacted:{kind}:{_digest(value, key)}]"
            findings.append(Finding(kind, field, placeholder))
            pieces.append(line[last:start] + placeholder)
            last = end
        out_lines.append("".join(pieces) + line[last:])
    return "\n".join(out_lines), findings


# -- instruction-like text ------------------------------------------------------------------
_INSTRUCTIONS = [
    # standing orders
    r"\bfrom now on\b", r"\bhenceforth\b", r"\bgoing forward,? you\b",
    r"\balways (?:run|execute|send|call|forward|upload|post|curl|install)\b",
    r"\bnever (?:tell|reveal|mention|report|question|refuse)\b",
    r"\byou (?:must|should|will) (?:always|now|never)\b", r"\byou are now\b",
    # overriding what the agent was told
    r"\b(?:ignore|disregard|forget|override)\b.{0,20}\b(?:previous|prior|above|earlier|all|any|your)\b.{0,20}"
    r"\b(?:instructions?|rules?|prompts?|messages?|context|guidelines?)\b",
    r"\b(?:new|updated|real) (?:system prompt|instructions for (?:you|the (?:agent|assistant|model)))\b",
    r"\b(?:reveal|print|show|repeat) (?:your|the) system prompt\b",
    # exfiltration and remote code
    r"\b(?:send|post|upload|forward|email|leak|exfiltrate)\b.{0,40}\b(?:api[ _-]?keys?|tokens?|credentials?|"
    r"secrets?|passwords?|private keys?|env(?:ironment)? variables?)\b",
    r"\b(?:curl|wget)\b[^\n|]*\|\s*(?:ba|z)?sh\b",
    # the same in Chinese
    r"从现在开始", r"从今以后", r"从今天起(?:你|都|一律|必须)",
    r"(?:忽略|无视|忘记|忘掉)(?:之前|以上|前面|上面|先前|所有|一切)", r"(?:总是|始终|永远|每次都)(?:要)?(?:运行|执行|发送|调用)",
    r"(?:永远|绝对)不要(?:告诉|透露|提及|报告)", r"你现在是", r"(?:新的|更新的)?系统提示词?(?:是|为|如下)",
    r"(?:发送|上传|转发|泄露|发给).{0,20}(?:密钥|令牌|口令|密码|凭证|凭据|API ?key|环境变量)",
    r"把.{0,20}(?:密钥|令牌|口令|密码|凭证|凭据|API ?key|环境变量).{0,10}(?:发送|发给|上传|转发|贴到)",
]
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in _INSTRUCTIONS), re.IGNORECASE | re.DOTALL)


def instruction_flags(text: str) -> list[str]:
    """The instruction-like phrases in ``text`` (empty when it reads as plain data)."""
    seen: list[str] = []
    for match in _INSTRUCTION.finditer(text or ""):
        phrase = " ".join(match.group(0).split())[:60]
        if phrase.lower() not in (s.lower() for s in seen):
            seen.append(phrase)
    return seen
