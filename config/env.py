"""Strict readers for settings taken from the environment.

Each helper refuses a malformed value with a message that names the variable, so a typo in a
deployment fails at start-up instead of silently running with a default.
"""

from __future__ import annotations

import ipaddress
import math
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from core.parsers import parse_whole_number

_TRUE = {"1", "true", "on"}
_FALSE = {"0", "false", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0, true/false, on/off; got {raw!r}")


def _check_bounds(
    name: str, value: float, *, minimum: float | None, maximum: float | None, above: float | None
) -> None:
    if above is not None and not value > above:
        raise ImproperlyConfigured(f"{name} must be above {above:g}; got {value:g}")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum:g}; got {value:g}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum:g}; got {value:g}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """A whole number in [minimum, maximum] (either bound may be left open); unset or empty: `default`."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip()
    magnitude = parse_whole_number(text.removeprefix("-"))  # ASCII digits only: int() would take "１２" too
    if magnitude is None:
        raise ImproperlyConfigured(f"{name} must be a whole number; got {raw!r}")
    value = -magnitude if text.startswith("-") else magnitude
    _check_bounds(name, value, minimum=minimum, maximum=maximum, above=None)
    return value


def env_float(
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
) -> float:
    """A finite number in [minimum, maximum], and greater than `above` when given; unset or empty: `default`."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number; got {raw!r}") from None
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name} must be a finite number; got {raw!r}")
    _check_bounds(name, value, minimum=minimum, maximum=maximum, above=above)
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str, default: list[str]) -> list[str]:
    """IP networks in CIDR notation (a bare address is one host), comma-separated; unset: `default`.

    Returned normalised ("10.0.0.0/8", "127.0.0.1/32"); a malformed entry is refused naming the variable.
    Host bits may be set ("10.1.2.3/8" reads as 10.0.0.0/8), as in nginx's set_real_ip_from.
    """
    networks = []
    for item in env_list(name, default):
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {item!r} is not a network (e.g. 10.0.0.0/8 or ::1/128)") from None
    return networks


def env_choice(name: str, default: str, choices: Sequence[str]) -> str:
    """One of `choices`, spelled exactly; unset or empty: `default`."""
    raw = os.environ.get(name)
    value = default if raw is None or raw.strip() == "" else raw
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


_RATE_PERIODS = {"s": "second", "sec": "second", "second": "second", "m": "minute", "min": "minute",
                 "minute": "minute", "h": "hour", "hour": "hour", "d": "day", "day": "day"}


def env_rate(name: str, default: str) -> str:
    """A rate as Django REST framework's throttles read it: "<requests>/<second|minute|hour|day>".

    Returned in its long spelling ("600/minute"). A count below 1 or another period is refused.
    """
    raw = os.environ.get(name)
    value = default if raw is None or raw.strip() == "" else raw.strip()
    count, _slash, period = value.partition("/")
    requests = parse_whole_number(count.strip())
    if requests is None or requests < 1 or period.strip().lower() not in _RATE_PERIODS:
        raise ImproperlyConfigured(
            f"{name} must be a number of requests per second, minute, hour or day, e.g. 600/minute; got {value!r}"
        )
    return f"{requests}/{_RATE_PERIODS[period.strip().lower()]}"


def site_url_for(host: str, port: int) -> str:
    """Where a browser reaches a server bound to host:port: a wildcard address reads as the loopback one."""
    host = host.strip().strip("[]")
    try:
        address = ipaddress.ip_address(host) if host else ipaddress.IPv4Address(0)
    except ValueError:
        return f"http://{host}:{port}"  # a host name
    if address.is_unspecified:  # 0.0.0.0 or ::, "every interface"
        address = ipaddress.IPv6Address(1) if address.version == 6 else ipaddress.IPv4Address("127.0.0.1")
    return f"http://[{address}]:{port}" if address.version == 6 else f"http://{address}:{port}"


def env_url(name: str, default: str) -> str:
    """An http(s) URL without a trailing slash; unset or empty: `default`."""
    raw = os.environ.get(name)
    value = default if raw is None or raw.strip() == "" else raw.strip()
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ImproperlyConfigured(f"{name} must be an http:// or https:// URL; got {value!r}")
    return value.rstrip("/")


def database_from_url(name: str, url: str) -> dict[str, Any]:
    """Turn `postgres://user:pass@host:port/db` or `sqlite:///path` into a DATABASES entry."""
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        path = unquote(parts.path[1:] if parts.path.startswith("/") else parts.path)
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path or ":memory:"}
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        if not parts.path.strip("/"):
            raise ImproperlyConfigured(f"{name} must name a database: postgres://host/<database>")
        options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.strip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
        }
    raise ImproperlyConfigured(f"{name} must start with postgres:// or sqlite://; got {url!r}")
