"""notebooks/quickstart.ipynb runs offline from top to bottom (its cells assert what they show)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


def test_notebook_is_committed_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    assert all(not cell.outputs and cell.execution_count is None for cell in code)


def test_notebook_imports_only_public_modules():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    modules = set(re.findall(r"^\s*(?:from|import) (wm_langgraph[\w.]*)", code, re.M))
    assert modules
    assert modules <= {"wm_langgraph", "wm_langgraph.testing"}


@pytest.mark.slow
def test_quickstart_notebook_executes(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel is this interpreter (ipykernel installed here), talking over unix sockets so
    # that no TCP port is opened (the test suite disables inet sockets).
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    manager.kernel_spec.argv[0] = sys.executable
    client = NotebookClient(
        notebook,
        km=manager,
        timeout=300,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = "".join(
        str(output.get("text", "")) for cell in notebook.cells for output in cell.get("outputs", [])
    )
    assert "# Working Memory" in outputs
    assert "archive_001 done" in outputs
    assert "[Session History Summary]" in outputs
    pictures = [
        str(output["data"]["text/html"])
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]
    # the Working Memory, a commit, an archive, a call's input, the whole report
    assert len(pictures) == 5
    for picture in pictures:
        assert picture.startswith('<div class="wmv"><style>')
        assert "<script" not in picture
    assert "Working Memory now" in pictures[0]
    assert "writer's op → guard's decision" in pictures[1]
    assert "archive_001" in pictures[2]
    assert "usable" in pictures[3]
    assert "Every Working Memory version" in pictures[4]
    assert (tmp_path / "quickstart-report.html").is_file()
