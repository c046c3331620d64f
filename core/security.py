"""Content-Security-Policy: the browser runs only the app's own scripts.

Every script Docket serves is a static file of its own (htmx, Plotly, the review and chart
scripts); data for the charts travels in `json_script` blocks, which are data, not code. So
scripts are limited to 'self' with no inline code and no eval: text that got into a page
(the archive's Markdown, a team's request) cannot run even if it slipped past escaping and
the sanitizer. A template that ever needs an inline script gives it `nonce="{{ request.csp_nonce }}"`.

Styles allow inline rules: htmx and Plotly set styles from script (indicators, chart layout),
and a style cannot run code. Nothing is loaded from other origins (no CDN, see DESIGN.md), no
plugin, no framing (as X-Frame-Options DENY), forms post only to Docket.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


def policy(nonce: str) -> str:
    directives = {
        "default-src": "'self'",
        "script-src": f"'self' 'nonce-{nonce}'",
        "style-src": "'self' 'unsafe-inline'",
        "img-src": "'self' data:",
        "font-src": "'self' data:",
        "connect-src": "'self'",
        "object-src": "'none'",
        "base-uri": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        nonce = secrets.token_urlsafe(16)
        # An attribute of our own, which HttpRequest's stubs cannot declare; templates read it.
        request.csp_nonce = nonce  # type: ignore[attr-defined]
        response = self.get_response(request)
        response.headers.setdefault(HEADER, policy(nonce))
        return response
