// A typed client for the leaderboard service: the calls are generated from its OpenAPI document
// (src/schema.d.ts, by openapi-typescript; openapi-fetch makes them), and this file adds what every
// caller needs: one Idempotency-Key per submission kept across its retries (a batch's items each
// their own), Retry-After honoured on 409, 429 and 503, a board walked by its cursor, and the rank
// and a batch's results as unions.

import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths } from "./schema.js";
export {
  DEFAULT_TOLERANCE_SECONDS,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  type VerifyOptions,
  verifySignature,
} from "./webhooks.js";
export type Schemas = components["schemas"];
export type Submission = Schemas["ScoreSubmission"];
export type SubmitResponse = Schemas["SubmitResponse"];
export type BoardPage = Awaited<ReturnType<LeaderboardClient["topOfBoard"]>>;
export type Entry = BoardPage["entries"][number];
export type PlayerRank = Awaited<ReturnType<LeaderboardClient["playerRank"]>>;
/** A player's rank: exact, or an honest range that always holds the true rank. */
export type Rank = PlayerRank["rank"];
export type ExactRank = Extract<Rank, { kind: "exact" }>;
export type EstimatedRank = Extract<Rank, { kind: "estimated" }>;
export type Problem = Schemas["Problem"];
/** A board's period: `{ id, startsAt, endsAt, nextResetAt }`, on every board read. */
export type Period = Schemas["PeriodOut"];
/** A reward claim's body, the same on every claim of a player on a board. */
export type ClaimOut = Schemas["ClaimOut"];
/** A claim's answer: `first` is true only on the service's 201 (grant the reward then alone). */
export interface Claim {
  claim: ClaimOut;
  first: boolean;
  idempotencyKey: string;
}
/** A join's body: `playerId`, `cohortId` (null on a variant without cohortSize), `tier` in a league. */
export type EntrantOut = Schemas["EntrantOut"];
/** A join's answer: `first` is true only on the service's 201, this call placing the player. */
export interface Entrant {
  entrant: EntrantOut;
  first: boolean;
}
/** On a cohort variant's rank read: the player's cohort, its league tier, their rank in it. */
export type CohortRank = Schemas["CohortRankOut"];
/**
 * A player's place in a variant's league: the `tier` they play the current `period` in, their
 * `cohortId` on its board (null until placed; `period` null between seasons), and `previous`, their
 * last placement where it was another period's, with its close's `move` (up, down, stay, pending).
 */
export type League = Schemas["LeagueOut"];
/** One submission of a batch; its Idempotency-Key is made (a UUID) unless given. */
export type BatchItem = Submission & { idempotencyKey?: string };
type ResultOut = Schemas["BatchResultOut"];
/** A batch item the service took: what `submitScore` would have returned for it. */
export type AcceptedResult = Omit<ResultOut, "body"> & { body: SubmitResponse };
/** A batch item the service refused, with the problem document it would have answered alone. */
export type RefusedResult = Omit<ResultOut, "body"> & { body: Problem };
/** One item's answer: `isAccepted(result)` tells its outcome from its problem. */
export type BatchResult = AcceptedResult | RefusedResult;

/** Whether the service could count the player's exact place. */
export function isExact(rank: Rank): rank is ExactRank {
  return rank.kind === "exact";
}

/** Whether the service took the batch item (a 2xx), its `body` the submission's outcome. */
export function isAccepted(result: BatchResult): result is AcceptedResult {
  return result.status >= 200 && result.status < 300;
}

/** A problem document the service answered with, after any retries. */
export class LeaderboardError extends Error {
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined) {
    super(problem ? `${problem.title}: ${problem.detail}` : `the service answered ${status}`);
    this.name = "LeaderboardError";
    this.status = status;
    this.problem = problem;
    this.type = problem?.type ?? "about:blank";
    this.title = problem?.title ?? "";
    this.detail = problem?.detail ?? "";
  }
}

export interface ClientOptions {
  /** The service, e.g. `https://leaderboard.example` (no trailing path). */
  baseUrl: string;
  /** An API key: needed to submit (scope `submit:<game>`), not to read. */
  apiKey?: string;
  /** Tries of one call before its last answer is thrown (default 5). */
  maxAttempts?: number;
  /** The longest wait between two tries, whatever Retry-After says (default 30 s). */
  maxWaitMs?: number;
  fetch?: typeof globalThis.fetch;
  /** How to wait (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
}

/** The answers worth trying again, with the same Idempotency-Key: the service says when. */
const RETRIED = new Set([409, 429, 503]);
/**
 * 409s that end: these are answers, not "try later". A claim's `period-open` says when the period
 * closes (Retry-After), often hours away: thrown at once, for the caller to claim again then. A
 * board `full` (maxEntrants) and a player's `attempts-exhausted` (maxAttempts) stay so.
 */
const FINAL_CONFLICTS = new Set([
  "/problems/conflict",
  "/problems/idempotency-key-reused",
  "/problems/period-open",
  "/problems/full",
  "/problems/attempts-exhausted",
]);

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

export class LeaderboardClient {
  /** The generated client, for any call this layer does not wrap. */
  readonly api: Client<paths>;
  private readonly maxAttempts: number;
  private readonly maxWaitMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: ClientOptions) {
    this.api = createClient<paths>({
      baseUrl: options.baseUrl,
      fetch: options.fetch,
      headers: options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {},
    });
    this.maxAttempts = options.maxAttempts ?? 5;
    this.maxWaitMs = options.maxWaitMs ?? 30_000;
    this.sleep = options.sleep ?? ((ms) => new Promise((done) => setTimeout(done, ms)));
  }

  /**
   * Post one round's result. One Idempotency-Key (a new UUID unless given) is kept across every
   * retry of this submission, so a retry after a lost answer is replayed, never counted twice.
   */
  async submitScore(
    submission: Submission,
    options: { idempotencyKey?: string } = {},
  ) {
    const idempotencyKey = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const { data, response } = await this.retried(() =>
      this.api.POST("/v1/scores", {
        params: { header: { "Idempotency-Key": idempotencyKey } },
        body: submission,
      }),
    );
    const replayed = response.headers.get("Idempotent-Replayed") === "true";
    return { outcome: data, replayed, idempotencyKey };
  }

  /**
   * Post up to 100 results in one request (`POST /v1/scores:batch`). Each item keeps one
   * Idempotency-Key (a new UUID unless given) across every retry; the items the service asks to
   * send again (409 that passes, 429, 503) are sent again, alone, after their `retryAfter`, at
   * most `maxAttempts` times in all. Returns each item's last answer, in the items' order: an
   * item's refusal is its result, never thrown (the whole batch's problem is).
   */
  async submitScores(items: BatchItem[]): Promise<{ results: BatchResult[] }> {
    const keyed = items.map((item) => ({
      ...item,
      idempotencyKey: item.idempotencyKey ?? globalThis.crypto.randomUUID(),
    }));
    const last = new Map<string, BatchResult>();
    let pending = keyed;
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      const sent = pending;
      const { data } = await this.retried(() =>
        this.api.POST("/v1/scores:batch", { body: { submissions: sent } }),
      );
      let waitS = 0;
      pending = sent.filter((item, index) => {
        const result = data.results[index] as BatchResult;
        last.set(item.idempotencyKey, result);
        const again =
          !isAccepted(result) && RETRIED.has(result.status) && !FINAL_CONFLICTS.has(result.body.type);
        if (again) waitS = Math.max(waitS, result.retryAfter ?? 0);
        return again;
      });
      if (pending.length === 0 || attempt >= this.maxAttempts) break;
      await this.sleep(Math.min(this.maxWaitMs, waitS > 0 ? waitS * 1000 : 500 * 2 ** (attempt - 1)));
    }
    return { results: keyed.map((item) => last.get(item.idempotencyKey) as BatchResult) };
  }

  /**
   * Claim a player's reward on a closed board (the game server's key). `first` is true only on
   * the service's 201, the first claim: grant the reward on that alone; a later claim answers 200
   * with the same `claim` and `first: false`. One Idempotency-Key (a new UUID unless given) goes
   * with every retry (no answer, 429, 503), so a retry after a lost 201 is answered 201. Before the
   * close a `LeaderboardError` 409 `/problems/period-open` is thrown at once, never retried; a
   * player not on the board is a 404.
   */
  async claimReward(
    game: string,
    variant: string,
    period: string,
    playerId: string,
    options: { idempotencyKey?: string } = {},
  ): Promise<Claim> {
    const idempotencyKey = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const { data, response } = await this.retried(() =>
      this.api.POST("/v1/leaderboards/{game}/{variant}/{period}/claims/{player_id}", {
        params: {
          path: { game, variant, period, player_id: playerId },
          header: { "Idempotency-Key": idempotencyKey },
        },
      }),
    );
    return { claim: data, first: response.status === 201, idempotencyKey };
  }

  /**
   * Join a player to a period board of a cohort or tournament variant (the game server's key):
   * the next seat, first come first placed. `first` is true only on the service's 201, this call
   * placing them; a repeat answers 200 with the same `entrant` and `first: false`, and changes
   * nothing. One Idempotency-Key (a new UUID unless given) goes with every retry, so a retry
   * after a lost 201 is answered 201. Past maxEntrants a `LeaderboardError` 409 `/problems/full`
   * is thrown at once; a variant with nothing to join is a 404.
   */
  async joinBoard(
    game: string,
    variant: string,
    period: string,
    playerId: string,
    options: { idempotencyKey?: string } = {},
  ): Promise<Entrant> {
    const idempotencyKey = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const { data, response } = await this.retried(() =>
      this.api.POST("/v1/leaderboards/{game}/{variant}/{period}/entrants/{player_id}", {
        params: {
          path: { game, variant, period, player_id: playerId },
          header: { "Idempotency-Key": idempotencyKey },
        },
      }),
    );
    return { entrant: data, first: response.status === 201 };
  }

  /**
   * One page of a cohort's board, ranked within the cohort (the page `topOfBoard` gives);
   * `cohortId` as a join or a rank read's `cohort` names it ("3", "gold-3" in a league).
   */
  async topOfCohort(
    game: string,
    variant: string,
    period: string,
    cohortId: string,
    options: { limit?: number; cursor?: string } = {},
  ) {
    const { data } = await this.retried(() =>
      this.api.GET("/v1/leaderboards/{game}/{variant}/{period}/cohorts/{cohort_id}", {
        params: { path: { game, variant, period, cohort_id: cohortId }, query: options },
      }),
    );
    return data;
  }

  /**
   * A player's place in a variant with tiers (a league): `{ tier, cohortId, period, previous }`, the
   * tier they play the current period in (the lowest for a new player) and their cohort on its
   * board (null until placed). A variant without tiers is a `LeaderboardError` 404.
   */
  async getLeague(game: string, variant: string, playerId: string): Promise<League> {
    const { data } = await this.retried(() =>
      this.api.GET("/v1/games/{game}/variants/{variant}/players/{player_id}/league", {
        params: { path: { game, variant, player_id: playerId } },
      }),
    );
    return data;
  }

  /** One page of a board, best first. */
  async topOfBoard(
    game: string,
    variant: string,
    period = "alltime",
    options: { limit?: number; cursor?: string } = {},
  ) {
    const { data } = await this.retried(() =>
      this.api.GET("/v1/leaderboards/{game}/{variant}/{period}", {
        params: { path: { game, variant, period }, query: options },
      }),
    );
    return data;
  }

  /** Every entry of a board in rank order, page by page, following `nextCursor`. */
  async *walkBoard(
    game: string,
    variant: string,
    period = "alltime",
    pageSize = 100,
  ): AsyncGenerator<Entry, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.topOfBoard(game, variant, period, { limit: pageSize, cursor });
      yield* page.entries;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /** A player's entry and rank (`isExact(rank)` tells an exact rank from a range). */
  async playerRank(game: string, variant: string, period: string, playerId: string) {
    const { data } = await this.retried(() =>
      this.api.GET("/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}", {
        params: { path: { game, variant, period, player_id: playerId } },
      }),
    );
    return data;
  }

  /** The players just ahead of and behind a player, in board order. */
  async playersAround(
    game: string,
    variant: string,
    period: string,
    playerId: string,
    options: { before?: number; after?: number } = {},
  ) {
    const { data } = await this.retried(() =>
      this.api.GET("/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}/around", {
        params: { path: { game, variant, period, player_id: playerId }, query: options },
      }),
    );
    return data;
  }

  /** The games and variants that have boards, and each one's live periods. */
  async boards() {
    const { data } = await this.retried(() => this.api.GET("/v1/boards", {}));
    return data;
  }

  /** Hide or ban a player on every board of a game (an admin key). */
  async moderate(game: string, playerId: string, action: "hide" | "ban", reason: string) {
    const { data } = await this.retried(() =>
      this.api.PUT("/v1/games/{game}/moderation/players/{player_id}", {
        params: { path: { game, player_id: playerId } },
        body: { action, reason },
      }),
    );
    return data;
  }

  /** Restore a moderated player: their entries come back as they are (an admin key). */
  async restore(game: string, playerId: string, reason?: string) {
    const { data } = await this.retried(() =>
      this.api.DELETE("/v1/games/{game}/moderation/players/{player_id}", {
        params: { path: { game, player_id: playerId }, query: reason ? { reason } : {} },
      }),
    );
    return data;
  }

  /** A page of the game's moderated players (an admin key). */
  async moderatedPlayers(game: string, options: { limit?: number; cursor?: string } = {}) {
    const { data } = await this.retried(() =>
      this.api.GET("/v1/games/{game}/moderation/players", {
        params: { path: { game }, query: options },
      }),
    );
    return data;
  }

  /** A page of the game's moderation log, newest first (an admin key). */
  async moderationLog(game: string, options: { limit?: number; cursor?: string } = {}) {
    const { data } = await this.retried(() =>
      this.api.GET("/v1/games/{game}/moderation/log", {
        params: { path: { game }, query: options },
      }),
    );
    return data;
  }

  /** Void a player's entry on one board (an admin key); they may submit again. */
  async voidEntry(game: string, variant: string, period: string, playerId: string, reason?: string) {
    const { data } = await this.retried(() =>
      this.api.DELETE("/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}", {
        params: {
          path: { game, variant, period, player_id: playerId },
          query: reason ? { reason } : {},
        },
      }),
    );
    return data;
  }

  /** The call, tried again while the service says to (Retry-After) or does not answer. */
  private async retried<T>(call: () => Promise<Answer<T>>): Promise<{ data: T; response: Response }> {
    for (let attempt = 1; ; attempt += 1) {
      let answer: Answer<T>;
      try {
        answer = await call();
      } catch (failure) {
        // No answer at all (a connection refused or dropped): the same call again, a little later.
        if (attempt >= this.maxAttempts) throw failure;
        await this.sleep(Math.min(this.maxWaitMs, 200 * 2 ** (attempt - 1)));
        continue;
      }
      const { data, error, response } = answer;
      if (response.ok && data !== undefined) return { data, response };
      const problem = error as Problem | undefined;
      const again =
        RETRIED.has(response.status) && !(problem && FINAL_CONFLICTS.has(problem.type));
      if (!again || attempt >= this.maxAttempts) throw new LeaderboardError(response.status, problem);
      await this.sleep(this.waitMs(response, attempt));
    }
  }

  private waitMs(response: Response, attempt: number): number {
    const seconds = Number(response.headers.get("Retry-After"));
    const asked = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 500 * 2 ** (attempt - 1);
    return Math.min(this.maxWaitMs, asked);
  }
}
