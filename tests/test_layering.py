"""The package's layering, checked on the source (an AST walk over every module, no import).

Imports point down only. From the bottom:

====  ==========================================================================
 0    errors, config, state, _compat, _moved, testing (leaves every layer uses)
 1    document (pure rules: no LangChain, no LangGraph)
 2    messages, storage
 3    writer (the model calls and the prompt files)
 4    context, recall (the model input reads the system prompt from writer.prompts)
 5    phase2
 6    phase1
 7    integration, display (adapters: how users plug it in and see what it did)
 8    memory, middleware, the package's ``__init__``
 9    cli, ``__main__``
====  ==========================================================================

A module may import from its own layer or below, every import counted: at the top, inside a
function, under ``TYPE_CHECKING``. Besides, ``document`` imports nothing of LangChain or
LangGraph, and a private module (``_x.py``) is imported only from its own package. Each
violation is listed as ``file:line``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "wm_langgraph"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

LAYERS: dict[str, int] = {
    "errors": 0,
    "config": 0,
    "state": 0,
    "_compat": 0,
    "_moved": 0,
    "testing": 0,
    "document": 1,
    "messages": 2,
    "storage": 2,
    "writer": 3,
    "context": 4,
    "recall": 4,
    "phase2": 5,
    "phase1": 6,
    "integration": 7,
    "display": 7,
    "memory": 8,
    "middleware": 8,
    "__init__": 8,
    "cli": 9,
    "__main__": 9,
}
"""The layer of each top-level module or sub-package of the package (``__init__``: the
package's own ``__init__.py``)."""

PURE = ("document",)
"""Sub-packages that import nothing of LangChain or LangGraph."""
FRAMEWORKS = ("langchain", "langchain_core", "langgraph")


@dataclass(frozen=True)
class Import:
    """One import in a module of the package: where it is and the module it names."""

    path: Path
    line: int
    importer: str
    target: str

    def where(self, root: Path) -> str:
        """``file:line`` relative to the package's parent directory."""
        return f"{self.path.relative_to(root.parent)}:{self.line}"


def _module_name(path: Path, root: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, root: Path) -> bool:
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    return (root / relative).with_suffix(".py").is_file() or (
        root / relative / "__init__.py"
    ).is_file()


def _imports(root: Path) -> list[Import]:
    """Every import of every module under ``root`` (the package directory)."""
    found: list[Import] = []
    for path in sorted(root.rglob("*.py")):
        importer = _module_name(path, root)
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found += [Import(path, node.lineno, importer, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:  # relative: resolve against the importer's package
                    base = importer.split(".")
                    base = base[: len(base) - node.level + (1 if is_package else 0)]
                    module = ".".join([*base, module] if module else base)
                for alias in node.names:
                    candidate = f"{module}.{alias.name}"
                    target = candidate if _is_module(candidate, root) else module
                    found.append(Import(path, node.lineno, importer, target))
    return found


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _own(imports: list[Import]) -> list[Import]:
    return [i for i in imports if i.target == PACKAGE or i.target.startswith(f"{PACKAGE}.")]


def layer_violations(root: Path, layers: dict[str, int]) -> list[str]:
    """Imports of a higher layer, and modules whose unit has no layer."""
    out: list[str] = []
    for item in _own(_imports(root)):
        mine, theirs = _unit(item.importer), _unit(item.target)
        if mine not in layers or theirs not in layers:
            unknown = mine if mine not in layers else theirs
            out.append(f"{item.where(root)}: {unknown!r} has no layer")
        elif layers[theirs] > layers[mine]:
            out.append(
                f"{item.where(root)}: {item.importer} (layer {layers[mine]}) imports "
                f"{item.target} (layer {layers[theirs]})"
            )
    return sorted(set(out))


def purity_violations(root: Path, pure: tuple[str, ...]) -> list[str]:
    """Imports of LangChain or LangGraph from a pure sub-package."""
    return [
        f"{item.where(root)}: {item.importer} imports {item.target}"
        for item in _imports(root)
        if _unit(item.importer) in pure and item.target.split(".")[0] in FRAMEWORKS
    ]


def private_violations(root: Path) -> list[str]:
    """Imports of a private module (``_x``) from outside the package it belongs to."""
    out: list[str] = []
    for item in _own(_imports(root)):
        parts = item.target.split(".")
        private = next(
            (i for i, p in enumerate(parts) if p.startswith("_") and not p.startswith("__")), None
        )
        if private is None:
            continue
        home = ".".join(parts[:private])
        if item.importer != home and not item.importer.startswith(f"{home}."):
            out.append(f"{item.where(root)}: {item.importer} imports private {item.target}")
    return out


def _report(violations: list[str]) -> str:
    return "\n".join(["", *violations])


def test_every_unit_of_the_package_has_a_layer():
    units = {_unit(_module_name(path, ROOT)) for path in ROOT.rglob("*.py")}
    assert units <= set(LAYERS), f"give these a layer: {sorted(units - set(LAYERS))}"


def test_imports_point_down_only():
    violations = layer_violations(ROOT, LAYERS)
    assert not violations, _report(violations)


def test_document_is_pure():
    violations = purity_violations(ROOT, PURE)
    assert not violations, _report(violations)


def test_private_modules_are_imported_only_from_their_own_package():
    violations = private_violations(ROOT)
    assert not violations, _report(violations)


# -- the checks themselves catch what they are meant to ---------------------------------------


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A small package named like ours with one violation of each rule."""
    root = tmp_path / PACKAGE
    files = {
        "__init__.py": "",
        "config.py": "from wm_langgraph.memory import WorkingMemory\n",
        "memory.py": "from . import config\nfrom .writer import _private\n",
        "document/__init__.py": "",
        "document/rules.py": "import re\n\n\ndef f():\n    from langgraph.graph import END\n",
        "writer/__init__.py": "",
        "writer/_private.py": "",
        "writer/api.py": "from wm_langgraph.writer import _private\n",
        "extra.py": "",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_layer_check_finds_an_upward_import_and_an_unassigned_unit(planted):
    layers = {"config": 0, "document": 1, "writer": 3, "memory": 8, "__init__": 8}
    violations = layer_violations(planted, layers)
    assert violations == [
        "wm_langgraph/config.py:1: wm_langgraph.config (layer 0) imports wm_langgraph.memory "
        "(layer 8)"
    ]
    (planted / "extra.py").write_text("import wm_langgraph.config\n")
    assert "wm_langgraph/extra.py:1: 'extra' has no layer" in layer_violations(planted, layers)


def test_the_purity_check_finds_a_framework_import_inside_a_function(planted):
    assert purity_violations(planted, PURE) == [
        "wm_langgraph/document/rules.py:5: wm_langgraph.document.rules imports langgraph.graph"
    ]


def test_the_private_check_resolves_relative_imports(planted):
    assert private_violations(planted) == [
        "wm_langgraph/memory.py:2: wm_langgraph.memory imports private wm_langgraph.writer._private"
    ]
