from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from committee import services
from committee.management.clock import add_now_argument, parse_now


class Command(BaseCommand):
    help = "Open the cycle teams file into this week (the clock: Monday 00:00). Running it again changes nothing."

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_now_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        cycle, created = services.cycle_open_next(now=parse_now(options["now"]))
        if created:
            self.stdout.write(self.style.SUCCESS(
                f"Opened week {cycle.week}: intake closes {cycle.intake_closes_at.isoformat()}."
            ))
        else:
            self.stdout.write(f"Week {cycle.week} is already open ({cycle.get_status_display()}); nothing to do.")
