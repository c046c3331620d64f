"""/favicon.ico, which browsers ask for whatever a page links: a redirect to the SVG icon base.html names."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.views.decorators.http import require_safe

ICON = "docket/favicon.svg"


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    response = HttpResponsePermanentRedirect(static(ICON))
    response["Cache-Control"] = "public, max-age=86400"
    return response
