"""Benchmarks and simulations; run as modules (``uv run python -m bench.<name>``)."""
