"""The request page's forms to give GPUs back and to ask for more hours: `{% request_release gpu_request %}`.

A tag rather than view context (as `{% request_corrections %}`), so the request page and a refused release
show it the same way.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone

from committee import selectors
from committee.forms import ExtensionForm, ReleaseForm
from committee.models import GpuRequest

register = template.Library()


@register.inclusion_tag("committee/_request_release.html", takes_context=True)
def request_release(context: template.Context, gpu_request: GpuRequest) -> dict[str, Any]:
    viewer, now = context["request"].user, timezone.now()
    return {
        "csrf_token": context.get("csrf_token"),
        "gpu_request": gpu_request,
        "offer": selectors.release_offer(viewer=viewer, gpu_request=gpu_request, now=now),
        "extension": selectors.extension_offer(viewer=viewer, gpu_request=gpu_request, now=now),
        "release_form": context.get("release_form") or ReleaseForm(),
        "extension_form": context.get("extension_form") or ExtensionForm(),
        "open_with_errors": bool(context.get("release_form")),
        "extension_with_errors": bool(context.get("extension_form")),
    }
