"""Kill points for tests/test_kills.py, loaded only by the vaultmem subprocesses those
tests start (this folder is put on their PYTHONPATH, never on the test runner's).

Every call of os.replace, os.rename and os.unlink / os.remove is a file-system step.

- ``VAULTMEM_TEST_KILL_LOG=FILE``: append one line per step (``op<TAB>path``) to FILE
  before doing it, so that a test can count the steps a command makes.
- ``VAULTMEM_TEST_KILL_AT=OP:N``: SIGKILL this process just before its Nth call of OP
  (``replace``, ``rename``, ``unlink``, or ``any`` for all three); ``OP:N+``: just after
  that call returns. SIGKILL is a crash: no exception, no cleanup, no atexit.

Writes of per-machine caches that a command makes or skips depending on how old a file
is are not counted (in one run they happen, in the next not), so that step N is the
same step in every run of the same command.
"""

import os
import signal

_AT = os.environ.get("VAULTMEM_TEST_KILL_AT", "")
_LOG = os.environ.get("VAULTMEM_TEST_KILL_LOG", "")
_UNCOUNTED = ("config.cache", "tidy.bin")

if _AT or _LOG:
    _op, _, _n = _AT.partition(":")
    _after = _n.endswith("+")
    _target = int(_n.rstrip("+")) if _n.rstrip("+").isdigit() else 0
    _counts = {}
    _open, _write, _close, _kill, _getpid = os.open, os.write, os.close, os.kill, os.getpid

    def _die():
        _kill(_getpid(), signal.SIGKILL)

    def _step(op, path):
        """True if this call is the one to die after; dies here if it is the one to die before."""
        try:
            shown = os.fsdecode(path)
        except TypeError:
            shown = repr(path)
        if os.path.basename(shown) in _UNCOUNTED:
            return False
        if _LOG:
            fd = _open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _write(fd, f"{op}\t{shown}\n".encode("utf-8", "replace"))
            finally:
                _close(fd)
        for key in {op, "any"}:
            _counts[key] = _counts.get(key, 0) + 1
        hit = _op in (op, "any") and _counts.get(_op) == _target
        if hit and not _after:
            _die()
        return hit

    def _wrap(op, real, which, name):
        def wrapped(*args, **kwargs):
            hit = _step(op, args[which] if len(args) > which else kwargs.get(name, ""))
            result = real(*args, **kwargs)
            if hit:
                _die()
            return result

        wrapped.__name__ = real.__name__
        wrapped.__doc__ = real.__doc__
        return wrapped

    os.replace = _wrap("replace", os.replace, 1, "dst")
    os.rename = _wrap("rename", os.rename, 1, "dst")
    os.unlink = _wrap("unlink", os.unlink, 0, "path")
    os.remove = _wrap("unlink", os.remove, 0, "path")
