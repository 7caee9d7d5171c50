"""A board read names a period its variant keeps: any other is a 404 problem that lists the
variant's periods, as an undefined variant is where undefined boards are refused, not a 200
with an empty board. A period the variant kept before a change stays readable."""

from __future__ import annotations

from datetime import timedelta

from app.bootstrap import Runtime
from app.domain.periods import Board, Period, PeriodKind
from app.services.registry import register_board
from tests.conftest import ADMIN_KEY, Service
from tests.support import lasting

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
KART = "/v1/leaderboards/kart/time-trial"


async def test_a_period_the_variant_does_not_keep_is_a_404_naming_the_ones_it_does(
    service: Service,
) -> None:
    defined = await service.http.put(
        "/v1/games/kart/variants/time-trial",
        json={"order": "asc", "periods": ["alltime", "week"]},
        headers=ADMIN,
    )
    assert defined.status_code == 200, defined.text
    for path in (f"{KART}/day", f"{KART}/day:2026-12-01", f"{KART}/month/players/ada/around"):
        answer = await service.http.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert "its periods are alltime, week" in answer.json()["detail"]
    # The ones it keeps read as boards, empty or not.
    assert (await service.http.get(f"{KART}/week")).status_code == 200
    assert (await service.http.get(f"{KART}/alltime")).status_code == 200
    # A variant with no definition follows the default's periods (all-time, day, week).
    assert (await service.http.get("/v1/leaderboards/trivia/classic/day")).status_code == 200
    month = await service.http.get("/v1/leaderboards/trivia/classic/month")
    assert month.status_code == 404, month.text


async def test_a_period_kept_before_a_change_of_periods_stays_readable(
    service: Service, runtime: Runtime
) -> None:
    defined = await service.http.put(
        "/v1/games/kart/variants/time-trial", json={"periods": ["alltime"]}, headers=ADMIN
    )
    assert defined.status_code == 200, defined.text
    old_day = Board("kart", "time-trial", Period(PeriodKind.DAY, "2026-12-01"))
    await register_board(
        registry=runtime.stores.registry, board=old_day, definition=lasting(timedelta(30))
    )
    assert (await service.http.get(f"{KART}/day:2026-12-01")).status_code == 200
