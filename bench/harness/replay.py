"""A bare aiobotocore script making the calls the service made: the same operations with the same
parameters (their table names swapped for a twin pair of tables in the same state), issued together
where the service issued them together. Its CPU time is the floor the service's own is compared
with.

``python -m bench.harness.replay PLAN.json --endpoint URL`` loads the plan
(``{"tables": {old: new}, "requests": [{"label", "levels": [[{operation, params}]]}]}``), then makes
one request's calls for each index read from stdin, printing ``{"cpu": seconds, "errors": n}`` per
line, so that the harness can alternate it with the service request by request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Mapping
from typing import IO, Any

import uvloop
from aiobotocore.session import get_session
from botocore import xform_name

from app.store.client import client_config

SETTLE_S = 0.005
"""After a request's calls, and after the service's response, the time both sides are given to
finish what the calls left to their event loops before their CPU time is read."""


def renamed(value: Any, tables: Mapping[str, str]) -> Any:
    """``value`` with every ``TableName`` (and every ``RequestItems`` key) swapped."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "TableName" and isinstance(v, str):
                out[k] = tables.get(v, v)
            elif k == "RequestItems" and isinstance(v, dict):
                out[k] = {tables.get(t, t): renamed(r, tables) for t, r in v.items()}
            else:
                out[k] = renamed(v, tables)
        return out
    if isinstance(value, list):
        return [renamed(v, tables) for v in value]
    return value


async def replay(plan: dict[str, Any], endpoint: str, lines: IO[str], out: IO[str]) -> None:
    tables = plan["tables"]
    # The service's own client settings (importing them loads the service's client module, not
    # its request path: a replay with the whole app loaded measured the same, docs/benchmarks/experiments/0011).
    config = client_config()
    async with get_session().create_client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - moto and DynamoDB Local take any
        config=config,
    ) as client:
        requests = [
            [[renamed(c, tables) for c in level] for level in r["levels"]] for r in plan["requests"]
        ]
        print(json.dumps({"ready": len(requests)}), file=out, flush=True)
        # One line at a time: the harness waits for each answer before it sends the next.
        while line := await asyncio.to_thread(lines.readline):
            started = time.process_time()
            errors = 0
            for level in requests[int(line)]:
                found = await asyncio.gather(
                    *(getattr(client, xform_name(c["operation"]))(**c["params"]) for c in level),
                    return_exceptions=True,
                )
                errors += sum(isinstance(f, Exception) for f in found)
            # What the calls leave to the loop (closing connections, releasing responses) runs
            # after they return: let it run inside the measured time, as it does in the service.
            await asyncio.sleep(SETTLE_S)
            cpu = time.process_time() - started
            print(json.dumps({"cpu": cpu, "errors": errors}), file=out, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("plan")
    parser.add_argument("--endpoint", required=True)
    args = parser.parse_args()
    with open(args.plan) as source:
        plan = json.load(source)
    uvloop.run(replay(plan, args.endpoint, sys.stdin, sys.stdout))


if __name__ == "__main__":
    main()
