"""Load test of the leaderboard service: game servers post each round's results in a burst, and
players read where they landed.

    LEADERBOARD_API_KEY=<a key with submit:<game>> locust -f locustfile.py --host http://127.0.0.1:8000

``-u/-r/-t`` drive a plain run; ``LEADERBOARD_LOAD_SHAPE=round`` selects ``RoundShape`` instead
(baseline, a burst of game servers at round end, then readers piling in). Every non-2xx is a
failure whose message is the status and the problem document's title and detail; request names are
route templates, so the statistics hold one row per route. docs/load-testing.md says how to run it
and how to read what it reports.

Environment (only the key is needed; malformed values stop locust at start-up):

    LEADERBOARD_API_KEY                 the game servers' key (submit scope for the game)
    LEADERBOARD_LOAD_GAME, _VARIANT     the board (trivia, alltopics)
    LEADERBOARD_LOAD_PLAYERS            the player pool, shared by game servers and readers (1000)
    LEADERBOARD_LOAD_ROUND_PLAYERS      results in one round (50)
    LEADERBOARD_LOAD_ROUND_SECONDS      how often each game server ends a round (30)
    LEADERBOARD_LOAD_BURST_CONCURRENCY  one game server's requests in flight at once (10)
    LEADERBOARD_LOAD_BATCH_SIZE         results per POST /v1/scores:batch, 1..100; unset or 0:
                                        one POST /v1/scores per result
    LEADERBOARD_LOAD_SHAPE              "round" for RoundShape; unset for -u/-r/-t
    LEADERBOARD_LOAD_SCALE              RoundShape's user counts are multiplied by this (1)
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import random
import secrets
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar
from urllib.parse import urlencode

# gevent ships no type information; locust runs on it (its monkey-patching is why this file runs
# in a process of its own, never inside pytest).
import gevent  # type: ignore[import-untyped]
from gevent.pool import Pool  # type: ignore[import-untyped]
from locust import FastHttpUser, LoadTestShape, User, between, constant_pacing, events, task
from locust.contrib.fasthttp import ResponseContextManager
from locust.env import Environment
from locust.runners import WorkerRunner
from locust.stats import RequestStats, StatsEntry

log = logging.getLogger("leaderboard.load")


def _env_int(
    environ: Mapping[str, str],
    name: str,
    default: int,
    minimum: int = 1,
    maximum: int | None = None,
) -> int:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {text!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def _env_float(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number, got {text!r}")
    return value


@dataclass(frozen=True)
class LoadConfig:
    """What the run is pointed at and how hard, read once from the environment."""

    api_key: str | None
    game: str
    variant: str
    players: int
    round_players: int
    round_seconds: float
    burst_concurrency: int
    batch_size: int
    """Results per batch; 0: each result posted alone."""
    shape: str | None
    scale: float

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> LoadConfig:
        players = _env_int(environ, "LEADERBOARD_LOAD_PLAYERS", 1000)
        round_players = _env_int(environ, "LEADERBOARD_LOAD_ROUND_PLAYERS", 50)
        if round_players > players:
            raise ValueError(
                f"LEADERBOARD_LOAD_ROUND_PLAYERS ({round_players}) cannot exceed "
                f"LEADERBOARD_LOAD_PLAYERS ({players}): a round draws distinct players from the pool"
            )
        shape = environ.get("LEADERBOARD_LOAD_SHAPE", "").strip() or None
        if shape not in (None, "round"):
            raise ValueError(f"LEADERBOARD_LOAD_SHAPE must be 'round' or unset, got {shape!r}")
        return cls(
            api_key=environ.get("LEADERBOARD_API_KEY", "").strip() or None,
            game=environ.get("LEADERBOARD_LOAD_GAME", "").strip() or "trivia",
            variant=environ.get("LEADERBOARD_LOAD_VARIANT", "").strip() or "alltopics",
            players=players,
            round_players=round_players,
            round_seconds=_env_float(environ, "LEADERBOARD_LOAD_ROUND_SECONDS", 30.0),
            burst_concurrency=_env_int(environ, "LEADERBOARD_LOAD_BURST_CONCURRENCY", 10),
            batch_size=_env_int(environ, "LEADERBOARD_LOAD_BATCH_SIZE", 0, minimum=0, maximum=100),
            shape=shape,
            scale=_env_float(environ, "LEADERBOARD_LOAD_SCALE", 1.0),
        )


CONFIG = LoadConfig.from_environment(os.environ)

# Request names: route templates, never raw paths, so a run has one statistics row per route
# whatever the number of players. A suffix separates outcomes worth counting apart.
SCORES = "/v1/scores"
BATCH = "/v1/scores:batch"
TOP = "/v1/leaderboards/[game]/[variant]/[period]"
RANK = f"{TOP}/players/[playerId]"
AROUND = f"{RANK}/around"
STANDINGS = "/v1/players/[playerId]/standings"
RETRY = " (retry)"
NEXT_PAGE = " (next page)"
NOT_ON_BOARD = " (404 not on board)"
SHED = " (shed)"
"""A request the service refused at once because it was overloaded (503, problem type
``overloaded``): counted apart, so the other rows hold only what the service let in."""
OVERLOADED = "/problems/overloaded"

PERIODS = ("alltime", "day", "week")
COUNTRIES = ("GB", "US", "DE", "FR", "BR", "IN", "JP", "NG")

MAX_ATTEMPTS = 4
"""A submission is sent at most this often (the first try and three retries), as a game server
that must move on to the next round would."""
MAX_RETRY_WAIT_S = 60.0
"""The longest ``Retry-After`` honoured; by default the service asks for at most 30 s (a key still
in flight) or 60 s (a seeding lease), so only a misbehaving proxy would be cut short."""
RETRY_AFTER_STATUSES = frozenset({409, 429, 503})
"""The service's "try again later" answers, each with ``Retry-After``."""
GATEWAY_STATUSES = frozenset({0, 502, 504})
"""No answer from the service (0: the connection failed or timed out; 502/504 from a load
balancer): the submission may or may not have landed, which is what the Idempotency-Key is for, so
a real game server resends it too."""

# Players whose results this process has posted, newest last. Readers prefer them: after a round,
# the players who just played are the ones asking where they landed. Per process: with
# `--processes` or workers, each keeps its own.
RECENT_PLAYERS: deque[str] = deque(maxlen=CONFIG.players)


def player_id(number: int) -> str:
    return f"load-{number:06d}"


def pick_reader() -> str:
    """A player to read as: mostly one who has just played, sometimes anyone from the pool (who
    may not be on the board yet, and gets the 404 a real newcomer gets)."""
    if RECENT_PLAYERS and random.random() < 0.8:
        return random.choice(RECENT_PLAYERS)
    return player_id(random.randrange(CONFIG.players))


def trivia_score() -> int:
    """A trivia round's points: normal around 5,000, sd 1,500, never negative. Players come back
    from a bounded pool, so a better round raises their best and a worse one only touches it."""
    return max(0, round(random.gauss(5000, 1500)))


def iso_ms(moment: datetime) -> str:
    """ISO 8601 UTC with milliseconds and Z, as the service writes times."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def json_body(response: ResponseContextManager) -> Any:
    """The parsed body, or None when there is none or it is not JSON (a proxy's HTML page)."""
    text = response.text
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _header(response: ResponseContextManager, name: str) -> str | None:
    value = response.headers.get(name) if response.headers is not None else None
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_reason(response: ResponseContextManager) -> str:
    """Why a response is a failure, in one line that groups well in locust's failure table: the
    status and the problem document's title and detail (RFC 9457), or what came instead."""
    status = response.status_code
    if status == 0:
        error = getattr(response, "error", None)
        return f"no response: {type(error).__name__}: {error}" if error else "no response"
    body = json_body(response)
    if isinstance(body, dict) and ("title" in body or "detail" in body):
        title = str(body.get("title") or "")
        detail = str(body.get("detail") or "")
        return _one_line(f"{status} {title}: {detail}" if detail else f"{status} {title}")
    return _one_line(f"{status} (not a problem document): {response.text or 'empty body'}")


def is_shed(response: ResponseContextManager) -> bool:
    """The service refused the request at once, overloaded, having done nothing for it."""
    if response.status_code != 503:
        return False
    body = json_body(response)
    return isinstance(body, dict) and body.get("type") == OVERLOADED


def retry_after_seconds(response: ResponseContextManager, default: float = 1.0) -> float:
    """How long the service asked us to wait: ``Retry-After`` as delta-seconds or an HTTP date
    (RFC 9110 allows both), ``default`` when absent or unreadable, never more than
    MAX_RETRY_WAIT_S."""
    value = _header(response, "Retry-After")
    if value is None:
        return default
    text = value.strip()
    if text.isdigit():
        return min(float(text), MAX_RETRY_WAIT_S)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return default
    if when.tzinfo is None:  # an HTTP date is GMT even when the parser cannot tell
        when = when.replace(tzinfo=UTC)
    return min(max(0.0, (when - datetime.now(UTC)).total_seconds()), MAX_RETRY_WAIT_S)


def backoff(retry_after_s: float) -> float:
    """A wait of at least what was asked, with up to half as much again: clients told "1 s"
    together must not come back together."""
    return retry_after_s * random.uniform(1.0, 1.5)


@dataclass(frozen=True)
class RoundResult:
    """One player's result in one round, sent as is on every attempt: same key, same body, so a
    retry after a lost answer is recognised (replayed) instead of counted again."""

    player_id: str
    idempotency_key: str
    body: dict[str, Any]


def round_results(*, server: str, number: int, ended_at: datetime) -> list[RoundResult]:
    """The results of one round: distinct players from the pool, all stamped with the round's end
    (equal scores then rank by playerId, as the service's rule says)."""
    achieved_at = iso_ms(ended_at)
    results = []
    for n in random.sample(range(CONFIG.players), CONFIG.round_players):
        player = player_id(n)
        results.append(
            RoundResult(
                player_id=player,
                # Stable per player per round: the same result is the same key on every attempt.
                idempotency_key=f"load-{server}-r{number}-{player}",
                body={
                    "playerId": player,
                    "score": trivia_score(),
                    "game": CONFIG.game,
                    "variant": CONFIG.variant,
                    "achievedAt": achieved_at,
                    "displayName": f"Load Player {n}",
                    "country": COUNTRIES[n % len(COUNTRIES)],
                },
            )
        )
    return results


class LeaderboardClient(FastHttpUser):
    """What both kinds of client share: timeouts, and certificates checked."""

    abstract = True
    # Above the service's own deadline (10 s), so the service's 503 is what we see, not our timeout.
    network_timeout = 30.0
    connection_timeout = 10.0
    # Locust's default skips certificate checks; the game servers' key travels in a header.
    insecure = False


class GameServer(LeaderboardClient):
    """A game server: every round_seconds a round ends and it posts all of its results at once
    (burst_concurrency in flight), each alone or, with batch_size, in batches of that many. Each
    result is retried with the same key and body, at most MAX_ATTEMPTS in all: after
    ``Retry-After`` (a batch item's ``retryAfter``) on 409/429/503, after a second or so when no
    answer came (a dropped connection, a load balancer's 502/504)."""

    weight = 1
    # A round ends every round_seconds, however long posting the last one took.
    wait_time = constant_pacing(CONFIG.round_seconds)
    # The connection pool: one connection per submission in flight.
    concurrency = CONFIG.burst_concurrency

    def on_start(self) -> None:
        # Random, not a counter: processes forked by `--processes` (and workers, and the next run
        # against the same service) must never send one key with two bodies, which is a 422.
        self.server = secrets.token_hex(6)
        self.rounds = itertools.count(1)

    @task
    def post_round(self) -> None:
        results = round_results(
            server=self.server, number=next(self.rounds), ended_at=datetime.now(UTC)
        )
        pool = Pool(CONFIG.burst_concurrency)
        try:
            if CONFIG.batch_size:
                size = CONFIG.batch_size
                pool.map(
                    self.submit_batch, [results[i : i + size] for i in range(0, len(results), size)]
                )
            else:
                pool.map(self.submit, results)
        finally:
            # If this user is stopped mid-round, its submissions stop with it instead of running
            # on unowned (and, at the end of a run, after the statistics were written).
            pool.kill()

    def submit(self, result: RoundResult) -> None:
        headers = {
            "Authorization": f"Bearer {CONFIG.api_key}",
            "Idempotency-Key": result.idempotency_key,
        }
        for attempt in range(1, MAX_ATTEMPTS + 1):
            wait_s = self._attempt(result, headers, attempt)
            if wait_s is None:
                return
            gevent.sleep(wait_s)

    def _attempt(self, result: RoundResult, headers: dict[str, str], attempt: int) -> float | None:
        """Send once and record the outcome; the seconds to wait before the next attempt, or None
        when there is none to make."""
        name = SCORES if attempt == 1 else SCORES + RETRY
        with self.client.post(
            SCORES, json=result.body, headers=headers, name=name, catch_response=True
        ) as response:
            status = response.status_code
            if 200 <= status < 300:
                body = json_body(response)
                if isinstance(body, dict) and isinstance(body.get("boards"), list):
                    response.success()
                    RECENT_PLAYERS.append(result.player_id)
                else:
                    response.failure(f"{status} without the submission's boards")
                return None
            reason = failure_reason(response)
            if is_shed(response):
                # Renamed here, after the fact: only the answer says it was shed.
                response.request_meta["name"] = SCORES + SHED
            if status not in RETRY_AFTER_STATUSES | GATEWAY_STATUSES:
                response.failure(reason)  # the request itself is wrong: resending cannot help
                return None
            if attempt == MAX_ATTEMPTS:
                response.failure(f"{reason} (gave up after {MAX_ATTEMPTS} attempts)")
                return None
            response.failure(f"{reason} (retrying)")
            return backoff(retry_after_seconds(response))

    def submit_batch(self, results: list[RoundResult]) -> None:
        """Post the results in one batch; the items answered 409/429/503 (or the whole batch,
        so answered, or unanswered) are sent again, each with its own key and body."""
        headers = {"Authorization": f"Bearer {CONFIG.api_key}"}
        pending = results
        for attempt in range(1, MAX_ATTEMPTS + 1):
            pending, wait_s = self._batch_attempt(pending, headers, attempt)
            if not pending:
                return
            gevent.sleep(wait_s)

    def _batch_attempt(
        self, results: list[RoundResult], headers: dict[str, str], attempt: int
    ) -> tuple[list[RoundResult], float]:
        """Send the batch once and record the outcome: a success where every item landed, else a
        failure saying why (the whole batch's problem, or the first refused item's). The results
        to send again (none after the last attempt), and how long to wait first."""
        name = BATCH if attempt == 1 else BATCH + RETRY
        items = [result.body | {"idempotencyKey": result.idempotency_key} for result in results]
        with self.client.post(
            BATCH, json={"submissions": items}, headers=headers, name=name, catch_response=True
        ) as response:
            status = response.status_code
            if 200 <= status < 300:
                again, wait_s, reason = batch_outcome(
                    json_body(response), results, last=attempt == MAX_ATTEMPTS
                )
                if reason is None:
                    response.success()
                else:
                    response.failure(reason)
                return again, wait_s
            reason = failure_reason(response)
            if is_shed(response):
                response.request_meta["name"] = BATCH + SHED
            if status not in RETRY_AFTER_STATUSES | GATEWAY_STATUSES or attempt == MAX_ATTEMPTS:
                gave_up = status in RETRY_AFTER_STATUSES | GATEWAY_STATUSES
                response.failure(reason + GAVE_UP if gave_up else reason)
                return [], 0.0
            response.failure(f"{reason} (retrying)")
            return results, backoff(retry_after_seconds(response))


GAVE_UP = f" (gave up after {MAX_ATTEMPTS} attempts)"


def batch_outcome(
    body: Any, results: list[RoundResult], *, last: bool
) -> tuple[list[RoundResult], float, str | None]:
    """What a batch's 2xx says, item by item: the results to send again (those answered
    409/429/503, none after the ``last`` attempt), the wait first (the longest ``retryAfter``),
    and why the request counts as failed (None where every item landed: the status, title and
    detail of the first refused item, and how many were). The landed items' players are the
    ones readers ask about next."""
    outcomes = body.get("results") if isinstance(body, dict) else None
    if not isinstance(outcomes, list) or len(outcomes) != len(results):
        return [], 0.0, "200 without a result for each item"
    again, refused, wait_s = [], [], 0.0
    for result, outcome in zip(results, outcomes, strict=True):
        if 200 <= outcome["status"] < 300:
            RECENT_PLAYERS.append(result.player_id)
            continue
        refused.append(outcome)
        if outcome["status"] in RETRY_AFTER_STATUSES:
            again.append(result)
            wait_s = max(wait_s, float(outcome.get("retryAfter") or 1))
    if not refused:
        return [], 0.0, None
    first, problem = refused[0], refused[0]["body"]
    reason = _one_line(
        f"{first['status']} {problem.get('title', '')}: {problem.get('detail', '')} "
        f"({len(refused)} of {len(results)} items)"
    )
    if again and not last:
        return again, backoff(min(wait_s, MAX_RETRY_WAIT_S)), f"{reason} (retrying)"
    return [], 0.0, reason + GAVE_UP if again else reason


def _refuse_game_servers_without_a_key(environment: Environment, **_: Any) -> None:
    """Stop at start-up, not with a run of 401s, when game servers are to run without a key.
    Readers need none: `locust -f locustfile.py Player` runs them alone."""
    if CONFIG.api_key is None and GameServer in environment.user_classes:
        raise SystemExit(
            "LEADERBOARD_API_KEY is not set: the game servers need a key with submit scope for "
            f"{CONFIG.game!r} (or run the readers alone: locust -f locustfile.py Player)"
        )


# Locust's event hooks are unannotated.
events.init.add_listener(_refuse_game_servers_without_a_key)  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class Outcomes:
    """A run's figures with shed answers apart: what the service let in (answered, and how fast),
    what it refused at once, and any other failure."""

    seconds: float
    accepted: int
    shed: int
    failed: int
    accepted_p50_ms: float
    accepted_p95_ms: float

    @classmethod
    def of(cls, stats: RequestStats) -> Outcomes:
        let_in = StatsEntry(stats, "let in", "")
        shed = failed = 0
        for entry in stats.entries.values():
            if entry.name.endswith(SHED):
                shed += entry.num_requests
            else:
                let_in.extend(entry)
                failed += entry.num_failures
        seconds = max(0.0, (let_in.last_request_timestamp or 0) - stats.total.start_time)
        return cls(
            seconds=seconds,
            accepted=let_in.num_requests - failed,
            shed=shed,
            failed=failed,
            accepted_p50_ms=let_in.get_response_time_percentile(0.5) if let_in.num_requests else 0,
            accepted_p95_ms=let_in.get_response_time_percentile(0.95) if let_in.num_requests else 0,
        )

    def lines(self) -> list[str]:
        sent = self.accepted + self.shed + self.failed
        per_s = self.accepted / self.seconds if self.seconds else 0.0
        return [
            f"answered: {self.accepted} ({per_s:.1f}/s), latency p50 {self.accepted_p50_ms:.0f} ms, "
            f"p95 {self.accepted_p95_ms:.0f} ms",
            f"shed (503 overloaded, refused at once): {self.shed} "
            f"({100 * self.shed / sent if sent else 0:.1f}% of requests)",
            f"failed otherwise: {self.failed}",
        ]


def _report_outcomes(environment: Environment, **_: Any) -> None:
    """At the end of a run (standalone or on the master, which holds every worker's figures),
    throughput, shed rate and the latency of what was let in, each on its own line. Reported once
    the runner has stopped every user, so the figures are final (those of `--json-file`)."""
    if isinstance(environment.runner, WorkerRunner) or environment.stats is None:
        return
    for line in Outcomes.of(environment.stats).lines():
        log.info("outcome: %s", line)


events.test_stop.add_listener(_report_outcomes)  # type: ignore[no-untyped-call]


class Player(LeaderboardClient):
    """A player's client: the top of the all-time board (sometimes the next pages), and after a
    round where they landed: their rank, the players around them, their standings."""

    weight = 3
    wait_time = between(1, 4)

    @task(2)
    def browse_top(self) -> None:
        board = f"/v1/leaderboards/{CONFIG.game}/{CONFIG.variant}/alltime"
        page = self._read(f"{board}?limit=25", name=TOP, expect="entries")
        # Now and then a player scrolls on: one or two more pages, through the cursor as issued.
        pages = random.choice((0, 0, 0, 1, 2))
        while page is not None and pages > 0 and isinstance(page.get("nextCursor"), str):
            query = urlencode({"limit": 25, "cursor": page["nextCursor"]})
            page = self._read(f"{board}?{query}", name=TOP + NEXT_PAGE, expect="entries")
            pages -= 1

    @task(3)
    def check_where_i_landed(self) -> None:
        # A results screen asks all three, whether or not the player is on the board yet.
        me = pick_reader()
        period = random.choice(PERIODS)
        board = f"/v1/leaderboards/{CONFIG.game}/{CONFIG.variant}/{period}"
        self._read(f"{board}/players/{me}", name=RANK, expect="rank", not_found_is_news=True)
        self._read(
            f"{board}/players/{me}/around", name=AROUND, expect="entries", not_found_is_news=True
        )
        self._read(f"/v1/players/{me}/standings", name=STANDINGS, expect="boards")

    def _read(
        self,
        path: str,
        *,
        name: str,
        expect: str,
        not_found_is_news: bool = False,
    ) -> dict[str, Any] | None:
        """GET and record the outcome; the body when it is a 2xx holding ``expect``.

        With ``not_found_is_news``, a 404 is a success under its own name: a player who has not
        played on that board yet is a normal answer, and its count says how often readers asked
        too early. A 429, or a shed answer (under its own name), is a failure, and then the
        player waits as asked, as a client would."""
        wait_s = 0.0
        with self.client.get(path, name=name, catch_response=True) as response:
            status = response.status_code
            if 200 <= status < 300:
                body = json_body(response)
                if isinstance(body, dict) and expect in body:
                    response.success()
                    return body
                response.failure(f"{status} without {expect!r}")
                return None
            if status == 404 and not_found_is_news:
                # Renamed here, after the fact: the name is only known once the status is.
                response.request_meta["name"] = name + NOT_ON_BOARD
                response.success()
                return None
            if is_shed(response):
                response.request_meta["name"] = name + SHED
            response.failure(failure_reason(response))
            if status == 429 or is_shed(response):
                wait_s = backoff(retry_after_seconds(response))
        if wait_s:
            gevent.sleep(wait_s)
        return None


@dataclass(frozen=True)
class Stage:
    """Until ``until_s`` into the run: ``users`` in all, reached at ``spawn_rate`` a second, any
    new ones of class ``adds``. One class per stage because locust splits the new users of a tick
    between the classes it names by weight: naming one gives exact counts of each."""

    name: str
    until_s: float
    users: int
    spawn_rate: float
    adds: type[User]


def _scaled(users: int) -> int:
    return max(1, round(users * CONFIG.scale))


BASELINE_SERVERS = _scaled(1)
BASELINE_READERS = _scaled(4)
BURST_SERVERS = _scaled(20)
READERS_PILING_IN = _scaled(40)
BASELINE = BASELINE_SERVERS + BASELINE_READERS


class RoundShape(LoadTestShape):
    """Baseline, a burst at round end, readers piling in: about 3 minutes, user counts times
    LEADERBOARD_LOAD_SCALE.

    Active only with LEADERBOARD_LOAD_SHAPE=round: locust runs any shape it finds, and -u/-r/-t
    must keep working for a plain run, so otherwise the class is marked abstract, which locust
    skips."""

    abstract: ClassVar[bool] = CONFIG.shape != "round"
    _stage: Stage | None = None

    stages: ClassVar[tuple[Stage, ...]] = (
        # The steady state between round ends: a game server or two, a few readers.
        Stage("baseline servers", 2, BASELINE_SERVERS, BASELINE_SERVERS, GameServer),
        Stage("baseline", 60, BASELINE, 2, Player),
        # A round ends everywhere at once: game servers arrive within a second and each posts its
        # round (BURST_SERVERS x round_players submissions in a few seconds).
        Stage("round end", 80, BASELINE + BURST_SERVERS, BURST_SERVERS, GameServer),
        # Their rounds are posted; they leave (locust stops the newest users first).
        Stage("servers leave", 85, BASELINE, BURST_SERVERS, GameServer),
        # The players who just played pile in to see where they landed.
        Stage("readers pile in", 175, BASELINE + READERS_PILING_IN, 10, Player),
    )

    def tick(self) -> tuple[int, float, list[type[User]] | None] | None:
        # Locust's own clock for the shape (reset when the shape starts), unannotated there.
        run_time: float = self.get_run_time()  # type: ignore[no-untyped-call]
        for stage in self.stages:
            if run_time < stage.until_s:
                if stage is not self._stage:
                    # Stage changes in the log, to line the charts up with the story.
                    log.info("RoundShape: %s, %d users", stage.name, stage.users)
                    self._stage = stage
                return stage.users, stage.spawn_rate, [stage.adds]
        return None
