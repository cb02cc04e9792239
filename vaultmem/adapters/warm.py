"""The warm path: a hook answered by the ``vaultmem mcp`` already running for its vault.

A hook is a new process each time: Python starts, the vault is opened and its index
checked for freshness before the hook's own work begins. The MCP server of the same
Claude Code session has all of that open and kept fresh. So the server also listens on a
Unix socket, ``.vaultmem/local/warm/<pid>.sock``, and a hook asks it first
(docs/hooks.md, "The warm path"):

1. the hook sends one line: its event, options, payload and the environment it reads;
2. the server answers ``{"ready": true}`` once the hook may run (it holds the server's
   lock: one call at a time, tools and hooks alike), or ``{"declined": why}`` — another
   vault, or busy for longer than :data:`LOCK_WAIT`;
3. the hook answers ``{"go": true}`` and then waits for what the hook prints. A hook that
   did not hear "ready" within :data:`READY_WAIT` closes the socket and runs cold; the
   server, reading no "go", does nothing — a hook never runs twice.

Who may talk: the folder is the user's own (0700), the socket 0600, and each side checks
the other — the server that the connecting process is the same user (``SO_PEERCRED``), the
hook that the socket file is the user's own before it connects (a socket planted by
someone else is never asked, since what it answers goes into the agent's context). Linux
only: elsewhere there is no warm path and every hook runs cold, as before.

Standard library only: a hook imports this before anything else of vaultmem.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import struct
import threading
import time
from pathlib import Path
from typing import Callable

WARM_DIR = ".vaultmem/local/warm"  # as layout.LOCAL_DIR + "/warm" (layout is not imported by a hook)
CONNECT_WAIT = 0.25  # seconds to connect to a socket
READY_WAIT = 2.0  # seconds a hook waits for "ready" before it runs cold
LOCK_WAIT = 1.0  # seconds the server waits for its lock (a tool call in progress) before declining
GO_WAIT = 1.0  # seconds the server waits for "go" after "ready"
REQUEST_WAIT = 5.0  # seconds the server waits for a request's line
MAX_LINE = 32 * 1024 * 1024  # a request: a payload of at most 16 MB, escaped
SUPPORTED = hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED")
MAX_PATH = 100  # AF_UNIX paths are cut at 108 bytes: a longer one is reached through its folder's fd


class Declined(Exception):
    """The server leaves this hook to the cold path (``str(exc)`` says why)."""


# -- the hook's side --------------------------------------------------------------------------


def sockets(root: Path) -> list[Path]:
    """The sockets of servers for the vault at ``root`` that a hook may ask: in the
    user's own folder, each a socket the user owns; the newest first."""
    folder = Path(root) / WARM_DIR
    try:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return []
        found = []
        for entry in os.scandir(folder):
            if not entry.name.endswith(".sock"):
                continue
            est = entry.stat(follow_symlinks=False)
            if stat.S_ISSOCK(est.st_mode) and est.st_uid == os.getuid():
                found.append((est.st_mtime_ns, Path(entry.path)))
    except OSError:
        return []
    return [p for _m, p in sorted(found, reverse=True)]


def ask(root: Path, request: dict, ready_wait: float = READY_WAIT) -> dict | None:
    """What a warm server for the vault at ``root`` printed for ``request`` (``stdout``,
    ``stderr`` — a list of lines — and ``code``), or None: no server, none ready in time,
    or one that went away before answering. Then the hook runs cold."""
    if not SUPPORTED:
        return None
    line = (json.dumps(request, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
    for path in sockets(root):
        try:
            conn = _connect(path)
        except ConnectionRefusedError:  # its server is gone: the socket file is left over
            _remove(path)
            continue
        except OSError:
            continue
        with conn:
            try:
                if _peer_uid(conn) != os.getuid():
                    continue  # a socket served by someone else: what it says would reach the agent
                conn.sendall(line)
                conn.settimeout(ready_wait)
                reader = conn.makefile("rb")
                first = _message(reader.readline(MAX_LINE))
                if _printed(first):  # it ended before acting (a payload it refused): its word
                    return first
                if not first.get("ready"):
                    continue  # another vault's, or busy: the next server, else cold
                conn.sendall(b'{"go": true}\n')
            except (OSError, ValueError):  # gone before "go": nothing was done, the hook runs cold
                return None
            try:
                conn.settimeout(None)  # the hook's own timeout (Claude Code's) bounds this wait
                answer = _message(reader.readline(MAX_LINE))
            except (OSError, ValueError):
                answer = {}
            if _printed(answer):
                return answer
            # after "go" the server may have done some or all of it: never run it again here
            return {"stdout": "", "stderr": [GONE], "code": 0}
    return None


GONE = ("vaultmem hook: the vaultmem mcp that took this hook ended before it answered; what it had done "
        "stays done, the rest is not run again (the session goes on)")


def _peer_uid(conn: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket."""
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
    return uid


def _printed(message: dict) -> bool:
    return isinstance(message.get("stdout"), str) and isinstance(message.get("stderr"), list)


def _connect(path: Path) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_WAIT)
    try:
        _at(path, conn.connect)
    except BaseException:
        conn.close()
        raise
    return conn


def _at(path: Path, call: Callable[[str], None]) -> None:
    """``call(address)`` for the socket at ``path``: the path itself, or — past what
    AF_UNIX takes — the same file through its folder's descriptor (``/proc/self/fd``)."""
    text = os.fsencode(str(path))
    if len(text) <= MAX_PATH:
        call(str(path))
        return
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        call(f"/proc/self/fd/{fd}/{path.name}")
    finally:
        os.close(fd)


def _message(raw: bytes) -> dict:
    if not raw:
        raise ValueError("the other side closed")
    value = json.loads(raw.decode("utf-8", "surrogatepass"))
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _remove(path: Path) -> None:
    try:
        st = os.lstat(path)
        if stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid():
            os.unlink(path)
    except OSError:
        pass


# -- the server's side ------------------------------------------------------------------------


Handler = Callable[[dict, Callable[[], bool]], dict]


class WarmServer:
    """Listens at ``<root>/.vaultmem/local/warm/<pid>.sock`` while a long-lived process
    (``vaultmem mcp``) has the vault open. ``handler(request, ready)`` answers one hook:
    it calls ``ready()`` once it may act — False means the hook went cold, so it must not
    act (raise :class:`Declined`) — and returns what the hook prints."""

    def __init__(self, root: Path, handler: Handler) -> None:
        self.root = Path(root)
        self.handler = handler
        self.path = self.root / WARM_DIR / f"{os.getpid()}.sock"
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str | None:
        """Start listening; None, or why not (no warm path on this system, a folder that
        is not the user's own, …): hooks then run cold."""
        if not SUPPORTED:
            return "Unix sockets with peer credentials are not available here"
        from .. import files

        # made under another name and moved into place once it is the user's alone and
        # listening: a hook never finds it, nor connects to it, in between
        made, sock = self.path.with_name(f".{self.path.name}.new"), None
        try:
            local = files.own_folder(self.root, files.LOCAL_DIR)
            local.mkdir(parents=True, exist_ok=True)
            files.ensure_gitignore(local, files.LOCAL_IGNORE)
            folder = files.own_folder(self.root, WARM_DIR)
            folder.mkdir(mode=0o700, exist_ok=True)
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                return f"{folder} is not a folder of this user's own"
            os.chmod(folder, 0o700)
            for old in (self.path, made):  # a server of this pid before (a pid is reused)
                _remove(old)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            _at(made, sock.bind)  # in a folder only this user enters (0700)
            os.chmod(made, 0o600)
            sock.listen(16)
            os.rename(made, self.path)
        except Exception as exc:  # noqa: BLE001 - no warm path: the hooks run cold
            if sock is not None:
                _remove(made)
                sock.close()
            return f"cannot listen at {self.path}: {exc}"
        self._sock = sock
        self._thread = threading.Thread(target=self._accept, name="vaultmem-warm", daemon=True)
        self._thread.start()
        return None

    def stop(self) -> None:
        """Stop listening and remove the socket file."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        _remove(self.path)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()

    def _accept(self) -> None:
        while self._sock is not None:
            try:
                conn, _addr = self._sock.accept()
            except OSError as exc:
                if self._sock is None or exc.errno in (errno.EBADF, errno.EINVAL):
                    return
                time.sleep(0.05)  # out of descriptors, say: not a busy loop
                continue
            threading.Thread(target=self._serve, args=(conn,), name="vaultmem-warm-hook", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                if _peer_uid(conn) != os.getuid():
                    return  # another user: not a word
                conn.settimeout(REQUEST_WAIT)
                reader = conn.makefile("rb")
                request = _message(reader.readline(MAX_LINE))

                def ready() -> bool:
                    try:
                        conn.sendall(b'{"ready": true}\n')
                        conn.settimeout(GO_WAIT)
                        return _message(reader.readline(64)).get("go") is True
                    except (OSError, ValueError):
                        return False

                try:
                    answer = self.handler(request, ready)
                except Declined as exc:
                    answer = {"declined": str(exc)}
                conn.settimeout(REQUEST_WAIT)
                conn.sendall((json.dumps(answer, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass"))
            except (OSError, ValueError):
                return  # the hook went away: it runs cold, or already has
