from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.template.defaultfilters import pluralize

from committee import services
from committee.management.clock import add_now_argument, parse_now


class Command(BaseCommand):
    help = (
        "Notify the committee of a review meeting within 24 hours, with the requests each member has still to "
        "score (the clock: Monday 06:00, before the 07:00 digest). Each member is reminded once per cycle."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_now_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        count = services.committee_remind_review(now=parse_now(options["now"]))
        self.stdout.write(self.style.SUCCESS(f"{count} reminder{pluralize(count)} recorded for the next digest."))
