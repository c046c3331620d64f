from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from committee import services
from committee.management.arguments import cycle_for_week, refusals_as_command_errors, user_named


class Command(BaseCommand):
    help = "Close intake for a week's cycle: its requests freeze and the review opens."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--week", required=True, help="ISO week of the cycle, e.g. 2026-W49")
        parser.add_argument("--as-user", help="Close as this user (must be the chair); default: the scheduled clock")

    def handle(self, *args: Any, **options: Any) -> None:
        cycle = cycle_for_week(options["week"])
        actor = user_named(options["as_user"]) if options["as_user"] else None
        with refusals_as_command_errors():
            cycle = services.cycle_close_intake(cycle=cycle, actor=actor)
        self.stdout.write(self.style.SUCCESS(f"Intake for week {cycle.week} is closed; the cycle is in review."))
