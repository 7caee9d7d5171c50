"""The thin hand-written layer over httpx: submissions with one Idempotency-Key kept across their
retries (alone, or a batch's items each with its own), Retry-After honoured, cursors walked, ranks
read as exact or as a range, and every problem document left after the retries raised as a
``LeaderboardError`` (a batch item's kept in its result)."""

from __future__ import annotations

import asyncio
import email.utils
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast
from urllib.parse import quote

import httpx

from .models import (
    AroundOut,
    BatchResponse,
    BatchSubmission,
    BoardListOut,
    BoardOutcomeOut,
    BoardPageOut,
    ClaimOut,
    CohortRankOut,
    EntrantOut,
    EntryOut,
    LeagueOut,
    ModeratedPlayersOut,
    ModerationLogOut,
    ModerationOut,
    PeriodOut,
    PlayerRankOut,
    Problem,
    RestoredOut,
    ScoreSubmission,
    StandingsOut,
    SubmitResponse,
    VoidedOut,
)

RETRYABLE_CONFLICTS = frozenset({"request-in-flight", "board-being-seeded", "player-being-erased"})
"""The 409s that pass on their own (the last segment of the problem's ``type``): worth a retry.
Not ``period-open``: a claim before the close is raised at once, its ``retry_after`` saying when
the period closes (hours away, as often as not), for the caller to claim again then."""
RETRYABLE_STATUSES = frozenset({429, 503})
DEFAULT_TIMEOUT = httpx.Timeout(10.0)
BACKOFF_BASE_S = 0.2
"""The first wait where the answer gave no Retry-After (or none came): doubled each attempt."""

Period = str
"""``alltime``, ``day``, ``week``, ``month``, ``season`` (the running one), or a dated one:
``day:2026-11-30``, ``week:2026-W48``, ``month:2026-12``, ``season:<id>``."""


class LeaderboardError(Exception):
    """A 4xx or 5xx answer left after the retries, read from its problem document (RFC 9457)."""

    def __init__(
        self,
        status: int,
        type: str,
        title: str,
        detail: str,
        errors: list[dict[str, Any]] | None = None,
        *,
        retry_after: float | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(f"{status} {title}: {detail} ({type})")
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.errors = errors
        self.retry_after = retry_after
        self.attempts = attempts

    @classmethod
    def from_response(cls, response: httpx.Response, *, attempts: int = 1) -> LeaderboardError:
        """The error a response says; a body that is no problem document still gives the status."""
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {}
        errors = body.get("errors")
        return cls(
            status=response.status_code,
            type=str(body.get("type", "about:blank")),
            title=str(body.get("title", response.reason_phrase)),
            detail=str(body.get("detail", response.text[:500])),
            errors=errors if isinstance(errors, list) else None,
            retry_after=retry_after_seconds(response),
            attempts=attempts,
        )

    @classmethod
    def from_problem(
        cls, problem: Problem, *, retry_after: float | None, attempts: int
    ) -> LeaderboardError:
        """The error a batch item's problem document says (what ``submit_score`` would raise)."""
        return cls(
            status=problem["status"],
            type=problem["type"],
            title=problem["title"],
            detail=problem["detail"],
            errors=problem.get("errors"),
            retry_after=retry_after,
            attempts=attempts,
        )


@dataclass(frozen=True)
class ExactRank:
    """The player's exact rank (1 is the best) and the share of the board at or above it."""

    rank: int
    top_percent: float
    kind: Literal["exact"] = "exact"


@dataclass(frozen=True)
class EstimatedRank:
    """An honest range that always holds the true rank, with its best single guess."""

    rank_range: tuple[int, int]
    top_percent_range: tuple[float, float]
    rank_estimate: int
    kind: Literal["estimated"] = "estimated"


Rank = ExactRank | EstimatedRank


@dataclass(frozen=True)
class PlayerRank:
    """A player's entry on a board and their rank there, exact or a range, and the board's
    ``period`` (``{id, startsAt, endsAt, nextResetAt}``; None from a service that predates it)."""

    leaderboard_id: str
    score_format: Literal["integer", "duration_ms"]
    entry: EntryOut
    rank: Rank
    period: PeriodOut | None = None
    cohort: CohortRankOut | None = None
    """On a cohort variant: the player's ``cohortId``, its league ``tier`` (None outside a
    league) and their exact ``rank`` in the cohort; None elsewhere."""


@dataclass(frozen=True)
class Claim:
    """A reward claim's answer: ``claim`` is the service's body (``playerId``, ``leaderboardId``,
    ``rank``, ``playerCount``, ``claimedAt``), the same on every claim of the player on the board;
    ``first`` is True only where the service answered 201, this request making the claim: grant
    the reward then, and never when ``first`` is False (it was granted already)."""

    claim: ClaimOut
    first: bool
    idempotency_key: str
    attempts: int

    @property
    def player_id(self) -> str:
        return self.claim["playerId"]

    @property
    def leaderboard_id(self) -> str:
        return self.claim["leaderboardId"]

    @property
    def rank(self) -> int:
        return self.claim["rank"]

    @property
    def player_count(self) -> int:
        return self.claim["playerCount"]

    @property
    def claimed_at(self) -> str:
        return self.claim["claimedAt"]


@dataclass(frozen=True)
class Entrant:
    """A join's answer: ``entrant`` is the service's body (``playerId``, ``cohortId``, and
    ``tier`` in a league), the same on every join of the player to the period board; ``first`` is
    True only where the service answered 201, this request placing the player."""

    entrant: EntrantOut
    first: bool
    attempts: int

    @property
    def player_id(self) -> str:
        return self.entrant["playerId"]

    @property
    def cohort_id(self) -> str | None:
        """The cohort to read with ``top_of_cohort`` (``3``, ``gold-3`` in a league); None on a
        variant without ``cohortSize``."""
        return self.entrant["cohortId"]

    @property
    def tier(self) -> str | None:
        return self.entrant.get("tier")


@dataclass(frozen=True)
class Submission:
    """What a submission did on each board, the Idempotency-Key it went with, and whether the
    service replayed a stored answer for that key (``Idempotent-Replayed: true``)."""

    response: SubmitResponse
    idempotency_key: str
    replayed: bool
    attempts: int

    @property
    def player_id(self) -> str:
        return self.response["playerId"]

    @property
    def boards(self) -> list[BoardOutcomeOut]:
        return self.response["boards"]


@dataclass(frozen=True)
class Refused:
    """A batch item the service refused: ``error`` is what ``submit_score`` would have raised for
    it (its status, problem type, detail, ``retry_after``, attempts)."""

    idempotency_key: str
    error: LeaderboardError

    @property
    def status(self) -> int:
        return self.error.status


BatchResult = Submission | Refused
"""One item of a batch, as its last answer left it: a ``Submission`` (what ``submit_score`` would
have returned), or ``Refused``."""


class BatchItem(ScoreSubmission, total=False):
    """One submission of a batch, as the API spells it (``playerId``, ``score``, ...), with its own
    ``idempotencyKey``, or one is made for it."""

    idempotencyKey: str  # noqa: N815 - the API's spelling, as the generated models keep it


@dataclass
class _Request:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str | int] | None = None
    json: Any = None


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date), or None if absent or unreadable."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when: datetime = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def problem_slug(response: httpx.Response) -> str | None:
    """The last segment of the problem's ``type`` (``request-in-flight``), if the body has one."""
    try:
        body = response.json()
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("type"), str):
        return str(body["type"]).rstrip("/").rsplit("/", 1)[-1]
    return None


def is_retryable(response: httpx.Response) -> bool:
    """429 and 503 always; 409 only for the conflicts that pass on their own."""
    if response.status_code in RETRYABLE_STATUSES:
        return True
    return response.status_code == 409 and problem_slug(response) in RETRYABLE_CONFLICTS


def _segment(value: str) -> str:
    return quote(value, safe=":")


def _board_path(game: str, variant: str, period: Period) -> str:
    return f"/v1/leaderboards/{_segment(game)}/{_segment(variant)}/{_segment(period)}"


def _timestamp(value: datetime | str) -> str:
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("achieved_at must be timezone-aware (UTC is what the service keeps)")
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _read_rank(body: PlayerRankOut) -> PlayerRank:
    raw = body["rank"]
    rank: Rank
    if raw["kind"] == "exact":
        rank = ExactRank(rank=raw["rank"], top_percent=raw["topPercent"])
    elif raw["kind"] == "estimated":
        low, high = raw["rankRange"]
        low_pct, high_pct = raw["topPercentRange"]
        rank = EstimatedRank(
            rank_range=(low, high),
            top_percent_range=(low_pct, high_pct),
            rank_estimate=raw["rankEstimate"],
        )
    else:  # a kind newer than this client: say so rather than guess
        raise ValueError(f"unknown rank kind {raw.get('kind')!r}")
    return PlayerRank(
        leaderboard_id=body["leaderboardId"],
        score_format=body["scoreFormat"],
        entry=body["entry"],
        rank=rank,
        period=body.get("period"),
        cohort=body.get("cohort"),
    )


class _Core:
    """What the sync and async clients share: the requests they build and the retry policy."""

    def __init__(
        self, base_url: str, api_key: str | None, max_attempts: int, max_wait_s: float
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.max_attempts = max_attempts
        self.max_wait_s = max_wait_s

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int | None] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> _Request:
        all_headers = {"Accept": "application/json, application/problem+json"}
        if self.api_key is not None:
            all_headers["Authorization"] = f"Bearer {self.api_key}"
        all_headers.update(headers or {})
        kept = {k: v for k, v in (params or {}).items() if v is not None} or None
        return _Request(method, self.base_url + path, all_headers, kept, json)

    # ---- moderation (admin key) ------------------------------------------------------------

    def moderation(
        self, game: str, player_id: str, action: Literal["hide", "ban"] | None, reason: str | None
    ) -> _Request:
        """A hide or a ban (``action``), or a restore (``None``)."""
        path = f"/v1/games/{_segment(game)}/moderation/players/{_segment(player_id)}"
        if action is None:
            return self.request("DELETE", path, params={"reason": reason})
        return self.request("PUT", path, json={"action": action, "reason": reason or ""})

    def moderation_page(
        self, game: str, what: Literal["players", "log"], limit: int | None, cursor: str | None
    ) -> _Request:
        path = f"/v1/games/{_segment(game)}/moderation/{what}"
        return self.request("GET", path, params={"limit": limit, "cursor": cursor})

    def void(
        self, game: str, variant: str, period: Period, player_id: str, reason: str | None
    ) -> _Request:
        path = f"{_board_path(game, variant, period)}/players/{_segment(player_id)}"
        return self.request("DELETE", path, params={"reason": reason})

    def claim(
        self, game: str, variant: str, period: Period, player_id: str, idempotency_key: str | None
    ) -> _Request:
        path = f"{_board_path(game, variant, period)}/claims/{_segment(player_id)}"
        # One key per claim, made here once, as for a submission: a retry after an answer that
        # never came (a transport error, a 503) sends the same one, and the service answers it as
        # the first would have (201 if that one made the claim), so the first claim is not lost.
        key = idempotency_key if idempotency_key is not None else str(uuid.uuid4())
        return self.request("POST", path, headers={"Idempotency-Key": key})

    @staticmethod
    def claimed(request: _Request, response: httpx.Response, attempts: int) -> Claim:
        return Claim(
            claim=cast("ClaimOut", response.json()),
            first=response.status_code == 201,
            idempotency_key=request.headers["Idempotency-Key"],
            attempts=attempts,
        )

    def join(self, game: str, variant: str, period: Period, player_id: str) -> _Request:
        path = f"{_board_path(game, variant, period)}/entrants/{_segment(player_id)}"
        # One key per join, as for a claim: a retry after a lost 201 is answered 201.
        return self.request("POST", path, headers={"Idempotency-Key": str(uuid.uuid4())})

    @staticmethod
    def joined(response: httpx.Response, attempts: int) -> Entrant:
        entrant = cast("EntrantOut", response.json())
        return Entrant(entrant=entrant, first=response.status_code == 201, attempts=attempts)

    @staticmethod
    def cohort_path(game: str, variant: str, period: Period, cohort_id: str) -> str:
        return f"{_board_path(game, variant, period)}/cohorts/{_segment(cohort_id)}"

    @staticmethod
    def league_path(game: str, variant: str, player_id: str) -> str:
        variant_path = f"/v1/games/{_segment(game)}/variants/{_segment(variant)}"
        return f"{variant_path}/players/{_segment(player_id)}/league"

    def settle(self, response: httpx.Response, attempt: int) -> float | None:
        """What an answer means for the loop: the wait before trying again, ``None`` where it is
        the answer; ``LeaderboardError`` for an error left once retries are spent or do not
        apply."""
        if is_retryable(response) and attempt < self.max_attempts:
            return self.wait_after(attempt, response)
        if response.is_error:
            raise LeaderboardError.from_response(response, attempts=attempt)
        return None

    def wait_after(self, attempt: int, response: httpx.Response | None) -> float:
        """How long to wait before the next attempt: Retry-After, else a doubling backoff; capped."""
        advised = retry_after_seconds(response) if response is not None else None
        if advised is None:
            advised = BACKOFF_BASE_S * 2 ** (attempt - 1)
        return min(advised, self.max_wait_s)

    def submission(
        self,
        player_id: str,
        score: int,
        game: str,
        variant: str,
        *,
        achieved_at: datetime | str | None,
        display_name: str | None,
        country: str | None,
        context: Mapping[str, Any] | None,
        metadata: Mapping[str, Any] | None,
        rank_delta: bool,
        idempotency_key: str | None,
    ) -> _Request:
        body: ScoreSubmission = {
            "playerId": player_id,
            "score": score,
            "game": game,
            "variant": variant,
            "rankDelta": rank_delta,
        }
        if achieved_at is not None:
            body["achievedAt"] = _timestamp(achieved_at)
        if display_name is not None:
            body["displayName"] = display_name
        if country is not None:
            body["country"] = country
        if context is not None:
            body["context"] = dict(context)
        if metadata is not None:
            body["metadata"] = dict(metadata)
        # One key per submission, made here once: every retry below sends the same one, so the
        # service applies the submission at most once and a retry learns what the first one did.
        key = idempotency_key if idempotency_key is not None else str(uuid.uuid4())
        return self.request("POST", "/v1/scores", json=body, headers={"Idempotency-Key": key})

    def batch(self, items: Sequence[BatchSubmission]) -> _Request:
        return self.request("POST", "/v1/scores:batch", json={"submissions": list(items)})

    def batch_answered(
        self,
        sent: Sequence[BatchSubmission],
        response: httpx.Response,
        attempt: int,
        last: dict[str, BatchResult],
    ) -> tuple[list[BatchSubmission], float]:
        """Each sent item's answer into ``last``; the items to send again (a 409 that passes, a
        429, a 503) while attempts are left, and how long to wait first."""
        answered = cast("BatchResponse", response.json())["results"]
        again: list[BatchSubmission] = []
        wait = 0.0
        for item, result in zip(sent, answered, strict=True):
            key = item["idempotencyKey"]
            if 200 <= result["status"] < 300:
                body = cast("SubmitResponse", result["body"])
                last[key] = Submission(body, key, replayed=result["replayed"], attempts=attempt)
                continue
            problem = cast("Problem", result["body"])
            retry_after = result.get("retryAfter")
            error = LeaderboardError.from_problem(
                problem,
                retry_after=None if retry_after is None else float(retry_after),
                attempts=attempt,
            )
            last[key] = Refused(key, error)
            slug = problem["type"].rstrip("/").rsplit("/", 1)[-1]
            if result["status"] in RETRYABLE_STATUSES or (
                result["status"] == 409 and slug in RETRYABLE_CONFLICTS
            ):
                again.append(item)
                wait = max(
                    wait, self.wait_after(attempt, None) if retry_after is None else retry_after
                )
        if attempt >= self.max_attempts:
            return [], 0.0
        return again, min(wait, self.max_wait_s)

    @staticmethod
    def keyed(items: Sequence[BatchItem]) -> list[BatchSubmission]:
        """The items, each with its key: its own, or a uuid4 made here once for every retry."""
        return [
            cast(
                "BatchSubmission",
                {**item, "idempotencyKey": item.get("idempotencyKey") or str(uuid.uuid4())},
            )
            for item in items
        ]

    @staticmethod
    def submitted(request: _Request, response: httpx.Response, attempts: int) -> Submission:
        return Submission(
            response=cast("SubmitResponse", response.json()),
            idempotency_key=request.headers["Idempotency-Key"],
            replayed=response.headers.get("Idempotent-Replayed", "").lower() == "true",
            attempts=attempts,
        )


class LeaderboardClient:
    """A synchronous client. ``http`` may be your own ``httpx.Client`` (it is then not closed
    here); requests go to ``base_url`` whatever its own base URL is."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        http: httpx.Client | None = None,
        max_attempts: int = 5,
        max_wait_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._core = _Core(base_url, api_key, max_attempts, max_wait_s)
        self._owns_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=DEFAULT_TIMEOUT)
        self._sleep = sleep

    def __enter__(self) -> LeaderboardClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def _send(self, request: _Request) -> tuple[httpx.Response, int]:
        """The first answer that is no retryable failure, with the attempts it took; raises
        ``LeaderboardError`` for a 4xx/5xx left, or the last transport error."""
        attempt = 1
        while True:
            try:
                response = self._http.request(
                    request.method,
                    request.url,
                    headers=request.headers,
                    params=request.params,
                    json=request.json,
                )
            except httpx.TransportError:
                if attempt >= self._core.max_attempts:
                    raise
                self._sleep(self._core.wait_after(attempt, None))
            else:
                wait = self._core.settle(response, attempt)
                if wait is None:
                    return response, attempt
                self._sleep(wait)
            attempt += 1

    def _get(self, path: str, params: Mapping[str, str | int | None] | None = None) -> Any:
        response, _ = self._send(self._core.request("GET", path, params=params))
        return response.json()

    def submit_score(
        self,
        player_id: str,
        score: int,
        game: str,
        variant: str,
        *,
        achieved_at: datetime | str | None = None,
        display_name: str | None = None,
        country: str | None = None,
        context: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        rank_delta: bool = True,
        idempotency_key: str | None = None,
    ) -> Submission:
        """Submit one player's score; retried (same Idempotency-Key) on 409s that pass, 429, 503
        and transport errors, never on another 4xx."""
        request = self._core.submission(
            player_id,
            score,
            game,
            variant,
            achieved_at=achieved_at,
            display_name=display_name,
            country=country,
            context=context,
            metadata=metadata,
            rank_delta=rank_delta,
            idempotency_key=idempotency_key,
        )
        response, attempts = self._send(request)
        return _Core.submitted(request, response, attempts)

    def submit_scores(self, items: Sequence[BatchItem]) -> list[BatchResult]:
        """Submit up to 100 results in one request (``POST /v1/scores:batch``). Each item keeps
        one Idempotency-Key (its ``idempotencyKey``, or a uuid4 made once) across every retry;
        the items the service asks to send again (409s that pass, 429, 503) are sent again
        alone, after their ``retryAfter``, at most ``max_attempts`` times. Returns each item's
        last answer in the items' order: a ``Submission``, or ``Refused`` with the error
        ``submit_score`` would have raised (never raised here); the whole batch's problem (a 422
        for two items with one key, say) is raised."""
        keyed = _Core.keyed(items)
        last: dict[str, BatchResult] = {}
        pending, attempt = keyed, 1
        while pending:
            response, _ = self._send(self._core.batch(pending))
            pending, wait = self._core.batch_answered(pending, response, attempt, last)
            if pending:
                self._sleep(wait)
            attempt += 1
        return [last[item["idempotencyKey"]] for item in keyed]

    def claim_reward(
        self,
        game: str,
        variant: str,
        period: Period,
        player_id: str,
        *,
        idempotency_key: str | None = None,
    ) -> Claim:
        """Claim the player's reward on a closed board (the game server's key). ``Claim.first`` is
        True only on the service's 201, the first claim: grant the reward on that alone; a later
        claim is ``first=False`` with the same body. One Idempotency-Key (yours, or a uuid4 made
        once) goes with every retry (transport errors, 429, 503), so a retry after a lost 201 is
        answered 201. Before the close: ``LeaderboardError`` 409 ``/problems/period-open`` at
        once, never retried, its ``retry_after`` the seconds until it closes at the earliest; a
        player not on the board: 404."""
        request = self._core.claim(game, variant, period, player_id, idempotency_key)
        response, attempts = self._send(request)
        return _Core.claimed(request, response, attempts)

    # ---- cohorts, tournaments and leagues (DESIGN.md section 16) ------------------------------

    def join_board(self, game: str, variant: str, period: Period, player_id: str) -> Entrant:
        """Join the player to a period board of a cohort or tournament variant (the game
        server's key): placed in the next seat, first come first placed. ``Entrant.first`` is
        True only on the service's 201, this call placing them; a repeat answers 200 with the same
        body (``first=False``): joining again is harmless. Retried on 429, 503 and transport
        errors, with one Idempotency-Key, so a retry after a lost 201 is answered 201.
        ``LeaderboardError`` 409 ``/problems/full`` past ``maxEntrants`` (not retried); 404 on a
        variant with nothing to join."""
        response, attempts = self._send(self._core.join(game, variant, period, player_id))
        return _Core.joined(response, attempts)

    def top_of_cohort(
        self,
        game: str,
        variant: str,
        period: Period,
        cohort_id: str,
        *,
        limit: int = 25,
        cursor: str | None = None,
    ) -> BoardPageOut:
        """One page of a cohort's board, ranked within the cohort (the same page as ``top``);
        ``cohort_id`` as a join or a rank read names it (``3``, ``gold-3``). A variant without
        ``cohortSize`` is a 404."""
        path = _Core.cohort_path(game, variant, period, cohort_id)
        return cast("BoardPageOut", self._get(path, {"limit": limit, "cursor": cursor}))

    def league(self, game: str, variant: str, player_id: str) -> LeagueOut:
        """The player's place in a variant with ``tiers``: ``{tier, cohortId, period, previous}``,
        the tier they play the current period in (the lowest for a new player), their cohort on
        its board (None until placed), its id (None between seasons), and ``previous``, their last
        placement where it was another period's (``{period, tier, cohortId, move}``, ``move``
        ``up``, ``down``, ``stay``, or ``pending`` until that period's close). A variant without
        tiers is a 404."""
        return cast("LeagueOut", self._get(_Core.league_path(game, variant, player_id)))

    def top(
        self,
        game: str,
        variant: str,
        period: Period = "alltime",
        *,
        limit: int = 25,
        cursor: str | None = None,
    ) -> BoardPageOut:
        """One page of the board, best first; its ``nextCursor`` (or None) leads to the next."""
        params = {"limit": limit, "cursor": cursor}
        return cast("BoardPageOut", self._get(_board_path(game, variant, period), params))

    def walk_board(
        self, game: str, variant: str, period: Period = "alltime", *, page_size: int = 100
    ) -> Iterator[EntryOut]:
        """Every entry of the board in rank order, a page at a time, until ``nextCursor`` is null."""
        cursor: str | None = None
        while True:
            page = self.top(game, variant, period, limit=page_size, cursor=cursor)
            yield from page["entries"]
            cursor = page["nextCursor"]
            if cursor is None:
                return

    def player_rank(self, game: str, variant: str, period: Period, player_id: str) -> PlayerRank:
        """The player's entry and rank: ``ExactRank`` or ``EstimatedRank``, as the API's
        ``kind`` says. A player not on the board is a ``LeaderboardError`` with status 404."""
        path = f"{_board_path(game, variant, period)}/players/{_segment(player_id)}"
        return _read_rank(cast("PlayerRankOut", self._get(path)))

    def around(
        self,
        game: str,
        variant: str,
        period: Period,
        player_id: str,
        *,
        before: int = 5,
        after: int = 5,
    ) -> AroundOut:
        """The players just ahead of and behind ``player_id``, with ranks."""
        path = f"{_board_path(game, variant, period)}/players/{_segment(player_id)}/around"
        return cast("AroundOut", self._get(path, {"before": before, "after": after}))

    def boards(self) -> BoardListOut:
        """The games and variants that have boards, with their live periods."""
        return cast("BoardListOut", self._get("/v1/boards"))

    def standings(self, player_id: str) -> StandingsOut:
        """Every live board the player is on, with best score and rank."""
        return cast("StandingsOut", self._get(f"/v1/players/{_segment(player_id)}/standings"))

    # ---- moderation: an admin key's (docs/api.md#moderation) --------------------------------

    def moderate(
        self, game: str, player_id: str, action: Literal["hide", "ban"], reason: str
    ) -> ModerationOut:
        """Hide or ban the player on every board of ``game``."""
        response, _ = self._send(self._core.moderation(game, player_id, action, reason))
        return cast("ModerationOut", response.json())

    def restore(self, game: str, player_id: str, reason: str | None = None) -> RestoredOut:
        """Restore a moderated player (``LeaderboardError`` 404 if not moderated)."""
        response, _ = self._send(self._core.moderation(game, player_id, None, reason))
        return cast("RestoredOut", response.json())

    def moderated_players(
        self, game: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ModeratedPlayersOut:
        """A page of the game's moderated players; ``nextCursor`` leads on."""
        response, _ = self._send(self._core.moderation_page(game, "players", limit, cursor))
        return cast("ModeratedPlayersOut", response.json())

    def moderation_log(
        self, game: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ModerationLogOut:
        """A page of the game's audit log, newest first; ``nextCursor`` leads on."""
        response, _ = self._send(self._core.moderation_page(game, "log", limit, cursor))
        return cast("ModerationLogOut", response.json())

    def void_entry(
        self, game: str, variant: str, period: Period, player_id: str, reason: str | None = None
    ) -> VoidedOut:
        """Void the player's entry on one board (``LeaderboardError`` 404 if none)."""
        response, _ = self._send(self._core.void(game, variant, period, player_id, reason))
        return cast("VoidedOut", response.json())


class AsyncLeaderboardClient:
    """The asynchronous twin of ``LeaderboardClient``, over ``httpx.AsyncClient``."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        http: httpx.AsyncClient | None = None,
        max_attempts: int = 5,
        max_wait_s: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._core = _Core(base_url, api_key, max_attempts, max_wait_s)
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=DEFAULT_TIMEOUT)
        self._sleep = sleep

    async def __aenter__(self) -> AsyncLeaderboardClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def _send(self, request: _Request) -> tuple[httpx.Response, int]:
        attempt = 1
        while True:
            try:
                response = await self._http.request(
                    request.method,
                    request.url,
                    headers=request.headers,
                    params=request.params,
                    json=request.json,
                )
            except httpx.TransportError:
                if attempt >= self._core.max_attempts:
                    raise
                await self._sleep(self._core.wait_after(attempt, None))
            else:
                wait = self._core.settle(response, attempt)
                if wait is None:
                    return response, attempt
                await self._sleep(wait)
            attempt += 1

    async def _get(self, path: str, params: Mapping[str, str | int | None] | None = None) -> Any:
        response, _ = await self._send(self._core.request("GET", path, params=params))
        return response.json()

    async def submit_score(
        self,
        player_id: str,
        score: int,
        game: str,
        variant: str,
        *,
        achieved_at: datetime | str | None = None,
        display_name: str | None = None,
        country: str | None = None,
        context: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        rank_delta: bool = True,
        idempotency_key: str | None = None,
    ) -> Submission:
        """See ``LeaderboardClient.submit_score``."""
        request = self._core.submission(
            player_id,
            score,
            game,
            variant,
            achieved_at=achieved_at,
            display_name=display_name,
            country=country,
            context=context,
            metadata=metadata,
            rank_delta=rank_delta,
            idempotency_key=idempotency_key,
        )
        response, attempts = await self._send(request)
        return _Core.submitted(request, response, attempts)

    async def submit_scores(self, items: Sequence[BatchItem]) -> list[BatchResult]:
        """See ``LeaderboardClient.submit_scores``."""
        keyed = _Core.keyed(items)
        last: dict[str, BatchResult] = {}
        pending, attempt = keyed, 1
        while pending:
            response, _ = await self._send(self._core.batch(pending))
            pending, wait = self._core.batch_answered(pending, response, attempt, last)
            if pending:
                await self._sleep(wait)
            attempt += 1
        return [last[item["idempotencyKey"]] for item in keyed]

    async def claim_reward(
        self,
        game: str,
        variant: str,
        period: Period,
        player_id: str,
        *,
        idempotency_key: str | None = None,
    ) -> Claim:
        """See ``LeaderboardClient.claim_reward``."""
        request = self._core.claim(game, variant, period, player_id, idempotency_key)
        response, attempts = await self._send(request)
        return _Core.claimed(request, response, attempts)

    async def join_board(self, game: str, variant: str, period: Period, player_id: str) -> Entrant:
        """See ``LeaderboardClient.join_board``."""
        response, attempts = await self._send(self._core.join(game, variant, period, player_id))
        return _Core.joined(response, attempts)

    async def top_of_cohort(
        self,
        game: str,
        variant: str,
        period: Period,
        cohort_id: str,
        *,
        limit: int = 25,
        cursor: str | None = None,
    ) -> BoardPageOut:
        """See ``LeaderboardClient.top_of_cohort``."""
        path = _Core.cohort_path(game, variant, period, cohort_id)
        return cast("BoardPageOut", await self._get(path, {"limit": limit, "cursor": cursor}))

    async def league(self, game: str, variant: str, player_id: str) -> LeagueOut:
        """See ``LeaderboardClient.league``."""
        return cast("LeagueOut", await self._get(_Core.league_path(game, variant, player_id)))

    async def top(
        self,
        game: str,
        variant: str,
        period: Period = "alltime",
        *,
        limit: int = 25,
        cursor: str | None = None,
    ) -> BoardPageOut:
        """See ``LeaderboardClient.top``."""
        params = {"limit": limit, "cursor": cursor}
        return cast("BoardPageOut", await self._get(_board_path(game, variant, period), params))

    async def walk_board(
        self, game: str, variant: str, period: Period = "alltime", *, page_size: int = 100
    ) -> AsyncIterator[EntryOut]:
        """See ``LeaderboardClient.walk_board``."""
        cursor: str | None = None
        while True:
            page = await self.top(game, variant, period, limit=page_size, cursor=cursor)
            for entry in page["entries"]:
                yield entry
            cursor = page["nextCursor"]
            if cursor is None:
                return

    async def player_rank(
        self, game: str, variant: str, period: Period, player_id: str
    ) -> PlayerRank:
        """See ``LeaderboardClient.player_rank``."""
        path = f"{_board_path(game, variant, period)}/players/{_segment(player_id)}"
        return _read_rank(cast("PlayerRankOut", await self._get(path)))

    async def around(
        self,
        game: str,
        variant: str,
        period: Period,
        player_id: str,
        *,
        before: int = 5,
        after: int = 5,
    ) -> AroundOut:
        """See ``LeaderboardClient.around``."""
        path = f"{_board_path(game, variant, period)}/players/{_segment(player_id)}/around"
        return cast("AroundOut", await self._get(path, {"before": before, "after": after}))

    async def boards(self) -> BoardListOut:
        """See ``LeaderboardClient.boards``."""
        return cast("BoardListOut", await self._get("/v1/boards"))

    async def standings(self, player_id: str) -> StandingsOut:
        """See ``LeaderboardClient.standings``."""
        path = f"/v1/players/{_segment(player_id)}/standings"
        return cast("StandingsOut", await self._get(path))

    async def moderate(
        self, game: str, player_id: str, action: Literal["hide", "ban"], reason: str
    ) -> ModerationOut:
        """See ``LeaderboardClient.moderate``."""
        response, _ = await self._send(self._core.moderation(game, player_id, action, reason))
        return cast("ModerationOut", response.json())

    async def restore(self, game: str, player_id: str, reason: str | None = None) -> RestoredOut:
        """See ``LeaderboardClient.restore``."""
        response, _ = await self._send(self._core.moderation(game, player_id, None, reason))
        return cast("RestoredOut", response.json())

    async def moderated_players(
        self, game: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ModeratedPlayersOut:
        """See ``LeaderboardClient.moderated_players``."""
        response, _ = await self._send(self._core.moderation_page(game, "players", limit, cursor))
        return cast("ModeratedPlayersOut", response.json())

    async def moderation_log(
        self, game: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ModerationLogOut:
        """See ``LeaderboardClient.moderation_log``."""
        response, _ = await self._send(self._core.moderation_page(game, "log", limit, cursor))
        return cast("ModerationLogOut", response.json())

    async def void_entry(
        self, game: str, variant: str, period: Period, player_id: str, reason: str | None = None
    ) -> VoidedOut:
        """See ``LeaderboardClient.void_entry``."""
        response, _ = await self._send(self._core.void(game, variant, period, player_id, reason))
        return cast("VoidedOut", response.json())
