"""Every Python snippet of README.md runs as written, offline, and passes ``mypy --strict``.

A line ending in ``# offline: <code>`` (the README's one-line swap for ``ChatOpenAI``) is
replaced by ``<code>`` before running; mypy checks the snippets exactly as written. Each snippet
runs alone, in a fresh namespace and a temporary working directory, with no API key. A snippet
that needs a PostgreSQL server (``DATABASE_URL``) runs when ``WM_TEST_POSTGRES_URL`` is set
(``.ci/postgres.sh``) and is skipped otherwise.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
OFFLINE = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s*# offline: (?P<swap>.+)$")


def _snippets() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"```python\n(.*?)```", text, re.S):
        line = text.count("\n", 0, match.start()) + 1
        found.append((f"README.md:{line}", match.group(1)))
    return found


SNIPPETS = _snippets()


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
    capsys.readouterr()


@pytest.mark.slow
def test_snippets_pass_mypy_strict(tmp_path):
    for index, (_where, code) in enumerate(SNIPPETS):
        (tmp_path / f"readme_snippet_{index}.py").write_text(code, encoding="utf-8")
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
