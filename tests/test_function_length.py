"""House rule: no function in wm_langgraph is longer than 150 lines, counted from its ``def``
line to its last line (decorators not counted, nested functions counted inside their parent and
on their own)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "wm_langgraph"
MAX_LINES = 150

EXEMPT: set[tuple[str, str]] = set()
"""``(module, function)`` pairs allowed over the limit for now, each with its reason."""


def _long_functions(root: Path) -> list[tuple[str, str, int, int]]:
    """``(module, function, first line, lines)`` of every function over :data:`MAX_LINES`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    found.append((module, node.name, node.lineno, lines))
    return found


def test_no_function_in_the_package_is_over_150_lines() -> None:
    offenders = [
        f"wm_langgraph/{module}:{line} {name}() is {lines} lines"
        for module, name, line, lines in _long_functions(PACKAGE)
        if (module, name) not in EXEMPT
    ]
    assert not offenders, "split these functions (max 150 lines):\n" + "\n".join(offenders)


def test_the_exemptions_name_functions_that_exist_and_are_still_long() -> None:
    """An exemption ends when its function is split (or gone): then it must be removed."""
    long = {(module, name) for module, name, _, _ in _long_functions(PACKAGE)}
    assert long >= EXEMPT, f"remove these exemptions: {sorted(EXEMPT - long)}"


def test_the_count_runs_from_def_to_the_last_line(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 1))
    (tmp_path / "fits.py").write_text(f"@decorator\ndef fits():\n{body}\n", encoding="utf-8")
    (tmp_path / "over.py").write_text(
        f"class C:\n    async def over(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
        "        return None\n",
        encoding="utf-8",
    )
    assert _long_functions(tmp_path) == [("over.py", "over", 2, MAX_LINES + 1)]
