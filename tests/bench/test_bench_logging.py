"""The bench quiets the package's loggers while it runs and restores them after: the suite runs
``bench.run.main`` in-process, and a logger left at ERROR would hide the warnings that later
tests assert on."""

from __future__ import annotations

import logging

from bench.quiet import quiet_loggers


def test_quiet_loggers_restores_each_level_even_after_an_error() -> None:
    logger = logging.getLogger("wm_langgraph")
    before = logger.level
    logger.setLevel(logging.INFO)
    try:
        try:
            with quiet_loggers("wm_langgraph"):
                assert logger.level == logging.ERROR
                raise RuntimeError("boom")
        except RuntimeError:
            pass
        assert logger.level == logging.INFO
    finally:
        logger.setLevel(before)
