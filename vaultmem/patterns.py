"""Regular expressions compiled when first used.

A module's patterns are compiled when it is imported, and a cold command pays for every
one of them — most of which a given command never runs: the secret gate's detectors
past the gate, the answer checks of a question that asks for no number or name. Such a
pattern is declared with :class:`Lazy` instead of ``re.compile``: the same arguments,
the same methods (``search``, ``finditer``, ``sub`` …), compiled on the first call.
"""

from __future__ import annotations

import re


class Lazy:
    """``re.compile(*args)``, made the first time one of its methods is used."""

    __slots__ = ("_args", "_compiled")

    def __init__(self, *args) -> None:
        self._args, self._compiled = args, None

    @property
    def ready(self) -> bool:
        """Whether it has been compiled (a caller may skip a cheaper test made only to
        spare the compilation)."""
        return self._compiled is not None

    def __getattr__(self, name: str):
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)
