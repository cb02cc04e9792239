"""The pipeline reads left to right: each module imports only the stages to its left,
and adapters (cli) are never imported by the library."""

import ast
from pathlib import Path

import pytest

import vaultmem

PKG = Path(vaultmem.__file__).parent

# module -> the vaultmem modules it may import
ALLOWED = {
    "walk": set(),  # the CLI launcher imports it before anything else: standard library only
    "errors": set(),
    "models": set(),
    "names": {"errors"},
    "files": {"errors"},
    "parse": {"errors", "models", "parse"},
    "config": {"errors", "files", "names", "parse", "walk"},
    "gitstore": {"errors", "models"},
    "analysis": set(),
    "guard": set(),
    "index": {"errors", "models", "files", "parse", "analysis", "walk"},
    "retrieve": {"analysis", "index", "models"},
    "brief": {"analysis", "errors", "models"},
    "evaluate": {"errors", "models", "parse"},
    "livelog": {"errors", "files", "names", "parse"},
    "shared": {"errors", "models", "names", "files", "parse", "gitstore", "livelog"},
    "lifecycle": {"errors", "models", "files", "parse", "gitstore", "guard"},
    "inbox": {"errors", "models", "files", "parse", "guard"},
    "vault": {"errors", "models", "names", "files", "parse", "config", "gitstore", "analysis", "index",
              "retrieve", "brief", "evaluate", "shared", "lifecycle", "guard", "inbox", "walk"},
    "watch": {"vault", "walk"},
    "cli": {"errors", "models", "names", "parse", "vault", "watch", "files", "livelog", "cli", "__init__"},
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
        if stage in ("__init__", "__main__", "_vault_template"):
            continue
        allowed = ALLOWED[stage] | {stage}
        for imported in _imports(path):
            if imported not in allowed:
                bad.append(f"{rel} imports {imported}")
    assert bad == []


def test_public_api_is_what_all_says():
    for name in vaultmem.__all__:
        assert hasattr(vaultmem, name), name
    assert sorted(vaultmem.__all__) == sorted([*vaultmem._EXPORTS, "__version__"])  # loaded on first use
    assert vaultmem.errors.NotFound is vaultmem.NotFound  # submodules load on first use too
    assert not hasattr(vaultmem, "index.store") and not hasattr(vaultmem, "no_such_module")
    assert "Vault" in vaultmem.__all__ and "VaultmemError" in vaultmem.__all__


@pytest.mark.parametrize("library,module", [("whoosh", "whoosh_engine.py"), ("tantivy", "tantivy_engine.py")])
def test_only_its_engine_module_imports_a_search_library(library, module):
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if (f"import {library}" in text or f"from {library} " in text) and path.name != module:
            offenders.append(str(path.relative_to(PKG)))
    assert offenders == []


