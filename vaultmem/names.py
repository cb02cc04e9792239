"""Turning agent, role and note names into safe file names.

Pure functions: no I/O. A name is NFC-normalised, then refused with a message that
says why when it could escape its folder, hide characters from a reviewer, break on
another operating system or break an Obsidian link. Chinese (and any other script)
is allowed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from .errors import NameRefused
from .patterns import Lazy

# A page's temp file is ".<name>.md.vmtmp-xxxxxxxx": it must fit in 255 bytes too.
MAX_NAME_BYTES = 255 - len(".") - len(".md") - len(".vmtmp-") - 8

# Characters that render as nothing (Unicode Default_Ignorable_Code_Point and the
# blank fillers): a name holding one looks identical to a name without it.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip


def _invisible(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _INVISIBLE_RANGES)

# Characters Windows refuses in file names, plus those that break Obsidian links
# ([[page#heading|alias]], ^block-ids).
_FORBIDDEN = {
    "/": "a path separator",
    "\\": "a path separator",
    ":": "a colon (not allowed in Windows file names)",
    "*": "'*' (not allowed in Windows file names)",
    "?": "'?' (not allowed in Windows file names)",
    '"': "a double quote (not allowed in Windows file names)",
    "<": "'<' (not allowed in Windows file names)",
    ">": "'>' (not allowed in Windows file names)",
    "|": "'|' (breaks Obsidian links and Windows file names)",
    "#": "'#' (breaks Obsidian links)",
    "^": "'^' (breaks Obsidian links)",
    "[": "'[' (breaks Obsidian links)",
    "]": "']' (breaks Obsidian links)",
}

_WINDOWS_RESERVED = re.compile(
    r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$", re.IGNORECASE
)


def _describe(ch: str) -> str:
    name = unicodedata.name(ch, None)
    return f"U+{ord(ch):04X}" + (f" {name}" if name else "")


def check_name(raw: str, what: str = "name", *, field: str | None = None) -> str:
    """Return the NFC form of ``raw`` if it is a safe file name, else raise NameRefused
    (``field``: the input it came from, as the caller's API names it)."""
    if not isinstance(raw, str) or raw == "":
        raise NameRefused(f"the {what} is empty", hint=f"give a {what} such as 前端审查 or code-reviewer",
                          field=field)
    name = unicodedata.normalize("NFC", raw)
    # quoted as Python would, but its unprintable characters escaped once (\x1b, not \\x1b)
    shown = repr(name) if name.isprintable() else "'" + name.encode("unicode_escape").decode("ascii") + "'"

    def refuse(why: str, hint: str | None = None) -> NameRefused:
        return NameRefused(f"the {what} {shown} is refused: {why}", hint=hint, field=field)

    if name == ".":
        raise refuse("it is '.', the current folder")
    if ".." in name:
        raise refuse("it contains '..'", "use a plain name without dots in a row")
    if unicodedata.category(name[0]) in {"Mn", "Mc", "Me"}:
        raise refuse(f"it starts with the combining mark {_describe(name[0])}")
    for ch in name:
        if ch in _FORBIDDEN:
            raise refuse(f"it contains {_FORBIDDEN[ch]}")
        cat = unicodedata.category(ch)
        if cat == "Cc":
            raise refuse(f"it contains the control character {_describe(ch)}")
        if cat in {"Cf", "Co", "Cs", "Cn"} or _invisible(ch):
            # Cf holds zero-width and bidi controls (U+200B..U+200F, U+202A..U+202E,
            # U+2066..U+2069, U+FEFF): invisible in review, so refused.
            raise refuse(f"it contains the invisible or unassigned character {_describe(ch)}")
        if cat in {"Zl", "Zp"} or (cat == "Zs" and ch != " "):
            raise refuse(f"it contains the unusual space {_describe(ch)}", "use a plain space or '-'")
    if name != name.strip():
        raise refuse("it starts or ends with a space")
    if name.endswith("."):
        raise refuse("it ends with a dot (Windows drops it)")
    if name.startswith("."):
        raise refuse("it starts with a dot (hidden file; Obsidian would not show it)")
    if _WINDOWS_RESERVED.match(name):
        raise refuse("it is a reserved device name on Windows", "add a word, e.g. 'con-reviewer'")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise refuse(
            f"it is {len(name.encode('utf-8'))} bytes long in UTF-8; at most {MAX_NAME_BYTES} fit in a file name",
            "shorten it",
        )
    _refuse_secret(name, what, field)
    return name


# What could hold a secret, for a name (the gate of vaultmem.guard, read on the NFKC form):
# a long token-like run or a secret's keyword. Only then is the detector loaded — importing
# it costs a command that checks a plain name such as 前端审查 ~7 ms and ~5 MB.
_MAYBE_SECRET = Lazy(r"[A-Za-z0-9_\-+/=.~]{16,}|密码|口令|密钥|令牌|"
                     r"(?i:pass|pwd|secret|token|key|auth|cred|private|api|bearer)")


def _refuse_secret(name: str, what: str, field: str | None) -> None:
    """A name that reads like a secret (a token, a key) would become a file name, a link
    and a commit message: refused as the caller's input, without repeating it. The cheap
    gate first: the detector runs only on a name that could hold one."""
    if not _MAYBE_SECRET.search(unicodedata.normalize("NFKC", name)):
        return
    from .guard import might_hold_secret, secret_lines

    if not might_hold_secret(name):
        return
    found = secret_lines(name)
    if found:
        raise NameRefused(f"the {what} is refused: it reads like a secret (a {found[0][1]}), and a name becomes "
                          "a file name, a link and a commit message", field=field,
                          hint=f"give a plain {what} such as 前端审查 or code-reviewer; keep secrets out of the vault")


def collision_key(name: str) -> str:
    """The form two names share when a case-insensitive or compatibility-folding file
    system (macOS, Windows) would treat them as one file."""
    if name.isascii():  # (the same: both forms leave ASCII alone, and its case folds to lower)
        return name.lower()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFC", name)).casefold()


def check_new_name(raw: str, existing: Iterable[str], what: str = "name", *, field: str | None = None) -> str:
    """Like :func:`check_name`, and also refuse a name that differs from an existing
    one only by case, Unicode normalisation or full-width forms. An exact match of an
    existing name is fine (it is the same thing)."""
    name = check_name(raw, what, field=field)
    key = collision_key(name)
    for other in existing:
        other_nfc = unicodedata.normalize("NFC", other)
        if other_nfc == name:
            return name
        if collision_key(other_nfc) == key:
            raise NameRefused(
                f"the {what} {name!r} collides with the existing {other_nfc!r}",
                hint=f"use {other_nfc!r} exactly, or choose a clearly different {what}",
                field=field,
            )
    return name


_SLUG_DROP = re.compile(r"[^\w]+", re.UNICODE)


def slugify(text: str, max_len: int = 60) -> str:
    """A readable file-name slug: lower case, words joined by '-', CJK kept as is."""
    text = unicodedata.normalize("NFKC", text).casefold()
    slug = _SLUG_DROP.sub("-", text).strip("-_")
    slug = re.sub(r"-{2,}", "-", slug)
    if len(slug) > max_len:
        cut = slug[:max_len]
        slug = cut.rsplit("-", 1)[0] if "-" in cut[max_len // 2 :] else cut
    return slug.strip("-_") or "note"
