"""The edge every adapter answers through (vaultmem.adapters.edge): exit codes, the JSON
error shape, the text for people, failing open for hooks, and an unexpected OSError as
a clear error — all without typer, which an MCP server does not have."""

import errno
import json
import os
import subprocess
import sys

import pytest

from vaultmem.adapters import edge
from vaultmem.errors import (BadInput, Busy, GitError, NotFound, ParseError, PermissionRefused, StorageError,
                             UnsafePath, VaultmemError)


def test_the_edge_loads_neither_typer_nor_click():
    code = ("import sys; import vaultmem.adapters.edge as e; e.error_dict(OSError(28, 'x')); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize("exc,code", [
    (VaultmemError("x"), 1), (NotFound("x"), 1), (ParseError("x"), 1), (GitError("x"), 1),
    (BadInput("x"), 2), (PermissionRefused("x"), 3), (UnsafePath("x"), 3), (Busy("x"), 4),
    (StorageError("x"), 5), (OSError(errno.ENOSPC, "No space left on device"), 5),
    (KeyboardInterrupt(), 130), (SystemExit(3), 3), (SystemExit(None), 0), (SystemExit("bye"), 1),
    (RuntimeError("a bug"), 1),
])
def test_exit_codes(exc, code):
    assert edge.exit_code(exc) == code


def test_error_dict_is_the_stable_shape_with_the_librarys_field():
    exc = BadInput("is 1.5; it must be a number between 0 and 1", field="importance", hint="give 0..1")
    assert edge.error_dict(exc) == {"type": "bad_input", "message": "is 1.5; it must be a number between 0 and 1",
                                    "path": None, "line": None, "hint": "give 0..1", "field": "importance"}
    assert edge.error_dict(exc, option="--importance")["option"] == "--importance"  # an adapter's own key
    json.dumps(edge.error_dict(RuntimeError("boom")))  # anything at all becomes JSON


def test_an_unexpected_exception_is_an_internal_error_not_a_crash():
    d = edge.error_dict(ValueError("bad thing"))
    assert d["type"] == "internal_error" and "ValueError: bad thing" in d["message"] and "bug" in d["hint"]
    assert edge.error_dict(KeyboardInterrupt())["type"] == "interrupted"


def test_the_text_for_people():
    exc = ParseError("never closed", path="MEMORY.md", line=5, hint="add the end marker")
    assert edge.error_text(exc) == "error: MEMORY.md:5: never closed\n  hint: add the end marker"
    field = BadInput("is 0; it must be a positive number of tokens", field="window")
    assert edge.error_text(field) == "error: window: is 0; it must be a positive number of tokens"
    assert edge.error_text(field, "--window") == "error: --window: is 0; it must be a positive number of tokens"
    assert edge.error_text(field, "") == "error: is 0; it must be a positive number of tokens"
    # a file the message names already is not said twice; a line still is
    assert edge.error_text(NotFound("no queries file q.yaml", path="q.yaml")) == "error: no queries file q.yaml"
    assert edge.error_text(NotFound("no file q.yaml.bak", path="q.yaml")) == "error: q.yaml: no file q.yaml.bak"
    assert edge.one_line(exc) == "error: MEMORY.md:5: never closed (hint: add the end marker)"


# -- an OSError the library did not expect ------------------------------------------------------


def test_no_space_is_a_storage_error_naming_the_file():
    err = edge.from_os_error(OSError(errno.ENOSPC, "No space left on device", "/v/memories/port.md"))
    assert isinstance(err, StorageError) and err.exit_code == 5 and err.kind == "storage_error"
    assert err.message == "no space left on device while writing /v/memories/port.md"
    assert err.path == "/v/memories/port.md" and "free some space" in err.hint
    assert edge.error_text(err).startswith("error: no space left on device while writing /v/memories/port.md\n")


@pytest.mark.skipif(not hasattr(errno, "EDQUOT"), reason="no disk quotas here")
def test_a_quota_is_a_storage_error():
    err = edge.as_error(OSError(errno.EDQUOT, "Disk quota exceeded", "/v/x.md"))
    assert isinstance(err, StorageError) and err.message == "disk quota exceeded while writing /v/x.md"


def test_other_failed_writes_are_storage_errors_with_the_systems_reason():
    err = edge.from_os_error(OSError(errno.EROFS, "Read-only file system", "/v/x.md"))
    assert isinstance(err, StorageError) and err.message == "cannot write /v/x.md: Read-only file system"
    err = edge.from_os_error(PermissionError(errno.EACCES, "Permission denied", "/v/x.md"), writing=True)
    assert isinstance(err, StorageError) and err.message == "cannot write /v/x.md: Permission denied"
    err = edge.from_os_error(OSError(errno.EIO, "Input/output error"), writing=True, path="/v/y.md")
    assert err.message == "cannot write /v/y.md: Input/output error" and err.path == "/v/y.md"


def test_an_oserror_that_is_not_a_write_is_a_plain_error():
    err = edge.as_error(PermissionError(errno.EACCES, "Permission denied", "/v/x.md"))
    assert type(err) is VaultmemError and err.exit_code == 1
    assert err.message == "cannot access /v/x.md: Permission denied"
    assert edge.as_error(OSError(errno.EMFILE, "Too many open files")).message == "Too many open files"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_real_full_device():
    try:
        with open("/dev/full", "w") as fh:
            fh.write("x")
    except OSError as exc:
        err = edge.as_error(exc)
    assert isinstance(err, StorageError) and edge.exit_code(err) == 5
    assert err.message.startswith("no space left on device")


# -- failing open, for hooks ---------------------------------------------------------------------


def test_fail_open_returns_what_the_hook_returns():
    assert edge.fail_open(lambda x: x * 2)(21) == 42


@pytest.mark.parametrize("exc", [RuntimeError("boom\nsecond line"), BadInput("bad", field="task"), OSError(5, "io"),
                                 KeyboardInterrupt(), SystemExit(2)])
def test_fail_open_turns_any_exception_into_one_line_and_zero(exc, capsys):
    def hook():
        raise exc

    assert edge.fail_open(hook)() == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vaultmem hook: ") and "session goes on" in err


def test_fail_open_says_nothing_for_a_clean_exit(capsys):
    def done():
        raise SystemExit(0)

    assert edge.fail_open(done, default="ok")() == "ok"
    assert capsys.readouterr().err == ""


def test_fail_open_survives_a_closed_stderr(monkeypatch):
    class Closed:
        def write(self, _):
            raise ValueError("I/O operation on closed file")

    monkeypatch.setattr(sys, "stderr", Closed())
    assert edge.fail_open(lambda: 1 / 0)() == 0


HOOK = """
import sys
from vaultmem.adapters.edge import fail_open
from vaultmem.errors import Busy

@fail_open
def session_start():
    raise Busy("another vaultmem process has been writing this vault for 10s", hint="retry")

sys.exit(session_start())
"""


def test_a_failing_hook_exits_0_with_one_line_on_stderr():
    r = subprocess.run([sys.executable, "-c", HOOK], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr == ("vaultmem session_start: error: another vaultmem process has been writing this vault "
                        "for 10s (hint: retry); ignored, the session goes on\n")
