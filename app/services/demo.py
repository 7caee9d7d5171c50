"""Demo data: a few believable boards, so a new user sees a living leaderboard in seconds.

One roster of players (each the same person, with one name and country, on every board) plays
``trivia/alltopics`` and ``trivia/sports``: a history of rounds over the last months, some of them
this week and some today. Each board holds each player's best round of its own period, so the
all-time board has players the week has not seen, and a player's all-time best is at least their
week's best, which is at least their day's, as the board rule makes it for real submissions.
Loaded through the seeding path (the board rule, the counters rebuilt), every board at once.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app.domain.buckets import BucketLayout
from app.domain.clock import iso_ms, to_ms
from app.domain.periods import Board, Period, PeriodKind
from app.domain.seed_file import parse_seed_text
from app.services.definitions import Definitions
from app.services.policies import SeedPolicy
from app.services.seeding import SeedPorts, seed_board

GAME = "trivia"
VARIANTS = ("alltopics", "sports")
PERIODS = (PeriodKind.ALLTIME, PeriodKind.WEEK, PeriodKind.DAY)
HISTORY_DAYS = 120
"""How far back the all-time boards' rounds go."""

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


@dataclass(frozen=True)
class DemoPlayer:
    player_id: str
    display_name: str
    country: str


@dataclass(frozen=True)
class Round:
    player: DemoPlayer
    score: int
    achieved_ms: int


def demo_players(count: int, *, seed: int = 7) -> list[DemoPlayer]:
    """The roster: player ``i`` is the same person however many are asked for."""
    players = []
    for i in range(count):
        rng = random.Random(f"{seed}:{i}")
        name = f"{rng.choice(_FIRST)} {chr(65 + rng.randrange(26))}."
        players.append(DemoPlayer(f"demo-{i:04d}", name, rng.choice(_COUNTRIES)))
    return players


def demo_rounds(rng: random.Random, players: list[DemoPlayer], *, now: datetime) -> list[Round]:
    """Each player's rounds of one variant: a few older ones (the last ``HISTORY_DAYS`` days
    before this week), some earlier this week, some today; scores around their own skill."""
    now_ms = to_ms(now) - 1000  # a little in the past: never ahead of the clock
    today = to_ms(Period.containing(PeriodKind.DAY, now).start())
    week = to_ms(Period.containing(PeriodKind.WEEK, now).start())
    older = to_ms(now - timedelta(days=HISTORY_DAYS))
    rounds = []
    for player in players:
        skill = rng.gauss(5000, 1200)
        windows = [(older, week, rng.randint(1, 5))]
        if rng.random() < 0.75:
            windows.append((week, today, rng.randint(1, 4)))
        if rng.random() < 0.6 or player is players[0]:  # someone is always on today's board
            windows.append((today, now_ms, rng.randint(1, 3)))
        for start, end, count in windows:
            if end <= start:
                continue  # this week began today
            for _ in range(count):
                score = max(0, int(rng.gauss(skill, 700)))
                rounds.append(Round(player, score, start + rng.randrange(end - start)))
    return rounds


def board_rows(rounds: list[Round], board: Board) -> str:
    """CSV of each player's best round inside the board's period (the board rule: the higher
    score, then the earlier time)."""
    end = board.period.end()
    window = None if end is None else (to_ms(board.period.start()), to_ms(end))
    best: dict[str, Round] = {}
    for held in rounds:
        if window is not None and not window[0] <= held.achieved_ms < window[1]:
            continue
        current = best.get(held.player.player_id)
        if current is None or (-held.score, held.achieved_ms) < (
            -current.score,
            current.achieved_ms,
        ):
            best[held.player.player_id] = held
    lines = ["playerId,score,achievedAt,displayName,country"]
    for held in best.values():
        player = held.player
        lines.append(
            f"{player.player_id},{held.score},{iso_ms(held.achieved_ms)},"
            f"{player.display_name},{player.country}"
        )
    return "\n".join(lines) + "\n"


async def load_demo(
    *, ports: SeedPorts, definitions: Definitions, players: int = 60, seed: int = 7
) -> list[str]:
    """Fill the demo boards, all at once; returns their ids."""
    now = datetime.now(UTC)
    rng = random.Random(seed)
    roster = demo_players(players, seed=seed)
    # The embedded backend's index is current at once: no waiting for it to settle, and nothing
    # to wait out before the lease (no submission can have started on a board before the demo).
    policy = SeedPolicy(layout=BucketLayout(), grace_s=0, settle_delay_s=0.05)
    async with asyncio.TaskGroup() as seeding:  # one failing cancels the others
        tasks = []
        for variant in VARIANTS:
            definition = (await definitions.of(GAME, variant)).definition
            rounds = demo_rounds(rng, roster, now=now)
            for kind in PERIODS:
                board = Board(GAME, variant, Period.containing(kind, now))
                rows = parse_seed_text(
                    board_rows(rounds, board),
                    board=board,
                    now=now,
                    file_format="csv",
                    definition=definition,
                )
                tasks.append(
                    seeding.create_task(
                        seed_board(ports=ports, board=board, seed=rows, policy=policy)
                    )
                )
    return [task.result().board_id for task in tasks]
