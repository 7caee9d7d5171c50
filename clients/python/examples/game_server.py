"""An example game server: it posts one round's results for a few players, then prints the top of
the board. Configure it with ``LEADERBOARD_URL`` and ``LEADERBOARD_API_KEY`` (and optionally
``LEADERBOARD_GAME``/``LEADERBOARD_VARIANT``); it exits 0 when every result was accepted."""

from __future__ import annotations

import os
import random
import sys
import uuid

from leaderboard_client import LeaderboardClient, LeaderboardError

PLAYERS = {"ada": "Ada L.", "grace": "Grace H.", "linus": "Linus T.", "margaret": "Margaret H."}
CHARACTERS = {"ada": "owl", "grace": "fox", "linus": "penguin", "margaret": "moth"}


def main() -> int:
    base_url = os.environ.get("LEADERBOARD_URL", "http://127.0.0.1:8000")
    api_key = os.environ.get("LEADERBOARD_API_KEY")
    game = os.environ.get("LEADERBOARD_GAME", "trivia")
    variant = os.environ.get("LEADERBOARD_VARIANT", "classic")
    round_id = str(uuid.uuid4())
    try:
        with LeaderboardClient(base_url, api_key) as client:
            for player_id, name in PLAYERS.items():
                score = random.randint(100, 10_000)
                # One call per result: the client makes its Idempotency-Key and keeps it across
                # retries, so a result lost on the way is never counted twice.
                done = client.submit_score(
                    player_id,
                    score,
                    game,
                    variant,
                    display_name=name,
                    context={"round": round_id},  # kept with the entry, returned to the player
                    metadata={"character": CHARACTERS[player_id]},  # shown by every read
                )
                alltime = next(b for b in done.boards if b["period"] == "alltime")
                rank = alltime.get("rankAfter")
                print(f"posted {player_id} {score} best={alltime['best']} rank={rank}")  # noqa: T201
            page = client.top(game, variant, "alltime", limit=10)
    except LeaderboardError as exc:
        print(f"the leaderboard refused: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    print(f"top of {page['leaderboardId']} ({page['playerCount']} players):")  # noqa: T201
    for entry in page["entries"]:
        character = (entry["metadata"] or {}).get("character", "-")
        print(f"  {entry['rank']:>3}  {entry['playerId']:<12} {entry['score']} ({character})")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
