"""The Python client's ``verify_signature`` (clients/python, imported from its folder) says what
the service's own ``app.domain.events.verify`` says, for headers the service signs and for
forged, tampered, old, future and malformed ones."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.events import signature, verify
from clients.python.leaderboard_client import SIGNATURE_HEADER, verify_signature

SECRET = "whsec-0123456789abcdef"
BODY = b'{"id":"evt_0123","type":"board.closed","leaderboardId":"trivia#classic#day:2026-12-01"}'
NOW = 1_800_000_000


def test_the_header_name_is_the_services() -> None:
    assert SIGNATURE_HEADER == "Leaderboard-Signature"


def test_a_signed_body_verifies_as_bytes_and_as_text() -> None:
    header = signature(SECRET, NOW, BODY)
    assert verify_signature(SECRET, header, BODY, now=NOW)
    assert verify_signature(SECRET, header, BODY.decode(), now=NOW)


@pytest.mark.parametrize(
    ("header", "body", "now"),
    [
        (signature("another-secret-of-length", NOW, BODY), BODY, NOW),
        (signature(SECRET, NOW, BODY), BODY + b" ", NOW),
        (signature(SECRET, NOW, BODY), BODY, NOW + 301),
        (signature(SECRET, NOW, BODY), BODY, NOW - 301),
        (f"t={NOW}", BODY, NOW),
        ("v1=00", BODY, NOW),
        ("", BODY, NOW),
        ("t=soon,v1=00", BODY, NOW),
    ],
)
def test_what_is_refused(header: str, body: bytes, now: int) -> None:
    assert not verify_signature(SECRET, header, body, now=now)
    assert not verify(SECRET, header, body, now_s=now)


def test_the_tolerance_is_the_callers() -> None:
    header = signature(SECRET, NOW, BODY)
    assert verify_signature(SECRET, header, BODY, now=NOW + 600, tolerance_seconds=600)
    assert not verify_signature(SECRET, header, BODY, now=NOW + 601, tolerance_seconds=600)


def test_a_header_with_a_second_signature_verifies_by_either() -> None:
    header = signature(SECRET, NOW, BODY) + ",v1=" + "0" * 64
    assert verify_signature(SECRET, header, BODY, now=NOW)


@given(
    st.text(min_size=16, max_size=40),
    st.binary(max_size=200),
    st.integers(min_value=0, max_value=2**33),
    st.integers(min_value=-400, max_value=400),
    st.text(max_size=80),
)
def test_it_agrees_with_the_service(
    secret: str, body: bytes, at: int, skew: int, noise: str
) -> None:
    header = signature(secret, at, body)
    for given_header in (header, noise, header.replace("v1=", "v1=0"), header + "," + noise):
        assert verify_signature(secret, given_header, body, now=at + skew) == verify(
            secret, given_header, body, now_s=at + skew
        )
