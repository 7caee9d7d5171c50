"""What readiness depends on besides the tables answering, and how its failures are told.

``StartupJobs``: the work the service does after it starts answering (loading the demo boards);
the service is not ready until all of it is done. ``ReadinessLog``: why the tables do not answer
(no credentials, the endpoint unreachable, a table missing, access denied) goes to the log once
per cause, not once per probe, and never into the response, which anyone may read.
"""

from __future__ import annotations

import structlog

log = structlog.get_logger(__name__)


class StartupJobs:
    """Work the service does after it starts answering: it is not ready until every job is done,
    and never if one failed."""

    def __init__(self) -> None:
        self._running: list[str] = []
        self._failed: list[str] = []

    def begin(self, job: str) -> None:
        self._running.append(job)

    def finish(self, job: str) -> None:
        self._running.remove(job)

    def fail(self, job: str) -> None:
        self._running.remove(job)
        self._failed.append(job)

    def not_ready_because(self) -> str | None:
        """Why the service is not ready yet, or ``None`` once every job is done."""
        if self._failed:
            return f"a start-up job failed ({', '.join(self._failed)}); the log says why"
        if self._running:
            return f"starting: {', '.join(self._running)}"
        return None


class ReadinessLog:
    """Logs a readiness check's failure when its cause changes, and the recovery once."""

    def __init__(self) -> None:
        self._cause: str | None = None

    def failed(self, cause: str) -> None:
        if cause != self._cause:
            log.warning("not_ready", cause=cause)
            self._cause = cause

    def answered(self) -> None:
        if self._cause is not None:
            log.info("ready_again", previously=self._cause)
            self._cause = None
