"""Times as the API shows them: ISO 8601 UTC with milliseconds and ``Z``; stored as epoch millis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def to_ms(moment: datetime) -> int:
    """Epoch milliseconds, truncated; a naive time is refused rather than guessed."""
    if moment.tzinfo is None:
        raise ValueError("a time must carry its UTC offset")
    return (moment - _EPOCH) // _MILLISECOND


def from_ms(millis: int) -> datetime:
    return _EPOCH + millis * _MILLISECOND


def iso_ms(millis: int) -> str:
    # isoformat, not strftime: the cheaper of the two, and a page formats one a row.
    return from_ms(millis).isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"


def parse_iso_ms(text: str) -> int:
    return to_ms(datetime.fromisoformat(text.replace("Z", "+00:00")))
