"""``python -m app.cli``: the ``leaderboard`` command."""

import sys

from app.cli import main

sys.exit(main())
