"""Browsers of other origins may read the public boards, and nothing else: preflights for reads
are answered, reads carry ``Access-Control-Allow-Origin``, and writes, admin and the operators'
paths stay closed to them."""

from __future__ import annotations

import pytest

from app.bootstrap import Runtime
from app.configuration import ConfigurationError, load_settings
from app.settings import Settings
from app.store.tables import TableNames
from tests.conftest import make_settings, serve

GAME_SITE = "https://game.example"
BOARD = "/v1/leaderboards/trivia/classic/alltime"


def _preflight(method: str, *headers: str) -> dict[str, str]:
    asked = {"Origin": GAME_SITE, "Access-Control-Request-Method": method}
    if headers:
        asked["Access-Control-Request-Headers"] = ", ".join(headers)
    return asked


async def test_a_page_of_an_allowed_origin_reads_the_boards(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, cors_origins=[GAME_SITE])
    async with serve(settings) as service:
        preflight = await service.http.options(BOARD, headers=_preflight("GET"))
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == GAME_SITE
        assert "GET" in preflight.headers["access-control-allow-methods"]
        read = await service.http.get(BOARD, headers={"Origin": GAME_SITE})
        assert read.status_code == 200
        assert read.headers["access-control-allow-origin"] == GAME_SITE
        assert "RateLimit" in read.headers["access-control-expose-headers"]
        assert "access-control-allow-credentials" not in read.headers

        # Another site's page gets no grant, and its preflight a problem document.
        other = await service.http.get(BOARD, headers={"Origin": "https://elsewhere.example"})
        assert "access-control-allow-origin" not in other.headers
        refused = await service.http.options(
            BOARD, headers={**_preflight("GET"), "Origin": "https://elsewhere.example"}
        )
        assert refused.status_code == 400
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["type"] == "/problems/cors-refused"


async def test_writes_admin_and_operators_paths_stay_closed_to_browsers(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, cors_origins=["*"])
    async with serve(settings) as service:
        for method, path in (
            ("POST", "/v1/scores"),
            ("DELETE", "/v1/players/ann"),
            ("PUT", "/v1/games/trivia/variants/classic"),
            ("POST", f"{BOARD}/reconcile"),
        ):
            refused = await service.http.options(
                path, headers=_preflight(method, "authorization", "content-type")
            )
            assert refused.status_code == 400, (method, path)
            assert "access-control-allow-origin" not in refused.headers
        # A read that sends credentials is not one a preflight lets through either.
        with_key = await service.http.options(BOARD, headers=_preflight("GET", "authorization"))
        assert with_key.status_code == 400
        # Even a request that needs no preflight gets no grant to read the answer.
        posted = await service.http.post(
            "/v1/scores", headers={"Origin": GAME_SITE, "Content-Type": "text/plain"}, content="x"
        )
        assert "access-control-allow-origin" not in posted.headers
        for path in ("/metrics", "/healthz", "/openapi.json"):
            answer = await service.http.get(path, headers={"Origin": GAME_SITE})
            assert "access-control-allow-origin" not in answer.headers, path
        # Any origin, no credentials: the grant is the wildcard.
        read = await service.http.get(BOARD, headers={"Origin": GAME_SITE})
        assert read.headers["access-control-allow-origin"] == "*"


async def test_no_origin_is_allowed_where_none_is_configured(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, cors_origins=[])
    async with serve(settings) as service:
        read = await service.http.get(BOARD, headers={"Origin": GAME_SITE})
        assert read.status_code == 200
        assert "access-control-allow-origin" not in read.headers
        preflight = await service.http.options(BOARD, headers=_preflight("GET"))
        assert preflight.status_code == 405  # no CORS at all: OPTIONS is no method of the route


def test_the_default_is_any_origin_outside_production_and_none_in_it() -> None:
    assert Settings(environment="development").browser_origins == ["*"]
    production = Settings.model_construct(environment="production", cors_origins=None)
    assert production.browser_origins == []


@pytest.mark.parametrize(
    "given", ['["https://game.example/page"]', '["game.example"]', '["ftp://game.example"]']
)
def test_an_origin_that_is_not_one_is_a_configuration_error(
    given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEADERBOARD_CORS_ORIGINS", given)
    with pytest.raises(ConfigurationError, match="CORS_ORIGINS"):
        load_settings()


def test_origins_are_a_json_list_like_the_other_list_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "LEADERBOARD_CORS_ORIGINS", '["https://game.example", "http://localhost:3000"]'
    )
    assert load_settings().browser_origins == ["https://game.example", "http://localhost:3000"]
