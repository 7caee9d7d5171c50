"""A webhook receiver on 127.0.0.1 for the tests: a bare HTTP/1.1 server (asyncio's streams) that
records every request, answers with the status a test chooses (after an optional wait), and can
go down (its port then refuses connections) and come back on the same port."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes


@dataclass
class Receiver:
    status: int = 200
    wait_s: float = 0.0
    received: list[Received] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/leaderboard"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Down: connections to its port are refused until ``start``."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")[1:]
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in lines if line)
            }
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.received.append(Received(headers, body))
            if self.wait_s:
                await asyncio.sleep(self.wait_s)
            writer.write(
                f"HTTP/1.1 {self.status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def ids(self) -> list[str]:
        return [r.headers["leaderboard-event-id"] for r in self.received]


@asynccontextmanager
async def receiving(status: int = 200) -> AsyncIterator[Receiver]:
    receiver = Receiver(status=status)
    await receiver.start()
    try:
        yield receiver
    finally:
        await receiver.stop()
