from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from committee import services
from committee.management.clock import add_now_argument, parse_now


class Command(BaseCommand):
    help = (
        "Post to the chat webhook (DOCKET_CHAT_WEBHOOK_URL) that intake closes within 24 hours, once per week "
        "(the clock: hourly at :05). Does nothing without a webhook."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_now_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        weeks = services.chat_intake_closing_announce(now=parse_now(options["now"]))
        if weeks:
            self.stdout.write(self.style.SUCCESS(f"Announced intake closing for {', '.join(weeks)}."))
        else:
            self.stdout.write("Nothing to announce.")
