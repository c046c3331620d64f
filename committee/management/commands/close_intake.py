from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from committee import selectors, services


class Command(BaseCommand):
    help = "Close intake for a week's cycle: its requests freeze and the review opens."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--week", required=True, help="ISO week of the cycle, e.g. 2026-W49")
        parser.add_argument("--as-user", help="Close as this user (must be the chair); default: the scheduled clock")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            cycle = selectors.cycle_get(week=options["week"])
        except Http404:
            raise CommandError(f"No cycle for week {options['week']}.") from None
        actor = None
        if options["as_user"]:
            try:
                actor = get_user_model().objects.get(username=options["as_user"])
            except get_user_model().DoesNotExist:
                raise CommandError(f"No user named {options['as_user']}.") from None
        try:
            cycle = services.cycle_close_intake(cycle=cycle, actor=actor)
        except (ValidationError, PermissionDenied) as exc:
            raise CommandError(" ".join(getattr(exc, "messages", [str(exc)]))) from None
        self.stdout.write(self.style.SUCCESS(f"Intake for week {cycle.week} is closed; the cycle is in review."))
