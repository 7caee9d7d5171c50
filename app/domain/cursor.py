"""Opaque, tamper-evident page cursors.

A cursor carries the board it belongs to, the last key read and the rank the next page starts at,
signed with HMAC-SHA256; anything not issued by this service for this board is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass

_SIGNATURE_BYTES = 16


class CursorError(ValueError):
    pass


@dataclass(frozen=True)
class Cursor:
    board_id: str
    rank_key: str
    player_id: str
    next_rank: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(cursor: Cursor, secret: bytes) -> str:
    payload = json.dumps(
        [cursor.board_id, cursor.rank_key, cursor.player_id, cursor.next_rank],
        separators=(",", ":"),
    ).encode()
    signature = hmac.new(secret, payload, hashlib.sha256).digest()[:_SIGNATURE_BYTES]
    return f"{_b64(payload)}.{_b64(signature)}"


def decode_cursor(text: str, secret: bytes, *, board_id: str) -> Cursor:
    try:
        payload_part, signature_part = text.split(".")
        payload, signature = _unb64(payload_part), _unb64(signature_part)
    except (ValueError, binascii.Error):
        raise CursorError("the cursor is not one this service issued") from None
    expected = hmac.new(secret, payload, hashlib.sha256).digest()[:_SIGNATURE_BYTES]
    if not hmac.compare_digest(signature, expected):
        raise CursorError("the cursor is not one this service issued")
    board, rank_key, player_id, next_rank = json.loads(payload)
    if board != board_id:
        raise CursorError("the cursor belongs to another board")
    return Cursor(board, rank_key, player_id, next_rank)
