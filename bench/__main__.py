"""``python -m bench``: the benchmark harness (``bench/harness/cli.py``)."""

import sys

from bench.harness.cli import main

sys.exit(main())
