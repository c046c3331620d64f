"""The request page's form to give GPUs back: `{% request_release gpu_request %}`.

A tag rather than view context (as `{% request_corrections %}`), so the request page and a refused release
show it the same way.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone

from committee import selectors
from committee.forms import ReleaseForm
from committee.models import GpuRequest

register = template.Library()


@register.inclusion_tag("committee/_request_release.html", takes_context=True)
def request_release(context: template.Context, gpu_request: GpuRequest) -> dict[str, Any]:
    offer = selectors.release_offer(viewer=context["request"].user, gpu_request=gpu_request, now=timezone.now())
    return {
        "csrf_token": context.get("csrf_token"),
        "gpu_request": gpu_request,
        "offer": offer,
        "release_form": context.get("release_form") or ReleaseForm(),
        "open_with_errors": bool(context.get("release_form")),
    }
