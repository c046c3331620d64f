"""Request types for views that only a signed-in person reaches.

`HttpRequest.user` is `User | AnonymousUser`. Behind `@login_required` (pages) or `IsAuthenticated`
(the API) it is always a `User`; annotating such a view's request with these types says so once,
instead of narrowing `request.user` at every use. They are annotations only: Django and DRF build
the request objects as usual, so a view that takes one must keep its login check.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from rest_framework.request import Request


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a page behind `@login_required`."""

    user: User


class AuthenticatedRequest(Request):
    """The request of an API view whose permissions include `IsAuthenticated`."""

    user: User
