"""structlog set-up: JSON lines off a TTY, a console renderer on one; a request id bound per
request through context variables, and one canonical line per request."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(
    *, json: bool | None = None, level: int = logging.INFO, cache: bool = True
) -> None:
    """``json=None`` picks JSON unless stderr is a terminal. Tests pass ``cache=False`` so that
    ``structlog.testing.capture_logs`` sees every logger."""
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            # Tracebacks without local variables: locals hold headers, keys and bodies.
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            )
            if json
            else structlog.dev.set_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=cache,
    )
