from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from committee import selectors, services


class Command(BaseCommand):
    help = "Finalize a week's cycle once every ranked request has a decision (as the chair)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--week", required=True, help="ISO week of the cycle, e.g. 2026-W49")
        parser.add_argument("--as-user", required=True, help="The chair's username: finalizing is the chair's act")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            cycle = selectors.cycle_get(week=options["week"])
        except Http404:
            raise CommandError(f"No cycle for week {options['week']}.") from None
        try:
            actor = get_user_model().objects.get(username=options["as_user"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {options['as_user']}.") from None
        try:
            cycle = services.cycle_finalize(cycle=cycle, actor=actor)
        except (ValidationError, PermissionDenied) as exc:
            raise CommandError(" ".join(getattr(exc, "messages", [str(exc)]))) from None
        decided = cycle.decisions.count()
        self.stdout.write(self.style.SUCCESS(f"Week {cycle.week} is finalized: {decided} decisions recorded."))
