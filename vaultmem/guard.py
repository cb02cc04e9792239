"""What must not become memory: secrets, and text that tries to give orders.

**Secrets** are found with detect-secrets' own detectors (cloud keys; GitHub, GitLab,
Slack, Stripe, OpenAI, npm, PyPI… tokens; private key blocks; JWTs; passwords in URLs;
``password: …`` style keywords; high-entropy strings), and with ours for what they miss:
keys known by their prefix whatever their entropy (Anthropic ``sk-ant-``, OpenAI
``sk-proj-``, GitHub ``github_pat_``, Google ``AIza`` …), ``pass: VALUE``, URL passwords,
passwords in prose, random base64 of 16-24 bytes. Every write path calls
:func:`scrub` on the text it was given before anything is rendered or written; a found
value is replaced by a typed placeholder with a short keyed hash
(``[redacted:github-token:5d41402a]``) or, when the vault says ``safety.secrets: reject``,
the write is refused. Three deliberate differences from detect-secrets' defaults:

- inline allow markers (``pragma: allowlist secret``) are ignored — a note is not code
  under review, and the marker would let any writer smuggle a key in;
- high-entropy strings are looked for outside quotes too (memory is prose, not code), with
  a minimum length, and lowercase hex of 40 or 64 characters (git object names) or of
  fewer than 32 (short ids, abbreviated hashes) is not a secret; UUIDs never are;
- public IP addresses are not secrets here, and a file path or a URL is an address: a
  random-looking part of one (a temp folder's name) is not a key.

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
import math
import os
import re
import string
import unicodedata
from dataclasses import dataclass

from .patterns import Lazy

# A placeholder as scrub() writes it, and as a link's text shows it (MEMORY.md turns the
# square brackets of a note's name and description into round ones).
PLACEHOLDER = re.compile(r"\[redacted:[a-z0-9-]+:[0-9a-f]{8}\]|\(redacted:[a-z0-9-]+:[0-9a-f]{8}\)")
# The characters of a long token (the gate's business), and those a found value is
# widened over to cover its whole token.
_TOKEN_CHARS = r"A-Za-z0-9_\-+/=.~"
_WIDEN = Lazy(r"[A-Za-z0-9_\-]+")
_URL = Lazy(r"https?://[^\s<>\"'()\[\]]+")
# detect-secrets' types → the word in a placeholder
_TYPE_NAMES = {
    "Base64 High Entropy String": "high-entropy",
    "Hex High Entropy String": "high-entropy",
    "Basic Auth Credentials": "url-password",
    "Secret Keyword": "password",
    "Private Key": "private-key",
    "JSON Web Token": "jwt",
}
# public IPs are not secrets; URL passwords are found by _URL_CREDENTIALS (detect-secrets'
# pattern misses short ones and those holding '!', '$', '*' …)
_SKIPPED_PLUGINS = {"IPPublicDetector", "BasicAuthDetector"}
_HIGH_ENTROPY = {"Base64HighEntropyString": 20, "HexHighEntropyString": 32}  # minimum lengths
# a run of a high-entropy detector's characters as long as its minimum: without one in the
# line, the detector finds nothing worth judging, and is not run (its eager search is dear)
_ENTROPY_RUN = {"Base64HighEntropyString": Lazy(r"[A-Za-z0-9+/=_\-]{20,}"),
                "HexHighEntropyString": Lazy(r"[0-9a-fA-F]{32,}")}
# The detectors whose patterns can match in a line without a run of 16 token characters
# (a keyword and a short value, a key block's header, Artifactory's and Slack's short
# prefixes, npm's _authToken): only they read such a line — every other one's pattern
# needs a longer run (the denylists of detect-secrets 1.5).
_LONG_RUN = Lazy(rf"[{_TOKEN_CHARS}]{{16,}}")
_SHORT_PLUGINS = frozenset({"KeywordDetector", "PrivateKeyDetector", "ArtifactoryDetector", "SlackDetector",
                            "NpmDetector"})
# Every pattern of detect-secrets' keyword detector puts one of these between the keyword and
# its value (':=', ':', '=', '==', '!=', '=>', 'secret("…")', 'key "…";'): prose without one
# is not read by it (a password written in prose is _extra's)
_KEYWORD_SIGNS = Lazy(r"[=:;!(]")
# hex of these lengths is a checksum or object name (MD5, git SHA-1, SHA-256), not a key
_HASHLIKE = Lazy(r"[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_KEY_BLOCK = Lazy(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----|\Z)",
                        re.DOTALL)
# The gate: every secret the detectors can find has one of these (see tests/test_guard.py).
_GATE = re.compile(
    rf"[{_TOKEN_CHARS}]{{16,}}|://[^\s/@]*:[^\s]*@|PRIVATE KEY|密码|口令|密钥|令牌|"
    r"(?i:pass|pwd|secret|token|key|auth|cred|private|api|bearer)",
)
# vaultmem's own ids (a delegation's d-20261206-03177d, an inbox item's i-…): 17 characters of
# lowercase, digits and hyphens, which no detector flags (the high-entropy ones start at 20, the
# others need a prefix or a keyword; tests/test_guard.py holds this) — not a reason to load them
_OWN_ID = re.compile(rf"(?<![{_TOKEN_CHARS}])[a-z]-\d{{8}}-[0-9a-f]{{6}}(?![{_TOKEN_CHARS}])")


def _gated(text: str) -> bool:
    """Whether the detectors must read ``text`` (:data:`_GATE`, vaultmem's own ids aside)."""
    return bool(_GATE.search(_OWN_ID.sub("x", text) if "-" in text else text))  # a short token in its place


# -- secrets broken over lines ---------------------------------------------------------------
# A token may be wrapped onto the next line, that line indented or quoted ('> '); the two
# halves are read joined. Only a break between two token-like runs is a candidate.
_JOIN_CHARS = r"A-Za-z0-9_\-+/=.~:@!$%*^&?#"
_JOIN_SET = frozenset(string.ascii_letters + string.digits + "_-+/=.~:@!$%*^&?#")
_HEAD = Lazy(rf"[ \t]*(?:>[ \t]*)*([{_JOIN_CHARS}]+)")
_LINE_BREAK = Lazy(r"\r?\n[ \t]*(?:>[ \t]*)*")  # a break, with the next line's indentation or quote
_JOINED_MIN = 12  # a secret shorter than this (both halves together) is not looked for over a break
_MAX_JOINED_LINES = 8
# -- extra detectors ---------------------------------------------------------------------------
# scheme://user:password@host — the password is whatever stands before the last '@' of the
# authority (people do write '@', '!' or ':' in them unescaped)
_URL_CREDENTIALS = Lazy(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@]*:(?P<pw>[^\s/]+)@[^\s/@?#]*")
_SECRET_WORD = (r"(?:(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_\-])*(?:password|passwd|passphrase|pwd|pass|secret|token|"
                r"api[_\-]?key|access[_\-]?key|private[_\-]?key|auth[_\-]?token)(?:[_\-][A-Za-z0-9]+)*"
                r"(?![A-Za-z0-9])|密码|口令|密钥|令牌)")
# 'pass' alone is a word of prose too ('a second pass is 2x faster', 'Lint pass: OK'): it
# names a password only before ':' or '=', and only a value of letters with digits or signs
_BARE_PASS = Lazy(r"(?i)(?:[A-Za-z0-9]+[_\-])*pass")
# 'password=hunter2', 'the password is Tr0ub4dor&3', '密码：hunter22' — anywhere in a line
_KEYWORD_VALUE = Lazy(
    rf"(?i)(?P<word>{_SECRET_WORD})(?P<sep>[ \t]*=[ \t]*|[ \t]*:[ \t]*|[ \t]+is[ \t]+|[ \t]*(?:是|为)[ \t]*)"
    r"(?P<q>[\"'`]?)(?P<value>[\x21-\x7e]+?)(?P=q)(?=$|[\s,;，。、）)\]]|[\"'`])")
_NOT_A_VALUE = Lazy(
    r"[\d.,:/\-]+|v?\d+(?:\.\d+)+\S*|[$%{<].*|.*[}>]|[*xX•.]+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|"
    r"(?i:true|false|null|none|nil|empty|required|optional|string|str|int|bool|number|text|value|redacted)")
_ENV_NAME = Lazy(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_MIXED = Lazy(r"(?=.*[A-Za-z])(?=.*[0-9!#$%&*+?@^~])")
# random base64 (16 bytes and up): a run of its characters with both letter cases, near the
# entropy of random text of its length and mostly not made of words
_BASE64_RUN = Lazy(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{20,}={0,2}(?![A-Za-z0-9+/=_\-])")
_WORDISH = Lazy(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}(?![a-z])|\d{3,}")
_WORD_PIECE = Lazy(r"[A-Z]?[a-z]+|[A-Z]+|[0-9]{1,3}|[0-9a-fA-F]{7,}")
# Keys known by their prefix are secrets whatever their entropy ('sk-ant-api03-AAAA…' is one):
# those detect-secrets 1.5 has no detector for, or finds only in some forms (its OpenAI
# detector wants the legacy 'T3BlbkFJ' marker, its GitHub one not 'github_pat_', its Slack one
# digits after the prefix, its Stripe one 'live' keys only). Its own GitHub, AWS, GitLab,
# Stripe and Slack detectors find the rest. Each needs a body long enough that no word of
# prose ('task-list', 'sk-learn', 'xoxb-style') matches, and that the gate's 16-character run
# lets it through; no letter or digit may stand before it, and a match runs on to its
# token's end.
_PREFIXES = {
    "anthropic-key": r"sk-ant-[A-Za-z0-9_\-]{20,}",
    "openai-token": r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9]{32,}",
    "github-token": r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}",
    "slack-token": r"xox[abposre]-[A-Za-z0-9\-]{11,}",
    "google-api-key": r"AIza[0-9A-Za-z_\-]{35}",
    "google-oauth-token": r"ya29\.[0-9A-Za-z_\-]{20,}",
    "stripe-access-key": r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",
    "huggingface-token": r"hf_[A-Za-z0-9]{30,}",
    "npm-token": r"npm_[A-Za-z0-9]{36,}",
    "pypi-token": r"pypi-AgE[A-Za-z0-9_\-]{50,}",
    "digitalocean-token": r"do[opr]_v1_[a-f0-9]{64}",
    "groq-key": r"gsk_[A-Za-z0-9]{40,}",
    "xai-key": r"xai-[A-Za-z0-9]{40,}",
    "shopify-token": r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
}
_PREFIXED_KEY = Lazy("(?<![A-Za-z0-9])(?:" + "|".join(f"(?P<{kind.replace('-', '_')}>{pattern})"
                                                          for kind, pattern in _PREFIXES.items())
                          + r")[A-Za-z0-9_\-]*")
# a file path — absolute, or from ~ . or .., of two parts or more, the last with an extension
# ('/tmp/tmpk3j2_x8a/proj/CLAUDE.md', '~/.claude/projects/-home-a/3f2a.jsonl'): base64 holds
# no '.', so a key does not read as one
_FILE_PATH = Lazy(r"(?<![^\s\"'`(\[<=:,])(?:~|\.\.?)?(?:/[A-Za-z0-9._@\-]+)+/[A-Za-z0-9_@\-][A-Za-z0-9._@\-]*"
                        r"\.[A-Za-z0-9]{1,10}(?![A-Za-z0-9._@/\-])")
_CASE_FLIP = Lazy(r"(?<=[a-z])[A-Z]|(?<=[A-Z])[a-z](?=[A-Z])")
_UUID = Lazy(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class Finding:
    """One secret found: its kind, where it was (field), and what replaced it."""

    type: str
    field: str
    placeholder: str

    def to_dict(self) -> dict:
        return {"type": self.type, "field": self.field, "placeholder": self.placeholder}


def _view(line: str) -> tuple[str, list[int] | None]:
    """The line as it is scanned: each character NFKC-folded (full-width ｇｈｐ＿ reads as
    ghp_, as the search index reads it), invisible format characters (zero-width spaces,
    bidi controls) left out; and, unless nothing changed, where each of its characters
    came from in ``line``."""
    if line.isascii():
        return line, None
    out, where = [], []
    for i, ch in enumerate(line):
        if ch.isascii():
            out.append(ch)
            where.append(i)
            continue
        if unicodedata.category(ch) == "Cf":
            continue
        folded = unicodedata.normalize("NFKC", ch)
        out.append(folded)
        where.extend([i] * len(folded))
    view = "".join(out)
    return (view, where) if view != line else (line, None)


def _folded(text: str) -> str:
    """A found value as the detectors read it: folded, its line breaks taken out."""
    return _LINE_BREAK.sub("", "\n".join(_view(line)[0] for line in text.split("\n")))


def might_hold_secret(text: str) -> bool:
    if text.isascii():
        return _gated(text) or ("\n" in text and _joins_worth_reading(text.split("\n")))
    lines = [_view(line)[0] for line in text.split("\n")]
    return any(_gated(line) for line in lines) or _joins_worth_reading(lines)


def _tail(line: str) -> tuple[int, int] | None:
    """Where the token-like run that ends the line (trailing blanks aside) stands."""
    end = len(line.rstrip(" \t\r"))
    start = end
    while start > 0 and line[start - 1] in _JOIN_SET:
        start -= 1
    return (start, end) if start < end else None


def _glued(tail: str, head: str) -> bool:
    """Whether two runs that a line break separates could be one secret's halves."""
    glued = tail + head
    return len(glued) >= _JOINED_MIN and bool(
        re.search(r"[0-9+/=:@_$%!]", glued) or (sum(c.isupper() for c in glued) >= 2
                                                  and sum(c.islower() for c in glued) >= 2))


def _joins_worth_reading(lines: list[str]) -> bool:
    keys = _frontmatter_end(lines)
    for n, (a, b) in enumerate(zip(lines, lines[1:])):
        tail, head = _tail(a), _HEAD.match(b)
        if tail and head and _glued(a[tail[0]:tail[1]], head.group(1)) and not _new_entry(b, n + 1, keys):
            return True
    return False


# In YAML frontmatter a line that opens a key ("created: …"), a list item ("- x") or closes it
# ("---") is a new entry, never the rest of a value wrapped onto it: no break before one is read
# joined ("type: delegation" / "created: …" is not one token "delegationcreated:"). Any other
# line — the rest of a key pasted at column 0 — still is.
_ENTRY = Lazy(r"[A-Za-z_][\w-]*:(?:[ \t]|$)|-[ \t]")


def _new_entry(line: str, n: int, keys: int) -> bool:
    """Whether line ``n`` of a text whose frontmatter closes at line ``keys`` starts an entry
    of that frontmatter (or closes it) rather than continuing the line before."""
    return 0 < n <= keys and (n == keys or _ENTRY.match(line) is not None)


def _frontmatter_end(lines: list[str]) -> int:
    """The number of the line that closes the text's frontmatter (0: it has none)."""
    if not lines or lines[0].strip() != "---":
        return 0
    return next((n for n in range(1, len(lines)) if lines[n].strip() in ("---", "...")), 0)


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
            or h.is_prefixed_with_dollar_sign(value) or _indirect_reference(line))


@functools.lru_cache(maxsize=32)
def _indirect_reference(line: str) -> bool:
    """detect-secrets' ``is_indirect_reference`` of a line, once per line: its pattern
    costs about a millisecond on a long line, and a line has many candidate values."""
    from detect_secrets.filters import heuristic as h

    return h.is_indirect_reference(line)


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_base64(value: str) -> bool:
    """Whether a run of base64 characters reads as random bytes (a key of 16 bytes or
    more) rather than an identifier, a word run or a checksum. detect-secrets' fixed
    entropy limit (4.5 bits) sits above what 24 or 28 random characters can reach, so
    here the limit follows the length: within 1.1 bits of log2(length), the most a
    string of that length can have. Random base64 of 16 bytes passes 99.8% of the time
    (bench_guard.py); camelCase and snake_case identifiers, paths, versions and hex do
    not (they have few letter-case changes, mostly words, or one case only)."""
    core = value.rstrip("=")
    n = len(core)
    if n < 20 or re.fullmatch(r"[0-9a-fA-F\-]+", core) or _UUID.search(core):
        return False
    if sum(c.isupper() for c in core) < 2 or sum(c.islower() for c in core) < 2:
        return False
    words = sum(len(m.group(0)) for m in _WORDISH.finditer(core))
    return words <= 0.8 * n and _entropy(core) >= math.log2(n) - 1.1


def _path_like(value: str) -> bool:
    """Whether a run reads as an absolute path of three parts or more
    ('/home/alice/work/my-project/CLAUDE', '/tmp/tmpk3j2_x8a/proj/CLAUDE'), judged segment by
    segment: its words and separators together can read as random. Base64 holding '+' or
    '=', or a part with three letter-case changes in it, is not a path: 2 of 200,000 random
    keys of 16-32 bytes have this shape (and a long part of one is still judged on its own)."""
    return (value.startswith("/") and value.count("/") >= 3 and "+" not in value and "=" not in value
            and all(len(_CASE_FLIP.findall(seg)) < 3 for seg in value.split("/")))


def _random_runs(line: str) -> list[tuple[int, int]]:
    """Where random base64 stands in the line (a path is judged segment by segment)."""
    found = []
    for m in _BASE64_RUN.finditer(line):
        value = m.group(0)
        if not _path_like(value) and _random_base64(value.strip("/")):
            found.append((m.start(), m.end()))
        elif "/" in value:
            pos = m.start()
            for seg in value.split("/"):
                if _random_base64(seg):
                    found.append((pos, pos + len(seg)))
                pos += len(seg) + 1
    return found


def _addresses(line: str) -> list[tuple[int, int]]:
    """Where the line's URLs and file paths stand: a random-looking part of one is an
    address, not a key (a named detector's key in one is still found)."""
    return [(m.start(), m.end()) for pattern in (_URL, _FILE_PATH) for m in pattern.finditer(line)]


def _keyword_value(value: str, sep: str) -> bool:
    """Whether what follows 'password=' (or ':', ' is ', '是' …) in prose is a value."""
    if len(value) < 4 or "/" in value or _NOT_A_VALUE.fullmatch(value) or PLACEHOLDER.search(value):
        return False
    return "=" in sep or bool(_MIXED.match(value))


def _extra(line: str) -> list[tuple[int, int, str]]:
    """What detect-secrets misses: short or unusual URL passwords, a password written in
    prose, a key known by its prefix (:data:`_PREFIXED_KEY`), random base64 of 16-24 bytes."""
    found = []
    for m in _URL_CREDENTIALS.finditer(line):
        pw = m.group("pw")
        if PLACEHOLDER.search(pw) or re.fullmatch(r"[$%{<].*|.*[}>]|[*xX•.]+", pw):
            continue  # a template ('${DB_PASS}', '<password>') or a mask ('****') is no password
        found.append((m.start("pw"), m.end("pw"), "url-password"))
    for m in _KEYWORD_VALUE.finditer(line):
        value = m.group("value").rstrip(".") or m.group("value")
        if _BARE_PASS.fullmatch(m.group("word")) and not (re.search("[:=]", m.group("sep"))
                                                           and _MIXED.match(value)):
            continue
        if _keyword_value(value, m.group("sep")):
            found.append((m.start("value"), m.start("value") + len(value), "password"))
    for m in _PREFIXED_KEY.finditer(line):
        found.append((m.start(), m.end(), next(k for k, v in m.groupdict().items() if v).replace("_", "-")))
    urls = _addresses(line)
    for start, end in _random_runs(line):
        if not any(u0 <= start and end <= u1 for u0, u1 in urls):
            found.append((start, end, "high-entropy"))
    return found


def _spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, type) of each secret in one line as scanned (see :func:`_view`); a
    named detector's match is widened to its whole token."""
    from detect_secrets.util.code_snippet import get_code_snippet

    context = get_code_snippet([line], 1)
    kept = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(line)]  # earlier redactions stay as they are
    urls = _addresses(line)
    found: list[tuple[int, int, str]] = []

    def add(start: int, end: int, kind: str) -> None:
        if not any(start < k1 and k0 < end for k0, k1 in kept):
            found.append((start, end, kind))

    long_run = _LONG_RUN.search(line) is not None
    for plugin in _plugins():
        name = plugin.__class__.__name__
        if (not long_run and name not in _SHORT_PLUGINS) or (name == "KeywordDetector"
                                                              and not _KEYWORD_SIGNS.search(line)):
            continue
        minimum = _HIGH_ENTROPY.get(name)
        if minimum is not None and not _ENTROPY_RUN[name].search(line):
            continue
        kwargs = {"enable_eager_search": True} if minimum else {}
        for secret in plugin.analyze_line(filename="memory.yaml", line=line, line_number=1, context=context, **kwargs):
            value = (secret.secret_value or "").strip()
            if not value:
                continue
            if minimum is not None:
                def secret_like(v: str) -> bool:
                    return (len(v) >= minimum and not _HASHLIKE.fullmatch(v)
                            and plugin.calculate_shannon_entropy(v) > plugin.entropy_limit)

                if not secret_like(value):  # first: most candidates of the eager search fail it, cheaply
                    continue
            if _filtered(value, line):
                continue
            kind = _TYPE_NAMES.get(secret.type) or re.sub(r"[^a-z0-9]+", "-", secret.type.lower()).strip("-")
            if minimum is not None:
                # a path is not one secret: its segments are judged on their own (a key
                # such as AWS's may hold '/' too, but does not start with one)
                parts = [seg for seg in value.split("/") if secret_like(seg)] if "/" in value else []
                values = parts or ([] if value.startswith(("/", "./", "../")) else [value])
            elif kind == "password" and (re.search(r"\s", value) or len(value) < 4 or re.fullmatch(r"[\d.]+", value)
                                         or PLACEHOLDER.search(value) or _ENV_NAME.fullmatch(value)):
                continue  # 'password: 12 characters minimum', 'detect-secrets==1.5.0', 'password=DB_PASSWORD_FILE'
                # (a variable's name): prose or a reference, not a value
            else:
                values = [value]
            for one in values:
                for start, end in _occurrences(line, one, widen=kind not in ("url-password", "password")):
                    if minimum is not None and any(u0 <= start and end <= u1 for u0, u1 in urls):
                        continue  # ids in links and file paths (documents, commits, pages, temp folders)
                        # are addresses, not keys
                    add(start, end, kind)
    for start, end, kind in _extra(line):
        add(start, end, kind)
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


def _hits(lines: list[str], wanted: set[int] | None = None) -> list[tuple[int, int, int, int, str]]:
    """Every secret in ``lines`` (of the lines in ``wanted``, or touching one, when given)
    as (first line, column, last line, end column, type), in the lines as written: each
    line is read folded (:func:`_view`), and each break between two token-like runs is
    also read joined, the next line's indentation or quote marker left out."""
    views: dict[int, tuple[str, list[int] | None]] = {}

    def view(i: int) -> tuple[str, list[int] | None]:
        if i not in views:
            views[i] = _view(lines[i])
        return views[i]

    def back(i: int, col: int, end: bool = False) -> int:
        """A column of line i's view, in line i as written."""
        where = view(i)[1]
        if where is None:
            return col
        if end:
            return where[col - 1] + 1 if col > 0 else 0
        return where[col] if col < len(where) else len(lines[i])

    hits: list[tuple[int, int, int, int, str]] = []
    per_line: dict[int, list[tuple[int, int]]] = {}  # what each line alone holds, in its view

    def alone(i: int) -> list[tuple[int, int]]:
        if i not in per_line:
            text = view(i)[0]
            per_line[i] = [(s, e) for s, e, _ in _spans(text)] if _gated(text) else []
        return per_line[i]

    for i in (range(len(lines)) if wanted is None else sorted(n for n in wanted if 0 <= n < len(lines))):
        text = view(i)[0]
        if _gated(text):
            found = _spans(text)
            per_line[i] = [(s, e) for s, e, _ in found]
            hits.extend((i, back(i, s), i, back(i, e, True), k) for s, e, k in found)
    # breaks: line i's last run glued to line i+1's first (and on, while a line is one run)
    if wanted is None:
        starts = range(len(lines) - 1)
    else:  # the breaks next to a wanted line, and a chain of one-run lines above it
        near = set()
        for n in wanted:
            near.update((n - 1, n))
            k = n - 1
            while k > 0 and n - k < _MAX_JOINED_LINES and _one_run(view(k)[0]):
                k -= 1
                near.add(k)
        starts = sorted(k for k in near if 0 <= k < len(lines) - 1)
    last, keys = -1, _frontmatter_end(lines)
    for i in starts:
        if i < last:
            continue  # inside a chain read already
        tail = _tail(view(i)[0])
        if not tail:
            continue
        joined, pieces, junctions = view(i)[0][: tail[1]], [(0, i, 0)], []  # (from, line, its column)
        run, j = view(i)[0][tail[0]:tail[1]], i + 1
        while j < len(lines) and j - i < _MAX_JOINED_LINES:
            head = _HEAD.match(view(j)[0])
            if not head or not _glued(run, head.group(1)) or _new_entry(lines[j], j, keys):
                break
            junctions.append(len(joined))
            pieces.append((len(joined), j, head.start(1)))
            joined += view(j)[0][head.start(1):]
            if view(j)[0][head.end(1):].strip():
                break
            run, j = head.group(1), j + 1
        last = pieces[-1][1]
        if junctions and (wanted is None or any(n in wanted for n in range(i, last + 1))) \
                and _gated(joined):
            for s, e, kind in _spans(joined):
                cuts = [s, *[at for at in junctions if s < at < e], e]
                if len(cuts) == 2:
                    continue  # within one line: found (or not) line by line
                parts = [joined[a:b] for a, b in zip(cuts, cuts[1:])]
                if kind == "high-entropy":
                    # no part of it may read on its own line as a word, a short number or a hex
                    # id ('fixed in commit' + a SHA on the next line is not one secret)
                    if any(_WORD_PIECE.fullmatch(p) or _UUID.fullmatch(p) for p in parts):
                        continue
                else:
                    # a secret whole on its own line, glued to the next line's word, is found already
                    covered = []
                    for a, b in zip(cuts, cuts[1:]):
                        start, line, col = _piece(pieces, a)
                        c0, c1 = col + a - start, col + b - start
                        covered.append(any(x0 <= c0 and c1 <= x1 for x0, x1 in alone(line)))
                    if any(covered) and all(c or _WORD_PIECE.fullmatch(p) for c, p in zip(covered, parts)):
                        continue
                (a, la, ca), (b, lb, cb) = _piece(pieces, s), _piece(pieces, e - 1)
                hits.append((la, back(la, ca + s - a), lb, back(lb, cb + e - b, True), kind))
    return hits


def _one_run(line: str) -> bool:
    head = _HEAD.match(line)
    return bool(head) and not line[head.end(1):].strip()


def _piece(pieces: list[tuple[int, int, int]], pos: int) -> tuple[int, int, int]:
    return next(p for p in reversed(pieces) if p[0] <= pos)


def _offsets(lines: list[str]) -> list[int]:
    out, pos = [], 0
    for line in lines:
        out.append(pos)
        pos += len(line) + 1
    return out


def secret_lines(text: str, wanted: set[int] | None = None) -> list[tuple[int, str]]:
    """(line number from 1, type) of each secret in ``text`` — only of the lines numbered
    in ``wanted`` and of secrets broken over a line break next to one, when given."""
    if not text:
        return []
    lines = text.split("\n")
    want = None if wanted is None else {n - 1 for n in wanted}
    return sorted({(la + 1, kind) for la, _, _, _, kind in _hits(lines, want)})


def scrub(text: str, field: str, key: bytes) -> tuple[str, list[Finding]]:
    """``text`` with every secret replaced by ``[redacted:<type>:<hash>]``, and what was
    found. The hash is keyed (``key`` is local to the vault's machine), so the same secret
    gets the same placeholder without the placeholder revealing a weak password. A secret
    written in full-width or other compatibility forms is found as its NFKC form and the
    characters as written are replaced; one broken over lines is replaced from its first
    character to its last, the line breaks (and the next line's indentation or '>') kept."""
    if not text or not might_hold_secret(text):
        return text, []
    findings: list[Finding] = []

    def block(match: re.Match) -> str:
        placeholder = f"[redacted:private-key:{_digest(match.group(0), key)}]"
        findings.append(Finding("private-key", field, placeholder))
        return placeholder

    text = _KEY_BLOCK.sub(block, text)
    lines = text.split("\n")
    at = _offsets(lines)
    spans = _merge([(at[la] + ca, at[lb] + cb, kind) for la, ca, lb, cb, kind in _hits(lines)
                    if at[la] + ca < at[lb] + cb])
    pieces, last = [], 0
    for start, end, kind in spans:
        value = text[start:end]
        if PLACEHOLDER.fullmatch(value):
            continue
        placeholder = f"[redacted:{kind}:{_digest(_folded(value), key)}]"
        findings.append(Finding(kind, field, placeholder))
        pieces.append(text[last:start] + placeholder + "".join(m.group(0) for m in _LINE_BREAK.finditer(value)))
        last = end
    return "".join(pieces) + text[last:], findings


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
_INSTRUCTION = Lazy("|".join(f"(?:{p})" for p in _INSTRUCTIONS), re.IGNORECASE | re.DOTALL)


def instruction_flags(text: str) -> list[str]:
    """The instruction-like phrases in ``text`` (empty when it reads as plain data)."""
    seen: list[str] = []
    for match in _INSTRUCTION.finditer(text or ""):
        phrase = " ".join(match.group(0).split())[:60]
        if phrase.lower() not in (s.lower() for s in seen):
            seen.append(phrase)
    return seen


@functools.lru_cache(maxsize=1)
def _message_key() -> bytes:
    return os.urandom(16)


def without_secrets(text: str) -> str:
    """``text`` with every secret the detector finds replaced by a placeholder, for what
    vaultmem says back (an error or a note that quotes its input). The placeholders'
    hashes are keyed per process, so they match nothing stored."""
    if not might_hold_secret(text):
        return text
    return scrub(text, "message", _message_key())[0]


LEFT_OUT = "[a line that reads like an instruction was left out]"


def without_instructions(text: str) -> tuple[str, list[str]]:
    """``text`` with each line that reads like an instruction (the guard's flags) left
    out, a marker in its place, and the phrases found: for what an adapter copies from a
    conversation into memory no review gates (a checkpoint before a compaction), so that
    a pasted "ignore all previous instructions" does not ride into the next brief."""
    kept, found = [], []
    for line in text.splitlines():
        flags = instruction_flags(line)
        found += flags
        kept.append(LEFT_OUT if flags else line)
    return "\n".join(kept), found
