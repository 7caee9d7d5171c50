"""The board viewer's words for a definition's values have one home, the enums that define the
values (``Order``, ``Operator``, ``ScoreFormat``), and reach the page as one of its files,
``/viewer/words.json``, exactly as the enums hold them. (That the page writes them, and holds none
of its own: tests/browser/.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from app.api.viewer import WORDS, install_viewer, viewer_words
from app.domain.definitions import Operator, ScoreFormat
from app.domain.keys import Order


def test_every_order_operator_and_score_format_has_its_words() -> None:
    for member in [*Order, *Operator, *ScoreFormat]:
        assert isinstance(member.words, str), member
        assert member.words.strip() == member.words != "", member
    for operator in Operator:
        assert operator.score_name.strip() == operator.score_name != "", operator
    # Each value says something of its own: no two of one kind read alike.
    for words in (
        [order.words for order in Order],
        [operator.words for operator in Operator],
        [operator.score_name for operator in Operator],
        [score_format.words for score_format in ScoreFormat],
    ):
        assert len(set(words)) == len(words), words


def test_the_words_are_the_ones_the_viewer_has_always_written() -> None:
    assert (Order.DESC.words, Order.ASC.words) == ("Higher is better", "Lower is better")
    assert [(o.words, o.score_name) for o in Operator] == [
        ("best score kept", "Score"),
        ("latest score counts", "Latest score"),
        ("scores add up to a total", "Total"),
    ]


def test_the_viewer_words_gather_every_member_by_the_value_the_api_gives() -> None:
    assert viewer_words() == {
        "order": {order.value: order.words for order in Order},
        "operator": {operator.value: operator.words for operator in Operator},
        "scoreName": {operator.value: operator.score_name for operator in Operator},
        "scoreFormat": {score_format.value: score_format.words for score_format in ScoreFormat},
    }
    assert set(viewer_words()["order"]) == {"desc", "asc"}
    assert (
        set(viewer_words()["operator"])
        == set(viewer_words()["scoreName"])
        == {
            "best",
            "latest",
            "sum",
        }
    )
    assert set(viewer_words()["scoreFormat"]) == {"integer", "duration_ms"}


@pytest.fixture
async def viewer() -> AsyncIterator[httpx.AsyncClient]:
    """The viewer's routes alone, in this process: no service behind them."""
    app = FastAPI()
    install_viewer(app)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://viewer.test"
    ) as client:
        yield client


async def test_the_served_words_are_the_domains(viewer: httpx.AsyncClient) -> None:
    served = await viewer.get(WORDS)
    assert served.status_code == 200
    assert served.headers["content-type"] == "application/json"
    assert json.loads(served.content) == viewer_words()
    for member in [*Order, *Operator, *ScoreFormat]:
        assert member.words in served.text, member
