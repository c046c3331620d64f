"""What the cycle commands share: turning --week and --as-user into rows, and refusals into CommandError."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import CommandError
from django.http import Http404

from committee import selectors
from committee.models import ReviewCycle


def cycle_for_week(week: str) -> ReviewCycle:
    try:
        return selectors.cycle_get(week=week)
    except Http404:
        raise CommandError(f"No cycle for week {week}.") from None


def user_named(username: str) -> User:
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist:
        raise CommandError(f"No user named {username}.") from None


@contextmanager
def refusals_as_command_errors() -> Iterator[None]:
    """A service's refusal (wrong state, wrong person) ends the command with its message, exit code 1."""
    try:
        yield
    except (ValidationError, PermissionDenied) as exc:
        raise CommandError(" ".join(getattr(exc, "messages", [str(exc)]))) from None
