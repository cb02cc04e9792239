"""The pipeline reads left to right: each module imports only the stages to its left,
adapters (cli, watch) are never imported by the library, and no module calls another
module's private (``_underscore``) names."""

import ast
from pathlib import Path

import pytest

import vaultmem

PKG = Path(vaultmem.__file__).parent

FOUNDATION = {"errors", "models", "layout", "limits", "patterns"}
STORAGE = FOUNDATION | {"names", "files", "gitstore", "guard", "transaction", "config", "parse", "walk"}
RECALL = {"analysis", "answers", "query", "index", "ranker", "retrieve", "brief", "evaluate"}
# module -> the vaultmem modules it may import (the stage table of docs/design.md)
ALLOWED = {
    # foundations
    "layout": set(),  # every vault path, named once: nothing below it
    "walk": {"layout"},  # the CLI launcher imports it before anything else: standard library only
    "errors": set(),
    "limits": {"errors"},  # every size a caller gives, and its bounds (vaultmem.limits)
    "models": set(),
    "patterns": set(),  # regular expressions compiled when first used (standard library only)
    "names": {"errors", "guard", "patterns"},  # a name that reads like a secret is refused as bad input
    # files → parse
    "files": {"errors", "layout"},
    "parse": {"errors", "models", "layout", "parse"},
    "config": {"errors", "files", "names", "parse", "walk", "layout"},
    "template": {"errors", "files", "layout", "config", "gitstore", "models", "names", "walk"},  # a vault made from it
    # the write path
    "gitstore": {"errors", "models"},
    "guard": {"patterns"},
    "leftovers": {"errors", "files", "layout"},  # what a killed writer left, looked for before any writer is made
    "transaction": {"errors", "models", "files", "gitstore", "layout", "guard", "config", "leftovers"},
    # index → retrieve → brief
    "analysis": {"patterns"},  # terms, dates, snippets (pure; its date patterns compiled when first used)
    "answers": {"patterns"},  # the kind of answer a question asks for, and whether a text holds one (pure)
    "query": {"analysis", "errors"},  # a query's syntax: phrases, exclusions, OR, prefixes (pure)
    "sessions": {"patterns"},  # what a session's text holds worth keeping: reports' elements, users' facts (pure)
    "index": {"errors", "limits", "models", "files", "parse", "analysis", "walk", "layout", "patterns"},
    "ranker": {"analysis"},  # the learned ranker: features of candidates, the model that scores them (pure)
    "retrieve": {"analysis", "answers", "query", "index", "models", "ranker"},
    "brief": {"analysis", "errors", "models"},
    "evaluate": {"errors", "models", "parse", "layout"},
    "recall": {"errors", "models", "names", "files", "layout", "parse", "analysis", "query", "index", "retrieve",
               "brief", "evaluate"},
    # domain modules: plan the writes, hand them to the transaction
    "livelog": {"errors", "files", "names", "parse", "layout"},
    "notes": STORAGE,
    "pages": STORAGE | {"notes"},
    "lifecycle": STORAGE | {"pages"},
    "inbox": STORAGE | {"notes", "pages", "lifecycle", "analysis"},  # analysis: a repeat told by its terms
    "shared": STORAGE | {"livelog"},
    "conflicts": STORAGE | {"analysis"},  # disagreeing memory, read from the files for a human
    "timeline": STORAGE,  # dated entries, decisions, log entries and notes in order (read only)
    "links": STORAGE,
    "usage": {"errors", "files", "layout", "analysis"},  # what was recalled: local usage data (every search and brief)
    "compaction": STORAGE | {"analysis", "pages", "usage"},  # role pages' entries moved to the archive
    "stats": STORAGE | {"analysis", "compaction", "forgetting", "pages", "usage"},  # counts and recall figures (read only)  # wikilinks resolved as Obsidian resolves them (read only)
    "forgetting": STORAGE | {"notes", "analysis", "usage"},  # retention scores, GC's plan and its commit
    "importers": STORAGE | {"notes"},  # beside inbox: other tools' memory, filed through the facade's inbox
    "staged": STORAGE | {"livelog"},  # what a commit records, checked before git records it
    "journal": STORAGE | {"sessions"},
    "skills": STORAGE,  # skills/: procedural memory, listed and added (docs/skills.md)
    "preservation": STORAGE,  # the format's migrations, the journal's markers, the keys apart from a backup  # transcripts read, filed by day, a day's record (docs/journal.md)
    # the facade
    "vault": STORAGE | RECALL | {"leftovers", "recall", "template", "notes", "conflicts", "forgetting", "usage", "compaction", "stats", "links", "timeline", "pages", "lifecycle", "inbox", "shared", "livelog",
                                 "importers", "staged", "journal", "skills", "preservation"},
    # over the facade: the vault's upkeep for a human (doctor, verify, migrate, backups)
    "upkeep": {"compaction", "config", "errors", "files", "forgetting", "gitstore", "guard", "layout", "links", "models",
               "notes", "pages", "preservation", "analysis", "vault"},
    # over the facade: what a human looks at, read-only (conflicts, stats, links, timeline)
    "views": {"conflicts", "errors", "layout", "links", "names", "pages", "recall", "stats", "timeline", "vault"},
    # adapters: the CLI, the watcher and the edge they share (edge.py needs only errors)
    "adapters": {"errors", "limits", "models", "names", "patterns", "parse", "vault", "upkeep", "views", "importers", "guard",
                 "staged", "gitstore", "walk", "layout", "files", "livelog", "sessions",
                 "journal", "adapters", "__init__"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(PKG)
    depth = len(rel.parts) - 1  # folders below the package
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = list(rel.parts[:-1])[: max(0, depth - (node.level - 1))]
            target = ".".join(parts + ([node.module] if node.module else []))
            if node.module:
                found.add(target.split(".")[0])
                continue
            for alias in node.names:  # "from . import files" or "from .. import __version__"
                full = parts + [alias.name]
                is_module = PKG.joinpath(*full).with_suffix(".py").exists() or PKG.joinpath(*full).is_dir()
                found.add(full[0] if is_module or parts else "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vaultmem"):
                    found.add(alias.name.split(".")[1] if "." in alias.name else "__init__")
    return found


def test_modules_import_only_earlier_pipeline_stages():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        stage = rel.parts[0].removesuffix(".py")
        if stage in ("__init__", "__main__", "_vault_template", "data"):  # data/: the ranker's trees compiled
            continue  # (generated, importing nothing: tests/test_ranker.py holds them to the model files)
        allowed = ALLOWED[stage] | {stage}
        for imported in _imports(path):
            if imported not in allowed:
                bad.append(f"{rel} imports {imported}")
    assert bad == []


def _private_calls(path: Path, base: Path = PKG) -> list[str]:
    """``module._name`` uses where ``module`` is a vaultmem module imported by this file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("vaultmem")):
            for alias in node.names:
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vaultmem"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            found.append(f"{path.relative_to(base)}:{node.lineno} uses {node.value.id}.{node.attr}")
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("vaultmem")):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.relative_to(base)}:{node.lineno} imports {node.module}.{alias.name}")
    return found


def _foreign_private_attributes(path: Path, root: Path = PKG) -> list[str]:
    """``x._name`` where ``x`` is not ``self``/``cls``: reaching into another object's
    private state (``vault._apply`` from the review gate, say)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            continue
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "self" \
                and base.attr.startswith("_"):
            continue  # self._private_helper._attr: still this object's own state
        found.append(f"{path.relative_to(root)}:{node.lineno} uses .{node.attr} of {ast.unparse(base)}")
    return found


# Names private by spelling that belong to the standard library or a search library:
# os._exit is public API; Whoosh's index has no public way to count its segments.
THIRD_PARTY_PRIVATE = {"._exit of os", "._segments of self.ix"}
# a named tuple's own methods and attributes: public, underscored only to stay clear of its fields
NAMED_TUPLE_API = ("._replace of ", "._fields of ", "._asdict of ", "._make of ", "._field_defaults of ")


def test_no_module_calls_another_modules_private_names():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        if "_vault_template" in path.parts:
            continue
        bad += _private_calls(path)
        bad += [f for f in _foreign_private_attributes(path) if not any(f.split(" uses ")[1].startswith(t)
                                                                        for t in (*THIRD_PARTY_PRIVATE, *NAMED_TUPLE_API))]
    assert bad == []


def test_the_private_name_rule_can_fail(tmp_path):
    # written outside the package: a file in it would be read by the other checks running at
    # the same time on another worker
    sample = tmp_path / "_sample_for_test.py"
    sample.write_text("from . import files\nfrom .vault import Vault\n"
                      "def f(v: Vault):\n    files._hidden()\n    return v._apply\n", encoding="utf-8")
    found = _private_calls(sample, tmp_path) + _foreign_private_attributes(sample, tmp_path)
    assert any("files._hidden" in f for f in found) and any("._apply of v" in f for f in found)


def test_public_api_is_what_all_says():
    for name in vaultmem.__all__:
        assert hasattr(vaultmem, name), name
    assert sorted(vaultmem.__all__) == sorted([*vaultmem._EXPORTS, "__version__"])  # loaded on first use
    assert vaultmem.errors.NotFound is vaultmem.NotFound  # submodules load on first use too
    assert not hasattr(vaultmem, "index.store") and not hasattr(vaultmem, "no_such_module")
    assert "Vault" in vaultmem.__all__ and "VaultmemError" in vaultmem.__all__


def test_the_parse_package_gives_every_name_it_lists_when_first_used():
    from vaultmem import parse
    from vaultmem.parse import document, note, page

    assert sorted(parse.__all__) == sorted(parse._EXPORTS)
    for name in parse.__all__:
        assert getattr(parse, name) is next(getattr(m, name) for m in (document, note, page) if hasattr(m, name))
    with pytest.raises(AttributeError):
        parse.no_such_name  # noqa: B018
    from vaultmem.parse import wikilink  # a submodule it does not list still imports

    assert [t for _at, t, _alias, _raw in wikilink.wikilinks("see [[memories/db]]")] == ["memories/db"]


def test_the_models_package_gives_every_name_it_lists_when_first_used():
    from vaultmem import models
    from vaultmem.models import found, records

    assert sorted(models.__all__) == sorted([*models._EXPORTS, "SECTIONS", "AUTHOR_KINDS", "SCOPES"])
    for name in models._EXPORTS:
        assert getattr(models, name) is next(getattr(m, name) for m in (found, records) if hasattr(m, name))
    assert records.SECTIONS is models.SECTIONS
    with pytest.raises(AttributeError):
        models.no_such_name  # noqa: B018
    from vaultmem.models import Actor, Change  # the from-import form the modules use

    assert Actor("a").git_identity() == ("a", "a@agents.vaultmem.invalid") and Change("x", [], None, "m").to_dict()


@pytest.mark.parametrize("library,module", [("whoosh", "whoosh_engine.py"), ("tantivy", "tantivy_engine.py")])
def test_only_its_engine_module_imports_a_search_library(library, module):
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if (f"import {library}" in text or f"from {library} " in text) and path.name != module:
            offenders.append(str(path.relative_to(PKG)))
    assert offenders == []




DESIGN = PKG.parent / "docs" / "design.md"


def test_design_md_draws_the_package_as_it_stands():
    """docs/design.md's tree names every module and package of vaultmem/, and its stage
    table every stage this test holds the imports to: a new module is drawn when it lands."""
    doc = DESIGN.read_text(encoding="utf-8")
    tree = doc[doc.index("## The pipeline"):doc.index("| module | may import |")]
    table = doc[doc.index("| module | may import |"):]
    rooms = sorted(p.name if p.suffix == ".py" else p.name + "/" for p in PKG.iterdir()
                   if (p.suffix == ".py" or (p / "__init__.py").exists())
                   and p.stem not in ("__init__", "__main__", "_vault_template"))
    assert [r for r in rooms if r not in tree] == [], "modules not in docs/design.md's tree"
    adapters = sorted(p.name if p.suffix == ".py" else p.name + "/" for p in (PKG / "adapters").iterdir()
                      if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists())
    assert [a for a in adapters if a not in tree] == [], "adapters not in docs/design.md's tree"
    unlisted = [stage for stage in ALLOWED if f"`{stage}`" not in table]
    assert unlisted == [], f"stages not in docs/design.md's table: {unlisted}"


def test_no_module_holds_more_than_700_lines():
    """A room one can hold in mind: past 700 lines a module becomes a package of one module
    per concern (docs/design.md, "The rule a new module follows")."""
    big = {str(p.relative_to(PKG)): n for p in PKG.rglob("*.py")
           if "_vault_template" not in p.parts and (n := len(p.read_text(encoding="utf-8").splitlines())) > 700}
    assert big == {}
