"""Where a delivery may go: a webhook URL's host must be, and resolve to, public addresses only
(loopback too outside production), checked when the URL is set and again before each delivery,
since what a name resolves to can change. A delivery then connects to the very address checked
(``pinned``), so a name that resolves elsewhere a moment later cannot turn it aside."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from app.domain.webhooks import IpAddress, Target, address_problem, literal_address

Resolver = Callable[[str, int], Awaitable[list[IpAddress]]]
"""A host's addresses (``OSError`` where it has none)."""


class TargetRefused(Exception):
    """The URL's host is, or resolves to, an address a delivery may not reach; the message says
    which and why."""


async def resolve(host: str, port: int) -> list[IpAddress]:
    """The host's addresses, as the system's resolver gives them (off the event loop)."""
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IpAddress] = []
    for *_, sockaddr in found:
        address = literal_address(str(sockaddr[0]).partition("%")[0])  # no IPv6 zone
        if address is not None:
            addresses.append(address)
    return addresses


async def checked_addresses(
    target: Target, *, production: bool, resolver: Resolver
) -> list[IpAddress]:
    """Every address the target's host is or resolves to, each one a delivery may reach;
    ``TargetRefused`` if any is not, or if there is none."""
    try:
        sent_to = httpx.URL(target.url).host
    except httpx.InvalidURL:
        sent_to = None
    if sent_to is None or sent_to.lower() != target.host.lower():
        # Two parsers that disagree on a URL's host are how an address check is got round.
        raise TargetRefused("its host reads differently to the HTTP client; write it plainly")
    literal = literal_address(target.host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = await resolver(target.host, target.port)
        except OSError:
            addresses = []
        if not addresses:
            raise TargetRefused(f"the host {target.host} does not resolve")
    for address in addresses:
        problem = address_problem(address, production=production)
        if problem is not None:
            said = "is" if literal is not None else f"resolves to {address},"
            raise TargetRefused(
                f"the host {target.host} {said} {problem}, which a webhook may not reach"
            )
    return addresses


async def target_refusal(target: Target, *, production: bool, resolver: Resolver) -> str | None:
    """Why a delivery may not go to ``target``, or ``None``."""
    try:
        await checked_addresses(target, production=production, resolver=resolver)
    except TargetRefused as refused:
        return str(refused)
    return None


@dataclass(frozen=True)
class Pinned:
    """A request to a webhook URL that connects to a checked address: the URL with that address
    for its host, the ``Host`` header and the TLS server name (which the certificate is checked
    against) the URL's own."""

    url: httpx.URL
    headers: dict[str, str]
    extensions: dict[str, Any]


def pinned(url: str, address: IpAddress) -> Pinned:
    given = httpx.URL(url)
    if literal_address(given.host) is not None:
        return Pinned(given, {}, {})
    extensions: dict[str, Any] = {"sni_hostname": given.host} if given.scheme == "https" else {}
    return Pinned(
        given.copy_with(host=str(address)), {"Host": given.netloc.decode("ascii")}, extensions
    )
