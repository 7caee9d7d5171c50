"""Hiding players on a 16-shard board of 10,000 entries leaves every other player's rank exact
(issue 43's target), checked over HTTP on the embedded backend, and how long it takes.

A variant of 16 shards with an all-time and a day board, each seeded with the same ``players``
entries through the seeding service (its counters known absent, its tie counters built, as
seeding builds them); a quarter of them share one score, so that their slot is crowded on every
shard (past the rank count cap these runs set, 32 entries: the ranks in its middle come from its
tie counters). Then three players are hidden (the top one, one in the middle, one in the middle of
the crowded slot) and restored, and before, between and after, on each board:

- every partition's counters equal its visible rows (``tests.support.assert_counts_agree``);
- the rows hold exactly the entries seeded, hidden exactly where a player is hidden;
- the top page and ``playerCount``;
- the rank of a random sample of the other players, and of every player just below a hidden
  one, each equal to 1 + the visible players sorting before them, counted from the rows (the
  score, moment and id their keys hold, sorted here, not by the service), and a hidden player's
  own rank a 404;

read from a task that reads every rank live (``hot_board_summary_seconds=0``, the tests'
default) and from one that answers from its mirror of the board (``=1``), once the mirror is as
of a moment after the last change. Prints the figures and the verdict; exits 1 on any wrong
answer::

    python -m bench.moderation_scale [--players 10000] [--sample 300] [--json FILE]

``tests/integration/test_moderation_scale.py`` runs the same check on a few hundred entries.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.bootstrap import Runtime, open_runtime
from app.domain.clock import from_ms, iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.periods import Board, Period, PeriodKind
from app.domain.seed_file import parse_seed_text
from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from app.settings import Settings
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, Service, make_settings, serve
from tests.support import assert_counts_agree, operations, scores_items

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
GAME, VARIANT = "trivia", "hot"
PERIODS = (PeriodKind.ALLTIME, PeriodKind.DAY)
CROWDED_SCORE = 5_000
MIRROR_AGE_S = 1.0
MIRROR_WAIT_S = 60.0


@dataclass(frozen=True)
class Scale:
    players: int = 10_000
    shards: int = 16
    sample: int = 300
    """Other players whose rank is read on each board at each step, from each task."""
    crowd: int = 0
    """Players who share ``CROWDED_SCORE``; 0: a quarter of ``players``."""
    seed: int = 43
    periods: tuple[PeriodKind, ...] = PERIODS
    rank_count_cap: int = 32
    """The rank count cap of the run's tasks (the service's default is 2,000): a slot holding
    more entries than this on a shard is crowded there, and its ranks come from its tie
    counters."""

    @property
    def crowded(self) -> int:
        return self.crowd or self.players // 4


@dataclass
class Step:
    name: str
    seconds: float
    ranks_live: int = 0
    ranks_mirror: int = 0
    """Ranks answered from the mirror (read live by the mirroring task: ``ranks_mirror_live``)."""
    ranks_mirror_live: int = 0
    parts: dict[str, float] = field(default_factory=dict)
    """Seconds of each part: counters, rows, live reads, waiting for the mirror, mirror reads."""


@dataclass
class Figures:
    scale: Scale
    seconds: dict[str, float] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    @property
    def ranks_checked(self) -> int:
        return sum(s.ranks_live + s.ranks_mirror + s.ranks_mirror_live for s in self.steps)


@dataclass(frozen=True)
class Row:
    player: str
    score: int
    achieved_ms: int


def entries(scale: Scale, now_ms: int) -> list[Row]:
    """The seeded entries: distinct players, scores spread over four decades but for the crowd's,
    moments within the last two minutes of today (so the day board takes them too)."""
    rng = random.Random(scale.seed)
    day_start = to_ms(from_ms(now_ms).replace(hour=0, minute=0, second=0, microsecond=0))
    base = max(now_ms - 120_000, day_start)
    span = max(1, min(100_000, now_ms - base - 1_000))
    rows = []
    for i in range(scale.players):
        score = CROWDED_SCORE if i % 4 == 3 and i // 4 < scale.crowded else 0
        score = score or rng.randrange(10_000, 100_000_000)
        rows.append(Row(f"p{i:05d}", score, base + rng.randrange(span)))
    return rows


def board_of(period: PeriodKind, now_ms: int) -> Board:
    return Board(GAME, VARIANT, Period.containing(period, from_ms(now_ms)))


def sort_key(row: Row) -> tuple[int, int, str]:
    """Higher score first, then the earlier moment, then the smaller id: the board's rule
    (``app.domain.keys``), applied here to the values, not to the service's encoded keys."""
    return (-row.score, row.achieved_ms, row.player)


class Checker:
    """The checks of one run, its wrong answers collected (not raised) so that a run reports all
    it found."""

    def __init__(self, scale: Scale, runtime: Runtime, live: Service, mirrored: Service) -> None:
        self.scale = scale
        self.runtime = runtime
        self.live = live
        self.mirrored = mirrored
        self.figures = Figures(scale)
        self.rows: list[Row] = []
        self.boards: list[Board] = []
        self.sample: list[str] = []

    def wrong(self, what: str) -> None:
        self.figures.wrong.append(what)

    async def board_rows(self) -> dict[str, dict[str, tuple[Row, bool]]]:
        """Each board's rows from a scan, by player: (the entry its key holds, hidden)."""
        found: dict[str, dict[str, tuple[Row, bool]]] = {b.board_id: {} for b in self.boards}
        for item in await scores_items(self.runtime):
            sk = item["leaderboardId"].get("S", "")
            board_id = next(
                (b for b in found if sk == b or sk.startswith(f"{b}#")),
                None,
            )
            encoded = item.get("rankKey", item.get("hiddenKey"))
            if board_id is None or encoded is None:
                continue
            key = RankKey.decode(encoded["S"])
            row = Row(key.player_id, key.score, key.achieved_at_ms)
            found[board_id][row.player] = (row, "rankKey" not in item)
        return found

    async def check(self, step: str, hidden: set[str]) -> None:
        started = time.perf_counter()
        record = Step(step, 0.0)
        seeded = {r.player: r for r in self.rows}
        changed_at = datetime.now(UTC)
        lap = time.perf_counter()

        def part(name: str) -> None:
            nonlocal lap
            now = time.perf_counter()
            record.parts[name] = round(record.parts.get(name, 0.0) + now - lap, 2)
            lap = now

        for board in self.boards:
            board_id = board.board_id
            try:
                await assert_counts_agree(self.runtime, board_id)
            except AssertionError as exc:
                self.wrong(f"{step} {board_id}: counters: {exc}")
        part("counters")
        held = await self.board_rows()
        part("rows")
        for board in self.boards:
            board_id = board.board_id
            rows = held[board_id]
            if {p: r for p, (r, _) in rows.items()} != seeded:
                self.wrong(f"{step} {board_id}: the rows are not the entries seeded")
            if {p for p, (_, h) in rows.items() if h} != hidden:
                self.wrong(f"{step} {board_id}: hidden rows are not {sorted(hidden)}")
            visible = sorted((r for r, h in rows.values() if not h), key=sort_key)
            expected = {r.player: place for place, r in enumerate(visible, start=1)}
            order = sorted(seeded.values(), key=sort_key)
            below = []
            for player in sorted(hidden):
                at = order.index(seeded[player])
                after = next((r.player for r in order[at + 1 :] if r.player not in hidden), None)
                if after is not None:
                    below.append(after)
            targets = [p for p in self.sample if p not in hidden] + below
            path = f"/v1/leaderboards/{GAME}/{VARIANT}/{board.period.kind}"
            if await self.read(
                self.live.http, step, path, targets, expected, hidden, visible, mirror=False
            ):
                self.wrong(f"{step} {path}: the live task answered from a mirror")
            record.ranks_live += len(targets)
            part("live reads")
            counted = await self.read_mirrored(
                step, path, targets, expected, hidden, visible, changed_at, part
            )
            record.ranks_mirror += counted[0]
            record.ranks_mirror_live += counted[1]
        record.seconds = time.perf_counter() - started
        self.figures.steps.append(record)

    async def read(
        self,
        http: httpx.AsyncClient,
        step: str,
        path: str,
        targets: list[str],
        expected: dict[str, int],
        hidden: set[str],
        visible: list[Row],
        *,
        mirror: bool,
        since: datetime | None = None,
    ) -> int:
        """The top page, ``playerCount``, the targets' ranks and the hidden players' 404s; how
        many of the ranks came from the mirror (all of them, read live)."""
        where = f"{step} {path} ({'mirror' if mirror else 'live'})"
        page = await http.get(path, params={"limit": 100})
        if page.status_code != 200:
            self.wrong(f"{where}: top page {page.status_code}")
        else:
            body = page.json()
            shown = [(e["rank"], e["playerId"]) for e in body["entries"]]
            if shown != [(i, r.player) for i, r in enumerate(visible[:100], start=1)]:
                self.wrong(f"{where}: top page {shown[:5]}...")
            if body["playerCount"] != len(visible):
                self.wrong(f"{where}: playerCount {body['playerCount']}, not {len(visible)}")
        from_mirror = 0
        gate = asyncio.Semaphore(4)

        async def one(player: str) -> None:
            nonlocal from_mirror
            async with gate:
                found = await http.get(f"{path}/players/{player}")
            if found.status_code != 200:
                self.wrong(f"{where}: {player}: {found.status_code}")
                return
            rank = found.json()["rank"]
            if rank.get("kind") != "exact" or rank.get("rank") != expected[player]:
                self.wrong(f"{where}: {player}: {rank}, not exactly {expected[player]}")
            read_at = found.headers.get("Leaderboard-Read-At")
            if read_at is not None:
                from_mirror += 1
                if since is not None and datetime.fromisoformat(read_at) < since:
                    self.wrong(f"{where}: {player}: a mirror as of {read_at}, before {since}")

        await asyncio.gather(*(one(p) for p in targets))
        for player in sorted(hidden):
            own = await http.get(f"{path}/players/{player}")
            if own.status_code != 404:
                self.wrong(f"{where}: hidden {player}: {own.status_code}, not 404")
        return from_mirror

    async def read_mirrored(
        self,
        step: str,
        path: str,
        targets: list[str],
        expected: dict[str, int],
        hidden: set[str],
        visible: list[Row],
        since: datetime,
        part: Callable[[str], None],
    ) -> tuple[int, int]:
        """As ``read`` from the mirroring task, once its mirror of the board and its summary are
        as of a moment after ``since`` (the last change): (ranks from the mirror, read live)."""
        http = self.mirrored.http
        probe = targets[0]
        deadline = time.monotonic() + MIRROR_WAIT_S
        while True:
            ranked = await http.get(f"{path}/players/{probe}")
            page = await http.get(path, params={"limit": 100})
            stamps = [r.headers.get("Leaderboard-Read-At") for r in (ranked, page)]
            if all(s is not None and datetime.fromisoformat(s) > since for s in stamps):
                break
            if time.monotonic() > deadline:
                self.wrong(f"{step} {path}: no mirror as of after {since} within {MIRROR_WAIT_S}s")
                return 0, 0
            await asyncio.sleep(0.2)
        part("mirror wait")
        mirrored = await self.read(
            http, step, path, targets, expected, hidden, visible, mirror=True, since=since
        )
        part("mirror reads")
        return mirrored, len(targets) - mirrored


async def timed(figures: Figures, name: str, work: Callable[[], Awaitable[Any]]) -> Any:
    started = time.perf_counter()
    try:
        return await work()
    finally:
        figures.seconds[name] = round(time.perf_counter() - started, 2)
        print(f"{name}: {figures.seconds[name]} s", file=sys.stderr, flush=True)


async def run_check(checker: Checker) -> Figures:
    scale, figures, runtime = checker.scale, checker.figures, checker.runtime
    http = checker.live.http
    defined = await http.put(
        f"/v1/games/{GAME}/variants/{VARIANT}",
        json={"shards": scale.shards, "periods": [p.value for p in scale.periods]},
        headers=ADMIN,
    )
    assert defined.status_code == 200, defined.text
    now = to_ms(datetime.now(UTC))
    checker.rows = entries(scale, now)
    checker.boards = [board_of(p, now) for p in scale.periods]
    definition = BoardDefinition(shards=scale.shards, periods=scale.periods)
    text = "playerId,score,achievedAt\n" + "".join(
        f"{r.player},{r.score},{iso_ms(r.achieved_ms)}\n" for r in checker.rows
    )
    # The seeding service as the demo seeds its boards, on tables made a moment ago (no grace,
    # no counters to read first), with the service's tie counters (the crowded slot's).
    seeding = replace(runtime.policies.seed, grace_s=0, settle_delay_s=0.05, counters_absent=True)
    ops = operations(runtime, seed=seeding)

    async def seed_all() -> None:
        for board in checker.boards:
            parsed = parse_seed_text(
                text, board=board, now=datetime.now(UTC), definition=definition
            )
            report = await ops.seed(board, parsed)
            assert report.rows_written == scale.players, report

    await timed(figures, "seed", seed_all)
    order = sorted(checker.rows, key=sort_key)
    crowd = [r for r in order if r.score == CROWDED_SCORE]
    middle = next(r for r in order[len(order) // 2 :] if r.score != CROWDED_SCORE)
    figures.hidden = [order[0].player, middle.player, crowd[len(crowd) // 2].player]
    others = sorted({r.player for r in checker.rows} - set(figures.hidden))
    checker.sample = random.Random(scale.seed).sample(others, min(scale.sample, len(others)))

    await timed(figures, "check seeded", lambda: checker.check("seeded", set()))
    for player in figures.hidden:
        hidden = await timed(
            figures,
            f"hide {player}",
            lambda p=player: http.put(  # type: ignore[misc]
                f"/v1/games/{GAME}/moderation/players/{p}",
                json={"action": "hide", "reason": "scale check"},
                headers=ADMIN,
            ),
        )
        assert hidden.status_code == 200, hidden.text
    await timed(figures, "check hidden", lambda: checker.check("hidden", set(figures.hidden)))
    for player in figures.hidden:
        restored = await timed(
            figures,
            f"restore {player}",
            lambda p=player: http.delete(  # type: ignore[misc]
                f"/v1/games/{GAME}/moderation/players/{p}", headers=ADMIN
            ),
        )
        assert restored.status_code == 200, restored.text
    await timed(figures, "check restored", lambda: checker.check("restored", set()))
    return figures


def scale_settings(
    scale: Scale, endpoint: str, tables: TableNames, **overrides: object
) -> Settings:
    # A rank read live on 16 shards is about 66 calls, and the embedded backend answers one call
    # at a time, walking the whole table for each RankIndex Query: at 10,000 entries a call
    # waits past the default read timeout (5 s) behind a mirror's refresh, and a read past the
    # request's deadline (503): the rig's limits, not the service's, so both are long here.
    return make_settings(
        endpoint,
        tables,
        rank_count_cap=scale.rank_count_cap,
        dynamodb_read_timeout_seconds=60,
        request_deadline_seconds=120,
        **overrides,
    )


async def check_scale(endpoint: str, scale: Scale) -> Figures:
    """The whole check on fresh tables of the backend at ``endpoint`` (dropped afterwards)."""
    run = uuid.uuid4().hex[:10]
    tables = TableNames(scores=f"scores-{run}", snapshots=f"snapshots-{run}")
    live_settings = scale_settings(scale, endpoint, tables)
    mirror_settings = scale_settings(
        scale, endpoint, tables, hot_board_summary_seconds=MIRROR_AGE_S
    )
    started = time.perf_counter()
    async with open_runtime(live_settings, create_tables=True) as runtime:
        try:
            async with serve(live_settings) as live, serve(mirror_settings) as mirrored:
                figures = await run_check(Checker(scale, runtime, live, mirrored))
        finally:
            for name in (tables.scores, tables.snapshots):
                with contextlib.suppress(runtime.client.exceptions.ResourceNotFoundException):
                    await runtime.client.delete_table(TableName=name)
    figures.seconds["total"] = round(time.perf_counter() - started, 2)
    return figures


def render(figures: Figures, command: str) -> str:
    scale = figures.scale
    lines = [
        f"`{command}`",
        "",
        f"{scale.players:,} entries on each of {len(scale.periods)} boards "
        f"({', '.join(scale.periods)}) of "
        f"{scale.shards} shards, {scale.crowded:,} of them in one slot (crowded on every shard "
        f"past the rank count cap of {scale.rank_count_cap}); hidden, then restored: "
        f"{', '.join(figures.hidden)} (the top, the middle, the crowded slot's middle).",
        "",
        "| step | seconds |",
        "| --- | ---: |",
        *(f"| {name} | {seconds:.2f} |" for name, seconds in figures.seconds.items()),
        "",
        "| check | seconds | ranks live | ranks from the mirror | read live by the mirroring task |",
        "| --- | ---: | ---: | ---: | ---: |",
        *(
            f"| {s.name} | {s.seconds:.2f} | {s.ranks_live} | {s.ranks_mirror} | "
            f"{s.ranks_mirror_live} |"
            for s in figures.steps
        ),
        "",
        *(
            f"- {s.name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in s.parts.items())
            for s in figures.steps
        ),
        "",
        f"Ranks checked: {figures.ranks_checked:,}. Wrong answers: {len(figures.wrong)}.",
    ]
    lines += [f"- {w}" for w in figures.wrong[:50]]
    verdict = "PASS: every rank exact" if not figures.wrong else "FAIL: wrong answers above"
    return "\n".join([*lines, "", f"Verdict: {verdict}", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=Scale.players)
    parser.add_argument("--shards", type=int, default=Scale.shards)
    parser.add_argument("--sample", type=int, default=Scale.sample)
    parser.add_argument("--crowd", type=int, default=0, help="players on one score (a quarter)")
    parser.add_argument(
        "--periods", nargs="+", type=PeriodKind, default=list(PERIODS), help="alltime day"
    )
    parser.add_argument("--seed", type=int, default=Scale.seed)
    parser.add_argument("--rank-count-cap", type=int, default=Scale.rank_count_cap)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    scale = Scale(
        args.players,
        args.shards,
        args.sample,
        crowd=args.crowd,
        seed=args.seed,
        periods=tuple(args.periods),
        rank_count_cap=args.rank_count_cap,
    )
    configure_logging(json=True, level=40, cache=False)
    with EmbeddedDynamo() as endpoint:
        figures = asyncio.run(check_scale(endpoint, scale))
    command = "python -m bench.moderation_scale " + " ".join(argv or sys.argv[1:])
    print(render(figures, command.strip()))
    if args.json:
        args.json.write_text(json.dumps(asdict(figures), indent=2) + "\n")
    return 1 if figures.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
