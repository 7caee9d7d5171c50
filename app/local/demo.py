"""Demo data: a few believable boards of every kind, so a new user sees a living leaderboard in
seconds. One roster of players plays four variants, each with a history of rounds over the last
months, some this week and some today, loaded through the seeding path.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from app.domain.calendar import UTC_CALENDAR
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition, Operator, ScoreFormat, move
from app.domain.keys import Order, RankKey
from app.domain.periods import Board, Period, PeriodKind
from app.domain.seed_file import parse_seed_text
from app.services.leaderboard import Leaderboard
from app.services.operations import SeedOptions

HISTORY_DAYS = 120
"""How far back the all-time boards' rounds go."""


@dataclass(frozen=True)
class Play:
    """How a variant's rounds score: each player's skill is drawn around ``mean`` (``spread``),
    each round around the player's skill (``round_spread``), never below ``floor``; ``rounds``
    is the most rounds a player plays before this week, earlier this week, and today."""

    mean: float
    spread: float
    round_spread: float
    floor: int = 0
    rounds: tuple[int, int, int] = (5, 4, 3)


TRIVIA_ROUNDS = Play(mean=5000, spread=1200, round_spread=700)
LAP_TIMES = Play(mean=62_000, spread=3_000, round_spread=1_200, floor=45_000, rounds=(8, 5, 3))
"""Milliseconds a lap: about a minute, the best players a few seconds faster."""
SEASON_POINTS = Play(mean=40, spread=12, round_spread=15, rounds=(40, 8, 4))
"""Points a round, added up over the season: a total of a few hundred to a couple of thousand."""


@dataclass(frozen=True)
class DemoVariant:
    """One variant the demo fills: how its rounds score, how its boards rank, and who plays it."""

    game: str
    variant: str
    play: Play
    definition: BoardDefinition | None = None
    """Put before seeding; ``None``: left undefined, following the service's default."""
    players: tuple[int, int] = (0, 1)
    """Who of the roster plays it, as ``(first, step)``: ``roster[first::step]``. Fewer rows are a
    quicker start-up (the demo is loaded before the service is ready)."""

    def plays(self, roster: list[DemoPlayer]) -> list[DemoPlayer]:
        first, step = self.players
        return roster[first::step]


DEMO_VARIANTS = (
    DemoVariant("trivia", "alltopics", TRIVIA_ROUNDS),
    DemoVariant("trivia", "sports", TRIVIA_ROUNDS),
    DemoVariant(
        "kart",
        "time-trial",
        LAP_TIMES,
        BoardDefinition(
            order=Order.ASC,
            operator=Operator.BEST,
            periods=(PeriodKind.ALLTIME, PeriodKind.WEEK),
            score_format=ScoreFormat.DURATION_MS,
        ),
        players=(0, 2),  # half the roster races
    ),
    DemoVariant(
        "trivia",
        "season",
        SEASON_POINTS,
        BoardDefinition(operator=Operator.SUM, periods=(PeriodKind.ALLTIME, PeriodKind.MONTH)),
        players=(1, 2),  # and the other half plays the season
    ),
)
"""Everyone plays ``trivia/alltopics`` and ``trivia/sports``, which follow the default definition
(higher is better, each player's best); half of the roster races ``kart/time-trial``, lap times in
milliseconds (lower is better, the best kept), and the other half plays ``trivia/season``, points
that add up (``sum``). Each player is the same person, with one name and country, on every board."""

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


def demo_rounds(
    rng: random.Random, players: list[DemoPlayer], *, now: datetime, play: Play = TRIVIA_ROUNDS
) -> list[Round]:
    """Each player's rounds of one variant: a few older ones (the last ``HISTORY_DAYS`` days
    before this week), some earlier this week, some today; scores around their own skill."""
    now_ms = to_ms(now) - 1000  # a little in the past: never ahead of the clock
    today = _starts(PeriodKind.DAY, now)
    week = _starts(PeriodKind.WEEK, now)
    older = to_ms(now - timedelta(days=HISTORY_DAYS))
    before_week, this_week, on_the_day = play.rounds
    rounds = []
    for player in players:
        skill = rng.gauss(play.mean, play.spread)
        windows = [(older, week, rng.randint(1, before_week))]
        if rng.random() < 0.75:
            windows.append((week, today, rng.randint(1, this_week)))
        if rng.random() < 0.6 or player is players[0]:  # someone is always on today's board
            windows.append((today, now_ms, rng.randint(1, on_the_day)))
        for start, end, count in windows:
            if end <= start:
                continue  # this week began today
            for _ in range(count):
                score = max(play.floor, int(rng.gauss(skill, play.round_spread)))
                rounds.append(Round(player, score, start + rng.randrange(end - start)))
    return rounds


def _starts(kind: PeriodKind, now: datetime) -> int:
    """When the UTC period of ``kind`` holding ``now`` began (the demo's boards are UTC's)."""
    span = UTC_CALENDAR.span(Period.containing(kind, now.astimezone(UTC)))
    return to_ms(span.starts_at or now)


def board_rows(rounds: list[Round], board: Board, definition: BoardDefinition) -> str:
    """CSV of each player's value on the board: what the board's rule makes of their rounds
    inside its period, taken in the order they were played (the best by the board's order, the
    latest, or the total at the time of the round that made it), as ``move`` does for real
    submissions. So the all-time board has players the week has not seen, a best over all time is
    at least as good as the week's, and a total over all time is at least the month's. A seed row
    sets the value."""
    span = definition.calendar.span(board.period)
    starts, ends = span.starts_at, span.ends_at
    window = None if starts is None or ends is None else (to_ms(starts), to_ms(ends))
    held: dict[str, RankKey] = {}
    people: dict[str, DemoPlayer] = {}
    for played in sorted(rounds, key=lambda r: r.achieved_ms):
        if window is not None and not window[0] <= played.achieved_ms < window[1]:
            continue
        player_id = played.player.player_id
        people[player_id] = played.player
        held[player_id] = move(
            definition,
            held.get(player_id),
            score=played.score,
            achieved_at_ms=played.achieved_ms,
            player_id=player_id,
        ).key
    lines = ["playerId,score,achievedAt,displayName,country"]
    for player_id, key in held.items():
        player = people[player_id]
        lines.append(
            f"{player_id},{key.score},{iso_ms(key.achieved_at_ms)},"
            f"{player.display_name},{player.country}"
        )
    return "\n".join(lines) + "\n"


async def load_demo(leaderboard: Leaderboard, *, players: int = 60, seed: int = 7) -> list[str]:
    """Define the demo variants that need it (through the definition store), then fill every demo
    board at once through the seeding path (the board rule, the counters rebuilt); returns their
    ids."""
    now = datetime.now(UTC)
    rng = random.Random(seed)
    roster = demo_players(players, seed=seed)
    rules = leaderboard.rules
    async with asyncio.TaskGroup() as defining:
        for demo in DEMO_VARIANTS:
            if demo.definition is None:
                continue
            # A field left out of a PUT takes the service's default: retention, here.
            definition = replace(demo.definition, retention_days=rules.default.retention_days)
            # Fresh tables, filled before the service says it is ready: nothing to hold.
            defining.create_task(
                rules.define(demo.game, demo.variant, definition, now=now, hold=False)
            )
    # As every request reads them: the definitions just put, or the default.
    resolved = await asyncio.gather(
        *(rules.definitions.of(d.game, d.variant) for d in DEMO_VARIANTS)
    )
    # The embedded backend's index is current at once and its tables were made by this process
    # a moment ago: seeded as fresh tables (``FRESH_TABLES_SEED``).
    fresh = SeedOptions(fresh_tables=True)
    async with asyncio.TaskGroup() as seeding:  # one failing cancels the others
        tasks = []
        for demo, found in zip(DEMO_VARIANTS, resolved, strict=True):
            definition = found.definition
            rounds = demo_rounds(rng, demo.plays(roster), now=now, play=demo.play)
            for period in (definition.calendar.containing(k, now) for k in definition.periods):
                if period is None:
                    continue
                board = Board(demo.game, demo.variant, period)
                rows = parse_seed_text(
                    board_rows(rounds, board, definition),
                    board=board,
                    now=now,
                    file_format="csv",
                    definition=definition,
                )
                tasks.append(
                    seeding.create_task(leaderboard.operations.seed(board, rows, options=fresh))
                )
    return [task.result().board_id for task in tasks]
