"""Probes for the platform that runs Docket: /healthz (the process answers) and /readyz (it can do its work).

Both are answered by `ProbeMiddleware`, first in the stack, before the host check, the HTTPS redirect,
sessions and the database: a load balancer or kubelet asks by the pod's address over plain HTTP, and
liveness must not depend on anything outside the process. Readiness checks the database, the cache and
the Celery broker, each with a bounded wait, and answers 503 naming what failed, so a site whose
database is down is taken out of rotation instead of serving errors. Its body also carries the details
DOCKET_READINESS_DETAILS names (the weekly clock: what is due, what is overdue), which never change the status.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from core import breaker

logger = logging.getLogger(__name__)

HEALTHZ = "/healthz"
READYZ = "/readyz"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    seconds: float


def _timed(name: str, probe: Callable[[], str]) -> Check:
    started = time.monotonic()
    try:
        detail = probe()
        ok = True
    except Exception as exc:  # a probe reports every failure; it never raises
        detail, ok = f"{type(exc).__name__}: {exc}", False
        logger.warning("readiness: %s is not ready: %s", name, detail)
    return Check(name=name, ok=ok, detail=detail, seconds=round(time.monotonic() - started, 3))


def _database() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connections["default"].vendor


def _cache() -> str:
    key, value = "docket:readyz", secrets.token_hex(8)
    cache.set(key, value, timeout=10)
    if cache.get(key) != value:
        raise RuntimeError("a value written to the cache did not come back")
    return str(settings.CACHES["default"]["BACKEND"]).rsplit(".", 1)[-1]


def broker_ping(timeout: float) -> str:
    """A round trip to the Celery broker within `timeout` seconds, or an exception saying why not.

    For Redis a PING with connect and read timeouts: a broker that accepts connections but never
    answers (a hung Redis) fails too, which opening a connection alone does not show.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager (no broker: tasks run in the web process)"
    url = settings.CELERY_BROKER_URL
    if url.startswith(("redis://", "rediss://", "unix://")):
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()
        return "redis"
    with current_app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout)
    return connection.transport_cls


def readiness() -> list[Check]:
    """Each dependency asked itself, whatever the circuit breakers say (core/breaker.py); the answer sets them."""
    checks = [
        _timed("database", _database),
        _timed("cache", _cache),
        _timed("broker", lambda: broker_ping(settings.CELERY_BROKER_CONNECTION_TIMEOUT)),
    ]
    for check, dependency in zip(checks[1:], (breaker.CACHE, breaker.BROKER), strict=True):
        if check.ok:
            dependency.succeeded()
        else:
            dependency.failed(check.detail)
    return checks


def readiness_details() -> dict[str, object]:
    """What else /readyz reports, informative only (it never makes the answer 503): each function named in
    DOCKET_READINESS_DETAILS (the weekly clock's due state), or the error it raised."""
    details: dict[str, object] = {}
    for name, path in getattr(settings, "DOCKET_READINESS_DETAILS", {}).items():
        try:
            details[name] = import_string(path)()
        except Exception as exc:  # a detail reports its failure; it never raises
            details[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return details


def _json(status: int, body: dict[str, object]) -> HttpResponse:
    response = HttpResponse(json.dumps(body), status=status, content_type="application/json")
    response["Cache-Control"] = "no-store"
    return response


class ProbeMiddleware:
    """Answers GET/HEAD /healthz and /readyz itself; every other request goes on down the stack."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info not in (HEALTHZ, READYZ):
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            response = _json(405, {"detail": "Only GET and HEAD."})
            response["Allow"] = "GET, HEAD"
            return response
        if request.path_info == HEALTHZ:
            return _json(200, {"status": "ok"})
        checks = readiness()
        ready = all(check.ok for check in checks)
        return _json(
            200 if ready else 503,
            {
                "status": "ready" if ready else "not ready",
                "checks": {c.name: {"ok": c.ok, "detail": c.detail, "seconds": c.seconds} for c in checks},
                **(readiness_details() if all(c.ok for c in checks if c.name == "database") else {}),
            },
        )
