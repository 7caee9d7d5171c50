"""Item sizes as DynamoDB documents them ("Item sizes and formats", DynamoDB developer guide), each
rule with an item worked by hand."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal
from typing import Any, cast

import pytest

from app.domain.keys import RankKey
from app.domain.models import MAX_METADATA_BYTES, Entry, Standing, StandingWrite
from app.services.ports import Snapshot, SnapshotEntry, SnapshotFit
from app.settings import Settings
from app.store.client import Dynamo
from app.store.item_sizes import ITEM_LIMIT_BYTES, item_size, number_size
from app.store.snapshots import SnapshotItems
from app.store.standings import row_put
from app.store.tables import TableNames


def test_the_limit_is_400_kb() -> None:
    assert ITEM_LIMIT_BYTES == 409_600


@pytest.mark.parametrize(
    ("item", "size"),
    [
        # A string: its name's UTF-8 bytes plus its own.
        ({"name": {"S": "abc"}}, 4 + 3),
        ({"naïve": {"S": "日本"}}, 6 + 6),  # ï is 2 bytes, each of 日本 3
        ({"n": {"S": "😀"}}, 1 + 4),  # outside the BMP: 4 bytes in UTF-8
        # A binary: its raw bytes, not their base64.
        ({"blob": {"B": b"\x00\x01\x02\x03\x04"}}, 4 + 5),
        # Null and Boolean: 1 byte.
        ({"gone": {"NULL": True}}, 4 + 1),
        ({"ok": {"BOOL": False}}, 2 + 1),
        # An empty list or map: 3 bytes.
        ({"list": {"L": []}}, 4 + 3),
        ({"map": {"M": {}}}, 3 + 3),
        # A list: 3 bytes, and each element 1 byte plus its value.
        (
            {"l": {"L": [{"S": "ab"}, {"N": "7"}, {"NULL": True}]}},
            1 + 3 + (1 + 2) + (1 + 2) + (1 + 1),
        ),
        # A map: 3 bytes, and each element 1 byte plus its name plus its value.
        ({"m": {"M": {"k": {"S": "v"}, "kk": {"L": []}}}}, 1 + 3 + (1 + 1 + 1) + (1 + 2 + 3)),
        # Nested: a list of maps, as a snapshot's entries.
        (
            {"entries": {"L": [{"M": {"rank": {"N": "1"}, "playerId": {"S": "ann"}}}]}},
            7 + 3 + 1 + (3 + (1 + 4 + 2) + (1 + 8 + 3)),
        ),
        # The attributes of an item add up.
        (
            {"id": {"S": "abc1231"}, "hostName": {"S": "Harry Mason"}, "expiresAt": {"N": "2099"}},
            (2 + 7) + (8 + 11) + (9 + 3),
        ),
    ],
)
def test_each_documented_rule(item: dict[str, Any], size: int) -> None:
    assert item_size(item) == size


@pytest.mark.parametrize(
    ("number", "size"),
    [
        # 1 byte per two significant digits, plus 1; leading and trailing zeros trimmed.
        ("7", 2),
        ("42", 2),
        ("123", 3),
        ("1234", 3),
        ("12345", 4),
        ("1000", 2),
        ("0001", 2),
        ("-42", 2),
        ("0.0012", 2),
        ("1E+5", 2),
        ("999999999999", 7),  # the largest score: 12 digits
        ("12345678901234567890123456789012345678", 20),  # 38 digits, DynamoDB's most
    ],
)
def test_a_number_is_a_byte_per_two_significant_digits_and_one(number: str, size: int) -> None:
    assert number_size(number) == size
    assert item_size({"n": {"N": number}}) == 1 + size


@pytest.mark.parametrize(("number", "size"), [("120", 3), ("1.5", 3), ("123.4", 4), ("0", 2)])
def test_digits_are_counted_in_pairs_about_the_decimal_point(number: str, size: int) -> None:
    """Where the documented "about" and DynamoDB's base-100 digits part, the larger is kept."""
    assert number_size(number) == size


def test_a_number_is_never_counted_under_the_documented_figure() -> None:
    for number in [*map(str, range(1, 2000)), "3.14159", "-0.5", "1e-30", "120.5"]:
        significant = len(Decimal(number).normalize().as_tuple().digits)
        documented = math.ceil(significant / 2) + 1
        assert number_size(number) in {documented, documented + 1}, number


def test_something_that_is_not_an_attribute_value_is_refused() -> None:
    with pytest.raises(ValueError, match="attribute value"):
        item_size({"x": {"Q": "1"}})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ValueError, match="number"):
        number_size("NaN")


def _wide_snapshot(entries: int) -> Snapshot:
    name = "\U00020000" * 64
    return Snapshot(
        board_id="trivia#classic#alltime",
        taken_at="2026-11-30T12:00:00.000Z",
        reason="manual",
        player_count=5000,
        top_n=entries,
        entries=tuple(
            SnapshotEntry(
                rank,
                f"p{rank}".ljust(64, "x"),
                name,
                "NZ",
                10**12 - rank,
                "2026-11-30T11:00:00.000Z",
            )
            for rank in range(1, entries + 1)
        ),
    )


def test_a_snapshot_measures_as_its_item_and_keeps_the_longest_top_that_fits() -> None:
    store = SnapshotItems(cast("Dynamo", None), TableNames(scores="s", snapshots="n"))
    snapshot = _wide_snapshot(1000)
    fit = store.fit(snapshot)
    # What it measures is the item put_snapshot would send, counted whole.
    assert fit.item_bytes == item_size(store._put(snapshot, write_id="0" * 32)["Item"])
    assert (fit.limit_bytes, fit.fits) == (ITEM_LIMIT_BYTES, False)
    kept = fit.entries_that_fit
    fitting = replace(snapshot, entries=snapshot.entries[:kept])
    assert item_size(store._put(fitting, write_id="0" * 32)["Item"]) <= ITEM_LIMIT_BYTES
    one_more = replace(snapshot, entries=snapshot.entries[: kept + 1])
    assert item_size(store._put(one_more, write_id="0" * 32)["Item"]) > ITEM_LIMIT_BYTES
    assert store.fit(fitting) == SnapshotFit(
        item_size(store._put(fitting, write_id="0" * 32)["Item"]),
        ITEM_LIMIT_BYTES,
        entries_that_fit=kept,
    )
    assert store.fit(fitting).fits
    assert store.fit(_wide_snapshot(0)).entries_that_fit == 0


def test_the_largest_context_bound_leaves_a_row_with_every_field_at_its_largest_an_item() -> None:
    """LEADERBOARD_MAX_CONTEXT_BYTES's arithmetic: a row with a context at the setting's upper
    bound and every other attribute at its largest is under 400 KB, with room; four such rows
    (a submission to four boards) are far under a transaction's 4 MB."""
    (bound,) = [
        b.le for b in Settings.model_fields["max_context_bytes"].metadata if hasattr(b, "le")
    ]
    player, largest_ms = "p" * 64, 10**13 - 1
    board_id = f"{'g' * 64}#{'v' * 64}#day#2026-11-30"  # the longest period suffix
    write = StandingWrite(
        board_id=board_id,
        standing=Standing(
            board_id,
            Entry(
                RankKey(10**12 - 1, largest_ms, player),
                "\U00020000" * 64,
                "NZ",
                "x" * MAX_METADATA_BYTES,
            ),
            version=10**38 - 1,
            expires_at=10**11 - 1,
            tie_mark=99,
            last_played_at_ms=largest_ms,
            context_json="x" * bound,
        ),
        expected_version=None,
    )
    row = item_size(row_put("scores", write)["Put"]["Item"])
    assert row - bound < 1024  # every other attribute, as the setting's comment says
    assert row <= ITEM_LIMIT_BYTES - 15 * 1024
    assert 4 * row < 1_600_000
