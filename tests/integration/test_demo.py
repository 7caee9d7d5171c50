"""``leaderboard serve --demo``: believable boards, loaded through the seeding path."""

from __future__ import annotations

from app.services.demo import load_demo
from app.settings import Settings
from app.store.dynamo import DynamoStore
from app.store.operations import BoardOperations
from tests.support import counter_total


async def test_demo_boards_are_full_ordered_and_counted(
    store: DynamoStore, settings: Settings
) -> None:
    operations = BoardOperations(store.client, store.tables, counter_shards=settings.counter_shards)
    boards = await load_demo(operations, retention=settings.retention, players=20)
    assert len(boards) == 6
    for board_id in boards:
        page = await store.query_board(board_id, limit=50, start=None)
        assert len(page.entries) == 20
        keys = [entry.key.encode() for entry in page.entries]
        assert keys == sorted(keys)
        assert all(entry.display_name and entry.country for entry in page.entries)
        assert await counter_total(store, board_id) == (20, 20)
