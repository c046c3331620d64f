from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.template.defaultfilters import pluralize

from committee import services
from committee.management.clock import add_now_argument, parse_now


class Command(BaseCommand):
    help = (
        "Notify the members of teams that have not submitted a request to a cycle whose intake closes within "
        "48 hours (the clock: Thursday 10:00). Each person is reminded once per cycle; they read it in their digest."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_now_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        count = services.teams_remind_unfiled(now=parse_now(options["now"]))
        self.stdout.write(self.style.SUCCESS(f"{count} reminder{pluralize(count)} recorded for the next digest."))
