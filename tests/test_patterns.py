"""Patterns compiled when first used (vaultmem.patterns): the same answers as re.compile."""

import re
import subprocess
import sys

from vaultmem.patterns import Lazy


def test_a_lazy_pattern_compiles_on_first_use_and_answers_as_the_compiled_one():
    lazy = Lazy(r"(?P<w>[a-z]+)(\d+)", re.I)
    assert lazy._compiled is None
    real = re.compile(r"(?P<w>[a-z]+)(\d+)", re.I)
    text = "abc12 DEF3 -- x9y"
    assert lazy.search(text).group("w") == real.search(text).group("w") == "abc"
    assert lazy._compiled is not None
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.sub("#", text) == real.sub("#", text)
    assert lazy.split(text) == real.split(text)
    assert lazy.flags == real.flags and lazy.pattern == real.pattern


def test_importing_the_guard_compiles_only_the_gates_patterns():
    """A cold command that writes imports the guard; only what the gate runs on every text
    is compiled then, the detectors' patterns when a text needs them."""
    code = ("import vaultmem.guard as g; "
            "print(g._URL._compiled is None, g._PREFIXED_KEY._compiled is None, g._INSTRUCTION._compiled is None); "
            "print(g.scrub('token: ghp_' + 'x1' * 18, 'text', b'k')[0].count('redacted')); "
            "print(g._PREFIXED_KEY._compiled is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "True", "1", "True"]
