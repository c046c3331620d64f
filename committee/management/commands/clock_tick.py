from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from committee import selectors, services, weeks
from committee.management.clock import add_now_argument, parse_now


class Command(BaseCommand):
    help = (
        "Do every run the weekly clock owes now, each once: what beat's clock-tick does every "
        "DOCKET_CLOCK_TICK_SECONDS (run it from cron, every minute, where no broker runs). --dry-run only lists them."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_now_argument(parser)
        parser.add_argument("--dry-run", action="store_true", help="List what is owed; do nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        now = parse_now(options["now"])
        if options["dry_run"]:
            owed, zone = selectors.clock_due(now=now), weeks.committee_zone()
            for due in owed:
                self.stdout.write(f"{due.job} {due.period} (due {due.due_at.astimezone(zone).isoformat()})")
            if not owed:
                self.stdout.write("Nothing is owed.")
            return
        runs = services.clock_tick(now=now)
        for run in runs:
            self.stdout.write(self.style.SUCCESS(f"{run.job} {run.period}: {run.result}"))
        if not runs:
            self.stdout.write("Nothing was owed; nothing to do.")
