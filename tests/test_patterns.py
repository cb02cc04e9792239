"""Patterns compiled when first used (vaultmem.patterns): the same answers as re.compile."""

import re
import subprocess
import sys

from vaultmem.patterns import Lazy


def test_a_lazy_pattern_compiles_on_first_use_and_answers_as_the_compiled_one():
    lazy = Lazy(r"(?P<w>[a-z]+)(\d+)", re.I)
    assert lazy._compiled is None and not lazy.ready
    real = re.compile(r"(?P<w>[a-z]+)(\d+)", re.I)
    text = "abc12 DEF3 -- x9y"
    assert lazy.search(text).group("w") == real.search(text).group("w") == "abc"
    assert lazy._compiled is not None and lazy.ready
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.sub("#", text) == real.sub("#", text)
    assert lazy.split(text) == real.split(text)
    assert lazy.flags == real.flags and lazy.pattern == real.pattern


def test_importing_the_guard_compiles_only_the_gates_patterns():
    """A cold command that writes imports the guard; only what the gate runs on every text
    is compiled then, the detectors' patterns when a text needs them."""
    code = ("import vaultmem.guard as g\n"
            "from vaultmem.patterns import Lazy\n"
            "lazy = [v for v in vars(g).values() if isinstance(v, Lazy)]\n"
            "lazy += [v for d in vars(g).values() if isinstance(d, dict) for v in d.values() if isinstance(v, Lazy)]\n"
            "print(len(lazy), sum(v._compiled is None for v in lazy))\n"
            "import re; print(*sorted(k for k, v in vars(g).items() if isinstance(v, re.Pattern)))\n"
            "print(g.scrub('token: ghp_' + 'x1' * 18, 'text', b'k')[0].count('redacted'))\n"
            "print(g._PREFIXED_KEY._compiled is not None)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    counts, eager, found, compiled = run.stdout.splitlines()
    assert eager.split() == ["PLACEHOLDER", "_GATE", "_OWN_ID"]  # the gate's, and the placeholder others hand to re
    total, uncompiled = map(int, counts.split())
    assert total >= 20 and uncompiled == total  # every detector's pattern waits for its first use
    assert found == "1" and compiled == "True"
