"""JSON lines: one object per line (a mem0 export, or anything else)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .. import guard, limits
from ..errors import BadInput, NotFound
from ..models import AUTHOR_KINDS
from .base import Folder, Found, JSONL_FIELDS, Problem, Read, Source, name_of, register, tags_of, vault_type


# -- JSON lines -------------------------------------------------------------------------------
def read_jsonl(path: Path | None, types: tuple[str, ...]) -> Read:
    """One JSON object per line (a JSON list, or mem0's ``{"results": [...]}``, is read
    too); a line that is not JSON, not an object, or has no text is named and skipped."""
    if path is None:
        raise BadInput("give the JSON lines file", field="path", hint="vaultmem import jsonl export.jsonl")
    file = Path(os.path.abspath(Path(path).expanduser()))
    if not file.exists() and not file.is_symlink():
        raise NotFound(f"no file {file}", path=str(file))
    if file.is_dir():
        raise NotFound(f"{file} is a folder, not a JSON lines file", path=str(file))
    out = Read(str(file))
    folder = Folder(file.parent, out.problems)
    text = folder.read(file)
    if text is None:
        return out
    ignored: dict[str, int] = {}
    records: list[tuple[int, Any, str | None]] = []  # (line, value, problem)
    stripped = text.strip()
    whole = None
    if stripped[:1] == "[" or (stripped[:1] == "{" and "\n{" not in stripped):
        try:
            whole = limits.load_json(stripped)
        except ValueError:  # not JSON as a whole, or nested too deep: read line by line
            whole = None
    if isinstance(whole, dict):  # mem0's get_all: {"results": [...]}; a lone object is a line like any
        whole = next((whole[k] for k in ("results", "memories", "items") if isinstance(whole.get(k), list)), None)
    if isinstance(whole, list):
        records = [(n, v, None) for n, v in enumerate(whole, 1)]
        where = "item"
    else:
        where = "line"
        for n, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                records.append((n, limits.load_json(line), None))
            except json.JSONDecodeError as exc:
                records.append((n, None, f"not JSON ({exc.msg}, column {exc.colno}): skipped"))
            except ValueError as exc:  # nested too deep
                records.append((n, None, f"{exc}: skipped"))
    for n, value, problem in records:
        shown_line = n if where == "line" else None
        if problem is None and not isinstance(value, dict):
            problem = f"a JSON {type(value).__name__}, not an object: skipped"
        if problem is None:
            found, problem = _json_item(value, str(file), n, types, ignored)
            if found is not None:
                out.found.append(found)
        if problem is not None:
            out.problems.append(Problem(str(file), shown_line, problem if where == "line" else f"item {n}: {problem}"))
    if ignored:
        out.notes.append(guard.without_secrets(
            "fields not imported: " + ", ".join(f"{k} ({v}×)" for k, v in sorted(ignored.items()))))
    return out


def _json_item(obj: dict, file: str, n: int, types: tuple[str, ...], ignored: dict) -> tuple[Found | None, str | None]:
    text = next((obj[k] for k in ("text", "memory", "content") if isinstance(obj.get(k), str) and obj[k].strip()),
                None)
    if text is None:
        return None, "no text (give text, memory or content): skipped"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    for k in obj:
        if k not in JSONL_FIELDS:
            ignored[k] = ignored.get(k, 0) + 1
    categories = obj.get("categories") if isinstance(obj.get("categories"), list) else []
    wanted = obj.get("type") or meta.get("type") or obj.get("category") or (categories[0] if categories else None)
    vtype = vault_type(wanted if isinstance(wanted, str) else None, types)
    kind = str(obj.get("author_kind") or "third_party")
    if kind not in AUTHOR_KINDS:
        return None, f"author_kind {kind!r} is not one of {', '.join(AUTHOR_KINDS)}: skipped"
    tags = tags_of(["jsonl", *(tags_of(obj.get("tags")) or []), *tags_of(meta.get("tags")), *tags_of(categories),
                  *([wanted] if isinstance(wanted, str) and wanted.strip().lower() != vtype else [])])
    agent = name_of(obj.get("agent") or obj.get("agent_id"))
    said = obj.get("said") or obj.get("created_at")
    given_source = obj.get("source")

    def opt(key: str) -> Any:
        value = obj.get(key)
        return None if value in (None, "") else value

    return Found(file, n, text.strip(), vtype, kind, f"{agent or ''}#{obj.get('id') or ''}",
                 author=name_of(obj.get("author") or obj.get("user_id")) or agent or "jsonl", agent=agent,
                 name=str(opt("name")) if opt("name") is not None else None,
                 description=str(opt("description")) if opt("description") is not None else None,
                 tags=tags, aliases=[str(a) for a in obj.get("aliases") or [] if a] if isinstance(
                     obj.get("aliases"), list) else [],
                 said=str(said) if said not in (None, "") else None, importance=opt("importance"),
                 confidence=opt("confidence"), key=str(opt("key")) if opt("key") is not None else None,
                 project=str(opt("project")) if opt("project") is not None else None,
                 note=str(given_source) if given_source not in (None, "") else None), None


def read(where: Path | None, types: tuple[str, ...], human: str | None = None, memory_dir: Path | None = None,
         vault_root: Path | None = None) -> Read:
    """This source's reader, as :class:`~.base.Source` calls it."""
    return read_jsonl(where, types)


register(Source("jsonl", read))

