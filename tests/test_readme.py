"""Every Python snippet of README.md (and docs/guide.md) runs as written, offline, prints what
it documents, and passes ``mypy --strict``.

A line ending in ``# offline: <code>`` (the README's one-line swap for ``ChatOpenAI``) is
replaced by ``<code>`` before running; mypy checks the snippets exactly as written. Each snippet
runs alone, in a fresh namespace and a temporary working directory, with no API key. A snippet
that needs a PostgreSQL server (``DATABASE_URL``) runs when ``WM_TEST_POSTGRES_URL`` is set
(``.ci/postgres.sh``) and is skipped otherwise.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
GUIDE = README.parent / "docs" / "guide.md"
PYPROJECT = README.parent / "pyproject.toml"
OFFLINE = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s*# offline: (?P<swap>.+)$")

EXTRA_MODULES = {
    "postgres": (
        "langgraph.checkpoint.postgres",
        "langgraph.store.postgres",
        "psycopg",
        "psycopg_pool",
    ),
}
"""Modules an extra of pyproject.toml provides (``pip install ".[dev]"`` does not install them):
a snippet importing one is type-checked and run only where the extra is installed."""


def _snippets() -> list[tuple[str, str]]:
    found = []
    for path in (README, GUIDE):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(README.parent).as_posix()
        for match in re.finditer(r"```python\n(.*?)```", text, re.S):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{name}:{line}", match.group(1)))
    return found


SNIPPETS = _snippets()


def _imports(code: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def _extra_of(code: str) -> str | None:
    """The extra a snippet needs (None: the base install and ``[dev]`` suffice)."""
    imported = _imports(code)
    for extra, modules in EXTRA_MODULES.items():
        if any(name == m or name.startswith(m + ".") for name in imported for m in modules):
            return extra
    return None


def _missing_modules(extra: str) -> list[str]:
    missing = []
    for module in EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(module)
    return missing


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _closure(names: set[str]) -> set[str]:
    """``names`` and every distribution they require (unconditionally), as installed."""
    found, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo.extend(_requirement_name(r) for r in requires if "extra ==" not in r)
    return found


def test_each_snippet_imports_only_what_the_readme_install_provides_or_names_its_extra():
    """``pip install ".[dev]"`` (the README's test command) must provide every module a
    snippet imports, unless the snippet needs an extra (then its tests skip without it)."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    provided = _closure({_requirement_name(r) for r in wanted})
    distributions = importlib.metadata.packages_distributions()
    for where, code in SNIPPETS:
        if _extra_of(code) is not None:
            continue
        for name in sorted(_imports(code)):
            top = name.split(".")[0]
            if top in sys.stdlib_module_names:
                continue
            if top == "wm_langgraph":
                continue
            owners = {d.lower().replace("_", "-") for d in distributions.get(top, [])}
            # a namespace package (langgraph.*) is shared: the submodule's owner decides
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec else None
            if origin and len(owners) > 1:
                owners = {
                    d
                    for d in owners
                    if any(
                        str(f).endswith(origin.split("site-packages/", 1)[-1])
                        for f in importlib.metadata.files(d) or []
                    )
                }
            assert owners & provided, (
                f"{where}: imports {name} ({', '.join(sorted(owners)) or 'not installed'}), "
                "which neither the dependencies nor [dev] provide: add it to EXTRA_MODULES"
            )


PRINTS: dict[str, tuple[list[str], list[str]]] = {
    # a string only that snippet contains: (patterns its output must match, texts it must not hold)
    '"project-42"': (
        [r"^## Key Facts & Decisions\n- User: Note 1: the build server", r"^\['archive_001'"],
        [],
    ),
    '"thread_id": "demo"': (
        [r"- User: Note 1: server build-1\.example\.com", r"\('archive_001', 'done', \d+\)"],
        [],
    ),
    '"persistent"': (
        [
            r"^first process \['archive_001'",
            r"^second process \['archive_001', 'archive_002'",
            r"^1\d notes in the WM$",
        ],
        [],
    ),
    '"async-1"': (
        [r"^## Session Title\nNote 1 deploy window is 1 PM", r"^\['archive_001', 'archive_002'"],
        [],
    ),
    '"thread_id": "ui"': (
        [
            r"^wm_commit_start \['archive_001'\]\nwm_commit_end \['archive_001'\]$",
            r"^2 live messages$",
            r"^8 messages in the whole conversation$",
            r"^note 1: the release train leaves at 1 PM$",
            r"^3 Working Memory versions, 4 model calls$",
        ],
        [],
    ),
    '("fraction", 0.8)': ([r"^102400$"], []),
    '"pr-17"': ([r"^Coder note 1$"], ["eviewer"]),
    '"thread_id": "order"': (
        [r"^before the memory: Note \d+: ", r"^after the memory: \[Session History Summary\]$"],
        [],
    ),
    '"thread_id": "tools"': (
        [r"^Noted build-20\.$", r"^archive_001: [1-9]\d* tool results, archived with their calls$"],
        [],
    ),
    '"thread_id": "parts"': (
        [
            r"^30 calls; the last: [\d,]+ of 1,700 usable$",
            r"^\{'system': \d+, 'working memory': \d+, ",
            r"^\['system', 'working memory', ",
            r"^version \d+ \(archive_\d+\) \d+ guard decisions, \d+ changed$",
            r"^# Working Memory$",
            r"^True 2000$",
        ],
        [],
    ),
}
"""What each printing snippet shows when run offline: a snippet that prints ``""`` or ``[]``
documents nothing."""


def _offline(code: str) -> str:
    lines = []
    for line in code.splitlines():
        match = OFFLINE.match(line)
        lines.append(f"{match['indent']}{match['swap']}" if match else line)
    return "\n".join(lines) + "\n"


def test_the_readme_has_snippets_and_each_chatopenai_line_shows_its_offline_swap():
    assert len(SNIPPETS) >= 7
    for where, code in SNIPPETS:
        for line in code.splitlines():
            if "ChatOpenAI(" in line:
                assert OFFLINE.match(line), f"{where}: ChatOpenAI without '# offline:' swap"


@pytest.mark.parametrize(("where", "code"), SNIPPETS, ids=[w for w, _ in SNIPPETS])
def test_snippet_runs_offline_as_written(where, code, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    extra = _extra_of(code)
    if extra is not None and _missing_modules(extra):
        pytest.skip(f"needs the [{extra}] extra: {', '.join(_missing_modules(extra))} missing")
    if 'os.environ["DATABASE_URL"]' in code:
        import os

        url = os.environ.get("WM_TEST_POSTGRES_URL")
        if not url:
            pytest.skip("needs PostgreSQL: WM_TEST_POSTGRES_URL is not set (.ci/postgres.sh)")
        monkeypatch.setenv("DATABASE_URL", url)
    namespace: dict[str, object] = {"__name__": "readme_snippet"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated
        exec(compile(_offline(code), where, "exec"), namespace)
    out = capsys.readouterr().out
    expected = [value for key, value in PRINTS.items() if key in code]
    if "print(" not in code:
        assert not expected, f"{where}: expected output, but the snippet prints nothing"
        return
    assert len(expected) == 1, f"{where}: add what the snippet prints to PRINTS"
    patterns, absent = expected[0]
    for pattern in patterns:
        assert re.search(pattern, out, re.M), f"{where}: {pattern!r} not in its output:\n{out}"
    for text in absent:
        assert text not in out, f"{where}: {text!r} in its output:\n{out}"


def _mypy_snippets() -> list[tuple[str, list[int]]]:
    """The base group (every snippet without an extra), then one group per extra."""
    groups: dict[str, list[int]] = {"base": []}
    for index, (_where, code) in enumerate(SNIPPETS):
        groups.setdefault(_extra_of(code) or "base", []).append(index)
    return list(groups.items())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("group", "indexes"), _mypy_snippets(), ids=[g for g, _ in _mypy_snippets()]
)
def test_snippets_pass_mypy_strict(group, indexes, tmp_path):
    if group != "base" and _missing_modules(group):
        pytest.skip(f"needs the [{group}] extra: {', '.join(_missing_modules(group))} missing")
    for index in indexes:
        (tmp_path / f"readme_snippet_{index}.py").write_text(SNIPPETS[index][1], encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--warn-unreachable",
            "--python-version",
            "3.11",
            # The package's own mypy run (CI runs it first) has checked LangChain already.
            "--cache-dir",
            str(README.parent / ".mypy_cache"),
            *sorted(str(p) for p in tmp_path.glob("readme_snippet_*.py")),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
