// An example game server: posts one round's results in one batch, then reads the top of the board.
//   LEADERBOARD_URL=http://127.0.0.1:8000 LEADERBOARD_API_KEY=dev-only-key node dist/examples/game-server.js

import { LeaderboardClient, isAccepted, isExact } from "../src/index.js";

const client = new LeaderboardClient({
  baseUrl: process.env.LEADERBOARD_URL ?? "http://127.0.0.1:8000",
  apiKey: process.env.LEADERBOARD_API_KEY,
});
const game = "trivia";
const variant = process.env.LEADERBOARD_VARIANT ?? "classic";
const round = [
  { playerId: "ada", score: 8750, displayName: "Ada", metadata: { character: "owl" } },
  { playerId: "grace", score: 9120, displayName: "Grace", metadata: { character: "fox" } },
  { playerId: "alan", score: 7300, displayName: "Alan", metadata: { character: "cat" } },
];

// One request for the round; each result keeps its own Idempotency-Key across any retry.
const { results } = await client.submitScores(round.map((result) => ({ ...result, game, variant })));
for (const [index, result] of results.entries()) {
  const player = round[index]?.playerId;
  if (!isAccepted(result)) throw new Error(`${player}: ${result.status} ${result.body.detail}`);
  const board = result.body.boards[0];
  console.log(`posted ${player}: best ${board?.best} on ${board?.leaderboardId}`);
}

const page = await client.topOfBoard(game, variant, "alltime", { limit: 10 });
for (const entry of page.entries) {
  // metadata: what the round that set the entry sent, shown beside it.
  const character = entry.metadata?.character ?? "-";
  console.log(`${entry.rank}. ${entry.displayName ?? entry.playerId} ${entry.score} (${character})`);
}
const { rank } = await client.playerRank(game, variant, "alltime", "ada");
console.log(isExact(rank) ? `ada is rank ${rank.rank}` : `ada is within ${rank.rankRange.join("-")}`);
