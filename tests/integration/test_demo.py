"""``leaderboard serve --demo``: believable boards, loaded through the seeding path."""

from __future__ import annotations

from app.bootstrap import Runtime
from app.services.demo import load_demo
from app.services.seeding import SeedPorts
from app.settings import Settings
from tests.support import counter_total


async def test_demo_boards_are_full_ordered_and_counted(
    runtime: Runtime, settings: Settings
) -> None:
    s = runtime.stores
    ports = SeedPorts(s.standings, s.index, s.counters, s.leases, s.registry)
    boards = await load_demo(ports=ports, retention=settings.retention, players=20)
    assert len(boards) == 6
    for board_id in boards:
        page = await runtime.stores.index.query_board(board_id, limit=50, start=None)
        assert len(page.entries) == 20
        keys = [entry.key.encode() for entry in page.entries]
        assert keys == sorted(keys)
        assert all(entry.display_name and entry.country for entry in page.entries)
        assert await counter_total(runtime, board_id) == (20, 20)
