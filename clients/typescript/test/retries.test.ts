// The thin layer's promises, against a fake fetch: no service needed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { LeaderboardClient, LeaderboardError, isAccepted } from "../src/index.js";

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

function json(body: unknown): Response {
  return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
}

function refused(key: string, status: number, type: string, retryAfter?: number) {
  return { idempotencyKey: key, status, replayed: false, retryAfter, body: { type, title: "t", status, detail: "d" } };
}

function accepted(key: string, playerId: string) {
  return { idempotencyKey: key, status: 200, replayed: false, body: { ...ok, playerId } };
}

type Sent = { idempotencyKey: string; playerId: string }[];

/** A fetch that records each batch's items as sent and answers with `answer(items)` in turn. */
function batchFake(answers: ((items: Sent) => Response)[], sent: Sent[]): typeof fetch {
  const answer = async (input: unknown): Promise<Response> => {
    const items = ((await (input as Request).json()) as { submissions: Sent }).submissions;
    sent.push(items);
    const next = answers.shift();
    if (!next) throw new Error("no more answers");
    return next(items);
  };
  return answer as typeof fetch;
}

const round = ["ada", "bob", "cy", "dan"].map((playerId) => ({ playerId, score: 10, game: "trivia", variant: "classic" }));

test("a batch sends again only the items that ask, with their own keys, after their retryAfter", async () => {
  const sent: Sent[] = [];
  const waits: number[] = [];
  const client = new LeaderboardClient({
    baseUrl: "http://service",
    apiKey: "k",
    fetch: batchFake(
      [
        ([a, b, c, d]) =>
          json({
            results: [
              accepted(a!.idempotencyKey, "ada"),
              refused(b!.idempotencyKey, 503, "/problems/throttled", 2),
              refused(c!.idempotencyKey, 422, "/problems/invalid-input"),
              refused(d!.idempotencyKey, 409, "/problems/request-in-flight", 1),
            ],
          }),
        (items) => json({ results: items.map((item) => accepted(item.idempotencyKey, item.playerId)) }),
      ],
      sent,
    ),
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  const { results } = await client.submitScores([...round.slice(0, 3), { ...round[3]!, idempotencyKey: "mine" }]);
  const keys = sent[0]!.map((item) => item.idempotencyKey);
  assert.deepEqual(sent[0]!.map((item) => item.playerId), ["ada", "bob", "cy", "dan"]);
  assert.equal(new Set(keys).size, 4);
  assert.equal(keys[3], "mine");
  // Only the items that asked, each with the key it was first sent with, after the longest wait.
  assert.deepEqual(sent[1]!.map((item) => [item.playerId, item.idempotencyKey]), [["bob", keys[1]], ["dan", "mine"]]);
  assert.equal(sent.length, 2);
  assert.deepEqual(waits, [2000]);
  assert.deepEqual(results.map((result) => [result.idempotencyKey, result.status]), [
    [keys[0], 200],
    [keys[1], 200],
    [keys[2], 422],
    ["mine", 200],
  ]);
  const [first, , third] = results;
  assert.ok(first && isAccepted(first) && first.body.playerId === "ada");
  assert.ok(third && !isAccepted(third) && third.body.type === "/problems/invalid-input");
});

test("a batch refused whole is sent again as it was, and a batch's problem is thrown", async () => {
  const sent: Sent[] = [];
  const client = new LeaderboardClient({
    baseUrl: "http://service",
    apiKey: "k",
    fetch: batchFake(
      [
        () => problem(503, "/problems/overloaded", 1),
        (items) => json({ results: items.map((item) => accepted(item.idempotencyKey, item.playerId)) }),
        () => problem(422, "/problems/invalid-input"),
      ],
      sent,
    ),
    sleep: async () => {},
  });
  const { results } = await client.submitScores(round.slice(0, 2));
  assert.deepEqual(sent[1], sent[0]);
  assert.deepEqual(results.map((result) => result.status), [200, 200]);
  await assert.rejects(
    client.submitScores(round.slice(0, 2).map((item) => ({ ...item, idempotencyKey: "same" }))),
    (error: unknown) => error instanceof LeaderboardError && error.status === 422,
  );
});

const claimed = {
  playerId: "ada",
  leaderboardId: "trivia#classic#day:2026-12-01",
  rank: 3,
  playerCount: 120,
  claimedAt: "2026-12-02T00:05:00Z",
};

function claimAnswer(status: number): Response {
  return new Response(JSON.stringify(claimed), { status, headers: { "Content-Type": "application/json" } });
}

test("a first claim is first, a repeat is not, with the same body", async () => {
  const keys: string[] = [];
  const client = new LeaderboardClient({
    baseUrl: "http://service",
    apiKey: "k",
    fetch: fake([claimAnswer(201), claimAnswer(200)], keys),
    sleep: async () => {},
  });
  const first = await client.claimReward("trivia", "classic", "day:2026-12-01", "ada");
  const again = await client.claimReward("trivia", "classic", "day:2026-12-01", "ada", { idempotencyKey: "mine" });
  assert.equal(first.first, true);
  assert.equal(again.first, false);
  assert.deepEqual(first.claim, claimed);
  assert.deepEqual(again.claim, first.claim);
  assert.deepEqual(keys, [first.idempotencyKey, "mine"]);
  assert.ok(first.idempotencyKey.length > 0);
});

test("a claim retried after no answer and a 503 keeps its key and its 201", async () => {
  const keys: string[] = [];
  const answers = [problem(503, "/problems/unavailable", 1), claimAnswer(201)];
  let calls = 0;
  const flaky = (async (input: unknown): Promise<Response> => {
    keys.push((input as Request).headers.get("Idempotency-Key") ?? "");
    calls += 1;
    if (calls === 1) throw new TypeError("fetch failed");
    return answers.shift() as Response;
  }) as typeof fetch;
  const client = new LeaderboardClient({ baseUrl: "http://service", fetch: flaky, sleep: async () => {} });
  const { first, idempotencyKey } = await client.claimReward("trivia", "classic", "day:2026-12-01", "ada");
  assert.equal(first, true);
  assert.equal(keys.length, 3);
  assert.ok(keys.every((key) => key === idempotencyKey));
});

test("a claim before the close throws period-open at once, not retried", async () => {
  const keys: string[] = [];
  const waits: number[] = [];
  const client = new LeaderboardClient({
    baseUrl: "http://service",
    fetch: fake([problem(409, "/problems/period-open", 3600), claimAnswer(201)], keys),
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  await assert.rejects(
    client.claimReward("trivia", "classic", "day", "ada"),
    (error: unknown) => error instanceof LeaderboardError && error.status === 409 && error.type === "/problems/period-open",
  );
  assert.equal(keys.length, 1);
  assert.deepEqual(waits, []);
});
