"""Display: what the memory did, as pictures (Jupyter) and as a self-contained HTML report.

An adapter over the engine's records: it reads the store and the checkpointer, never writes
them, and nothing below it imports it. Plain HTML and CSS with inline SVG, no script, every text
escaped (:mod:`.markup`).

- :mod:`.report`: :class:`ThreadReport`, the whole thread (``WorkingMemory.report(config)``,
  ``wm-langgraph report THREAD``); its parts display themselves too:
- :mod:`.working_memory`: the document's sections against their limits, code's and guards'
  items marked;
- :mod:`.commit`: one version's diff per section, the writer's op → the guard's decision and
  why, the capture fates;
- :mod:`.archive`: one archive's messages and abstract;
- :mod:`.model_input`: one call's input by layer against the budget;
- :mod:`.history`: the calls found again in the checkpoints, and the store as it was then;
- :mod:`.chart`: the per-call chart.
"""

from wm_langgraph.display.archive import ArchiveView
from wm_langgraph.display.commit import CommitView
from wm_langgraph.display.model_input import ModelInputView
from wm_langgraph.display.report import ThreadReport
from wm_langgraph.display.working_memory import WorkingMemoryView

__all__ = [
    "ArchiveView",
    "CommitView",
    "ModelInputView",
    "ThreadReport",
    "WorkingMemoryView",
]
