"""The offline model: a deterministic heuristic extractive writer (no LLM, no network).

:class:`~wm_langgraph.writer.offline.model.OfflineWorkingMemoryModel` is a LangChain chat model
that reads the create and update prompts back (:mod:`._transcript`), finds what the folded
messages establish (:mod:`._extract`, :mod:`._files`, :mod:`._open`), decides the per-section
ops as the update prompt asks (:mod:`._plan`, consolidating oversized sections with
:mod:`._consolidate`) and answers with a document or an ``update_working_memory`` call.
"""
