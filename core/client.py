"""Who sent a request: the client's address, through the reverse proxies Docket is told it runs behind."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """The client's IP address, as the outermost of `DOCKET_TRUSTED_PROXY_COUNT` proxies saw it.

    Each trusted proxy appends the address it received the request from to X-Forwarded-For, so
    with N proxies the client is the N-th entry from the right; whatever is left of it was written
    by the client and is not believed. With 0 proxies (the default) the peer address is the client.
    A header with fewer entries than proxies (a request that came round them) or an entry that is
    not an IP address falls back to the leftmost trusted entry, then to the peer address.
    Django REST framework's throttles count by the same rule (NUM_PROXIES).
    """
    peer = request.META.get("REMOTE_ADDR", "") or ""
    count = settings.DOCKET_TRUSTED_PROXY_COUNT
    if count:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [part for part in forwarded if part]
        if forwarded:
            candidate = forwarded[-min(count, len(forwarded))]
            try:
                return str(ipaddress.ip_address(candidate))
            except ValueError:
                pass
    return peer
