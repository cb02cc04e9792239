"""The edge: where whatever the library raised becomes an adapter's answer.

Every adapter — the CLI, the watcher, agent-runtime hooks, an MCP server — answers its
caller from here and words nothing of its own beyond the name of the input that was
wrong (the library's ``field``, which each adapter calls by its own word for it):

- :func:`as_error`: any exception as a :class:`~vaultmem.errors.VaultmemError`. An
  OSError the library did not expect becomes a clear one (:func:`vaultmem.errors.from_os_error`, which the library uses for its own writes too): no
  space, a quota, a read-only or failing disk while writing → ``StorageError`` (exit 5).
- :func:`exit_code`: the process exit code (0 ok, 1 error, 2 bad input, 3 refused,
  4 busy, 5 storage, 130 interrupted).
- :func:`error_dict`: the JSON shape ``{"type", "message", "path", "line", "hint", "field"}``.
- :func:`error_text`: for people, ``error: file:line: field: message`` and ``  hint: …``.
- :func:`printable` and :func:`json_text`: every text an adapter prints, made safe for
  a terminal — a note's escape sequences, control characters and bidi overrides are
  shown as visible stand-ins (``␛``, ``\\x9b``, ``\\u202e``), never acted on.
- :func:`fail_open`: for hooks, which must never block an agent's session: any exception
  becomes one line on stderr and exit code 0.

Standard library and :mod:`vaultmem.errors` only: no typer, no click (an MCP server has
neither), nothing slow to import.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from typing import Any, Callable

from ..errors import VaultmemError, from_os_error
from ..patterns import Lazy

OK, ERROR, BAD_INPUT, REFUSED, BUSY, STORAGE = 0, 1, 2, 3, 4, 5
INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C

class Interrupted(VaultmemError):
    """Ctrl-C (or SIGTERM turned into it) stopped the work."""

    exit_code = INTERRUPTED
    kind = "interrupted"


class UsageError(VaultmemError):
    """The command line itself was wrong: a missing option, a value of the wrong type,
    an unknown option or command."""

    exit_code = BAD_INPUT
    kind = "usage_error"


class Unexpected(VaultmemError):
    """Anything else an adapter caught: a bug, in vaultmem or in what it runs on."""

    kind = "internal_error"


def as_error(exc: BaseException) -> VaultmemError:
    """``exc`` as a VaultmemError: itself, an OSError by :func:`from_os_error`, Ctrl-C as
    :class:`Interrupted`, anything else as :class:`Unexpected` (kind ``internal_error``)."""
    if isinstance(exc, VaultmemError):
        return exc
    if isinstance(exc, OSError):
        return from_os_error(exc)
    if isinstance(exc, KeyboardInterrupt):
        return Interrupted("interrupted")
    return Unexpected(f"unexpected {type(exc).__name__}: {exc}" if str(exc) else f"unexpected {type(exc).__name__}",
                      hint="this is a bug in vaultmem: please report it with what you ran")


# What a terminal would act on rather than show: C0 controls but tab and newline, DEL, C1
# controls (8-bit CSI, OSC …), and the bidi controls that reorder what is displayed
# (U+202E shows "txt.exe" as "exe.txt"); and lone surrogates, which stand for a file name's
# bytes that are not UTF-8 and cannot be written out. Zero-width joiners and variation
# selectors stay: emoji sequences are made of them.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# In JSON, C0 controls are escaped by the encoder itself; these it leaves as they are.
_JSON_UNSAFE = Lazy("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def _stand_in(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ ␇ ␍ …
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8, as Python decodes it
        code -= 0xDC00
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` as it may go to a terminal: every character a terminal would act on (an
    escape sequence's ESC, BEL, a lone carriage return, C1 controls, bidi overrides) is
    replaced by a visible stand-in — ``␛`` for ESC, ``\\x9b`` for a C1 CSI, ``\\u202e``
    for a right-to-left override. Newlines and tabs stay, and so do Chinese and emoji;
    a CRLF is a newline."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return _UNSAFE.sub(_stand_in, text)


def plain_name(text: Any) -> str:
    """A file or agent name as one line: a newline or other control character in it is
    escaped (\\n), so a name cannot start a line of output of its own."""
    text = str(text)
    if text.isprintable():  # nearly every name: no character to look at one by one
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def json_text(data: Any, indent: int | None = 2) -> str:
    """``data`` as JSON that is safe on a terminal too: the characters the encoder leaves
    raw and a terminal would act on (C1 controls, bidi overrides, line separators) are
    ``\\uXXXX`` escapes — the same value for any JSON reader. A lone surrogate (a file
    name's byte that is not UTF-8) becomes the text :func:`printable` shows (``\\xNN``)."""
    text = json.dumps(data, ensure_ascii=False, indent=indent, default=str)
    return _JSON_UNSAFE.sub(_json_escape, text)


def _json_escape(match: re.Match) -> str:
    code = ord(match.group())
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate is no JSON a strict reader takes: the text a terminal shows
        return _stand_in(match).replace("\\", "\\\\")
    return f"\\u{code:04x}"


def exit_code(exc: BaseException) -> int:
    """The process exit code for ``exc`` (a ``SystemExit`` keeps its own)."""
    if isinstance(exc, SystemExit):
        code = exc.code
        return 0 if code is None else code if isinstance(code, int) else ERROR
    return as_error(exc).exit_code


def error_dict(exc: BaseException, **extra: Any) -> dict[str, Any]:
    """The stable JSON shape of an error: ``{"type", "message", "path", "line", "hint",
    "field"}``, then ``extra`` (an adapter's own keys, e.g. the CLI's ``option``)."""
    return {**as_error(exc).to_dict(), **extra}


def _names(message: str, where: str) -> bool:
    """Whether ``message`` already names the file ``where`` (as a whole path)."""
    return re.search(rf"(?<![\w./\\-]){re.escape(where)}(?![\w./\\-])", message) is not None


def error_text(exc: BaseException, name: str | None = None) -> str:
    """For people: ``error: file:line: NAME: message`` and, if there is one, a second
    line ``  hint: …``. ``name`` is the adapter's word for the input that was wrong (the
    CLI's ``--importance``); by default the library's ``field``; ``""`` for none. A file
    the message already names is not said twice."""
    err = as_error(exc)
    label = err.field if name is None else name
    where = err.where()
    if where and err.line is None and _names(err.message, where):
        where = None
    head = "".join(f"{part}: " for part in (where, label) if part)
    text = f"error: {head}{err.message}"
    if err.hint:
        text += f"\n  hint: {err.hint}"
    return text


def one_line(exc: BaseException, name: str | None = None) -> str:
    """:func:`error_text` on one line (for logs and hooks): ``error: … (hint: …)``."""
    first, _, hint = error_text(exc, name).partition("\n  hint: ")
    text = first + (f" (hint: {hint})" if hint else "")
    return re.sub(r"\s*[\r\n]+\s*", " ", text)


def fail_open(fn: Callable[..., Any], *, default: Any = 0, name: str | None = None) -> Callable[..., Any]:
    """``fn`` for a hook, which must never block an agent's session: the wrapper returns
    what ``fn`` returns, and on any exception at all (a ``SystemExit`` that is not 0, a
    Ctrl-C, a bug) writes one line to stderr and returns ``default`` (0, the exit code
    that lets the session go on). Use as ``sys.exit(fail_open(main)())`` or ``@fail_open``."""
    label = name or getattr(fn, "__name__", "hook")

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                _say(f"vaultmem {label}: stopped with exit code {exc.code}; ignored, the session goes on")
        except BaseException as exc:  # noqa: BLE001 - failing open is the point
            _say(f"vaultmem {label}: {one_line(exc)}; ignored, the session goes on")
        return default

    return run


def _say(line: str) -> None:
    """One line on stderr, never an exception (a closed stderr included)."""
    try:
        line = printable(line)
        if len(line) > 2000:
            line = line[:1997] + "..."
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - a hook's last word must not fail
        pass
