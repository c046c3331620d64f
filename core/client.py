"""Who sent a request: the client's address, through the reverse proxies Docket is told it runs behind."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(name: str, values: Iterable[str]) -> list[Network]:
    """CIDRs (or single addresses) from a setting; a malformed one raises naming the variable."""
    from django.core.exceptions import ImproperlyConfigured

    networks: list[Network] = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {value!r} is not a network (e.g. 10.0.0.0/8 or ::1/128)") from None
    return networks


def address_in(address: str, networks: Iterable[Network]) -> bool:
    """Whether `address` (an IPv4-mapped IPv6 address counts as its IPv4 one) lies in one of `networks`."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip.version == network.version and ip in network for network in networks)


def client_address(request: HttpRequest) -> str:
    """The client's IP address: the peer's, or what the trusted proxies in front of Docket saw.

    X-Forwarded-For is believed only from a peer inside DOCKET_TRUSTED_PROXIES (a peer on
    gunicorn's Unix socket, which has no address, is a proxy too), and only as far as the proxies
    go: each proxy appends the address it received the request from, so reading the header from
    the right, every entry that is again a trusted proxy is skipped, at most
    DOCKET_TRUSTED_PROXY_COUNT - 1 of them, and the next entry is the client. Whatever is left of
    it was written by the client and is not believed. So a client that reaches gunicorn without
    the proxy (its address is not a proxy's) is known by its own address whatever it sends, and a
    proxy that is not trusted counts as the client. A missing or malformed entry where the client
    should be falls back to the last trusted hop, then to the peer. With a count of 0 (the default)
    or no trusted networks, the peer address is the client and the header is ignored.
    """
    peer = (request.META.get("REMOTE_ADDR", "") or "").strip()
    count: int = settings.DOCKET_TRUSTED_PROXY_COUNT
    proxies = parse_networks("DOCKET_TRUSTED_PROXIES", settings.DOCKET_TRUSTED_PROXIES)
    # gunicorn on a Unix socket gives no peer address: only the processes allowed to open the socket reach it.
    if not count or not (peer == "" or address_in(peer, proxies)):
        return peer
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    hops = [part for part in forwarded if part]
    client = peer
    for position, entry in enumerate(reversed(hops[-count:]), start=1):
        try:
            client = str(ipaddress.ip_address(entry))
        except ValueError:
            break  # not an address: the last good hop stands
        if position == count or not address_in(client, proxies):
            break
    return client
