"""Where a delivery may go: a webhook URL's host must be, and resolve to, public addresses only
(loopback too outside production), checked when the URL is set and again before each delivery,
since what a name resolves to can change."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

from app.domain.webhooks import IpAddress, Target, address_problem, literal_address

Resolver = Callable[[str, int], Awaitable[list[IpAddress]]]
"""A host's addresses (``OSError`` where it has none)."""


async def resolve(host: str, port: int) -> list[IpAddress]:
    """The host's addresses, as the system's resolver gives them (off the event loop)."""
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IpAddress] = []
    for *_, sockaddr in found:
        address = literal_address(str(sockaddr[0]).partition("%")[0])  # no IPv6 zone
        if address is not None:
            addresses.append(address)
    return addresses


async def target_refusal(target: Target, *, production: bool, resolver: Resolver) -> str | None:
    """Why a delivery may not go to ``target``, or ``None``: every address its host is or
    resolves to must be one a delivery may reach."""
    literal = literal_address(target.host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = await resolver(target.host, target.port)
        except OSError:
            return f"the host {target.host} does not resolve"
        if not addresses:
            return f"the host {target.host} does not resolve"
    for address in addresses:
        problem = address_problem(address, allow_loopback=not production)
        if problem is not None:
            said = "is" if literal is not None else f"resolves to {address},"
            return f"the host {target.host} {said} {problem}, which a webhook may not reach"
    return None
