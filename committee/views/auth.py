"""Sign-in, with django-axes counting failures per username and client address (docs/security.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.client import client_address
from core.locks import advisory_lock


class ThrottledLoginView(auth_views.LoginView):
    """Django's LoginView; each attempt from an address waits for the one before it.

    django-axes (the first authentication backend) refuses a username+address pair that has
    failed LOGIN_FAILURE_LIMIT times, and an address that has failed LOGIN_ADDRESS_FAILURE_LIMIT
    times whatever the usernames (committee/lockouts.py), before any password is checked, and
    records each failure. Its check and its record are two steps, so concurrent attempts could
    all pass the check before any failure is recorded; holding a database lock on the address
    for the whole attempt makes every attempt see the failures of those before it. Other
    addresses are not held up; people behind one address sign in one after the other.
    """

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        with transaction.atomic():
            advisory_lock(f"sign-in\0{client_address(request)}")
            return super().post(request, *args, **kwargs)


def sign_in_username(request: HttpRequest | None, credentials: dict[str, Any] | None = None) -> str:
    """The username failures are counted under (AXES_USERNAME_CALLABLE): trimmed and in lower case.

    So "Chair", "CHAIR " and "chair" share one count: a directory that ignores case (LDAP)
    would otherwise give five guesses per spelling.
    """
    if credentials and credentials.get("username") is not None:
        raw = credentials["username"]
    else:
        raw = request.POST.get("username") if request is not None else None
    return str(raw or "").strip().lower()[:150]


def locked_out(request: HttpRequest, original_response: HttpResponse | None = None,
               credentials: dict[str, Any] | None = None) -> HttpResponse:
    """The page for a refused sign-in (django-axes' AXES_LOCKOUT_CALLABLE): 429 with Retry-After."""
    seconds = settings.LOGIN_FAILURE_WINDOW_SECONDS
    address_locked = bool(getattr(request, "docket_address_locked", False))  # committee/lockouts.py
    response = render(
        request,
        "registration/locked_out.html",
        {
            "minutes": max(1, seconds // 60),
            "limit": settings.LOGIN_ADDRESS_FAILURE_LIMIT if address_locked else settings.LOGIN_FAILURE_LIMIT,
            "address_locked": address_locked,
        },
        status=429,
    )
    response["Retry-After"] = str(seconds)
    return response
