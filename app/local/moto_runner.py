"""moto's DynamoDB server with its requests served one at a time.

moto's backend is not thread-safe: concurrent transactions deep-copy tables while other threads
change them, and fail with ``RuntimeError: dictionary changed size during iteration`` (HTTP 500).
This runs the same application as ``moto_server``, threaded for connections, with a lock around
each request, so a burst queues instead of failing. ``python -m app.local.moto_runner -H host -p port``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterable
from types import FrameType
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple

StartResponse = Any
Environ = dict[str, Any]


def serialised(app: Any) -> Any:
    lock = threading.Lock()

    def application(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        with lock:
            return list(app(environ, start_response))  # the body too is produced under the lock

    return application


def _copy_each_table_once_per_transaction() -> None:
    """moto backs up a table before a transaction by deep-copying it once per item of the
    transaction that names it; the copies are identical, so keep the first. Same behaviour, a
    third of the work for our three-item transactions (the copy is what makes moto slow)."""
    import copy

    from moto.dynamodb.models import DynamoDBBackend

    original = DynamoDBBackend.transact_write_items

    class _OncePerObject:
        def __init__(self) -> None:
            # The original is kept beside its copy, so no id is reused while this lives.
            self.memo: dict[int, tuple[Any, Any]] = {}

        def deepcopy(self, value: Any) -> Any:
            if id(value) not in self.memo:
                self.memo[id(value)] = (value, copy.deepcopy(value))
            return self.memo[id(value)][1]

    from moto.dynamodb import models

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        # Requests are served one at a time (see ``serialised``), so swapping the module's
        # ``copy`` for the length of one transaction is safe.
        setattr(models, "copy", _OncePerObject())  # noqa: B010 - the module's own name
        try:
            return original(self, transact_items)
        finally:
            setattr(models, "copy", copy)  # noqa: B010

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _stop(signum: int, frame: FrameType | None) -> None:
    sys.exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    _copy_each_table_once_per_transaction()
    app = serialised(DomainDispatcherApplication(create_backend_app))
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
