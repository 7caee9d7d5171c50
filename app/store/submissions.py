"""A submission, read in one call and written in one transaction (the ``SubmissionStore`` port): one
strongly consistent BatchGetItem of everything it decides on, so a replay or a refusal costs that
one call, and one TransactWriteItems of the completed record and every board's row with its
counters, which lands whole or not at all (docs/architecture.md walks through both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.storage_keys import moderation_sk
from app.domain.ties import SlotTies
from app.services.ports import EntryReads, SlotAddress, SubmissionState, SubmissionWrite
from app.store.client import Dynamo, TransactionItemsCancelled, TransactionThrottled
from app.store.counters import CounterChanges, CounterItems
from app.store.entrants import (
    attempt_update,
    entries_keys,
    entry_state,
    league_put,
    placement_writes,
)
from app.store.erasure_marks import erasing_key
from app.store.hiding import moderation_check
from app.store.items import Item, get_n, get_s, key
from app.store.leases import lease_key, lease_of
from app.store.moderation import action_of
from app.store.requests import record_of, record_put
from app.store.standings import is_row, row_put, standing_of
from app.store.tables import TTL_ATTRIBUTE
from app.store.ties import grain_key, slot_ties_of


def _address(item: Item) -> tuple[str, str]:
    return get_s(item, "playerId") or "", get_s(item, "leaderboardId") or ""


def _grains(items: Mapping[SlotAddress, Item | None]) -> dict[SlotAddress, SlotTies]:
    grains = {}
    for slot, item in items.items():
        ties = None if item is None else slot_ties_of(item)
        if ties is not None:
            grains[slot] = ties
    return grains


class SubmissionItems:
    def __init__(self, dynamo: Dynamo, *, table: str, counters: CounterItems) -> None:
        self._dynamo = dynamo
        self._table = table
        self._counters = counters

    async def read_submission(
        self,
        record_id: str,
        player_id: str,
        board_ids: Sequence[str],
        *,
        lease_board_ids: Sequence[str],
        grain_slots: Sequence[SlotAddress] = (),
        entries: EntryReads | None = None,
    ) -> SubmissionState:
        entry_board_ids, entry_tiers = (
            ((), ()) if entries is None else (entries.board_ids, entries.tiers)
        )
        record = key(player_id, record_id)
        entry_keys_read = entries_keys(player_id, entry_board_ids, entry_tiers)
        rows = {board: key(player_id, board) for board in board_ids}
        leases = {board: lease_key(board) for board in lease_board_ids}
        grains = {slot: grain_key(*slot) for slot in dict.fromkeys(grain_slots)}
        mark = erasing_key(player_id)
        # The player's moderation in the game (decision 0036): one more item, on their partition.
        game = board_ids[0].partition("#")[0] if board_ids else ""
        moderation = key(player_id, moderation_sk(game))
        found = {
            _address(item): item
            for item in await self._dynamo.batch_get(
                "reading the submission's state",
                table=self._table,
                keys=[
                    record,
                    *rows.values(),
                    *leases.values(),
                    *grains.values(),
                    mark,
                    *([moderation] if game else []),
                    *entry_keys_read,
                ],
            )
        }
        read = [found[_address(k)] for k in entry_keys_read if _address(k) in found]
        placed = {
            board: entry_state(read, player_id, board, entry_tiers) for board in entry_board_ids
        }

        def at(address: Item) -> Item | None:
            return found.get(_address(address))

        record_item, mark_item = at(record), at(mark)
        row_items = {board: at(k) for board, k in rows.items()}
        moderated = at(moderation)
        return SubmissionState(
            record=None if record_item is None else record_of(record_item),
            rows={
                # A hidden row is the player's too: a submission keeps it hidden, or hides it.
                board: standing_of(item) if item is not None and is_row(item) else None
                for board, item in row_items.items()
            },
            leases={board: lease_of(at(k)) for board, k in leases.items()},
            erasing_until=None if mark_item is None else get_n(mark_item, TTL_ATTRIBUTE),
            grains=_grains({slot: at(k) for slot, k in grains.items()}),
            moderation=None if moderated is None else action_of(moderated),
            placements={board: entry.placement for board, entry in placed.items()},
            placed={board: entry.placed for board, entry in placed.items()},
            entries=placed,
        )

    async def read_grains(self, slots: Sequence[SlotAddress]) -> Mapping[SlotAddress, SlotTies]:
        wanted = {slot: grain_key(*slot) for slot in dict.fromkeys(slots)}
        if not wanted:
            return {}
        found = {
            _address(item): item
            for item in await self._dynamo.batch_get(
                "reading the slots' tie grains", table=self._table, keys=list(wanted.values())
            )
        }
        return _grains({slot: found.get(_address(k)) for slot, k in wanted.items()})

    async def commit_submission(self, write: SubmissionWrite, *, token: str, now_ms: int) -> None:
        items: list[dict[str, Any]] = [
            record_put(
                self._table,
                write.player_id,
                write.record_id,
                request_hash=write.request_hash,
                response_json=write.response_json,
                expires_at=write.expires_at,
                now_ms=now_ms,
            )
        ]
        if write.moderated is not None and write.boards:
            items.append(
                moderation_check(
                    self._table,
                    write.player_id,
                    write.boards[0].board_id,
                    moderated=write.moderated,
                )
            )
        for entry in write.entries:
            if entry.new:
                items.extend(
                    placement_writes(
                        self._table, entry.placement, max_entrants=None, expires_at=entry.expires_at
                    )
                )
                if entry.league is not None:
                    items.append(league_put(self._table, write.player_id, entry.league))
            elif entry.counted:
                items.append(attempt_update(self._table, entry.placement))
        planned: list[tuple[int, CounterChanges]] = []
        for board in write.boards:
            items.append(row_put(self._table, board))
            changes = self._counters.changes(
                board.board_id, board.counters, expires_at=board.expires_at
            )
            planned.append((len(items), changes))
            items.extend(changes.updates)
        try:
            async with self._counters.holding_all([changes for _, changes in planned]):
                await self._dynamo.transact("writing the scores", items, token=token)
        except (TransactionItemsCancelled, TransactionThrottled) as cancelled:
            reasons = cancelled.item_reasons
            for first, changes in planned:
                self._counters.after_cancel(changes, reasons[first : first + len(changes.updates)])
            raise
