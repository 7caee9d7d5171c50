"""``python -m bench.rank_sim``."""

import sys

from bench.rank_sim.command import main

sys.exit(main())
