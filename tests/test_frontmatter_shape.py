"""Frontmatter that would take a process down is refused with its file and line, and the
rest of the vault is still read (vaultmem/parse/document.py: ``check_shape``).

Before, one note pulled into a vault could stop every command that reads it:
- YAML nested thousands deep: libyaml's builder recursed in C until the process died of a
  segfault (60 KB of ``[`` did it), ruamel's recursion failed near 300 levels;
- an alias inside the list it names: every walk of the values recursed without end;
- anchors that refer to each other ("billion laughs"): 400 bytes took 28 s and 1.2 GB;
- a date no calendar holds (``created: 2025-13-45``): a ValueError out of every read.

The hostile notes are read by real ``vaultmem`` processes: a crash there fails the test
instead of the test run."""

from __future__ import annotations

import pytest
from conftest import out_json, run_vaultmem

from vaultmem.errors import ParseError
from vaultmem.parse.document import MAX_DEPTH, MAX_EXPANDED, check_shape, load_yaml, load_yaml_fast

LAUGHS = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i else 'x'] * 9)}]\n" for i in range(9))

HOSTILE = {  # file → (frontmatter after its name, the line named, what the message says)
    # (PyYAML 6.0.4's libyaml stops a flow nested past 1,000 itself: "exceeded maximum nesting depth")
    "flow.md": ("v: " + "[" * 30_000 + "]" * 30_000 + "\n", 3, "nest"),
    "seq.md": ("v:\n  " + "- " * 100_000 + "x\n", 4, f"nests deeper than {MAX_DEPTH} levels"),
    "block.md": ("".join(" " * i + "k:\n" for i in range(150)) + " " * 150 + "v\n", 3 + MAX_DEPTH,
                 f"nests deeper than {MAX_DEPTH} levels"),
    "loop.md": ("v: &a [1, *a]\n", 3, "'*a' stands inside what it names"),
    "laughs.md": (LAUGHS, range(3, 12), f"stand for more than {MAX_EXPANDED:,} characters"),
    # few values, each long: 60 KB that aliases make 200 MB of
    "long.md": ("s: &s " + "x" * 40_000 + "\nv: [" + ", ".join(["*s"] * 5000) + "]\n", 4, "characters"),
    # each anchor 98 deep around the one before: shallow text, values ~600 deep
    "chain.md": ("a0: &a0 x\n" + "".join(f"a{k}: &a{k} {'[' * 98}*a{k - 1}{']' * 98}\n" for k in range(1, 7)), 5,
                 f"aliases nest deeper than {MAX_DEPTH} levels"),
    "bool.md": ("w: !!bool maybe\n", 2, "a value cannot be read"),
    "hexint.md": ("w: 0x" + "f" * 5000 + "\n", None, "a number too long to write as text"),
}


def note(name: str, frontmatter: str, body: str) -> str:
    return f"---\nname: {name}\n{frontmatter}---\n{body}\n"


@pytest.fixture
def hostile(vault):
    mem = vault.root / "memories"
    for file, (fm, _line, _what) in HOSTILE.items():
        (mem / file).write_text(note(file, fm, "hostile shape"), encoding="utf-8")
    (mem / "date.md").write_text(note("bad day", "created: 2025-13-45\n", "the release slipped"), encoding="utf-8")
    (mem / "port.md").write_text(note("port", "tags: [backend]\n", "the gateway port is 8080"), encoding="utf-8")
    return vault


def test_a_build_and_a_search_name_each_hostile_note_and_read_the_rest(hostile):
    root = hostile.root
    r = run_vaultmem("--vault", root, "--json", "index", "--rebuild", timeout=120)
    assert r.returncode == 0, r.stderr  # no segfault (-11), no traceback
    problems = {p["path"]: p for p in out_json(r)["problems"]}
    for file, (_fm, line, what) in HOSTILE.items():
        got = problems[f"memories/{file}"]
        assert what in got["message"] and ("broken YAML frontmatter" in got["message"] or line is None), got
        assert got["line"] in line if isinstance(line, range) else got["line"] == line
    day = problems["memories/date.md"]
    assert (day["line"], "2025-13-45 is not a date" in day["message"]) == (3, True) and day["hint"]

    r = run_vaultmem("--vault", root, "search", "gateway port")
    assert r.returncode == 0 and "memories/port.md" in r.stdout  # the rest of the vault is searched
    named = [line for line in r.stderr.splitlines() if line.startswith("warning: memories/")]
    assert len(named) == len(HOSTILE) + 1  # one line for each file that was not read

    (root / "memories" / "date.md").write_text(note("bad day", "created: 2025-12-01\n", "the release slipped"),
                                               encoding="utf-8")
    r = run_vaultmem("--vault", root, "--json", "search", "release slipped")
    assert [h["path"] for h in out_json(r)["hits"]][:1] == ["memories/date.md"]  # fixed by hand: read again


def test_ruamels_reads_refuse_the_same_shapes_with_their_line():
    """What vaultmem edits it reads with ruamel: the same refusals, with the line."""
    with pytest.raises(ParseError) as err:
        load_yaml("name: x\ncreated: 2025-13-45\n", "memories/x.md", first_line=2)
    assert (err.value.line, "2025-13-45 is not a date" in err.value.message) == (3, True)
    with pytest.raises(ParseError) as err:
        load_yaml("name: x\nv: " + "[" * 400 + "]" * 400 + "\n", "memories/x.md", first_line=2)
    assert err.value.line == 3 and "nests deeper" in err.value.message  # not a RecursionError
    with pytest.raises(ParseError, match="stands inside"):
        load_yaml("v: &a [1, *a]\n", "memories/x.md", first_line=2)
    with pytest.raises(ParseError) as err:  # the date in a comment above is no value
        load_yaml("# from 2024-02-30\nwhen: 2025-02-29\n", "memories/x.md", first_line=2)
    assert (err.value.line, "2025-02-29 is not a date" in err.value.message) == (3, True)
    for value in ("!!bool maybe", '"\\UFFFFFFFF"', "2025-01-01T25:00:00Z"):  # no traceback, the file named
        with pytest.raises(ParseError, match="broken YAML frontmatter"):
            load_yaml(f"w: {value}\n", "memories/x.md", first_line=2)
    dotted = "a: &x.1 v\nb: *x.1\n" + "".join(f"c{n}: 1\n" for n in range(60))  # libyaml refuses the name
    assert load_yaml(dotted, "x.md", 2)["b"] == "v"  # ruamel's reading stands


def test_the_shapes_a_vault_holds_are_read_whole():
    """Big but flat frontmatter, nesting to the limit and aliases that expand a little are
    read as before: the checks refuse only what no vault needs."""
    tags = "tags:\n" + "".join(f"- tag{n}\n" for n in range(3000))
    assert len(load_yaml_fast("name: many\n" + tags, "m.md", 2)["tags"]) == 3000
    assert len(load_yaml("name: many\n" + tags, "m.md", 2)["tags"]) == 3000
    levels = MAX_DEPTH - 1  # under the properties' own map
    deep = "v: " + "[" * levels + "1" + "]" * levels + "\n"
    check_shape(deep, "m.md", 2)  # at the limit: read
    value = load_yaml_fast(deep, "m.md", 2)["v"]
    for _ in range(levels - 1):
        (value,) = value
    assert value == [1]
    shared = "base: &base [a, b, c]\none: *base\ntwo: *base\nwhen: 2025-12-01\n"
    data = load_yaml_fast(shared, "m.md", 2)
    assert data["one"] == data["two"] == ["a", "b", "c"] and str(data["when"]) == "2025-12-01"
    with pytest.raises(ParseError, match="nests deeper"):
        check_shape("v: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n", "m.md", 2)


# Every form frontmatter may take, read by the index's loader (its remembered tags and its
# one-walk constructor) and by PyYAML's own safe loader: the same values, or the same error.
FORMS = [
    "name: plain\ntype: decision\nstatus: active\n",
    "n: 12\nh: 0x1F\no: 0o17\nb: 0b101\nu: 1_000\ns: 1:30\nf: 1.5e3\ninf: .inf\nnan: .nan\nneg: -0.0\n",
    "t: yes\nf: No\no: on\nx: off\nn: ~\ne:\nN: Null\n",
    "d: 2025-05-28\nt: 2025-05-28T10:00:00Z\nz: 2025-05-28 10:00:00.5 +08:00\nl: 2025-5-8\n",
    "tags: [a, b, 'c d']\naliases:\n- \"x\"\n- y\nnested: {k: [1, {m: n}], j: null}\n",
    "q: '12'\nd: \"2025-05-28\"\nlit: |\n  two\n  lines\nfold: >\n  folded\n  text\n",
    "名字: 前端审查\n标签: [性能, 审查]\n",
    "base: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n",  # an anchor and a merge: PyYAML's constructor
    "m:\n  <<: {x: 1}\n  y: 2\n",  # a merge without an anchor
    "s: !!str 123\ni: !!int '7'\nf: !!float '2'\n",
    "set: !!set {a, b}\nomap: !!omap [a: 1, b: 2]\nbin: !!binary aGk=\n",
    "? [a, b]\n: complex key\n",
    "=: a value key\n",
    "v: =\n",
    "x: !custom 1\n",
    "d: 2025-13-45\n",
    # two faults: the first PyYAML meets is the one named (it makes a map before what it holds)
    "a:\n  b: 2025-13-45\nc: !x 1\n",
    "? [2025-13-45]\n: v\n",
    "a: [2025-13-45]\n<<: 1\n",
    "1: one\n2.5: float key\ntrue: bool key\n~: null key\n2025-01-01: date key\n",
    "dup: 1\ndup: 2\n",
    "",
    "just text\n",
    "- a list\n- at the top\n",
]


@pytest.mark.parametrize("form", FORMS)
def test_index_loader_reads_what_pyyaml_reads(form):
    import yaml

    from vaultmem.parse.document import UNMAKEABLE

    def read(fn):
        try:
            return repr(fn())  # repr: a NaN is equal to itself only so
        except (ParseError, yaml.YAMLError, *UNMAKEABLE) as exc:
            return f"{type(exc).__name__}: {getattr(exc, 'message', None) or getattr(exc, 'problem', None) or exc}"

    ours = read(lambda: load_yaml_fast(form, "n.md", 2))
    theirs = read(lambda: yaml.load(form, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))  # noqa: S506
    if theirs.startswith("ConstructorError"):  # ours names the file's line: the same fault, in the same words
        assert ours.startswith("ParseError") and theirs.split(": ", 1)[1] in ours, (form, ours, theirs)
    elif theirs.startswith("ValueError"):  # (a date no calendar holds: the reader's own words, no line)
        assert ours.startswith("ParseError: broken YAML frontmatter: 2025-13-45 is not a date"), (form, ours)
    else:
        assert ours == theirs, form
    assert read(lambda: load_yaml_fast(form, "n.md", 2)) == ours  # read again: from the remembered tags


@pytest.mark.parametrize("name", ["timestamp", "str", "int"])
def test_index_loader_uses_the_constructors_a_program_registered(monkeypatch, name):
    # a program that embeds vaultmem and registers its own constructor for a core tag gets
    # what PyYAML would give it, walk or no walk
    import yaml
    from yaml.constructor import SafeConstructor

    tag = f"tag:yaml.org,2002:{name}"
    mine = SafeConstructor.yaml_constructors[tag]
    monkeypatch.setitem(SafeConstructor.yaml_constructors, tag, lambda loader, node: ("mine", mine(loader, node)))
    form = "d: 2025-05-28\nname: x\nn: 7\nm: {k: [v, 1]}\n"
    assert load_yaml_fast(form, "n.md", 2) == yaml.load(form, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
