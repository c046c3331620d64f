from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.template.defaultfilters import pluralize

from committee import services
from committee.management.clock import add_now_argument, parse_now


class Command(BaseCommand):
    help = (
        "Email each person with waiting notifications their digest of the day (the clock: daily 07:00). "
        "One digest per person per day: running it again the same day sends nothing."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_now_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        sent = services.digests_send(now=parse_now(options["now"]))
        self.stdout.write(self.style.SUCCESS(f"{sent} digest{pluralize(sent)} sent."))
