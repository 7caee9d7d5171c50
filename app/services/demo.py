"""Demo data: a few believable boards, so a new user sees a living leaderboard in seconds.

Loaded through the seeding path (the board rule, the counters rebuilt), for the current day, week
and all-time boards of ``trivia/alltopics`` and ``trivia/sports``.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from app.domain.buckets import BucketLayout
from app.domain.clock import iso_ms, to_ms
from app.domain.periods import Board, Period, PeriodKind
from app.domain.seed_file import parse_seed_text
from app.services.policies import SeedPolicy
from app.services.seeding import SeedPorts, seed_board

_FIRST = [
    "Ada",
    "Bo",
    "Chen",
    "Dara",
    "Eli",
    "Femi",
    "Gus",
    "Hana",
    "Ines",
    "Jun",
    "Kofi",
    "Lena",
    "Mo",
    "Nia",
    "Oskar",
    "Priya",
    "Quinn",
    "Rui",
    "Sami",
    "Tove",
    "Uma",
    "Vik",
    "Wen",
    "Yara",
]
_COUNTRIES = ["GB", "FR", "DE", "US", "BR", "JP", "IN", "NG", "SE", "ES", "KR", "MX"]


def demo_rows(rng: random.Random, *, players: int, now: datetime) -> str:
    """CSV of ``players`` trivia-like results (normal around 5,000) achieved today."""
    start = max(now - timedelta(hours=6), now.replace(hour=0, minute=0, second=0, microsecond=0))
    span_ms = max(1, to_ms(now) - to_ms(start) - 1000)
    lines = ["playerId,score,achievedAt,displayName,country"]
    for i in range(players):
        name = f"{rng.choice(_FIRST)} {chr(65 + rng.randrange(26))}."
        score = max(0, int(rng.gauss(5000, 1500)))
        achieved = iso_ms(to_ms(start) + rng.randrange(span_ms))
        lines.append(f"demo-{i:04d},{score},{achieved},{name},{rng.choice(_COUNTRIES)}")
    return "\n".join(lines) + "\n"


async def load_demo(
    *, ports: SeedPorts, retention: timedelta, players: int = 60, seed: int = 7
) -> list[str]:
    """Fill the demo boards; returns their ids."""
    now = datetime.now(UTC)
    rng = random.Random(seed)
    policy = SeedPolicy(retention=retention, layout=BucketLayout(), grace_s=0)
    loaded = []
    for variant in ("alltopics", "sports"):
        text = demo_rows(rng, players=players, now=now)
        for kind in (PeriodKind.ALLTIME, PeriodKind.DAY, PeriodKind.WEEK):
            board = Board("trivia", variant, Period.containing(kind, now))
            rows = parse_seed_text(text, board=board, now=now, file_format="csv")
            await seed_board(ports=ports, board=board, seed=rows, policy=policy)
            loaded.append(board.board_id)
    return loaded
