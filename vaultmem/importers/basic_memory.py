"""basic-memory: a folder of Markdown notes, observations and relations kept as text and links."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import notes
from ..errors import BadInput, NotFound
from ..parse.wikilink import LINK
from .base import (FENCE, Folder, Found, HASHTAG, HEADING, OBSERVATION, RELATION, Read, Source, blocks, read_document,
                   register, tags_of, vault_type)


# -- basic-memory -----------------------------------------------------------------------------
def read_basic_memory(path: Path | None, types: tuple[str, ...], vault_root: Path | None = None) -> Read:
    """A project folder of notes: each observation one item (its category the type, its
    ``#tags`` tags, the text as written); a note's relations one item of links; the rest
    of its text one item per paragraph. All third-party: a document, until a human reads it."""
    if path is None:
        raise BadInput("give the basic-memory project folder", field="path",
                       hint="vaultmem import basic-memory ~/basic-memory")
    top = Path(path).expanduser()
    if not top.is_dir():
        raise NotFound(f"{top} is not a folder", path=str(top), hint="give the basic-memory project folder")
    real = Path(os.path.realpath(top))
    out = Read(str(real))
    vault = Path(os.path.realpath(vault_root)) if vault_root is not None else None
    if vault is not None and (real == vault or vault in real.parents):
        raise BadInput(f"{top} is inside the vault {vault}: its notes are this vault's own", field="path",
                       hint="give the basic-memory project folder")
    if vault is not None and real in vault.parents:
        out.notes.append(f"the vault itself ({vault}) is not read")
    folder = Folder(top, out.problems, skip=vault)
    count = 0
    for note in folder.markdown(folder.root):
        count += 1
        doc = read_document(folder, note, out.problems)
        if doc is None:
            continue
        _basic_note(doc, note, note.relative_to(folder.root).as_posix(), types, out)
    if not count:
        raise NotFound(f"no Markdown notes in {top}", path=str(top), hint="give the basic-memory project folder")
    return out


def _basic_note(doc, note: Path, rel: str, types: tuple[str, ...], out: Read) -> None:
    meta = doc.meta if isinstance(doc.meta, dict) else {}
    title = str(meta.get("title") or note.stem).strip()
    note_tags = tags_of(meta.get("tags"))
    body = [x.rstrip("\n") for x in doc.lines[doc.body_start:]]
    first = doc.body_start + 1
    relations: list[tuple[int, str]] = []
    rest: list[str] = []
    fence = None
    for i, line in enumerate(body):
        n = first + i
        m = FENCE.match(line)
        if fence is not None or m:
            if fence is None:
                fence = m.group(1)
            elif m and m.group(1) == fence:
                fence = None
            rest.append(line)
            continue
        obs = OBSERVATION.match(line)
        if obs and obs.group(1).strip() not in ("", "x", "X") and not line.lstrip()[2:].startswith("[["):
            category, content = obs.group(1).strip(), _unlinked(obs.group(2).strip())
            tags = tags_of(["basic-memory", category, *HASHTAG.findall(content), *note_tags])
            out.found.append(Found(str(note), n, content, vault_type(category, types), "third_party",
                                   f"{rel}#{category}", author="basic-memory",
                                   description=notes.shorten(f"{title}: {content}", 120), tags=tags))
            rest.append("")
            continue
        rel_m = RELATION.match(line)
        if rel_m:
            relations.append((n, _unlinked(f"- {rel_m.group(1).strip()} [[{rel_m.group(2).strip()}]]"
                                           f"{rel_m.group(3).rstrip()}")))
            rest.append("")
            continue
        h = HEADING.match(line)
        if h and h.group(2).strip().lower() in (title.lower(), "observations", "relations"):
            rest.append("")  # the note's own title, and the headings of its semantic sections
            continue
        rest.append(_unlinked(line))
    if relations:
        text = "\n".join([f"{_unlinked(title)}:", *(r for _, r in relations)])
        out.found.append(Found(str(note), relations[0][0], text, vault_type("fact", types), "third_party",
                               f"{rel}#relations", author="basic-memory", name=f"{title} — relations",
                               description=notes.shorten(f"{title}: links to "
                                                         + ", ".join(r.split("[[", 1)[1].split("]]")[0]
                                                                     for _, r in relations), 120),
                               tags=tags_of(["basic-memory", *note_tags]), aliases=[]))
    for line, block, heads in blocks(rest, first):
        out.found.append(Found(str(note), line, block, vault_type(str(meta.get("type") or "fact"), types),
                               "third_party", rel, author="basic-memory",
                               description=notes.shorten(f"{' › '.join([title, *heads])}: "
                                                         f"{block.strip().splitlines()[0]}", 120),
                               tags=tags_of(["basic-memory", *note_tags])))


def _unlinked(line: str) -> str:
    """A basic-memory line with each ``[[link]]`` in it as code: it names a basic-memory
    entity, not a file of the vault, so as a link it would lead nowhere once approved
    (and fail ``doctor``'s "links resolve"); as code it stays readable, as written."""
    parts = re.split(r"(`[^`\n]*`)", line)  # code already: left as it is
    for n in range(0, len(parts), 2):
        parts[n] = LINK.sub(lambda m: f"`` {m.group(0)} ``" if "`" in m.group(0) else f"`{m.group(0)}`", parts[n])
    return "".join(parts)


def read(where: Path | None, types: tuple[str, ...], human: str | None = None, memory_dir: Path | None = None,
         vault_root: Path | None = None) -> Read:
    """This source's reader, as :class:`~.base.Source` calls it."""
    return read_basic_memory(where, types, vault_root)


register(Source("basic-memory", read))

