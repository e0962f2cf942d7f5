"""The built wheel ships the prompts and py.typed, and the prompts load from an installed
(non-editable) copy of the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROMPTS = ("create", "update", "system")

pytestmark = pytest.mark.slow  # every test here builds (or reads) the wheel

_CHILD = """
import json, sys
import wm_langgraph
from wm_langgraph.writer.prompts import load_prompt
print(json.dumps({
    "package": wm_langgraph.__file__,
    "prompts": {name: load_prompt(name) for name in sys.argv[1:]},
}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
        ],
        check=True,
        env=env,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("wm_langgraph-*.whl")
    return built


def test_wheel_contains_prompts_and_py_typed(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "wm_langgraph/py.typed" in names
    for name in PROMPTS:
        assert f"wm_langgraph/prompts/{name}.md" in names
    assert not any(n.startswith("prompts/") for n in names)  # only inside the package


def test_prompts_load_from_the_unpacked_wheel(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    # Mark the unpacked copies so the test proves they, not the repository's, were read.
    expected = {}
    for name in PROMPTS:
        path = site / "wm_langgraph" / "prompts" / f"{name}.md"
        text = path.read_text(encoding="utf-8") + f"\n<!-- unpacked {name} -->\n"
        path.write_text(text, encoding="utf-8")
        expected[name] = text
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, *PROMPTS],
        cwd=site,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(loaded["package"]).resolve().is_relative_to(site.resolve())
    assert loaded["prompts"] == expected
