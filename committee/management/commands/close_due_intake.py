from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from committee import services
from committee.management.clock import add_now_argument, parse_now


class Command(BaseCommand):
    help = (
        "Close intake of every open cycle whose closing time has come (the clock: Friday 18:00). "
        "To close one week by hand before its time, use close_intake --week."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_now_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        closed = services.cycle_close_due_intake(now=parse_now(options["now"]))
        if not closed:
            self.stdout.write("No open cycle is due to close; nothing to do.")
        for cycle in closed:
            self.stdout.write(self.style.SUCCESS(f"Intake for week {cycle.week} is closed; the cycle is in review."))
