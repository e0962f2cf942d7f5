"""``python -m wm_langgraph``: the ``wm-langgraph`` command line."""

from wm_langgraph.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
