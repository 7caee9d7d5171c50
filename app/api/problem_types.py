"""The problem ``type``s the API answers with, each a page at ``/problems/<slug>`` that says what
it means and what to do: the ``type`` of every problem document resolves."""

from __future__ import annotations

import html

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse

from app.api.routing import StrictQueryRoute
from app.errors import NotFound, problem_types

MEANING: dict[str, str] = {
    "bad-request": "The request cannot be read as one the API takes. The detail says why.",
    "malformed-json": "The body is not valid JSON. Send one JSON object.",
    "idempotency-key-missing": "A submission needs an Idempotency-Key header, one per distinct "
    "submission, kept the same across its retries.",
    "invalid-cursor": "The cursor is not one this service issued for this board. Pass nextCursor "
    "back as it was given, or start again without one.",
    "cors-refused": "A browser page of another origin asked for more than reading the public "
    "boards: writes and admin endpoints are for servers holding a key.",
    "unauthorized": "No API key, or one the service does not know or has revoked. Send "
    "Authorization: Bearer <key>.",
    "forbidden": "The key is known but lacks the scope: submit:<game> (or submit:*) to submit, "
    "admin for the admin endpoints.",
    "player-banned": "The player is banned from this game by its moderators: their submissions "
    "to it are refused and nothing is stored. An operator lifts a ban with a restore.",
    "not-joined": "The variant requires players to join each period before they submit "
    "(joinRequired), and this player has not joined this one: nothing was stored. Join them with "
    "POST /v1/leaderboards/{game}/{variant}/{period}/entrants/{playerId}, then submit again.",
    "not-found": "No such board entry, player, snapshot or variant definition.",
    "conflict": "The request contradicts the state it found (a definition whose order or "
    "operator would reorder boards holding entries, say). The detail says which.",
    "request-in-flight": "A request with the same Idempotency-Key is still running on this "
    "service: retry after Retry-After with the same key to get its answer.",
    "board-being-seeded": "The board is being bulk-loaded, or its definition changed: retry "
    "after Retry-After with the same Idempotency-Key.",
    "player-being-erased": "The player is being erased: retry after Retry-After.",
    "period-open": "The board's period has not closed yet (its end plus the lateness the "
    "service accepts; an all-time board never closes): claim its reward after the close. "
    "Retry-After says when, at the earliest.",
    "full": "The period board has placed as many players as the variant's maxEntrants: "
    "nothing was stored. A player already in is answered as before.",
    "attempts-exhausted": "The player has made as many accepted submissions to this period "
    "board as the variant's maxAttempts allows: nothing was stored. A replay with the same "
    "Idempotency-Key is not an attempt and is answered as before.",
    "payload-too-large": "The body is over the size limit. Send less.",
    "unsupported-media-type": "Send the body with the Content-Type the endpoint takes "
    "(application/json, or text/csv and JSON lines for a seed).",
    "invalid-input": "A field or parameter is not valid: errors lists each one, with its field "
    "and what it must be.",
    "nested-too-deeply": "The JSON body nests arrays and objects deeper than the service reads.",
    "idempotency-key-reused": "The Idempotency-Key was used before with a different request. "
    "Use a new key for a new submission.",
    "score-out-of-bounds": "The score is outside the bounds the variant's definition sets "
    "(scoreMin and scoreMax, each inclusive; GET /v1/games/{game}/variants/{variant} shows "
    "them): nothing was stored. The detail gives the bounds and the score.",
    "rate-limited": "Too many requests from this key or address: wait Retry-After seconds.",
    "unavailable": "DynamoDB did not answer, or the boards were too contended: retry after "
    "Retry-After (a submission with the same Idempotency-Key).",
    "throttled": "DynamoDB is throttling the tables: retry after Retry-After.",
    "counts-incomplete": "The board's counters are being rebuilt: ranks are back in moments; "
    "retry after Retry-After.",
    "busy": "An item the request needs is held by another write: retry after Retry-After.",
    "board-busy": "This task already has as many submissions to the board in flight as it lets "
    "in at once (a burst past what the board takes): nothing was written; retry after "
    "Retry-After with the same Idempotency-Key.",
    "overloaded": "This task already answers as many requests as its backend serves within its "
    "latency target: the request was refused at once and nothing was done; retry after "
    "Retry-After (a submission with the same Idempotency-Key).",
    "internal": "A fault of the service, logged with the request's id (X-Request-Id): report it "
    "with that id.",
}

_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
</head><body><main>{body}</main></body></html>"""

_HEADERS = {"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"}


def _entry(slug: str) -> str:
    status, title = problem_types()[slug]
    return (
        f'<h2 id="{slug}">{html.escape(title)}</h2><p><code>/problems/{slug}</code>, '
        f"status {status}</p><p>{html.escape(MEANING[slug])}</p>"
    )


router = APIRouter(include_in_schema=False, route_class=StrictQueryRoute)


@router.get("/problems", response_class=HTMLResponse)
async def problem_index() -> HTMLResponse:
    body = "<h1>Problem types</h1>" + "".join(_entry(slug) for slug in problem_types())
    return HTMLResponse(_PAGE.format(title="Problem types", body=body), headers=_HEADERS)


@router.get("/problems/{slug}", response_class=HTMLResponse)
async def problem_page(slug: str) -> HTMLResponse:
    if slug not in problem_types():
        raise NotFound(f"no problem type {slug!r}: /problems lists them")
    _, title = problem_types()[slug]
    return HTMLResponse(_PAGE.format(title=html.escape(title), body=_entry(slug)), headers=_HEADERS)


def install_problem_pages(app: FastAPI) -> None:
    app.include_router(router)
