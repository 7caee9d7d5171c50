// The thin layer's promises, against a fake fetch: no service needed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { LeaderboardClient, LeaderboardError } from "../src/index.js";

const ok = {
  playerId: "ada",
  boards: [{ leaderboardId: "trivia#classic#alltime", period: "alltime", best: 10, previousBest: null, improved: true }],
};

function problem(status: number, type: string, retryAfter?: number): Response {
  const headers: Record<string, string> = { "Content-Type": "application/problem+json" };
  if (retryAfter !== undefined) headers["Retry-After"] = String(retryAfter);
  return new Response(JSON.stringify({ type, title: "t", status, detail: "d" }), { status, headers });
}

function fake(answers: Response[], keys: string[]): typeof fetch {
  const answer = async (input: unknown): Promise<Response> => {
    keys.push((input as Request).headers.get("Idempotency-Key") ?? "");
    const next = answers.shift();
    if (!next) throw new Error("no more answers");
    return next;
  };
  return answer as typeof fetch;
}

test("a submission is retried with the same key after 503 and 429, waiting Retry-After", async () => {
  const keys: string[] = [];
  const waits: number[] = [];
  const client = new LeaderboardClient({
    baseUrl: "http://service",
    apiKey: "k",
    fetch: fake(
      [
        problem(503, "/problems/unavailable", 2),
        problem(429, "/problems/rate-limited", 1),
        new Response(JSON.stringify(ok), { status: 200, headers: { "Content-Type": "application/json" } }),
      ],
      keys,
    ),
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  const { outcome, idempotencyKey } = await client.submitScore({ playerId: "ada", score: 10, game: "trivia", variant: "classic" });
  assert.equal(outcome.playerId, "ada");
  assert.deepEqual(waits, [2000, 1000]);
  assert.equal(keys.length, 3);
  assert.ok(keys.every((key) => key === idempotencyKey && key.length > 0));
});

test("an answer that ends is thrown at once, with its problem", async () => {
  const keys: string[] = [];
  const client = new LeaderboardClient({
    baseUrl: "http://service",
    fetch: fake([problem(422, "/problems/idempotency-key-reused")], keys),
    sleep: async () => {},
  });
  await assert.rejects(
    client.submitScore({ playerId: "ada", score: 10, game: "trivia", variant: "classic" }, { idempotencyKey: "k1" }),
    (error: unknown) => error instanceof LeaderboardError && error.status === 422 && error.type === "/problems/idempotency-key-reused",
  );
  assert.deepEqual(keys, ["k1"]);
});

test("retries stop after maxAttempts and the last answer is thrown", async () => {
  const keys: string[] = [];
  const client = new LeaderboardClient({
    baseUrl: "http://service",
    maxAttempts: 2,
    fetch: fake([problem(503, "/problems/unavailable", 0), problem(503, "/problems/unavailable", 0)], keys),
    sleep: async () => {},
  });
  await assert.rejects(
    client.topOfBoard("trivia", "classic"),
    (error: unknown) => error instanceof LeaderboardError && error.status === 503,
  );
  assert.equal(keys.length, 2);
});
