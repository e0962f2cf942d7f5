"""The StateGraph example (docs/guide.md, "StateGraph nodes", linked from the README) runs as
written (offline)."""

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def test_readme_stategraph_example_runs(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    section = GUIDE.read_text(encoding="utf-8").split("### StateGraph nodes", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(code, "docs/guide.md", "exec"), namespace)
    memory, graph, config = namespace["memory"], namespace["graph"], namespace["config"]
    archives = memory.list_archives(config)
    assert len(archives) >= 2
    assert all(a.status == "done" for a in archives)
    assert graph.get_state(config).values["messages"] == []  # compacted
    assert "## Key Facts & Decisions" in memory.get_working_memory(config)
    assert "archive_001" in capsys.readouterr().out
