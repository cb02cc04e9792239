"""A Markdown file with YAML frontmatter, held so that it writes back byte for byte.

Pure: text in, :class:`Document` out. The text is kept as its original lines (with
their own line endings) plus the BOM flag; edits insert or replace lines, so lines
nobody touched are written back exactly. The frontmatter is parsed with ruamel.yaml in
round-trip mode and re-emitted only when it changed, keeping the user's comments, key
order, quoting and flow style.

python-frontmatter is not used for vault files: it strips the document and re-emits
YAML through PyYAML, which drops comments and reformats what a human wrote, so every
write would show up in ``git diff`` as noise (see docs/design.md).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import ParseError

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def yaml_rt():
    """A ruamel.yaml round-trip loader/dumper configured for vault files."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long value onto a second line
    yaml.allow_unicode = True
    return yaml


FRONTMATTER_HINT = ("fix the properties between the '---' lines; quote values that contain ': ' "
                    "or start with '[', '{', '*' or '&'")


def _marked_error(exc, path: str, first_line: int, what: str, hint: str) -> ParseError:
    """A YAML error (ruamel's or PyYAML's: the same shape) as a ParseError naming the
    file line where the problem is, and where the construct it broke began."""
    mark = exc.problem_mark or exc.context_mark
    line = first_line + mark.line if mark is not None else first_line
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.context_mark is not None and exc.context_mark.line != getattr(mark, "line", None):
        problem += f" ({exc.context} started on line {first_line + exc.context_mark.line})"
    return ParseError(f"broken {what}: {problem}", path=path, line=line, hint=hint)


# How deep frontmatter may nest, and how many values its aliases may expand to. Obsidian's
# properties are flat and vaultmem writes two levels at most. Deeper YAML is refused before
# a parser builds it: libyaml's builder recurses in C and crashes the process (a segfault,
# no exception) at some thousands of levels — 60 KB of "[[[[" in one note took every
# command down — and ruamel's own recursion fails near 300. Anchors that refer to each
# other ("billion laughs") cost nothing to load, but every reader of the values walks
# them out: one 400-byte note took 28 s and 1.2 GB to index.
MAX_DEPTH = 100  # levels, the properties' own map the first
MAX_EXPANDED = 1_000_000  # characters that aliases may add to what the text itself holds


def _nesting_bound(text: str) -> int:
    """More than the depth ``text``'s YAML can nest to: a level opens on a new line, after
    a ``-``, ``?`` or ``:`` indicator, or at a ``[`` or ``{``, and each is counted."""
    return (text.count("\n") + text.count("-") + text.count("?") + text.count(":")
            + text.count("[") + text.count("{"))


def _refused(what: str, why: str, path: str, line: int, hint: str) -> ParseError:
    return ParseError(f"broken {what}: {why}", path=path, line=line, hint=hint)


def check_shape(text: str, path: str, first_line: int, what: str = "YAML frontmatter",
                hint: str = FRONTMATTER_HINT) -> None:
    """Raise ParseError (with the line) when ``text``'s values, aliases followed, would nest
    deeper than :data:`MAX_DEPTH` or hold more than :data:`MAX_EXPANDED` characters beyond
    the text's own, or an alias stands inside the collection it names (which never ends
    when walked). Most frontmatter is answered by a count of characters; the rest is
    walked by libyaml's event parser, which keeps its own stack (measured: 200,000
    levels, no crash) and builds nothing. A syntax error is left to the reader that
    follows, which says it in its own words."""
    if _nesting_bound(text) <= MAX_DEPTH and not ("&" in text and "*" in text):
        return
    import yaml

    flat = "keep properties flat: a value, or a list of values"
    spelled = "write the values out instead of '*' aliases"
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (characters, depth) of what it names
    open_: list[list] = [[None, 0, 0]]  # [anchor, characters, deepest child] of each open collection
    budget = MAX_EXPANDED + len(text)
    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            line = first_line + event.start_mark.line
            if isinstance(event, yaml.CollectionStartEvent):
                open_.append([event.anchor, 0, 0])
                if len(open_) > MAX_DEPTH + 1:
                    raise _refused(what, f"it nests deeper than {MAX_DEPTH} levels", path, line, flat)
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                anchor, size, deepest = open_.pop()
                size, depth = size + 1, deepest + 1
            elif isinstance(event, yaml.AliasEvent):
                if any(event.anchor == o[0] for o in open_):  # a list that holds itself: no end to it
                    raise _refused(what, f"'*{event.anchor}' stands inside what it names", path, line, spelled)
                anchor, (size, depth) = None, anchors.get(event.anchor, (1, 0))
                if len(open_) - 1 + depth > MAX_DEPTH:
                    raise _refused(what, f"its '*' aliases nest deeper than {MAX_DEPTH} levels", path, line, flat)
            elif isinstance(event, yaml.ScalarEvent):
                anchor, size, depth = event.anchor, len(event.value) + 1, 0
            else:
                continue
            if anchor:
                anchors[anchor] = (size, depth)
            parent = open_[-1]
            parent[1] += size
            parent[2] = max(parent[2], depth)
            if parent[1] > budget:
                raise _refused(what, f"its '*' aliases stand for more than {MAX_EXPANDED:,} characters", path, line,
                               spelled)
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in str(exc.problem):  # libyaml's own bound (PyYAML 6.0.4 on)
            raise _marked_error(exc, path, first_line, what, hint) from None
    except yaml.YAMLError:  # pragma: no cover - libyaml marks its syntax errors
        pass


_DAY = re.compile(r"(?<![\w-])(\d{4})-(\d{1,2})-(\d{1,2})(?![\w-])")

# What a YAML constructor may raise on a value it cannot make, beside its own errors: a
# date no calendar holds (ValueError), a number too long to read (ValueError), an unknown
# boolean or an odd timestamp under an explicit tag (KeyError, AttributeError), a \U
# escape past Unicode (OverflowError), and a nesting the shape check did not see through.
UNMAKEABLE = (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError)


def _impossible_date(text: str, first_line: int) -> tuple[int, str] | None:
    """The file line and text of the first date in ``text`` that no calendar holds
    (2025-13-45), outside comments: YAML reads such a value as a date, and it cannot be made."""
    import datetime as _dt

    for n, line in enumerate(text.split("\n")):
        for m in _DAY.finditer(line.split(" #")[0] if not line.lstrip().startswith("#") else ""):
            try:
                _dt.date(*(int(g) for g in m.groups()))
            except ValueError:
                return first_line + n, m.group(0)
    return None


def _unmade(exc: Exception, text: str, path: str, first_line: int, what: str, hint: str) -> ParseError:
    """A value the YAML reader could not make, as a ParseError: an impossible date with
    its line; anything else at the first line, in the reader's words."""
    found = _impossible_date(text, first_line) if isinstance(exc, ValueError) else None
    if found:
        return ParseError(f"broken {what}: {found[1]} is not a date ({exc})", path=path, line=found[0],
                          hint="write a real date (YYYY-MM-DD), or quote the value to keep it as text")
    why = "it nests too deep" if isinstance(exc, RecursionError) else f"a value cannot be read ({exc!r})"
    return ParseError(f"broken {what}: {why}", path=path, line=first_line, hint=hint)


def load_yaml(text: str, path: str, first_line: int, what: str = "YAML frontmatter",
              hint: str = FRONTMATTER_HINT) -> Any:
    """Parse YAML text that starts at file line ``first_line``; errors name file and line."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    check_shape(text, path, first_line, what, hint)
    try:
        return yaml_rt().load(text)
    except MarkedYAMLError as exc:
        raise _marked_error(exc, path, first_line, what, hint) from None
    except YAMLError as exc:  # pragma: no cover - ruamel raises marked errors for syntax
        raise ParseError(f"broken {what}: {exc}", path=path, line=first_line, hint=hint) from None
    except UNMAKEABLE as exc:
        raise _unmade(exc, text, path, first_line, what, hint) from None


@lru_cache(maxsize=1)
def _index_loader():
    """PyYAML's safe loader (libyaml's where there is one) — the same parser, resolver and
    value constructors — with two shortcuts for the frontmatter a build reads by the
    ten thousand (~88 → ~56 µs a note's):

    - a plain scalar's tag is remembered (``name``, ``type: decision``, ``status: active``
      recur in every note), where PyYAML tries its resolvers' patterns on each;
    - a document of maps, lists and scalars of YAML's core tags (``!!str``, ``!!int``, a
      date…) is built by one walk, calling the value constructors registered for those
      tags, where PyYAML's constructor keeps a generator per map and a table of every
      node for anchors it might meet. Anything else — a tag outside the core, a ``<<``
      merge, a key that is a list, a value that cannot be made, constructors of another
      program's for the maps, lists or text — is left to PyYAML's own constructor, from
      the start: the same values, or the same first error. A text with an ``&`` (an
      anchor, or "R&D" in a value) never takes the walk: an alias is the same object, not
      a copy.
    """
    import yaml
    from yaml.constructor import SafeConstructor
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    core = "tag:yaml.org,2002:"
    scalars = {core + name for name in ("int", "float", "bool", "null", "timestamp")}
    own = {core + name: getattr(SafeConstructor, f"construct_yaml_{name}") for name in ("str", "map", "seq")}
    tags: dict[tuple[str, tuple], str] = {}

    class Unusual(Exception):
        pass

    class IndexLoader(base):
        def resolve(self, kind, value, implicit):
            if kind is not ScalarNode or len(value) > 64:
                return base.resolve(self, kind, value, implicit)
            key = (value, implicit)
            tag = tags.get(key)
            if tag is None:
                tag = base.resolve(self, kind, value, implicit)
                if len(tags) < 20_000:
                    tags[key] = tag
            return tag

        def construct_document(self, node):
            if all(self.yaml_constructors.get(tag) is made for tag, made in own.items()):
                try:
                    return self._walk(node)
                except Exception:  # noqa: BLE001 - PyYAML's constructor gives its value or its error
                    pass
            return base.construct_document(self, node)

        def _walk(self, node):
            kind, tag = type(node), node.tag
            if kind is ScalarNode:
                if tag == core + "str":
                    return node.value
                if tag not in scalars:
                    raise Unusual
                return self.yaml_constructors[tag](self, node)
            if kind is MappingNode and tag == core + "map":
                out = {}
                for key_node, value_node in node.value:  # (a list as a key raises: PyYAML's error then)
                    out[self._walk(key_node)] = self._walk(value_node)
                return out
            if kind is SequenceNode and tag == core + "seq":
                return [self._walk(item) for item in node.value]
            raise Unusual

    return base, IndexLoader


def load_yaml_fast(text: str, path: str, first_line: int) -> Any:
    """Read-only YAML for the indexing path: PyYAML's libyaml loader, about 14× faster
    than ruamel's round trip (0.23 ms against 3.3 ms for a note's frontmatter), with
    :func:`_index_loader`'s shortcuts. The result is plain data (no comments kept), so it
    is never written back."""
    import yaml

    check_shape(text, path, first_line)
    base, fast = _index_loader()
    loader = base if "&" in text else fast
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as exc:
        raise _marked_error(exc, path, first_line, "YAML frontmatter", FRONTMATTER_HINT) from None
    except yaml.YAMLError as exc:
        raise ParseError(f"broken YAML frontmatter: {exc}", path=path, line=first_line, hint=FRONTMATTER_HINT) from None
    except UNMAKEABLE as exc:
        raise _unmade(exc, text, path, first_line, "YAML frontmatter", FRONTMATTER_HINT) from None


def dump_yaml(data: Any) -> str:
    buf = io.StringIO()
    yaml_rt().dump(data, buf)
    return buf.getvalue()


def yaml_timestamp(moment) -> Any:
    """A YAML timestamp that is written as ``2026-05-08T14:05:00Z`` (ISO 8601, UTC, whole
    seconds, unquoted: YAML reads it back as a timestamp) — the one form of every date and
    time vaultmem writes in frontmatter. ``moment``: a datetime (one without a zone is UTC, as
    YAML reads it) or its ISO 8601 text, such as :func:`plain` gives back for one read from a
    file; text that is no date and time is returned as it is."""
    import datetime as _dt

    if isinstance(moment, str):
        if ":" not in moment:  # a day (2026-05-08), or no date and time at all: kept as written
            return moment
        try:
            moment = _dt.datetime.fromisoformat(moment.strip().replace("Z", "+00:00"))
        except ValueError:
            return moment
    if not isinstance(moment, _dt.datetime):
        return moment  # a day (a date) is written as one
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    utc = moment.astimezone(_dt.timezone.utc).replace(microsecond=0, tzinfo=None)
    return yaml_rt().load(f"t: {utc.isoformat()}Z")["t"]


def split_lines(text: str) -> list[str]:
    """Split into lines that keep their endings; only '\\n' ends a line (not U+2028 etc.)."""
    parts = text.split("\n")
    lines = [x + "\n" for x in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_content(line: str) -> str:
    return line.rstrip("\r\n")


@dataclass
class Document:
    """One Markdown file: optional frontmatter (``meta``) and body lines."""

    path: str
    lines: list[str]
    bom: bool = False
    newline: str = "\n"
    body_start: int = 0  # index into lines of the first body line
    meta: Any = None  # ruamel CommentedMap, or None when the file has no frontmatter
    fm_comments: list[str] = field(default_factory=list)  # lines of a frontmatter that held only comments
    _meta_dirty: bool = field(default=False, repr=False)

    # -- reading -------------------------------------------------------------------
    def content(self, index: int) -> str:
        return line_content(self.lines[index])

    def body_lines(self) -> range:
        return range(self.body_start, len(self.lines))

    def fenced(self) -> list[bool]:
        """For each line: is it inside (or a delimiter of) a fenced code block?

        A fence opened on an indented line (inside a list item) also ends where the item
        ends — at the next non-blank line indented less than the fence — as in CommonMark,
        so an unclosed fence in one entry cannot swallow the rest of the page."""
        out = [False] * len(self.lines)
        whole = "".join(self.lines)
        if "```" not in whole and "~~~" not in whole:
            return out  # no line can open a fence
        fence: str | None = None
        indent = 0
        for i in self.body_lines():
            text = self.content(i)
            m = _FENCE.match(text)
            if fence is not None and indent and text.strip() and len(text) - len(text.lstrip()) < indent:
                fence = None  # the list item holding the fence has ended
            if fence is None and m:
                fence = m.group(1)[0] * 3
                indent = len(text) - len(text.lstrip())
                out[i] = True
            elif fence is not None:
                out[i] = True
                if m and m.group(1).startswith(fence):
                    fence = None
        return out

    # -- editing -------------------------------------------------------------------
    def set_meta(self, meta: Any) -> None:
        """Replace the frontmatter (re-emitted through ruamel, so comments survive)."""
        dumped = self.fm_comments + [line_content(x) for x in split_lines(dump_yaml(meta))]
        self.fm_comments = []
        if self.meta is None:
            head = ["---", *dumped, "---"]
            self.insert_lines(0, head)
            self.body_start = len(head)
        else:
            close = self.body_start - 1
            self.lines[1:close] = [x + self.newline for x in dumped]
            self.body_start = len(dumped) + 2
        self.meta = meta

    def insert_lines(self, index: int, new: list[str]) -> None:
        """Insert lines (given without endings) before ``lines[index]``."""
        if index > 0 and index == len(self.lines) and not self.lines[-1].endswith("\n"):
            self.lines[-1] += self.newline
        self.lines[index:index] = [x + self.newline for x in new]
        if index < self.body_start:
            self.body_start += len(new)

    def text(self) -> str:
        return ("\ufeff" if self.bom else "") + "".join(self.lines)


def parse_document(text: str, path: str, require_frontmatter: bool = True, fast: bool = False) -> Document:
    """Split ``text`` into frontmatter and body lines. Raises ParseError (with the line)
    for an unclosed or broken frontmatter, or a missing one when it is required.
    ``fast``: read-only parsing for the index (plain dicts; the document cannot be
    written back with its comments)."""
    text = text.replace("\x00", "")
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    lines = split_lines(text)
    crlf = text.count("\r\n")  # the lines that end with CRLF: only '\\n' ends a line
    newline = "\r\n" if crlf and crlf >= len(lines) / 2 else "\n"
    doc = Document(path=path, lines=lines, bom=bom, newline=newline)
    if not lines or line_content(lines[0]).rstrip() != "---":
        if require_frontmatter:
            raise ParseError(
                "the file has no frontmatter (properties between '---' lines at the top)",
                path=path,
                line=1,
                hint="start the file with a line '---', the properties, and another '---'",
            )
        return doc
    close = next((i for i in range(1, len(lines)) if line_content(lines[i]).rstrip() == "---"), None)
    if close is None:
        raise ParseError(
            "the frontmatter opened on line 1 is never closed",
            path=path,
            line=1,
            hint="add a line '---' after the last property",
        )
    fm_text = "".join(line_content(x) + "\n" for x in lines[1:close])
    meta = load_yaml_fast(fm_text, path, first_line=2) if fast else load_yaml(fm_text, path, first_line=2)
    if meta is None and fast:
        meta = {}
    if meta is None:
        from ruamel.yaml.comments import CommentedMap

        meta = CommentedMap()
        doc.fm_comments = [line_content(x) for x in lines[1:close] if line_content(x).strip()]
    if not isinstance(meta, dict):
        raise ParseError(
            f"the frontmatter is {'a list' if isinstance(meta, list) else 'plain text'}, not a set of 'key: value' properties",
            path=path,
            line=2,
            hint="write one 'key: value' per line between the '---' lines",
        )
    doc.meta = meta
    doc.body_start = close + 1
    return doc


def plain(value: Any) -> Any:
    """Convert ruamel round-trip values (CommentedMap, dates) into JSON-ready Python."""
    import datetime as _dt

    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _LONGEST_INT_BITS:
        raise ValueError("a number too long to write as text")  # str() and JSON would fail on it later
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    return str(value)


_LONGEST_INT_BITS = 14_000  # ~4,200 digits: Python writes no int of more than 4,300 as text
