"""Sign-in with a throttle on failed attempts, per account and per client address."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _


def _keys(request: HttpRequest) -> list[str]:
    address = request.META.get("REMOTE_ADDR", "unknown")
    username = (request.POST.get("username") or "").strip().lower()[:150]
    return [f"login-fail:addr:{address}", f"login-fail:user:{username}"]


class ThrottledLoginView(auth_views.LoginView):
    """Django's LoginView, refusing further attempts for a while after repeated failures.

    Counts live in the cache (Redis in production, so all workers share them). A refused
    attempt answers 429 and does not check the password at all.
    """

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        limit = settings.LOGIN_FAILURE_LIMIT
        if any((cache.get(key) or 0) >= limit for key in _keys(request)):
            form = self.get_form()
            minutes = max(1, settings.LOGIN_FAILURE_WINDOW_SECONDS // 60)
            form.add_error(
                None,
                _("Too many failed sign-ins. Try again in %(minutes)d minutes.") % {"minutes": minutes},
            )
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        for key in _keys(self.request):
            cache.add(key, 0, settings.LOGIN_FAILURE_WINDOW_SECONDS)
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.set(key, 1, settings.LOGIN_FAILURE_WINDOW_SECONDS)
        return super().form_invalid(form)

    def form_valid(self, form: Any) -> HttpResponse:
        cache.delete_many(_keys(self.request))
        return super().form_valid(form)
