"""A seed file: CSV with a header row, or JSON lines, checked whole before anything is written.

``parse_seed_text`` checks every row of a file for one board (one bad row and nothing is written;
every bad row is reported with its line number) and keeps, for a player on several rows, the best
row by the board rule. Pure: reading the file is the caller's.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, assert_never

from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.json_depth import MAX_JSON_DEPTH, nests_deeper_than
from app.domain.keys import SCORE_CEILING, Order, RankKey, is_valid_id
from app.domain.periods import Board
from app.errors import InvalidInput

SeedFormat = Literal["csv", "jsonl"]

REQUIRED_FIELDS = ("playerId", "score", "achievedAt")
OPTIONAL_FIELDS = ("displayName", "country")
MAX_REPORTED_ERRORS = 100
"""Bad rows listed in full; past this the problem says how many more there were."""

FORMAT_BY_SUFFIX: dict[str, SeedFormat] = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_SCORE_TEXT = re.compile(r"^[0-9]{1,13}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_DISPLAY_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,64}$")  # the API's rule for displayName


@dataclass(frozen=True)
class SeedRow:
    """One checked row of a seed file; ``line`` is where it starts in the file (1-based)."""

    line: int
    player_id: str
    score: int
    achieved_at_ms: int
    display_name: str | None = None
    country: str | None = None

    @property
    def key(self) -> RankKey:
        return RankKey(self.score, self.achieved_at_ms, self.player_id)

    def key_for(self, order: Order) -> RankKey:
        return RankKey(self.score, self.achieved_at_ms, self.player_id, order)


@dataclass(frozen=True)
class SeedFile:
    """A checked seed file for one board: one row per player (what the board's operator makes of
    the player's rows in the file)."""

    board_id: str
    rows: list[SeedRow]
    rows_read: int
    """Data rows in the file, duplicates included."""
    duplicate_lines: list[int] = field(default_factory=list)
    """Lines dropped for another row of the same player: a better one (``best``), a later one
    (``latest``, ``sum``)."""
    definition: BoardDefinition = field(default_factory=BoardDefinition)
    """The rules the rows were checked under, and are written under."""


def parse_seed_text(
    text: str,
    *,
    board: Board,
    now: datetime,
    future_skew: timedelta = timedelta(seconds=5),
    file_format: SeedFormat | None = None,
    definition: BoardDefinition | None = None,
) -> SeedFile:
    """Check a seed file's text (CSV with a header row, or JSON lines; guessed from the first
    non-blank character when ``file_format`` is ``None``) for ``board``.

    Each row needs ``playerId`` (an id), ``score`` (an integer in ``[0, 10**12)``) and
    ``achievedAt`` (ISO 8601 with an offset, not ahead of ``now`` by more than ``future_skew``,
    inside the board's period); a score outside the definition's bounds is a bad row (on a
    ``sum`` board a row is a total, which may pass ``scoreMax``); ``displayName`` (1..64
    characters, no control characters) and ``country`` (ISO 3166-1 alpha-2, upper case) are
    optional. Seeding is exempt from the lateness window. A player on several rows keeps the best
    of them by the board rule (best score, then earliest ``achievedAt``, then the first in the
    file); the others are counted as duplicates. Raises ``InvalidInput`` with
    ``errors=[{"line", "field"?, "message"}]`` when any row is bad."""
    text = text.removeprefix("\ufeff")
    if file_format is None:
        file_format = "jsonl" if text.lstrip().startswith("{") else "csv"
    definition = definition or BoardDefinition()
    checker = _RowChecker(
        board=board, now_ms=to_ms(now), skew_ms=_ms(future_skew), definition=definition
    )
    records = _csv_records(text) if file_format == "csv" else _json_records(text)
    rows: list[SeedRow] = []
    read = 0
    for record in records:
        if record.fatal:
            checker.errors.append({"line": record.line, "message": record.problem})
            break
        read += 1
        row = checker.check(record)
        if row is not None:
            rows.append(row)
    errors = checker.errors
    if not errors and read == 0:
        errors.append({"line": 1, "message": "the file holds no rows"})
    if errors:
        listed = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(listed)
        lines = len({e["line"] for e in errors})
        raise InvalidInput(
            f"the seed file has {lines} bad line(s); nothing was written"
            + (f" (the first {len(listed)} problems are listed, {more} more)" if more else ""),
            errors=listed,
        )
    kept, duplicates = _one_row_per_player(rows, definition)
    return SeedFile(board.board_id, kept, read, duplicates, definition)


def _one_row_per_player(
    rows: list[SeedRow], definition: BoardDefinition
) -> tuple[list[SeedRow], list[int]]:
    """A seed row sets the player's value, so a player on several rows keeps one: the best
    (``best``: the better score, then the earlier time), else the latest (``latest`` and ``sum``:
    the later ``achievedAt``, then the later line). The others' lines are returned."""
    kept: dict[str, SeedRow] = {}
    duplicates: list[int] = []
    for row in rows:
        held = kept.get(row.player_id)
        if held is None:
            kept[row.player_id] = row
            continue
        match definition.operator:
            case Operator.BEST:
                order = definition.order
                replaces = row.key_for(order).better_than(held.key_for(order))
            case Operator.LATEST | Operator.SUM:
                replaces = row.achieved_at_ms >= held.achieved_at_ms
            case unknown:
                assert_never(unknown)
        if replaces:
            duplicates.append(held.line)
            kept[row.player_id] = row
        else:
            duplicates.append(row.line)
    return list(kept.values()), sorted(duplicates)


@dataclass(frozen=True)
class _Record:
    """One data line of a file: its fields, or what is wrong with the line as a whole (``fatal``:
    the file cannot be read past it)."""

    line: int
    fields: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None
    fatal: bool = False


def _csv_records(text: str) -> Iterator[_Record]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    ended = 0  # the line the previous record ended on
    while True:
        start = ended + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield _Record(reader.line_num or start, problem=f"not valid CSV: {exc}", fatal=True)
            return
        ended = reader.line_num
        if not values or values == [""]:
            continue  # a blank line
        if header is None:
            header = [name.strip() for name in values]
            problem = _header_problem(header)
            if problem is not None:
                yield _Record(start, problem=problem, fatal=True)
                return
            continue
        if len(values) != len(header):
            yield _Record(start, problem=f"{len(values)} values for {len(header)} columns")
            continue
        yield _Record(
            start,
            {
                name: (value if value != "" else None)
                for name, value in zip(header, values, strict=True)
            },
        )


def _header_problem(header: list[str]) -> str | None:
    known = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
    missing = [name for name in REQUIRED_FIELDS if name not in header]
    unknown = [name for name in header if name not in known]
    repeated = sorted({name for name in header if header.count(name) > 1})
    problems = []
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown column(s) {', '.join(unknown)}")
    if repeated:
        problems.append(f"repeated column(s) {', '.join(repeated)}")
    if not problems:
        return None
    columns = ", ".join(REQUIRED_FIELDS + OPTIONAL_FIELDS)
    return f"header row: {'; '.join(problems)} (columns: {columns})"


def _json_records(text: str) -> Iterator[_Record]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if nests_deeper_than(line):  # before parsing it, which recurses
            yield _Record(
                number, problem=f"nests arrays and objects more than {MAX_JSON_DEPTH} deep"
            )
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield _Record(number, problem=f"not valid JSON: {exc.msg} (column {exc.colno})")
            continue
        if not isinstance(value, dict):
            yield _Record(number, problem="each line must be a JSON object")
            continue
        yield _Record(number, value)


class _RowChecker:
    """Checks one record at a time, collecting every problem with its line."""

    def __init__(
        self, *, board: Board, now_ms: int, skew_ms: int, definition: BoardDefinition
    ) -> None:
        self.errors: list[dict[str, Any]] = []
        self._definition = definition
        self._now_ms = now_ms
        self._skew_ms = skew_ms
        self._board = board
        span = definition.calendar.span(board.period)
        self._window = (
            None
            if span.starts_at is None or span.ends_at is None
            else (to_ms(span.starts_at), to_ms(span.ends_at))
        )

    def _bad(self, line: int, name: str, message: str) -> None:
        entry: dict[str, Any] = {"line": line, "message": message}
        if name:
            entry["field"] = name
        self.errors.append(entry)

    def check(self, found: _Record) -> SeedRow | None:
        line, record = found.line, found.fields
        if found.problem is not None:
            self._bad(line, "", found.problem)
            return None
        before = len(self.errors)
        known = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
        for name in sorted(set(record) - known):
            self._bad(line, str(name), "unknown field")
        player_id = self._player_id(line, record.get("playerId"))
        score = self._score(line, record.get("score"))
        achieved = self._achieved_at(line, record.get("achievedAt"))
        display_name = self._optional(
            line, record, "displayName", _DISPLAY_NAME, "1 to 64 characters, no control characters"
        )
        country = self._optional(
            line, record, "country", _COUNTRY, "two upper-case letters (ISO 3166-1 alpha-2)"
        )
        if len(self.errors) > before or player_id is None or score is None or achieved is None:
            return None
        return SeedRow(line, player_id, score, achieved, display_name, country)

    def _player_id(self, line: int, value: Any) -> str | None:
        if value is None:
            self._bad(line, "playerId", "required")
        elif not isinstance(value, str) or not is_valid_id(value):
            self._bad(line, "playerId", "must be 1 to 64 characters of A-Z a-z 0-9 _ . : -")
        else:
            return value
        return None

    def _score(self, line: int, value: Any) -> int | None:
        if value is None:
            self._bad(line, "score", "required")
            return None
        score: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            score = value
        elif isinstance(value, str) and _SCORE_TEXT.fullmatch(value.strip()):
            score = int(value.strip())
        if score is None or not 0 <= score < SCORE_CEILING:
            self._bad(line, "score", f"must be an integer in [0, {SCORE_CEILING})")
            return None
        if not self._definition.may_hold(score):
            self._bad(line, "score", f"{score} is outside the variant's bounds: {self._bounds}")
            return None
        return score

    @property
    def _bounds(self) -> str:
        definition = self._definition
        if definition.operator is Operator.SUM:
            return f"a total of at least {definition.score_min} (scoreMin)"
        return f"{definition.bounds_words} ({definition.bounds_named})"

    def _achieved_at(self, line: int, value: Any) -> int | None:
        found = self._achieved_ms(value)
        if isinstance(found, str):
            self._bad(line, "achievedAt", found)
            return None
        return found

    def _achieved_ms(self, value: Any) -> int | str:
        """Epoch millis, or what is wrong with ``value``."""
        millis = _iso_ms(value)
        if isinstance(millis, str):
            return millis
        if millis < 0:
            return "before 1970"
        if millis - self._now_ms > self._skew_ms:
            return "in the future"
        if self._window is not None and not self._window[0] <= millis < self._window[1]:
            return (
                f"outside the board's period {self._board.period.display} "
                f"({iso_ms(self._window[0])} to {iso_ms(self._window[1])})"
            )
        return millis

    def _optional(
        self, line: int, record: dict[str, Any], name: str, pattern: re.Pattern[str], rule: str
    ) -> str | None:
        value = record.get(name)
        if value is None:
            return None
        if not isinstance(value, str) or not pattern.fullmatch(value):
            self._bad(line, name, f"must be {rule}")
            return None
        return value


def _iso_ms(value: Any) -> int | str:
    """An ISO 8601 time with an offset as epoch millis, or what is wrong with it."""
    if value is None:
        return "required"
    if not isinstance(value, str):
        return "must be an ISO 8601 time string"
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return f"not an ISO 8601 time: {value!r}"
    if moment.tzinfo is None:
        return "must carry its UTC offset (for example a trailing Z)"
    # Not ``astimezone(UTC)``: at the calendar's edges (0001-01-01T00:00+01:00) that overflows.
    return to_ms(moment)


def _ms(span: timedelta) -> int:
    return int(span.total_seconds() * 1000)
