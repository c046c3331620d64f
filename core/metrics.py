"""GET /metrics for Prometheus: django-prometheus's request and database metrics plus Docket's own gauges.

`MetricsMiddleware` answers /metrics itself, right after the probes and before the host check and the
HTTPS redirect: Prometheus scrapes a pod by its address over plain HTTP. The page is not public: it is
served to a client whose address is in DOCKET_METRICS_ALLOWED_NETWORKS, or that sends
`Authorization: Bearer <DOCKET_METRICS_TOKEN>`; anyone else gets 404, as if there were no such page.
A request that came through a proxy (it carries X-Forwarded-For or Forwarded) is never let in by its
address, since behind a proxy on the same host every visitor's address is the proxy's: it needs the token.

Docket's own gauges are computed from the database at each scrape by the collector that
DOCKET_METRICS_COLLECTOR names (committee.metrics.DocketCollector), so every gunicorn worker
answers the same numbers. django-prometheus's counters live in the memory of the worker that
counted them; with several workers set PROMETHEUS_MULTIPROC_DIR (docs/operations.md).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable
from functools import cache

import prometheus_client
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string
from prometheus_client import CollectorRegistry, multiprocess
from prometheus_client.registry import Collector

from core.client import address_in, parse_networks

METRICS = "/metrics"

def metrics_access_allowed(request: HttpRequest) -> bool:
    """A bearer token equal to DOCKET_METRICS_TOKEN, or a direct (unproxied) client in an allowed network."""
    token: str = settings.DOCKET_METRICS_TOKEN
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if token and header.startswith("Bearer "):
        return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), token.encode())
    if "HTTP_X_FORWARDED_FOR" in request.META or "HTTP_FORWARDED" in request.META:
        return False
    networks = parse_networks("DOCKET_METRICS_ALLOWED_NETWORKS", settings.DOCKET_METRICS_ALLOWED_NETWORKS)
    return address_in(request.META.get("REMOTE_ADDR", ""), networks)


@cache
def _docket_registry(collector_path: str) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    if collector_path:
        collector: Collector = import_string(collector_path)()
        registry.register(collector)
    return registry


def metrics_page() -> bytes:
    """The exposition text: this process's counters (with PROMETHEUS_MULTIPROC_DIR every worker's), Docket's gauges."""
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = prometheus_client.REGISTRY
    return prometheus_client.generate_latest(registry) + prometheus_client.generate_latest(
        _docket_registry(settings.DOCKET_METRICS_COLLECTOR)
    )


class MetricsMiddleware:
    """Answers GET/HEAD /metrics to Prometheus; 404 to anyone not allowed; every other path goes on down the stack."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info != METRICS:
            return self.get_response(request)
        if not metrics_access_allowed(request):
            return HttpResponse(b"Not found\n", status=404, content_type="text/plain")
        if request.method not in ("GET", "HEAD"):
            response = HttpResponse(b"Only GET and HEAD.\n", status=405, content_type="text/plain")
            response["Allow"] = "GET, HEAD"
            return response
        response = HttpResponse(metrics_page(), content_type=prometheus_client.CONTENT_TYPE_LATEST)
        response["Cache-Control"] = "no-store"
        return response
