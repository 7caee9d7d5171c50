"""``persist``: an operator's write tried again while DynamoDB says to, and only then."""

from __future__ import annotations

import pytest

from app.errors import ItemBusy, TransactionCancelled
from app.services.work import persist


class _Write:
    def __init__(self, *refusals: Exception) -> None:
        self.refusals = list(refusals)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.refusals:
            raise self.refusals.pop(0)
        return "written"


async def test_a_transaction_cancelled_by_a_conflict_is_tried_again() -> None:
    write = _Write(
        TransactionCancelled("restoring the player", kind="conflict"),
        TransactionCancelled("restoring the player", kind="conflict"),
    )
    assert await persist(write, base_s=0.001) == "written"
    assert write.calls == 3


async def test_conflicts_on_every_attempt_are_a_503_to_try_again_not_a_bug() -> None:
    write = _Write(
        *(TransactionCancelled("restoring the player", kind="conflict") for _ in range(3))
    )
    with pytest.raises(ItemBusy) as refused:
        await persist(write, attempts=3, base_s=0.001)
    assert refused.value.status == 503
    assert "restoring the player" in refused.value.detail
    assert write.calls == 3


async def test_a_failed_condition_is_not_tried_again() -> None:
    write = _Write(TransactionCancelled("restoring the player", kind="condition"))
    with pytest.raises(TransactionCancelled):
        await persist(write, base_s=0.001)
    assert write.calls == 1
