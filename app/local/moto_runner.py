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
    app = serialised(DomainDispatcherApplication(create_backend_app))
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
