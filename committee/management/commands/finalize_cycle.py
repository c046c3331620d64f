from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from committee import services
from committee.management.arguments import cycle_for_week, refusals_as_command_errors, user_named


class Command(BaseCommand):
    help = "Finalize a week's cycle once every ranked request has a decision (as the chair)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--week", required=True, help="ISO week of the cycle, e.g. 2026-W49")
        parser.add_argument("--as-user", required=True, help="The chair's username: finalizing is the chair's act")

    def handle(self, *args: Any, **options: Any) -> None:
        cycle = cycle_for_week(options["week"])
        actor = user_named(options["as_user"])
        with refusals_as_command_errors():
            cycle = services.cycle_finalize(cycle=cycle, actor=actor)
        decided = cycle.decisions.count()
        self.stdout.write(self.style.SUCCESS(f"Week {cycle.week} is finalized: {decided} decisions recorded."))
