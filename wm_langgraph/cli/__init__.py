"""The ``wm-langgraph`` command line (also ``python -m wm_langgraph``): ``demo``, ``replay`` and
``inspect``. :mod:`.main` parses the arguments; each command has its module."""
