"""``vaultmem mcp``'s first moments: the handshake answered before anything heavy loads.

An agent runtime does not wait for its MCP servers (Claude Code sends its first request
with the tools of the servers that have answered by then), and the MCP SDK alone takes
~0.6 s to import, the vault longer to open. So the launcher (:mod:`vaultmem.__main__`)
starts this front first, with nothing but the standard library: a thread reads stdin and
answers ``initialize``, ``ping`` and the four listings (``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list``) from ``vaultmem/data/mcp-listing.json`` —
what the SDK server answers (the same at every protocol version but for the version
itself), written down by ``python -m vaultmem.adapters.mcp_front --write-listing`` and
checked against it by the tests. Every other line waits, in order, for the SDK server
(:func:`vaultmem.adapters.mcp.serve`), which takes over once the vault is open: it is
handed the client's ``initialize`` again (under a private id, its answer dropped) and
then every line the front did not answer. A tool call thus waits for the vault, never
races it.

``VAULTMEM_MCP_FRONT=0`` turns the front off (the SDK answers everything).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading

LISTING_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "mcp-listing.json")

REPLAY_ID = "vaultmem-front-initialize"  # the id the client's initialize is handed on with
SAY_STOPPING_AFTER = 0.5  # seconds after a signal: a server held in a write says what it waits for
LISTED = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")

_current: Front | None = None


class Front:
    """The wire (private duplicates of stdin and stdout; descriptors 0 and 1 point at the
    null device and stderr meanwhile, so no child process reads or writes the protocol),
    a reader thread, and the lines it keeps for the SDK server."""

    def __init__(self, listing: dict, answers: bool = True) -> None:
        self.listing = listing
        self.wire_in = os.dup(0)
        self.wire_out = os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        self._write_lock = threading.Lock()
        self._held = threading.RLock()  # the lines kept and who takes them (a signal handler may re-enter)
        self._lines: list[str] = []
        self._ended = False  # stdin reached its end, or the server is stopping
        self._handed = not answers  # the SDK server reads the lines: the front answers no more
        self._version: str | None = None  # the protocol version the front negotiated
        self._taker = None  # who each line goes to once handed over (:meth:`hand_over`)
        self._stopping = lambda: ""  # what the server says when asked to stop (:meth:`hand_over`)
        self._signalled = False  # a signal asked the server to stop (_begin_stop)
        self._handled = 0  # the signals the handler took, when it acts alone (a second one ends it at once)
        self._counting = False  # a thread reads each signal from the wakeup pipe and acts on it (serving)
        self._beginning = threading.Lock()
        self._said = False  # what the stopping server waits for was said (:meth:`say_stopping`)
        self._saying = threading.Lock()
        self._exiting = threading.Lock()  # taken by the thread that ends the process on a second signal
        threading.Thread(target=self._read, name="vaultmem mcp front", daemon=True).start()

    # -- the wire ------------------------------------------------------------------------------
    def write(self, text: str) -> None:
        """One line on the wire (stdout)."""
        data = (text.rstrip("\n") + "\n").encode("utf-8")
        with self._write_lock:
            while data:
                data = data[os.write(self.wire_out, data):]

    def _read(self) -> None:
        wire = os.fdopen(self.wire_in, "rb", closefd=False)
        try:
            for raw in wire:
                line = raw.decode("utf-8", errors="replace")
                with self._held:
                    if self._taker is not None:
                        self._taker(line)
                    elif self._handed or not self._answer(line):
                        self._lines.append(line)
        except OSError:
            pass
        self.end()

    def _answer(self, line: str) -> bool:
        """Answer ``line`` here if it is the handshake or a listing; False: keep it for the SDK."""
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or "id" not in msg:
            return False
        method, rid, params = msg.get("method"), msg["id"], msg.get("params")
        if not isinstance(rid, (str, int)) or isinstance(rid, bool) or rid == REPLAY_ID:
            return False
        if params is not None and not isinstance(params, dict):
            return False
        if method == "initialize" and self._version is None:
            wanted = (params or {}).get("protocolVersion")
            versions = self.listing["versions"]
            if not isinstance((params or {}).get("clientInfo"), dict) or not isinstance(wanted, str):
                return False  # the SDK says what is wrong with it
            version = wanted if wanted in versions else self.listing["latest"]
            from vaultmem import __version__

            result = json.loads(json.dumps(self.listing["results"]["initialize"]))
            result["serverInfo"]["version"] = __version__
            result["protocolVersion"] = version
            self.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, ensure_ascii=False))
            self._version = version
            self._lines.append(json.dumps({**msg, "id": REPLAY_ID}, ensure_ascii=False) + "\n")
            return True
        if self._version is None or (params or {}).get("cursor") is not None:
            return False
        if method == "ping" and not params:
            self.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {}}))
            return True
        if method in LISTED and not (set(params or {}) - {"_meta"}):
            result = self.listing["results"][method]
            self.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, ensure_ascii=False))
            return True
        return False

    # -- the hand-over -------------------------------------------------------------------------
    def hand_over(self, taker, stopping) -> None:
        """From now on every line goes to ``taker(line)``, in the order the lines came —
        those kept so far at once, the rest on the reader thread as they come — and
        ``taker("")`` once at the end; the front answers no more. ``stopping()`` is what a
        server asked to stop says it waits for ("" for nothing: :meth:`say_stopping`)."""
        with self._held:
            self._handed = True
            self._stopping = stopping
            kept, self._lines = self._lines, []
            for line in kept:
                taker(line)
            self._taker = taker
            if self._ended:
                taker("")

    def end(self) -> None:
        """No more lines: stdin ended, or the server stops (a signal)."""
        with self._held:
            if self._ended:
                return
            self._ended = True
            if self._taker is not None:
                self._taker("")

    def serving(self) -> None:
        """The SDK server runs: a signal now stops it (:func:`vaultmem.adapters.mcp.serve`)
        once the calls read so far are answered; a second one ends the process at once —
        an answer the client does not read can hold the server in its write for ever."""
        self._counting = self._count_signals()  # first: no signal the handlers take goes uncounted
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._stop)

    def _count_signals(self) -> bool:
        """Python runs a signal's handler on the main thread — the event loop's, which an
        answer nobody reads can hold in a write — and only once that thread is interrupted:
        a signal the kernel hands to another thread leaves it in the write. Each signal's
        number is also written to a pipe (``signal.set_wakeup_fd``, by whichever thread
        took it), read here on a thread of its own, which acts on each SIGINT and SIGTERM:
        the first starts the stop (on a thread of its own: the stop may wait for a lock),
        the second ends the process, wherever the main thread is. False: no such thread
        (the handler acts alone)."""
        try:
            r, w = os.pipe()
        except OSError:
            return False
        try:
            os.set_blocking(w, False)
            theirs = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (OSError, ValueError, AttributeError):  # not the main thread; no such call here
            os.close(r)
            os.close(w)
            return False
        if theirs != -1:  # someone else reads signals this way: theirs stays, the handler acts alone
            signal.set_wakeup_fd(theirs)
            os.close(r)
            os.close(w)
            return False

        def count() -> None:
            stops = 0
            try:
                while data := os.read(r, 64):
                    for signum in data:
                        if signum not in (signal.SIGINT, signal.SIGTERM):
                            continue
                        stops += 1
                        if stops >= 2:
                            self._at_once(signum)
                        else:
                            threading.Thread(target=self._begin_stop, name="vaultmem mcp stopping",
                                             daemon=True).start()
            except Exception:  # noqa: BLE001 - the handler acts from now on
                pass
            self._counting = False

        try:
            threading.Thread(target=count, name="vaultmem mcp signals", daemon=True).start()
        except RuntimeError:
            signal.set_wakeup_fd(-1)
            return False
        return True

    def _at_once(self, signum: int) -> None:
        """A second signal: the process ends now, the call in progress cut short — said once,
        and only if stderr takes the line within a moment (a full pipe nobody reads would
        hold the write, and the process with it)."""
        if not self._exiting.acquire(blocking=False):
            return  # the other thread that saw it is ending the process
        with contextlib.suppress(OSError, ValueError):
            if select.select([], [2], [], 0.2)[1]:  # room for one short line: written whole, at once
                os.write(2, b"vaultmem mcp: stopped at once (a second signal): the call in progress was cut short\n")
        os._exit(128 + signum)

    def _stop(self, signum, frame) -> None:  # noqa: ARG002
        if self._counting:
            # the signals thread acts on this one too: nothing here (a thread started from a
            # handler can wait for ever on a lock the interrupted main thread holds)
            return
        self._handled += 1
        if self._handled >= 2:
            self._at_once(signum)
            return
        self._begin_stop()

    def _begin_stop(self) -> None:
        """The first signal: the server stops once the calls read are answered (started once)."""
        with self._beginning:
            if self._signalled:
                return
            self._signalled = True
        try:
            # the server says what it waits for once it takes the end (:meth:`say_stopping`);
            # if its event loop is held in a write nobody reads (stdin may have ended
            # before), it never will: said from a thread of its own then, a moment later,
            # if calls are still waiting
            later = threading.Timer(SAY_STOPPING_AFTER, self.say_stopping)
            later.daemon = True
            later.start()
        except RuntimeError:  # no thread to be had: the server stops all the same
            pass
        finally:
            self.end()

    def say_stopping(self) -> None:
        """Say, once, what a server asked to stop still waits for (the calls read and not yet
        answered: ``stopping()`` of :meth:`hand_over`; nothing when none)."""
        with self._saying:
            if self._said:
                return
            said = self._stopping()
            if not said:
                return
            self._said = True
        with contextlib.suppress(OSError):  # stderr closed or full: the server stops all the same
            os.write(2, f"vaultmem mcp: WARNING {said}\n".encode())


def _exit_at_once(signum, frame) -> None:  # noqa: ARG001
    """A signal before the SDK server runs: nothing was done yet, nothing to finish."""
    os._exit(0)


def current() -> Front | None:
    """The running front, if the launcher started one."""
    return _current


def wire() -> Front:
    """The wire for a server started without the launcher's front: the same reader, but
    the SDK server answers every line."""
    global _current
    if _current is None:
        _current = Front({}, answers=False)
    return _current


def start() -> Front | None:
    """Start the front (from the launcher, before anything else loads); None when it is off."""
    global _current
    if os.environ.get("VAULTMEM_MCP_FRONT", "1") == "0" or _current is not None:
        return _current
    if {"--help", "-h"} & set(sys.argv[1:]):  # help goes to stdout, no server starts
        return None
    try:
        with open(LISTING_FILE, encoding="utf-8") as fh:
            listing = json.load(fh)
    except (OSError, ValueError):
        return None  # the SDK answers everything, as with the front off
    try:
        os.fstat(0), os.fstat(1)
    except OSError:
        return None
    # before the reader starts: it answers the handshake at once, and a client may send a
    # signal as soon as it has the answer (a default SIGINT would print a traceback)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit_at_once)
    _current = Front(listing)
    return _current


# -- writing the listing down --------------------------------------------------------------------


def read_listing(python: str = sys.executable) -> dict:
    """What the SDK server itself answers to the handshake and the listings: a real
    ``vaultmem mcp`` (front off) on a new vault, asked at each protocol version it
    negotiates — the answers must be the same but for the version, and are kept once."""
    import subprocess
    import tempfile

    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from vaultmem.vault import Vault

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        Vault.init(os.path.join(tmp, "v"), lang="en", orchestrator="lee")
        env = {**os.environ, "VAULTMEM_MCP_FRONT": "0"}
        for version in HANDSHAKE_PROTOCOL_VERSIONS:
            requests = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": version, "capabilities": {},
                                    "clientInfo": {"name": "listing", "version": "1"}}},
                        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
            requests += [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(LISTED, 1)]
            proc = subprocess.Popen([python, "-m", "vaultmem", "mcp", "--vault", os.path.join(tmp, "v")], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
            proc.stdin.flush()
            answers: dict = {}
            while len(answers) < len(LISTED) + 1:  # stdin stays open until every answer is in
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"vaultmem mcp ended before it answered: {sorted(answers)}")
                answer = json.loads(line)
                answers[answer["id"]] = answer["result"]
            proc.stdin.close()
            proc.wait(timeout=60)
            results[version] = {"initialize": answers[0], **{m: answers[i] for i, m in enumerate(LISTED, 1)}}
            results[version]["initialize"]["serverInfo"]["version"] = ""  # vaultmem's own, set when answered
            results[version]["initialize"]["protocolVersion"] = ""  # the one negotiated, set when answered
    kept = results[LATEST_HANDSHAKE_VERSION]
    differ = [v for v, r in results.items() if r != kept]
    if differ:
        raise RuntimeError(f"the SDK answers protocol versions {differ} otherwise than {LATEST_HANDSHAKE_VERSION}: "
                           "the front would need a listing for each")
    return {"versions": list(HANDSHAKE_PROTOCOL_VERSIONS), "latest": LATEST_HANDSHAKE_VERSION, "results": kept}


def write_listing() -> str:
    from pathlib import Path

    path = Path(LISTING_FILE)
    path.write_text(json.dumps(read_listing(), ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return str(path)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-listing"]:
        print(write_listing())
    else:
        sys.exit("usage: python -m vaultmem.adapters.mcp_front --write-listing")
