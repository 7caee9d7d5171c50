"""Identifiers and the RankIndex sort key.

A rank key on a board where higher is better (``desc``) is
``<SCORE_CEILING - score, 13 digits>#<achievedAt ms, 13 digits>#<playerId>``; where lower is better
(``asc``), ``a<score, 13 digits>#<achievedAt ms, 13 digits>#<playerId>``. Either way one ascending
read of the index gives the best score first, the earliest achievement first among equal scores,
and the smaller player id first on an exact tie of both; and a key says its own order (every key of
a board has the same), so any key decodes without its board's definition.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import assert_never

SCORE_CEILING = 10**12
"""Scores are integers in ``[0, SCORE_CEILING)``."""

_DIGITS = 13
_MAX_MILLIS = 10**_DIGITS - 1
ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"
_ID_RE = re.compile(ID_PATTERN)
# Every character an id may hold sorts below "~", so a key followed by "~" runs sorts after every
# key it is a prefix of; see key_just_below.
_ABOVE_ANY_ID_CHAR = "~"


def is_valid_id(value: str) -> bool:
    """Ids (players, games, variants) are 1..64 characters of ``[A-Za-z0-9_.:-]``: never ``#``."""
    return _ID_RE.fullmatch(value) is not None


def check_score(score: int) -> int:
    """Return ``score`` if it can be keyed, else raise ``ValueError``.

    A score at or above the ceiling would invert to a negative number whose ``-`` sorts before every
    real key, silently corrupting the board; a bool is refused because it is an int in Python only.
    """
    if isinstance(score, bool) or not isinstance(score, int):
        raise TypeError(f"score must be an integer, not {type(score).__name__}")
    if not 0 <= score < SCORE_CEILING:
        raise ValueError(f"score must be in [0, {SCORE_CEILING}), got {score}")
    return score


class Order(enum.StrEnum):
    """Which scores rank first on a board."""

    DESC = "desc"
    """Higher is better (points)."""
    ASC = "asc"
    """Lower is better (race times, strokes)."""

    @property
    def words(self) -> str:
        """This order as a person reads it: the board viewer's words for it (``/viewer/words.json``
        serves them), and nowhere else."""
        match self:
            case Order.DESC:
                return "Higher is better"
            case Order.ASC:
                return "Lower is better"
            case unknown:
                assert_never(unknown)


_ASC_MARK = "a"
"""Leads every ``asc`` key; ``desc`` keys lead with a digit, as the earlier Lambda design's did."""


def score_prefix(score: int, order: Order = Order.DESC) -> str:
    """The first field of every rank key for ``score``, with its separator."""
    check_score(score)
    if order is Order.ASC:
        return f"{_ASC_MARK}{score:0{_DIGITS}d}#"
    return f"{SCORE_CEILING - score:0{_DIGITS}d}#"


@dataclass(frozen=True, order=False)
class RankKey:
    """What a rank key encodes: the ordering fields of one entry."""

    score: int
    achieved_at_ms: int
    player_id: str
    order_by: Order = Order.DESC

    def encode(self) -> str:
        check_score(self.score)
        if not 0 <= self.achieved_at_ms <= _MAX_MILLIS:
            raise ValueError(f"achievedAt millis out of range: {self.achieved_at_ms}")
        if not is_valid_id(self.player_id):
            raise ValueError(f"invalid player id: {self.player_id!r}")
        prefix = score_prefix(self.score, self.order_by)
        return f"{prefix}{self.achieved_at_ms:0{_DIGITS}d}#{self.player_id}"

    @property
    def order(self) -> tuple[int, int, str]:
        """The board order as a tuple: smaller is better."""
        score = self.score if self.order_by is Order.ASC else -self.score
        return (score, self.achieved_at_ms, self.player_id)

    def better_than(self, other: RankKey) -> bool:
        return self.order < other.order

    @classmethod
    def decode(cls, key: str) -> RankKey:
        first, millis, player_id = key.split("#", 2)
        order = Order.ASC if first.startswith(_ASC_MARK) else Order.DESC
        digits = first.removeprefix(_ASC_MARK)
        if len(digits) != _DIGITS or len(millis) != _DIGITS:
            raise ValueError(f"malformed rank key: {key!r}")
        score = int(digits) if order is Order.ASC else SCORE_CEILING - int(digits)
        return cls(score=score, achieved_at_ms=int(millis), player_id=player_id, order_by=order)


def key_just_below(key: str) -> str:
    """The greatest string that no valid rank key lies strictly between and ``key``.

    DynamoDB's key conditions allow one comparison on the sort key, and ``BETWEEN`` is inclusive;
    this bound lets one ``BETWEEN lo AND key_just_below(k)`` count the entries strictly ahead of
    ``k``. It replaces the last character by its predecessor and pads with a character above any id
    character, longer than any id, so every valid key below ``key`` is at or below the result.
    """
    return key[:-1] + chr(ord(key[-1]) - 1) + _ABOVE_ANY_ID_CHAR * 65
