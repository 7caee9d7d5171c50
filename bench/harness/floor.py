"""FastAPI and uvicorn alone, served as ``leaderboard serve`` serves (``app.server.server_config``:
uvloop, httptools), with one route that answers ``{}`` and nothing of the service's: no
middleware, no dependency, no log line, no call. Its CPU a request is the least any request served
on this stack costs, which the CPU part sets beside a bare call (decision 0023).

``python -m bench.harness.floor --port 8124``
"""

from __future__ import annotations

import argparse

import uvicorn
from fastapi import FastAPI

from app.server import server_config

PATH = "/floor"


def floor_app() -> FastAPI:
    # FastAPI's OpenTelemetry hooks off, as the service has them (app.main).
    app = FastAPI(
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )

    @app.get(PATH)
    async def answer() -> dict[str, str]:
        return {}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    config = server_config(
        floor_app(),
        host="127.0.0.1",
        port=args.port,
        forwarded_allow_ips="127.0.0.1",
        shutdown_grace_s=5,
        keep_alive_s=5,
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
