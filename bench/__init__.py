"""Benchmarks and simulations; run as modules (``python3 tools/uv.py run --frozen --all-groups python -m bench.<name>``)."""
