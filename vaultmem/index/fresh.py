"""Before a search or brief answers: the index brought up to date — at once, or, in a
long-lived process that follows the vault's file events, beside the answer's own work
(:class:`Freshness`, the part of :class:`.store.IndexStore` that decides what to re-read
before an answer and whether the answer stands)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from .. import layout
from ..errors import Busy, from_os_error
from .build import current_generation


def _stands() -> bool:
    """The answer stands: the index was brought up to date before it was made."""
    return True


class Freshness:
    """Mixed into :class:`.store.IndexStore`: uses its ``refresh``, ``base``, ``vouched``
    and ``_pinned``."""

    def live(self) -> str | None:
        """The live generation's name (None: none). While an answer that follows file events
        is made (:meth:`ready_to_answer` until its ``settle``), on its thread: the one its
        stamp read as it began — its end reads the stamp again, and the answer is made again
        when the generation moved meanwhile; the engine and the problems of one answer are
        then of one generation, read once (each read is five system calls)."""
        pinned = self._pinned
        if pinned is not None and pinned[0] == threading.get_ident():
            return pinned[1]
        return current_generation(self.base)

    def ready_to_answer(self, written: set[str], changes, watched) -> Callable[[], bool]:
        """Before answering a search or brief: refresh stale entries — unless a watcher is
        keeping up (``watched()``: alive, nothing waiting), or another process is indexing
        right now, or the index cannot be written (then answer from the index as it is).
        ``written``: files this process changed, indexed first (and cleared). ``changes``:
        a long-lived process's record of what changed (``ask()`` a question of what changed
        since its last; ``changed(question)`` its answer — the paths, or None when it cannot
        vouch for them; ``unsure()``: the next call must walk), or None.

        Returns ``settle``, to call once the answer is made. Without ``changes`` the index
        is brought up to date here and ``settle()`` is always True. With them, the question
        is asked here and its answer awaited in ``settle()``, so that the wait for it runs
        beside the answer's own work: ``settle()`` re-reads what changed before the question
        and returns False when that changed the index — the answer must then be made again
        (True: it stands)."""
        vouched, self.vouched = self.vouched, False
        try:
            if written:
                vouched = not self.refresh(paths=sorted(written), wait=0).skipped and vouched
                written.clear()
            if changes is None:
                if not vouched and not watched():
                    self.refresh(wait=0)
                return _stands
        except Busy:
            if changes is not None:
                changes.unsure()
            return _stands  # the index cannot be written right now: answer from it as it is
        except OSError as exc:  # a full disk: the index cannot be brought up to date
            if changes is not None:
                changes.unsure()
            raise from_os_error(exc, path=layout.INDEX_DIR, writing=True) from None
        except BaseException:
            if changes is not None:
                changes.unsure()
            raise
        before = self._stamp()
        question = changes.ask()
        self._pinned = (threading.get_ident(), before[0])
        return lambda: self._settle(changes, question, watched, before)

    def _stamp(self) -> tuple:
        """What moves whenever anyone — this process or another — changes what the index
        holds: the live generation and its manifest's two files (a merge of segments
        leaves them as they are)."""
        gen = current_generation(self.base)
        out: list = [gen]
        for name in ("manifest.json", "manifest.journal") if gen else ():
            try:
                st = os.stat(self.base / gen / name)
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)

    def _settle(self, changes, question, watched, before: tuple) -> bool:
        """:meth:`ready_to_answer`'s second half: what changed before ``question`` was
        asked, re-read; False when the index changed since ``before`` (its :meth:`_stamp`
        as the answer began) — by this refresh, or by another process's (a watcher, a
        hook) that indexed a change made before the call while the answer was being
        made: the answer is made again."""
        self._pinned = None  # what follows, and an answer made again, read the live generation anew
        try:
            changed = changes.changed(question)
            if changed != [] and not watched():
                report = self.refresh(paths=changed, wait=0)  # None: the whole vault walked
                if report.skipped:
                    changes.unsure()
            return self._stamp() == before
        except Busy:
            changes.unsure()
            return True  # the index cannot be written right now: the answer from it as it is
        except OSError as exc:
            changes.unsure()
            raise from_os_error(exc, path=layout.INDEX_DIR, writing=True) from None
        except BaseException:
            changes.unsure()
            raise
