// Joins, a cohort's board and a player's league, against a fake fetch: no service needed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { LeaderboardClient, LeaderboardError } from "../src/index.js";

const entrant = { playerId: "ada", cohortId: "gold-2", tier: "gold" };

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
}

function problem(status: number, type: string, retryAfter?: number): Response {
  const headers: Record<string, string> = { "Content-Type": "application/problem+json" };
  if (retryAfter !== undefined) headers["Retry-After"] = String(retryAfter);
  return new Response(JSON.stringify({ type, title: "t", status, detail: "d" }), { status, headers });
}

interface Seen {
  method: string;
  url: string;
  authorization: string | null;
  idempotencyKey: string | null;
}

function client(answers: Response[], seen: Seen[], waits: number[] = []): LeaderboardClient {
  const fetch = (async (input: unknown): Promise<Response> => {
    const request = input as Request;
    seen.push({
      method: request.method,
      url: request.url,
      authorization: request.headers.get("Authorization"),
      idempotencyKey: request.headers.get("Idempotency-Key"),
    });
    const next = answers.shift();
    if (!next) throw new Error("no more answers");
    return next;
  }) as typeof globalThis.fetch;
  return new LeaderboardClient({
    baseUrl: "http://service/",
    apiKey: "k",
    fetch,
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
}

test("a join is first on the 201 and a repeat is not, with the same body", async () => {
  const seen: Seen[] = [];
  const waits: number[] = [];
  const leaderboard = client([problem(503, "/problems/unavailable", 1), json(entrant, 201), json(entrant, 200)], seen, waits);
  const first = await leaderboard.joinBoard("trivia", "cup", "day:2026-12-06", "ada");
  const again = await leaderboard.joinBoard("trivia", "cup", "day:2026-12-06", "ada");
  assert.deepEqual([first.first, again.first], [true, false]);
  assert.deepEqual(first.entrant, entrant);
  assert.deepEqual(again.entrant, first.entrant);
  assert.deepEqual(waits, [1000]);
  assert.equal(seen.length, 3);
  for (const request of seen) {
    assert.equal(request.method, "POST");
    assert.equal(request.url, "http://service/v1/leaderboards/trivia/cup/day%3A2026-12-06/entrants/ada");
  }
  // One key for a join's retries (a retry of a placing join is answered 201), another for a join.
  const [retried, retry, other] = seen.map((request) => request.idempotencyKey);
  assert.ok(retried);
  assert.equal(retry, retried);
  assert.notEqual(other, retried);
});

test("a join to a full board throws full at once, and so does attempts-exhausted", async () => {
  for (const type of ["/problems/full", "/problems/attempts-exhausted"]) {
    const seen: Seen[] = [];
    const waits: number[] = [];
    const leaderboard = client([problem(409, type, 1), json(entrant, 201)], seen, waits);
    await assert.rejects(
      leaderboard.joinBoard("trivia", "cup", "day", "ada"),
      (error: unknown) => error instanceof LeaderboardError && error.status === 409 && error.type === type,
    );
    assert.equal(seen.length, 1, type);
    assert.deepEqual(waits, []);
  }
});

test("the top of a cohort is read from its path, with the page's query", async () => {
  const seen: Seen[] = [];
  const page = { leaderboardId: "trivia#cup#alltime#~gold-2", entries: [], nextCursor: null };
  const top = await client([json(page)], seen).topOfCohort("trivia", "cup", "alltime", "gold-2", { limit: 5 });
  assert.deepEqual(top, page);
  assert.equal(seen[0]?.url, "http://service/v1/leaderboards/trivia/cup/alltime/cohorts/gold-2?limit=5");
});

test("a league is read from its path with the key, retried, and its 404 thrown", async () => {
  const seen: Seen[] = [];
  const waits: number[] = [];
  const league = {
    tier: "gold",
    cohortId: null,
    period: "week:2026-W49",
    previous: { period: "week:2026-W48", tier: "silver", cohortId: "silver-4", move: "up" },
  };
  const leaderboard = client(
    [problem(429, "/problems/rate-limited", 2), json(league), problem(404, "/problems/not-found")],
    seen,
    waits,
  );
  const placed = await leaderboard.getLeague("trivia", "cup", "ada lovelace");
  assert.deepEqual(placed, league);
  assert.deepEqual(waits, [2000]);
  assert.deepEqual(seen[0], {
    method: "GET",
    url: "http://service/v1/games/trivia/variants/cup/players/ada%20lovelace/league",
    authorization: "Bearer k",
    idempotencyKey: null,
  });
  await assert.rejects(
    leaderboard.getLeague("trivia", "cup", "nobody"),
    (error: unknown) => error instanceof LeaderboardError && error.status === 404 && error.type === "/problems/not-found",
  );
});
