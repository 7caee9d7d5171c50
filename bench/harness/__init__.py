"""The benchmark harness: ``python -m bench`` (see ``bench/harness/cli.py`` and
docs/benchmarks.md)."""
