"""No import circle in bench/: every ``import`` of a bench module by another (at the top of a
module or inside a function, where a circle hides) is an edge, and the graph has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the bench modules it imports (anywhere in its body)."""
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # a relative import
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from bench.locomo import data`` imports the module bench.locomo.data
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules in order, the first repeated), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_bench_has_no_import_circle() -> None:
    graph = import_graph(BENCH)
    assert "bench.run" in graph
    assert "bench.locomo.run" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import circle in bench/: " + " -> ".join(cycle or [])


def test_the_circle_finder_finds_a_circle_through_a_function_level_import(tmp_path: Path) -> None:
    root = tmp_path / "bench"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "a.py").write_text("from bench.b import thing\n")
    (root / "b.py").write_text("def f():\n    from bench.sub import c\n")
    (root / "sub" / "c.py").write_text("import os\nfrom .. import a\n")
    assert find_cycle(import_graph(root)) == ["bench.a", "bench.b", "bench.sub.c", "bench.a"]
    (root / "sub" / "c.py").write_text("import os\n")
    assert find_cycle(import_graph(root)) is None
