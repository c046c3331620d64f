from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize
from django.utils import timezone

from allocations.elastic import services


class Command(BaseCommand):
    help = (
        "Evaluate the elastic policy on every pool and record its actions (beat: hourly at :15; docs/elastic.md). "
        "Idempotent: run again in the same hour, it adds nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--now",
            help="act as of this moment, ISO 8601 (e.g. 2026-12-04T23:15); without an offset it is committee time. "
            "Default: the current time.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        now = timezone.now()
        if options["now"]:
            try:
                now = datetime.fromisoformat(options["now"])
            except ValueError:
                raise CommandError(
                    f"--now must be an ISO 8601 date and time, e.g. 2026-12-04T23:15; got {options['now']!r}"
                ) from None
            if timezone.is_naive(now):
                now = now.replace(tzinfo=ZoneInfo(settings.TIME_ZONE))
        result = services.elastic_evaluate(now=now)
        self.stdout.write(self.style.SUCCESS(
            f"Elastic policy v{result.policy_version}: {result.started} action{pluralize(result.started)} started, "
            f"{result.ended} ended, {result.kept} still in force."
        ))
