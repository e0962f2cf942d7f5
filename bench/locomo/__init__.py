"""LoCoMo mode of the benchmark: ``python -m bench --locomo DIR`` (see bench/locomo/run.py).

The dataset (snap-research/locomo, non-commercial licence) is read from a local directory and
never committed here; ``--quick`` runs on a synthetic LoCoMo-shaped chat that
:mod:`bench.locomo.data` invents.
"""
