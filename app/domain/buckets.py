"""The histogram that turns "how many players are ahead of me" into a few counter reads: coarse
logarithmic buckets over the scores, each cut into equal fine slots, every one a contiguous score
(and so ``rankKey``) range of a board (docs/ranking.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from app.domain.keys import SCORE_CEILING, check_score

_LOG_CEILING = math.log(SCORE_CEILING)


@dataclass(frozen=True)
class BucketLayout:
    """A two-level layout: ``coarse`` log buckets, each cut into up to ``fine`` equal slots (a
    bucket is the coarse level, a slot the fine one: the counters of each are "coarse" and
    "fine")."""

    coarse: int = 128
    fine: int = 1024
    _lower: tuple[int, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.coarse < 1 or self.fine < 1:
            raise ValueError("a layout needs at least one bucket, and one slot a bucket")
        object.__setattr__(
            self, "_lower", tuple(self._first_score_at_or_above(b) for b in range(self.coarse))
        )

    def coarse_of(self, score: int) -> int:
        check_score(score)
        return min(self.coarse - 1, math.floor(math.log1p(score) / _LOG_CEILING * self.coarse))

    def coarse_bounds(self, bucket: int) -> tuple[int, int]:
        """The scores ``[lo, hi)`` that map to coarse ``bucket``; empty (``lo == hi``) for the
        low buckets that are finer than the integers they separate."""
        lo = self._lower[bucket]
        hi = self._lower[bucket + 1] if bucket + 1 < self.coarse else SCORE_CEILING
        return lo, hi

    def slot_of(self, score: int) -> tuple[int, int]:
        """The ``(bucket, slot)`` of ``score``."""
        bucket = self.coarse_of(score)
        lo, hi = self.coarse_bounds(bucket)
        return bucket, (score - lo) * self.slots_in(bucket) // (hi - lo)

    def slots_in(self, bucket: int) -> int:
        """How many slots ``bucket`` is cut into: ``fine``, or fewer when it spans fewer scores
        (one score a slot then)."""
        lo, hi = self.coarse_bounds(bucket)
        return max(1, min(self.fine, hi - lo))

    def slot_bounds(self, bucket: int, slot: int) -> tuple[int, int]:
        """The scores ``[lo, hi)`` of ``slot`` of ``bucket``."""
        lo, hi = self.coarse_bounds(bucket)
        width, n = hi - lo, self.slots_in(bucket)
        # The smallest s with (s - lo) * n // width >= slot is lo + ceil(slot * width / n).
        return lo + -(-slot * width // n), lo + -(-(slot + 1) * width // n)

    @cached_property
    def nonempty_coarse(self) -> tuple[int, ...]:
        return tuple(
            b for b in range(self.coarse) if self.coarse_bounds(b)[0] < self.coarse_bounds(b)[1]
        )

    def _first_score_at_or_above(self, bucket: int) -> int:
        """The smallest score whose coarse bucket is ``>= bucket``, by bisection over the mapping
        (which never decreases), so floating-point rounding cannot make a bound disagree with it."""
        lo, hi = 0, SCORE_CEILING
        while lo < hi:
            mid = (lo + hi) // 2
            if self.coarse_of(mid) >= bucket:
                hi = mid
            else:
                lo = mid + 1
        return lo
