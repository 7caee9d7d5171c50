"""What submissions, reads and operations all use to know where players stand: rank reads, the
hot boards' summary, pages in rank order, counting a board, and crowded slots' tie counters.

``Ranking`` (``ranks.py``) is the per-task part that submissions and reads share: the summary of
hot boards a rank is read through, the player counts pages show, and the tie builds a range asks
for.
"""

from app.services.ranking.ranks import Ranking

__all__ = ["Ranking"]
